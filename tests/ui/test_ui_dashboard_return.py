"""Returning from an adjudication: the dashboard shows the new verdict without computing.

While the coordinator reads a case, the worker computes ahead the dashboard with each
verdict the case could be given; saving one makes the worker read the adjudications
alone, find that result, and send only the parts that differ from what the window shows —
which then redraws only those. The numbers are those of a computation from nothing.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gradercal.dashboard import DashboardFilters, compute_dashboard
from gradercal.db.acceptance import load_round_table
from gradercal.db.calibrations import load_task_reviews
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.ui.dashboard.protocol import Part
from tests.ui.test_ui_dashboard import (  # noqa: F401 (fixtures)
    N_BOOT,
    TIMEOUT,
    Opener,
    db_path,
    demo_db,
    open_coordinator,
)

pytestmark = pytest.mark.gui


def fresh_json(db_url: str, filters: DashboardFilters | None = None) -> str:
    """The dashboard's JSON computed from nothing on the database (as the worker reads it)."""
    db = open_database(db_url)
    try:
        repo = Repository(db)
        frames, reviews = repo.load_frames(), load_task_reviews(repo)
        name = repo.benchmark(None).name
        rounds = load_round_table(db, name)  # as the worker reads them
    finally:
        db.dispose()
    d = compute_dashboard(
        frames, n_boot=N_BOOT, reviews=reviews, benchmark=name, rounds=rounds, filters=filters
    )
    return json.dumps(d.to_json(), sort_keys=True)


def test_returning_from_an_adjudication_shows_the_prefetched_result(
    qtbot: Any,
    open_coordinator: Opener,  # noqa: F811
    db_path: str,  # noqa: F811
) -> None:
    window = open_coordinator(db_path)
    coord = window.coordination
    assert coord is not None
    board = coord.dashboard
    # The first result was drawn for the canvases' placeholders; once shown, the charts'
    # size may differ by a few pixels: draw once at the size they have now.
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
        board.recompute()
    before = board.result
    assert before is not None and before.dashboard.overview["n_adjudications"] == 0
    pairwise_figure = board.charts["pairwise"].figure
    first = board.section_tables["disagreements"].row(0)
    ready: list[dict[str, Any]] = []
    board.worker.prefetched.connect(ready.append)
    with qtbot.waitSignal(coord.adjudication.case_loaded, timeout=TIMEOUT):
        coord.open_adjudication(first["response_id"], first["criterion_id"])
    adj = coord.adjudication
    assert adj.case is not None
    n = 3 if adj.case.allows_partial else 2  # every verdict it could be given
    qtbot.waitUntil(lambda: len(ready) >= n, timeout=TIMEOUT)
    assert {r["hypothesis"][:2] for r in ready} == {(first["response_id"], first["criterion_id"])}
    assert not any(r["cached"] for r in ready)

    adj.set_verdict("not_met")
    adj.note.setPlainText("No evidence in the response.")
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
        assert adj.save(), adj.error.text()
    result = board.result
    assert result is not None and result is not before
    # Nothing was computed on return: the worker read the adjudications alone and had the
    # result ready.
    assert result.cached and not result.loaded and result.refreshed == ("adjudications",)
    assert board.cards["adjudications"].value.text() == "1"
    assert result.dashboard.overview["n_adjudications"] == 1
    # Only what the verdict changes came back and was redrawn: expert–judge pairwise
    # agreement does not depend on adjudications, so its chart is the one shown before.
    assert result.changed is not None and Part.dash("overview") in result.changed
    assert Part.dash("pairwise") not in result.changed
    assert Part.figure("pairwise") not in result.changed
    assert board.charts["pairwise"].figure is pairwise_figure
    # The same numbers as a computation from nothing on the saved database.
    assert json.dumps(result.dashboard.to_json(), sort_keys=True) == fresh_json(db_path)
