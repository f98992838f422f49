"""The coordinator dashboard driven like a coordinator would (pytest-qt, offscreen), on the
demo samples: the numbers are compute_dashboard's, filters recompute, Cancel stops, a
double-clicked disagreement is adjudicated, charts save, and a grader never gets here.

The computation runs in a worker process (gradercal.ui.dashboard.worker): these tests
check that it really does (the window's process never calls compute_dashboard), that it
keeps its frames across filter changes, that cancel, a killed worker, a bad database and
closing the window (or killing the window's process) all end well, with no process left."""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QApplication, QMenu

from gradercal._util.forked import fork_available
from gradercal.dashboard import DashboardFilters, compute_dashboard
from gradercal.db.grading import GradingStore
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.errors import GradercalError
from gradercal.ui import qt_workers
from gradercal.ui.dashboard.data import TextColumn, prepare_table
from gradercal.ui.dashboard.qt_process import process_alive
from gradercal.ui.dashboard.qt_view import (
    QtDashboardView,
    agreement_wide,
    format_value,
)
from gradercal.ui.dashboard.worker import FrameReader, encode
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_settings import QtAppSettings
from tests.conftest import DEMO, ROOT
from tests.support.gui import import_folder

pytestmark = pytest.mark.gui

#: Few resamples keep the tests quick; the reference computation uses the same number.
N_BOOT = 20
TIMEOUT = 120_000

Opener = Callable[..., QtMainWindow]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    import_folder(str(path), DEMO, adjudications=False)  # the tests adjudicate
    return path


@pytest.fixture
def db_path(demo_db: Path, tmp_path: Path) -> str:
    """A private copy of the imported demo (tests write adjudications)."""
    dst = tmp_path / "demo.sqlite"
    shutil.copy(demo_db, dst)
    return str(dst)


@pytest.fixture
def open_coordinator(qtbot: Any, tmp_path: Path) -> Iterator[Opener]:
    databases = []
    windows: list[QtMainWindow] = []

    def make(db_url: str, *, compute: bool = True) -> QtMainWindow:
        db = open_database(db_url)
        databases.append(db)
        window = QtMainWindow(
            GradingStore(db),
            QtAppSettings(tmp_path / "settings.ini"),
            db.display,
            track_time=False,
            coordinator=True,
        )
        qtbot.addWidget(window)
        windows.append(window)
        window.resize(1500, 950)
        window.show()
        qtbot.waitExposed(window)
        bench = GradingStore(db).benchmark_names()[0]
        view = window.open_dashboard(bench, compute=False)
        view.dashboard.n_boot = N_BOOT
        view.set_adjudicator("coordinator-zoe")
        if compute:
            with qtbot.waitSignal(view.dashboard.computed, timeout=TIMEOUT):
                view.dashboard.recompute()
        return window

    yield make
    pids = []
    for w in windows:
        if w.coordination is not None:
            pids.append(w.coordination.dashboard.worker.pid)
            w.coordination.shutdown()
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=TIMEOUT)
    for db in databases:
        db.dispose()
    assert not any(process_alive(pid) for pid in pids)  # no worker left behind


def board_of(window: QtMainWindow) -> QtDashboardView:
    assert window.coordination is not None
    return window.coordination.dashboard


def reference(db_url: str, filters: DashboardFilters | None = None) -> Any:
    """compute_dashboard called directly, outside the UI."""
    db = open_database(db_url)
    try:
        frames = Repository(db).load_frames()
    finally:
        db.dispose()
    return compute_dashboard(frames, n_boot=N_BOOT, filters=filters)


def table_texts(table: Any) -> list[list[str]]:
    model = table.proxy
    return [
        [str(model.data(model.index(r, c))) for c in range(model.columnCount())]
        for r in range(model.rowCount())
    ]


def column(table: Any, name: str) -> int:
    return list(table.model.table.columns).index(name)


def test_dashboard_shows_the_numbers_of_compute_dashboard(
    open_coordinator: Opener, db_path: str
) -> None:
    window = open_coordinator(db_path)
    board = board_of(window)
    ref = reference(db_path)
    o = ref.overview
    assert board.cards["tasks"].value.text() == str(o["n_tasks"])
    assert board.cards["responses"].value.text() == str(o["n_responses"])
    assert board.cards["criteria"].value.text() == str(o["n_judgment_criteria"])
    assert board.cards["graders"].value.text() == f"{len(o['humans'])} + {len(o['judges'])}"
    a = ref.agreement
    alpha = a.loc[
        (a["by"] == "overall")
        & (a["comparison"] == "experts")
        & (a["statistic"] == "krippendorff_alpha")
    ].iloc[0]
    assert board.cards["alpha"].value.text() == f"{alpha['value']:.2f}"

    # The agreement table by tag: every group, estimate and interval as computed.
    board.show_agreement_by("tag")
    texts = {row[0]: row for row in table_texts(board.agreement)}
    tags = a.loc[a["by"] == "tag"]
    assert set(texts) == set(tags["group"])
    col = column(board.agreement, "experts α")
    for rec in tags.loc[
        (tags["comparison"] == "experts") & (tags["statistic"] == "krippendorff_alpha")
    ].itertuples():
        shown = texts[rec.group][col]
        assert shown.startswith(format_value(rec.value))
        if rec.ci_low == rec.ci_low:  # an interval exists
            assert f"[{format_value(rec.ci_low)}, {format_value(rec.ci_high)}]" in shown

    # Judges table: the judge's kappa with its interval.
    judges = table_texts(board.judges)
    j = ref.judges.iloc[0]
    k = column(board.judges, "cohen_kappa")
    assert judges[0][k] == (
        f"{j['cohen_kappa']:.3f}  [{j['cohen_kappa_low']:.3f}, {j['cohen_kappa_high']:.3f}]"
    )
    # Lists: as many rows as computed.
    assert board.section_tables["disagreements"].proxy.rowCount() == len(ref.disagreements) > 0
    assert board.section_tables["flips"].proxy.rowCount() == len(ref.flips)
    assert board.section_tables["health"].proxy.rowCount() == len(ref.health)
    # The alt-test verdict is the computed one.
    assert ref.alt_test is not None
    word = "passes" if ref.alt_test["passed"] else "does not pass"
    assert word in board.verdict.text()
    # Every chart has a figure.
    for name, chart in board.charts.items():
        assert chart.figure is not None, name


