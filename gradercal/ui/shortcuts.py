"""Every keyboard shortcut of the app, in one table.

The main window builds its actions from :data:`SHORTCUTS` and the F1 dialog lists the
same table, so the two never disagree. Keys are ``QKeySequence`` strings (portable
text: ``Ctrl`` is Command on macOS). Single letters work wherever the focus is not in
a text box (a text box takes its typed letters first); Esc leaves a text box.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shortcut:
    id: str
    group: str
    label: str
    keys: tuple[str, ...]
    #: A standard action (undo/redo): the platform's own keys work too, after ``keys``.
    standard: bool = False
    #: Listed for the user, but handled by the focused rubric or survey list itself
    #: (arrows, Space, digits), so no window-wide action is made for these keys.
    local: bool = False


SHORTCUTS: tuple[Shortcut, ...] = (
    # criteria
    Shortcut("criterion.next", "Rubric", "Next criterion", ("J",)),
    Shortcut("criterion.previous", "Rubric", "Previous criterion", ("K",)),
    Shortcut("criterion.arrows", "Rubric", "Move in the rubric list", ("Down", "Up"), local=True),
    Shortcut(
        "verdict.level", "Rubric", "Set level 0 … 9 (criteria with levels)", ("0 … 9",), local=True
    ),
    Shortcut("criterion.next_open", "Rubric", "Next unanswered criterion", ("Shift+J",)),
    Shortcut("verdict.met", "Rubric", "Met", ("M", "Y")),
    Shortcut("verdict.not_met", "Rubric", "Not met", ("N",)),
    Shortcut("verdict.partial", "Rubric", "Partial (criteria with a partial level)", ("P",)),
    Shortcut("verdict.clear", "Rubric", "Clear the verdict", ("Backspace", "Delete")),
    Shortcut("criterion.rationale", "Rubric", "Write a rationale (Esc returns)", ("R",)),
    Shortcut(
        "criterion.focus",
        "Rubric",
        "Back to the rubric from any text box or viewer (PDF search too)",
        ("Esc",),
    ),
    Shortcut("criterion.unclear", "Rubric", "Flag the criterion as unclear, with a note", ("U",)),
    # responses
    Shortcut("response.next", "Responses", "Next response", ("]", "Alt+Right")),
    Shortcut("response.previous", "Responses", "Previous response", ("[", "Alt+Left")),
    Shortcut(
        "queue.find",
        "Responses",
        "Go to a task or response: search the queue by task id, letter, # or text",
        ("Ctrl+G",),
    ),
    Shortcut("response.submit", "Responses", "Submit this response", ("Ctrl+Return", "Ctrl+Enter")),
    Shortcut("response.skip", "Responses", "Skip this response (asks for a reason)", ("Ctrl+K",)),
    Shortcut("response.reopen", "Responses", "Reopen a submitted or skipped response", ("Ctrl+O",)),
    Shortcut(
        "response.scroll_down", "Responses", "Scroll the response down", ("Space",), local=True
    ),
    Shortcut(
        "response.scroll_up", "Responses", "Scroll the response up", ("Shift+Space",), local=True
    ),
    # artifacts
    Shortcut("artifact.search", "Artifacts", "Search in the PDF", ("Ctrl+F",)),
    Shortcut("artifact.next", "Artifacts", "Next artifact", ("Ctrl+PgDown",)),
    Shortcut("artifact.previous", "Artifacts", "Previous artifact", ("Ctrl+PgUp",)),
    Shortcut("artifact.page_next", "Artifacts", "PDF: next page", ("Shift+PgDown",)),
    Shortcut("artifact.page_previous", "Artifacts", "PDF: previous page", ("Shift+PgUp",)),
    Shortcut("artifact.zoom_in", "Artifacts", "PDF or image: zoom in", ("Alt+=", "Alt++")),
    Shortcut("artifact.zoom_out", "Artifacts", "PDF or image: zoom out", ("Alt+-",)),
    Shortcut("artifact.fit", "Artifacts", "PDF or image: fit to the pane", ("Alt+0",)),
    Shortcut("artifact.sheet_next", "Artifacts", "Workbook: next sheet", ("Alt+PgDown",)),
    Shortcut("artifact.sheet_previous", "Artifacts", "Workbook: previous sheet", ("Alt+PgUp",)),
    Shortcut("artifact.open_link", "Artifacts", "Link: open it in the browser", ("Ctrl+Shift+L",)),
    # task review
    Shortcut("review.next", "Task review", "Next / previous statement", ("J", "K"), local=True),
    Shortcut(
        "review.answer", "Task review", "Answer the current statement", ("1 … 5",), local=True
    ),
    Shortcut("review.comment", "Task review", "Write a comment (Esc returns)", ("C",)),
    # adjudication (coordinator mode; handled by the adjudication view itself)
    Shortcut("adjudication.met", "Adjudication", "Final verdict: met", ("M",), local=True),
    Shortcut("adjudication.not_met", "Adjudication", "Final verdict: not met", ("N",), local=True),
    Shortcut(
        "adjudication.partial",
        "Adjudication",
        "Final verdict: partial (criteria with a partial level)",
        ("P",),
        local=True,
    ),
    Shortcut(
        "adjudication.save",
        "Adjudication",
        "Save the adjudication",
        ("Ctrl+Return", "Ctrl+Enter"),
        local=True,
    ),
    Shortcut(
        "adjudication.save_next",
        "Adjudication",
        "Save and open the next disagreement still to adjudicate (as the table shows them)",
        ("Ctrl+Shift+Return", "Ctrl+Shift+Enter"),
        local=True,
    ),
    Shortcut(
        "adjudication.back",
        "Adjudication",
        "Back to the dashboard (leaves a text box first)",
        ("Esc",),
        local=True,
    ),
    # #33: keys of the coordinator's Tasks, Clarifications and Rubric history views
    Shortcut(
        "tasks.close",
        "Tasks",
        "Close the selected task's review round",
        ("Ctrl+Shift+C",),
        local=True,
    ),
    Shortcut(
        "tasks.force_accept",
        "Tasks",
        "Force accept the selected task (asks first)",
        ("Ctrl+Shift+F",),
        local=True,
    ),
    Shortcut(
        "tasks.settings",
        "Tasks",
        "Acceptance settings (bar, statistic, rule)",
        ("Ctrl+Shift+S",),
        local=True,
    ),
    Shortcut(
        "tasks.refresh", "Tasks", "Read the tasks, threads or versions again", ("F5",), local=True
    ),
    Shortcut(
        "clarify.threads", "Clarifications", "Move in the threads", ("Down", "Up"), local=True
    ),
    Shortcut(
        "clarify.write",
        "Clarifications",
        "Write the answer (Esc returns to the list)",
        ("A",),
        local=True,
    ),
    Shortcut(
        "clarify.send",
        "Clarifications",
        "Send the answer",
        ("Ctrl+Return", "Ctrl+Enter"),
        local=True,
    ),
    Shortcut(
        "clarify.recheck",
        "Clarifications",
        "Tick or untick re-check (reopens finished work judged before the answer)",
        ("Ctrl+Shift+R",),
        local=True,
    ),
    Shortcut(
        "clarify.close",
        "Clarifications",
        "Close the thread (asks first)",
        ("Ctrl+Shift+X",),
        local=True,
    ),
    Shortcut(
        "history.revise",
        "Rubric history",
        "Revise the chosen criterion of the task",
        ("Ctrl+E",),
        local=True,
    ),
    # edit and view
    Shortcut("edit.undo", "Edit", "Undo the last judgment change", ("Ctrl+Z",), standard=True),
    Shortcut("edit.redo", "Edit", "Redo", ("Ctrl+Shift+Z", "Ctrl+Y"), standard=True),
    Shortcut("view.grading", "View", "Grading mode", ("Ctrl+1",)),
    Shortcut("view.review", "View", "Task review mode", ("Ctrl+2",)),
    Shortcut(
        "view.dashboard", "View", "Coordinator dashboard (coordinator mode only)", ("Ctrl+3",)
    ),
    Shortcut("view.progress", "View", "Grading progress (coordinator mode only)", ("Ctrl+4",)),
    Shortcut("view.tasks", "View", "Task acceptance (coordinator mode only)", ("Ctrl+5",)),
    # #33: the coordinator's review loop in the window (coordinator mode only)
    Shortcut(
        "view.clarifications", "View", "Clarification inbox (coordinator mode only)", ("Ctrl+6",)
    ),
    Shortcut(
        "view.rubric_history",
        "View",
        "Rubric history and stale verdicts (coordinator mode only)",
        ("Ctrl+7",),
    ),
    # #35: planning in the window (gradercal/ui/qt_grade_next.py)
    Shortcut(
        "view.grade_next",
        "View",
        "Where to grade next, and the grading plan (coordinator mode only)",
        ("Ctrl+8",),
    ),
    Shortcut("view.queue", "View", "Show or hide the queue", ("F9",)),
    Shortcut("view.artifacts", "View", "Show or hide the artifacts pane", ("F8",)),
    Shortcut("view.guidelines", "View", "Fold or unfold the Guidelines panel", ("F7",)),
    Shortcut("view.bigger", "View", "Larger text", ("Ctrl++", "Ctrl+=")),
    Shortcut("view.smaller", "View", "Smaller text", ("Ctrl+-",)),
    Shortcut("view.reset_font", "View", "Default text size", ("Ctrl+0",)),
    Shortcut("help.shortcuts", "Help", "Keyboard shortcuts", ("F1",)),
    Shortcut("judge.run", "File", "Run the LLM judge… (coordinator mode only)", ("Ctrl+Shift+J",)),
    Shortcut(
        "criterion.revise",
        "File",
        "Revise the selected or adjudicated criterion… (coordinator mode only)",
        ("Ctrl+E",),
    ),
    # coordinator operations (#33, gradercal/ui/qt_ops_actions.py): one dialog each
    Shortcut(
        "ops.import", "File", "Import a benchmark… (coordinator mode only)", ("Ctrl+Shift+I",)
    ),
    Shortcut("ops.assign", "File", "Assign work… (coordinator mode only)", ("Ctrl+Shift+A",)),
    Shortcut(
        "ops.packet_export",
        "File",
        "Export a grader's packet… (coordinator mode only)",
        ("Ctrl+Shift+E",),
    ),
    Shortcut(
        "ops.packet_merge",
        "File",
        "Merge a returned packet… (coordinator mode only)",
        ("Ctrl+Shift+M",),
    ),
    Shortcut(
        "ops.report",
        "File",
        "Write the report (HTML, PDF)… (coordinator mode only)",
        ("Ctrl+Shift+P",),
    ),
    Shortcut(
        "ops.calibrate",
        "File",
        "Calibrate the judge, export its prompt package… (coordinator mode only)",
        ("Ctrl+Shift+K",),
    ),
    Shortcut(
        "ops.remove_judge",
        "File",
        "Remove a judge and its verdicts… (coordinator mode only)",
        ("Ctrl+Shift+Delete",),
    ),
    Shortcut("session.switch", "File", "Switch grader (back to the start page)", ("Ctrl+Shift+G",)),
    Shortcut("app.quit", "File", "Quit (everything is already saved)", ("Ctrl+Q",)),
)

BY_ID: dict[str, Shortcut] = {s.id: s for s in SHORTCUTS}

#: Keys of a coordinator window only (a grader's window neither has nor lists them).
COORDINATOR_IDS = frozenset(
    {
        "view.dashboard",
        "view.progress",
        "view.tasks",
        "view.clarifications",
        "view.rubric_history",
        "judge.run",
        "criterion.revise",
        "view.grade_next",
    }
    | {s.id for s in SHORTCUTS if s.id.startswith("ops.")}
)
#: Groups of a coordinator window only: the keys of its adjudication, tasks, clarification
#: and rubric history views.
COORDINATOR_GROUPS = frozenset({"Adjudication", "Tasks", "Clarifications", "Rubric history"})
#: Keys of a grader's window only: a coordinator window grades nothing, so it has no
#: undo, no grading or review mode, no queue, artifacts pane, Guidelines or grader switch.
GRADER_IDS = frozenset(
    {
        "edit.undo",
        "edit.redo",
        "view.grading",
        "view.review",
        "view.queue",
        "view.artifacts",
        "view.guidelines",
        "session.switch",
    }
)
#: Groups of a grader's window only (the artifact keys act on the grading and review
#: views' artifacts pane).
GRADER_GROUPS = frozenset({"Rubric", "Responses", "Task review", "Artifacts"})


def window_shortcuts(*, coordinator: bool) -> tuple[Shortcut, ...]:
    """The keys of one kind of window, in table order: what F1 lists there. A grader's
    window has no coordinator keys; a coordinator window no grading, review or artifact
    keys."""
    if coordinator:
        return tuple(
            s for s in SHORTCUTS if s.group not in GRADER_GROUPS and s.id not in GRADER_IDS
        )
    return tuple(
        s for s in SHORTCUTS if s.id not in COORDINATOR_IDS and s.group not in COORDINATOR_GROUPS
    )


def keys(shortcut_id: str) -> tuple[str, ...]:
    return BY_ID[shortcut_id].keys
