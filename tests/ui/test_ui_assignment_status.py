"""The grading view shows the status a save gives its assignment by the store's rule
(:func:`gradercal.ops.assignment_status.status_after_save`), not a copy of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QApplication

from gradercal.db.grading import GradingStore
from gradercal.db.session import open_database
from gradercal.ops import assignment_status
from gradercal.ui import qt_grading_view, qt_workers
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_settings import QtAppSettings
from tests.support.gui import GRADER, import_folder, write_gui_benchmark

pytestmark = pytest.mark.gui


def test_the_view_applies_the_stores_rule(
    qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, bool, bool]] = []

    def spy(status: str, *, answered: bool, changed: bool) -> str:
        calls.append((status, answered, changed))
        return assignment_status.status_after_save(status, answered=answered, changed=changed)

    monkeypatch.setattr(qt_grading_view, "status_after_save", spy)
    path = str(tmp_path / "gui.sqlite")
    import_folder(path, write_gui_benchmark(tmp_path / "bench"))
    db = open_database(path)
    try:
        window = QtMainWindow(
            GradingStore(db), QtAppSettings(tmp_path / "s.ini"), db.display, track_time=True
        )
        qtbot.addWidget(window)
        window.show()
        qtbot.waitExposed(window)
        window.activateWindow()
        qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
        window.start_session(GRADER, "gui-bench", "grading", load=False)
        g = window.grading
        assert g is not None
        with qtbot.waitSignal(g.item_ready, timeout=20_000):
            g.load_queue_now()
        q = g.queue[g.index]
        assert q.status == "pending"
        seq = QKeySequence("M")[0]
        qtbot.keyClick(QApplication.focusWidget() or window, seq.key(), seq.keyboardModifiers())
        qtbot.waitUntil(lambda: bool(calls), timeout=20_000)
        assert calls == [("pending", True, True)]
        stored = GradingStore(db).queue_item(q.assignment_id).status
        assert g.queue[g.index].status == stored == "in_progress"
        qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
    finally:
        db.dispose()
