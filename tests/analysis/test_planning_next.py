"""planning.next_batches: the half-widths now and after each kind of next batch (#35).

Every figure is the :func:`gradercal.analysis.planning.plan` figure of the same design
with the same seed (one simulation for all the rows), so the window's "Where to grade
next" shows exactly what ``gradercal plan`` would print for those designs.
"""

from __future__ import annotations

import math

import pytest

from gradercal.analysis.planning import (
    HEADLINE,
    PlanModel,
    assumed_model,
    next_batches,
    plan,
)

SIMS = 40


@pytest.fixture(scope="module")
def model() -> PlanModel:
    return assumed_model({"kappa": 0.6, "icc": 0.5, "pass_rate": 0.6, "tasks": 120, "models": 3})


def test_rows_are_the_plans_figures_for_the_same_designs(model: PlanModel) -> None:
    rows = next_batches(model, tasks_now=20, experts_now=1, batch_responses=31, n_sims=SIMS)
    assert [r["kind"] for r in rows] == ["now", "uniform", "active", "experts"]
    after = 20 + math.ceil(31 / 3)
    ref = plan(model, tasks=[20, after], experts=[1, 2], n_sims=SIMS, seed=0)
    found = {(d["tasks"], d["experts_per_item"]): d for d in ref.designs}
    expect = {"now": (20, 1), "uniform": (after, 1), "active": (after, 1), "experts": (20, 2)}
    for row in rows:
        d = found[expect[row["kind"]]]
        assert (row["tasks"], row["experts_per_item"]) == expect[row["kind"]]
        for key in HEADLINE:
            assert row["expected_half_width"][key] == d["expected_half_width"][key]
            now = rows[0]["expected_half_width"][key]
            assert row["shrink"][key] == pytest.approx(now - d["expected_half_width"][key])
        assert row["per_model"] == d["per_model"]
    assert rows[1]["added_responses"] == (after - 20) * 3
    assert rows[3]["added_items"] == 20 * 3 and rows[3]["added_experts"] == 1
    assert rows[2]["bound"] == "at most"
    # more tasks graded: every headline interval narrower
    assert all(rows[1]["shrink"][k] > 0 for k in HEADLINE)


def test_nothing_graded_yet_has_no_figure_now_and_no_experts_row(model: PlanModel) -> None:
    rows = next_batches(model, tasks_now=0, experts_now=1, batch_responses=60, n_sims=SIMS)
    assert [r["kind"] for r in rows] == ["now", "uniform", "active"]
    assert all(v is None for v in rows[0]["expected_half_width"].values())
    assert rows[1]["tasks"] == 20
    assert all(rows[1]["expected_half_width"][k] is not None for k in HEADLINE)
    assert all(rows[1]["shrink"][k] is None for k in HEADLINE)


def test_a_batch_past_the_benchmark_stops_at_every_task(model: PlanModel) -> None:
    rows = next_batches(model, tasks_now=100, experts_now=3, batch_responses=10_000, n_sims=SIMS)
    assert rows[1]["tasks"] == 120 and rows[1]["added_responses"] == 60


def test_bad_batches_are_refused(model: PlanModel) -> None:
    with pytest.raises(ValueError, match="at least one response"):
        next_batches(model, tasks_now=10, experts_now=1, batch_responses=0)
