"""The coordinator window on a laptop screen (#33): every view it shows — the computed
dashboard, an adjudication, grading progress, tasks, clarifications, the rubric history —
needs no more than 1024 px of width, and at 1024×700 no control is cut off."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QComboBox,
    QLineEdit,
    QTabBar,
    QWidget,
)

from gradercal.db.grading import GradingStore
from gradercal.db.session import open_database
from gradercal.ui import qt_workers
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_settings import QtAppSettings
from gradercal.ui.window_fit import FRAME
from tests.conftest import DEMO
from tests.support.gui import import_folder

pytestmark = pytest.mark.gui

TIMEOUT = 120_000
NARROWEST = 1024
SCREENS = [(0, 0, 1280, 720), (0, 0, 1024, 700)]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("coordinator_fit") / "demo.sqlite"
    import_folder(str(path), DEMO, adjudications=False)  # disagreements left to adjudicate
    return str(path)


@pytest.fixture
def coordinator_on(qtbot: Any, demo_db: str, tmp_path: Path) -> Iterator[Any]:
    databases = []
    windows: list[QtMainWindow] = []

    def make(available: tuple[int, int, int, int]) -> QtMainWindow:
        db = open_database(demo_db)
        databases.append(db)
        window = QtMainWindow(
            GradingStore(db),
            QtAppSettings(tmp_path / "coordinator.ini"),
            db.display,
            track_time=False,
            coordinator=True,
        )
        qtbot.addWidget(window)
        windows.append(window)
        window._restore_window(available)
        window.show()
        qtbot.waitExposed(window)
        view = window.open_dashboard(GradingStore(db).benchmark_names()[0], compute=False)
        view.dashboard.n_boot = 20
        view.set_adjudicator("coordinator-zoe")
        with qtbot.waitSignal(view.dashboard.computed, timeout=TIMEOUT):
            view.dashboard.recompute()
        return window

    yield make
    for w in windows:
        if w.coordination is not None:
            w.coordination.shutdown()
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=TIMEOUT)
    for db in databases:
        db.dispose()


CONTROLS = (QAbstractButton, QComboBox, QLineEdit)


def clipped_controls(window: QWidget, view: QWidget) -> list[str]:
    """The shown buttons, boxes and fields of ``view`` that are not wholly inside the
    window, or are narrower than they need to show their text (a squeezed control)."""
    found = []
    for w in view.findChildren(QWidget):
        if not isinstance(w, CONTROLS) or not w.isVisible() or w.visibleRegion().isEmpty():
            continue
        if _in_scroll_area(w, view) or isinstance(w.parentWidget(), QTabBar):
            continue  # a scrolled area or tab bar shows the rest by scrolling
        rect = QRect(w.mapTo(window, QPoint(0, 0)), w.size())
        if not window.rect().contains(rect):
            found.append(f"{type(w).__name__} {_name(w)!r} at {rect.getRect()} is cut off")
        elif isinstance(w, QAbstractButton) and w.width() < w.minimumSizeHint().width():
            found.append(f"button {_name(w)!r} is {w.width()} px of {w.minimumSizeHint().width()}")
    return found


def _in_scroll_area(w: QWidget, stop: QWidget) -> bool:
    from PySide6.QtWidgets import QAbstractScrollArea

    p = w.parentWidget()
    while p is not None and p is not stop:
        if isinstance(p, QAbstractScrollArea):
            return True
        p = p.parentWidget()
    return False


def _name(w: QWidget) -> str:
    text = getattr(w, "text", None)
    return (text() if callable(text) else "") or w.objectName() or type(w).__name__


def views_of(qtbot: Any, window: QtMainWindow) -> Iterator[tuple[str, QWidget]]:
    """Every view of the coordinator window, each made current in turn."""
    coord = window.coordination
    assert coord is not None
    window.show_dashboard()
    yield "dashboard (computed)", coord.dashboard
    case = coord.dashboard.next_case("", "")
    assert case is not None, "the demo without adjudications has disagreements"
    (rid, cid), _ = case
    coord.open_adjudication(rid, cid)
    qtbot.waitUntil(lambda: coord.adjudication.case is not None, timeout=TIMEOUT)
    yield "adjudication", coord.adjudication
    for name, show in (
        ("progress", window.show_progress),
        ("tasks", window.show_tasks),
        ("clarifications", window.show_clarifications),
        ("rubric history", window.show_rubric_history),
        ("where to grade next", window.show_grade_next),
    ):
        view = show()
        assert view is not None, name
        qtbot.wait(50)
        if name == "where to grade next":  # its rows and buttons, once computed
            qtbot.waitUntil(lambda v=view: not v.busy, timeout=TIMEOUT)
        yield name, view


@pytest.mark.parametrize("available", SCREENS)
def test_every_coordinator_view_fits_a_laptop_screen(
    qtbot: Any, coordinator_on: Any, available: tuple[int, int, int, int]
) -> None:
    window = coordinator_on(available)
    g = window.geometry()
    assert g.width() + FRAME[0] <= available[2] and g.height() + FRAME[1] <= available[3]
    size = (window.width(), window.height())
    for name, view in views_of(qtbot, window):
        for _ in range(3):
            QApplication.processEvents()
        assert view.minimumSizeHint().width() <= NARROWEST, (name, view.minimumSizeHint())
        assert window.minimumSizeHint().width() <= NARROWEST, (name, window.minimumSizeHint())
        assert (window.width(), window.height()) == size, f"the window grew on {name}"
        assert clipped_controls(window, view) == [], name


def scrolled(view: Any) -> dict[str, int]:
    """The vertical scroll positions of ``view``'s shown scroll areas that are not at the top."""
    from PySide6.QtWidgets import QAbstractScrollArea

    found = {}
    for area in view.findChildren(QAbstractScrollArea):
        if view.artifacts.isAncestorOf(area):
            continue  # the next case of the same task keeps the artifact's page
        if area.isVisible() and area.verticalScrollBar().value() != 0:
            found[area.objectName() or type(area).__name__] = area.verticalScrollBar().value()
    return found


