"""gradercal.analysis.calibration: scikit-learn conventions (check_estimator), hand-worked
thresholds, independent cross-checks of the figures, persistence of the parameters, and
held-out improvement on a synthetic judge with a fixed leniency."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import brier_score_loss
from sklearn.utils.estimator_checks import check_estimator

from gradercal.analysis import calibration as cal
from gradercal.analysis.calibration.bootstrap import (
    _RANGES,
    _group_folds,
    _replicate_sums,
    criterion_features,
    make_design,
    refit_oof,
    response_features,
)
from gradercal.analysis.calibration.calibrators import _threshold_curve, _threshold_from_counts
from gradercal.analysis.calibration.crossfit import item_features, item_probabilities
from gradercal.analysis.scoring import response_scores
from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from tests.conftest import DATA, DEMO


@pytest.fixture(scope="module")
def demo() -> Frames:
    return frames_from_data(read_path(DEMO))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.SkipTestWarning")
@pytest.mark.parametrize(
    "estimator",
    [
        cal.ThresholdCalibrator(),
        cal.ThresholdCalibrator(metric="balanced_f1", per_group=True, min_group_size=5),
        cal.LeniencyCalibrator(),
        cal.LeniencyCalibrator(per_group=False),
        cal.ScoreCalibrator("isotonic", bounds=None),
        cal.ScoreCalibrator("platt", bounds=None),
    ],
    ids=lambda e: repr(e),
)
def test_scikit_learn_estimator_checks(estimator: object) -> None:
    """Every check of scikit-learn's check_estimator passes (on failure it raises).

    ScoreCalibrator is checked with ``bounds=None`` (targets of any range): the default
    bounds (0, 1) reject scikit-learn's generic regression targets on purpose."""
    check_estimator(estimator)


def test_conventions_of_fitted_attributes() -> None:
    est = cal.ThresholdCalibrator(metric="f1")
    assert est.get_params() == {"metric": "f1", "per_group": False, "min_group_size": 30}
    assert not hasattr(est, "threshold_")
    X = np.array([[0.1], [0.4], [0.6], [0.9]])
    assert est.fit(X, [0, 0, 1, 1]) is est
    assert est.n_features_in_ == 1
    with pytest.raises(ValueError, match="targets must lie in"):
        cal.ScoreCalibrator().fit(X, [0.0, 0.2, 1.5, 1.0])


def test_threshold_hand_worked() -> None:
    # scores 0.2 0.4 0.6 0.7 0.9, truth 0 0 0 1 1.
    # Candidates: 0.2 (all met), midpoints 0.3 0.5 0.65 0.8, and just above 0.9.
    # At t = 0.65: predictions 0 0 0 1 1 = truth → kappa 1, the unique maximum.
    X = np.array([[0.2], [0.4], [0.6], [0.7], [0.9]])
    est = cal.ThresholdCalibrator().fit(X, [0, 0, 0, 1, 1])
    assert est.threshold_ == pytest.approx(0.65)
    assert est.score_ == pytest.approx(1.0)
    assert est.predict(np.array([[0.64], [0.65], [0.66]])).tolist() == [0, 1, 1]
    assert est.decision_function(np.array([[0.75]]))[0] == pytest.approx(0.1)
    np.testing.assert_array_equal(est.predict_proba(np.array([[0.1], [0.8]])), [[1, 0], [0, 1]])
    # With truth 0 0 1 0 1 the best kappa is at 0.5 (TP 2, FP 1 → kappa 0.615…) vs
    # 0.8 (TP 1, FN 1 → 0.545…): po = 4/5 at 0.5, pe = .6·.4 + .4·.6 = .48
    est2 = cal.ThresholdCalibrator().fit(X, [0, 0, 1, 0, 1])
    assert est2.threshold_ == pytest.approx(0.5)
    assert est2.score_ == pytest.approx((0.8 - 0.48) / 0.52)


def test_threshold_per_group_falls_back_when_small() -> None:
    rng = np.random.default_rng(0)
    s = rng.random(200)
    g = np.repeat([0, 1], 100)
    y = np.where(g == 0, s > 0.3, s > 0.7).astype(int)
    X = np.column_stack([s, g])
    est = cal.ThresholdCalibrator(per_group=True, min_group_size=50).fit(X, y)
    assert est.group_thresholds_[0] == pytest.approx(0.3, abs=0.02)
    assert est.group_thresholds_[1] == pytest.approx(0.7, abs=0.02)
    small = cal.ThresholdCalibrator(per_group=True, min_group_size=101).fit(X, y)
    assert small.group_thresholds_ == {}


