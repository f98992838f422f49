"""gradercal.analysis.agreement: hand-worked comparisons, scikit-learn cross-checks, the part-1
bootstrap reproduced exactly, the tests/data/mini benchmark by hand, and the coverage of
the task-clustered intervals in repeated simulations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import (
    cohen_kappa_score,
    f1_score,
    precision_recall_fscore_support,
)

from gradercal.analysis import agreement as ag
from gradercal.analysis.agreement.compare import paired_units
from gradercal.analysis.agreement.humans import unit_ratings
from gradercal.analysis.verdicts import human_graders, judge_graders, verdicts
from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from gradercal.stats import clustered_bootstrap, fleiss_kappa, percent_agreement
from tests.conftest import DATA, DEMO


@pytest.fixture(scope="module")
def mini() -> Frames:
    return frames_from_data(read_path(DATA / "mini"))


@pytest.fixture(scope="module")
def demo() -> Frames:
    return frames_from_data(read_path(DEMO))


def _pairs(tp: int, fp: int, fn: int, tn: int) -> tuple[np.ndarray, np.ndarray]:
    cand = np.array([True] * tp + [True] * fp + [False] * fn + [False] * tn)
    ref = np.array([True] * tp + [False] * fp + [True] * fn + [False] * tn)
    return cand, ref


def test_hand_worked_comparison() -> None:
    # TP = 3, FP = 1, FN = 2, TN = 4 (n = 10), reference = truth.
    cand, ref = _pairs(3, 1, 2, 4)
    c = ag.compare(cand, ref, ["t"] * 10, n_boot=0)
    m = {k: v.value for k, v in c.metrics.items()}
    assert c.confusion == {"tp": 3, "fp": 1, "fn": 2, "tn": 4}
    assert m["percent_agreement"] == pytest.approx(7 / 10)  # (3 + 4)/10
    assert m["precision_met"] == pytest.approx(3 / 4)  # 3/(3 + 1)
    assert m["recall_met"] == pytest.approx(3 / 5)  # 3/(3 + 2)
    assert m["f1_met"] == pytest.approx(6 / 9)  # 2·3/(2·3 + 1 + 2)
    assert m["precision_not_met"] == pytest.approx(4 / 6)  # 4/(4 + 2)
    assert m["recall_not_met"] == pytest.approx(4 / 5)  # 4/(4 + 1)
    assert m["f1_not_met"] == pytest.approx(8 / 11)  # 2·4/(2·4 + 2 + 1)
    assert m["balanced_f1"] == pytest.approx((6 / 9 + 8 / 11) / 2)  # = 46/66
    # p_o = 0.7; candidate met rate 4/10, reference 5/10: p_e = .4·.5 + .6·.5 = .5
    assert m["cohen_kappa"] == pytest.approx((0.7 - 0.5) / (1 - 0.5))  # 0.4
    assert m["candidate_met_rate"] == pytest.approx(0.4)
    assert m["reference_met_rate"] == pytest.approx(0.5)
    assert m["leniency_bias"] == pytest.approx(-0.1)  # (FP − FN)/n = (1 − 2)/10
    assert c.metrics["cohen_kappa"].ci_low is None  # no bootstrap asked


@pytest.mark.parametrize("seed", range(8))
def test_comparison_equals_scikit_learn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 300))
    ref = rng.random(n) < rng.uniform(0.2, 0.8)
    cand = np.where(rng.random(n) < 0.8, ref, ~ref)
    c = ag.compare(cand, ref, list(rng.integers(0, 10, n)), n_boot=0)
    m = {k: v.value for k, v in c.metrics.items()}
    p, r, f, _ = precision_recall_fscore_support(
        ref, cand, labels=[True, False], zero_division=np.nan
    )
    assert m["precision_met"] == pytest.approx(p[0], abs=1e-12)
    assert m["recall_met"] == pytest.approx(r[0], abs=1e-12)
    assert m["f1_met"] == pytest.approx(f[0], abs=1e-12)
    assert m["precision_not_met"] == pytest.approx(p[1], abs=1e-12)
    assert m["recall_not_met"] == pytest.approx(r[1], abs=1e-12)
    assert m["f1_not_met"] == pytest.approx(f[1], abs=1e-12)
    assert m["balanced_f1"] == pytest.approx(f1_score(ref, cand, average="macro"), abs=1e-12)
    assert m["cohen_kappa"] == pytest.approx(cohen_kappa_score(ref, cand), abs=1e-12)
    assert m["leniency_bias"] == pytest.approx(cand.mean() - ref.mean(), abs=1e-12)


def test_undefined_figures_are_null_with_reasons() -> None:
    everything_met = np.ones(5, dtype=bool)
    c = ag.compare(everything_met, everything_met, list("abcde"), n_boot=0)
    assert c.metrics["percent_agreement"].value == 1.0
    assert c.metrics["f1_met"].value == 1.0
    assert c.metrics["f1_not_met"].value is None
    assert "neither said not met" in (c.metrics["f1_not_met"].note or "")
    assert c.metrics["balanced_f1"].value is None
    assert c.metrics["cohen_kappa"].value is None
    assert "chance agreement is 1" in (c.metrics["cohen_kappa"].note or "")
    empty = ag.compare(np.zeros(0, bool), np.zeros(0, bool), [], n_boot=100)
    assert empty.n_units == 0
    assert all(v.value is None for v in empty.metrics.values())
    assert empty.metrics["leniency_bias"].note == "no unit rated by both"


def test_bootstrap_is_the_part_one_bootstrap() -> None:
    """Same resamples (seeded multinomial task weights) → the same intervals as
    gradercal.stats.clustered_bootstrap for balanced F1 and Cohen's kappa."""
    rng = np.random.default_rng(3)
    n = 400
    task = rng.integers(0, 30, n)
    ref = rng.random(n) < 0.5
    cand = np.where(rng.random(n) < 0.85, ref, ~ref)
    c = ag.compare(cand, ref, list(task), n_boot=700, seed=11)
    ratings = pd.DataFrame(
        {
            "unit": np.repeat(np.arange(n), 2),
            "rater": np.tile(["J", "R"], n),
            "value": np.column_stack([cand, ref]).reshape(-1).astype(float),
            "task": np.repeat(task, 2),
        }
    )
    ref_boot = clustered_bootstrap(
        ratings,
        "task",
        ["balanced_f1", "cohen_kappa"],
        n_boot=700,
        seed=11,
        judge="J",
        reference="R",
        positive=1.0,
        categories=[0.0, 1.0],
    )
    for name in ("balanced_f1", "cohen_kappa"):
        mine, theirs = c.metrics[name], ref_boot[name]
        assert mine.value == pytest.approx(theirs.value, abs=1e-14)
        assert mine.ci_low == pytest.approx(theirs.ci_low, abs=1e-12)
        assert mine.ci_high == pytest.approx(theirs.ci_high, abs=1e-12)
        assert mine.n_valid == theirs.n_valid == 700