def test_every_table_section_has_its_tab_and_task_reviews_show(
    open_coordinator: Opener, db_path: str
) -> None:
    """The tabs come from dashboard.tables: a section declared there (task reviews) is
    shown, counted in its tab and equal to compute_dashboard's, without any UI code."""
    from gradercal.analysis.surveys import REVIEW_DIMENSIONS
    from gradercal.dashboard.tables import TABLE_SECTIONS

    db = open_database(db_path)
    store = GradingStore(db)
    bench = store.benchmark_names()[0]
    tasks = Repository(db).load_frames().tasks["task_id"].tolist()[:6]
    for i, task in enumerate(tasks):
        for j, grader in enumerate(("expert-ana", "expert-ben")):
            store.save_task_review(
                grader, bench, task, {"real_research": 3 + (i + j) % 3, "grounded": 4}, None
            )
    db.dispose()
    window = open_coordinator(db_path)
    board = board_of(window)
    titles = [board.tables.tabText(i) for i in range(board.tables.count())]
    for table in TABLE_SECTIONS:
        widget = board.section_tables[table.key]
        assert board.tables.indexOf(widget) >= 0
        assert titles[board.tables.indexOf(widget)].startswith(table.title + " (")
    reviews = board.section_tables["task_reviews"]
    assert titles[board.tables.indexOf(reviews)] == "Task reviews (24 answers)"
    ref = board.result.dashboard.tables["task_reviews"]
    assert reviews.proxy.rowCount() == len(ref) == len(REVIEW_DIMENSIONS)
    shown = table_texts(reviews)
    col = column(reviews, "mean")
    assert shown[0][col].startswith(format_value(ref.iloc[0]["mean"]))
    assert ref.iloc[0]["n_answers"] == 12 and ref.iloc[0]["n_tasks"] == 6


def test_agreement_table_switches_grouping_sorts_and_filters(
    open_coordinator: Opener, db_path: str
) -> None:
    board = board_of(open_coordinator(db_path))
    assert board.result is not None
    for by in ("workflow", "domain", "criterion", "overall"):
        board.show_agreement_by(by)
        wide = agreement_wide(board.result.dashboard.agreement, by)
        assert board.agreement.proxy.rowCount() == len(wide) > 0
    board.show_agreement_by("domain")
    col = column(board.agreement, "items")
    board.agreement.view.sortByColumn(col, Qt.SortOrder.DescendingOrder)
    items = [int(r[col].replace(",", "")) for r in table_texts(board.agreement)]
    assert items == sorted(items, reverse=True)
    board.agreement.filter.setText("genomics")
    assert [r[0] for r in table_texts(board.agreement)] == ["genomics"]


def test_filters_recompute_the_numbers(qtbot: Any, open_coordinator: Opener, db_path: str) -> None:
    board = board_of(open_coordinator(db_path))
    model = board.models.values[0]
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
        board.models.set_selected([model])  # schedules a recompute
    ref = reference(db_path, DashboardFilters(models=(model,)))
    assert board.cards["responses"].value.text() == str(ref.overview["n_responses"]) == "10"
    assert board.section_tables["disagreements"].proxy.rowCount() == len(ref.disagreements)
    assert "models: " + model in board.status.text()
    experts = board.graders.values[:2]
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
        board.graders.set_selected(experts)
    ref = reference(db_path, DashboardFilters(models=(model,), graders=tuple(experts)))
    assert board.cards["graders"].value.text() == "2 + 1"
    assert board.section_tables["disagreements"].proxy.rowCount() == len(ref.disagreements)


def test_cancel_and_stale_results(qtbot: Any, open_coordinator: Opener, db_path: str) -> None:
    board = board_of(open_coordinator(db_path))
    shown = board.result
    with qtbot.waitSignal(board.failed, timeout=5_000) as blocker:
        board.recompute(reload=True)
        assert board.busy and board.cancel_button.isVisible()
        board.cancel_button.click()
    assert blocker.args == ["cancelled"]
    assert not board.busy and not board.cancel_button.isVisible()
    assert board.result is shown  # the earlier figures stay
    # Two filter sets in a row: only the newer one's result is shown.
    model = board.models.values[-1]
    first = board.recompute()
    board.models.blockSignals(True)
    board.models.set_selected([model])
    board.models.blockSignals(False)
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
        second = board.recompute()
    assert second == first + 1
    assert board.result is not None and board.result.generation == second
    assert board.result.dashboard.overview["models"] == [model]
    # Every request is answered, in order: the cancelled one and the superseded one
    # arrived before the newest and were dropped without being shown.
    assert not board.worker.outstanding
    assert board.dropped >= 2
    assert board.result.generation == second


