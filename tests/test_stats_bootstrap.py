"""Cluster bootstrap: exact point estimates, per-resample equality with naive
recomputation, seeding, interval methods, coverage."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy.special import ndtr, ndtri

from gradercal.stats import (
    BOOTSTRAP_STATISTICS,
    LEVELS,
    balanced_f1,
    bootstrap_replicates,
    cluster_labels,
    clustered_bootstrap,
    rating_statistics,
    resampling_weights,
)
from gradercal.stats import coefficients as co
from gradercal.stats.bootstrap import _design, _estimator, _options


def synthetic(
    n_tasks: int = 12,
    units_per_task: int = 5,
    raters: tuple[str, ...] = ("a", "b", "c", "judge"),
    q: int = 3,
    missing: float = 0.15,
    seed: int = 0,
) -> pd.DataFrame:
    """Clustered ordinal ratings with task-level agreement and some missing ratings."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_tasks):
        p_agree = rng.beta(4, 2)
        for u in range(units_per_task):
            truth = rng.integers(0, q)
            for r in raters:
                if rng.random() < missing:
                    continue
                v = truth if rng.random() < p_agree else rng.integers(0, q)
                rows.append((f"t{t}-u{u}", r, float(v), f"t{t}"))
    return pd.DataFrame(rows, columns=["unit", "rater", "value", "task"])


def replicate_frame(df: pd.DataFrame, cluster_col: str, counts: np.ndarray) -> pd.DataFrame:
    """The resampled ratings built naively with pandas: cluster c copied counts[c] times."""
    labels = cluster_labels(df, cluster_col)
    parts = []
    for c, label in enumerate(labels):
        block = df[df[cluster_col] == label]
        for copy in range(int(counts[c])):
            parts.append(block.assign(unit=block["unit"] + f"#{copy}"))
    return pd.concat(parts, ignore_index=True)


def direct(df: pd.DataFrame, name: str, **kw: Any) -> float | None:
    """A statistic computed directly with the public coefficient functions."""
    if name == "balanced_f1":
        return balanced_f1(
            df,
            judge=kw["judge"],
            reference=kw["reference"],
            positive=kw["positive"],
            categories=kw["categories"],
        ).value
    pair = (kw["judge"], kw["reference"]) if kw.get("judge") else None
    t = co.RatingTable.from_frame(df, kw.get("categories"))
    w = kw.get("weights")
    fns = {
        "percent_agreement": lambda: co.percent_agreement(t),
        "weighted_percent_agreement": lambda: co.percent_agreement(t, weights=w),
        "cohen_kappa": lambda: co.cohen_kappa(t, weights=w, raters=pair),
        "scott_pi": lambda: co.scott_pi(t, raters=pair),
        "bennett_s": lambda: co.bennett_s(t),
        "fleiss_kappa": lambda: co.fleiss_kappa(t),
        "krippendorff_alpha": lambda: co.krippendorff_alpha(t, level=kw["level"]),
        "gwet_ac1": lambda: co.gwet_ac1(t),
        "gwet_ac2": lambda: co.gwet_ac2(t, weights=w),
        "pearson_r": lambda: co.pearson_r(t, raters=pair),
        "spearman_rho": lambda: co.spearman_rho(t, raters=pair),
        "kendall_tau": lambda: co.kendall_tau(t, raters=pair),
    }
    if name in co.ICC_KINDS:
        return co.intraclass_correlations(t)[name].value
    return fns[name]().value


CATEGORICAL = [s for s in BOOTSTRAP_STATISTICS if s not in co.ICC_KINDS and s != "balanced_f1"]


# ---------------------------------------------------------------------------------------
# point estimates and per-resample values
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_point_estimate_identical_to_direct_computation(level: str, weights: str | None) -> None:
    df = synthetic(seed=1)
    kw = {"level": level, "weights": weights, "judge": "judge", "reference": "a"}
    ones = np.ones((1, len(cluster_labels(df, "task"))))
    got = bootstrap_replicates(
        df,
        CATEGORICAL,
        ones,
        cluster_col="task",
        level=level,  # type: ignore[arg-type]
        agreement_weights=weights,  # type: ignore[arg-type]
        judge="judge",
        reference="a",
    )
    for name in CATEGORICAL:
        expected = direct(df, name, **kw)
        assert expected is not None, name
        assert got[name][0] == pytest.approx(expected, rel=1e-13, abs=1e-14), name
    # and the reported value *is* the direct computation
    boot = clustered_bootstrap(
        df,
        "task",
        CATEGORICAL,
        n_boot=20,
        level=level,  # type: ignore[arg-type]
        weights=weights,  # type: ignore[arg-type]
        judge="judge",
        reference="a",
    )
    for name in CATEGORICAL:
        assert boot[name].value == direct(df, name, **kw), name


