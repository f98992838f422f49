"""The alternative annotator test (alt-test) of Calderon, Reichart & Dror (ACL 2025).

Can the LLM judge replace the human experts? The alt-test answers with a
leave-one-annotator-out comparison (Calderon, Reichart & Dror, "The Alternative
Annotator Test for LLM-as-a-Judge: How to Statistically Justify Replacing Human
Annotators with LLMs", ACL 2025, §3; reference code github.com/nitaytech/AltTest).

Definitions, for human annotators ``h_1 … h_m``, items ``i`` (here: one judgment
criterion of one response) and the judge ``f``:

* Items enter when the judge has a verdict and at least two humans do.
* For each excluded human ``h_j`` and each item ``i`` that ``h_j`` rated, the *alignment*
  of an annotation ``a`` with the remaining humans ``H_i − j`` is its accuracy against
  them: ``S(a, i, j) = (1/|H_i − j|) Σ_{k ∈ H_i − j} 1[a = h_k(i)]``.
* Indicators: ``W^f_ij = 1[S(f(i), i, j) ≥ S(h_j(i), i, j)]`` (the judge represents the
  others at least as well as ``h_j``) and ``W^h_ij = 1[S(h_j(i), i, j) ≥ S(f(i), i, j)]``
  (ties count for both).
* Advantage probabilities ``ρ^f_j = mean_i W^f_ij`` and ``ρ^h_j = mean_i W^h_ij``; the
  **average advantage probability** is ``ρ = mean_j ρ^f_j``.
* For each ``j``, the paired differences ``d_i = W^h_ij − W^f_ij`` take the values −1, 0
  and +1; the hypotheses are ``H0: E[d] ≥ ε`` (the judge is worse than ``h_j`` by at least
  the allowance) against ``H1: E[d] < ε``. ``ε`` (default 0.2, the paper's value for
  experts) is the cost-benefit allowance granted to the judge. Two tests, chosen by the
  ``cluster`` argument:

  - **items** (items independent): an *exact unconditional* test, valid for every
    number of items. With ``n₊ = #{d = +1}``, ``n₋ = #{d = −1}`` out of ``n`` and the
    null boundary ``p₊ − p₋ = ε`` (``p₊``, ``p₋`` the probabilities of +1 and −1), the
    statistic is the score statistic of the paired difference (Nam 1997; Tango 1998)
    ``Z = (d̄ − ε)·√n / √(p̃₊ + p̃₋ − ε²)``, where ``p̃₋`` is the restricted maximum
    likelihood estimate of ``p₋`` on the boundary (the positive root of
    ``2n x² − B x − n₋ ε(1−ε) = 0``, ``B = (n₊ + n₋)(1−ε) − 2ε(n − n₊)``) and
    ``p̃₊ = p̃₋ + ε``. The p-value is the largest probability of a ``Z`` at most the
    observed one over the whole boundary, ``sup_{p₋ ∈ [0, (1−ε)/2]} P(Z ≤ z_obs)``,
    computed exactly from the trinomial distribution (``Z`` falls in ``n₋`` and rises
    in ``n₊``, so ``P`` is a sum over ``n₊`` of binomial tails; the supremum is taken on
    a grid of :data:`NUISANCE_GRID` values refined by a bounded scalar search). Its size
    is therefore at most ``α`` for every ``n`` (tests compute the exact size). The
    one-sided t-test of the paper and the Wilcoxon test used before are *not* valid
    here: at the boundary their size reaches 12% (t, 30 items) and 38–46% (Wilcoxon, 10–29
    items).
  - **task** (items clustered in tasks; the default when some task holds several
    items): criteria of one task are correlated, so the test works on per-task sums.
    With ``S_t`` and ``n_t`` the sum and count of ``d`` in task ``t`` (``G`` tasks), the
    estimate ``d̄ = ΣS_t / Σn_t`` has the cluster-robust standard error
    ``se = √(G/(G−1) · Σ(S_t − d̄ n_t)²) / Σn_t`` and ``t = (d̄ − ε)/se``. The p-value is
    that of a **cluster bootstrap-t**: tasks are resampled with replacement
    (:data:`CLUSTER_BOOTSTRAP` resamples, seeded), each resample's studentized
    ``t* = (d̄* − d̄)/se*`` is computed the same way, and ``p = (1 + #{t* ≤ t})/(1 + B)``.
    Student's t with ``G − 1`` df on the same statistic was too liberal (6–8% at the
    boundary with 10–20 tasks, because ``d`` is skewed near the boundary); the
    bootstrap-t kept 3.8–5.6%. An annotator with fewer than :data:`MIN_CLUSTERS` tasks
    is **not tested**, with a note. Sizes by simulation under a task random effect are
    in docs/agreement.md and guarded by tests/analysis/test_alt_test.py.

* The p-values of the *tested* annotators are corrected with the Benjamini–Yekutieli
  procedure at level ``α`` (default 0.05; Benjamini & Yekutieli 2001, FDR control under
  arbitrary dependence): with sorted p-values ``p_(1) ≤ … ≤ p_(m)`` and
  ``c(m) = Σ_{k=1}^m 1/k``, reject ``H_(1) … H_(k)`` for the largest ``k`` with
  ``p_(k) ≤ k α / (m c(m))``. Adjusted p-values: ``min(1, min_{l ≥ k} m c(m) p_(l) / l)``.
* **Winning rate** ``ω`` = the share of tested humans whose null is rejected (the judge
  "wins" against them). The judge **passes** when ``ω ≥ 0.5``.

Edge cases: fewer than two humans with items shared with another human and the judge,
or fewer than two humans that could be tested → :class:`AltTestRefused` (the test is
undefined; the message says why each human was not tested); two humans → a warning (the
paper recommends at least three: with two, each "consensus" is a single person). The
cluster-robust statistic with ``se = 0`` (every task has the same mean difference) uses
its limit p-value (0 below ``ε``, 1 above) with a note; ``d̄ = ε`` exactly with
``se = 0`` is not rejected.

This module imports pandas, numpy, scipy and gradercal's core only.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal.analysis.context import AnalysisContext
from gradercal.errors import GradercalError
from gradercal.frames import Frames

__all__ = [
    "CLUSTER_CHOICES",
    "DEFAULT_ALPHA",
    "DEFAULT_EPSILON",
    "MIN_CLUSTERS",
    "AltTestRefused",
    "AltTestResult",
    "AnnotatorTest",
    "Clustering",
    "alt_test",
    "alt_test_frames",
    "benjamini_yekutieli",
    "clustered_p_value",
    "exact_p_value",
    "score_statistic",
]

#: The paper's ε for expert annotators.
DEFAULT_EPSILON = 0.2
#: FDR level of the Benjamini–Yekutieli correction.
DEFAULT_ALPHA = 0.05
#: Fewest tasks for the task-clustered test of one annotator (chosen by simulation,
#: docs/agreement.md): with fewer, the annotator is not tested.
MIN_CLUSTERS = 10
#: Cluster bootstrap resamples of the task-clustered test.
CLUSTER_BOOTSTRAP = 1999
#: Grid points of the nuisance parameter ``p₋`` on the null boundary (exact test).
NUISANCE_GRID = 101
#: The winning rate at which the judge passes.
PASS_WINNING_RATE = 0.5
#: How items are grouped for the per-annotator test.
Clustering = Literal["auto", "task", "none"]
CLUSTER_CHOICES: tuple[str, ...] = get_args(Clustering)

FloatArray = npt.NDArray[np.float64]
TestKind = Literal["exact", "clustered", "not tested"]


class AltTestRefused(GradercalError, ValueError):
    """The alt-test cannot be run on these data (e.g. fewer than two humans)."""


@dataclass(frozen=True)
class AnnotatorTest:
    """The test against one excluded human annotator.

    Attributes:
        human: The excluded annotator ``h_j``.
        n_items: Items ``h_j`` rated (with the judge and at least one other human).
        n_clusters: Tasks those items belong to (None when items are not clustered).
        test: ``"exact"`` (items independent), ``"clustered"`` (task-clustered bootstrap-t)
            or ``"not tested"`` (too few tasks; see ``note``).
        rho_judge: ``ρ^f_j``, the judge's advantage probability.
        rho_human: ``ρ^h_j``, the human's advantage probability.
        mean_difference: ``mean(d) = ρ^h_j − ρ^f_j``.
        statistic: The score statistic ``Z`` (exact) or ``t`` (clustered); None if
            undefined or infinite.
        p_value: One-sided p-value, None when not tested or undefined (see ``note``).
        p_adjusted: Benjamini–Yekutieli adjusted p-value (None with ``p_value``).
        rejected: Whether ``H0`` is rejected after correction: the judge wins.
        note: Why the annotator was not tested or a value is missing, or a caveat.
    """

    human: str
    n_items: int
    n_clusters: int | None
    test: TestKind
    rho_judge: float
    rho_human: float
    mean_difference: float
    statistic: float | None
    p_value: float | None
    p_adjusted: float | None
    rejected: bool
    note: str | None = None

    @property
    def tested(self) -> bool:
        """Whether this annotator entered the test (and the winning rate)."""
        return self.test != "not tested"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "human": self.human,
            "n_items": self.n_items,
            "n_clusters": self.n_clusters,
            "test": self.test,
            "tested": self.tested,
            "rho_judge": self.rho_judge,
            "rho_human": self.rho_human,
            "mean_difference": self.mean_difference,
            "statistic": self.statistic,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "rejected": self.rejected,
            "note": self.note,
        }


@dataclass(frozen=True)
class AltTestResult:
    """The outcome of the alt-test.

    Attributes:
        judge: The judge's name.
        epsilon: The cost-benefit allowance ``ε``.
        alpha: The FDR level of the Benjamini–Yekutieli correction.
        n_items: Items with the judge's and at least two humans' annotations.
        annotators: One :class:`AnnotatorTest` per human, tested or not, in name order.
        winning_rate: ``ω``, the share of tested humans the judge wins against.
        advantage_probability: ``ρ``, the mean of ``ρ^f_j`` over the tested humans.
        passed: ``ω ≥ 0.5``.
        clustering: ``"task"`` (task-clustered test) or ``"none"`` (exact item test).
        n_clusters: Tasks holding the items (None when items are not clustered).
        warnings: Caveats (e.g. only two humans, humans not tested).
    """

    judge: str
    epsilon: float
    alpha: float
    n_items: int
    annotators: list[AnnotatorTest]
    winning_rate: float
    advantage_probability: float
    passed: bool
    clustering: Literal["task", "none"] = "none"
    n_clusters: int | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def tested(self) -> list[AnnotatorTest]:
        """The annotators that entered the test."""
        return [a for a in self.annotators if a.tested]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (see ``docs/agreement.md``)."""
        return {
            "judge": self.judge,
            "epsilon": self.epsilon,
            "alpha": self.alpha,
            "scoring": "accuracy",
            "test": "task-clustered bootstrap-t" if self.clustering == "task" else "exact score",
            "clustering": self.clustering,
            "correction": "benjamini-yekutieli",
            "n_items": self.n_items,
            "n_clusters": self.n_clusters,
            "n_humans": len(self.annotators),
            "n_tested": len(self.tested),
            "tested": [a.human for a in self.tested],
            "not_tested": {a.human: a.note for a in self.annotators if not a.tested},
            "winning_rate": self.winning_rate,
            "advantage_probability": self.advantage_probability,
            "passed": self.passed,
            "annotators": [a.to_dict() for a in self.annotators],
            "warnings": list(self.warnings),
        }


