"""gradercal.analysis.alt_test: a hand-worked example, Benjamini–Yekutieli against statsmodels, an
independent loop implementation of the paper's procedure with a brute-force exact test,
the exact size of the per-annotator test (and of the old Wilcoxon / t rules), the size of
the task-clustered test under a task random effect (simulation), refusals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, special, stats
from statsmodels.stats.multitest import multipletests

from gradercal.analysis.alt_test import (
    MIN_CLUSTERS,
    AltTestRefused,
    alt_test,
    alt_test_frames,
    benjamini_yekutieli,
    clustered_p_value,
    exact_p_value,
    score_statistic,
)
from gradercal.errors import GradercalError
from gradercal.formats import read_path
from gradercal.frames import frames_from_data
from tests.conftest import DATA, DEMO


def _long(annotations: dict[str, dict[str, object]]) -> pd.DataFrame:
    return pd.DataFrame(
        [(i, a, v) for a, items in annotations.items() for i, v in items.items()],
        columns=["item", "annotator", "value"],
    )


def test_hand_worked_example() -> None:
    """Three annotators, four items, binary labels.

    item  h1 h2 h3  judge
    i1     1  1  1    1
    i2     1  0  0    0
    i3     0  0  1    0
    i4     1  1  0    1

    Excluding h1: others (h2, h3).
      i1: S(h1) = 2/2, S(f) = 2/2 → W^f = W^h = 1
      i2: S(h1) = 0/2, S(f) = 2/2 → W^f = 1, W^h = 0
      i3: S(h1) = 1/2, S(f) = 1/2 → both 1
      i4: S(h1) = 1/2, S(f) = 1/2 → both 1
      ρ^f = 1, ρ^h = 3/4, d = W^h − W^f = [0, −1, 0, 0]
    Excluding h2: others (h1, h3).
      i1: 1 vs 1; i2: S(h2) = 1/2, S(f) = 1/2; i3: S(h2)=1/2, S(f)=1/2; i4: S(h2)=1/2, S(f)=1/2
      ρ^f = ρ^h = 1, d = [0, 0, 0, 0]
    Excluding h3: others (h1, h2).
      i1: both 1; i2: S(h3) = 1/2, S(f) = 1/2; i3: S(h3) = 0, S(f) = 1 → W^h = 0;
      i4: S(h3) = 0, S(f) = 1 → W^h = 0. ρ^f = 1, ρ^h = 1/2, d = [0, 0, −1, −1]
    ρ = mean(1, 1, 1) = 1. No clusters: the exact test on (n₊, n₋) = (0, 1), (0, 0), (0, 2).
    """
    humans = _long(
        {
            "h1": {"i1": 1, "i2": 1, "i3": 0, "i4": 1},
            "h2": {"i1": 1, "i2": 0, "i3": 0, "i4": 1},
            "h3": {"i1": 1, "i2": 0, "i3": 1, "i4": 0},
        }
    )
    judge = {"i1": 1, "i2": 0, "i3": 0, "i4": 1}
    res = alt_test(humans, judge, epsilon=0.2, alpha=0.05)
    by = {a.human: a for a in res.annotators}
    assert by["h1"].rho_judge == 1.0 and by["h1"].rho_human == 0.75
    assert by["h2"].rho_judge == 1.0 and by["h2"].rho_human == 1.0
    assert by["h3"].rho_judge == 1.0 and by["h3"].rho_human == 0.5
    assert res.advantage_probability == 1.0
    for name, d in (("h1", [0, -1, 0, 0]), ("h2", [0, 0, 0, 0]), ("h3", [0, 0, -1, -1])):
        a = sum(x == 1 for x in d)
        b = sum(x == -1 for x in d)
        assert by[name].test == "exact" and by[name].tested
        assert by[name].p_value == pytest.approx(_brute_exact_p(a, b, 4, 0.2), abs=1e-6)
        assert by[name].mean_difference == pytest.approx(np.mean(d))
    # h2, four zero differences: the worst case on the boundary is p₋ = 0, p₊ = 0.2, where
    # four zeros have probability 0.8⁴ = 0.4096 (every other outcome has a larger Z).
    assert by["h2"].p_value == pytest.approx(0.8**4, abs=1e-9)
    # With four items nothing can be significant at α = 0.05: the judge cannot pass.
    assert res.winning_rate == 0.0
    assert res.passed is False
    assert res.clustering == "none"


@pytest.mark.parametrize("seed", range(5))
def test_benjamini_yekutieli_equals_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 30))
    p = np.concatenate([rng.uniform(0, 0.004, m // 3), rng.uniform(0, 1, m - m // 3)])
    rng.shuffle(p)
    for alpha in (0.05, 0.1):
        rej, adj = benjamini_yekutieli(p, alpha)
        sm_rej, sm_adj, _, _ = multipletests(p, alpha=alpha, method="fdr_by")
        assert rej.tolist() == sm_rej.tolist()
        np.testing.assert_allclose(adj, sm_adj, rtol=1e-12, atol=0)


def test_benjamini_yekutieli_hand_worked() -> None:
    # m = 3, c(3) = 1 + 1/2 + 1/3 = 11/6; thresholds k·α/(m·c) = k·0.05/5.5
    # = 0.00909, 0.01818, 0.02727. Sorted p: 0.001 ≤ .00909 ✓, 0.02 > .01818,
    # 0.025 ≤ .02727 ✓ → step-up rejects all three.
    rej, adj = benjamini_yekutieli([0.02, 0.001, 0.025], 0.05)
    assert rej.tolist() == [True, True, True]
    # adjusted: m·c·p/k = 5.5·p/k: 0.0055, 0.055, 0.0458 → running min from the top
    assert adj.tolist() == pytest.approx([5.5 * 0.025 / 3, 5.5 * 0.001, 5.5 * 0.025 / 3])


def _restricted_mle_numeric(a: int, b: int, n: int, eps: float) -> float:
    """p₋ maximising the trinomial likelihood on the boundary p₊ = p₋ + ε (numerically)."""
    c = n - a - b

    def nll(x: float) -> float:
        return -float(
            special.xlogy(a, x + eps) + special.xlogy(b, x) + special.xlogy(c, 1 - eps - 2 * x)
        )

    res = optimize.minimize_scalar(
        nll, bounds=(0.0, (1 - eps) / 2), method="bounded", options={"xatol": 1e-12}
    )
    return float(res.x)


def _z(a: np.ndarray, b: np.ndarray, n: int, eps: float) -> np.ndarray:
    """The score statistic, restricted MLE by the quadratic's roots (np.roots, per outcome)."""
    out = np.empty(len(a))
    for k, (ai, bi) in enumerate(zip(a, b, strict=True)):
        ci = n - ai - bi
        # 2n x² − [(a + b)(1 − ε) − 2ε(b + c)] x − b ε(1 − ε) = 0
        roots = np.roots(
            [2 * n, -((ai + bi) * (1 - eps) - 2 * eps * (bi + ci)), -bi * eps * (1 - eps)]
        )
        x = max(float(r.real) for r in roots)
        v = 2 * x + eps - eps**2
        out[k] = 0.0 if v <= 0 else ((ai - bi) / n - eps) * np.sqrt(n) / np.sqrt(v)
    return out