def test_leniency_matches_the_expert_met_rate() -> None:
    # Judge probabilities with a lenient judge: 8 of 10 said met (s ≥ .5), experts 5.
    s = np.array([0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.55, 0.3, 0.1])
    y = np.array([1, 1, 1, 1, 0, 1, 0, 0, 0, 0])
    est = cal.LeniencyCalibrator(per_group=False).fit(s[:, None], y)
    # the candidate whose met rate is closest to 5/10: midpoint of 0.8 and 0.75 (rate 4/10)
    # and of 0.75 and 0.7 (rate 5/10) → 0.725, met rate exactly 0.5
    assert est.threshold_ == pytest.approx(0.725)
    assert est.predict(s[:, None]).mean() == 0.5
    assert est.leniency_[-1] == pytest.approx(0.8 - 0.5)


def test_score_calibrators_against_independent_fits() -> None:
    rng = np.random.default_rng(5)
    x = rng.random(300)
    y = np.clip(0.8 * x**2 + 0.1 + rng.normal(0, 0.05, 300), 0, 1)
    iso = cal.ScoreCalibrator("isotonic").fit(x[:, None], y)
    ref = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(x, y)
    grid = np.linspace(-0.2, 1.2, 57)
    np.testing.assert_allclose(iso.predict(grid[:, None]), ref.predict(grid), atol=1e-12)
    platt = cal.ScoreCalibrator("platt").fit(x[:, None], y)

    def loss(ab: np.ndarray) -> float:
        p = 1 / (1 + np.exp(-(ab[0] * x + ab[1])))
        return -float(np.sum(y * np.log(p) + (1 - y) * np.log(1 - p)))

    opt = minimize(loss, np.zeros(2), method="BFGS", options={"gtol": 1e-10})
    assert platt.coef_ == pytest.approx(opt.x[0], abs=1e-3)
    assert platt.intercept_ == pytest.approx(opt.x[1], abs=1e-3)
    assert np.all((platt.predict(grid[:, None]) > 0) & (platt.predict(grid[:, None]) < 1))


def test_brier_ece_and_reliability() -> None:
    p = np.array([0.05, 0.15, 0.15, 0.85, 0.95, 1.0])
    y = np.array([0, 0, 1, 1, 1, 1])
    assert cal.brier_score(p, y) == pytest.approx(brier_score_loss(y, p))
    # bins: [0, .1): {0.05 → 0}; [.1, .2): {.15, .15 → 0, 1}; [.8, .9): {.85 → 1};
    # [.9, 1]: {.95, 1.0 → 1, 1}
    # ECE = (1·|.05 − 0| + 2·|.15 − .5| + 1·|.85 − 1| + 2·|.975 − 1|)/6 = (.05 + .7 + .15 + .05)/6
    assert cal.expected_calibration_error(p, y) == pytest.approx(0.95 / 6)
    table = cal.reliability_table(p, y)
    assert [b["n"] for b in table] == [1, 2, 0, 0, 0, 0, 0, 0, 1, 2]
    assert table[1]["mean_predicted"] == pytest.approx(0.15)
    assert table[1]["mean_observed"] == pytest.approx(0.5)
    assert table[2]["mean_predicted"] is None
    assert cal.brier_score([], []) is None and cal.expected_calibration_error([], []) is None


def test_raw_verdicts_reproduce_the_judge_scores(demo: Frames) -> None:
    items = cal.item_table(demo, "judge-gpt")
    assert len(items) == 384
    scored = cal.calibrated_response_scores(demo, items, items["judge_met"].astype(float))
    raw = response_scores(demo, "judge-gpt").set_index("response_id")["score"]
    np.testing.assert_allclose(
        scored.set_index("response_id")["score"].loc[raw.index], raw, atol=1e-15
    )
    # the judge's probability of met: confidence when it said met, 1 − confidence if not
    j = demo.judgments.loc[demo.judgments["grader"] == "judge-gpt"].iloc[0]
    row = items.loc[
        (items["response_id"] == j["response_id"]) & (items["criterion_id"] == j["criterion_id"])
    ]
    expected = j["confidence"] if j["met"] else 1 - j["confidence"]
    assert row["judge_score"].iloc[0] == pytest.approx(expected)