def benjamini_yekutieli(
    p_values: Sequence[float], alpha: float = DEFAULT_ALPHA
) -> tuple[npt.NDArray[np.bool_], FloatArray]:
    """The Benjamini–Yekutieli step-up procedure.

    Args:
        p_values: The ``m`` p-values (finite, in [0, 1]).
        alpha: The FDR level.

    Returns:
        ``(rejected, adjusted)`` in the input order: with sorted p-values
        ``p_(k)`` and ``c(m) = Σ 1/k``, the hypotheses up to the largest ``k`` with
        ``p_(k) ≤ k α/(m c(m))`` are rejected; ``adjusted_(k) = min(1, min_{l≥k}
        m c(m) p_(l)/l)`` (= statsmodels' ``multipletests(method="fdr_by")``).
    """
    p = np.asarray(p_values, dtype=np.float64)
    m = len(p)
    if m == 0:
        return np.zeros(0, dtype=bool), np.zeros(0)
    if not np.all(np.isfinite(p)) or np.any(p < 0) or np.any(p > 1):
        raise ValueError("p-values must be finite and in [0, 1]")
    order = np.argsort(p, kind="stable")
    ranks = np.arange(1, m + 1, dtype=np.float64)
    c_m = float(np.sum(1.0 / ranks))
    sorted_p = p[order]
    below = sorted_p <= ranks * alpha / (m * c_m)
    k = int(np.max(np.flatnonzero(below))) + 1 if below.any() else 0
    rejected = np.zeros(m, dtype=bool)
    rejected[order[:k]] = True
    adj_sorted = np.minimum.accumulate((m * c_m * sorted_p / ranks)[::-1])[::-1]
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(adj_sorted, 1.0)
    return rejected, adjusted


