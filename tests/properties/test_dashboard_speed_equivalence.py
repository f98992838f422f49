"""The shared per-call tables (context) never change a number.

``compute_dashboard`` builds the verdict, consensus and score tables once and lets every
engine reuse them (``context=``); several engines then take faster paths (unit positions
instead of merges, the consensus from one table of levels). Here every engine is run
with and without a context on generated benchmarks — with ordinal criteria, partial rater
overlap, adjudications, a second judge, duplicate and unanswered verdicts — and the
results must be identical, and so must the whole dashboard (``Dashboard.to_json``).
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import gradercal.dashboard.compute as dashboard_mod
from gradercal._util.forked import fork_available
from gradercal.analysis.agreement import (
    GROUPINGS,
    group_agreement,
    human_agreement,
    judge_agreement,
    leave_one_out,
    pairwise_agreement,
)
from gradercal.analysis.alt_test import alt_test_frames
from gradercal.analysis.calibration import cross_fit, item_table, response_table
from gradercal.analysis.context import AnalysisContext
from gradercal.analysis.estimate import estimate_report, estimate_table
from gradercal.analysis.health import criterion_health
from gradercal.analysis.impact import impact_report, paired_scores
from gradercal.analysis.scoring import auto_verdicts, consensus, response_scores
from gradercal.analysis.verdicts import consensus_verdicts, human_graders, verdicts
from gradercal.dashboard import DashboardFilters, compute_dashboard
from gradercal.formats import read_path
from gradercal.frames import ADJUDICATION_DTYPES, Frames, frames_from_data, make_frame
from gradercal.synth import SynthConfig, generate


def _frames(root: Path, **config: Any) -> Frames:
    generate(root, SynthConfig(artifacts_per_task=0, **config))
    return frames_from_data(read_path(root))


def _perturbed(f: Frames) -> Frames:
    """Adjudications, a second judge, a duplicate verdict and unanswered verdicts."""
    rng = np.random.default_rng(7)
    j = f.judgments
    judge = j.loc[j["grader_kind"] != "human"]
    second = judge.assign(grader="judge-b")
    flip = rng.random(len(second)) < 0.2
    second.loc[flip, "met"] = ~second.loc[flip, "met"].astype(bool)
    second.loc[second.index[:5], "met"] = pd.NA  # unanswered
    dup = j.iloc[[3]].assign(met=~j.iloc[[3]]["met"].astype(bool))  # the later one wins
    human = j.loc[j["grader_kind"] == "human"]
    none = human.iloc[10:14].assign(met=pd.NA, level=pd.NA)  # neither met nor level
    judgments = pd.concat([j, second, dup], ignore_index=True)
    judgments.loc[none.index, ["met", "level"]] = pd.NA
    units = human.drop_duplicates(["response_id", "criterion_id"]).iloc[::37]
    adj = make_frame(
        ADJUDICATION_DTYPES,
        (
            (r, c, bool(k % 2), None, "lead", "checked")
            for k, (r, c) in enumerate(
                zip(units["response_id"], units["criterion_id"], strict=True)
            )
        ),
    )
    return dataclasses.replace(f, judgments=judgments, adjudications=adj)


@pytest.fixture(scope="module")
def benchmarks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Frames]:
    root = tmp_path_factory.mktemp("equiv")
    plain = _frames(root / "plain", tasks=24, criteria_per_task=8, seed=11)
    sparse = _frames(root / "sparse", tasks=30, criteria_per_task=6, human_graders=4, overlap=2)
    return {"plain": plain, "sparse": sparse, "perturbed": _perturbed(plain)}


def _same(a: Any, b: Any) -> None:
    """Exactly equal: frames (values and dtypes), or anything by its repr/JSON."""
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    elif isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif isinstance(a, dict):
        assert json.dumps(a, sort_keys=True, default=str) == json.dumps(
            b, sort_keys=True, default=str
        )
    else:
        assert repr(a) == repr(b)


def _judges(f: Frames) -> list[str]:
    j = f.judgments
    return sorted(set(j.loc[j["grader_kind"] != "human", "grader"]))


@pytest.mark.parametrize("name", ["plain", "sparse", "perturbed"])
def test_every_engine_is_identical_with_a_memo(benchmarks: dict[str, Frames], name: str) -> None:
    f = benchmarks[name]
    humans = human_graders(f)
    judge = _judges(f)[0]
    context = AnalysisContext()
    kw = {"n_boot": 40, "seed": 3}
    calls = {
        "verdicts": lambda m: verdicts(f, context=m),
        "verdicts_sub": lambda m: verdicts(f, humans[:2], context=m),
        "consensus": lambda m: consensus(f, humans, context=m),
        "consensus_none": lambda m: consensus(f, None, context=m),
        "consensus_loo": lambda m: consensus(f, humans[1:], context=m),
        "consensus_verdicts": lambda m: consensus_verdicts(f, humans, context=m),
        "auto": lambda m: auto_verdicts(f, context=m),
        "scores": lambda m: response_scores(f, "consensus", humans=humans, context=m),
        "scores_met": lambda m: response_scores(f, tie_policy="met", humans=humans, context=m),
        "scores_judge": lambda m: response_scores(f, judge, include_ungraded=True, context=m),
        "human": lambda m: human_agreement(f, humans, context=m, **kw),
        "pairwise": lambda m: pairwise_agreement(f, [*humans, judge], context=m, **kw),
        "loo": lambda m: leave_one_out(f, humans, context=m, **kw),
        "judge": lambda m: judge_agreement(f, judge, humans, context=m, **kw),
        **{
            f"group_{by}": (lambda m, by=by: group_agreement(f, by, humans, judge, context=m, **kw))
            for by in GROUPINGS
        },
        "alt": lambda m: alt_test_frames(f, judge, humans, context=m),
        "health": lambda m: criterion_health(f, judge, humans, context=m),
        "items": lambda m: item_table(f, judge, humans, context=m),
        "responses": lambda m: response_table(f, judge, humans, context=m),
        "paired": lambda m: paired_scores(f, judge, humans, context=m),
        "impact": lambda m: impact_report(f, judge, humans, context=m, **kw),
        "estimate_table": lambda m: estimate_table(f, judge, humans, context=m),
        "estimate": lambda m: estimate_report(f, judge, humans, context=m),
    }
    for label, call in calls.items():
        fresh = call(None)
        # Twice through the same context: the first call fills it, the second reads it.
        for _ in range(2):
            got = call(context)
            if isinstance(fresh, pd.DataFrame | tuple | dict):
                _same(got, fresh)
            elif isinstance(fresh, list):
                assert [repr(x) for x in got] == [repr(x) for x in fresh], label
            elif hasattr(fresh, "to_dict"):
                assert got.to_dict() == fresh.to_dict(), label
            else:
                _same(got, fresh)
    # The fast paths were taken: unit positions registered, consensus from the levels.
    assert context.human_levels is not None and context.human_levels[0] is not None
    assert any(e.units is not None for e in context.indexes())
    # The human–human figures are defined and the judge was compared on real units.
    ha = human_agreement(f, humans, n_boot=0)
    assert ha.n_units_paired > 0
    assert judge_agreement(f, judge, humans, n_boot=0).headline.n_units > 0
    for method in ("threshold", "isotonic", "leniency"):
        a = cross_fit(f, judge, method, humans)
        b = cross_fit(f, judge, method, humans, context=context)
        assert a.folds == b.folds
        _same(a.responses, b.responses)
        if a.items is not None:
            _same(a.items, b.items)


def test_cached_tables_are_not_changed_by_their_readers(benchmarks: dict[str, Frames]) -> None:
    f = benchmarks["plain"]
    context = AnalysisContext()
    s = response_scores(f, humans=human_graders(f), context=context)
    s["score"] = -1.0  # a caller writing into its copy
    again = response_scores(f, humans=human_graders(f), context=context)
    assert (again["score"].dropna() >= 0).all()
    _same(again, response_scores(f, humans=human_graders(f)))


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("plain", {"n_boot": 30, "seed": 2}),
        ("sparse", {"n_boot": 0, "calibration": {"method": "isotonic"}}),
        (
            "perturbed",
            {
                "n_boot": 25,
                "seed": 5,
                "calibration": {"method": "leniency"},
                "filters": DashboardFilters(models=("model-a", "model-c")),
            },
        ),
    ],
)
def test_dashboard_json_is_identical_without_shared_tables(
    benchmarks: dict[str, Frames],
    name: str,
    options: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    f = benchmarks[name]
    shared = compute_dashboard(f, **options)
    monkeypatch.setattr(dashboard_mod, "_SHARE_TABLES", False)
    alone = compute_dashboard(f, **options)
    a, b = shared.to_json(), alone.to_json()
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    # Not vacuous: the sections hold numbers.
    assert a["judges"] and a["agreement"] and a["models"] and a["health"]
    assert any(r["value"] is not None for r in a["agreement"])


@pytest.mark.parametrize("name", ["plain", "sparse", "perturbed"])
def test_group_statistics_from_integer_codes_match_the_strings(
    benchmarks: dict[str, Frames], name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Groups rated from integer codes (unit positions, grader / task codes) give the
    figures of the rating tables built from the identifier strings."""
    import gradercal.analysis.agreement.humans as agreement_mod

    f = benchmarks[name]
    humans = human_graders(f)
    judge = _judges(f)[0]
    kw = {"n_boot": 30, "seed": 4}
    coded = {
        by: group_agreement(f, by, humans, judge, context=AnalysisContext(), **kw)
        for by in GROUPINGS
    }
    # Column names no table has: every group falls back to the string identifiers.
    monkeypatch.setattr(agreement_mod, "CODE_COLUMNS", ("_absent_a", "_absent_b", "_absent_c"))
    for by, rows in coded.items():
        plain = group_agreement(f, by, humans, judge, **kw)
        assert [r.to_dict() for r in rows] == [r.to_dict() for r in plain], by
    assert any(r.humans.n_units_paired for r in coded["tag"])