def test_mini_partial_credit_and_missing_verdicts() -> None:
    mini = frames_from_data(read_path(DATA / "mini"))
    items = cal.item_table(mini, "judge-x")
    scored = cal.calibrated_response_scores(mini, items, items["judge_met"].astype(float))
    raw = response_scores(mini, "judge-x").set_index("response_id")["score"]
    np.testing.assert_allclose(
        scored.set_index("response_id")["score"].loc[raw.index], raw, atol=1e-15
    )
    # dropping one judged item makes that response incomplete (NaN), never "not met"
    part = cal.calibrated_response_scores(
        mini, items.iloc[1:], items["judge_met"].iloc[1:].astype(float)
    )
    assert np.isnan(part.set_index("response_id").loc[items["response_id"].iloc[0], "score"])


@pytest.mark.parametrize("method", cal.METHODS)
def test_params_round_trip_through_json(demo: Frames, method: cal.Method) -> None:
    res = cal.fit_calibration(demo, "judge-gpt", method, n_boot=0)
    params = json.loads(json.dumps(res.params, allow_nan=False))
    rebuilt = cal.calibrator_from_params(params)
    if method in cal.CRITERION_METHODS:
        items = cal.item_table(demo, "judge-gpt")
        codes = {g: k for k, g in enumerate(params["groups"])}
        X = item_features(items, method, codes)
        np.testing.assert_array_equal(rebuilt.predict(X), res.estimator.predict(X))
    else:
        x = np.linspace(0, 1, 21)[:, None]
        np.testing.assert_allclose(rebuilt.predict(x), res.estimator.predict(x), atol=1e-15)
    applied = cal.apply_calibration(demo, "judge-gpt", params)
    assert len(applied) == 30 and applied["score"].notna().all()
    assert res.split["scheme"] == "GroupKFold" and len(res.split["folds"]) == 10
    assert res.provenance["humans"] == ["expert-ana", "expert-ben", "expert-chloe"]


def test_calibration_improves_held_out_agreement_with_a_lenient_judge(lenient: Frames) -> None:
    before_after = {}
    for method in ("threshold", "leniency"):
        res = cal.fit_calibration(lenient, "judge", method, tag_prefix="axis:", n_boot=300, seed=2)
        c = res.metrics["criterion"]
        before_after[method] = c
        # held out (GroupKFold by task), the calibrated judge agrees better with the experts
        assert c["after"]["cohen_kappa"]["value"] > c["before"]["cohen_kappa"]["value"] + 0.08
        assert c["change"]["cohen_kappa"]["ci"][0] > 0
        # and its leniency shrinks
        assert c["before"]["leniency_bias"]["value"] > 0.05
        assert abs(c["after"]["leniency_bias"]["value"]) < c["before"]["leniency_bias"]["value"] / 2
        r = res.metrics["response"]
        assert abs(r["after"]["mean_score_bias"]["value"]) < abs(
            r["before"]["mean_score_bias"]["value"]
        )
        assert r["after"]["mae"]["value"] < r["before"]["mae"]["value"]
    # the rate-matching correction removes the bias almost exactly
    assert abs(before_after["leniency"]["after"]["leniency_bias"]["value"]) < 0.02
    iso = cal.fit_calibration(lenient, "judge", "isotonic", n_boot=0)
    rb, ra = iso.metrics["response"]["before"], iso.metrics["response"]["after"]
    assert abs(ra["mean_score_bias"]["value"]) < abs(rb["mean_score_bias"]["value"]) / 4
    assert ra["ece"]["value"] < rb["ece"]["value"]


def test_too_little_data_is_refused(tmp_path: Path) -> None:
    mini = frames_from_data(read_path(DATA / "mini"))
    # mini has two tasks: enough for two folds of the criterion-level methods
    res = cal.fit_calibration(mini, "judge-x", "threshold", n_boot=0)
    assert res.split["n_splits"] == 2
    one_task = Frames(
        mini.pass_threshold,
        mini.tasks,
        mini.criteria,
        mini.responses,
        mini.judgments.loc[mini.judgments["response_id"].str.startswith("M1")],
        mini.adjudications,
    )
    with pytest.raises(ValueError, match="at least two tasks"):
        cal.fit_calibration(one_task, "judge-x", "threshold", n_boot=0)


