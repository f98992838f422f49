"""The coordinator's Progress view (Ctrl+4), driven in a real window (pytest-qt, offscreen):
the figures are load_progress's, overdue packets stand out, tables sort, CSV exports, and a
grader's window has no such view."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from gradercal.db.assignments import assign
from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.packets import export_packet
from gradercal.db.progress import load_progress
from gradercal.db.session import Database, open_database
from gradercal.ops.progress import COLUMNS
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_progress import STATUS_COLOURS, QtProgressView
from gradercal.ui.qt_settings import QtAppSettings
from tests.conftest import DEMO
from tests.support.gui import import_folder

pytestmark = pytest.mark.gui


@pytest.fixture
def coordinator_db(tmp_path: Path) -> Iterator[Database]:
    path = str(tmp_path / "demo.sqlite")
    import_folder(path, DEMO, adjudications=False)
    db = open_database(path)
    assign(db, ["u-ana", "u-ben", "u-chloe"], 2, calibration_fraction=0.0, seed="ui")
    store = GradingStore(db)
    first = store.queue("u-ana")[0]
    for c in store.load_item("u-ana", first.assignment_id).task.criteria:
        if c.kind.value == "judgment":
            store.save_judgment(first.assignment_id, c.id, JudgmentValue(met=True))
    store.add_time(first.assignment_id, 120.0)
    store.submit(first.assignment_id)
    export_packet(db, "u-ben", tmp_path / "ben.gcpkg", due_at=datetime.now(UTC) - timedelta(1))
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


def _texts(view: QtProgressView, name: str) -> list[list[str]]:
    t = view.tables[name]
    return [
        [t.item(r, c).text() for c in range(t.columnCount())]  # type: ignore[union-attr]
        for r in range(t.rowCount())
    ]


def test_ctrl_4_shows_progress_with_overdue_packets_marked(
    qtbot: Any, coordinator_db: Database, tmp_path: Path
) -> None:
    window = _window(qtbot, coordinator_db, tmp_path, coordinator=True)
    window.open_dashboard(GradingStore(coordinator_db).benchmark_names()[0], compute=False)
    handle = window.windowHandle()
    assert handle is not None
    qtbot.keyClick(handle, Qt.Key.Key_4, Qt.KeyboardModifier.ControlModifier)
    view = window.progress_view
    assert view is not None and window.mode == "progress"
    assert window.stack.currentWidget() is view and "progress" in window.windowTitle()

    expected = load_progress(coordinator_db)
    graders = _texts(view, "graders")
    assert [r[0] for r in graders] == ["u-ana", "u-ben", "u-chloe", "all graders"]
    ana = graders[0]
    assert ana[1:3] == [str(expected.graders[0].assigned), "1"]  # assigned, submitted
    assert ana[6] == "2 min"  # active time
    assert ana[7] == "30.0"  # per active hour: one response in 120 s
    (packet,) = _texts(view, "packets")
    assert packet[1] == "u-ben" and packet[2] == "overdue"
    item = view.tables["packets"].item(0, 2)
    assert item is not None
    assert item.background().color() == QColor(STATUS_COLOURS["overdue"])
    assert "1 packet overdue" in view.summary.text()
    assert "1 of 60 responses done" in view.summary.text()
    # the chart: one bar per grader, the legend above the axes, clear of every bar
    assert view.chart.bars["submitted"] == [1.0, 0.0, 0.0]
    assert view.chart.bars["pending"] == [19.0, 20.0, 20.0]
    fig = view.chart.figure
    fig.canvas.draw()
    (ax,) = fig.axes
    legend = ax.get_legend().get_window_extent()
    assert all(not legend.overlaps(p.get_window_extent()) for p in ax.patches)
    tasks = _texts(view, "tasks")
    assert len(tasks) == 10 and {r[-1] for r in tasks} <= {"grading", "not started"}
    assert view.tabs.tabText(2) == "Tasks (10)"

    # tasks sort by a column (numbers as numbers); graders keep "all graders" last
    table = view.tables["tasks"]
    done_col = [k for k, _h in COLUMNS["tasks"]]
    table.sortItems(done_col.index("done"), Qt.SortOrder.DescendingOrder)
    assert _texts(view, "tasks")[0][done_col.index("done")] == "1"
    assert not view.tables["graders"].isSortingEnabled()

    written = view.export_csv(tmp_path / "out")
    assert [p.name for p in written] == ["graders.csv", "packets.csv", "tasks.csv"]
    with open(tmp_path / "out" / "packets.csv", encoding="utf-8") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["status"] == "overdue" and row["grader"] == "u-ben"

    # new work shows on refresh (F5)
    store = GradingStore(coordinator_db)
    nxt = store.queue("u-chloe")[0]
    store.skip(nxt.assignment_id, "outside my field")
    view.tables["graders"].setFocus()
    qtbot.keyClick(view.tables["graders"], Qt.Key.Key_F5)
    assert "2 of 60 responses done (1 skipped)" in view.summary.text()

    qtbot.keyClick(handle, Qt.Key.Key_3, Qt.KeyboardModifier.ControlModifier)
    assert window.mode == "dashboard" and window.stack.currentWidget() is window.coordination


def test_a_grader_window_has_no_progress_view(
    qtbot: Any, coordinator_db: Database, tmp_path: Path
) -> None:
    window = _window(qtbot, coordinator_db, tmp_path, coordinator=False)
    assert "view.progress" not in window.actions_by_id
    assert window.show_progress() is None and window.progress_view is None