def scroll_all_down(view: QWidget) -> None:
    from PySide6.QtWidgets import QAbstractScrollArea

    for area in view.findChildren(QAbstractScrollArea):
        bar = area.verticalScrollBar()
        bar.setValue(bar.maximum())


def test_an_adjudication_opens_at_its_top_and_so_does_the_next(
    qtbot: Any, coordinator_on: Any
) -> None:
    window = coordinator_on((0, 0, 1280, 720))
    coord = window.coordination
    adj = coord.adjudication
    case = coord.dashboard.next_case("", "")
    assert case is not None
    (rid, cid), _ = case
    with qtbot.waitSignal(adj.case_loaded, timeout=TIMEOUT):
        coord.open_adjudication(rid, cid)
    for _ in range(5):
        QApplication.processEvents()
    assert scrolled(adj) == {}, "opened scrolled"
    # every grader's verdict is on screen at 720 px (the list showed two and a half of four)
    tree = adj.verdicts
    assert tree.topLevelItemCount() >= 4
    for i in range(tree.topLevelItemCount()):
        item = tree.topLevelItem(i)
        assert tree.viewport().rect().contains(tree.visualItemRect(item)), item.text(0)
    response = adj.response_view.verticalScrollBar()
    assert response.maximum() > 0, "the demo's response is longer than the pane"
    for _ in range(3):  # Save and next, each time from a view scrolled to its bottom
        scroll_all_down(adj)
        adj.set_verdict("met")
        adj.note.setPlainText("Checked against the response.")
        with qtbot.waitSignal(adj.case_loaded, timeout=TIMEOUT):
            adj.save_and_next()
        for _ in range(5):
            QApplication.processEvents()
        assert scrolled(adj) == {}, f"{adj.case.response_id} opened scrolled"


def test_a_filter_button_has_room_for_its_text_and_its_arrow(qapp: Any) -> None:
    from PySide6.QtWidgets import QStyle

    from gradercal.ui.dashboard.qt_view import QtChoiceButton

    for label in ("Models", "Workflows", "Domains", "Experts"):
        button = QtChoiceButton(label)
        button.set_values(["a-model", "b-model"])
        arrow = button.style().pixelMetric(QStyle.PixelMetric.PM_MenuButtonIndicator, None, button)
        text = button.fontMetrics().horizontalAdvance(button.text())
        assert button.sizeHint().width() >= text + arrow + 8, label  # the arrow drew over "all"