def test_point_estimates_match_rating_statistics_without_clusters() -> None:
    df = synthetic(seed=2).drop(columns="task")
    keys = list(co.statistic_keys("ordinal", "quadratic"))
    keys.remove("cohen_kappa")  # needs two raters
    keys.remove("scott_pi")
    for k in ("spearman_rho", "kendall_tau"):
        keys.remove(k)
    boot = clustered_bootstrap(df, None, keys, n_boot=10, level="ordinal", weights="quadratic")
    ref = rating_statistics(df, "ordinal", "quadratic")
    for key in keys:
        assert boot[key].value == ref[key].value
        assert boot[key].n_clusters == df["unit"].nunique()  # each unit its own cluster


def test_icc_and_pearson_point_estimates_on_complete_data() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 1)) + rng.normal(size=(40, 3)) * 0.7 + 5.0
    rows = [(f"u{i}", f"r{j}", x[i, j], f"t{i // 4}") for i in range(40) for j in range(3)]
    df = pd.DataFrame(rows, columns=["unit", "rater", "value", "task"])
    names = list(co.ICC_KINDS)
    got = bootstrap_replicates(df, names, np.ones((1, 10)), cluster_col="task", level="interval")
    icc = co.intraclass_correlations(df)
    for name in names:
        assert got[name][0] == pytest.approx(icc[name].value, rel=1e-12), name
    two = df[df["rater"] != "r2"]
    r = bootstrap_replicates(two, ["pearson_r"], np.ones((1, 10)), cluster_col="task")
    assert r["pearson_r"][0] == pytest.approx(co.pearson_r(two).value, rel=1e-12)


@pytest.mark.parametrize("level", LEVELS)
def test_each_resample_equals_naive_recomputation(level: str) -> None:
    df = synthetic(n_tasks=8, units_per_task=4, seed=4)
    labels = cluster_labels(df, "task")
    weights = resampling_weights(len(labels), 12, np.random.default_rng(11))
    kw = {
        "level": level,
        "weights": "linear",
        "judge": "judge",
        "reference": "a",
        "categories": [0.0, 1.0, 2.0],
    }
    fast = bootstrap_replicates(
        df,
        CATEGORICAL,
        weights,
        cluster_col="task",
        level=level,  # type: ignore[arg-type]
        agreement_weights="linear",
        categories=[0, 1, 2],
        judge="judge",
        reference="a",
    )
    for b, row in enumerate(weights):
        resample = replicate_frame(df, "task", row)
        for name in CATEGORICAL:
            expected = direct(resample, name, **kw)
            if expected is None:
                assert np.isnan(fast[name][b]), (name, b)
            else:
                assert fast[name][b] == pytest.approx(expected, rel=1e-12, abs=1e-13), (name, b)


def test_balanced_f1_and_icc_resamples_equal_naive() -> None:
    rng = np.random.default_rng(5)
    rows = []
    for t in range(9):
        for u in range(4):
            truth = rng.random() < 0.5
            for r in ("judge", "ref", "x"):
                v = truth if rng.random() < 0.8 else not truth
                rows.append((f"{t}/{u}", r, float(v), f"t{t}"))
    df = pd.DataFrame(rows, columns=["unit", "rater", "value", "task"])
    weights = resampling_weights(9, 10, 3)
    names = ["balanced_f1", *co.ICC_KINDS]
    fast = bootstrap_replicates(
        df,
        names,
        weights,
        cluster_col="task",
        level="interval",
        judge="judge",
        reference="ref",
        positive=1,
        categories=[0, 1],
    )
    kw = {"judge": "judge", "reference": "ref", "positive": 1, "categories": [0, 1]}
    for b, row in enumerate(weights):
        resample = replicate_frame(df, "task", row)
        for name in names:
            expected = direct(resample, name, **kw)
            got = fast[name][b]
            if expected is None:
                assert np.isnan(got)
            else:
                assert got == pytest.approx(expected, rel=1e-10, abs=1e-12), (name, b)


def test_many_categories_use_moment_and_recompute_paths() -> None:
    rng = np.random.default_rng(6)
    truth = rng.integers(0, 100, 60)
    rows = [
        (f"u{i}", r, float(truth[i] + rng.integers(-3, 4)), f"t{i // 6}")
        for i in range(60)
        for r in ("a", "b", "c")
        if rng.random() > 0.1
    ]
    df = pd.DataFrame(rows, columns=["unit", "rater", "value", "task"])
    weights = resampling_weights(10, 5, 1)
    for level in ("nominal", "interval", "ordinal", "ratio"):
        d = _design(df, "task", None)
        assert d.table.q > 64
        est = _estimator(d, "krippendorff_alpha", _options(level, None, None, None, True))  # type: ignore[arg-type]
        assert est.fast == (level in ("nominal", "interval"))
        fast = bootstrap_replicates(
            df, ["krippendorff_alpha"], weights, cluster_col="task", level=level
        )  # type: ignore[arg-type]
        for b, row in enumerate(weights):
            expected = co.krippendorff_alpha(replicate_frame(df, "task", row), level=level).value  # type: ignore[arg-type]
            assert fast["krippendorff_alpha"][b] == pytest.approx(expected, rel=1e-11), (level, b)


