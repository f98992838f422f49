"""The dashboard shows its first numbers while the rest computes (issue #33), driven
through the real worker process (pytest-qt, offscreen).

Order, not wall-clock: the worker sends the headline (overview tiles, expert α, the judge's
κ, the alt-test verdict) as soon as it is computed, before the later sections' progress;
each tab shows its own progress until its table or chart is filled; a filter change shows
its first figures before the rest. Speed itself is measured in
benchmarks/bench_first_numbers.py, not here.
"""

from __future__ import annotations

from typing import Any

import pytest

from gradercal.dashboard import HEADLINE_FIELDS, compute_dashboard, headline_of
from gradercal.db.grading import GradingStore
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.ui.dashboard.qt_view import SECTION_STEPS, QtDashboardView
from tests.ui.test_ui_dashboard import (  # noqa: F401 (fixtures)
    N_BOOT,
    TIMEOUT,
    Opener,
    board_of,
    db_path,
    demo_db,
    open_coordinator,
)

pytestmark = pytest.mark.gui

#: Steps of compute_dashboard that come after the headline's (its last is "judges").
LATER_STEPS = ("pairwise", "agreement by tag", "calibration", "models", "health", "done")
TILES = ("tasks", "responses", "criteria", "graders", "coverage", "alpha", "kappa")


def _screen(board: QtDashboardView) -> dict[str, str]:
    """The tiles and the alt-test line as shown."""
    out = {k: board.cards[k].value.text() + "|" + board.cards[k].detail.text() for k in TILES}
    out["verdict"] = board.verdict.text()
    return out


def _record(board: QtDashboardView) -> list[tuple[str, dict[str, str], dict[str, str]]]:
    """On every progress message of the worker: (label, what the tiles show, each tab's
    title)."""
    events: list[tuple[str, dict[str, str], dict[str, str]]] = []

    def on_progress(_gen: int, _done: int, _total: int, label: str) -> None:
        tabs = {
            **{board.tables.widget(i).objectName() or str(i): board.tables.tabText(i)
               for i in range(board.tables.count())},
            **{f"chart:{i}": board.chart_tabs.tabText(i) for i in range(board.chart_tabs.count())},
        }  # fmt: skip
        events.append((label, _screen(board), tabs))

    board.worker.progress.connect(on_progress)
    return events


def test_the_headline_tiles_are_filled_before_the_last_section(
    qtbot: Any,
    open_coordinator: Opener,  # noqa: F811
    db_path: str,  # noqa: F811
) -> None:
    window = open_coordinator(f"sqlite:///{db_path}", compute=False)
    board = board_of(window)
    events = _record(board)
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
        board.recompute()
    final = _screen(board)
    assert final["kappa"].split("|")[0] not in ("", "—")
    assert final["alpha"].split("|")[0] not in ("", "—")
    assert final["verdict"]
    later = [(label, screen) for label, screen, _tabs in events if label in LATER_STEPS]
    assert {label for label, _s in later} >= {"pairwise", "health", "done"}
    # Every later section's progress arrives with the headline already on screen — the
    # very figures of the finished dashboard.
    for label, screen in later:
        assert screen == final, label
    before = [screen for label, screen, _t in events if label == "expert agreement"]
    assert before and before[0]["kappa"].split("|")[0] == "—"  # nothing before it