def test_double_click_a_disagreement_adjudicates_it(
    qtbot: Any, open_coordinator: Opener, db_path: str
) -> None:
    window = open_coordinator(db_path)
    coord = window.coordination
    assert coord is not None
    board = coord.dashboard
    before = Repository(open_database(db_path)).judgment_records()
    board.tables.setCurrentWidget(board.section_tables["disagreements"])
    view = board.section_tables["disagreements"].view
    first = board.section_tables["disagreements"].row(0)
    qtbot.waitUntil(view.isVisible)
    rect = view.visualRect(board.section_tables["disagreements"].proxy.index(0, 0))
    assert rect.isValid()
    with qtbot.waitSignal(coord.adjudication.case_loaded, timeout=TIMEOUT):
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    adj = coord.adjudication
    assert coord.currentWidget() is adj
    assert adj.case is not None
    assert (adj.case.response_id, adj.case.criterion.id) == (
        first["response_id"],
        first["criterion_id"],
    )
    assert adj.verdicts.topLevelItemCount() == len(adj.case.verdicts) == 4
    # Keyboard: N (not met), the note, Ctrl+Return.
    adj.verdicts.setFocus()
    qtbot.keyClick(adj.verdicts, Qt.Key.Key_N)
    assert adj.verdict == "not_met"
    adj.note.setFocus()
    qtbot.keyClicks(adj.note, "The response asserts the claim without evidence.")
    seq = QKeySequence("Ctrl+Return")[0]
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):  # the dashboard refreshes
        qtbot.keyClick(adj.note, seq.key(), seq.keyboardModifiers())
    frames = Repository(open_database(db_path)).load_frames()
    rows = frames.adjudications
    assert len(rows) == 1
    row = rows.iloc[0]
    assert (row["response_id"], row["criterion_id"]) == (
        first["response_id"],
        first["criterion_id"],
    )
    assert not bool(row["met"]) and row["adjudicator"] == "coordinator-zoe"
    assert row["note"] == "The response asserts the claim without evidence."
    # The experts' (and the judge's) judgments are exactly as they were.
    assert Repository(open_database(db_path)).judgment_records() == before
    assert board.cards["adjudications"].value.text() == "1"
    # Esc (outside a text box) goes back to the dashboard.
    adj.verdicts.setFocus()
    qtbot.keyClick(adj.verdicts, Qt.Key.Key_Escape)
    assert coord.currentWidget() is board


def test_save_and_next_follows_the_filter_and_marks_the_adjudicated(
    qtbot: Any, open_coordinator: Opener, db_path: str
) -> None:
    """With the disagreements filtered, "Save and next" (key, then button) saves and opens
    the next row of the table as shown, skipping the adjudicated ones; each saved case
    is marked at once (tick, tooltip with the verdict and the adjudicator, the tab's
    count), still after the recomputation, and stays selected in the table."""
    from PySide6.QtGui import QIcon

    window = open_coordinator(db_path)
    coord = window.coordination
    assert coord is not None
    board = coord.dashboard
    dis = board.section_tables["disagreements"]
    board.tables.setCurrentWidget(dis)
    model = str(dis.row(0)["model"])
    dis.filter.setText(model)
    n = dis.proxy.rowCount()
    assert 3 <= n < dis.model.rowCount()  # the filter leaves some rows out
    shown = [dis.row_key(r) for r in range(n)]
    assert all(str(dis.row(r)["model"]) == model for r in range(n))
    adj = coord.adjudication

    def on_case(key: tuple[str, ...]) -> None:
        """The adjudication view shows ``key`` (a save shows the saved case first)."""
        qtbot.waitUntil(
            lambda: (
                adj.case is not None
                and (adj.case.response_id, adj.case.criterion.id) == key
                and adj.pages.currentWidget() is adj.splitter
            ),
            timeout=TIMEOUT,
        )

    def mark(key: tuple[str, ...]) -> Any:
        row = dis.find_row(key)
        index = dis.proxy.index(row, 0)
        return index.data(Qt.ItemDataRole.DecorationRole), index.data(Qt.ItemDataRole.ToolTipRole)

    assert mark(shown[0])[0] is None  # nothing adjudicated yet
    window.activateWindow()
    with qtbot.waitSignal(adj.case_loaded, timeout=TIMEOUT):
        board._open_row(dis.row(0))
    assert adj.case is not None and (adj.case.response_id, adj.case.criterion.id) == shown[0]
    assert dis.view.selectionModel().isRowSelected(0)
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    adj.verdicts.setFocus()
    qtbot.keyClick(adj.verdicts, Qt.Key.Key_N)
    adj.note.setFocus()
    qtbot.keyClicks(adj.note, "Not shown in the response.")
    seq = QKeySequence("Ctrl+Shift+Return")[0]
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):  # the refresh after a save
        qtbot.keyClick(adj.note, seq.key(), seq.keyboardModifiers())
        on_case(shown[1])
        # marked at once, before the recomputation is on screen
        assert isinstance(mark(shown[0])[0], QIcon)
    icon, tip = mark(shown[0])
    assert isinstance(icon, QIcon) and not icon.isNull()
    assert tip.startswith("Adjudicated: not met, by coordinator-zoe")
    assert "Not shown in the response." in tip
    assert "1 adjudicated" in board.tables.tabText(board.tables.indexOf(dis))
    qtbot.waitUntil(lambda: dis.model.n_marked == 1, timeout=TIMEOUT)  # read back
    assert dis.filter.text() == model and dis.proxy.rowCount() == n
    assert dis.view.selectionModel().isRowSelected(dis.find_row(shown[1]))
    # the button; the case after is the next one not adjudicated yet, in the filter
    adj.set_verdict("met")
    adj.note.setPlainText("Stated with the figure.")
    qtbot.mouseClick(adj.save_next_button, Qt.MouseButton.LeftButton)
    on_case(shown[2])
    assert "2 adjudicated" in board.tables.tabText(board.tables.indexOf(dis))
    assert board.next_case(*shown[1]) == (shown[2], False)  # adjudicated rows are skipped
    assert not isinstance(mark(shown[2])[0], QIcon)
    rows = Repository(open_database(db_path)).load_frames().adjudications
    assert sorted(zip(rows["response_id"], rows["criterion_id"], strict=True)) == sorted(shown[:2])
    qtbot.waitUntil(lambda: not board.busy, timeout=TIMEOUT)