# ---------------------------------------------------------------------------------------
# resampling, seeding, intervals
# ---------------------------------------------------------------------------------------


def test_resampling_weights_are_seeded_multinomial_draws() -> None:
    w = resampling_weights(7, 50, 42)
    assert w.shape == (50, 7)
    assert (w.sum(axis=1) == 7).all()
    expected = np.random.default_rng(42).multinomial(7, [1 / 7] * 7, size=50)
    np.testing.assert_array_equal(w, expected)


def test_same_seed_same_intervals_different_seed_different() -> None:
    df = synthetic(seed=7)
    a = clustered_bootstrap(df, "task", n_boot=300, seed=5)
    b = clustered_bootstrap(df, "task", n_boot=300, seed=5)
    c = clustered_bootstrap(df, "task", n_boot=300, seed=6)
    assert a == b
    assert a["fleiss_kappa"].ci_low != c["fleiss_kappa"].ci_low
    res = a["fleiss_kappa"]
    assert res.n_boot == 300
    assert res.n_clusters == 12
    assert res.n_valid == 300
    assert res.ci_low is not None
    assert res.ci_high is not None
    assert res.ci_low < res.value < res.ci_high  # type: ignore[operator]
    assert res.note == "only 12 clusters: bootstrap intervals are unreliable"


def test_percentile_interval_is_quantile_of_replicates() -> None:
    df = synthetic(n_tasks=25, seed=8)
    n_c = len(cluster_labels(df, "task"))
    res = clustered_bootstrap(df, "task", ["gwet_ac1"], n_boot=400, ci=0.9, seed=3)["gwet_ac1"]
    reps = bootstrap_replicates(
        df, ["gwet_ac1"], resampling_weights(n_c, 400, 3), cluster_col="task"
    )
    lo, hi = np.quantile(reps["gwet_ac1"], [(1 - 0.9) / 2, (1 + 0.9) / 2])
    assert (res.ci_low, res.ci_high) == (lo, hi)
    assert res.note is None


def test_bca_interval_transcribes_efron() -> None:
    df = synthetic(n_tasks=30, seed=9)
    n_c = len(cluster_labels(df, "task"))
    res = clustered_bootstrap(df, "task", ["krippendorff_alpha"], n_boot=500, seed=2, method="bca")[
        "krippendorff_alpha"
    ]
    assert res.method == "bca"
    theta = res.value
    assert theta is not None
    reps = bootstrap_replicates(
        df, ["krippendorff_alpha"], resampling_weights(n_c, 500, 2), cluster_col="task"
    )["krippendorff_alpha"]
    jack = bootstrap_replicates(
        df, ["krippendorff_alpha"], np.ones((n_c, n_c)) - np.eye(n_c), cluster_col="task"
    )["krippendorff_alpha"]
    # Efron & Tibshirani (1993), (14.14)-(14.15)
    z0 = ndtri((np.sum(reps < theta) + 0.5 * np.sum(reps == theta)) / len(reps))
    dev = jack.mean() - jack
    a = np.sum(dev**3) / (6 * np.sum(dev**2) ** 1.5)
    levels = [ndtr(z0 + (z0 + z) / (1 - a * (z0 + z))) for z in (ndtri(0.025), ndtri(0.975))]
    lo, hi = np.quantile(reps, levels)
    assert res.ci_low == pytest.approx(lo, abs=1e-14)
    assert res.ci_high == pytest.approx(hi, abs=1e-14)
    pct = clustered_bootstrap(df, "task", ["krippendorff_alpha"], n_boot=500, seed=2)
    assert (pct["krippendorff_alpha"].ci_low, pct["krippendorff_alpha"].ci_high) != (
        res.ci_low,
        res.ci_high,
    )