# ----------------------------------------------------------------------- the exact test


def score_statistic(
    n_plus: npt.ArrayLike, n_minus: npt.ArrayLike, n: int, epsilon: float
) -> FloatArray:
    """The score statistic ``Z`` of ``H0: p₊ − p₋ = ε`` for paired differences.

    Args:
        n_plus: Counts of ``d = +1`` (the human alone represents the others best).
        n_minus: Counts of ``d = −1`` (the judge alone does), element-wise with
            ``n_plus``; ``n_plus + n_minus ≤ n``.
        n: Items.
        epsilon: ``ε`` in [0, 1).

    Returns:
        ``(d̄ − ε)·√n / √(2p̃₋ + ε − ε²)`` with ``p̃₋`` the restricted maximum likelihood
        estimate of ``p₋`` under ``p₊ = p₋ + ε`` (module docstring); 0 where the
        restricted variance is 0 (only with ``ε = 0`` and no nonzero difference).
    """
    a = np.asarray(n_plus, dtype=np.float64)
    b = np.asarray(n_minus, dtype=np.float64)
    e = float(epsilon)
    big_b = (a + b) * (1.0 - e) - 2.0 * e * (n - a)
    x = (big_b + np.sqrt(big_b * big_b + 8.0 * n * b * e * (1.0 - e))) / (4.0 * n)
    v = 2.0 * x + e - e * e
    num = ((a - b) / n - e) * math.sqrt(n)
    safe = v > 0
    return np.asarray(np.where(safe, num / np.sqrt(np.where(safe, v, 1.0)), 0.0), np.float64)