def test_vote_share_of_several_judges() -> None:
    mini = frames_from_data(read_path(DATA / "mini"))
    # Two "judges" (ana and judge-x) against ben: the score is the share voting met and
    # the raw verdict the strict majority (a 1–1 split is not met).
    items = cal.item_table(mini, ["ana", "judge-x"], humans=["ben"])
    by = {(r.response_id, r.criterion_id): r for r in items.itertuples()}
    assert by[("M1-a", "c1")].judge_score == 1.0 and by[("M1-a", "c1")].judge_met
    split = by[("M1-b", "c1")]  # ana not met, judge-x met
    assert split.judge_score == 0.5 and not split.judge_met
    assert split.human_met == 0.0  # ben: not met
    assert len(items) == 10


# --------------------------------------------------------------------- held-out tasks


def _flip_human_labels(frames: Frames, tasks: set[str]) -> Frames:
    """The frames with every human verdict on ``tasks`` reversed (levels dropped)."""
    j = frames.judgments.copy()
    task_of = frames.responses.set_index("response_id")["task_id"]
    sel = (j["grader_kind"] == "human") & j["response_id"].map(task_of).isin(tasks).to_numpy()
    j.loc[sel, "met"] = ~j.loc[sel, "met"].astype(bool)
    j.loc[sel, "level"] = pd.NA
    return dataclasses.replace(frames, judgments=j)


@pytest.mark.parametrize("method", ["threshold", "leniency", "isotonic"])
def test_held_out_tasks_are_never_fitted_on(demo: Frames, method: cal.Method) -> None:
    res = cal.fit_calibration(demo, "judge-gpt", method, n_boot=0, holdout=0.3, seed=4)
    held = set(res.split["held_out"])
    folds = set(res.split["folds"])
    # ceil(0.3 · 10) = 3 of the demo's 10 human-graded tasks, disjoint from the folds
    assert len(held) == 3 and not held & folds and held | folds == set(demo.tasks["task_id"])
    assert res.split["holdout"] == 0.3 and res.split["seed"] == 4
    assert res.metrics["test"]["n_tasks"] == 3 and res.metrics["n_tasks"] == 7
    assert res.provenance["n_held_out_tasks"] == 3 and res.provenance["n_tasks"] == 7
    # Reverse every human verdict on the held-out tasks: the saved calibrator and the
    # out-of-fold figures stay exactly the same, only the test figures move.
    flipped = cal.fit_calibration(
        _flip_human_labels(demo, held), "judge-gpt", method, n_boot=0, holdout=0.3, seed=4
    )
    assert flipped.split == res.split
    assert flipped.params == res.params
    level = res.level
    assert flipped.metrics[level] == res.metrics[level]
    assert flipped.metrics["test"][level] != res.metrics["test"][level]
    # ... whereas reversing them on one calibration task changes the fit
    one = {sorted(folds)[0]}
    moved = cal.fit_calibration(
        _flip_human_labels(demo, one), "judge-gpt", method, n_boot=0, holdout=0.3, seed=4
    )
    assert moved.metrics[level] != res.metrics[level]


def test_held_out_draw_is_seeded(demo: Frames) -> None:
    tasks = sorted(demo.tasks["task_id"])
    draws = {}
    for seed in range(6):
        a = cal.fit_calibration(demo, "judge-gpt", "threshold", n_boot=20, holdout=0.25, seed=seed)
        b = cal.fit_calibration(demo, "judge-gpt", "threshold", n_boot=20, holdout=0.25, seed=seed)
        assert a.split == b.split and a.metrics == b.metrics and a.params == b.params
        # the documented draw: default_rng(seed).choice over the sorted task ids
        pick = np.random.default_rng(seed).choice(len(tasks), size=3, replace=False)
        assert a.split["held_out"] == sorted(tasks[i] for i in pick)
        draws[seed] = tuple(a.split["held_out"])
    assert len(set(draws.values())) > 1
    # the draw depends on the set of tasks only, not on their order
    assert cal.holdout_tasks(tasks[::-1], 0.25, 3) == list(draws[3])


