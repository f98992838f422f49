"""The first window fits the screen it opens on; a remembered size is kept per screen (#33)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradercal.db import open_database
from gradercal.db.grading import GradingStore
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_settings import QtAppSettings
from gradercal.ui.window_fit import DEFAULT_SIZE, FRAME, first_geometry, fitted_geometry
from tests.support.gui import import_folder, write_gui_benchmark

pytestmark = pytest.mark.gui

LAPTOPS = [(0, 0, 1280, 720), (0, 0, 1024, 700), (0, 0, 1366, 768), (1920, 0, 1280, 720)]


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.tuples(
        st.integers(-3000, 3000), st.integers(-2000, 2000),
        st.integers(640, 5000), st.integers(480, 3000),
    ),
    st.tuples(
        st.integers(-5000, 5000), st.integers(-5000, 5000),
        st.integers(1, 6000), st.integers(1, 4000),
    ),
)  # fmt: skip
def test_any_geometry_is_brought_inside_any_screen(
    available: tuple[int, int, int, int], remembered: tuple[int, int, int, int]
) -> None:
    for g in (first_geometry(available), fitted_geometry(remembered, available)):
        x, y, w, h = g
        ax, ay, aw, ah = available
        assert w + FRAME[0] <= aw and h + FRAME[1] <= ah
        assert ax <= x and x + w <= ax + aw
        assert ay <= y and y + h <= ay + ah


def test_a_first_window_on_a_big_screen_keeps_the_default_size() -> None:
    assert first_geometry((0, 0, 2560, 1440))[2:] == DEFAULT_SIZE


@pytest.fixture
def window_factory(qtbot: Any, tmp_path: Path, gui_db: str) -> Iterator[Any]:
    dbs = []

    def make() -> QtMainWindow:
        db = open_database(gui_db)
        dbs.append(db)
        w = QtMainWindow(GradingStore(db), QtAppSettings(tmp_path / "s.ini"), db.display)
        qtbot.addWidget(w)
        return w

    yield make
    for db in dbs:
        db.dispose()


@pytest.fixture
def gui_db(tmp_path: Path) -> str:
    path = str(tmp_path / "gui.sqlite")
    import_folder(path, write_gui_benchmark(tmp_path / "bench"))
    return path


@pytest.mark.parametrize("available", LAPTOPS)
def test_the_first_window_fits_a_laptop_screen(
    window_factory: Any, available: tuple[int, int, int, int]
) -> None:
    window = window_factory()
    window._restore_window(available)
    g = window.geometry()
    ax, ay, aw, ah = available
    assert g.width() + FRAME[0] <= aw and g.height() + FRAME[1] <= ah, (g, available)
    assert ax <= g.x() and g.x() + g.width() <= ax + aw
    assert ay <= g.y() and g.y() + g.height() <= ay + ah


def test_the_size_is_remembered_per_screen(window_factory: Any, qtbot: Any) -> None:
    window = window_factory()
    real = window._available()
    window.show()
    qtbot.waitExposed(window)
    window.resize(700, 500)
    window.close()
    again = window_factory()
    again._restore_window(real)
    assert (again.width(), again.height()) == (700, 500)
    # another screen (another available size) opens at its own first size
    other = window_factory()
    other._restore_window((0, 0, 1024, 700))
    assert other.geometry().getRect() == first_geometry((0, 0, 1024, 700))


@pytest.mark.parametrize("available", [(0, 0, 1280, 720), (0, 0, 1024, 700)])
def test_a_grading_window_needs_no_more_than_a_laptop_screen(
    window_factory: Any, qtbot: Any, available: tuple[int, int, int, int]
) -> None:
    from tests.support.gui import GRADER

    bench = "gui-bench"

    window = window_factory()
    window._restore_window(available)
    window.show()
    qtbot.waitExposed(window)
    window.start_session(GRADER, bench, "grading", load=False)
    need = window.minimumSizeHint()
    assert need.width() + FRAME[0] <= available[2], need
    assert need.height() + FRAME[1] <= available[3], need
    g = window.geometry()
    assert g.width() + FRAME[0] <= available[2] and g.height() + FRAME[1] <= available[3]


def test_the_start_page_takes_typing_at_once_and_preselects_the_last_grader(
    qtbot: Any, gui_db: str, tmp_path: Path
) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from gradercal.db import open_database as _open
    from gradercal.ui import qt_workers
    from gradercal.ui.qt_app import build_window
    from tests.support.gui import OTHER_GRADER

    settings = QtAppSettings(tmp_path / "start.ini")
    db = _open(gui_db)
    settings.set_last_grader(db.display, OTHER_GRADER)
    db.dispose()
    window = build_window(gui_db, settings=settings)
    qtbot.addWidget(window)
    qtbot.waitExposed(window)
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    page = window.start_page
    # the first key typed lands in the name field, not the Benchmark box
    qtbot.waitUntil(lambda: QApplication.focusWidget() is page.new_name)
    qtbot.keyClicks(QApplication.focusWidget(), "dr")
    assert page.new_name.text() == "dr"
    page.new_name.clear()
    # after a restart the last grader is selected: Enter starts their work
    current = page.graders.currentItem()
    assert current is not None
    assert current.data(Qt.ItemDataRole.UserRole) == OTHER_GRADER
    with qtbot.waitSignal(window.session_started, timeout=10_000):
        qtbot.keyClick(page.new_name, Qt.Key.Key_Return)
    assert window.grader == OTHER_GRADER
    # switching grader: somebody else sits down, nothing preselected
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
    page = window.switch_grader()
    assert page is not None and page.graders.currentItem() is None
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
    window.close()
    window.store.db.dispose()


@pytest.mark.parametrize("available", [(0, 0, 1366, 768), (0, 0, 1280, 720), (0, 0, 1024, 700)])
def test_every_survey_answer_is_visible_on_a_laptop(
    window_factory: Any, qtbot: Any, available: tuple[int, int, int, int]
) -> None:
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QApplication

    from tests.support.gui import GRADER

    window = window_factory()
    window._restore_window(available)
    window.show()
    qtbot.waitExposed(window)
    window.start_session(GRADER, "gui-bench", "review", load=False)
    review = window.review
    assert review is not None
    review.load()
    window.stack.setCurrentWidget(review)
    QApplication.processEvents()
    qtbot.wait(50)
    viewport = review.survey_scroll.viewport()
    assert review.survey_scroll.horizontalScrollBar().maximum() == 0  # nothing to scroll to
    for statement in review.statements:
        last = statement.group.button(5)
        right = last.mapTo(viewport, QPoint(last.width(), 0)).x()
        assert right <= viewport.width(), (right, viewport.width())
        for label in (statement.label, statement.scale_label):
            edge = label.mapTo(viewport, QPoint(label.width(), 0)).x()
            assert edge <= viewport.width(), (label.text(), edge, viewport.width())
            assert label.height() >= label.heightForWidth(label.width()) - 1  # not clipped