def _tail_probability(
    n: int, epsilon: float, x: float, b_star: npt.NDArray[np.int64], a: npt.NDArray[np.int64]
) -> float:
    """``P(Z ≤ z_obs)`` at ``p₋ = x``, ``p₊ = x + ε``: ``Σ_a P(N₊ = a) P(N₋ ≥ b*(a) | a)``."""
    from scipy import stats  # type: ignore[import-untyped, unused-ignore]

    p_plus = x + epsilon
    pa = stats.binom.pmf(a, n, p_plus)
    keep = pa > 1e-300
    if not keep.any():
        return 0.0
    a_k = a[keep]
    rest = n - a_k
    q = 0.0 if p_plus >= 1.0 else min(1.0, x / (1.0 - p_plus))
    # P(N₋ ≥ b*) for N₋ ~ Binom(n − a, q); b* > n − a means impossible.
    tail = stats.binom.sf(b_star[keep] - 1, rest, q)
    return float(np.clip(np.sum(pa[keep] * tail), 0.0, 1.0))


def exact_p_value(n_plus: int, n_minus: int, n: int, epsilon: float) -> tuple[float, float]:
    """The exact unconditional p-value of ``H0: E[d] ≥ ε`` against ``E[d] < ε``.

    Args:
        n_plus: Items with ``d = +1``.
        n_minus: Items with ``d = −1``.
        n: Items (``≥ 1``).
        epsilon: ``ε`` in [0, 1).

    Returns:
        ``(z, p)``: the observed score statistic and ``sup P(Z ≤ z)`` over the null
        boundary ``p₊ = p₋ + ε``, ``p₋ ∈ [0, (1 − ε)/2]`` (module docstring). The size of
        the test "reject when ``p ≤ α``" is at most ``α`` for every ``n``.
    """
    from scipy import optimize  # type: ignore[import-untyped, unused-ignore]

    if n < 1:
        raise ValueError("the exact test needs at least one item")
    if not (n_plus >= 0 and n_minus >= 0 and n_plus + n_minus <= n):
        raise ValueError("counts must satisfy 0 ≤ n₊, n₋ and n₊ + n₋ ≤ n")
    z_obs = float(score_statistic(n_plus, n_minus, n, epsilon))
    tol = 1e-9 * (1.0 + abs(z_obs))
    a = np.arange(n + 1, dtype=np.int64)
    # b*(a): the smallest n₋ with Z(a, n₋) ≤ z_obs (Z falls in n₋), by bisection.
    lo = np.zeros(n + 1, dtype=np.int64)
    hi = n - a + 1  # "none": every b ≤ n − a has Z > z_obs
    while True:
        active = lo < hi
        if not active.any():
            break
        mid = (lo + hi) // 2
        z_mid = score_statistic(a, np.minimum(mid, n - a), n, epsilon)
        ok = (z_mid <= z_obs + tol) & (mid <= n - a)
        hi = np.where(active & ok, mid, hi)
        lo = np.where(active & ~ok, mid + 1, lo)
    b_star = lo
    top = (1.0 - epsilon) / 2.0
    grid = np.linspace(0.0, top, NUISANCE_GRID)
    values = np.array([_tail_probability(n, epsilon, float(x), b_star, a) for x in grid])
    k = int(np.argmax(values))
    best = float(values[k])
    left, right = float(grid[max(k - 1, 0)]), float(grid[min(k + 1, len(grid) - 1)])
    if right > left:
        res = optimize.minimize_scalar(
            lambda x: -_tail_probability(n, epsilon, float(x), b_star, a),
            bounds=(left, right),
            method="bounded",
            options={"xatol": 1e-7},
        )
        best = max(best, float(-res.fun))
    return z_obs, min(1.0, best)


@functools.lru_cache(maxsize=4)
def _cluster_weights(g: int, n_boot: int, seed: int) -> FloatArray:
    """The resamples' cluster multiplicities as floats: ``default_rng(seed).multinomial(g,
    [1/g] * g, size=n_boot)`` (:func:`gradercal.stats.bootstrap.resampling_weights`), kept —
    the alt-test tests every expert on the same clusters with the same seed."""
    from gradercal.stats.bootstrap import resampling_weights

    w = resampling_weights(g, n_boot, seed).astype(np.float64)
    w.setflags(write=False)
    return w


