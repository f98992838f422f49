"""The coordinator's Tasks view (Ctrl+5), driven in a real window (pytest-qt, offscreen):
a proposed task is accepted through its button and note dialog, a task is sent back
(the note is required), statuses are coloured, the table sorts, F5 reads new work, and a
grader's window has no such view."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication, QInputDialog
from sqlalchemy import select

from gradercal.db import models as m
from gradercal.db.acceptance import act, load_acceptance, save_settings
from gradercal.db.grading import GradingStore
from gradercal.db.repo import Repository
from gradercal.db.session import Database, open_database
from gradercal.formats import read_path
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_settings import QtAppSettings
from gradercal.ui.qt_tasks import COLUMNS, STATUS_COLOURS, QtTasksView
from tests.support.acceptance import AGREE, BENCH, survey, write_acceptance_benchmark

pytestmark = pytest.mark.gui

_COL = {k: i for i, (k, _h) in enumerate(COLUMNS)}


@pytest.fixture
def acc_db(tmp_path: Path) -> Iterator[Database]:
    db = open_database(tmp_path / "acc.sqlite")
    Repository(db).import_data(read_path(write_acceptance_benchmark(tmp_path / "bench")))
    save_settings(db, BENCH, n_boot=0)
    survey(db, "T1", ("ana", "ben", "cleo"), AGREE)
    survey(db, "T2", ("ana", "ben"), AGREE)
    act(db, BENCH, "T1", "open", actor="dana")
    act(db, BENCH, "T2", "open", actor="dana")
    try:
        yield db
    finally:
        db.dispose()


def _window(qtbot: Any, db: Database, tmp_path: Path, *, coordinator: bool) -> QtMainWindow:
    window = QtMainWindow(
        GradingStore(db),
        QtAppSettings(tmp_path / "settings.ini"),
        db.display,
        track_time=False,
        coordinator=coordinator,
    )
    qtbot.addWidget(window)
    window.resize(1280, 720)
    window.show()
    qtbot.waitExposed(window)
    return window


def _row(view: QtTasksView, task: str) -> list[str]:
    t = view.table
    for r in range(t.rowCount()):
        if t.item(r, 0).text() == task:  # type: ignore[union-attr]
            return [t.item(r, c).text() for c in range(t.columnCount())]  # type: ignore[union-attr]
    raise AssertionError(f"no row {task}")


def _answer_note(text: str, seen: list[str]) -> Callable[[], None]:
    """Type ``text`` into the note dialog when it opens, and press OK."""

    def answer() -> None:
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, QInputDialog):
            QTimer.singleShot(20, answer)
            return
        seen.append(dialog.labelText())
        dialog.setTextValue(text)
        dialog.accept()

    return answer


def _status(db: Database, task: str) -> str:
    return {t.task: t.status for t in load_acceptance(db, BENCH).tasks}[task]


def test_accept_and_send_back_through_the_buttons(
    qtbot: Any, acc_db: Database, tmp_path: Path
) -> None:
    window = _window(qtbot, acc_db, tmp_path, coordinator=True)
    window.open_dashboard(BENCH, compute=False)
    handle = window.windowHandle()
    assert handle is not None
    qtbot.keyClick(handle, Qt.Key.Key_5, Qt.KeyboardModifier.ControlModifier)
    view = window.tasks_view
    assert view is not None and window.mode == "tasks"
    assert window.stack.currentWidget() is view and "tasks" in window.windowTitle()

    # the benchmark's order until a header is clicked
    order = [view.table.item(r, 0).text() for r in range(3)]  # type: ignore[union-attr]
    assert order == ["T1", "T2", "T3"]
    t1 = _row(view, "T1")
    assert t1[_COL["status"]] == "in review" and t1[_COL["proposed"]] == "proposed"
    assert t1[_COL["agreement"]] == "0.933"  # (9 + 1/3) / 10, see tests/db/test_acceptance.py
    assert t1[_COL["survey.real_research"]] == "5.00"
    t2 = _row(view, "T2")
    assert t2[_COL["proposed"]] == "percent agreement 0.8 below the bar 0.9"
    # beside the decision, in its tooltip: how often a task at the bar would fail too
    row2 = next(r for r in range(3) if view.table.item(r, 0).text() == "T2")  # type: ignore[union-attr]
    tip = view.table.item(row2, _COL["proposed"]).toolTip()  # type: ignore[union-attr]
    bar = {t.task: t for t in load_acceptance(acc_db, BENCH).tasks}["T2"].at_bar
    assert bar is not None and bar.probability == pytest.approx(0.264, abs=0.025)
    assert f"at the bar: {bar.probability:.0%} would fail too (point rule, 10 units)" in tip
    assert _row(view, "T3")[_COL["status"]] == "draft"
    assert "2 proposed" not in view.summary.text() and "1 proposed" in view.summary.text()
    # nothing selected: no button acts
    assert not any(b.isEnabled() for b in view.buttons.values())

    # accept T1: select it, click Accept…, type a note, OK
    assert view.select("T1")
    assert view.buttons["accept"].isEnabled()
    seen: list[str] = []
    QTimer.singleShot(0, _answer_note("clear and well graded", seen))
    qtbot.mouseClick(view.buttons["accept"], Qt.MouseButton.LeftButton)
    assert seen == ["Note (optional):"]
    assert _status(acc_db, "T1") == "accepted"
    with acc_db.read() as s:
        note = s.scalar(select(m.TaskRound.note).where(m.TaskRound.decision == "accepted"))
        sources = set(s.scalars(select(m.Revision.source).where(m.Revision.entity == "task_round")))
    assert note == "clear and well graded"
    assert sources == {"cli", "ui"}  # the fixture opened the rounds; the view accepted
    row = _row(view, "T1")
    assert row[_COL["status"]] == "accepted" and row[_COL["note"]] == "clear and well graded"
    assert view.status.text() == "T1: accepted (round 1)"
    r = next(i for i in range(view.table.rowCount()) if view.table.item(i, 0).text() == "T1")  # type: ignore[union-attr]
    cell = view.table.item(r, _COL["status"])
    assert cell is not None and cell.background().color() == QColor(STATUS_COLOURS["accepted"])
    assert not view.buttons["accept"].isEnabled()  # decided

    # T2 is not proposed: Accept is refused with the reason, nothing changes
    assert view.select("T2")
    QTimer.singleShot(0, _answer_note("", []))
    qtbot.mouseClick(view.buttons["accept"], Qt.MouseButton.LeftButton)
    assert "not proposed for acceptance" in view.status.text()
    assert _status(acc_db, "T2") == "in review"
    # send it back: an empty note is asked again, then taken
    seen = []
    QTimer.singleShot(0, _answer_note("", seen))
    QTimer.singleShot(150, _answer_note("c9 and c10 are ambiguous", seen))
    qtbot.mouseClick(view.buttons["reopen"], Qt.MouseButton.LeftButton)
    assert seen == ["Note (required):", "A note is required: say what must change."]
    assert _status(acc_db, "T2") == "needs revision"
    assert _row(view, "T2")[_COL["status"]] == "needs revision"

    # the table sorts by status; F5 reads work done elsewhere
    view.table.sortItems(_COL["status"], Qt.SortOrder.AscendingOrder)
    statuses = [
        view.table.item(r, _COL["status"]).text()  # type: ignore[union-attr]
        for r in range(view.table.rowCount())
    ]
    assert statuses == ["accepted", "draft", "needs revision"]
    act(acc_db, BENCH, "T3", "open", actor="dana")
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    view.table.setFocus()
    qtbot.keyClick(view.table, Qt.Key.Key_F5)
    assert _row(view, "T3")[_COL["status"]] == "in review"


def test_a_grader_window_has_no_tasks_view(qtbot: Any, acc_db: Database, tmp_path: Path) -> None:
    window = _window(qtbot, acc_db, tmp_path, coordinator=False)
    assert "view.tasks" not in window.actions_by_id
    assert window.show_tasks() is None and window.tasks_view is None
