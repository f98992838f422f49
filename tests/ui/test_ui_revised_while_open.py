"""A criterion revised while a grader has its response open (issue #30, 2), in the real
window (offscreen, key presses through qtbot), on SQLite and PostgreSQL: the next save is
refused (it was made under the old wording), the item reloads with the criterion marked
"changed since your verdict" and its word diff, the same key confirms it, and Submit is
allowed again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.revisions import RevisionStore
from gradercal.db.session import Database, open_database
from gradercal.ui.qt_grading_view import QtGradingView
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_rubric_model import TEXT_COLUMN, VERDICT_COLUMN
from gradercal.ui.qt_settings import QtAppSettings
from tests.ui.test_ui_revisions import GRADER, db, judgment_version, press

pytestmark = pytest.mark.gui
__all__ = ["db"]  # fixture

NEW_TEXT = "Names the premature stop codon and its position"


def answer(db: Database, *, skip: str | None = None) -> int:
    """GRADER answers the judgment criteria of their first M1 item (all but ``skip``),
    not submitted; its assignment id."""
    store = GradingStore(db)
    store.create_grader(GRADER)
    store.ensure_queue(GRADER, "mini")
    aid = next(q.assignment_id for q in store.queue(GRADER) if q.task_id == "M1")
    item = store.load_item(GRADER, aid)
    for c in item.task.criteria:
        if c.auto is None and c.id != skip:
            value = JudgmentValue(level=2) if c.levels == 3 else JudgmentValue(met=True)
            store.save_judgment(aid, c.id, value, seen_version=1)
    return aid


def revise_elsewhere(db: Database) -> None:
    """The coordinator rewords M1/c1 from another client (its own connections)."""
    other = open_database(db.url.render_as_string(hide_password=False))
    try:
        RevisionStore(other).revise_criterion(
            None, "M1", "c1", text=NEW_TEXT, reason="position matters", actor="coord"
        )
    finally:
        other.dispose()


@pytest.fixture
def window(qtbot: Any, db: Database, tmp_path: Path) -> Iterator[QtMainWindow]:
    win = QtMainWindow(
        GradingStore(db), QtAppSettings(tmp_path / "g.ini"), db.display, track_time=False
    )
    qtbot.addWidget(win)
    win.resize(1366, 768)
    win.show()
    qtbot.waitExposed(win)
    win.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is win)
    yield win
    win.close()


def open_item(qtbot: Any, win: QtMainWindow, aid: int) -> QtGradingView:
    win.start_session(GRADER, "mini", load=False)
    g = win.grading
    assert g is not None
    g.load_queue_now()
    g.settings.auto_advance = False
    index = next(i for i, q in enumerate(g.queue) if q.assignment_id == aid)
    with qtbot.waitSignal(g.item_ready, timeout=20_000):
        g.open_index(index)
    assert g.current is not None and g.current.task_version == 1
    return g


def on_row(g: QtGradingView, criterion: str) -> int:
    assert g.state is not None
    row = g.state.index_of(criterion)
    g.rubric.set_current_row(row)
    g.rubric.focus_table()
    return row


def reloaded(qtbot: Any, g: QtGradingView) -> None:
    qtbot.waitUntil(lambda: g.current is not None and g.current.task_version == 2, timeout=10_000)


def test_the_next_save_is_refused_then_the_same_key_confirms(
    qtbot: Any, db: Database, window: QtMainWindow
) -> None:
    aid = answer(db)
    g = open_item(qtbot, window, aid)
    n = g.queue[g.index].n_criteria
    assert f"{n} of {n} answered" in g.status_label.text()
    row = on_row(g, "c1")
    revise_elsewhere(db)  # between the load and the save

    press(qtbot, window, "M")  # the verdict shown, given under the old wording
    assert judgment_version(db, aid, "c1") == 1  # refused: nothing stored as current
    reloaded(qtbot, g)
    state = g.state
    assert state is not None and g.current_row() == row
    model = g.rubric.model
    assert "changed since your verdict" in model.index(row, TEXT_COLUMN).data()
    assert model.index(row, VERDICT_COLUMN).data().startswith("↻ Met")
    assert g.rubric.change_shown()
    diff = g.rubric.changed_diff.text()
    assert "line-through" in diff and "Notes" in diff and "its position" in diff
    assert "version 1 → 2" in g.rubric.changed_title.text()
    assert "was revised since you opened this response" in g.rubric.message.text()
    assert f"{n - 1} of {n} answered" in g.status_label.text()  # no longer "n of n"

    press(qtbot, window, "M")  # the same key again: confirmed under the new wording
    assert judgment_version(db, aid, "c1") == 2
    assert not g.rubric.change_shown()
    assert model.index(row, VERDICT_COLUMN).data().startswith("✓ Met")
    assert f"{n} of {n} answered" in g.status_label.text()
    press(qtbot, window, "Ctrl+Return")
    assert GradingStore(db).queue_item(aid).status == "submitted"


def test_submit_under_the_old_wording_is_refused_and_reloads(
    qtbot: Any, db: Database, window: QtMainWindow
) -> None:
    aid = answer(db)
    g = open_item(qtbot, window, aid)
    revise_elsewhere(db)
    press(qtbot, window, "Ctrl+Return")
    assert GradingStore(db).queue_item(aid).status == "in_progress"
    reloaded(qtbot, g)
    assert g.state is not None and g.current_row() == g.state.index_of("c1")
    assert g.rubric.change_shown() and "its position" in g.rubric.changed_diff.text()
    assert "Reloaded" in g.rubric.message.text()
    press(qtbot, window, "M")
    assert judgment_version(db, aid, "c1") == 2
    press(qtbot, window, "Ctrl+Return")
    assert GradingStore(db).queue_item(aid).status == "submitted"


def test_a_first_verdict_is_refused_and_what_was_typed_stays(
    qtbot: Any, db: Database, window: QtMainWindow
) -> None:
    aid = answer(db, skip="c1")
    g = open_item(qtbot, window, aid)
    row = on_row(g, "c1")
    revise_elsewhere(db)
    g.rubric.rationale.setPlainText("the stop codon is at 312")  # typed, saved after a pause
    g.flush_text()
    assert GradingStore(db).load_item(GRADER, aid).judgments.get("c1") is None
    reloaded(qtbot, g)
    assert g.current_row() == row and g.rubric.change_shown()
    assert "Changed since you read it (version 1 → 2)" in g.rubric.changed_title.text()
    assert "its position" in g.rubric.changed_diff.text()
    assert g.rubric.rationale_text() == "the stop codon is at 312"  # nothing typed is lost
    g.rubric.focus_table()
    press(qtbot, window, "N")
    saved = GradingStore(db).load_item(GRADER, aid)
    assert saved.judgments["c1"].met is False
    assert saved.judgments["c1"].rationale == "the stop codon is at 312"
    assert judgment_version(db, aid, "c1") == 2 and saved.stale == {}
    assert not g.rubric.change_shown()
    press(qtbot, window, "Ctrl+Return")
    assert GradingStore(db).queue_item(aid).status == "submitted"


def test_a_save_on_another_criterion_is_kept_and_the_item_reloads(
    qtbot: Any, db: Database, window: QtMainWindow
) -> None:
    aid = answer(db)
    g = open_item(qtbot, window, aid)
    row = on_row(g, "c2")
    revise_elsewhere(db)
    press(qtbot, window, "N")  # c2 reads as it did: saved
    assert GradingStore(db).load_item(GRADER, aid).judgments["c2"].met is False
    reloaded(qtbot, g)
    assert g.current_row() == row
    assert "revised meanwhile" in g.rubric.message.text()
    assert g.state is not None
    c1 = g.state.index_of("c1")
    assert "changed since your verdict" in g.rubric.model.index(c1, TEXT_COLUMN).data()