def clustered_p_value(
    d: FloatArray,
    cluster: npt.NDArray[np.intp],
    epsilon: float,
    *,
    n_boot: int = CLUSTER_BOOTSTRAP,
    seed: int = 0,
) -> tuple[float | None, float | None, str | None]:
    """The task-clustered one-sided test of ``E[d] < ε`` (cluster bootstrap-t).

    Args:
        d: The differences.
        cluster: Each difference's cluster code (0 … G−1, every code present; G ≥ 2).
        epsilon: ``ε``.
        n_boot: Bootstrap resamples of the clusters.
        seed: Seed of the resamples (same seed → same p-value).

    Returns:
        ``(t, p, note)``: ``t = (d̄ − ε)/se`` with the cluster-robust ``se`` of the module
        docstring; ``p = (1 + #{t*_b ≤ t}) / (1 + B)`` over the ``B`` resamples' studentized
        ``t*_b = (d̄*_b − d̄)/se*_b`` (resamples with ``se* = 0`` are dropped). With
        ``se = 0`` the limit p-value (0 or 1, ``t`` None) with a note, or no p-value when
        ``d̄ = ε``.
    """
    g = int(cluster.max()) + 1
    sums = np.bincount(cluster, weights=d, minlength=g)
    counts = np.bincount(cluster, minlength=g).astype(np.float64)
    total = float(counts.sum())
    mean = float(sums.sum()) / total
    resid = sums - mean * counts
    se = math.sqrt(g / (g - 1) * float(np.sum(resid * resid))) / total
    if se <= 1e-15:
        if mean < epsilon:
            return None, 0.0, "every task has the same mean difference, below ε: limit p-value 0"
        if mean > epsilon:
            return None, 1.0, "every task has the same mean difference, above ε: limit p-value 1"
        return None, None, "every difference equals ε: no test possible"
    t = (mean - epsilon) / se
    w = _cluster_weights(g, n_boot, int(seed))
    s_b = w @ sums
    n_b = w @ counts
    m_b = s_b / n_b
    # Σ_t w_bt (S_t − m_b n_t)², expanded so that it is three matrix products.
    q = w @ (sums * sums) - 2.0 * m_b * (w @ (sums * counts)) + m_b * m_b * (w @ (counts * counts))
    se_b = np.sqrt(np.maximum(g / (g - 1) * q, 0.0)) / n_b
    ok = se_b > 1e-15
    t_b = (m_b[ok] - mean) / se_b[ok]
    p = (1.0 + float(np.sum(t_b <= t))) / (1.0 + float(len(t_b)))
    note = None
    if len(t_b) < n_boot:
        note = f"{n_boot - len(t_b)} of {n_boot} resamples without spread dropped"
    return t, p, note


# ------------------------------------------------------------------------- the alt-test


def alt_test(
    humans: pd.DataFrame,
    judge: Mapping[Any, Any] | pd.Series,
    *,
    judge_name: str = "judge",
    epsilon: float = DEFAULT_EPSILON,
    alpha: float = DEFAULT_ALPHA,
    clusters: Mapping[Any, Any] | pd.Series | None = None,
    cluster: Clustering = "auto",
    min_clusters: int = MIN_CLUSTERS,
    seed: int = 0,
) -> AltTestResult:
    """Run the alt-test on any categorical annotations.

    Args:
        humans: Long format: ``item``, ``annotator``, ``value`` (one row per human
            annotation; an annotator annotates an item at most once).
        judge: The judge's annotation of each item (item → value).
        judge_name: The judge's label in the result.
        epsilon: The cost-benefit allowance ``ε`` (0 ≤ ε < 1).
        alpha: FDR level of the Benjamini–Yekutieli correction.
        clusters: Each item's cluster (e.g. its task): item → label. Needed for the
            clustered test.
        cluster: ``"auto"`` (default): the task-clustered test when ``clusters`` are
            given and some cluster holds more than one item, else the exact item test;
            ``"task"``: the clustered test (``clusters`` required); ``"none"``: the exact
            test, items treated as independent.
        min_clusters: Fewest clusters for the clustered test of one annotator.
        seed: Seed of the clustered test's bootstrap.

    Raises:
        AltTestRefused: Fewer than two humans annotated items that another human and
            the judge annotated too, or fewer than two could be tested.
        ValueError: Bad ``epsilon``/``alpha``/``cluster``, duplicate annotations, or
            ``cluster="task"`` without ``clusters``.
    """
    _check_arguments(humans, epsilon, alpha, clusters, cluster, min_clusters)
    jmap = dict(judge.items())
    h = _shared_annotations(humans, jmap)
    annotator, annotators = pd.factorize(h["annotator"].to_numpy(object), sort=False)
    names = _annotator_names(h, np.asarray(annotator), annotators, judge_name)
    warnings = _few_annotators(names)
    items, wide, jv = _wide_codes(h, jmap, names, np.asarray(annotator), annotators)
    present = wide >= 0
    item_cluster = _item_clusters(items, clusters)
    clustered = _is_clustered(cluster, item_cluster)
    by_cluster = item_cluster if clustered else None
    rows = [
        _annotator_row(j, name, wide, present, jv, by_cluster, epsilon, min_clusters, seed)
        for j, name in enumerate(names)
    ]
    tests = _corrected_tests([r for r in rows if r is not None], alpha)
    skipped = [t.human for t in tests if not t.tested]
    if skipped:
        warnings.append(
            f"not tested: {', '.join(skipped)} (items in fewer than {min_clusters} tasks); "
            "the winning rate counts the tested graders only"
        )
    done = [t for t in tests if t.tested]
    omega = float(np.mean([t.rejected for t in done]))
    rho = float(np.mean([t.rho_judge for t in done]))
    return AltTestResult(
        judge=judge_name,
        epsilon=float(epsilon),
        alpha=float(alpha),
        n_items=len(items),
        annotators=tests,
        winning_rate=omega,
        advantage_probability=rho,
        passed=omega >= PASS_WINNING_RATE,
        clustering="task" if clustered else "none",
        n_clusters=None if not clustered or item_cluster is None else len(np.unique(item_cluster)),
        warnings=warnings,
    )


