"""Issue #33, the laptop polish of the grading and coordinator windows (pytest-qt, offscreen,
real widgets driven with keys): R after a verdict, the Guidelines panel at 720 px, F1 per
window, the coordinator window at 1024 px, time on task kept like the verdicts."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from sqlalchemy import select

from gradercal.db import models as m
from gradercal.db.session import open_database
from gradercal.ui.qt_grading_view import TIME_FLUSH_MS
from gradercal.ui.qt_shortcuts_dialog import QtShortcutsDialog
from gradercal.ui.shortcuts import BY_ID, COORDINATOR_IDS, SHORTCUTS, window_shortcuts
from tests.ui import test_ui_grading as grading
from tests.ui.test_ui_grading import Opener, go_to_task, judgments, press, response_of

#: The grading tests' fixtures: a small benchmark, a window opened as a grader.
db_path = grading.db_path
open_window = grading.open_window

pytestmark = pytest.mark.gui


def test_r_after_a_verdict_writes_the_rationale_of_the_criterion_answered(
    qtbot: Any, open_window: Opener, db_path: str
) -> None:
    window = open_window()
    g = window.grading
    assert g is not None
    index = go_to_task(qtbot, window, "P1")
    aid = g.queue[index].assignment_id
    assert g.current_row() == 0
    press(qtbot, window, "M")  # c1 met: the cursor moves on to c2
    assert g.current_row() == 1
    press(qtbot, window, "R")  # … but the rationale explains the verdict just given
    assert QApplication.focusWidget() is g.rubric.rationale
    assert g.current_row() == 0
    qtbot.keyClicks(g.rubric.rationale, "the claim rests on one blot")
    press(qtbot, window, "Escape")
    # moving by hand first: R is for the row the grader moved to
    press(qtbot, window, "N")  # c1 again (cursor was back on c1): not met, moves to c2
    press(qtbot, window, "J")  # on to c3 by hand
    press(qtbot, window, "K")  # back to c2 by hand
    press(qtbot, window, "R")
    assert g.current_row() == 1
    qtbot.keyClicks(g.rubric.rationale, "no dye mentioned")
    press(qtbot, window, "Escape")
    # a verdict on the last criterion does not move on: R is for it, not the one before
    press(qtbot, window, "J")
    press(qtbot, window, "N")  # c3: not met, moves on to c4 (the last)
    press(qtbot, window, "P")  # c4: partial, nothing to move on to
    assert g.current_row() == 3
    press(qtbot, window, "R")
    assert g.current_row() == 3
    qtbot.keyClicks(g.rubric.rationale, "half the test")
    press(qtbot, window, "Escape")
    rid = response_of(db_path, aid)
    got = {c: j.rationale for (r, c), j in judgments(db_path).items() if r == rid}
    assert got["c1"] == "the claim rests on one blot"
    assert got["c2"] == "no dye mentioned"
    assert got["c4"] == "half the test" and got["c3"] is None


def _time_in_database(db_path: str, assignment_id: int) -> float:
    """What another process (or the app after a SIGKILL) reads of the time on task."""
    db = open_database(db_path)
    try:
        with db.read() as s:
            return float(
                s.scalar(select(m.Assignment.time_spent_s).where(m.Assignment.id == assignment_id))
            )
    finally:
        db.dispose()


def test_time_on_task_is_saved_with_each_verdict_as_a_sigkill_would_find_it(
    qtbot: Any, open_window: Opener, db_path: str
) -> None:
    """Nothing is closed or flushed by the test: the database holds what a SIGKILL leaves."""
    window = open_window()
    g = window.grading
    assert g is not None
    clock = [5000.0]
    g.tracker.clock = lambda: clock[0]
    g.tracker.reset()
    g._unsaved_time = 0.0
    aid = g.queue[g.index].assignment_id
    before = _time_in_database(db_path, aid)
    handle = window.windowHandle()
    assert handle is not None
    clock[0] += 25  # 25 s of reading, then a verdict
    qtbot.keyClick(handle, Qt.Key.Key_M)
    assert _time_in_database(db_path, aid) - before == pytest.approx(25.0)
    clock[0] += 7
    qtbot.keyClick(handle, Qt.Key.Key_N)
    assert _time_in_database(db_path, aid) - before == pytest.approx(32.0)
    # while only reading, the periodic save keeps it (at most TIME_FLUSH_MS is at risk)
    assert TIME_FLUSH_MS <= 10_000 and g._time_timer.isActive()
    clock[0] += 9
    g._time_timer.timeout.emit()
    assert _time_in_database(db_path, aid) - before == pytest.approx(41.0)


def _f1_rows(dialog: QtShortcutsDialog) -> list[tuple[str, str]]:
    tree = dialog.tree
    rows = []
    for g in range(tree.topLevelItemCount()):
        group = tree.topLevelItem(g)
        assert group is not None
        for c in range(group.childCount()):
            child = group.child(c)
            assert child is not None
            rows.append((child.text(0), child.text(1)))
    return rows


def _assert_keys_column_whole(qtbot: Any, dialog: QtShortcutsDialog) -> None:
    qtbot.waitExposed(dialog)
    tree = dialog.tree
    fm = tree.fontMetrics()
    assert tree.columnWidth(0) + tree.columnWidth(1) <= tree.viewport().width()
    for _label, keys_text in _f1_rows(dialog):
        assert fm.horizontalAdvance(keys_text) <= tree.columnWidth(1), keys_text


def test_f1_shows_whole_keys_and_only_the_keys_of_the_graders_window(
    qtbot: Any, open_window: Opener
) -> None:
    window = open_window()
    press(qtbot, window, "F1")
    dialog = window.findChild(QtShortcutsDialog)
    assert dialog is not None and dialog.isVisible()
    _assert_keys_column_whole(qtbot, dialog)
    labels = {label for label, _keys in _f1_rows(dialog)}
    coordinators = {
        s.label for s in SHORTCUTS if s.id in COORDINATOR_IDS or s.group == "Adjudication"
    }
    assert coordinators and not labels & coordinators
    assert {s.label for s in window_shortcuts(coordinator=False)} == labels
    assert BY_ID["criterion.rationale"].label in labels


def test_f1_of_a_coordinator_window_lists_its_keys_whole(qtbot: Any) -> None:
    dialog = QtShortcutsDialog(coordinator=True)
    qtbot.addWidget(dialog)
    dialog.show()
    _assert_keys_column_whole(qtbot, dialog)
    labels = {label for label, _keys in _f1_rows(dialog)}
    assert BY_ID["adjudication.save_next"].label in labels
    assert BY_ID["judge.run"].label in labels
    assert BY_ID["criterion.rationale"].label not in labels  # a coordinator grades nothing
