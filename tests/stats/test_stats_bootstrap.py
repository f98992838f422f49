"""Cluster bootstrap: exact point estimates, per-resample equality with naive
recomputation, seeding, interval methods (the expanded percentile by hand), BCa's
jackknife without an n × n matrix, coverage."""

from __future__ import annotations

import math
import tracemalloc
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
    statistic_keys,
)
from gradercal.stats import bootstrap as bs
from gradercal.stats import coefficients as co
from gradercal.stats.bootstrap import _design, _estimator, _options, interval_levels
from gradercal.stats.intervals import percentile_bounds, percentile_interval


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
        "conger_kappa": lambda: co.conger_kappa(t),
        "light_kappa": lambda: co.light_kappa(t),
        "weighted_scott_pi": lambda: co.scott_pi(t, weights=w, raters=pair),
        "weighted_conger_kappa": lambda: co.conger_kappa(t, weights=w),
        "weighted_fleiss_kappa": lambda: co.fleiss_kappa(t, weights=w),
        "weighted_bennett_s": lambda: co.bennett_s(t, weights=w),
        "weighted_krippendorff_alpha": lambda: co.weighted_krippendorff_alpha(t, weights=w),
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
    keys = [k for k in statistic_keys("ordinal", "quadratic") if k in BOOTSTRAP_STATISTICS]
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


def counted_draws(n_clusters: int, n_boot: int, seed: int) -> np.ndarray:
    """The weights as documented, counted one resample at a time: each resample draws
    ``n_clusters`` cluster indices with ``default_rng(seed).integers`` (32-bit), in order."""
    gen = np.random.default_rng(seed)
    drawn = gen.integers(0, n_clusters, size=(n_boot, n_clusters), dtype=np.int32)
    out = np.zeros((n_boot, n_clusters), dtype=np.int64)
    for b in range(n_boot):
        for k in drawn[b]:
            out[b, k] += 1
    return out


def test_resampling_weights_count_seeded_uniform_draws() -> None:
    w = resampling_weights(7, 50, 42)
    assert w.shape == (50, 7)
    assert w.dtype == np.int64
    assert (w.sum(axis=1) == 7).all()
    np.testing.assert_array_equal(w, counted_draws(7, 50, 42))