def _check_arguments(
    humans: pd.DataFrame,
    epsilon: float,
    alpha: float,
    clusters: Mapping[Any, Any] | pd.Series | None,
    cluster: Clustering,
    min_clusters: int,
) -> None:
    """Raise the :class:`ValueError` of :func:`alt_test` for a bad argument."""
    if not 0.0 <= epsilon < 1.0:
        raise ValueError("epsilon must be in [0, 1)")
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be in (0, 1)")
    if cluster not in CLUSTER_CHOICES:
        raise ValueError(f"cluster must be one of {', '.join(CLUSTER_CHOICES)}")
    if cluster == "task" and clusters is None:
        raise ValueError('cluster="task" needs each item\'s cluster (clusters=)')
    if min_clusters < 2:
        raise ValueError("min_clusters must be at least 2")
    missing = [c for c in ("item", "annotator", "value") if c not in humans.columns]
    if missing:
        raise ValueError(f"human annotations lack columns: {', '.join(missing)}")


def _shared_annotations(humans: pd.DataFrame, jmap: Mapping[Any, Any]) -> pd.DataFrame:
    """The human annotations (``item``, ``annotator``, ``value``) of items the judge
    annotated and at least two humans did.

    Raises:
        ValueError: An annotator annotated an item more than once.
    """
    h = humans.loc[humans["value"].notna(), ["item", "annotator", "value"]]
    if h.duplicated(["item", "annotator"]).any():
        raise ValueError("an annotator annotated an item more than once")
    if pd.api.types.is_integer_dtype(h["item"].dtype) and all(
        map(isinstance, jmap, itertools.repeat(int | np.integer))
    ):
        # Integer items (e.g. codes from alt_test_frames): one hash lookup for all rows.
        if set(map(type, jmap.values())) <= {bool}:  # plain bools: none is missing
            known = np.fromiter(jmap, dtype=np.int64, count=len(jmap))
        else:
            known = np.fromiter(
                (i for i, x in jmap.items() if not _missing(x)), dtype=np.int64, count=-1
            )
        h = h.loc[h["item"].isin(known)]
    else:
        h = h.loc[h["item"].map(lambda i: i in jmap and not _missing(jmap[i]))]
    per_item = h.groupby("item")["annotator"].transform("size")
    return h.loc[per_item >= 2]


def _few_annotators(names: list[str]) -> list[str]:
    """The warning that two annotators are fewer than the method's authors recommend."""
    if len(names) < 3:
        return [
            "only two human graders: each is compared with a single other person; the "
            "alt-test's authors recommend at least three"
        ]
    return []


def _is_clustered(cluster: Clustering, item_cluster: npt.NDArray[np.int64] | None) -> bool:
    """Whether the task-clustered test runs: asked for, or ``"auto"`` with some cluster
    holding more than one item."""
    return cluster == "task" or (
        cluster == "auto"
        and item_cluster is not None
        and len(np.unique(item_cluster)) < len(item_cluster)
    )


def _annotator_names(
    h: pd.DataFrame, annotator: npt.NDArray[np.intp], annotators: Any, judge_name: str
) -> list[str]:
    """The annotators' names, sorted (``annotator``/``annotators``: ``h["annotator"]``
    factorized).

    Raises:
        AltTestRefused: Fewer than two.
    """
    names = sorted({str(a) for a in annotators})
    if (annotator < 0).any():  # a missing annotator counts as str(a) too
        names = sorted({str(a) for a in h["annotator"]})
    if len(names) < 2:
        raise AltTestRefused(
            f"the alt-test needs at least two human graders who annotated the same items as "
            f"another human and the judge {judge_name!r}; found {len(names)}"
        )
    return names