def test_test_metrics_equal_an_independent_recomputation(demo: Frames) -> None:
    from sklearn.metrics import (
        accuracy_score,
        cohen_kappa_score,
        f1_score,
        mean_absolute_error,
        mean_squared_error,
    )

    res = cal.fit_calibration(
        demo, "judge-gpt", "threshold", n_boot=200, seed=7, holdout=0.4, per_group=False
    )
    held = set(res.split["held_out"])
    t = res.params["threshold"]
    # Independent data: each expert's verdict (the level rule) and the strict majority.
    j = demo.judgments.merge(demo.responses[["response_id", "task_id"]], on="response_id")
    j = j.merge(demo.criteria[["task_id", "criterion_id", "levels", "kind"]])
    j = j.loc[j["task_id"].isin(held) & (j["kind"] != "auto")]
    # a levelled verdict is "met" at the top level only
    top = j["levels"] - 1
    j["met"] = np.where(j["level"].isna(), j["met"].astype(bool), j["level"].fillna(-1) == top)
    human = j.loc[j["grader_kind"] == "human"].groupby(["response_id", "criterion_id"])
    share = human["met"].mean()
    judge = j.loc[j["grader"] == "judge-gpt"].set_index(["response_id", "criterion_id"])
    both = judge.join(share.rename("share"), how="inner")
    # an adjudicated item's reference is the final verdict, whatever the experts' split
    final = demo.adjudications.set_index(["response_id", "criterion_id"])["met"]
    both = both.join(final.astype(bool).rename("final"), how="left")
    decided = both["final"].notna()
    both = both.loc[decided | (both["share"] != 0.5)]  # a tie is no consensus
    y = np.where(
        both["final"].notna(), both["final"].fillna(False).astype(bool), both["share"] > 0.5
    ).astype(int)
    met = both["met"].to_numpy(bool)
    s = np.where(met, both["confidence"], 1 - both["confidence"])
    s = np.where(np.isnan(both["confidence"]), met.astype(float), s)
    raw, calibrated = met.astype(int), (s >= t).astype(int)
    test = res.metrics["test"]
    assert test["n_items"] == len(y) and test["n_tasks"] == 4
    for tag, pred, p in (("before", raw, s), ("after", calibrated, calibrated.astype(float))):
        fig = test["criterion"][tag]
        assert fig["cohen_kappa"]["value"] == pytest.approx(cohen_kappa_score(y, pred))
        assert fig["percent_agreement"]["value"] == pytest.approx(accuracy_score(y, pred))
        assert fig["balanced_f1"]["value"] == pytest.approx(f1_score(y, pred, average="macro"))
        assert fig["leniency_bias"]["value"] == pytest.approx(pred.mean() - y.mean())
        assert fig["brier"]["value"] == pytest.approx(brier_score_loss(y, p))
        bins = np.minimum((p * 10).astype(int), 9)
        ece = sum(
            abs(p[bins == b].mean() - y[bins == b].mean()) * (bins == b).sum()
            for b in np.unique(bins)
        ) / len(p)
        assert fig["ece"]["value"] == pytest.approx(ece)
        assert fig["cohen_kappa"]["ci"] is not None  # task-clustered bootstrap, 4 tasks
    change = test["criterion"]["change"]["cohen_kappa"]["value"]
    assert change == pytest.approx(cohen_kappa_score(y, calibrated) - cohen_kappa_score(y, raw))
    # response level: an isotonic map's test figures against rubric scores from scoring
    iso = cal.fit_calibration(demo, "judge-gpt", "isotonic", n_boot=0, seed=7, holdout=0.4)
    assert iso.split["held_out"] == res.split["held_out"]
    js = response_scores(demo, "judge-gpt").set_index("response_id")
    hs = response_scores(demo, "consensus").set_index("response_id")
    keep = js.index[js["task_id"].isin(held)]
    x, h = js.loc[keep, "score"].to_numpy(float), hs.loc[keep, "score"].to_numpy(float)
    g = iso.estimator.predict(x[:, None])
    r = iso.metrics["test"]["response"]
    assert iso.metrics["test"]["n_responses"] == len(keep) == 12
    assert r["after"]["mean_score_bias"]["value"] == pytest.approx(np.mean(g - h))
    assert r["after"]["mae"]["value"] == pytest.approx(mean_absolute_error(h, g))
    assert r["after"]["rmse"]["value"] == pytest.approx(np.sqrt(mean_squared_error(h, g)))
    assert r["before"]["mae"]["value"] == pytest.approx(mean_absolute_error(h, x))
    cut = demo.pass_threshold - 1e-9
    assert r["after"]["pass_agreement"]["value"] == pytest.approx(
        accuracy_score(h >= cut, g >= cut)
    )