def test_resampling_weights_drawn_in_chunks_are_the_same_draws(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 3 resamples of 50 clusters per chunk (the real chunk holds 4 Mi indices): 17 chunks
    monkeypatch.setattr(bs, "_DRAW_CHUNK", 150)
    w = bs._draw(np.random.default_rng(3), 50, 49)
    np.testing.assert_array_equal(w, counted_draws(50, 49, 3))


def test_resampling_weights_are_multinomial_in_distribution() -> None:
    """Each row is multinomial(n, 1/n each): a cluster's count is binomial(n, 1/n), two
    clusters' counts have covariance −1/n (20,000 resamples of 5 clusters; the bounds
    are about 5 standard errors)."""
    from scipy import stats

    n, n_boot = 5, 20_000
    w = resampling_weights(n, n_boot, 11)
    observed = np.bincount(w[:, 0], minlength=n + 1)
    expected = stats.binom(n, 1 / n).pmf(np.arange(n + 1)) * n_boot
    chi2 = float(np.sum((observed - expected) ** 2 / expected))
    assert stats.chi2(n).sf(chi2) > 1e-4
    cov = np.cov(w[:, 0], w[:, 1])[0, 1]
    assert cov == pytest.approx(-1 / n, abs=5 * 0.8 / np.sqrt(n_boot))


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
    assert res.note is None  # 12 clusters: no warning since FEW_CLUSTERS = 10
    few = clustered_bootstrap(synthetic(n_tasks=9, seed=7), "task", n_boot=300, seed=5)
    assert few["fleiss_kappa"].note == "only 9 clusters: bootstrap intervals are unreliable"


def test_percentile_interval_is_quantile_of_replicates() -> None:
    df = synthetic(n_tasks=25, seed=8)
    n_c = len(cluster_labels(df, "task"))
    res = clustered_bootstrap(
        df, "task", ["gwet_ac1"], n_boot=400, ci=0.9, seed=3, method="percentile"
    )["gwet_ac1"]
    reps = bootstrap_replicates(
        df, ["gwet_ac1"], resampling_weights(n_c, 400, 3), cluster_col="task"
    )
    lo, hi = np.quantile(reps["gwet_ac1"], [(1 - 0.9) / 2, (1 + 0.9) / 2])
    assert (res.ci_low, res.ci_high) == (lo, hi)
    assert res.method == "percentile"
    assert res.note is None


def test_interval_levels_by_hand() -> None:
    # z = √(n/(n−1)) · t_{n−1}((1 + ci)/2) with t from printed tables, Φ(−z) from math.erfc.
    def phi_minus(z: float) -> float:
        return 0.5 * math.erfc(z / math.sqrt(2.0))

    # 95 %, 40 clusters: t_{39; 0.975} = 2.02269, √(40/39) = 1.012739, z = 2.048458,
    # Φ(−z) = 0.020258 (the plain percentile's 0.025 widened to about a 95.9 % interval)
    lo, hi = interval_levels(40, 0.95)
    assert lo == pytest.approx(phi_minus(2.02269 * math.sqrt(40 / 39)), abs=2e-6)
    assert lo == pytest.approx(0.020258, abs=1e-6)
    assert hi == pytest.approx(1 - lo, abs=1e-15)
    # 10 clusters: t_{9; 0.975} = 2.262157, z = 2.384523, Φ(−z) = 0.008551
    assert interval_levels(10, 0.95)[0] == pytest.approx(0.008551, abs=1e-6)
    # 90 %, 25 clusters: t_{24; 0.95} = 1.710882, z = 1.746162, Φ(−z) = 0.040391
    assert interval_levels(25, 0.90)[0] == pytest.approx(0.040391, abs=1e-6)
    # the plain percentile levels, and convergence to them as clusters grow
    assert interval_levels(40, 0.95, "percentile") == ((1 - 0.95) / 2, (1 + 0.95) / 2)
    lows = [interval_levels(n, 0.95)[0] for n in (2, 5, 10, 20, 40, 150, 10_000)]
    assert lows == sorted(lows)
    assert lows[-1] == pytest.approx(0.025, abs=2e-5)
    with pytest.raises(ValueError, match="at least two clusters"):
        interval_levels(1, 0.95)
    with pytest.raises(ValueError, match="no fixed quantile levels"):
        interval_levels(40, 0.95, "bca")


def test_default_interval_is_the_expanded_percentile() -> None:
    df = synthetic(n_tasks=25, seed=8)
    reps = bootstrap_replicates(
        df, ["gwet_ac1"], resampling_weights(25, 400, 3), cluster_col="task"
    )["gwet_ac1"]
    res = clustered_bootstrap(df, "task", ["gwet_ac1"], n_boot=400, ci=0.9, seed=3)["gwet_ac1"]
    assert res.method == "expanded_percentile" == bs.DEFAULT_CI_METHOD
    lo, hi = np.quantile(reps, interval_levels(25, 0.9))
    assert (res.ci_low, res.ci_high) == (lo, hi)
    plain = np.quantile(reps, [0.05, 0.95])
    assert res.ci_low < plain[0] and res.ci_high > plain[1]  # type: ignore[operator]
    # gradercal.analysis.agreement.percentile_interval gives the same interval from the same
    # replicates (the agreement, impact, calibration and survey engines)
    theirs = percentile_interval(res.value, reps, n_boot=400, n_clusters=25, ci=0.9)
    assert (theirs.ci_low, theirs.ci_high, theirs.method) == (lo, hi, "expanded_percentile")


def test_agreement_interval_by_hand() -> None:
    # Replicates 0, 0.001, …, 1: numpy's linear quantile at level p is p itself, so the
    # interval is the pair of levels.
    reps = np.linspace(0.0, 1.0, 1001)
    b = percentile_interval(0.5, reps, n_boot=1001, n_clusters=40, ci=0.95)
    assert b.ci_low == pytest.approx(0.020258, abs=1e-6)
    assert b.ci_high == pytest.approx(0.979742, abs=1e-6)
    assert (b.method, b.note) == ("expanded_percentile", None)
    # bounds precomputed for many series at once (percentile_bounds, same n_clusters, ci and
    # method) are the ones percentile_interval computes one series at a time
    pre = percentile_bounds({"x": reps}, 0.95, 40)["x"]
    assert pre == (b.ci_low, b.ci_high)
    again = percentile_interval(0.5, reps, n_boot=1001, n_clusters=40, ci=0.95, quantiles=pre)
    assert (again.ci_low, again.ci_high) == (b.ci_low, b.ci_high)
    plain_pre = percentile_bounds({"x": reps}, 0.95, 40, "percentile")["x"]
    plain = percentile_interval(
        0.5, reps, n_boot=1001, n_clusters=40, ci=0.95, method="percentile", quantiles=plain_pre
    )
    assert (plain.ci_low, plain.ci_high, plain.method) == (
        pytest.approx(0.025),
        pytest.approx(0.975),
        "percentile",
    )
    direct = percentile_interval(
        0.5, reps, n_boot=1001, n_clusters=40, ci=0.95, method="percentile"
    )
    assert (direct.ci_low, direct.ci_high) == (plain.ci_low, plain.ci_high)
    few = percentile_interval(0.5, reps, n_boot=1001, n_clusters=bs.FEW_CLUSTERS - 1, ci=0.95)
    assert few.note == f"only {bs.FEW_CLUSTERS - 1} clusters: bootstrap intervals are unreliable"
    with pytest.raises(ValueError, match="cannot form a 'bca' interval"):
        percentile_interval(0.5, reps, n_boot=1001, n_clusters=40, ci=0.95, method="bca")


def test_expanded_interval_stays_inside_the_resample_values() -> None:
    # Three tasks: the expanded levels (0.0013 / 0.9987 at 95 %) reach past most of the
    # resamples, yet the interval is made of resample values: kappa ≤ 1, shares in [0, 1].
    rng = np.random.default_rng(12)
    rows = []
    for t in range(3):
        for u in range(8):
            v = float(rng.random() < 0.5)
            w = v if rng.random() < 0.9 else 1.0 - v
            rows += [(f"{t}/{u}", "A", v, t), (f"{t}/{u}", "B", w, t)]
    df = pd.DataFrame(rows, columns=["unit", "rater", "value", "task"])
    names = ["percent_agreement", "cohen_kappa"]
    res = clustered_bootstrap(df, "task", names, n_boot=500, seed=4)
    reps = bootstrap_replicates(df, names, resampling_weights(3, 500, 4), cluster_col="task")
    for name in names:
        valid = reps[name][np.isfinite(reps[name])]
        b = res[name]
        assert b.ci_low is not None and b.ci_high is not None
        assert valid.min() <= b.ci_low <= b.ci_high <= valid.max()
        assert b.ci_high <= 1.0
        assert "only 3 clusters" in (b.note or "")


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


@pytest.mark.parametrize("statistic", ["fleiss_kappa", "cohen_kappa", "spearman_rho", "icc2"])
def test_jackknife_leaves_out_one_cluster(statistic: str) -> None:
    df = synthetic(n_tasks=9, units_per_task=4, raters=("a", "b"), missing=0.0, seed=13)
    d = _design(df, "task", None)
    est = _estimator(d, statistic, _options("interval", None, None, None, True))
    naive = est.evaluate(np.ones((9, 9)) - np.eye(9))
    np.testing.assert_allclose(est.jackknife(9), naive, rtol=1e-12, atol=1e-14)


def test_bca_without_clusters_needs_no_n_by_n_matrix() -> None:
    # 12,000 units, each its own cluster: the jackknife's n × n weights alone would be
    # 12,000² × 8 B = 1.15 GB (and as much again for np.eye). The sums total − S[c] need
    # O(n) memory: the peak is the resampling weights (200 × 12,000 integers and floats,
    # 38 MB) and the blocks of their products.
    rng = np.random.default_rng(14)
    n = 12_000
    truth = rng.random(n) < 0.6
    values = np.stack([truth ^ (rng.random(n) < 0.15) for _ in range(3)], axis=1)
    df = pd.DataFrame(
        {
            "unit": np.repeat(np.arange(n), 3),
            "rater": np.tile(["a", "b", "c"], n),
            "value": values.reshape(-1).astype(float),
        }
    )
    tracemalloc.start()
    try:
        res = clustered_bootstrap(df, None, n_boot=200, method="bca", categories=[0.0, 1.0])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 200e6, peak
    for b in res.values():
        assert b.method == "bca" and b.n_clusters == n
        assert b.ci_low is not None and b.ci_high is not None
        assert b.ci_low < b.value < b.ci_high  # type: ignore[operator]


def test_bca_refused_when_the_jackknife_would_recompute_too_often(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    df = synthetic(n_tasks=6, units_per_task=5, raters=("a", "b"), missing=0.0, seed=15)
    monkeypatch.setattr(bs, "MAX_RECOMPUTED_JACKKNIFE", 20)
    names = ["spearman_rho", "percent_agreement"]
    by_unit = clustered_bootstrap(df, None, names, n_boot=100, method="bca", level="ordinal")
    rho = by_unit["spearman_rho"]
    assert rho.value is not None and rho.ci_low is None
    assert rho.note is not None
    assert rho.note.startswith(
        "no BCa interval: its jackknife would recompute the statistic 30 times"
    )
    assert "--cluster" in rho.note
    assert by_unit["percent_agreement"].ci_low is not None  # sum-based: no limit
    by_task = clustered_bootstrap(df, "task", names, n_boot=100, method="bca", level="ordinal")
    assert by_task["spearman_rho"].ci_low is not None  # 6 clusters: recomputed 6 times


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
    # 200 simulated studies, 40 clusters × 10 units: the 95 % task-clustered (expanded
    # percentile) interval should cover the true 0.8 about 95 % of the time; resampling
    # units ignores the within-task correlation (design effect ≈ 1 + 9 × 0.09 ≈ 1.8) and
    # under-covers (≈ 85 %). tests/stats/test_bootstrap_coverage.py checks coverage closely.
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