def _wide_codes(
    h: pd.DataFrame,
    jmap: Mapping[Any, Any],
    names: list[str],
    annotator: npt.NDArray[np.intp],
    annotators: Any,
) -> tuple[Any, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The items, the ``items × names`` matrix of value codes (-1 where missing) and
    the judge's codes (values coded together, so equal values have equal codes).

    ``annotator``/``annotators`` are the factorized ``h["annotator"]``.
    """
    codes, items = pd.factorize(h["item"], sort=False)
    jraw = list(map(jmap.__getitem__, items))
    vcodes, _ = pd.factorize(pd.Series([*h["value"].tolist(), *jraw], dtype=object))
    vcodes = np.asarray(vcodes, dtype=np.int64)
    col = {a: k for k, a in enumerate(names)}
    wide = np.full((len(items), len(names)), -1, dtype=np.int64)
    if (np.asarray(annotator) < 0).any():  # a missing annotator: one by one, as before
        where = np.asarray([col[str(a)] for a in h["annotator"]], dtype=np.intp)
    else:
        where = np.asarray([col[str(a)] for a in annotators], dtype=np.intp)[annotator]
    wide[np.asarray(codes), where] = vcodes[: len(h)]
    return items, wide, vcodes[len(h) :]


def _annotator_row(
    j: int,
    name: str,
    wide: npt.NDArray[np.int64],
    present: npt.NDArray[np.bool_],
    jv: npt.NDArray[np.int64],
    item_cluster: npt.NDArray[Any] | None,
    epsilon: float,
    min_clusters: int,
    seed: int,
) -> dict[str, Any] | None:
    """Human ``j``'s leave-one-out comparison with the judge and its test (clustered when
    ``item_cluster`` is given, else exact); None when no item is shared with another."""
    others = present.copy()
    others[:, j] = False
    k_other = others.sum(axis=1)
    sel = present[:, j] & (k_other > 0)
    n = int(sel.sum())
    if n == 0:
        return None
    hw = wide[sel]
    oth = others[sel]
    kk = k_other[sel].astype(np.float64)
    same_h = (hw == hw[:, [j]]) & oth
    same_f = (hw == jv[sel][:, None]) & oth
    s_h = same_h.sum(axis=1) / kk
    s_f = same_f.sum(axis=1) / kk
    w_f = (s_f >= s_h).astype(np.float64)
    w_h = (s_h >= s_f).astype(np.float64)
    d = w_h - w_f
    row: dict[str, Any] = {
        "human": name,
        "n_items": n,
        "n_clusters": None,
        "rho_judge": float(np.mean(w_f)),
        "rho_human": float(np.mean(w_h)),
        "mean_difference": float(np.mean(d)),
        "statistic": None,
        "p_value": None,
        "note": None,
    }
    if item_cluster is not None:
        cc, cu = pd.factorize(item_cluster[sel], sort=False)
        row["n_clusters"] = g = len(cu)
        if g < min_clusters:
            row["test"] = "not tested"
            row["note"] = (
                f"not tested: items in only {g} task{'s' if g != 1 else ''}; the "
                f"task-clustered test needs at least {min_clusters}"
            )
        else:
            row["test"] = "clustered"
            stat, p, note = clustered_p_value(d, np.asarray(cc, np.intp), epsilon, seed=seed)
            row.update(statistic=stat, p_value=p, note=note)
    else:
        row["test"] = "exact"
        n_plus = int(np.sum(d > 0))
        n_minus = int(np.sum(d < 0))
        z, p = exact_p_value(n_plus, n_minus, n, epsilon)
        row.update(statistic=z, p_value=p)
    return row


def _corrected_tests(rows: list[dict[str, Any]], alpha: float) -> list[AnnotatorTest]:
    """Every annotator's test, the tested ones corrected together (Benjamini–Yekutieli).

    Raises:
        AltTestRefused: Fewer than two annotators, or fewer than two that were tested.
    """
    if len(rows) < 2:
        raise AltTestRefused(
            f"the alt-test needs at least two human graders with shared items; found {len(rows)}"
        )
    tested = [r for r in rows if r["test"] != "not tested"]
    if len(tested) < 2:
        why = "; ".join(f"{r['human']}: {r['note']}" for r in rows if r["test"] == "not tested")
        raise AltTestRefused(
            f"the alt-test needs at least two human graders that can be tested; found "
            f"{len(tested)} ({why})"
        )
    p_for_by = [1.0 if r["p_value"] is None else float(r["p_value"]) for r in tested]
    rejected, adjusted = benjamini_yekutieli(p_for_by, alpha)
    adj_of = {r["human"]: (bool(rejected[k]), float(adjusted[k])) for k, r in enumerate(tested)}
    tests: list[AnnotatorTest] = []
    for r in rows:
        rej, adj = adj_of.get(r["human"], (False, math.nan))
        stat = r["statistic"]
        tests.append(
            AnnotatorTest(
                human=r["human"],
                n_items=r["n_items"],
                n_clusters=r["n_clusters"],
                test=r["test"],
                rho_judge=r["rho_judge"],
                rho_human=r["rho_human"],
                mean_difference=r["mean_difference"],
                statistic=None if stat is None or not math.isfinite(stat) else float(stat),
                p_value=r["p_value"],
                p_adjusted=None if r["p_value"] is None else adj,
                rejected=rej and r["p_value"] is not None,
                note=r["note"],
            )
        )
    return tests


def _item_clusters(
    items: pd.Index | npt.NDArray[Any], clusters: Mapping[Any, Any] | pd.Series | None
) -> npt.NDArray[np.int64] | None:
    """Each item's cluster code (in ``items`` order), or None without clusters."""
    if clusters is None:
        return None
    cmap = dict(clusters.items())
    absent = object()
    labels = list(map(cmap.get, items, itertools.repeat(absent)))
    if any(map(operator.is_, labels, itertools.repeat(absent))):
        first = next(i for i, label in zip(items, labels, strict=True) if label is absent)
        raise ValueError(f"no cluster given for item {first!r}")
    codes, _ = pd.factorize(pd.Series(labels, dtype=object), sort=False)
    return np.asarray(codes, dtype=np.int64)