def test_mini_by_hand(mini: Frames) -> None:
    """tests/data/mini: humans ana and ben, judge judge-x, 10 judged units.

    Verdicts (ana, ben, judge): M1-a c1 TTT, c2 TFT, c3 FFF, c4 TTT; M1-b c1 FFT,
    c2 FFF, c3 TTF, c4 FFT; M2-a c1 TTT; M2-b c1 FTT. Two humans tie on M1-a/c2 and
    M2-b/c1, so the consensus decides 8 units.
    """
    ja = ag.judge_agreement(mini, "judge-x", n_boot=0)
    h = ja.headline
    # judge vs consensus on the 8 decided units:
    # TP: M1-a c1, c4, M2-a c1; FP: M1-b c1, c4; FN: M1-b c3; TN: M1-a c3, M1-b c2
    assert h.confusion == {"tp": 3, "fp": 2, "fn": 1, "tn": 2}
    assert h.n_units == 8
    assert h.n_undecided == 2
    assert h.metrics["leniency_bias"].value == pytest.approx((2 - 1) / 8)
    # p_o = 5/8; met rates 5/8 (judge), 4/8 (consensus): p_e = 5/8·1/2 + 3/8·1/2 = 1/2
    assert h.metrics["cohen_kappa"].value == pytest.approx((5 / 8 - 1 / 2) / (1 / 2))
    # leave-one-out with two humans: the "others" are the other human.
    (ana, ben) = ja.humans_as_judge
    assert ana.human == "ana"
    # ana vs ben: agree on 8 of 10 units; both say met on 5 → p_e = .5, kappa = .6
    assert ana.human_vs_others.metrics["percent_agreement"].value == pytest.approx(0.8)
    assert ana.human_vs_others.metrics["cohen_kappa"].value == pytest.approx(0.6)
    # judge vs ben on the same 10 units: TP 4, FP 3, FN 1, TN 2 → agreement 6/10
    assert ana.judge_vs_others.confusion == {"tp": 4, "fp": 3, "fn": 1, "tn": 2}
    assert ana.judge_vs_others.metrics["percent_agreement"].value == pytest.approx(0.6)
    # judge vs ana: ana says met on M1-a c1 c2 c4, M1-b c3, M2-a c1
    # TP: M1-a c1 c2 c4, M2-a c1 (4); FP: M1-b c1 c4, M2-b c1 (3); FN: M1-b c3; TN 2
    assert ben.judge_vs_others.confusion == {"tp": 4, "fp": 3, "fn": 1, "tn": 2}
    assert ja.human_range["percent_agreement"] == pytest.approx((0.8, 0.8))
    assert ja.judge_loo_mean["percent_agreement"] == pytest.approx(0.6)
    assert ja.within_human_range["percent_agreement"] is False
    hh = ag.human_agreement(mini, n_boot=0)
    assert hh.n_units == hh.n_units_paired == 10
    assert hh.statistics["percent_agreement"].value == pytest.approx(0.8)
    pairs = ag.pairwise_agreement(mini, n_boot=0)
    assert [(p.a, p.b) for p in pairs] == [("ana", "ben")]
    assert pairs[0].cohen_kappa.value == pytest.approx(0.6)


