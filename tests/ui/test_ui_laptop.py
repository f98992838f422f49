"""The grading window on a laptop screen (pytest-qt, offscreen): every demo task fits at
1280×720 and 1366×768, with the rubric, the verdict buttons and Submit on screen, the
window never grows by itself (not for a wide table, not for a PDF search), and it can be
made as narrow as 1024 px."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QApplication, QWidget

from gradercal.db.grading import GradingStore
from gradercal.db.session import open_database
from gradercal.ui import qt_workers
from gradercal.ui.inline_html import PAIRED
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_settings import QtAppSettings
from gradercal.ui.viewers.qt_pdf_viewer import QtPdfViewer
from tests.conftest import DEMO
from tests.support.gui import import_folder

pytestmark = pytest.mark.gui

#: The narrowest a grading window must be able to get.
NARROWEST = 1024


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("laptop") / "demo.sqlite"
    import_folder(str(path), DEMO)
    return str(path)


@pytest.fixture
def window_at(qtbot: Any, demo_db: str, tmp_path: Path) -> Iterator[Any]:
    databases = []

    def make(width: int, height: int) -> QtMainWindow:
        db = open_database(demo_db)
        databases.append(db)
        store = GradingStore(db)
        window = QtMainWindow(
            store, QtAppSettings(tmp_path / "laptop.ini"), db.display, track_time=False
        )
        qtbot.addWidget(window)
        window.resize(width, height)
        window.show()
        qtbot.waitExposed(window)
        window.start_session("laptop-grader", store.benchmark_names()[0], load=False)
        assert window.grading is not None
        with qtbot.waitSignal(window.grading.item_ready, timeout=20_000):
            window.grading.load_queue_now()
        return window

    yield make
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
    for db in databases:
        db.dispose()


def on_screen(window: QWidget, widget: QWidget) -> bool:
    """Shown, not clipped away by its parents, and wholly inside the window."""
    if not widget.isVisible() or widget.visibleRegion().isEmpty():
        return False
    rect = QRect(widget.mapTo(window, QPoint(0, 0)), widget.size())
    return window.rect().contains(rect)


def assert_usable(window: QtMainWindow, size: tuple[int, int], where: str) -> None:
    QApplication.processEvents()
    g = window.grading
    assert g is not None
    assert (window.width(), window.height()) == size, f"the window grew on {where}"
    assert window.minimumSizeHint().width() <= NARROWEST, where
    widgets = {
        "rubric": g.rubric.table,
        "rationale": g.rubric.rationale,
        "Submit": g.submit_button,
        **{f"verdict {v}": b for v, b in g.rubric.buttons.items()},
    }
    for name, widget in widgets.items():
        assert on_screen(window, widget), f"{name} is not on screen on {where}"


@pytest.mark.parametrize("size", [(1280, 720), (1366, 768)])
def test_every_demo_task_fits_a_laptop_screen(
    qtbot: Any, window_at: Any, size: tuple[int, int]
) -> None:
    window = window_at(*size)
    g = window.grading
    seen: set[str] = set()
    for index, q in enumerate(g.queue):
        if q.task_id in seen:
            continue
        seen.add(q.task_id)
        if g.index != index:
            with qtbot.waitSignal(g.item_ready, timeout=20_000):
                g.open_index(index)
        for tab in range(g.artifacts.tabs.count()):  # every artifact, shown
            g.artifacts.tabs.setCurrentIndex(tab)
            viewer = g.artifacts.viewer(tab)
            qtbot.waitUntil(lambda v=viewer: v.is_ready, timeout=20_000)
            assert viewer.error is None, viewer.error
            assert_usable(window, size, f"{q.task_id}, artifact {tab + 1}")
            if isinstance(viewer, QtPdfViewer):  # a search once widened the window
                with qtbot.waitSignal(viewer.search_done, timeout=20_000):
                    viewer.search_box.setText("the")
                    viewer.search(viewer.search_box.text())
                assert_usable(window, size, f"{q.task_id} after a PDF search")
        assert_usable(window, size, q.task_id)
        for view in (g.prompt_view, g.response_view):  # T07 writes K<sub>D</sub>
            assert PAIRED.search(view.toPlainText()) is None, q.task_id
    assert len(seen) == 10


def press(qtbot: Any, window: QWidget, key: str) -> None:
    seq = QKeySequence(key)[0]
    qtbot.keyClick(QApplication.focusWidget() or window, seq.key(), seq.keyboardModifiers())


def test_the_artifacts_pane_folds_away_with_a_key(qtbot: Any, window_at: Any) -> None:
    window = window_at(1280, 720)
    g = window.grading
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    with qtbot.waitSignal(g.item_ready, timeout=20_000):
        g.open_index(next(i for i, q in enumerate(g.queue) if q.n_artifacts))
    g.rubric.focus_table()
    rubric_width = g.rubric.table.width()
    press(qtbot, window, "F8")
    QApplication.processEvents()
    assert not g.artifacts_pane.isVisible() and not g.artifacts_button.isChecked()
    assert g.rubric.table.width() > rubric_width  # the room goes to text and rubric
    assert window.settings.artifacts_shown is False
    assert "F8" in window.statusBar().currentMessage()
    press(qtbot, window, "F8")
    assert g.artifacts_pane.isVisible() and g.artifacts_button.isChecked()
    g.artifacts_button.click()  # the header button does the same
    assert not g.artifacts_pane.isVisible()
    press(qtbot, window, "Ctrl+F")  # searching the PDF brings the pane back
    assert g.artifacts_pane.isVisible() and window.settings.artifacts_shown
    press(qtbot, window, "Escape")
    # a task without artifacts gives their room to the text and the rubric
    with qtbot.waitSignal(g.item_ready, timeout=20_000):
        g.open_index(next(i for i, q in enumerate(g.queue) if not q.n_artifacts))
    assert not g.artifacts_pane.isVisible() and not g.artifacts_button.isEnabled()
    assert window.settings.artifacts_shown  # the choice itself is kept for the next task


def test_a_1024_pixel_screenshot_is_1024_pixels_wide(demo_db: str, tmp_path: Path) -> None:
    from click.testing import CliRunner
    from PySide6.QtGui import QImage

    from gradercal.cli.gui import gui

    out = tmp_path / "narrow.png"
    args = ["--db", demo_db, "--grader", "laptop-shot", "--screenshot", str(out)]
    result = CliRunner().invoke(gui, [*args, "--size", "1024x700"])
    assert result.exit_code == 0, result.output
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1024, 700)