def test_calibration_improves_agreement_on_held_out_tasks(lenient: Frames) -> None:
    res = cal.fit_calibration(
        lenient, "judge", "threshold", tag_prefix="axis:", n_boot=0, holdout=0.25, seed=3
    )
    test = res.metrics["test"]["criterion"]
    assert res.metrics["test"]["n_tasks"] == 10
    # 10 tasks nothing was fitted on: the lenient judge, corrected, agrees better
    assert test["after"]["cohen_kappa"]["value"] > test["before"]["cohen_kappa"]["value"] + 0.05
    assert abs(test["after"]["leniency_bias"]["value"]) < test["before"]["leniency_bias"]["value"]


def test_too_few_tasks_for_a_held_out_split(demo: Frames) -> None:
    mini = frames_from_data(read_path(DATA / "mini"))
    with pytest.raises(ValueError, match="at least 4 tasks; found 2"):
        cal.fit_calibration(mini, "judge-x", "threshold", n_boot=0, holdout=0.25)
    res = cal.fit_calibration(
        mini, "judge-x", "threshold", n_boot=0, holdout=0.25, strict_holdout=False
    )
    assert res.split["held_out"] == [] and res.metrics["test"] is None
    assert res.warnings and "nothing held out" in res.warnings[0]
    with pytest.raises(ValueError, match=r"reserves 9 of the 10 .* leaves 1"):
        cal.fit_calibration(demo, "judge-gpt", "threshold", n_boot=0, holdout=0.85)
    for bad in (1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match=r"in \[0, 1\)"):
            cal.holdout_tasks(["a", "b", "c", "d"], bad)
    assert cal.holdout_tasks(["a", "b", "c", "d"], 0.01) != []  # at least one task


# ------------------------------------------------- the bootstrap of the whole cross-fit


def test_group_folds_are_those_of_group_kfold() -> None:
    from sklearn.model_selection import GroupKFold

    rng = np.random.default_rng(3)
    for _ in range(30):
        n, k = int(rng.integers(2, 40)), int(rng.integers(2, 7))
        k = min(k, n)
        sizes = rng.integers(1, 6, n)  # ties on purpose
        names = np.array([f"t{i:02d}" for i in range(n)])
        groups = np.repeat(names, sizes)
        ref = np.empty(n, dtype=int)
        for f, (_, test) in enumerate(GroupKFold(k).split(groups, groups=groups)):
            ref[np.isin(names, groups[test])] = f
        np.testing.assert_array_equal(_group_folds(sizes.astype(float), k), ref)


@pytest.mark.parametrize("metric", ["kappa", "f1", "balanced_f1", "rate"])
def test_thresholds_from_counts_equal_the_fit_on_copies(metric: str) -> None:
    rng = np.random.default_rng(8)
    for _ in range(20):
        s = np.round(rng.random(40), 1)
        y = rng.random(40) < s
        w = rng.integers(0, 4, 40)
        if w.sum() == 0:
            continue
        values, code = np.unique(s, return_inverse=True)
        cnt = np.bincount(code, weights=w, minlength=len(values))
        pos = np.bincount(code, weights=w * y, minlength=len(values))
        copies = np.repeat(np.arange(40), w)
        expected = _threshold_curve(s[copies], y[copies], metric)[0]
        assert _threshold_from_counts(values, cnt, pos, metric) == expected


