"""Unit tests of gradercal.analysis.alignment (the split, the figures, Holm, leakage)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gradercal.analysis.alignment import (
    HeldOutLeakage,
    HeldOutUnits,
    Provenance,
    assert_no_leakage,
    binary_figures,
    evaluate_held_out,
    holm_levels,
    split_tasks,
)
from gradercal.stats.coefficients import cohen_kappa


def _tasks(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "task_id": [f"t{i:02d}" for i in range(n)],
            "workflow": [("a", "b", None)[i % 3] for i in range(n)],
            "domain": [("x", "y")[(i // 3) % 2] for i in range(n)],
        }
    )


def test_split_is_stratified_seeded_and_recorded() -> None:
    tasks = _tasks(60)
    s = split_tasks(tasks, 0.3, seed=5)
    assert len(s.held_out) == 18 and len(s.development) == 42
    assert set(s.held_out).isdisjoint(s.development)
    assert set(s.held_out) | set(s.development) == set(tasks["task_id"])
    # 6 strata of 10 tasks: each holds out 3 (= 0.3 · 10)
    assert {v[1] for v in s.strata.values()} == {3}
    assert "(none) / x" in s.strata
    assert split_tasks(tasks.iloc[::-1], 0.3, seed=5) == s  # order does not matter
    assert split_tasks(tasks, 0.3, seed=6).held_out != s.held_out
    j = s.as_json()
    assert j["seed"] == 5 and j["held_out"] == list(s.held_out)


def test_split_refuses_bad_share_and_too_few_tasks() -> None:
    with pytest.raises(ValueError, match="holdout share"):
        split_tasks(_tasks(10), 1.0)
    with pytest.raises(ValueError, match="at least two tasks"):
        split_tasks(["only"], 0.3)
    assert len(split_tasks(["a", "b"], 0.01).held_out) == 1  # at least one each side


def test_binary_figures_match_cohen_kappa_and_hand_balanced_accuracy() -> None:
    rng = np.random.default_rng(0)
    c = rng.random(300) < 0.4
    j = np.where(rng.random(300) < 0.2, ~c, c)
    sums = np.array([300.0, j.sum(), c.sum(), (j & c).sum()])
    f = binary_figures(sums)
    long = pd.DataFrame(
        {
            "unit": np.tile(np.arange(300), 2),
            "rater": ["judge"] * 300 + ["expert"] * 300,
            "value": np.concatenate([j, c]),
        }
    )
    ref = cohen_kappa(long)
    assert ref.value is not None
    assert f["kappa"] == pytest.approx(ref.value, rel=1e-12)
    tpr = (j & c).sum() / c.sum()
    tnr = (~j & ~c).sum() / (~c).sum()
    assert f["balanced_accuracy"] == pytest.approx((tpr + tnr) / 2, rel=1e-12)
    # one consensus class only: balanced accuracy undefined; kappa with p_e = 1 too
    assert np.isnan(binary_figures(np.array([5.0, 5.0, 5.0, 5.0]))["kappa"])
    assert np.isnan(binary_figures(np.array([5.0, 2.0, 5.0, 2.0]))["balanced_accuracy"])


def _units(n_tasks: int, k: int, seed: int = 0) -> tuple[HeldOutUnits, np.ndarray]:
    rng = np.random.default_rng(seed)
    task = np.repeat(np.arange(n_tasks), k)
    df = pd.DataFrame(
        {
            "task_id": [f"t{t:02d}" for t in task],
            "response_id": [f"r{t:02d}" for t in task],
            "model": [("m1", "m2")[t % 2] for t in task],
            "points": np.ones(len(task), dtype=int),
            "met": rng.random(len(task)) < 0.5,
        }
    )
    return HeldOutUnits.from_frame(df), df["met"].to_numpy()


def test_identical_candidate_has_zero_difference_and_is_not_proven() -> None:
    units, c = _units(20, 10)
    rng = np.random.default_rng(1)
    base = np.where(rng.random(len(c)) < 0.2, ~c, c).astype(float)
    ev = evaluate_held_out(units, base, {"same": base.copy()}, n_boot=300, seed=1)
    p = ev.candidates[0].paired["kappa"]
    assert p.estimate == 0.0 and p.interval.ci_low == 0.0 and p.interval.ci_high == 0.0
    assert not ev.candidates[0].proven_better and ev.proven() == []


def test_perfect_candidate_is_proven_and_figures_are_reported() -> None:
    units, c = _units(30, 10)
    rng = np.random.default_rng(2)
    base = np.where(rng.random(len(c)) < 0.3, ~c, c).astype(float)
    perfect = c.astype(float)
    ev = evaluate_held_out(units, base, {"perfect": perfect}, n_boot=300, seed=2)
    cand = ev.candidates[0]
    assert cand.figures.kappa == 1.0 and cand.figures.flips == 0
    assert cand.figures.models["m1"]["mean_score_error"] == 0.0
    assert cand.proven_better
    j = cand.as_json()
    assert set(j["paired"]) == {"kappa", "balanced_accuracy"}
    assert {"estimate", "ci", "ci_corrected"} <= set(j["paired"]["kappa"])
    assert ev.baseline.flips >= 0 and ev.baseline.kappa is not None


def test_missing_verdicts_are_left_out_of_the_pairs() -> None:
    units, c = _units(20, 10)
    base = c.astype(float)
    cand = c.astype(float)
    cand[:50] = np.nan
    ev = evaluate_held_out(units, base, {"c": cand}, n_boot=100, seed=0)
    assert ev.candidates[0].figures.n_units == len(c) - 50
    assert ev.candidates[0].paired["kappa"].estimate == 0.0


def test_holm_steps_and_the_corrected_interval_is_wider() -> None:
    assert holm_levels(3, 0.95) == pytest.approx([1 - 0.05 / 3, 1 - 0.05 / 2, 0.95])
    units, c = _units(30, 10)
    rng = np.random.default_rng(3)
    base = np.where(rng.random(len(c)) < 0.3, ~c, c).astype(float)
    better = np.where(rng.random(len(c)) < 0.05, ~c, c).astype(float)
    noise = {f"n{i}": np.where(rng.random(len(c)) < 0.3, ~c, c).astype(float) for i in range(4)}
    ev = evaluate_held_out(units, base, {"better": better, **noise}, n_boot=500, seed=3)
    kap = {e.name: e.paired["kappa"] for e in ev.candidates}
    assert ev.n_evaluated == 5
    b = kap["better"]
    assert b.holm_rank == 1 and b.corrected_level == pytest.approx(1 - 0.05 / 5)
    assert b.proven_better
    assert b.corrected.ci_low is not None and b.interval.ci_low is not None
    assert b.corrected.ci_low <= b.interval.ci_low  # corrected is at a higher confidence
    # once a rank is not proven, every later rank gets the Bonferroni level, unproven
    ranks = sorted(kap.values(), key=lambda p: p.holm_rank)
    first_fail = next(i for i, p in enumerate(ranks) if not p.proven_better)
    for p in ranks[first_fail:]:
        assert not p.proven_better and p.corrected_level == pytest.approx(1 - 0.05 / 5)


def test_leakage_guard_names_the_held_out_tasks() -> None:
    s = split_tasks(_tasks(20), 0.3, seed=1)
    assert_no_leakage(s.development, s)  # development evidence passes
    p = Provenance(("guidance",), frozenset({s.development[0], s.held_out[0]}))
    with pytest.raises(HeldOutLeakage, match=s.held_out[0]):
        assert_no_leakage(p.task_ids, s)
    merged = Provenance(("examples",), frozenset({s.development[1]})).merged(p)
    assert merged.built_from == ("examples", "guidance")
    with pytest.raises(HeldOutLeakage):
        assert_no_leakage(merged.task_ids, s)


def test_sorted_quantiles_equal_numpy_quantile() -> None:
    from gradercal.analysis.alignment import _sorted_quantiles

    x = np.random.default_rng(4).normal(size=777)
    levels = (0.0123, 0.9877)
    assert _sorted_quantiles(np.sort(x), levels) == pytest.approx(
        tuple(np.quantile(x, levels)), rel=1e-12
    )


def test_too_few_held_out_tasks_prove_nothing() -> None:
    units, c = _units(6, 20)
    rng = np.random.default_rng(5)
    base = np.where(rng.random(len(c)) < 0.3, ~c, c).astype(float)
    ev = evaluate_held_out(units, base, {"perfect": c.astype(float)}, n_boot=300, seed=5)
    p = ev.candidates[0].paired["kappa"]
    assert p.interval.ci_low is not None and p.interval.ci_low > 0  # a clear gain ...
    assert not p.proven_better  # ... but 6 tasks (< 10) prove nothing
    assert p.interval.note is not None and "unreliable" in p.interval.note


def test_development_evidence_comes_from_development_tasks_only() -> None:
    from gradercal.analysis.alignment import consensus_units, development_evidence
    from gradercal.formats import read_folder
    from gradercal.frames import frames_from_data
    from tests.conftest import ROOT

    frames = frames_from_data(read_folder(ROOT / "samples" / "demo"))
    tasks = frames.tasks.loc[frames.tasks["task_id"].isin(set(consensus_units(frames)["task_id"]))]
    s = split_tasks(tasks, 0.3, seed=0)
    ev = development_evidence(frames, "judge-gpt", s)
    assert len(ev) > 0 and set(ev["task_id"]) <= set(s.development)
    assert (ev["judge_met"] != ev["consensus_met"]).all()
    assert ev["criterion_key"].str.contains("/").all()
    # handing the optimizer one held-out task's evidence fails before anything is read
    with pytest.raises(HeldOutLeakage, match=s.held_out[0]):
        development_evidence(frames, "judge-gpt", s, tasks=[*s.development, s.held_out[0]])


def test_split_from_given_held_out_tasks() -> None:
    from gradercal.analysis.alignment import split_from_held_out

    tasks = _tasks(12)
    s = split_from_held_out(tasks, ["t01", "t05", "nope"], 4, source="calibration 7")
    assert s.held_out == ("t01", "t05") and len(s.development) == 10
    assert s.as_json()["source"] == "calibration 7" and s.seed == 4
    assert sum(v[1] for v in s.strata.values()) == 2
    with pytest.raises(ValueError, match="no development task"):
        split_from_held_out(tasks, tasks["task_id"])
    with pytest.raises(ValueError, match="has an expert consensus"):
        split_from_held_out(tasks, ["nope"])


def test_answered_clarifications_join_the_evidence_from_development_tasks_only() -> None:
    """A clarification answer of a development task joins its criterion's evidence rows;
    one of a held-out task handed in raises (never silently used, never dropped)."""
    import pandas as pd

    from gradercal.analysis.alignment import consensus_units, development_evidence
    from gradercal.formats import read_folder
    from gradercal.frames import frames_from_data
    from tests.conftest import ROOT

    frames = frames_from_data(read_folder(ROOT / "samples" / "demo"))
    tasks = frames.tasks.loc[frames.tasks["task_id"].isin(set(consensus_units(frames)["task_id"]))]
    s = split_tasks(tasks, 0.3, seed=0)
    ev = development_evidence(frames, "judge-gpt", s)
    t, c = str(ev.at[0, "task_id"]), str(ev.at[0, "criterion_id"])
    dev_answer = pd.DataFrame(
        {"task_id": [t], "criterion_id": [c], "answer": ["count partial credit as met"]}
    )
    got = development_evidence(frames, "judge-gpt", s, clarifications=dev_answer)
    on_crit = (got["task_id"] == t) & (got["criterion_id"] == c)
    assert all(x == ["count partial credit as met"] for x in got.loc[on_crit, "clarifications"])
    assert all(x == [] for x in got.loc[~on_crit, "clarifications"])
    held_crit = frames.criteria.loc[frames.criteria["task_id"] == s.held_out[0], "criterion_id"]
    held_answer = pd.DataFrame(
        {"task_id": [s.held_out[0]], "criterion_id": [held_crit.iloc[0]], "answer": ["leak"]}
    )
    with pytest.raises(HeldOutLeakage, match=s.held_out[0]):
        development_evidence(
            frames, "judge-gpt", s, clarifications=pd.concat([dev_answer, held_answer])
        )