def _outcomes(n: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    m = a + b <= n
    return a[m], b[m]


def _trinomial(a: np.ndarray, b: np.ndarray, n: int, x: float, eps: float) -> np.ndarray:
    c = n - a - b
    log = (
        special.gammaln(n + 1)
        - special.gammaln(a + 1)
        - special.gammaln(b + 1)
        - special.gammaln(c + 1)
        + special.xlogy(a, x + eps)
        + special.xlogy(b, x)
        + special.xlogy(c, 1 - eps - 2 * x)
    )
    return np.exp(log)


_GRID = np.linspace(0.0, 1.0, 1201)


def _brute_exact_p(a_obs: int, b_obs: int, n: int, eps: float) -> float:
    """sup over a fine boundary grid of P(Z ≤ z_obs), by enumerating every trinomial outcome."""
    a, b = _outcomes(n)
    z = _z(a, b, n, eps)
    z_obs = _z(np.array([a_obs]), np.array([b_obs]), n, eps)[0]
    sel = z <= z_obs + 1e-9 * (1 + abs(z_obs))
    return max(float(_trinomial(a[sel], b[sel], n, x, eps).sum()) for x in _GRID * (1 - eps) / 2)


def _reference_alt_test(
    humans: dict[str, dict[int, int]], judge: dict[int, int], epsilon: float, alpha: float
) -> tuple[float, float, list[float]]:
    """The paper's procedure written as plain loops (independent of the module)."""
    items_of: dict[int, list[str]] = {}
    for h, anns in humans.items():
        for i in anns:
            items_of.setdefault(i, []).append(h)
    keep = {i for i, hs in items_of.items() if len(hs) >= 2 and i in judge}
    p_values, rhos = [], []
    for h in sorted(humans):
        wf, wh = [], []
        for i in sorted(humans[h]):
            if i not in keep:
                continue
            others = [humans[o][i] for o in items_of[i] if o != h]
            s_h = sum(humans[h][i] == o for o in others) / len(others)
            s_f = sum(judge[i] == o for o in others) / len(others)
            wf.append(1 if s_f >= s_h else 0)
            wh.append(1 if s_h >= s_f else 0)
        d = np.array(wh, float) - np.array(wf, float)
        p_values.append(_brute_exact_p(int(np.sum(d > 0)), int(np.sum(d < 0)), len(d), epsilon))
        rhos.append(float(np.mean(wf)))
    rejected = multipletests(p_values, alpha=alpha, method="fdr_by")[0]
    return float(np.mean(rejected)), float(np.mean(rhos)), p_values


@pytest.mark.parametrize("seed", range(4))
def test_equals_an_independent_implementation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_items, n_humans = 60, 4
    truth = rng.integers(0, 3, n_items)

    def noisy(rate: float) -> np.ndarray:
        return np.where(rng.random(n_items) < rate, rng.integers(0, 3, n_items), truth)

    humans = {}
    for h in range(n_humans):
        labels = noisy(0.3)
        seen = rng.random(n_items) < 0.85  # missing annotations
        humans[f"h{h}"] = {i: int(labels[i]) for i in range(n_items) if seen[i]}
    judge_labels = noisy(rng.uniform(0.1, 0.5))
    judge = {i: int(judge_labels[i]) for i in range(n_items)}
    res = alt_test(_long(humans), judge, epsilon=0.15, alpha=0.05)
    omega, rho, p = _reference_alt_test(humans, judge, 0.15, 0.05)
    assert all(a.test == "exact" for a in res.annotators)
    assert res.winning_rate == omega
    assert res.advantage_probability == pytest.approx(rho, abs=1e-14)
    # the module refines the supremum between grid points: at least the grid's maximum
    for got, ref in zip([a.p_value for a in res.annotators], p, strict=True):
        assert got is not None
        assert ref - 1e-12 <= got <= ref + 1e-4


def test_a_good_judge_passes_and_a_random_one_fails() -> None:
    rng = np.random.default_rng(7)
    n = 200
    truth = rng.integers(0, 2, n)
    humans = {
        f"h{k}": {i: int(v) for i, v in enumerate(np.where(rng.random(n) < 0.2, 1 - truth, truth))}
        for k in range(3)
    }
    good = alt_test(_long(humans), dict(enumerate(truth.tolist())))
    assert good.passed and good.winning_rate == 1.0
    random = alt_test(_long(humans), dict(enumerate(rng.integers(0, 2, n).tolist())))
    assert not random.passed and random.winning_rate == 0.0
    assert random.advantage_probability < good.advantage_probability


def test_refuses_below_two_humans_and_warns_below_three() -> None:
    one = _long({"h1": {"a": 1, "b": 0}})
    with pytest.raises(AltTestRefused, match="at least two human graders"):
        alt_test(one, {"a": 1, "b": 0})
    # two humans but no item shared with the judge
    two = _long({"h1": {"a": 1}, "h2": {"a": 1}})
    with pytest.raises(AltTestRefused):
        alt_test(two, {"b": 1})
    assert issubclass(AltTestRefused, GradercalError)
    ok = alt_test(
        _long({"h1": {i: i % 2 for i in range(40)}, "h2": dict.fromkeys(range(40), 1)}),
        dict.fromkeys(range(40), 1),
    )
    assert any("only two human graders" in w for w in ok.warnings)


def test_constant_differences_get_an_exact_p_value() -> None:
    # Every annotator identical and the judge too: d = 0 on 40 items, mean 0 < ε. The
    # t-test's "limit p-value 0" is gone: the p-value is that of forty zeros, at least
    # their own probability 0.8⁴⁰ at p₋ = 0, p₊ = ε (outcomes with a few −1 have a Z as low).
    humans = _long({f"h{k}": dict.fromkeys(range(40), 1) for k in range(3)})
    res = alt_test(humans, dict.fromkeys(range(40), 1))
    brute = _brute_exact_p(0, 0, 40, 0.2)
    assert 0.8**40 < brute < 0.01
    assert all(a.p_value == pytest.approx(brute, abs=1e-5) for a in res.annotators)
    assert all(a.statistic is not None and a.statistic < 0 for a in res.annotators)
    assert res.passed


def test_on_the_benchmarks() -> None:
    mini = frames_from_data(read_path(DATA / "mini"))
    # two tasks only: the task-clustered default cannot test anyone, and says so
    with pytest.raises(AltTestRefused, match="only 2 tasks"):
        alt_test_frames(mini, "judge-x")
    res = alt_test_frames(mini, "judge-x", cluster="none")
    # every one of the 10 units has ana, ben and the judge
    assert res.n_items == 10
    assert [a.human for a in res.annotators] == ["ana", "ben"]
    assert any("only two human graders" in w for w in res.warnings)
    # Excluding ana, the reference is ben alone; (ana, ben, judge) per unit:
    # M1-a c1 TTT, c2 TFT, c3 FFF, c4 TTT; M1-b c1 FFT, c2 FFF, c3 TTF, c4 FFT;
    # M2-a c1 TTT; M2-b c1 FTT.  S(ana) = 1[ana = ben], S(f) = 1[judge = ben]:
    # W^f = 0 on M1-b c1, c3, c4 (judge ≠ ben = ana) → ρ^f = 7/10;
    # W^h = 0 only on M2-b c1 (ana ≠ ben = judge) → ρ^h = 9/10.
    ana = res.annotators[0]
    assert ana.rho_judge == pytest.approx(0.7)
    assert ana.rho_human == pytest.approx(0.9)
    assert ana.test == "exact"
    demo = frames_from_data(read_path(DEMO))
    d = alt_test_frames(demo, "judge-gpt", epsilon=0.2)
    assert d.n_items == 384 and len(d.annotators) == 3
    assert d.clustering == "task" and d.n_clusters == 10
    assert all(a.test == "clustered" and a.n_clusters == 10 for a in d.annotators)
    assert d.passed
    assert d.to_dict()["tested"] == ["expert-ana", "expert-ben", "expert-chloe"]
    # the bootstrap is seeded: same seed, same p-values
    again = alt_test_frames(demo, "judge-gpt", epsilon=0.2)
    assert [a.p_value for a in again.annotators] == [a.p_value for a in d.annotators]
    # one more task than the demo has: nobody can be tested, and the refusal says why
    with pytest.raises(AltTestRefused, match="needs at least 11"):
        alt_test_frames(demo, "judge-gpt", min_clusters=11)
    with pytest.raises(AltTestRefused):
        alt_test_frames(demo, "judge-gpt", humans=["expert-ana"])


def test_argument_checks_and_the_degenerate_case() -> None:
    humans = _long({"h1": {"a": 1, "b": 0}, "h2": {"a": 1, "b": 0}})
    with pytest.raises(ValueError, match="epsilon"):
        alt_test(humans, {"a": 1, "b": 0}, epsilon=1.0)
    with pytest.raises(ValueError, match="alpha"):
        alt_test(humans, {"a": 1, "b": 0}, alpha=0.0)
    with pytest.raises(ValueError, match="more than once"):
        alt_test(pd.concat([humans, humans]), {"a": 1, "b": 0})
    with pytest.raises(ValueError, match="cluster"):
        alt_test(humans, {"a": 1, "b": 0}, cluster="task")
    # ε = 0 and every difference 0: no evidence at all that the judge is better, p = 1
    res = alt_test(humans, {"a": 1, "b": 0}, epsilon=0.0)
    assert all(a.p_value == pytest.approx(1.0) and not a.rejected for a in res.annotators)
    assert res.winning_rate == 0.0 and not res.passed
    with pytest.raises(ValueError, match="counts"):
        exact_p_value(3, 2, 4, 0.2)


@pytest.mark.parametrize(
    ("a", "b", "n", "eps"),
    [(0, 0, 5, 0.2), (3, 1, 10, 0.2), (2, 7, 30, 0.1), (40, 12, 200, 0.15), (0, 9, 9, 0.3)],
)
def test_the_restricted_mle_is_the_likelihood_maximum(a: int, b: int, n: int, eps: float) -> None:
    x = _restricted_mle_numeric(a, b, n, eps)
    v = 2 * x + eps - eps**2
    expected = ((a - b) / n - eps) * np.sqrt(n) / np.sqrt(v)
    assert float(score_statistic(a, b, n, eps)) == pytest.approx(expected, abs=1e-6)


def _exact_size(reject: np.ndarray, a: np.ndarray, b: np.ndarray, n: int, eps: float) -> float:
    """The largest rejection probability over a fine grid of the null boundary."""
    return max(
        float(_trinomial(a[reject], b[reject], n, x, eps).sum()) for x in _GRID * (1 - eps) / 2
    )


def _signed_rank_sum(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Wilcoxon's R₊ (average ranks of |x|, summed where x > 0) along ``axis``, for a
    whole batch of sign flips at once: the statistic ``scipy.stats.wilcoxon`` hands to
    ``permutation_test`` (its zero handling is not needed: no x is 0 here)."""
    ranks = stats.rankdata(np.abs(x), method="average", axis=axis)
    return np.asarray(np.sum((x > 0) * ranks, axis=axis))


def _wilcoxon_less(shifted: np.ndarray) -> float:
    """``scipy.stats.wilcoxon(shifted, alternative="less").pvalue``, faster.

    With ties and at most 13 values (always so below 14 items here: three distinct
    values), ``wilcoxon`` runs ``permutation_test`` over all 2ⁿ sign flips with the
    statistic called once per flip (1,024 Python calls at 10 items, most of this test's
    time). The same ``permutation_test``, with the same statistic evaluated on every flip
    in one call (``vectorized``), gives the same null distribution and p-value;
    :func:`test_the_exact_test_has_size_at_most_alpha_and_the_old_rule_did_not` checks
    it against ``wilcoxon`` itself on a spread of the outcomes. Above 13 values scipy
    uses its normal approximation (cheap), so ``wilcoxon`` is called as it is.
    """
    assert np.all(shifted != 0)
    if len(shifted) > 13 or len(np.unique(np.abs(shifted))) == len(shifted):
        return float(stats.wilcoxon(shifted, alternative="less").pvalue)
    res = stats.permutation_test(
        (shifted,),
        _signed_rank_sum,
        permutation_type="samples",
        vectorized=True,
        n_resamples=9999,
        alternative="less",
        axis=-1,
    )
    return float(res.pvalue)


def _old_rule_p(a: int, b: int, n: int, eps: float) -> float:
    """The rule this module used before: Wilcoxon below 30 items, else the t-test."""
    d = np.array([1.0] * a + [-1.0] * b + [0.0] * (n - a - b))
    if n < 30:
        shifted = d - eps
        return _wilcoxon_less(shifted)
    if np.all(d == d[0]):
        return 0.0 if d[0] < eps else 1.0
    return float(stats.ttest_1samp(d, eps, alternative="less").pvalue)


@pytest.mark.parametrize("n", [4, 10, 20, 29, 30, 60])
def test_the_exact_test_has_size_at_most_alpha_and_the_old_rule_did_not(n: int) -> None:
    """Exact sizes on the boundary p₊ − p₋ = ε, over a 1,201-point grid of p₋.

    The p-value falls with the observed Z, so the rejection region is {Z ≤ z_c}: its
    boundary is found by bisection on the outcomes sorted by Z (the exact p-value is
    computed for ~log₂(#outcomes) outcomes), then its probability is summed over every
    trinomial outcome. The old rule (Wilcoxon below 30 items, t-test from 30) is measured
    on the same outcomes: its size was 7–33% (33% at 4 items, 12% at 30, 7% at 60).
    """
    eps, alpha = 0.2, 0.05
    a, b = _outcomes(n)
    z = np.asarray(score_statistic(a, b, n, eps))
    order = np.argsort(z, kind="stable")
    lo, hi = 0, len(order)  # the first position whose p-value exceeds α
    while lo < hi:
        mid = (lo + hi) // 2
        k = order[mid]
        if exact_p_value(int(a[k]), int(b[k]), n, eps)[1] <= alpha:
            lo = mid + 1
        else:
            hi = mid
    reject = np.zeros(len(a), dtype=bool)
    reject[order[:lo]] = True
    # every outcome with the same Z as a rejected one is rejected too (a region {Z ≤ z_c})
    if lo:
        assert not np.any(z[~reject] <= z[order[lo - 1]] - 1e-9)
    assert _exact_size(reject, a, b, n, eps) <= alpha + 1e-9
    with np.errstate(all="ignore"):
        old = np.array([_old_rule_p(int(x), int(y), n, eps) for x, y in zip(a, b, strict=True)])
        if n < 30:  # the fast Wilcoxon is scipy's: checked on a spread of the outcomes
            for k in range(0, len(a), max(1, len(a) // 8)):
                d = np.array([1.0] * a[k] + [-1.0] * b[k] + [0.0] * (n - a[k] - b[k])) - eps
                assert old[k] == pytest.approx(
                    stats.wilcoxon(d, alternative="less").pvalue, rel=1e-12, abs=0
                ), (n, int(a[k]), int(b[k]))
    old_reject = np.nan_to_num(old, nan=1.0) <= alpha
    if n >= 10:
        assert _exact_size(old_reject, a, b, n, eps) > 0.065


def _clustered_boundary_data(
    rng: np.random.Generator, g: int, eps: float, p_minus_max: float, tau: float
) -> tuple[np.ndarray, np.ndarray]:
    """Differences of g tasks of 12–74 items at E[d] = ε, with a task random effect.

    Task t has p₋ ~ U(0, p_minus_max) and p₊ = p₋ + ε + u_t, u_t ~ U(−τ, τ): the tasks'
    mean differences vary around ε, and the population mean is exactly ε.
    """
    m = rng.integers(12, 75, g)
    pm = rng.uniform(0, p_minus_max, g)
    pp = pm + eps + rng.uniform(-tau, tau, g)
    c = np.repeat(np.arange(g), m)
    r = rng.random(len(c))
    d = np.where(r < pp[c], 1.0, np.where(r < pp[c] + pm[c], -1.0, 0.0))
    return d, c.astype(np.intp)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("g", "p_minus_max"), [(MIN_CLUSTERS, 0.2), (MIN_CLUSTERS, 0.0), (25, 0.2)]
)
def test_the_clustered_test_keeps_its_size_under_a_task_random_effect(
    g: int, p_minus_max: float
) -> None:
    """Simulated size at the boundary with correlated items (docs/agreement.md).

    800 data sets per case, 999 resamples each. At a true size of 5% the Monte-Carlo
    standard error is 0.77 pp, so the bound 0.05 + 0.025 is three standard errors above α;
    a test liberal like Student's t on the same statistic (6–8% here) would often pass
    it, but the item-level t-test ignoring the tasks (10–23% here) cannot.
    """
    eps, alpha, reps = 0.2, 0.05, 800
    rng = np.random.default_rng(1000 + g)
    rejected = naive = 0
    for rep in range(reps):
        d, c = _clustered_boundary_data(rng, g, eps, p_minus_max, tau=0.15)
        _, p, _ = clustered_p_value(d, c, eps, n_boot=999, seed=rep)
        rejected += p is not None and p <= alpha
        naive += stats.ttest_1samp(d, eps, alternative="less").pvalue <= alpha
    assert rejected / reps <= alpha + 0.025
    assert naive / reps > 0.075


def test_clustered_p_value_on_a_worked_example() -> None:
    # Three tasks: d sums 1, 0, −1 over 2, 2, 2 items → d̄ = 0, residual sums 1, 0, −1,
    # se = √(3/2 · 2)/6 = √3/6, t = (0 − 0.2)/(√3/6) = −0.6928.
    d = np.array([1.0, 0.0, 0.0, 0.0, -1.0, 0.0])
    c = np.array([0, 0, 1, 1, 2, 2], dtype=np.intp)
    t, p, note = clustered_p_value(d, c, 0.2, n_boot=4999, seed=3)
    assert t == pytest.approx(-0.2 / (np.sqrt(3) / 6))
    assert p is not None and 0 < p < 1 and note is not None  # some resamples have no spread
    # every task with the same mean: the limit p-value, said so
    t0, p0, note0 = clustered_p_value(np.zeros(6), c, 0.2)
    assert t0 is None and p0 == 0.0 and "same mean" in (note0 or "")


def test_experts_with_too_few_tasks_are_not_tested_and_said_so() -> None:
    # 12 tasks × 4 items; h1 and h2 rate everything, h3 only the first 3 tasks.
    rng = np.random.default_rng(5)
    items = range(48)
    task = {i: f"T{i // 4}" for i in items}
    truth = rng.integers(0, 2, 48)
    ann: dict[str, dict[int, int]] = {
        h: {i: int(truth[i] if rng.random() > 0.1 else 1 - truth[i]) for i in items}
        for h in ("h1", "h2", "h4")
    }
    ann["h3"] = {i: int(truth[i]) for i in range(12)}
    res = alt_test(_long(ann), dict(enumerate(truth.tolist())), clusters=task)
    by = {a.human: a for a in res.annotators}
    assert res.clustering == "task" and res.n_clusters == 12
    assert not by["h3"].tested and by["h3"].p_value is None and not by["h3"].rejected
    assert "only 3 tasks" in (by["h3"].note or "")
    assert all(by[h].test == "clustered" and by[h].n_clusters == 12 for h in ("h1", "h2", "h4"))
    out = res.to_dict()
    assert out["tested"] == ["h1", "h2", "h4"] and list(out["not_tested"]) == ["h3"]
    assert out["n_tested"] == 3 and any("not tested: h3" in w for w in res.warnings)
    # the winning rate counts the tested experts only
    assert res.winning_rate == np.mean([by[h].rejected for h in ("h1", "h2", "h4")])
    # one item per task: "auto" uses the exact item test
    one = alt_test(_long(ann), dict(enumerate(truth.tolist())), clusters={i: i for i in items})
    assert one.clustering == "none" and all(a.test == "exact" for a in one.annotators)