def test_each_section_shows_its_own_progress_until_filled(
    qtbot: Any,
    open_coordinator: Opener,  # noqa: F811
    db_path: str,  # noqa: F811
) -> None:
    window = open_coordinator(f"sqlite:///{db_path}", compute=False)
    board = board_of(window)
    events = _record(board)
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
        board.recompute()
    by_label = {label: tabs for label, _s, tabs in events}
    judges = by_label["judges"]
    agreement_steps = len(SECTION_STEPS["agreement"])
    # After the judges: the agreement tab has 2 of its steps, health none of its one, the
    # judges table waits for its calibration; the charts are still to come.
    assert judges["0"] == f"Agreement · 2/{agreement_steps}"
    assert judges["table_health"].endswith("· 0/1")
    assert judges["1"] == "Judges · 1/2"
    assert all(t.endswith("· computing") for k, t in judges.items() if k.startswith("chart:"))
    # Once computed, a section waits for its table to be prepared and shown.
    assert by_label["done"]["table_health"].endswith("· preparing")
    # Filled: no tab shows progress, and each section says it is filled.
    for i in range(board.tables.count()):
        assert "·" not in board.tables.tabText(i), board.tables.tabText(i)
    for i in range(board.chart_tabs.count()):
        assert "·" not in board.chart_tabs.tabText(i)
    assert all(board.section_progress(name) is None for name in SECTION_STEPS)
    assert all(board.section_progress(f"chart:{n}") is None for n in board.charts)
    # Asked again (the judge now pinned by name, then the very same request, answered
    # from memory with every part reused: nothing to redraw): no tab is left showing
    # progress.
    cached = []
    for _again in range(2):
        with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
            board.recompute()
        assert board.result is not None
        cached.append(board.result.cached and not board.result.changed)
        for i in range(board.tables.count()):
            assert "·" not in board.tables.tabText(i), board.tables.tabText(i)
        for i in range(board.chart_tabs.count()):
            assert "·" not in board.chart_tabs.tabText(i)
    assert cached[-1]


def test_a_filter_change_shows_its_first_figures_before_the_rest(
    qtbot: Any,
    open_coordinator: Opener,  # noqa: F811
    db_path: str,  # noqa: F811
) -> None:
    window = open_coordinator(f"sqlite:///{db_path}", compute=False)
    board = board_of(window)
    board.prefetching = False  # nothing computed ahead: the change is computed
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
        board.recompute()
    assert board.result is not None
    whole = _screen(board)
    model = board.result.options["models"][0]
    events = _record(board)
    board.models.set_selected([model])
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
        board.recompute()
    final = _screen(board)
    assert final["responses"] != whole["responses"]  # one model: fewer responses
    later = [screen for label, screen, _t in events if label in LATER_STEPS]
    assert later
    for screen in later:
        assert screen == final
    # …while the tables still show their progress (the rest is being computed)
    tabs = next(t for label, _s, t in events if label == "pairwise")
    assert tabs["table_health"].endswith("· 0/1")


def test_the_headline_equals_the_finished_dashboard(db_path: str) -> None:  # noqa: F811
    """compute_dashboard's ``headline`` comes once, before the later sections, with the
    figures of the finished dashboard."""
    db = open_database(f"sqlite:///{db_path}")
    try:
        frames = Repository(db).load_frames(GradingStore(db).benchmark_names()[0])
    finally:
        db.dispose()
    order: list[str] = []
    got: list[dict[str, Any]] = []

    def headline(h: dict[str, Any]) -> None:
        order.append("headline")
        got.append(h)

    d = compute_dashboard(
        frames,
        n_boot=N_BOOT,
        headline=headline,
        progress=lambda _d, _t, label: order.append(label),
    )
    assert order.count("headline") == 1
    assert order.index("headline") == order.index("judges") + 1
    assert order.index("headline") < order.index("pairwise")
    (h,) = got
    assert set(h) == set(HEADLINE_FIELDS)
    assert h["overview"] == d.overview
    assert h["alt_test"] == d.alt_test
    overall = d.agreement.loc[d.agreement["by"] == "overall"].reset_index(drop=True)
    assert h["agreement"].reset_index(drop=True).equals(overall)
    assert list(h["judges"]["judge"]) == list(d.judges["judge"])
    assert list(h["judges"]["cohen_kappa"]) == list(d.judges["cohen_kappa"])
    whole = headline_of(**{k: getattr(d, k) for k in HEADLINE_FIELDS})
    assert whole["overview"] == h["overview"]
    with pytest.raises(TypeError, match="needs"):
        headline_of(overview={})
