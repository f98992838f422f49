"""Rubric revisions in the windows (issue #16), on SQLite and PostgreSQL: the coordinator's
criterion edit dialog (live diff, the store's dry-run consequences, a required reason,
nothing written on a problem), its entry points, and a grader's item coming back with
the changed criterion marked, its diff shown, and re-confirmed by the same verdict key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QApplication, QWidget
from sqlalchemy import select

from gradercal.db import models as m
from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.repo import Repository
from gradercal.db.revisions import RevisionStore
from gradercal.db.session import Database, open_database
from gradercal.formats import read_path
from gradercal.model import Criterion
from gradercal.ui import qt_workers
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_revise_dialog import QtReviseDialog
from gradercal.ui.qt_rubric_model import TEXT_COLUMN, VERDICT_COLUMN
from gradercal.ui.qt_settings import QtAppSettings
from gradercal.ui.revision_text import CriterionDraft, consequences, diff_html, parse_tags
from tests.conftest import fingerprint
from tests.support.team import BENCH as TEAM_BENCH
from tests.support.team import crew, pg_url

pytestmark = pytest.mark.gui
__all__ = ["crew", "pg_url"]  # fixtures

GRADER = "zoe"


@pytest.fixture
def db(db_url: str, mini: Path) -> Iterator[Database]:
    """The mini benchmark imported (ana, ben and a judge have graded it)."""
    database = open_database(db_url)
    Repository(database).import_data(read_path(mini))
    try:
        yield database
    finally:
        qt_workers_idle()
        database.dispose()


def qt_workers_idle() -> None:
    """Before the database goes: the dialogs' background jobs finished (a minute at most; a
    fixed 5 s can pass on loaded cores, and a job would then meet a disposed database)."""
    import time

    app = QApplication.instance()
    deadline = time.monotonic() + 60
    while qt_workers.pending_jobs() and time.monotonic() < deadline:
        if app is not None:
            app.processEvents()
        time.sleep(0.01)


def open_dialog(qtbot: Any, db: Database, task: str = "M1", crit: str = "c1") -> QtReviseDialog:
    dialog = QtReviseDialog(db, None, task, crit, "coord")
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def wait_preview(qtbot: Any, dialog: QtReviseDialog, starts: str) -> None:
    dialog.refresh_preview()  # at once, not after the typing pause
    qtbot.waitUntil(lambda: dialog.headline.text().startswith(starts), timeout=10_000)


# -- the pure parts -----------------------------------------------------------------------
def test_diff_html_strikes_removed_and_marks_added_words_escaped() -> None:
    out = diff_html("Notes the <b> stop", "Names the <b> stop codon")
    assert "line-through" in out and ">Notes<" in out
    assert "underline" in out and ">Names<" in out and "codon" in out
    assert "&lt;b&gt;" in out and "<b>" not in out  # the criterion's own text is escaped


def test_a_draft_says_what_changed_and_what_is_missing() -> None:
    old = Criterion("c1", "Notes the stop codon", 3, tags=("a",))
    same = CriterionDraft(old, " Notes the stop codon ", 3, 2, ("a",), "why")
    assert same.changes() == {}
    assert any("Nothing is changed" in msg for _f, msg in same.problems())
    draft = CriterionDraft(old, "Names it", 5, 3, parse_tags("a, b ,, a"), "")
    assert draft.changes() == {"text": "Names it", "points": 5, "levels": 3, "tags": ["a", "b"]}
    assert [f for f, _m in draft.problems()] == ["reason"]
    empty = CriterionDraft(old, "   ", 0, 2, ("a",), "x")
    assert {f for f, _m in empty.problems()} == {"text", "points"}


def test_consequences_in_words() -> None:
    from gradercal.db.revisions import RevisionReport

    nothing = RevisionReport("T", 1, 1, dry_run=True)
    assert consequences(nothing)[0] == "No change yet"
    verdict = RevisionReport(
        "T", 1, 1, kind="verdict", stale_judgments=14, stale_adjudications=1, dry_run=True
    )
    head, detail = consequences(verdict, ("ana", "ben", "chloe"))
    assert (
        head == "Verdict change: 14 verdicts become stale, 3 graders' items go back to their queues"
    )
    assert "1 adjudication too" in detail and "(ana, ben, chloe)" in detail
    one = consequences(RevisionReport("T", 1, 1, kind="verdict", stale_judgments=1), ("ana",))
    assert (
        one[0]
        == "Verdict change: 1 verdict becomes stale, 1 grader's items go back to their queues"
    )
    score = consequences(RevisionReport("T", 1, 1, kind="score"))
    assert score[0] == "Points only: scores rescale, nobody regrades"
    assert consequences(RevisionReport("T", 1, 1, kind="note"))[0].startswith("Note only")


# -- the dialog -------------------------------------------------------------------------------
def test_the_dialog_revises_and_the_history_keeps_the_reason(qtbot: Any, db: Database) -> None:
    dialog = open_dialog(qtbot, db)
    assert dialog.text.toPlainText() == "Notes the premature stop codon"
    assert (dialog.points.value(), dialog.levels.value()) == (6, 2)
    assert dialog.tags.text() == "axis:accuracy"
    dialog.text.setPlainText("Names the premature stop codon and its position")
    html = dialog.diff.toHtml()
    assert "line-through" in html and "Notes" in html and "its position" in html
    wait_preview(qtbot, dialog, "Verdict change")
    # ana, ben and the judge gave c1 verdicts on M1's two responses
    assert dialog.headline.text().startswith("Verdict change: 6 verdicts become stale")
    assert "0 graders' items" in dialog.headline.text()  # nobody has submitted M1 yet
    assert RevisionStore(db).current(None, "M1")[1] == 1  # the dry run wrote nothing
    dialog.reason.setText("graders split on 'notes'")
    with qtbot.waitSignal(dialog.revised):
        qtbot.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    assert dialog.report is not None and dialog.report.version == 2
    assert not dialog.isVisible()
    history = RevisionStore(db).history(None, "M1")
    assert [h.version for h in history] == [1, 2]
    latest = history[-1]
    assert latest.reason == "graders split on 'notes'"
    assert (latest.actor, latest.source, latest.kind) == ("coord", "ui", "verdict")
    task, version = RevisionStore(db).current(None, "M1")
    assert version == 2
    assert task.criterion("c1").text == "Names the premature stop codon and its position"


def test_a_points_only_change_previews_no_regrading(qtbot: Any, db: Database) -> None:
    dialog = open_dialog(qtbot, db, "M1", "c2")
    dialog.points.setValue(5)
    assert "points +3 → +5" in dialog.fields.text()
    wait_preview(qtbot, dialog, "Points only")
    assert dialog.headline.text() == "Points only: scores rescale, nobody regrades"
    assert "Every verdict stands" in dialog.detail.text()
    dialog.reason.setText("worth more")
    assert dialog.save()
    assert dialog.report is not None and dialog.report.kind == "score"
    assert RevisionStore(db).stale_counts(None) == {}


def test_an_empty_reason_or_text_is_refused_and_nothing_is_written(
    qtbot: Any, db: Database, db_url: str
) -> None:
    before = fingerprint(db_url)
    dialog = open_dialog(qtbot, db)
    dialog.text.setPlainText("Names the stop codon")
    qtbot.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)  # no reason
    assert dialog.error.isVisible() and "reason is required" in dialog.error.text()
    assert dialog.isVisible() and dialog.report is None
    dialog.reason.setText("clearer")
    dialog.text.setPlainText("   ")
    qtbot.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    assert "text cannot be empty" in dialog.error.text()
    dialog.refresh_preview()
    assert "cannot be empty" in dialog.headline.text()
    dialog.text.setPlainText("Names the stop codon")
    dialog.points.setValue(0)  # refused by the dry run as well
    wait_preview(qtbot, dialog, "Cannot be saved")
    assert "points must not be 0" in dialog.detail.text()
    assert not dialog.save() and "Points must not be 0" in dialog.error.text()
    qt_workers_idle()
    assert fingerprint(db_url) == before
    # revised by someone else meanwhile: refused, only their version is stored
    dialog.points.setValue(6)
    RevisionStore(db).revise_criterion(None, "M1", "c2", points=4, reason="x", actor="other")
    assert not dialog.save()
    assert "revised meanwhile" in dialog.error.text()
    assert [h.version for h in RevisionStore(db).history(None, "M1")] == [1, 2]


def test_a_dialog_on_a_missing_criterion_says_so(qtbot: Any, db: Database) -> None:
    dialog = open_dialog(qtbot, db, "M1", "c99")
    assert "no criterion" in dialog.error.text()
    assert not dialog.save_button.isEnabled()
    ghost = open_dialog(qtbot, db, "M9", "c1")
    assert "no task" in ghost.error.text()


# -- entry points --------------------------------------------------------------------------
@pytest.fixture
def coordinator(qtbot: Any, db: Database, tmp_path: Path) -> Iterator[QtMainWindow]:
    window = QtMainWindow(
        GradingStore(db),
        QtAppSettings(tmp_path / "settings.ini"),
        db.display,
        track_time=False,
        coordinator=True,
    )
    qtbot.addWidget(window)
    window.open_dashboard("mini", compute=False)
    window.resize(1366, 768)
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    yield window
    qt_workers_idle()
    if window.coordination is not None:
        window.coordination.shutdown()


def test_revise_from_criterion_health_and_the_adjudication_view(
    qtbot: Any, coordinator: QtMainWindow
) -> None:
    view = coordinator.coordination
    assert view is not None
    health = view.dashboard.section_tables["health"]
    health.set_frame(
        pd.DataFrame({"task_id": ["M1", "M2"], "criterion_id": ["c2", "c1"], "impact": [0.4, 0.1]})
    )
    view.dashboard.tables.setCurrentWidget(health)
    health.select_row(1)
    menu = health.row_menu(1)
    revise = next(a for a in menu.actions() if a.text().startswith("Revise criterion"))
    assert revise.isEnabled()
    revise.trigger()
    dialog = view.revise_dialog
    assert dialog is not None and (dialog.task_id, dialog.criterion_id) == ("M2", "c1")
    assert dialog.text.toPlainText() == "Explains why the top plateau is uncertain"
    dialog.reject()
    button = health.findChild(QWidget, "revise_health")
    assert button is not None
    health.select_row(0)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert view.revise_dialog is not None and view.revise_dialog.criterion_id == "c2"
    view.revise_dialog.reject()
    # Ctrl+E on the selected row
    action = coordinator.actions_by_id["criterion.revise"]
    assert action.shortcuts()[0] == QKeySequence("Ctrl+E")
    action.trigger()
    assert view.revise_dialog is not None and view.revise_dialog.criterion_id == "c2"
    view.revise_dialog.reject()
    # the adjudication of a disagreement (ben flagged nothing; his verdict differs on c2)
    view.open_adjudication("M1-a", "c2")
    qtbot.waitUntil(lambda: view.adjudication.case is not None, timeout=10_000)
    qtbot.mouseClick(view.adjudication.revise_button, Qt.MouseButton.LeftButton)
    dialog = view.revise_dialog
    assert dialog is not None and (dialog.task_id, dialog.criterion_id) == ("M1", "c2")
    assert dialog.who.text() == view.actor()
    dialog.text.setPlainText("Suggests re-sequencing the cloning junction")
    dialog.reason.setText("which junction")
    assert dialog.save()
    assert "revised to version 2" in coordinator.statusBar().currentMessage()
    assert view.dashboard.refresh_bar.isVisibleTo(view.dashboard)
    action.trigger()  # Ctrl+E in the adjudication view: its criterion
    assert view.revise_dialog is not dialog and view.revise_dialog is not None
    assert view.revise_dialog.criterion_id == "c2"
    assert view.revise_dialog.version == 2


# -- a grader's item comes back ---------------------------------------------------------------
def grade_and_submit(db: Database, task: str = "M1") -> int:
    """GRADER grades and submits their first item of ``task``; its assignment id."""
    store = GradingStore(db)
    store.create_grader(GRADER)
    store.ensure_queue(GRADER, "mini")
    q = next(q for q in store.queue(GRADER) if q.task_id == task)
    item = store.load_item(GRADER, q.assignment_id)
    for c in item.task.criteria:
        if c.auto is None:
            value = JudgmentValue(level=2) if c.levels == 3 else JudgmentValue(met=True)
            store.save_judgment(q.assignment_id, c.id, value)
    store.submit(q.assignment_id)
    return q.assignment_id


def judgment_version(db: Database, assignment_id: int, criterion_id: str) -> int:
    with db.read() as s:
        a = s.get(m.Assignment, assignment_id)
        assert a is not None
        return int(
            s.scalar(
                select(m.Judgment.task_version)
                .join(m.Criterion, m.Criterion.id == m.Judgment.criterion_id)
                .where(
                    m.Judgment.grader_id == a.grader_id,
                    m.Judgment.response_id == a.response_id,
                    m.Criterion.external_id == criterion_id,
                )
            )
        )


def press(qtbot: Any, window: QWidget, key: str) -> None:
    seq = QKeySequence(key)[0]
    target = QApplication.focusWidget() or window
    qtbot.keyClick(target, seq.key(), seq.keyboardModifiers())


def test_a_revised_criterion_comes_back_marked_and_is_confirmed_by_the_same_key(
    qtbot: Any, db: Database, tmp_path: Path
) -> None:
    aid = grade_and_submit(db)
    store = RevisionStore(db)
    dry = store.revise_criterion(None, "M1", "c1", text="x", reason=None, actor=None, dry_run=True)
    assert dry.requeued == (GRADER,) and dry.version == 2
    dry = store.revise_criterion(
        None, "M2", "ec50", text="y", reason=None, actor=None, dry_run=True
    )
    assert dry.requeued == ()  # an automatic criterion: nobody regrades it
    assert store.history(None, "M1") == []  # dry runs wrote nothing
    dialog = QtReviseDialog(db, None, "M1", "c1", "coord")
    qtbot.addWidget(dialog)
    dialog.text.setPlainText("Names the premature stop codon and its position")
    wait_preview(qtbot, dialog, "Verdict change")
    assert "1 grader's items go back" in dialog.headline.text() and GRADER in dialog.detail.text()
    dialog.reason.setText("position matters")
    assert dialog.save()
    assert dialog.report is not None and dialog.report.requeued == (GRADER,)

    window = QtMainWindow(
        GradingStore(db), QtAppSettings(tmp_path / "g.ini"), db.display, track_time=False
    )
    qtbot.addWidget(window)
    window.resize(1366, 768)
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    window.start_session(GRADER, "mini", load=False)
    g = window.grading
    assert g is not None
    g.load_queue_now()
    index = next(i for i, q in enumerate(g.queue) if q.assignment_id == aid)
    with qtbot.waitSignal(g.item_ready, timeout=20_000):
        g.open_index(index)
    q = g.queue[g.index]
    assert q.status == "in_progress" and "in progress" in g.status_label.text()
    state = g.state
    assert state is not None
    row = state.index_of("c1")
    assert g.current_row() == row  # opened on the changed criterion
    model = g.rubric.model
    assert "changed since your verdict" in model.index(row, TEXT_COLUMN).data()
    assert model.index(row, VERDICT_COLUMN).data().startswith("↻ Met")
    assert g.rubric.change_shown()
    diff = g.rubric.changed_diff.text()
    assert "line-through" in diff and "Notes" in diff and "its position" in diff
    assert "version 1 → 2" in g.rubric.changed_title.text()
    assert "Your verdict was Met" in g.rubric.changed_hint.text()
    assert state.score().answered == state.score().total - 1  # counts as unanswered
    assert "1 criterion changed" in g.rubric.message.text()
    g.submit()  # not yet: the changed criterion is unanswered
    assert "not answered yet" in g.rubric.message.text()
    assert g.queue[g.index].status == "in_progress"

    g.rubric.focus_table()
    g.settings.auto_advance = False
    press(qtbot, window, "M")  # the same verdict again: saved, so confirmed
    assert judgment_version(db, aid, "c1") == 2
    assert not g.rubric.change_shown()
    assert "changed" not in model.index(row, TEXT_COLUMN).data()
    assert model.index(row, VERDICT_COLUMN).data().startswith("✓ Met")
    assert state.score().complete
    assert not g.undo_stack.canUndo()  # a confirmation alone is not an undo step
    assert GradingStore(db).load_item(GRADER, aid).stale == {}
    press(qtbot, window, "Ctrl+Return")
    assert GradingStore(db).queue(GRADER)[index].status == "submitted"
    window.close()


# -- team mode (PostgreSQL): a grader's login reads the earlier wording ------------------------
@pytest.mark.postgres
def test_in_team_mode_a_grader_sees_the_diff_and_a_coordinator_revises(
    qtbot: Any, crew: Any, tmp_path: Path
) -> None:
    from gradercal.ui.qt_app import build_window

    ana_db = open_database(crew.url(crew.ana))
    try:
        store = GradingStore(ana_db)
        first = store.queue(crew.ana)[0]
        task = store.load_item(crew.ana, first.assignment_id).task
        crit = next(c for c in task.criteria if c.auto is None)
        store.save_judgment(first.assignment_id, crit.id, JudgmentValue(met=True))
    finally:
        ana_db.dispose()
    dan_db = open_database(crew.url(crew.dan))  # the coordinator's own login
    try:
        dialog = QtReviseDialog(dan_db, TEAM_BENCH, task.id, crit.id, crew.dan)
        qtbot.addWidget(dialog)
        dialog.text.setPlainText(crit.text + " (with the evidence)")
        dialog.reason.setText("ask for the evidence")
        assert dialog.save(), dialog.error.text()
    finally:
        qt_workers_idle()
        dan_db.dispose()
    window = build_window(crew.url(crew.ana), settings=QtAppSettings(tmp_path / "team.ini"))
    qtbot.addWidget(window)
    g = window.grading
    assert g is not None
    qtbot.waitUntil(lambda: g.current is not None, timeout=20_000)
    index = next(i for i, q in enumerate(g.queue) if q.assignment_id == first.assignment_id)
    with qtbot.waitSignal(g.item_ready, timeout=20_000):
        g.open_index(index)
    assert g.state is not None and g.current_row() == g.state.index_of(crit.id)
    assert g.rubric.change_shown()
    assert "with the evidence" in g.rubric.changed_diff.text()
    assert "not available" not in g.rubric.changed_hint.text()
    qt_workers_idle()
    window.close()
    window.store.db.dispose()


def test_diff_html_keeps_a_space_between_a_struck_and_an_added_word() -> None:
    """Issue #33: "Notes" → "Names" read "NotesNames"; the words stay apart, nothing else moves."""
    import re

    out = diff_html("Notes the stop", "Names the stop")
    visible = re.sub(r"<[^>]+>", "", out)
    assert visible == "Notes Names the stop"
    assert re.sub(r"<[^>]+>", "", diff_html("a b c", "a x c")) == "a b x c"
    # a space already there is not doubled
    assert re.sub(r"<[^>]+>", "", diff_html("the stop", "the stop codon")) == "the stop codon"


def test_the_dialog_does_not_move_while_typing(qtbot: Any, db: Database) -> None:
    """Issue #33: the preview and the changed fields grew and shrank with the text, so a
    click aimed at Reason landed in Text. Every field stays where it was."""
    dialog = open_dialog(qtbot, db)
    dialog.resize(640, 620)
    qtbot.waitExposed(dialog)

    def places() -> list[int]:
        return [
            w.mapTo(dialog, w.rect().topLeft()).y()
            for w in (dialog.reason, dialog.text, dialog.save_button, dialog.diff)
        ]

    qtbot.wait(50)
    before = places()
    for text in (
        "Names the stop codon",
        "Names the premature stop codon, its position in the reading frame and why the "
        "protein is truncated; says which exon carries it and what that means for decay",
        "X",
    ):
        dialog.text.setPlainText(text)
        dialog.points.setValue(dialog.points.value() + 1)
        dialog.tags.setText("a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r")
        dialog.refresh_preview()
        qtbot.waitUntil(lambda: not dialog.headline.text().startswith("Working"), timeout=10_000)
        qtbot.wait(50)
        assert places() == before, text