@pytest.mark.parametrize("name", ["plain", "perturbed"])
def test_health_table_is_criterion_health(benchmarks: dict[str, Frames], name: str) -> None:
    from gradercal.analysis.health import health_table

    f = benchmarks[name]
    humans = human_graders(f)
    judge = _judges(f)[0]
    rows = criterion_health(f, judge, humans, details=False)
    table = health_table(f, judge, humans)
    assert len(table) == len(rows) > 0
    for h, t in zip(rows, table.to_dict("records"), strict=True):
        d = h.to_dict(details=False)
        for col in ("human_agreement", "judge_disagreement", "disagreement", "impact"):
            assert (d[col] is None and np.isnan(t[col])) or d[col] == t[col], col
        for col in ("task_id", "criterion_id", "text", "points", "n_responses", "n_paired"):
            assert d[col] == t[col], col
        assert d["n_judged"] == t["n_judged"]
        assert tuple(d["tags"]) == t["tags"] and tuple(d["flags"]) == t["flags"]
        assert h.flagged == t["flagged"]
    # Ranked by impact, most impactful first.
    impact = table["impact"].dropna().to_numpy()
    assert (np.diff(impact) <= 0).all() and table["flagged"].any()


@pytest.mark.skipif(not fork_available(), reason="the forked child is used on Linux only")
@pytest.mark.parametrize("name", ["plain", "sparse", "perturbed"])
@pytest.mark.parametrize(
    "options",
    [
        {"n_boot": 40, "seed": 2},
        {"n_boot": 0, "calibration": {"method": "isotonic"}, "bar": 0.75},
        {"n_boot": 20, "calibration": {"method": "none"}},
    ],
)
def test_dashboard_in_two_processes_is_identical(
    benchmarks: dict[str, Frames], name: str, options: dict[str, Any]
) -> None:
    """The calibration, models and health sections computed in a forked child give the
    same dashboard, notes and progress as one process."""
    f = benchmarks[name]
    seen: dict[int, list[tuple[int, int, str]]] = {1: [], 2: []}
    dashes = {
        n: compute_dashboard(f, processes=n, progress=lambda *a, n=n: seen[n].append(a), **options)
        for n in (1, 2)
    }
    one, two = dashes[1].to_json(), dashes[2].to_json()
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)
    assert one["health"] and one["models"]
    assert seen[1] == seen[2]  # same steps, same labels, in the same order
    assert "waiting for the child" in dashes[2].elapsed
    assert set(dashes[1].elapsed) <= set(dashes[2].elapsed)


