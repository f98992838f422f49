"""The Guidelines panel beside the rubric, on both backends: the benchmark's grading
instructions, and an answer saved in the database shows for the grader on its criterion."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

from gradercal.db.clarifications import answer, ask
from gradercal.db.grading import GradingStore
from gradercal.db.session import Database, open_database
from gradercal.ui import qt_workers
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_settings import QtAppSettings
from tests.support.gui import GRADER, import_folder, write_gui_benchmark

pytestmark = pytest.mark.gui

BENCH = "gui-bench"
INSTRUCTIONS = "Grade against the response text only; ignore formatting."


@pytest.fixture
def window(qtbot: Any, db_url: str, tmp_path: Path) -> Iterator[tuple[QtMainWindow, Database]]:
    folder = write_gui_benchmark(tmp_path / "bench")
    meta = json.loads((folder / "benchmark.json").read_text("utf-8"))
    (folder / "benchmark.json").write_text(json.dumps({**meta, "instructions": INSTRUCTIONS}))
    import_folder(db_url, folder)
    db = open_database(db_url)
    coordinator = open_database(db_url)
    w = QtMainWindow(GradingStore(db), QtAppSettings(tmp_path / "s.ini"), db.display)
    qtbot.addWidget(w)
    w.resize(1500, 950)
    w.show()
    qtbot.waitExposed(w)
    w.start_session(GRADER, BENCH, "grading", load=False)
    assert w.grading is not None
    with qtbot.waitSignal(w.grading.item_ready, timeout=20_000):
        w.grading.load_queue_now()
    try:
        yield w, coordinator
    finally:
        qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
        w.close()
        QApplication.processEvents()
        db.dispose()
        coordinator.dispose()


def test_an_answer_saved_in_the_database_appears_beside_its_criterion(
    qtbot: Any, window: tuple[QtMainWindow, Database]
) -> None:
    w, coordinator = window
    view = w.grading
    assert view is not None and view.current is not None and view.state is not None
    panel = view.rubric
    task = view.current.task.id
    first, second = (r.criterion.id for r in view.state.rows[:2])
    view.rubric.set_current_row(0)
    assert panel.guidelines_shown() == f"Grading instructions:\n{INSTRUCTIONS}"
    assert panel.guidelines_title.text() == "Guidelines"

    # a coordinator answers a question on the second criterion, elsewhere
    thread = ask(coordinator, BENCH, task, second, "Does a trend count?", actor="ana")
    answer(coordinator, thread.id, "Trends do not count: only p < 0.05.", actor="chair")
    unanswered = ask(coordinator, BENCH, task, first, "Still waiting", actor="ana")

    view.move_criterion(1)
    assert view.current_row() == 1
    shown = panel.guidelines_shown()
    assert shown.startswith("Clarified for this criterion:\n• Trends do not count: only p < 0.05.")
    assert shown.endswith(INSTRUCTIONS)
    assert "Does a trend count?" not in shown  # graders read answers, not questions
    assert panel.guidelines_title.text() == "Guidelines · 1 clarification"

    # back on the first criterion: its thread is not answered yet, so only the instructions
    view.move_criterion(-1)
    assert panel.guidelines_shown() == f"Grading instructions:\n{INSTRUCTIONS}"
    answer(coordinator, unanswered.id, "Yes, that one too.", actor="chair")
    view.move_criterion(1)
    view.move_criterion(-1)
    assert "• Yes, that one too." in panel.guidelines_shown()