@pytest.mark.parametrize("method", cal.METHODS)
def test_the_resampled_cross_fit_with_unit_weights_is_the_cross_fit(
    demo: Frames, method: cal.Method
) -> None:
    """Redoing the cross-fit with every task drawn once gives the cross-fit's own
    out-of-fold predictions and feature sums (Platt: Newton's optimum against
    LogisticRegression's, to the latter's tolerance)."""
    cf = cal.cross_fit(demo, "judge-gpt", method, holdout=0.3, seed=4, tag_prefix="axis:")
    d = cf.design
    assert d is not None and d.n_tasks == 7
    fit = refit_oof(d, np.ones(d.n_tasks))
    assert fit is not None
    ref = (cf.items if cf.items is not None else cf.responses)["oof"].to_numpy(float)
    np.testing.assert_array_equal(np.isnan(fit[0]), np.isnan(ref))
    tol = 1e-3 if method == "platt" else 0.0
    np.testing.assert_allclose(fit[0][~np.isnan(ref)], ref[~np.isnan(ref)], atol=tol, rtol=0)
    sums = _replicate_sums(d, np.ones(d.n_tasks))
    assert sums is not None
    if cf.items is not None:
        np.testing.assert_allclose(sums[0], criterion_features(cf.items)[1].sum(0))
    resp = response_features(cf.responses, demo.pass_threshold)[1].sum(0)
    np.testing.assert_allclose(sums[1], resp, atol=2e-3 if method == "platt" else 1e-9)


def test_a_resample_is_the_cross_fit_of_the_copied_tasks() -> None:
    """Weights w are w copies of a task (kept in one fold): the same predictions as
    scikit-learn's GroupKFold and ThresholdCalibrator on explicitly copied rows."""
    from sklearn.model_selection import GroupKFold

    rng = np.random.default_rng(11)
    s = np.round(rng.random(120), 2)
    y = (rng.random(120) < 0.3 + 0.4 * s).astype(float)
    task = np.repeat([f"T{i}" for i in range(12)], 10)
    d = make_design(
        "threshold", False, "kappa", 5, task.astype(object), s[:, None], y, np.ones(120, bool)
    )
    for _ in range(5):
        w = rng.multinomial(12, np.full(12, 1 / 12)).astype(float)
        fit = refit_oof(d, w)
        assert fit is not None
        rows = np.repeat(np.arange(120), w[d.row_task].astype(int))
        expected = np.full(120, np.nan)
        for train, test in GroupKFold(5).split(rows, groups=task[rows]):
            est = cal.ThresholdCalibrator().fit(s[rows[train], None], y[rows[train]].astype(int))
            expected[rows[test]] = item_probabilities(est, s[rows[test], None])
        np.testing.assert_array_equal(fit[0], expected)


def test_calibrate_reports_the_refit_interval(demo: Frames) -> None:
    refit = cal.fit_calibration(demo, "judge-gpt", "threshold", n_boot=200, holdout=0.3)
    fixed = cal.fit_calibration(
        demo, "judge-gpt", "threshold", n_boot=200, holdout=0.3, oof_interval="fixed"
    )
    boot = refit.metrics["bootstrap"]
    assert boot["oof_interval"] == "refit" and boot["test_interval"] == "fixed"
    assert fixed.metrics["bootstrap"]["oof_interval"] == "fixed"
    # same point estimates, and the raw judge's intervals (nothing fitted) are the same
    # task bootstrap; the calibrated figures' intervals now include the refitting
    for level in ("criterion", "response"):
        a, b = refit.metrics[level], fixed.metrics[level]
        for tag in ("before", "after", "change"):
            for key in a[tag]:
                assert a[tag][key]["value"] == b[tag][key]["value"]
        for key in a["before"]:
            np.testing.assert_allclose(a["before"][key]["ci"], b["before"][key]["ci"], atol=1e-12)
    assert refit.metrics["criterion"]["after"] != fixed.metrics["criterion"]["after"]
    assert refit.metrics["test"] == fixed.metrics["test"]
    for level in ("criterion", "response"):
        for tag in ("before", "after", "change"):
            for key, fig in refit.metrics[level][tag].items():
                lo, hi = _RANGES[key]
                if tag == "change":
                    lo, hi = lo - hi, hi - lo
                assert fig["ci"] is None or lo <= fig["ci"][0] <= fig["ci"][1] <= hi
    with pytest.raises(ValueError, match="oof_interval"):
        cal.fit_calibration(demo, "judge-gpt", n_boot=0, oof_interval="nested")  # type: ignore[arg-type]
