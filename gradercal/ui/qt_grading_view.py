"""The grading view: prompt and response, the task's artifacts, and the rubric, side by side.

Every change is saved at once through :class:`~gradercal.db.grading.GradingStore`
(typed text after a short pause, or when the editor is left); judgment changes are
undoable. Only the grader's own judgments are ever loaded, and responses appear under
their blinding codes.
"""

from __future__ import annotations

import dataclasses
import html
import json
import logging
from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QPalette, QUndoStack
from PySide6.QtWidgets import (
    QAbstractSlider,
    QDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from gradercal.db.grading import (
    GradingItem,
    GradingStore,
    JudgmentValue,
    JudgmentVersion,
    QueueItem,
    RevisedSinceError,
    StaleJudgmentError,
)
from gradercal.db.revisions import RevisionStore
from gradercal.errors import GradercalError, ValidationError
from gradercal.model import Criterion, Task
from gradercal.ops.assignment_status import status_after_save
from gradercal.ui import qt_workers
from gradercal.ui.grading_state import (
    STATUS_WORDS,
    VERDICT_LABELS,
    RubricRow,
    RubricState,
    TimeTracker,
    read_only_reason,
    shown_status,
    verdict_value,
)
from gradercal.ui.inline_html import to_plain
from gradercal.ui.qt_commands import QtJudgmentCommand
from gradercal.ui.qt_conflicts import ask_stale
from gradercal.ui.qt_markdown import QtMarkdownView
from gradercal.ui.qt_rubric_model import CHANGED_GLYPH
from gradercal.ui.qt_rubric_panel import QtRubricPanel
from gradercal.ui.qt_settings import QtAppSettings
from gradercal.ui.qt_skip_dialog import QtSkipDialog
from gradercal.ui.qt_widgets import QtElidedLabel
from gradercal.ui.revision_text import criterion_changes, diff_html
from gradercal.ui.shortcuts import keys
from gradercal.ui.viewers.qt_artifact_panel import QtArtifactPanel

log = logging.getLogger(__name__)

TEXT_SAVE_DELAY_MS = 600
#: Time on task is saved with every saved judgment and at least this often while reading, so a
#: crash or SIGKILL loses at most this much of it (issue #33).
TIME_FLUSH_MS = 10_000
#: Pause after an item is shown before the next task's PDF is prepared in the background.
PREFETCH_DELAY_MS = 250


def _dark(widget: QWidget) -> bool:
    return widget.palette().color(QPalette.ColorRole.Base).lightness() < 128


def _keys(shortcut_id: str) -> str:
    """The keys of a shortcut as a tooltip shows them ("] or Alt+Right")."""
    return " or ".join(keys(shortcut_id))


def response_markdown(item: GradingItem) -> str:
    text = item.response_text or "*(empty response)*"
    if item.answer is not None:
        pretty = json.dumps(item.answer, indent=2, ensure_ascii=False)
        text += f"\n\n---\n\n**Structured answer**\n\n```json\n{pretty}\n```\n"
    return text


def _titled(title: QtElidedLabel, body: QWidget) -> QWidget:
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(2)
    font = title.font()
    font.setBold(True)
    title.setFont(font)
    title.setContentsMargins(6, 4, 6, 0)
    layout.addWidget(title)
    layout.addWidget(body, 1)
    return box


class QtGradingView(QWidget):
    """One grader's queue in one benchmark."""

    #: The current item is fully shown: texts, rubric and its first artifact.
    item_ready = Signal()
    #: The queue or an item's status changed (progress display).
    queue_changed = Signal()
    #: A short message for the status bar.
    message = Signal(str)

    def __init__(
        self,
        store: GradingStore,
        grader: str,
        benchmark: str,
        settings: QtAppSettings,
        database: str,
        *,
        track_time: bool = True,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.store = store
        self.grader = grader
        self.benchmark = benchmark
        self.settings = settings
        self.database = database
        self.track_time = track_time
        self.queue: list[QueueItem] = []
        self.index = -1
        self.current: GradingItem | None = None
        self.state: RubricState | None = None
        self.undo_stack = QUndoStack(self)
        self.tracker = TimeTracker()
        self._unsaved_time = 0.0
        self._text_criterion: str | None = None
        self._text_dirty = False
        self._ready_pending = False
        #: Set by :meth:`shutdown`: the view is finished and writes nothing more.
        self._shut_down = False
        #: After a verdict moved the cursor on: (row answered, row moved to). ``R`` writes the
        #: rationale of the row answered while the cursor still stands where the verdict left it.
        self._answered_moved: tuple[int, int] | None = None
        #: Earlier versions of tasks read for "what changed", by (task id, version).
        self._earlier_tasks: dict[tuple[str, int], Task] = {}
        #: What this view last saw of each judgment of the open item (optimistic writes).
        self.versions: dict[tuple[int, str], JudgmentVersion] = {}
        #: Items whose shown verdicts a save found changed elsewhere (until reloaded).
        self.stale: set[int] = set()
        #: Asks what to do when a verdict was changed elsewhere: "reload", "overwrite" or
        #: "cancel" (a dialog; tests replace it).
        self.stale_prompt: Callable[[StaleJudgmentError, JudgmentValue], str] = self._ask_stale
        self._build()
        self._text_timer = QTimer(self)
        self._text_timer.setSingleShot(True)
        self._text_timer.setInterval(TEXT_SAVE_DELAY_MS)
        self._text_timer.timeout.connect(self.flush_text)
        self._prefetch_timer = QTimer(self)
        self._prefetch_timer.setSingleShot(True)
        self._prefetch_timer.setInterval(PREFETCH_DELAY_MS)
        self._prefetch_timer.timeout.connect(self._prefetch_next)
        self._time_timer = QTimer(self)
        self._time_timer.setInterval(TIME_FLUSH_MS)
        self._time_timer.timeout.connect(self.flush_time)
        if track_time:
            self._time_timer.start()

    # -- layout -------------------------------------------------------------------------------
    def _build(self) -> None:
        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        outer.setSpacing(4)
        header = QHBoxLayout()
        # Titles give way ("…") before anything else: the header never sets the width.
        self.title = QtElidedLabel("")
        self.title.setObjectName("itemTitle")
        font = self.title.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.25)
        self.title.setFont(font)
        header.addWidget(self.title, 0)
        self.status_label = QtElidedLabel("")
        self.status_label.setObjectName("itemStatus")
        header.addWidget(self.status_label, 1)
        self.position_label = QLabel("")
        header.addWidget(self.position_label)

        def button(text: str, tip: str) -> QPushButton:
            b = QPushButton(text)
            b.setToolTip(tip)
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            header.addWidget(b)
            return b

        self.artifacts_button = button(
            "Artifacts", f"Show or hide the artifacts ({_keys('view.artifacts')})"
        )
        self.artifacts_button.setCheckable(True)
        self.prev_button = button("◀ Previous", f"Previous response ({_keys('response.previous')})")
        self.next_button = button("Next ▶", f"Next response ({_keys('response.next')})")
        self.skip_button = button("Skip…", f"Skip with a reason ({_keys('response.skip')})")
        self.reopen_button = button(
            "Reopen", f"Reopen this response to change it ({_keys('response.reopen')})"
        )
        self.submit_button = button(
            "Submit ✓", f"Submit this response ({_keys('response.submit')})"
        )
        self.submit_button.setDefault(False)
        self.reopen_button.hide()  # shown for a submitted or skipped response
        outer.addLayout(header)

        self.pages = QStackedWidget()
        self.notice = QLabel("Loading your queue…")
        self.notice.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.notice.setWordWrap(True)
        self.pages.addWidget(self.notice)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setChildrenCollapsible(False)
        self.text_splitter = QSplitter(Qt.Orientation.Vertical)
        self.text_splitter.setChildrenCollapsible(False)
        self.prompt_title = QtElidedLabel("Task")
        self.prompt_view = QtMarkdownView()
        self.text_splitter.addWidget(_titled(self.prompt_title, self.prompt_view))
        self.response_title = QtElidedLabel("Response")
        self.response_view = QtMarkdownView()
        self.text_splitter.addWidget(_titled(self.response_title, self.response_view))
        self.text_splitter.setStretchFactor(0, 2)
        self.text_splitter.setStretchFactor(1, 3)
        self.splitter.addWidget(self.text_splitter)
        self.artifacts = QtArtifactPanel(self.store.read_blob)
        self.artifacts_title = QtElidedLabel("Artifacts")
        self.artifacts_pane = _titled(self.artifacts_title, self.artifacts)
        self.splitter.addWidget(self.artifacts_pane)
        self.rubric = QtRubricPanel()
        self.rubric_title = QtElidedLabel("Rubric")
        self.splitter.addWidget(_titled(self.rubric_title, self.rubric))
        self.splitter.setStretchFactor(0, 30)
        self.splitter.setStretchFactor(1, 36)
        self.splitter.setStretchFactor(2, 34)
        self.pages.addWidget(self.splitter)
        outer.addWidget(self.pages, 1)

        self.prev_button.clicked.connect(self.previous_response)
        self.next_button.clicked.connect(self.next_response)
        self.skip_button.clicked.connect(self.skip)
        self.submit_button.clicked.connect(self.submit)
        self.reopen_button.clicked.connect(self.reopen)
        self.artifacts_button.toggled.connect(self.show_artifacts)
        self.show_artifacts(self.settings.artifacts_shown)
        self.rubric.fold_guidelines(self.settings.guidelines_folded)
        self.rubric.guidelines_fold_requested.connect(self.fold_guidelines)
        self.rubric.current_changed.connect(self._row_changed)
        self.rubric.verdict_requested.connect(self.set_verdict)
        self.rubric.text_edited.connect(self._text_edited)
        self.rubric.editing_done.connect(self.flush_text)
        self.rubric.unclear_toggled.connect(self._unclear_clicked)
        self.rubric.table.scroll_requested.connect(self.scroll_response)
        self.rubric.table.level_requested.connect(self.set_level)
        self.artifacts.current_ready.connect(self._check_ready)

    def show_notice(self, text: str) -> None:
        self.notice.setText(text)
        self.pages.setCurrentWidget(self.notice)
        for b in (self.prev_button, self.next_button, self.skip_button, self.submit_button):
            b.setEnabled(False)

    # -- queue --------------------------------------------------------------------------------
    def load_queue(self, *, open_first: bool = False) -> None:
        """Create or read the grader's queue off the UI thread, then open where they stopped."""
        self.show_notice(f"Loading the queue of {self.grader}…")
        qt_workers.submit(
            self.store.ensure_queue,
            self.grader,
            self.benchmark,
            done=lambda items: self._queue_loaded(items, open_first),
            failed=lambda exc: self.show_notice(f"Cannot load the queue: {exc}"),
        )

    def load_queue_now(self, *, open_first: bool = False) -> None:
        """Like :meth:`load_queue` but on this thread (screenshots, benchmarks, tests)."""
        self._queue_loaded(self.store.ensure_queue(self.grader, self.benchmark), open_first)

    def _queue_loaded(self, items: list[QueueItem], open_first: bool) -> None:
        self.queue = items
        self.queue_changed.emit()
        if not items:
            self.show_notice(f"The benchmark {self.benchmark!r} has no responses to grade.")
            self.item_ready.emit()
            return
        if open_first:
            first = next((i for i, q in enumerate(items) if q.n_artifacts), 0)
            self.open_index(first)
            return
        index, row = self._resume_target()
        self.open_index(index, row)

    def _resume_target(self) -> tuple[int, int]:
        aid, row = self.settings.resume(self.database, self.benchmark, self.grader, "grading")
        for i, q in enumerate(self.queue):
            if q.assignment_id == aid:
                return i, row
        point = self.store.resume_point(self.grader, self.benchmark)
        if point is not None:
            for i, q in enumerate(self.queue):
                if q.assignment_id == point.assignment_id:
                    return i, 0
        return 0, 0

    # -- opening an item -------------------------------------------------------------------
    def open_index(self, index: int, row: int = 0) -> bool:
        if self._shut_down or not (0 <= index < len(self.queue)):
            return False
        self.leave_item()
        q = self.queue[index]
        try:
            item = self.store.load_item(self.grader, q.assignment_id)
        except Exception as exc:  # a broken row must not close the window
            self.message.emit(f"Cannot open {q.label}: {exc}")
            return False
        self.index = index
        self.current = item
        self.queue[index] = item.item
        self.stale.discard(q.assignment_id)  # just read: what it shows is current
        self.state = RubricState(item)
        self.versions = {(q.assignment_id, c): v for c, v in item.versions.items()}
        self.undo_stack.clear()
        self.tracker.reset()
        self._answered_moved = None
        self._ready_pending = True
        self._show_item(row)
        self.artifacts.set_task((self.benchmark, item.task.id), item.task.artifacts)
        self._place_artifacts()
        self.queue_changed.emit()
        self._save_position()
        self._check_ready()
        return True

    def _prefetch_next(self) -> None:
        """Prepare the next task's first artifact while the grader reads this response."""
        if self.current is None:
            return
        here = self.current.item.task_id
        nxt = next((q for q in self.queue[self.index + 1 :] if q.task_id != here), None)
        if nxt is None or not nxt.n_artifacts:
            return
        try:
            task = self.store.peek_task(nxt.assignment_id)
        except Exception:  # only an optimisation
            return
        self.artifacts.prefetch(task.artifacts)

    def _show_item(self, row: int) -> None:
        item, state = self.current, self.state
        assert item is not None and state is not None
        q = item.item
        self.pages.setCurrentWidget(self.splitter)
        self.title.setText(q.label)
        self.position_label.setText(f"{self.index + 1} of {len(self.queue)}")
        t = item.task
        facts = [x for x in (t.domain, t.workflow, t.answer_format) if x]
        self.prompt_title.setText(f"Task {t.id}" + (f" · {' · '.join(facts)}" if facts else ""))
        self.prompt_view.set_markdown(t.prompt)
        self.response_title.setText(q.code)
        self.response_view.set_markdown(response_markdown(item))
        n_art = len(t.artifacts)
        self.artifacts_title.setText(f"Artifacts ({n_art})" if n_art else "Artifacts")
        self.rubric_title.setText(
            f"Rubric · {len(state)} criteria" if len(state) != 1 else "Rubric · 1 criterion"
        )
        self.rubric.model.set_state(state)
        self.rubric.fit_columns()
        self.rubric.show_score(state.score())
        changed = state.changed_rows()
        if changed:
            n = len(changed)
            todo = (
                f"reopen the response ({_keys('response.reopen')}) to confirm or change "
                f"{'them' if n != 1 else 'it'}"
                if q.done
                else f"confirm or change {'each' if n != 1 else 'it'} before submitting"
            )
            self.rubric.show_message(
                f"{n} criteri{'a' if n != 1 else 'on'} changed since your verdict "
                f"({CHANGED_GLYPH}): {todo}."
            )
            if row == 0:
                row = changed[0]
        else:
            self.rubric.show_message("")
        for b in (self.prev_button, self.next_button, self.skip_button, self.submit_button):
            b.setEnabled(True)
        self.prev_button.setEnabled(self.index > 0)
        self.next_button.setEnabled(self.index < len(self.queue) - 1)
        self._show_status()  # after the buttons: a done response cannot be submitted again
        if len(state):
            self.rubric.set_current_row(min(max(row, 0), len(state) - 1))
            self._row_changed(self.rubric.current_row())
        else:
            self.rubric.show_row(None)
        self.rubric.focus_table()

    def _show_status(self) -> None:
        if self.current is None:
            return
        q = self.queue[self.index]
        shown = shown_status(q, q.assignment_id in self.stale)
        status = STATUS_WORDS.get(shown, shown)
        if q.status == "skipped" and q.skip_reason:
            status += f": {q.skip_reason}"
        if q.done:
            status += " (read-only)"
        self.status_label.setText(f"· {status} · {q.n_answered} of {q.n_criteria} answered")
        self.reopen_button.setVisible(q.done)
        self.submit_button.setEnabled(not q.done)
        if self.rubric.read_only != q.done:  # locked or unlocked: the editor shows it now
            self.rubric.set_read_only(q.done)
            row = self.current_row()
            if self.state is not None and 0 <= row < len(self.state):
                self.rubric.show_row(self.state.rows[row])

    def _check_ready(self) -> None:
        if self._ready_pending and self.current is not None and self.artifacts.is_current_ready():
            self._ready_pending = False
            self.item_ready.emit()
            # Once this item is on screen (not before: the worker would compete with it).
            self._prefetch_timer.start()

    def leave_item(self) -> None:
        """Save what is pending on the current item (text, time) before moving on."""
        if self.current is None:
            return
        self.flush_text()
        self.flush_time(final=True)

    def shutdown(self) -> None:
        """Called when the window closes (or the grader is switched): nothing typed or timed
        is lost, and nothing is written afterwards.

        The text and time pending on the open item are saved, then the view is finished:
        its timers stop, and a timer tick or queued call still due (time on task every
        :data:`TIME_FLUSH_MS`, a rationale's pause, a reload, a queue arriving) writes
        nothing. A packet window packs its file right after this; a later write would be
        in the working folder only, and merge would warn that the file lacks it.
        """
        self.leave_item()
        self._save_position()
        self.settings.sync()
        for timer in (self._text_timer, self._time_timer, self._prefetch_timer):
            timer.stop()
        self._shut_down = True

    def _save_position(self) -> None:
        if self.current is not None:
            self.settings.set_resume(
                self.database,
                self.benchmark,
                self.grader,
                "grading",
                self.current.item.assignment_id,
                max(self.rubric.current_row(), 0),
            )

    # -- criteria -------------------------------------------------------------------------------
    def current_row(self) -> int:
        return self.rubric.current_row()

    def _row_changed(self, row: int) -> None:
        if self._answered_moved is not None and self._answered_moved[1] != row:
            self._answered_moved = None  # the grader moved on: R is for the row shown
        if self.state is None or not (0 <= row < len(self.state)):
            return
        if self._text_criterion is not None:
            self.flush_text()
        r = self.state.rows[row]
        self._text_criterion = None if r.is_auto else r.criterion.id
        self.rubric.show_row(r)
        self._show_change(r)
        self._show_guidelines(r.criterion.id)
        self._save_position()

    def _show_change(self, row: RubricRow) -> None:
        """The "changed since your verdict" box of the current criterion: the word diff
        between the wording the grader's verdict was given under and the current one,
        and what to do; hidden when the verdict is current."""
        if not row.changed or row.given_under is None or self.current is None:
            self.rubric.hide_change()
            return
        c = row.criterion
        then = self._criterion_at(row.given_under, c.id)
        now_v = self.current.task_version
        since = "your verdict" if row.value.answered else "you read it"
        title = f"{CHANGED_GLYPH} Changed since {since} (version {row.given_under} → {now_v})"
        verdict = VERDICT_LABELS[row.verdict]
        if row.value.answered:
            key = keys(f"verdict.{row.verdict}")[0] if row.verdict else ""
            hint = (
                f"Your verdict was {verdict}. Read the criterion again, then confirm it "
                f"({key} again) or change it; until then it counts as unanswered."
            )
        else:
            hint = "Give your verdict on the criterion as it reads now."
        if isinstance(then, str):  # the earlier wording cannot be read
            self.rubric.show_change(title, "", f"{then} {hint}")
            return
        if then is None:
            self.rubric.show_change(title, "", f"The criterion was added since. {hint}")
            return
        parts = []
        if then.text != c.text:
            parts.append(diff_html(to_plain(then.text), to_plain(c.text), dark=_dark(self)))
        else:
            parts.append(html.escape("The wording is the same; what changed:"))
        others = criterion_changes(then, c)
        if others:
            parts.append("<i>" + html.escape("; ".join(others)) + "</i>")
        elif then.text == c.text:
            parts.append(html.escape("the task itself (its prompt, artifacts or format)."))
        self.rubric.show_change(title, "<br>".join(parts), hint)

    def _criterion_at(self, version: int, criterion_id: str) -> Criterion | str | None:
        """The criterion as it was at task ``version`` of the open item (None: it did not
        exist then; a string: why it cannot be read)."""
        if self.current is None:
            return "No item is open."
        key = (self.current.task.id, version)
        task = self._earlier_tasks.get(key)
        if task is None:
            try:
                task = RevisionStore(self.store.db).task_at(
                    self.benchmark, self.current.task.id, version
                )
            except Exception as exc:  # a help for the grader: never in the way of grading
                log.info("cannot read version %s of %s: %s", version, key[0], exc)
                return "The earlier wording is not available here."
            self._earlier_tasks[key] = task
        try:
            return task.criterion(criterion_id)
        except KeyError:
            return None

    def _show_guidelines(self, criterion_id: str) -> None:
        """The Guidelines panel for the current criterion, read now: an answer saved
        since the item opened shows as soon as the grader comes to its criterion."""
        if self.current is None:
            return
        try:
            found = self.store.guidelines(self.benchmark, self.current.task.id, criterion_id)
        except Exception:  # a help beside the rubric: never in the way of grading
            log.exception("cannot read the guidelines of %s", criterion_id)
            return
        self.rubric.show_guidelines(found.instructions, list(found.answers))

    def move_criterion(self, step: int) -> None:
        if self.state is None or not len(self.state):
            return
        row = min(max(self.current_row() + step, 0), len(self.state) - 1)
        self.rubric.set_current_row(row)
        self.rubric.focus_table()

    def next_open_criterion(self) -> None:
        if self.state is None:
            return
        row = self.state.next_unanswered(self.current_row())
        if row is None:
            self.message.emit("Every criterion is answered. Submit with Ctrl+Enter.")
        else:
            self.rubric.set_current_row(row)
            self.rubric.focus_table()

    def _advance(self) -> None:
        self._answered_moved = None  # a verdict on the current row: R is for this row
        if self.state is None or not self.settings.auto_advance:
            return
        row = self.current_row()
        for nxt in range(row + 1, len(self.state)):
            if not self.state.rows[nxt].is_auto:
                self.rubric.set_current_row(nxt)
                self._answered_moved = (row, nxt)
                return
        if not self.state.missing():
            self.rubric.show_message("Every criterion is answered. Submit with Ctrl+Enter.")

    def read_only_reason(self) -> str | None:
        """Why the open response cannot be changed now (submitted, skipped), or None."""
        if self.current is None or not (0 <= self.index < len(self.queue)):
            return None
        return read_only_reason(self.queue[self.index], _keys("response.reopen"))

    def _refuse_if_read_only(self) -> bool:
        """Say so and return True when the open response is read-only."""
        reason = self.read_only_reason()
        if reason is None:
            return False
        self.rubric.show_message(reason)
        self.message.emit(reason)
        return True

    def _editable_row(self) -> int | None:
        if self.state is None or self.current is None:
            return None
        if self._refuse_if_read_only():
            return None
        row = self.current_row()
        if not (0 <= row < len(self.state)):
            return None
        if self.state.rows[row].is_auto:
            self.rubric.show_message("This criterion is graded automatically from the answer.")
            return None
        return row

    # -- changing judgments -----------------------------------------------------------------------
    def write_judgment(self, assignment_id: int, criterion_id: str, value: JudgmentValue) -> bool:
        """Save one value now and show it (used by edits, undo and redo)."""
        mine = self.current is not None and self.current.item.assignment_id == assignment_id
        if mine and self._refuse_if_read_only():
            return False
        key = (assignment_id, criterion_id)
        expected = self.versions.get(key, JudgmentVersion())
        # the task version this window shows: a verdict is given under that wording
        seen = self.current.task_version if mine and self.current is not None else None
        try:
            saved = self.store.save_judgment(
                assignment_id, criterion_id, value, expected=expected, seen_version=seen
            )
        except StaleJudgmentError as exc:
            return self._stale(exc, value)
        except RevisedSinceError as exc:
            return self._revised(exc, value)
        except GradercalError as exc:
            self.rubric.show_message(f"Not saved: {self._describe(exc)}")
            self.message.emit(f"Not saved: {self._describe(exc)}")
            return False
        except Exception as exc:  # database unreachable, locked too long, …
            self.rubric.show_message(f"Not saved (database error): {exc}")
            self.message.emit(f"Not saved (database error): {exc}")
            return False
        self.versions[key] = dataclasses.replace(expected, revision=saved.revision)
        if (
            self.current is not None
            and self.state is not None
            and self.current.item.assignment_id == assignment_id
        ):
            row = self.state.set_value(criterion_id, saved.value)
            if saved.changed:  # stored under the current version: no longer "changed"
                self.state.mark_current(criterion_id)
            self.rubric.model.row_changed(row)
            if row == self.current_row():
                self.rubric.show_row(self.state.rows[row])
                self._show_change(self.state.rows[row])
            score = self.state.score()
            self.rubric.show_score(score)
            self.rubric.show_message("")
            q = self.queue[self.index]
            status = status_after_save(
                q.status, answered=saved.value.answered, changed=saved.changed
            )
            self.queue[self.index] = dataclasses.replace(
                q, status=status, n_answered=score.answered
            )
            self._show_status()
            if status != q.status:
                self.queue_changed.emit()
            # time on task is kept as the verdicts are: saved with each of them
            self.flush_time(final=True)
            if seen is not None and saved.task_version > seen:
                # saved (its wording had not changed), but the task was revised since
                # this window read it: show it as it is now
                self._reload_later(
                    assignment_id,
                    self.current_row(),
                    f"Saved. The task was revised meanwhile (version {seen} → "
                    f"{saved.task_version}): reloaded with its current wording.",
                )
        return True

    def _revised(self, exc: RevisedSinceError, value: JudgmentValue) -> bool:
        """The criterion was revised since this window read the task: nothing was saved.
        Reload the item; the criterion then shows what changed (and the verdict key
        given again confirms it). What was typed in its text boxes stays there."""
        text = f"Not saved: {self._describe(exc)}"
        self.rubric.show_message(text)
        self.message.emit(text)
        if self.state is None or self.current is None:
            return False
        typed = None
        if exc.criterion_id in self.state:
            shown = self.state.value(exc.criterion_id)
            if (value.rationale, value.unclear_note) != (shown.rationale, shown.unclear_note):
                typed = (value.rationale, value.unclear, value.unclear_note)
            row = self.state.index_of(exc.criterion_id)
        else:
            row = self.current_row()
        self._reload_later(
            exc.assignment_id,
            row,
            self._revised_message(exc),
            marks=(exc.criterion_ids, exc.seen_version),
            typed=(exc.criterion_id, typed) if typed else None,
        )
        return False

    def _revised_message(self, exc: RevisedSinceError) -> str:
        labels = self.state.labels(list(exc.criterion_ids), 40) if self.state else ""
        n = len(exc.criterion_ids)
        return (
            f"Reloaded: {labels} {'was' if n == 1 else 'were'} revised since you opened this "
            f"response (version {exc.seen_version} → {exc.task_version}). Read "
            f"{'it' if n == 1 else 'them'} as {'it reads' if n == 1 else 'they read'} now; "
            "the verdict key (the same one again) gives your verdict under the new wording."
        )

    def _reload_later(
        self,
        assignment_id: int,
        row: int,
        message: str,
        *,
        marks: tuple[tuple[str, ...], int] | None = None,
        typed: tuple[str, tuple[str | None, bool, str | None]] | None = None,
    ) -> None:
        """Reload the open item once the caller (an edit, an undo step) has unwound."""
        index = self.index
        QTimer.singleShot(
            0, lambda: self._reload_revised(assignment_id, index, row, message, marks, typed)
        )

    def _reload_revised(
        self,
        assignment_id: int,
        index: int,
        row: int,
        message: str,
        marks: tuple[tuple[str, ...], int] | None,
        typed: tuple[str, tuple[str | None, bool, str | None]] | None,
    ) -> None:
        if self.current is None or self.current.item.assignment_id != assignment_id:
            return
        self._text_dirty = False
        if not self.open_index(index, row):
            return
        state = self.state
        assert state is not None
        if marks is not None:
            # a criterion without a verdict of the grader's to be stale still shows
            # what changed since they read it
            for i in state.mark_revised(*marks):
                self.rubric.model.row_changed(i)
            self.rubric.show_score(state.score())
            self.rubric.set_current_row(row)
            self._row_changed(self.rubric.current_row())
        if typed is not None and typed[0] in state:
            cid, (rationale, _unclear, note) = typed
            if self.current_row() == state.index_of(cid):
                # kept in the boxes, saved with the grader's next step on the criterion
                self.rubric.rationale.blockSignals(True)
                self.rubric.note.blockSignals(True)
                try:
                    self.rubric.rationale.setPlainText(rationale or "")
                    if note is not None:
                        self.rubric.note.setText(note)
                finally:
                    self.rubric.rationale.blockSignals(False)
                    self.rubric.note.blockSignals(False)
                self._text_criterion = cid
                self._text_dirty = True
        self.rubric.show_message(message)
        self.message.emit(message)

    def _stale(self, exc: StaleJudgmentError, value: JudgmentValue) -> bool:
        """A verdict changed elsewhere since this item was opened: ask, then reload or overwrite."""
        choice = self.stale_prompt(exc, value)
        if choice == "overwrite":
            self.versions[(exc.assignment_id, exc.criterion_id)] = exc.current
            saved = self.write_judgment(exc.assignment_id, exc.criterion_id, value)
            if saved and exc.assignment_id in self.stale:
                self.stale.discard(exc.assignment_id)
                self._show_status()
                self.queue_changed.emit()
            return saved
        if choice != "reload":  # the view keeps showing values that are out of date
            self.stale.add(exc.assignment_id)
            self._show_status()
            self.queue_changed.emit()
        text = f"Not saved: {self._describe(exc)}"
        self.rubric.show_message(text)
        self.message.emit(text)
        if choice == "reload" and self.current is not None:
            aid, row, index = exc.assignment_id, self.current_row(), self.index
            if self.current.item.assignment_id == aid:
                # after the caller (an edit, an undo step) has unwound
                QTimer.singleShot(0, lambda: self._reload(aid, index, row))
        return False

    def _ask_stale(self, exc: StaleJudgmentError, mine: JudgmentValue) -> str:
        return ask_stale(self, exc, mine, self._describe(exc))

    def _describe(self, exc: GradercalError) -> str:
        """The store's message with each criterion named as the rubric shows it (number
        and text) instead of by its internal id."""
        state = self.state
        if state is None:
            return str(exc)
        if isinstance(exc, ValidationError):
            return "; ".join(
                f"{state.label(p.field)}: {p.message}" if p.field else p.message
                for p in exc.problems
            )
        if isinstance(exc, RevisedSinceError):
            n = len(exc.criterion_ids)
            return (
                f"{state.labels(list(exc.criterion_ids), 40)} "
                f"{'was' if n == 1 else 'were'} revised since you opened this response "
                f"(version {exc.seen_version} → {exc.task_version})"
            )
        if isinstance(exc, StaleJudgmentError):
            return str(exc).replace(
                f"criterion {exc.criterion_id}", f"criterion {state.label(exc.criterion_id)}"
            )
        return str(exc)

    def _reload(self, assignment_id: int, index: int, row: int) -> None:
        if self.current is not None and self.current.item.assignment_id == assignment_id:
            self._text_dirty = False
            if self.open_index(index, row):
                self.message.emit("Reloaded: this response shows the current values.")

    def change(
        self,
        criterion_id: str,
        new: JudgmentValue,
        label: str,
        *,
        text_edit: bool = False,
        confirm: bool = False,
    ) -> bool:
        """Save ``new`` on a criterion of the open item (undoable). An unchanged value is
        not saved again — except with ``confirm`` (a verdict key): the verdict is given
        again, so the store hears of it. On a criterion that changed since the grader's
        verdict that confirms it under the current version (the criterion counts again);
        on a criterion revised since this window read it, the store refuses it and the
        item reloads showing what changed; otherwise nothing is written."""
        if self.state is None or self.current is None:
            return False
        old = self.state.value(criterion_id)
        if old == new.normalized() and not (confirm and new.answered):
            return True
        aid = self.current.item.assignment_id
        if not self.write_judgment(aid, criterion_id, new):
            return False
        saved = self.state.value(criterion_id)
        if saved != old:  # a confirmation alone is not undone (nothing to go back to)
            self.undo_stack.push(
                QtJudgmentCommand(self, aid, criterion_id, old, saved, label, text_edit=text_edit)
            )
        return True

    def set_verdict(self, verdict: str | None) -> None:
        row = self._editable_row()
        if row is None or self.state is None:
            return
        c = self.state.rows[row].criterion
        if verdict == "partial" and c.levels <= 2:
            self.rubric.show_message("This criterion has no partial level (met or not met).")
            return
        self.flush_text()
        new = verdict_value(c, self.state.value(c.id), verdict)
        word = {"met": "Met", "partial": "Partial", "not_met": "Not met", None: "Clear"}[verdict]
        label = f"{word} · {self.state.label(c.id, 32)}"
        if self.change(c.id, new, label, confirm=True) and verdict is not None:
            self._advance()

    def set_level(self, level: int) -> None:
        row = self._editable_row()
        if row is None or self.state is None:
            return
        c = self.state.rows[row].criterion
        top = max(c.levels, 2) - 1
        if not 0 <= level <= top:
            self.rubric.show_message(f"Levels of this criterion are 0 … {top}.")
            return
        self.flush_text()
        base = self.state.value(c.id)
        if c.levels > 2:
            new = JudgmentValue(
                level == top, level, base.rationale, base.unclear, base.unclear_note
            )
        else:
            new = verdict_value(c, base, "met" if level == top else "not_met")
        if self.change(c.id, new, f"Level {level} · {self.state.label(c.id, 32)}", confirm=True):
            self._advance()

    def toggle_unclear(self) -> None:
        row = self._editable_row()
        if row is None or self.state is None:
            return
        self._set_unclear(not self.state.rows[row].value.unclear)

    def _unclear_clicked(self, on: bool) -> None:
        self._set_unclear(on)

    def _set_unclear(self, on: bool) -> None:
        row = self._editable_row()
        if row is None or self.state is None:
            return
        c = self.state.rows[row].criterion
        self.flush_text()
        v = self.state.value(c.id)
        new = JudgmentValue(v.met, v.level, v.rationale, on, v.unclear_note)
        label = "Flag unclear" if on else "Unflag unclear"
        if self.change(c.id, new, f"{label} · {self.state.label(c.id, 32)}") and on:
            self.rubric.focus_note()

    def undo(self) -> None:
        if not self._refuse_if_read_only():
            self.undo_stack.undo()

    def redo(self) -> None:
        if not self._refuse_if_read_only():
            self.undo_stack.redo()

    def return_to_rubric(self) -> None:
        """Esc: save what was typed and put the keyboard back on the rubric list, from any
        text box (rationale, note, PDF search, page number) or viewer of this view."""
        self.flush_text()
        self.rubric.focus_table()

    def focus_rationale(self) -> None:
        """``R``: the rationale of the criterion just answered. A verdict moves the cursor on
        (auto-advance); until the grader moves it again, ``R`` goes back to the criterion that
        verdict was given to, which is the one a rationale explains. Otherwise the current one."""
        moved = self._answered_moved
        if moved is not None and moved[1] == self.current_row():
            self.rubric.set_current_row(moved[0])
        self._answered_moved = None
        if self._editable_row() is not None:
            self.rubric.focus_rationale()

    def _text_edited(self) -> None:
        self._text_dirty = True
        self._text_timer.start()

    def flush_text(self) -> None:
        """Save the rationale and note being typed (called after a pause, on leaving, on close)."""
        self._text_timer.stop()
        if self._shut_down:  # flushed by shutdown(); the editors are gone with the window
            return
        if not self._text_dirty or self.state is None or self._text_criterion is None:
            self._text_dirty = False
            return
        self._text_dirty = False
        if self.read_only_reason() is not None:  # the editors are read-only: nothing typed
            return
        cid = self._text_criterion
        v = self.state.value(cid)
        new = JudgmentValue(
            v.met, v.level, self.rubric.rationale_text(), v.unclear, self.rubric.note_text()
        )
        self.change(cid, new, f"Edit text · {self.state.label(cid, 32)}", text_edit=True)

    # -- time ---------------------------------------------------------------------------------------
    def flush_time(self, final: bool = False) -> None:
        """Save the time on task counted since the last save (at least a second of it,
        or any with ``final``); after :meth:`shutdown` nothing (it saved the last)."""
        if self._shut_down or not self.track_time or self.current is None:
            return
        self._unsaved_time += self.tracker.take()
        if self._unsaved_time < 1.0 and not (final and self._unsaved_time > 0):
            return
        try:
            total = self.store.add_time(self.current.item.assignment_id, self._unsaved_time)
        except Exception as exc:
            self.message.emit(f"Time on task not saved: {exc}")
            return
        self._unsaved_time = 0.0
        q = self.queue[self.index]
        self.queue[self.index] = dataclasses.replace(q, time_spent_s=total)

    # -- responses ----------------------------------------------------------------------------------
    def next_response(self) -> None:
        if self.index < len(self.queue) - 1:
            self.open_index(self.index + 1)
        else:
            self.message.emit("This is the last response in your queue.")

    def previous_response(self) -> None:
        if self.index > 0:
            self.open_index(self.index - 1)
        else:
            self.message.emit("This is the first response in your queue.")

    def _next_open_index(self) -> int | None:
        n = len(self.queue)
        for k in range(1, n + 1):
            i = (self.index + k) % n
            if not self.queue[i].done:
                return i
        return None

    def _after_decision(self, text: str) -> None:
        self.queue_changed.emit()
        nxt = self._next_open_index()
        if nxt is None:
            self._show_status()
            self.message.emit(f"{text} Every response in your queue is done — thank you!")
            self.rubric.show_message("Every response in your queue is done.")
            return
        self.open_index(nxt)
        self.message.emit(text)

    def submit(self) -> None:
        if self.current is None:
            return
        self.flush_text()
        aid = self.current.item.assignment_id
        label = self.current.item.label
        try:
            self.queue[self.index] = self.store.submit(aid, seen_version=self.current.task_version)
        except RevisedSinceError as exc:
            text = f"Not submitted: {self._describe(exc)}"
            self.rubric.show_message(text)
            self.message.emit(text)
            row = self.state.index_of(exc.criterion_id) if self.state is not None else 0
            self._reload_later(
                aid, row, self._revised_message(exc), marks=(exc.criterion_ids, exc.seen_version)
            )
            return
        except ValidationError as exc:
            missing = [p.field for p in exc.problems if p.field]
            named = self.state.labels(missing, 40) if self.state is not None else ""
            self.rubric.show_message(
                f"Not submitted: {len(missing)} criteri{'a' if len(missing) != 1 else 'on'} "
                f"not answered yet: {named}."
            )
            if self.state is not None and missing:
                self.rubric.set_current_row(self.state.index_of(missing[0]))
                self.rubric.focus_table()
            return
        except Exception as exc:
            self.message.emit(f"Not submitted: {exc}")
            return
        self._after_decision(f"Submitted {label}.")

    def skip(self, reason: str | None = None) -> None:
        if self.current is None:
            return
        if reason is None:
            dialog = QtSkipDialog(self.current.item.label, self)
            if dialog.exec() != QDialog.DialogCode.Accepted:
                return
            reason = dialog.reason()
        self.flush_text()
        label = self.current.item.label
        try:
            self.queue[self.index] = self.store.skip(self.current.item.assignment_id, reason)
        except Exception as exc:
            self.message.emit(f"Not skipped: {exc}")
            return
        self._after_decision(f"Skipped {label}.")

    def reopen(self) -> None:
        """Make a submitted or skipped response editable again (the store records it)."""
        if self.current is None:
            return
        if not self.queue[self.index].done:
            self.message.emit(f"{self.current.item.label} is open already: nothing to reopen.")
            return
        try:
            self.queue[self.index] = self.store.reopen(self.current.item.assignment_id)
        except Exception as exc:
            self.message.emit(f"Not reopened: {exc}")
            return
        self._show_status()
        self.rubric.show_message("")
        self.queue_changed.emit()
        self.message.emit(
            f"Reopened {self.current.item.label}: change it, then submit it again "
            f"({_keys('response.submit')})."
        )

    def scroll_response(self, direction: int) -> None:
        action = (
            QAbstractSlider.SliderAction.SliderPageStepAdd
            if direction > 0
            else QAbstractSlider.SliderAction.SliderPageStepSub
        )
        self.response_view.verticalScrollBar().triggerAction(action)

    # -- artifacts ----------------------------------------------------------------------------------
    def focus_search(self) -> None:
        if self.current is not None and self.current.task.artifacts:
            self.show_artifacts(True)  # a hidden pane comes back for the search
        if not self.artifacts.focus_search():
            self.message.emit("No PDF to search in this task.")

    def step_artifact(self, direction: int) -> None:
        self.artifacts.step(direction)

    def show_artifacts(self, on: bool) -> None:
        """Show or hide the artifacts pane (hidden, it takes no width at all). A task
        without artifacts never shows the pane: its text and rubric get the room."""
        self.settings.artifacts_shown = on
        if self.artifacts_button.isChecked() != on:
            self.artifacts_button.setChecked(on)
        self._place_artifacts()

    def _place_artifacts(self) -> None:
        has = self.current is None or bool(self.current.task.artifacts)
        self.artifacts_pane.setVisible(self.settings.artifacts_shown and has)
        self.artifacts_button.setEnabled(has)
        self.artifacts_button.setToolTip(
            f"Show or hide the artifacts ({_keys('view.artifacts')})"
            if has
            else "This task has no artifacts"
        )

    def toggle_artifacts(self) -> None:
        if self.current is not None and not self.current.task.artifacts:
            self.message.emit("This task has no artifacts.")
            return
        self.show_artifacts(not self.settings.artifacts_shown)
        if not self.settings.artifacts_shown:
            self.message.emit(f"Artifacts hidden: {_keys('view.artifacts')} shows them again.")

    def fold_guidelines(self, folded: bool) -> None:
        """Fold the Guidelines panel to its title line (the criteria list takes the room),
        or unfold it; remembered for the next session."""
        self.settings.guidelines_folded = folded
        self.rubric.fold_guidelines(folded)

    def toggle_guidelines(self) -> None:
        if not self.rubric.guidelines.isVisibleTo(self.rubric):
            self.message.emit("No guidelines for this criterion.")
            return
        self.fold_guidelines(not self.settings.guidelines_folded)
        if self.settings.guidelines_folded:
            self.message.emit(f"Guidelines folded: {_keys('view.guidelines')} unfolds them.")

    # -- layout memory ------------------------------------------------------------------------------
    def save_layout(self) -> None:
        self.settings.set_bytes("grading/splitter", self.splitter.saveState())
        self.settings.set_bytes("grading/text_splitter", self.text_splitter.saveState())

    def restore_layout(self) -> None:
        """Splitter sizes as the grader left them; by default 28% text, 38% artifacts, 34% rubric."""
        restored = False
        for key, splitter in (
            ("grading/splitter", self.splitter),
            ("grading/text_splitter", self.text_splitter),
        ):
            state = self.settings.bytes_value(key)
            if state is not None:
                restored = splitter.restoreState(state) or restored
        if not restored:
            self.splitter.setSizes([2800, 3800, 3400])
            self.text_splitter.setSizes([400, 600])

    def progress_text(self) -> str:
        done = sum(1 for q in self.queue if q.done)
        spent = sum(q.time_spent_s for q in self.queue) + self._unsaved_time
        return f"{done} / {len(self.queue)} done · {format_duration(spent)} on task"


def format_duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


__all__ = ["QtGradingView", "format_duration", "response_markdown"]