def test_the_adjudicator_is_chosen_once_never_the_login(
    qtbot: Any, db_path: str, tmp_path: Path
) -> None:
    """Without --grader and nothing remembered the adjudicator is nobody (it was the
    operating system's login, silently): the header says so and a save is refused
    with the name field focused; the name typed is remembered for the next window."""
    import getpass

    from gradercal.ui.dashboard.qt_view import QtCoordinatorView

    db = open_database(db_path)
    settings = QtAppSettings(tmp_path / "coord.ini")
    views = []
    try:
        coord = QtCoordinatorView(db, GradingStore(db).benchmark_names()[0], settings)
        views.append(coord)
        qtbot.addWidget(coord)
        coord.resize(1400, 900)
        coord.show()
        qtbot.waitExposed(coord)
        adj = coord.adjudication
        assert adj.adjudicator.text() == ""
        assert adj.adjudicator.text() != getpass.getuser()
        assert adj.adjudicator_badge.text() == "Adjudicator: not chosen yet"
        coord.setCurrentWidget(adj)
        adj.open_case_now(coord.benchmark, "T01-atlas", "c2")
        adj.set_verdict("met")
        adj.note.setPlainText("Mentions batch 2.")
        assert not adj.save()
        assert "say who adjudicates" in adj.error.text()
        assert coord.focusWidget() is adj.adjudicator
        assert Repository(db).load_frames().adjudications.empty
        qtbot.keyClicks(adj.adjudicator, "Dr Zoe")
        assert adj.adjudicator_badge.text() == "Adjudicating as Dr Zoe"
        assert adj.save()
        assert settings.adjudicator == "Dr Zoe"
        again = QtCoordinatorView(db, coord.benchmark, QtAppSettings(tmp_path / "coord.ini"))
        views.append(again)
        qtbot.addWidget(again)
        assert again.adjudication.adjudicator.text() == "Dr Zoe"
        assert again.adjudication.adjudicator_badge.text() == "Adjudicating as Dr Zoe"
        given = QtCoordinatorView(db, coord.benchmark, settings, adjudicator="lead")
        views.append(given)
        qtbot.addWidget(given)
        assert given.adjudication.adjudicator.text() == "lead"  # --grader wins
    finally:
        for v in views:
            v.shutdown()
        qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=TIMEOUT)
        db.dispose()


def test_flip_and_health_rows_open_a_case(open_coordinator: Opener, db_path: str) -> None:
    board = board_of(open_coordinator(db_path))
    assert board.result is not None
    d = board.result.dashboard
    health = board.section_tables["health"].row(0)
    case = board.case_for_row(health)
    assert case is not None and case[1] == health["criterion_id"]
    assert case[0].startswith(str(health["task_id"]))
    if len(d.flips):
        flip = board.section_tables["flips"].row(0)
        case = board.case_for_row(flip)
        assert case is not None and case[0] == flip["response_id"]


def test_a_grader_window_never_reaches_the_dashboard(
    qtbot: Any, db_path: str, tmp_path: Path
) -> None:
    db = open_database(db_path)
    try:
        store = GradingStore(db)
        window = QtMainWindow(store, QtAppSettings(tmp_path / "g.ini"), db.display)
        qtbot.addWidget(window)
        window.show()
        qtbot.waitExposed(window)
        window.start_session("expert-ana", store.benchmark_names()[0], load=False)
        assert window.grading is not None
        window.grading.load_queue_now()
        assert "view.dashboard" not in window.actions_by_id
        assert all(a.objectName() != "view.dashboard" for a in window.findChildren(QAction))
        window.activateWindow()
        qtbot.keyClick(window, Qt.Key.Key_3, Qt.KeyboardModifier.ControlModifier)
        window.show_dashboard()
        assert window.coordination is None
        assert not window.findChildren(QtDashboardView)
        with pytest.raises(GradercalError, match="coordinator window"):
            window.open_dashboard(store.benchmark_names()[0])
        assert not window.findChildren(QtDashboardView)
        window.close()
        # …and a coordinator window grades nobody.
        coord = QtMainWindow(store, QtAppSettings(tmp_path / "c.ini"), db.display, coordinator=True)
        qtbot.addWidget(coord)
        assert "view.dashboard" in coord.actions_by_id
        assert coord.actions_by_id["view.dashboard"].isEnabled()
        assert not coord.actions_by_id["verdict.met"].isEnabled()
        with pytest.raises(GradercalError, match="does not grade"):
            coord.start_session("expert-ana", store.benchmark_names()[0], load=False)
        assert coord.grading is None
        # no empty queue dock either (it was there, greyed-out F9 and all)
        assert coord.dockWidgetArea(coord.queue_dock) == Qt.DockWidgetArea.NoDockWidgetArea
        coord.show()
        assert not coord.queue_dock.isVisible()
        # …nor a greyed-out F9 (or any other action that needs a grading session): every
        # action a shown menu lists works here
        shown = [
            a
            for menu in coord.menuBar().findChildren(QMenu)
            if menu.menuAction().isVisible()
            for a in menu.actions()
            if a.isVisible() and not a.isSeparator()
        ]
        assert {"view.dashboard", "judge.run", "help.shortcuts"} <= {a.objectName() for a in shown}
        assert "view.queue" not in {a.objectName() for a in shown}
        assert [a.objectName() or a.text() for a in shown if not a.isEnabled()] == []
        queue = coord.actions_by_id["view.queue"]
        assert not queue.isVisible() and not queue.isEnabled()
        coord.activateWindow()
        qtbot.keyClick(coord, Qt.Key.Key_F9)
        assert not coord.queue_dock.isVisible()
        coord.close()
        qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=TIMEOUT)
    finally:
        db.dispose()