def test_mini_groups(mini: Frames) -> None:
    # Tags: M1 c1, c3 axis:accuracy; c2 axis:completeness; c4 axis:reasoning; M2 c1 none.
    rows = {r.group: r for r in ag.group_agreement(mini, "tag", judge="judge-x", n_boot=0)}
    assert list(rows) == ["axis:accuracy", "axis:completeness", "axis:reasoning", None]
    acc = rows["axis:accuracy"]
    # units M1-a c1 (TT), c3 (FF), M1-b c1 (FF), c3 (TT): humans agree on all 4
    assert acc.humans.n_units == 4
    assert acc.humans.statistics["percent_agreement"].value == 1.0
    assert acc.judge is not None
    # judge: M1-a c1 T=T, c3 F=F, M1-b c1 T≠F (FP), c3 F≠T (FN)
    assert acc.judge.confusion == {"tp": 1, "fp": 1, "fn": 1, "tn": 1}
    untagged = rows[None]
    assert untagged.humans.n_units == 2  # M2-a c1, M2-b c1
    by_criterion = ag.group_agreement(mini, "criterion", judge="judge-x", n_boot=500)
    assert [(r.task_id, r.group) for r in by_criterion] == [
        ("M1", "c1"),
        ("M1", "c2"),
        ("M1", "c3"),
        ("M1", "c4"),
        ("M2", "c1"),
    ]
    assert by_criterion[1].humans.statistics["percent_agreement"].value == pytest.approx(0.5)
    assert by_criterion[0].points == 6
    # one task per criterion: a single cluster, so no interval whatever n_boot says
    assert by_criterion[0].humans.statistics["percent_agreement"].ci_low is None


def test_human_statistics_match_independent_implementations(demo: Frames) -> None:
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    v = verdicts(demo, human_graders(demo))
    wide = v.pivot_table(index=["response_id", "criterion_id"], columns="grader", values="met")
    assert wide.notna().all().all()  # the demo is complete: 3 experts on every unit
    n_met = wide.sum(axis=1).to_numpy()
    table = np.column_stack([3 - n_met, n_met])
    hh = ag.human_agreement(demo, n_boot=0)
    assert hh.statistics["fleiss_kappa"].value == pytest.approx(sm_fleiss(table), abs=1e-12)
    import krippendorff

    alpha = krippendorff.alpha(
        reliability_data=wide.T.to_numpy(float), level_of_measurement="nominal"
    )
    assert hh.statistics["krippendorff_alpha"].value == pytest.approx(alpha, abs=1e-12)
    ratings = unit_ratings(v)
    assert hh.statistics["percent_agreement"].value == percent_agreement(ratings).value
    assert hh.statistics["fleiss_kappa"].value == fleiss_kappa(ratings).value


def test_pairwise_kappa_equals_scikit_learn(demo: Frames) -> None:
    v = verdicts(demo)
    wide = v.pivot_table(index=["response_id", "criterion_id"], columns="grader", values="met")
    pairs = ag.pairwise_agreement(demo, ["expert-ana", "expert-ben", "judge-gpt"], n_boot=0)
    assert len(pairs) == 3
    for p in pairs:
        a, b = wide[p.a].astype(bool), wide[p.b].astype(bool)
        assert p.cohen_kappa.value == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
        assert p.percent_agreement.value == pytest.approx(float((a == b).mean()), abs=1e-12)