def test_undefined_resamples_are_excluded_and_counted() -> None:
    # Two raters agree on "1" everywhere except in one task: resamples without that task
    # have a single category, so kappa is undefined there.
    rows = []
    for t in range(6):
        for u in range(3):
            a = b = 1
            if t == 0 and u == 0:
                a, b = 0, 0
            if t == 0 and u == 1:
                a, b = 0, 1
            rows += [(f"{t}/{u}", "A", a, f"t{t}"), (f"{t}/{u}", "B", b, f"t{t}")]
    df = pd.DataFrame(rows, columns=["unit", "rater", "value", "task"])
    res = clustered_bootstrap(df, "task", ["cohen_kappa"], n_boot=200, seed=1)["cohen_kappa"]
    weights = resampling_weights(6, 200, 1)
    without_t0 = int(np.sum(weights[:, 0] == 0))
    assert without_t0 > 0
    assert res.n_valid == 200 - without_t0
    assert res.note is not None
    assert f"{without_t0} of 200 resamples undefined and excluded" in res.note
    assert res.ci_low is not None


def test_undefined_point_gives_no_interval() -> None:
    df = synthetic(seed=10)
    res = clustered_bootstrap(df, "task", ["cohen_kappa"], n_boot=50)["cohen_kappa"]
    assert res.value is None
    assert res.ci_low is None
    assert res.note == "needs exactly two raters (found 4)"
    f1 = clustered_bootstrap(df, "task", ["balanced_f1"], n_boot=50)["balanced_f1"]
    assert f1.note == "balanced F1 needs judge= and reference="


def test_validation() -> None:
    df = synthetic(seed=11)
    with pytest.raises(ValueError, match="cluster column"):
        clustered_bootstrap(df, "nope")
    bad = df.copy()
    bad.loc[bad.index[0], "task"] = "elsewhere"
    with pytest.raises(ValueError, match="more than one 'task' cluster"):
        clustered_bootstrap(bad, "task")
    with pytest.raises(ValueError, match="unknown statistics"):
        clustered_bootstrap(df, "task", ["kappa"])
    with pytest.raises(ValueError, match="ci must be"):
        clustered_bootstrap(df, "task", ci=1.5)
    with pytest.raises(ValueError, match="both judge and reference"):
        clustered_bootstrap(df, "task", ["cohen_kappa"], judge="a")
    with pytest.raises(ValueError, match="columns for"):
        bootstrap_replicates(df, ["percent_agreement"], np.ones((1, 3)), cluster_col="task")


# ---------------------------------------------------------------------------------------
# coverage
# ---------------------------------------------------------------------------------------


def _coverage_data(rng: np.random.Generator, n_clusters: int, m: int) -> pd.DataFrame:
    """Two raters; cluster c agrees on each unit with probability p_c ~ Beta(8, 2).

    The population percent agreement is E[p_c] = 0.8 exactly (equal cluster sizes).
    Units of a cluster are correlated (intra-cluster correlation ≈ 0.09).
    """
    p = rng.beta(8.0, 2.0, size=n_clusters)
    agree = rng.random((n_clusters, m)) < p[:, None]
    a = rng.integers(0, 2, size=(n_clusters, m))
    b = np.where(agree, a, 1 - a)
    units = [f"{c}/{u}" for c in range(n_clusters) for u in range(m)]
    clusters = [f"c{c}" for c in range(n_clusters) for _ in range(m)]
    return pd.DataFrame(
        {
            "unit": units * 2,
            "rater": ["A"] * len(units) + ["B"] * len(units),
            "value": np.concatenate([a.ravel(), b.ravel()]),
            "task": clusters * 2,
        }
    )


@pytest.mark.slow
def test_coverage_cluster_vs_unit_bootstrap() -> None:
    # 200 simulated studies, 40 clusters × 10 units: the 95 % task-clustered percentile
    # interval should cover the true 0.8 about 95 % of the time (a little less with 40
    # clusters); resampling units ignores the within-task correlation (design effect
    # ≈ 1 + 9 × 0.09 ≈ 1.8) and under-covers (≈ 85 %).
    rng = np.random.default_rng(2024)
    cluster_hits = unit_hits = 0
    reps = 200
    for i in range(reps):
        df = _coverage_data(rng, 40, 10)
        by_task = clustered_bootstrap(df, "task", ["percent_agreement"], n_boot=400, seed=i)
        by_unit = clustered_bootstrap(df, None, ["percent_agreement"], n_boot=400, seed=i)
        ct, ut = by_task["percent_agreement"], by_unit["percent_agreement"]
        assert ct.ci_low is not None and ct.ci_high is not None
        assert ut.ci_low is not None and ut.ci_high is not None
        cluster_hits += ct.ci_low <= 0.8 <= ct.ci_high
        unit_hits += ut.ci_low <= 0.8 <= ut.ci_high
    cluster_cov, unit_cov = cluster_hits / reps, unit_hits / reps
    assert 0.88 <= cluster_cov <= 0.99, cluster_cov
    assert unit_cov < cluster_cov - 0.04, (unit_cov, cluster_cov)