def test_every_chart_saves_as_png_and_svg(
    open_coordinator: Opener, db_path: str, tmp_path: Path
) -> None:
    board = board_of(open_coordinator(db_path))
    for name, chart in board.charts.items():
        png = chart.save(tmp_path / f"{name}.png")
        svg = chart.save(tmp_path / f"{name}.svg")
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2_000, name
        root = ET.parse(svg).getroot()
        assert root.tag.endswith("svg"), name
        assert len(list(root.iter())) > 20, name


def test_bad_input_keeps_the_window_alive(
    qtbot: Any, open_coordinator: Opener, db_path: str
) -> None:
    window = open_coordinator(db_path)
    coord = window.coordination
    assert coord is not None
    first = coord.dashboard.section_tables["disagreements"].row(0)
    with qtbot.waitSignal(coord.adjudication.case_loaded, timeout=TIMEOUT):
        coord.open_adjudication(first["response_id"], first["criterion_id"])
    adj = coord.adjudication
    assert not adj.save()  # no verdict yet
    assert "Choose the final verdict" in adj.error.text()
    adj.set_verdict("partial")  # a two-level criterion has no partial level
    assert "no partial level" in adj.error.text() and adj.verdict is None
    adj.set_verdict("met")
    assert not adj.save()  # no note
    assert "note" in adj.error.text()
    assert len(Repository(open_database(db_path)).load_frames().adjudications) == 0
    # A database error (the table is gone) is reported; the window stays.
    from sqlalchemy import create_engine, text

    engine = create_engine(f"sqlite:///{db_path}")
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE adjudication"))
    engine.dispose()
    adj.note.setPlainText("clear miss")
    assert not adj.save()
    assert "database error" in adj.error.text()
    assert window.isVisible() and coord.currentWidget() is adj
    # An unknown case says so in the view.
    with qtbot.waitSignal(adj.message, timeout=TIMEOUT) as blocker:
        coord.open_adjudication("no-such-response", "c1")
    assert "no response" in str(blocker.args[0])
    assert window.isVisible()


@pytest.mark.slow
def test_screenshot_of_the_dashboard(db_path: str, tmp_path: Path) -> None:
    out = tmp_path / "dash.png"
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "GRADERCAL_SETTINGS": str(tmp_path / "s.ini"),
    }
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "gradercal.cli",
            "gui",
            "--db",
            db_path,
            "--view",
            "dashboard",
            "--screenshot",
            str(out),
            "--size",
            "1280x800",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    from PySide6.QtGui import QImage

    image = QImage(str(out))
    assert (image.width(), image.height()) == (1280, 800)
    assert "screenshot saved" in res.stdout