def test_demo_report_shape(demo: Frames) -> None:
    rep = ag.agreement_report(demo, judge="judge-gpt", by="workflow", n_boot=200, seed=1)
    hj = rep["human_judge"]
    # the judge is more lenient than the experts on the demo (reference: the experts'
    # majority, or the final verdict where adjudications.jsonl has one; counted by hand)
    assert hj["confusion"] == {"tp": 174, "fp": 45, "fn": 18, "tn": 147}
    assert hj["metrics"]["leniency_bias"]["value"] == pytest.approx((45 - 18) / 384)
    assert hj["within_human_range"]["leniency_bias"] is False
    lo, hi = hj["metrics"]["leniency_bias"]["ci"]
    assert 0 < lo < (45 - 17) / 384 < hi
    assert len(hj["humans_as_judge"]) == 3
    assert {r["group"] for r in rep["groups"]["rows"]} == set(demo.tasks["workflow"])
    assert rep["bootstrap"]["n_boot"] == 200
    assert rep["human_human"]["overall"]["n_units_paired"] == 384


def test_judge_must_exist(mini: Frames) -> None:
    with pytest.raises(ValueError, match="no verdict"):
        ag.judge_agreement(mini, "nobody", n_boot=0)


def _simulate_study(
    rng: np.random.Generator, n_tasks: int, per_task: int, types: np.ndarray
) -> tuple:
    kind = rng.integers(0, len(types), n_tasks)
    cells = np.array([rng.choice(4, size=per_task, p=types[k]) for k in kind]).reshape(-1)
    tp, fp, fn = cells == 0, cells == 1, cells == 2
    cand = tp | fp
    ref = tp | fn
    return cand, ref, np.repeat(np.arange(n_tasks), per_task)


@pytest.mark.slow
def test_bootstrap_coverage_in_repeated_simulations() -> None:
    """95% task-clustered intervals cover the population value in 93–97% of 1000
    simulated studies (60 tasks × 10 criteria; tasks are 'easy' or 'hard' with their own
    cell probabilities, which correlates the criteria of a task)."""
    types = np.array(
        [
            [0.55, 0.08, 0.05, 0.32],  # easy task: TP, FP, FN, TN
            [0.25, 0.15, 0.10, 0.50],  # hard task
        ]
    )
    p = types.mean(axis=0)  # each type has probability 1/2, equal task sizes
    truth = {k: float(v) for k, v in ag.comparison_metrics(p).items()}
    rng = np.random.default_rng(2024)
    hits = dict.fromkeys(("leniency_bias", "balanced_f1", "cohen_kappa", "percent_agreement"), 0)
    n_sims = 1000
    for s in range(n_sims):
        cand, ref, task = _simulate_study(rng, 60, 10, types)
        c = ag.compare(cand, ref, list(task), n_boot=400, seed=s)
        for k in hits:
            b = c.metrics[k]
            assert b.ci_low is not None and b.ci_high is not None
            hits[k] += b.ci_low <= truth[k] <= b.ci_high
    for k, h in hits.items():
        assert 0.93 <= h / n_sims <= 0.97, (k, h / n_sims)
    assert math.isclose(truth["leniency_bias"], (p[1] - p[2]))


@pytest.mark.parametrize("bench", ["mini", "demo"])
def test_per_criterion_statistics_equal_gradercal_stats(
    bench: str, request: pytest.FixtureRequest
) -> None:
    """The vectorised per-criterion statistics equal gradercal.stats on each criterion,
    notes of undefined values included."""
    from gradercal.stats.catalogue import FIGURES, Options
    from gradercal.stats.coefficients.ratings import rating_table

    frames: Frames = request.getfixturevalue(bench)
    judge = judge_graders(frames)[0]
    rows = ag.group_agreement(frames, "criterion", judge=judge, n_boot=0)
    v = verdicts(frames, human_graders(frames))
    paired, _ = paired_units(frames, verdicts(frames, [judge]), judge, human_graders(frames))
    n_undefined = 0
    for r in rows[:40]:
        sub = v.loc[(v["task_id"] == r.task_id) & (v["criterion_id"] == r.group)]
        ratings = unit_ratings(sub)
        table = rating_table(ratings, [0.0, 1.0])
        for name in ag.HUMAN_STATISTICS:  # every statistic of the catalogue's view "human"
            compute = FIGURES[name].compute
            assert compute is not None
            expected = compute(table, Options(level="nominal"))
            got = r.humans.statistics[name]
            if expected.value is None:
                n_undefined += 1
                assert got.value is None and got.note == expected.note
            else:
                assert got.value == pytest.approx(expected.value, abs=1e-12)
        p = paired.loc[(paired["task_id"] == r.task_id) & (paired["criterion_id"] == r.group)]
        direct = ag.compare(p["candidate"], p["reference"], list(p["task_id"]), n_boot=0)
        assert r.judge is not None and r.judge.confusion == direct.confusion
    if bench == "demo":
        assert n_undefined > 0  # criteria on which every expert said the same thing