def _missing(x: Any) -> bool:
    if x is None or x is pd.NA:
        return True
    return isinstance(x, float) and math.isnan(x)


def alt_test_frames(
    frames: Frames,
    judge: str,
    humans: Sequence[str] | None = None,
    *,
    epsilon: float = DEFAULT_EPSILON,
    alpha: float = DEFAULT_ALPHA,
    cluster: Clustering = "auto",
    min_clusters: int = MIN_CLUSTERS,
    seed: int = 0,
    context: AnalysisContext | None = None,
) -> AltTestResult:
    """The alt-test of a judge on a benchmark's met / not met verdicts.

    Items are (response, judgment criterion) pairs, clustered by task; values the binary
    verdicts of :func:`gradercal.analysis.agreement.verdicts` (a partial level counts as not met).
    Adjudications are not used: the test compares annotators only.

    Args:
        frames: The benchmark frames.
        judge: The judge's grader name.
        humans: The human graders (default: every grader of kind ``"human"``).
        epsilon: The cost-benefit allowance ``ε``.
        alpha: FDR level.
        cluster: ``"auto"`` (default: clustered by task when a task holds several
            items), ``"task"`` or ``"none"`` (items independent, exact test); see
            :func:`alt_test`.
        min_clusters: Fewest tasks for the clustered test of one expert.
        seed: Seed of the clustered test's bootstrap.
        context: An ``AnalysisContext`` shared by calls on the same frames (e.g. within one
            report) to reuse the verdict table; None: compute afresh.

    Raises:
        AltTestRefused: See :func:`alt_test`.
    """
    from gradercal.analysis.verdicts import human_graders, verdicts

    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    v = verdicts(frames, [*names, judge], context=context)
    # An item is a (response, criterion) pair, coded as an integer.
    rc, _ = pd.factorize(v["response_id"].to_numpy(object), sort=False)
    cc, cu = pd.factorize(v["criterion_id"].to_numpy(object), sort=False)
    item = np.asarray(rc, np.int64) * max(len(cu), 1) + np.asarray(cc, np.int64)
    # Column by column (no copy of the whole verdict table): the same rows, index and
    # dtypes as selecting the judge's and the humans' rows of ``v`` with an item column.
    grader = v["grader"]
    is_human = (grader != judge).to_numpy(dtype=bool)
    is_judge = ~is_human
    if not is_judge.any():
        raise AltTestRefused(f"grader {judge!r} has no verdict on any judgment criterion")
    items = pd.Series(item, index=v.index)
    met = v["met"].astype(bool)
    table = pd.DataFrame(
        {"item": items[is_human], "annotator": grader[is_human], "value": met[is_human]}
    )
    # Each item's task (an item is one response's, so every row of an item has the same
    # task): from each item's first row.
    _, first = np.unique(item, return_index=True)
    task_of = dict(zip(item[first].tolist(), v["task_id"].to_numpy(object)[first], strict=True))
    return alt_test(
        table,
        dict(
            zip(item[is_judge].tolist(), met.to_numpy(dtype=bool)[is_judge].tolist(), strict=True)
        ),
        judge_name=judge,
        epsilon=epsilon,
        alpha=alpha,
        clusters=task_of,
        cluster=cluster,
        min_clusters=min_clusters,
        seed=seed,
    )