def test_dashboard_child_failure_falls_back_to_one_process(
    benchmarks: dict[str, Frames], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child that dies without a result: its sections are computed in the parent."""
    import gradercal._util.forked as forked_mod

    if not fork_available():
        pytest.skip("the forked child is used on Linux only")
    f = benchmarks["plain"]
    expected = compute_dashboard(f, n_boot=10).to_json()
    real_child = forked_mod._child

    def dying(*_args: Any) -> None:
        os._exit(3)  # no result written

    monkeypatch.setattr(forked_mod, "_child", dying)
    got = compute_dashboard(f, n_boot=10, processes=2)
    monkeypatch.setattr(forked_mod, "_child", real_child)
    assert json.dumps(got.to_json(), sort_keys=True) == json.dumps(expected, sort_keys=True)
    assert "waiting for the child" not in got.elapsed


def test_dashboard_reads_of_an_adjudication_only_its_unit_met_and_level(
    benchmarks: dict[str, Frames],
) -> None:
    """The worker keys its results by the adjudications' units, met and level
    (``gradercal.ui.dashboard.results.adjudications_digest``) and computes ahead with a
    hypothetical row appended: neither who adjudicated, the note, nor the rows' order may
    change a number — and the verdict must."""
    from gradercal.ui.dashboard.results import adjudications_digest, with_adjudication

    f = benchmarks["perturbed"]
    adj = f.adjudications
    assert len(adj) > 3

    def board(frames: Frames) -> str:
        d = compute_dashboard(frames, n_boot=30, seed=2, processes=1)
        return json.dumps(d.to_json(), sort_keys=True)

    base = board(f)
    other = adj.iloc[::-1].reset_index(drop=True).assign(adjudicator="someone else", note=None)
    assert adjudications_digest(other) == adjudications_digest(adj)
    assert board(dataclasses.replace(f, adjudications=other)) == base
    # A hypothesis is the saved row: the same digest, the same dashboard as the row saved
    # in another place of the table.
    r, c, met = adj.iloc[1]["response_id"], adj.iloc[1]["criterion_id"], bool(adj.iloc[1]["met"])
    flipped = with_adjudication(adj, (r, c, not met, None))
    moved = pd.concat([adj.drop(index=1), flipped.iloc[[1]]], ignore_index=True)
    assert adjudications_digest(flipped) == adjudications_digest(moved)
    assert adjudications_digest(flipped) != adjudications_digest(adj)
    changed = board(dataclasses.replace(f, adjudications=flipped))
    assert changed != base
    assert board(dataclasses.replace(f, adjudications=moved)) == changed
