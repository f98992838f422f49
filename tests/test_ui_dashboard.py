"""The coordinator dashboard driven like a coordinator would (pytest-qt, offscreen), on the
demo samples: the numbers are compute_dashboard's, filters recompute, Cancel stops, a
double-clicked disagreement is adjudicated, charts save, and a grader never gets here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence

from gradercal.dashboard import DashboardFilters, compute_dashboard
from gradercal.db.grading import GradingStore
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.errors import GradercalError
from gradercal.ui import qt_workers
from gradercal.ui.qt_dashboard import (
    QtDashboardView,
    agreement_wide,
    format_value,
)
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_settings import QtAppSettings
from tests.conftest import DEMO, ROOT
from tests.test_ui_support import import_folder

pytestmark = pytest.mark.gui

#: Few resamples keep the tests quick; the reference computation uses the same number.
N_BOOT = 20
TIMEOUT = 120_000

Opener = Callable[..., QtMainWindow]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    import_folder(str(path), DEMO)
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
    for w in windows:
        if w.coordination is not None:
            w.coordination.shutdown()
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=TIMEOUT)
    for db in databases:
        db.dispose()


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
    assert board.disagreements.proxy.rowCount() == len(ref.disagreements) > 0
    assert board.flips.proxy.rowCount() == len(ref.flips)
    assert board.health.proxy.rowCount() == len(ref.health)
    # The alt-test verdict is the computed one.
    assert ref.alt_test is not None
    word = "passes" if ref.alt_test["passed"] else "does not pass"
    assert word in board.verdict.text()
    # Every chart has a figure.
    for name, chart in board.charts.items():
        assert chart.figure is not None, name


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
    assert board.disagreements.proxy.rowCount() == len(ref.disagreements)
    assert "models: " + model in board.status.text()
    experts = board.graders.values[:2]
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
        board.graders.set_selected(experts)
    ref = reference(db_path, DashboardFilters(models=(model,), graders=tuple(experts)))
    assert board.cards["graders"].value.text() == "2 + 1"
    assert board.disagreements.proxy.rowCount() == len(ref.disagreements)


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
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=TIMEOUT)
    assert board.dropped >= 1  # the first one arrived (done or cancelled) and was dropped
    assert board.result.generation == second


def test_double_click_a_disagreement_adjudicates_it(
    qtbot: Any, open_coordinator: Opener, db_path: str
) -> None:
    window = open_coordinator(db_path)
    coord = window.coordination
    assert coord is not None
    board = coord.dashboard
    before = Repository(open_database(db_path)).judgment_records()
    board.tables.setCurrentWidget(board.disagreements)
    view = board.disagreements.view
    first = board.disagreements.row(0)
    qtbot.waitUntil(view.isVisible)
    rect = view.visualRect(board.disagreements.proxy.index(0, 0))
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


def test_flip_and_health_rows_open_a_case(open_coordinator: Opener, db_path: str) -> None:
    board = board_of(open_coordinator(db_path))
    assert board.result is not None
    d = board.result.dashboard
    health = board.health.row(0)
    case = board.case_for_row(health)
    assert case is not None and case[1] == health["criterion_id"]
    assert case[0].startswith(str(health["task_id"]))
    if len(d.flips):
        flip = board.flips.row(0)
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
    first = coord.dashboard.disagreements.row(0)
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
