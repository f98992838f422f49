"""The rubric beside open Guidelines on a laptop screen (#33): a criterion's row shows at
most two lines (the editor shows the current one whole, the tooltip any), the Guidelines
panel is as tall as its text up to three lines, and F7 folds it, remembered."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QFont, QFontMetrics, QKeySequence
from PySide6.QtWidgets import QApplication

from gradercal.db.grading import GradingStore
from gradercal.db.session import open_database
from gradercal.ui import qt_workers
from gradercal.ui.inline_html import to_plain
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_rubric_model import TEXT_COLUMN
from gradercal.ui.qt_rubric_panel import ROW_LINES, QtRubricPanel, elide_lines
from gradercal.ui.qt_settings import QtAppSettings
from tests.conftest import DEMO
from tests.support.gui import import_folder

pytestmark = pytest.mark.gui

INSTRUCTIONS = (
    "Grade against the response text only; ignore formatting. A criterion is met only "
    "when the response states it explicitly; partial credit for criteria with levels. "
    "When in doubt, flag the criterion as unclear and explain why in the note."
)


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The demo with grading instructions, so that every criterion shows Guidelines."""
    root = tmp_path_factory.mktemp("rubric_fit")
    folder = root / "demo"
    shutil.copytree(DEMO, folder, symlinks=False)
    meta = json.loads((folder / "benchmark.json").read_text("utf-8"))
    (folder / "benchmark.json").write_text(json.dumps({**meta, "instructions": INSTRUCTIONS}))
    path = root / "demo.sqlite"
    import_folder(str(path), folder)
    return str(path)


@pytest.fixture
def window_on(qtbot: Any, demo_db: str, tmp_path: Path) -> Iterator[Any]:
    databases = []

    def make(available: tuple[int, int, int, int], ini: str = "fit.ini") -> QtMainWindow:
        db = open_database(demo_db)
        databases.append(db)
        store = GradingStore(db)
        window = QtMainWindow(store, QtAppSettings(tmp_path / ini), db.display, track_time=False)
        qtbot.addWidget(window)
        window._restore_window(available)
        window.show()
        qtbot.waitExposed(window)
        window.start_session("fit-grader", store.benchmark_names()[0], load=False)
        assert window.grading is not None
        with qtbot.waitSignal(window.grading.item_ready, timeout=20_000):
            window.grading.load_queue_now(open_first=True)
        settle(qtbot)
        return window

    yield make
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
    for db in databases:
        db.dispose()


def settle(qtbot: Any) -> None:
    for _ in range(3):  # the row heights follow the column widths on the next turn
        QApplication.processEvents()
        qtbot.wait(10)


def whole_rows(panel: QtRubricPanel) -> int:
    """Criteria rows wholly inside the list's viewport."""
    table = panel.table
    view = table.viewport().rect()
    return sum(
        1
        for row in range(panel.model.rowCount())
        if view.contains(table.visualRect(panel.model.index(row, TEXT_COLUMN)))
    )


@pytest.mark.parametrize(("available", "least"), [((0, 0, 1280, 720), 5), ((0, 0, 1024, 700), 3)])
def test_five_criteria_show_beside_open_guidelines_at_1280x720(
    window_on: Any, available: tuple[int, int, int, int], least: int
) -> None:
    window = window_on(available)
    g = window.grading
    panel = g.rubric
    assert panel.guidelines_shown().startswith("Grading instructions:")
    assert panel.guidelines_text.isVisible() and not panel.guidelines_folded()
    assert whole_rows(panel) >= least, (available, whole_rows(panel))
    cap = panel.table.row_cap()
    assert all(panel.table.rowHeight(r) <= cap for r in range(panel.model.rowCount()))
    # the current criterion is whole in the editor, any criterion whole in its tooltip
    row = g.state.rows[panel.current_row()]
    assert to_plain(row.criterion.text) in panel.criterion_label.text()
    for r in range(panel.model.rowCount()):
        tip = panel.model.index(r, TEXT_COLUMN).data(3)  # ToolTipRole
        assert to_plain(g.state.rows[r].criterion.text) in tip
    # the Guidelines text takes at most three lines of the rubric's height
    spacing = panel.guidelines_text.fontMetrics().lineSpacing()
    assert panel.guidelines_text.height() <= 3 * spacing + 20


def test_f7_folds_the_guidelines_and_the_next_window_remembers(qtbot: Any, window_on: Any) -> None:
    window = window_on((0, 0, 1280, 720))
    g = window.grading
    panel = g.rubric
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    panel.focus_table()
    before = whole_rows(panel)
    seq = QKeySequence("F7")[0]
    qtbot.keyClick(QApplication.focusWidget() or window, seq.key(), seq.keyboardModifiers())
    settle(qtbot)
    assert panel.guidelines_folded() and not panel.guidelines_text.isVisible()
    assert panel.guidelines_title.isVisible()  # the title line stays, with its clarifications
    assert whole_rows(panel) >= before + 2
    assert window.settings.guidelines_folded
    assert "F7" in window.statusBar().currentMessage()
    window.settings.sync()
    again = window_on((0, 0, 1280, 720))
    assert again.grading.rubric.guidelines_folded()
    assert not again.grading.rubric.guidelines_text.isVisible()
    again.grading.rubric.guidelines_title.click()  # the title unfolds it too
    assert again.grading.rubric.guidelines_text.isVisible()
    assert not again.settings.guidelines_folded


def test_a_long_criterion_is_cut_to_two_lines_with_an_ellipsis(qapp: Any) -> None:
    font = QFont()
    metrics = QFontMetrics(font)
    short = "Names the assay."
    assert elide_lines(short, font, 300, ROW_LINES) == short
    long = " ".join(f"word{i}" for i in range(80))
    cut = elide_lines(long, font, 300, ROW_LINES)
    lines = cut.split("\u2028")
    assert len(lines) == ROW_LINES and lines[-1].endswith("…")
    assert all(metrics.horizontalAdvance(line) <= 300 for line in lines)
    assert long.startswith(" ".join(lines)[:-1].rstrip())