# -- the worker process --------------------------------------------------------------------
def test_the_computation_runs_in_the_worker_process(
    qtbot: Any,
    open_coordinator: Opener,
    db_path: str,
    monkeypatch: pytest.MonkeyPatch,
    real_dashboard_worker: None,
) -> None:
    import gradercal.dashboard

    def in_this_process(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("compute_dashboard called in the window's process")

    monkeypatch.setattr(gradercal.dashboard, "compute_dashboard", in_this_process)
    board = board_of(open_coordinator(db_path))
    assert board.error_text == ""
    result = board.result
    assert result is not None and result.loaded  # the first computation read the database
    pid = board.worker.pid
    assert result.pid == pid and pid not in (0, os.getpid())
    assert process_alive(pid)
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert b"gradercal.ui.dashboard.worker" in cmdline
    assert not board.worker.child_has_qt  # the worker never imports Qt
    # A filter change recomputes in the same worker from its cached frames.
    model = board.models.values[0]
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
        board.models.set_selected([model])
    assert board.result is not result
    assert board.result.pid == pid and not board.result.loaded
    assert board.result.dashboard.overview["models"] == [model]
    # "Recompute" reads the database again, still in the same worker.
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
        board.refresh_button.click()
    assert board.result.pid == pid and board.result.loaded
    # On Linux the worker forks children for a share of the sections and charts: they
    # did that work (the timings name them) and none is left running or unreaped.
    if fork_available():
        assert "waiting for the child" in board.result.dashboard.elapsed
        assert _children(pid) == []


def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` (Linux /proc)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        out += [int(c) for c in text]
    return out


def test_cancel_reaches_the_worker_which_stays_usable(
    qtbot: Any, open_coordinator: Opener, db_path: str
) -> None:
    board = board_of(open_coordinator(db_path))
    pid = board.worker.pid
    shown = board.result
    dropped = board.dropped
    with qtbot.waitSignal(board.failed, timeout=5_000) as blocker:
        board.recompute(reload=True)
        board.cancel()
    assert blocker.args == ["cancelled"]
    # The worker answers the cancelled request (cancelled before or while computing);
    # the answer is dropped, the earlier result stays.
    qtbot.waitUntil(lambda: not board.worker.outstanding, timeout=TIMEOUT)
    assert board.dropped == dropped + 1
    assert board.result is shown and "cancelled" in board.status.text()
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
        board.recompute()
    assert board.result is not shown and board.result.pid == pid
    if fork_available():  # the cancelled computation's forked child was killed and reaped
        assert _children(pid) == []


def test_a_killed_worker_is_reported_and_restarted(
    qtbot: Any, open_coordinator: Opener, db_path: str
) -> None:
    window = open_coordinator(db_path)
    board = board_of(window)
    shown = board.result
    old = board.worker.pid
    # Killed while computing: the computation fails with a message, the window stays.
    with qtbot.waitSignal(board.failed, timeout=TIMEOUT) as blocker:
        board.recompute(reload=True)
        qtbot.waitUntil(lambda: board.worker.pid == old, timeout=TIMEOUT)
        os.kill(old, signal.SIGKILL)
    assert "stopped unexpectedly" in blocker.args[0]
    assert "Cannot compute the dashboard" in board.status.text()
    assert not board.busy and board.result is shown and window.isVisible()
    qtbot.waitUntil(lambda: not process_alive(old), timeout=TIMEOUT)
    # The next computation starts a new worker and says so.
    said: list[str] = []
    board.message.connect(said.append)
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
        board.recompute()
    assert said and said[0].startswith("Restarted the dashboard process")
    assert "stopped unexpectedly" in said[0]
    assert board.result is not shown and board.error_text == ""
    new = board.worker.pid
    assert new not in (0, old) and board.result.pid == new and board.result.loaded
    assert board.worker.restarts == 1
    # Killed while idle: the next computation restarts it too.
    os.kill(new, signal.SIGKILL)
    qtbot.waitUntil(lambda: not board.worker.running, timeout=TIMEOUT)
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
        board.recompute()
    assert board.worker.restarts == 2 and board.result.pid not in (old, new)


def test_closing_the_window_ends_the_worker(
    qtbot: Any, open_coordinator: Opener, db_path: str
) -> None:
    window = open_coordinator(db_path)
    board = board_of(window)
    pid = board.worker.pid
    assert process_alive(pid)
    board.recompute(reload=True)  # closing while it computes
    window.close()
    assert not board.worker.running
    qtbot.waitUntil(lambda: not process_alive(pid), timeout=5_000)


def test_the_worker_exits_when_the_window_process_is_killed(db_path: str, tmp_path: Path) -> None:
    script = tmp_path / "window.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys, time
            from PySide6.QtCore import QCoreApplication
            from gradercal.dashboard import DashboardFilters
            from gradercal.ui.dashboard.data import Request
            from gradercal.ui.dashboard.qt_process import QtDashboardProcess

            app = QCoreApplication([])
            worker = QtDashboardProcess(sys.argv[1])
            worker.compute(Request(1, sys.argv[2], DashboardFilters(), None, False, n_boot=20))
            while worker.pid == 0:
                app.processEvents()
                time.sleep(0.01)
            print(worker.pid, flush=True)
            time.sleep(120)
            """
        ),
        encoding="utf-8",
    )
    db = open_database(db_path)
    bench = GradingStore(db).benchmark_names()[0]
    db.dispose()
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    window = subprocess.Popen(
        [sys.executable, str(script), db_path, bench],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert window.stdout is not None
        child = int(window.stdout.readline())
        assert process_alive(child)
    finally:
        window.kill()  # SIGKILL: no chance to clean up
        window.wait(30)
    deadline = time.monotonic() + 120
    while process_alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not process_alive(child)  # its input closed: it left by itself


def test_a_bad_database_is_reported_in_the_window(qtbot: Any, tmp_path: Path) -> None:
    from gradercal.db.session import Database, make_engine, resolve_url

    not_a_db = tmp_path / "broken.sqlite"
    not_a_db.write_bytes(b"this is not a database file" * 100)
    for url, expected in (
        (str(not_a_db), "broken.sqlite"),
        ("postgresql+psycopg://nobody@127.0.0.1:9/nowhere", "cannot open database"),
    ):
        db = Database(make_engine(resolve_url(url)))  # not opened here: the worker opens it
        board = QtDashboardView(db, "demo")
        qtbot.addWidget(board)
        board.show()
        messages: list[str] = []
        board.message.connect(messages.append)
        with qtbot.waitSignal(board.failed, timeout=TIMEOUT) as blocker:
            board.recompute()
        assert expected in blocker.args[0]
        assert blocker.args[0] == board.error_text
        assert board.status.text().startswith("Cannot compute the dashboard:")
        assert messages and expected in messages[0]
        assert not board.busy and board.isVisible()
        pid = board.worker.pid
        assert process_alive(pid)  # an error, not a crash: the worker stays for a retry
        board.shutdown()
        assert not process_alive(pid)
        db.dispose()


def test_an_exception_in_the_worker_is_reported(
    qtbot: Any, open_coordinator: Opener, db_path: str
) -> None:
    board = board_of(open_coordinator(db_path))
    board.benchmark = "no-such-benchmark"
    with qtbot.waitSignal(board.failed, timeout=TIMEOUT) as blocker:
        board.recompute()
    assert "no-such-benchmark" in blocker.args[0]
    assert "no-such-benchmark" in board.status.text()


def test_the_worker_computes_from_each_backend(qtbot: Any, db_url: str) -> None:
    """SQLite path or PostgreSQL URL: the worker opens it by URL and computes what
    compute_dashboard computes."""
    import_folder(db_url, DEMO)
    db = open_database(db_url)
    try:
        bench = GradingStore(db).benchmark_names()[0]
        board = QtDashboardView(db, bench)
        qtbot.addWidget(board)
        board.n_boot = N_BOOT
        with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
            board.recompute()
        ref = reference(db_url)
        assert board.result is not None
        assert board.result.dashboard.overview == {**ref.overview, "benchmark": bench}
        assert board.result.dashboard.agreement.equals(ref.agreement)
        assert board.result.pid != os.getpid()
        board.shutdown()
    finally:
        db.dispose()


# -- the pieces ------------------------------------------------------------------------------
def test_prepared_tables_show_what_format_value_writes(db_path: str) -> None:
    """The worker's fast column formatting equals format_value cell by cell."""
    ref = reference(db_path)
    frames = {
        "disagreements": ref.disagreements,
        "health": ref.health,
        "judges": ref.judges,
        "flips": ref.flips,
        "agreement": agreement_wide(ref.agreement, "criterion"),
    }
    for name, frame in frames.items():
        table = prepare_table(frame)
        table = pickle.loads(pickle.dumps(table))  # as the window receives it
        assert len(table) == len(frame) > 0, name
        for i, c in enumerate(table.columns):
            ci = f"{c}_low" in frame.columns or (c == "value" and "ci_low" in frame.columns)
            for r in range(len(frame)):
                text = table.texts[i][r]
                cell = format_value(frame[c].iloc[r], c)
                assert text.startswith(cell) if ci else text == cell, (name, c, r)
            # The sort key orders rows like the values (numbers) or their text.
            if table.numeric[i]:
                values = frame[c].to_numpy(dtype=float)
                both = ~(values != values)
                assert (table.keys[i][both] == values[both]).all()
        assert table.haystack[0] == " ".join(t[0] for t in table.texts).lower()


def test_column_formatting_edge_cases_match_format_value() -> None:
    """Per-distinct-value formatting: signed zeros, NaN, p-values, counts, repeated tag
    tuples and a mixed object column read exactly as format_value writes each cell."""
    from gradercal.ui.dashboard.data import format_column, format_value

    frame = pd.DataFrame(
        {
            "kappa": [0.0, -0.0, float("nan"), 0.8125, 0.8125, 1234.0, -3.0],
            "p_value": [0.0004, 0.0004, 0.5, float("nan"), 1e-9, 0.05, 1.0],
            "n_items": np.array([1, 1000, 1000, 0, -5, 12345678, 7], dtype=np.int64),
            "tags": [("a", "b"), ("a", "b"), (), ("c",), ("a", "b"), (1, True), (1.0, 1)],
            "mixed": ["x", None, 1, True, 2.5, ("t",), float("nan")],
        }
    )
    frame["mixed"] = frame["mixed"].astype(object)
    for c in frame.columns:
        texts = format_column(frame[c], c)
        assert texts == [format_value(v, c) for v in frame[c].tolist()], c
    assert format_column(frame["kappa"], "kappa")[:2] == ["0.000", "-0.000"]
    assert format_column(frame["tags"].iloc[5:], "tags") == ["1, yes", "1.000, 1"]


def test_messages_survive_any_split_of_the_stream() -> None:
    messages = [
        {"type": "hello", "pid": 1},
        {"type": "part", "payload": bytes(range(256)) * 500, "key": "x"},
        {"type": "done", "keys": ["x"]},
    ]
    stream = b"".join(encode(m) for m in messages)
    for size in (1, 7, 4096, len(stream)):
        reader = FrameReader()
        got: list[dict[str, Any]] = []
        for i in range(0, len(stream), size):
            got += reader.feed(stream[i : i + size])
        assert got == messages and reader.pending == 0, size
    column = TextColumn.of(["a", "", "ünïcode", "z" * 10])
    assert list(column) == ["a", "", "ünïcode", "z" * 10] and len(column) == 4


def _agreement_wide_by_rows(agreement: Any, by: str) -> Any:
    """agreement_wide written row by row (the reference for the vectorised one)."""
    import numpy as np
    import pandas as pd

    from gradercal.ui.dashboard.data import EXPERT_HEADLINE, STAT_LABELS, STAT_ORDER

    keys = ["group", "task_id"] if by == "criterion" else ["group"]
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    col_keys: dict[str, tuple[int, int, int]] = {}
    judges: list[str] = []
    for rec in agreement.loc[agreement["by"] == by].itertuples(index=False):
        key = tuple(None if pd.isna(getattr(rec, k)) else getattr(rec, k) for k in keys)
        row = rows.setdefault(key, dict(zip(keys, key, strict=True)))
        who = str(rec.comparison)
        name = f"{who} {STAT_LABELS.get(rec.statistic, rec.statistic)}"
        row[name], row[f"{name}_low"], row[f"{name}_high"] = rec.value, rec.ci_low, rec.ci_high
        rank = STAT_ORDER.index(rec.statistic) if rec.statistic in STAT_ORDER else 99
        if who == "experts":
            row["items"] = max(row.get("items", 0), int(rec.n_items))
            row["tasks"] = max(row.get("tasks", 0), int(rec.n_tasks))
            col_keys.setdefault(name, (0 if rec.statistic in EXPERT_HEADLINE else 2, rank, 0))
        else:
            if who not in judges:
                judges.append(who)
            col_keys.setdefault(name, (1, judges.index(who), rank))
    names = sorted(col_keys, key=lambda n: col_keys[n])
    cols = [*keys, "items", "tasks"] + [c for n in names for c in (n, f"{n}_low", f"{n}_high")]
    frame = pd.DataFrame([{c: r.get(c, np.nan) for c in cols} for r in rows.values()])
    if by == "criterion":
        frame = frame.rename(columns={"group": "criterion"})
        frame = frame.loc[:, ["task_id", "criterion", *cols[2:]]]
    return frame


def test_agreement_wide_matches_a_row_by_row_reference(db_path: str) -> None:
    import pandas as pd

    from gradercal.ui.dashboard.data import AGREEMENT_BYS

    for filters in (None, DashboardFilters(graders=("expert-ana", "expert-ben"))):
        ref = reference(db_path, filters)
        for by in AGREEMENT_BYS:
            wide = agreement_wide(ref.agreement, by)
            expected = _agreement_wide_by_rows(ref.agreement, by)
            assert len(wide) > 0, by
            pd.testing.assert_frame_equal(
                wide.reset_index(drop=True), expected, check_dtype=False, obj=by
            )


def test_agreement_per_criterion_version_tab_appears_after_a_revision(
    qtbot: Any, open_coordinator: Opener, db_path: str
) -> None:
    """Issue #16: the tab is hidden until a criterion is revised; then, after a refresh,
    it lists the criterion per version as compute_dashboard does."""
    from gradercal.db.revisions import RevisionStore

    window = open_coordinator(db_path)
    board = board_of(window)
    widget = board.section_tables["criterion_versions"]
    index = board.tables.indexOf(widget)
    assert index >= 0 and not board.tables.isTabVisible(index)
    db = open_database(db_path)
    task = Repository(db).load_tasks()[0]
    crit = next(c for c in task.criteria if c.auto is None)
    RevisionStore(db).revise_criterion(
        None, task.id, crit.id, text=crit.text + " (reworded)", reason=None, actor=None
    )
    db.dispose()
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
        board.recompute()
    assert board.tables.isTabVisible(index)
    assert board.tables.tabText(index) == "Agreement per criterion version (1 criterion)"
    assert board.result is not None
    ref = board.result.dashboard.tables["criterion_versions"]
    assert list(ref["version"]) == [1, 2] and list(ref["current"]) == [False, True]
    assert widget.proxy.rowCount() == 2
    shown = table_texts(widget)
    assert shown[0][column(widget, "task_id")] == task.id


def _worker_children() -> list[int]:
    """This process's live children that run a dashboard worker (or its fork client)."""
    out = []
    for pid in _children(os.getpid()):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except FileNotFoundError:
            continue
        if (b"dashboard.worker" in cmdline or b"worker_fork_server" in cmdline) and process_alive(
            pid
        ):
            out.append(pid)
    return out


def test_the_window_takes_the_worker_started_before_its_modules(
    qtbot: Any, db_path: str, tmp_path: Path
) -> None:
    """#33: ``gradercal gui`` on a coordinator view starts the dashboard's worker before
    the window's modules are imported (``qt_process.launch_early``); the coordinator
    window then takes that worker — no second one is started — and computes with it."""
    from PySide6.QtTest import QTest

    from gradercal.ui.dashboard import qt_process
    from gradercal.ui.qt_app import build_coordinator_window

    before = set(_worker_children())
    qt_process.launch_early()
    early = qt_process._EARLY[0]
    assert early.running
    qtbot.waitUntil(lambda: early.pid != 0, timeout=30_000)  # its hello came
    window = build_coordinator_window(db_path, settings=QtAppSettings(str(tmp_path / "s.ini")))
    qtbot.addWidget(window)
    board = window.coordination.dashboard
    assert board.worker is early and not qt_process._EARLY
    # one worker process (under the tests' fork server: the client the window started)
    assert len(set(_worker_children()) - before) == 1
    qtbot.waitUntil(lambda: board.result is not None, timeout=120_000)
    assert board.worker.pid == early.pid and board.worker.restarts == 0
    assert qt_process.take_early() is None  # taken once
    board.shutdown()
    QTest.qWait(100)


def test_the_worker_started_before_the_database_opens_ends_when_no_dashboard_follows(
    qtbot: Any, db_path: str, tmp_path: Path
) -> None:
    """#33: the coordinator window starts its dashboard worker before it opens the
    database. When no dashboard follows — an unknown benchmark (an error), an empty
    database (the import page) — that worker is ended, and the app outlives it (it was
    dropped to the garbage collector once, which crashed Qt)."""
    import gc

    from PySide6.QtTest import QTest

    from gradercal.ui.qt_app import build_coordinator_window

    before = set(_worker_children())
    settings = QtAppSettings(str(tmp_path / "s.ini"))
    with pytest.raises(GradercalError, match="no-such-benchmark"):
        build_coordinator_window(db_path, benchmark="no-such-benchmark", settings=settings)
    window = build_coordinator_window(str(tmp_path / "empty.sqlite"), settings=settings)
    qtbot.addWidget(window)
    assert window.coordination is None  # the import page: no dashboard
    gc.collect()
    QTest.qWait(300)  # the queued deletions and process events run
    gc.collect()
    assert window.isVisible()
    assert set(_worker_children()) <= before
