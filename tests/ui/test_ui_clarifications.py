"""The clarification inbox of the coordinator window (Ctrl+6, #33), driven with keys in a
real window (pytest-qt, offscreen) on the GUI test benchmark: the open threads with their
criterion, questions and askers; an answer with re-check; a close; the counts. The
database must hold what ``gradercal clarify answer --recheck`` and ``clarify close`` write,
on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from gradercal.db.clarifications import get, list_clarifications
from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.session import open_database
from gradercal.ui.qt_clarifications import QtClarificationsView
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_settings import QtAppSettings
from gradercal.ui.window_fit import FRAME
from tests.conftest import DatabaseTemplates
from tests.support.gui import import_folder, write_gui_benchmark

pytestmark = pytest.mark.gui

BENCH = "gui-bench"


@pytest.fixture
def store(db_url: str, tmp_path: Path, db_templates: DatabaseTemplates) -> Iterator[GradingStore]:
    db_templates.fill(
        db_url,
        "gui benchmark",
        lambda url: import_folder(url, write_gui_benchmark(tmp_path / "bench")),
    )
    db = open_database(db_url)
    try:
        yield GradingStore(db)
    finally:
        db.dispose()


def _setup_threads(store: GradingStore) -> int:
    """ana submits P1 with c1 met; bob and cleo flag P1 c1 unclear (one thread, two
    askers); bob flags P1 c2 (a second thread). Returns ana's P1 queue item."""
    items = {}
    for grader in ("ana", "bob", "cleo"):
        store.create_grader(grader)
        items[grader] = next(i for i in store.ensure_queue(grader, BENCH) if i.task_id == "P1")
    first = items["ana"].assignment_id
    for cid in ("c1", "c2", "c3"):
        store.save_judgment(first, cid, JudgmentValue(met=True))
    store.save_judgment(first, "c4", JudgmentValue(level=1))
    store.submit(first)
    store.save_judgment(
        items["bob"].assignment_id, "c1",
        JudgmentValue(met=False, unclear=True, unclear_note="do trends count?"),
    )  # fmt: skip
    store.save_judgment(
        items["cleo"].assignment_id, "c1",
        JudgmentValue(met=True, unclear=True, unclear_note="what about p = 0.06?"),
    )  # fmt: skip
    store.save_judgment(
        items["bob"].assignment_id, "c2",
        JudgmentValue(met=True, unclear=True, unclear_note="which units?"),
    )  # fmt: skip
    return first


def _window(qtbot: Any, store: GradingStore, tmp_path: Path) -> QtMainWindow:
    window = QtMainWindow(
        store, QtAppSettings(tmp_path / "s.ini"), store.db.display,
        track_time=False, coordinator=True,
    )  # fmt: skip
    qtbot.addWidget(window)
    window._restore_window((0, 0, 1280, 720))
    window.show()
    qtbot.waitExposed(window)
    window.open_dashboard(BENCH, compute=False)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    return window


def _cells(view: QtClarificationsView, row: int) -> list[str]:
    t = view.table
    return [t.item(row, c).text() for c in range(t.columnCount())]  # type: ignore[union-attr]


def test_answer_with_recheck_and_close_from_the_inbox(
    qtbot: Any, store: GradingStore, tmp_path: Path
) -> None:
    first = _setup_threads(store)
    window = _window(qtbot, store, tmp_path)
    # the status bar counts the open threads from the start
    qtbot.waitUntil(lambda: window.clarify_label.text() == "2 open clarifications (Ctrl+6)")
    handle = window.windowHandle()
    assert handle is not None
    qtbot.keyClick(handle, Qt.Key.Key_6, Qt.KeyboardModifier.ControlModifier)
    view = window.clarifications_view
    assert view is not None and window.stack.currentWidget() is view
    assert "clarifications" in window.windowTitle()
    assert view.counts.text() == "2 open · 0 answered · 0 closed"
    assert view.table.rowCount() == 2
    c1 = _cells(view, 0)
    assert c1[1:6] == ["open", "P1", "c1", "2", "bob, cleo"] and c1[6] == "do trends count?"
    assert _cells(view, 1)[1:6] == ["open", "P1", "c2", "1", "bob"]
    # the whole thread of the selected row: the criterion, both questions
    shown = view.thread_text.toPlainText()
    assert "do trends count?" in shown and "what about p = 0.06?" in shown
    # it fits a laptop
    need = window.minimumSizeHint()
    assert need.width() + FRAME[0] <= 1280 and need.height() + FRAME[1] <= 720, need

    # A writes the answer; an empty answer is refused in words
    table = view.table
    qtbot.keyClick(table, Qt.Key.Key_A)
    assert QApplication.focusWidget() is view.answer_box
    qtbot.keyClick(view.answer_box, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert view.status.text().endswith("the answer must not be empty")
    qtbot.keyClicks(view.answer_box, "Trends do not count: only p < 0.05.")
    qtbot.keyClick(view.answer_box, Qt.Key.Key_Escape)
    assert QApplication.focusWidget() is table
    mods = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    qtbot.keyClick(table, Qt.Key.Key_R, mods)
    assert view.recheck.isChecked()
    qtbot.keyClick(table, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    threads = {t.criterion: t for t in list_clarifications(store.db, BENCH)}
    answered = threads["c1"]
    assert (
        answered.status == "answered" and answered.answer == "Trends do not count: only p < 0.05."
    )
    # as `clarify answer --recheck`: ana's submitted work is back in progress, recorded
    assert store.queue_item(first).status == "in_progress"
    [reopen] = store.reopen_history(first)
    assert reopen["status"] == "submitted" and reopen["clarification"] == answered.id
    said = view.status.text()
    assert said.startswith(f"#{answered.id} answered by ")
    assert "re-check asked of ana, bob, cleo: 1 finished item reopened" in said
    assert view.counts.text() == "1 open · 1 answered · 0 closed"
    assert window.clarify_label.text() == "1 open clarification (Ctrl+6)"
    assert view.table.rowCount() == 1  # the Open filter shows what is left

    # Ctrl+Shift+X closes the c2 thread after a confirmation
    def confirm() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, confirm)
            return
        yes = box.findChild(object, "clarify.confirm.yes")
        yes.click()  # type: ignore[union-attr]

    QTimer.singleShot(0, confirm)
    qtbot.keyClick(view.table, Qt.Key.Key_X, mods)
    assert get(store.db, threads["c2"].id).status == "closed"
    assert window.clarify_label.text() == ""
    assert view.table.rowCount() == 0
    # all threads: the answer and the closed one; a closed thread takes no answer
    view.filter.setCurrentIndex(view.filter.findData(None))
    assert [_cells(view, r)[1] for r in range(2)] == ["answered", "closed"]
    view.select(threads["c2"].id)
    assert not view.send_button.isEnabled()
    view.answer_box.setPlainText("late")
    assert not view.send_answer()
    assert view.status.text() == f"#{threads['c2'].id}: clarification {threads['c2'].id} is closed"


def test_a_grader_window_has_no_inbox(qtbot: Any, store: GradingStore, tmp_path: Path) -> None:
    window = QtMainWindow(store, QtAppSettings(tmp_path / "s.ini"), store.db.display)
    qtbot.addWidget(window)
    assert "view.clarifications" not in window.actions_by_id
    assert "view.rubric_history" not in window.actions_by_id
    assert window.show_clarifications() is None and window.show_rubric_history() is None
