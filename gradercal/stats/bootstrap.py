"""Cluster (task-level) bootstrap of agreement statistics.

The criteria of one task, and the responses to it, are graded together and their
ratings are correlated, so resampling individual units understates the uncertainty.
This module resamples whole *clusters* (e.g. tasks) with replacement: a resample draws
``n_clusters`` clusters, cluster ``c`` appearing ``W[b, c]`` times, where each row of
``W`` is a ``Multinomial(n_clusters, 1/n_clusters, …)`` draw. A cluster drawn twice
contributes two copies of each of its units.

**Fast path.** Every statistic below is a smooth function of sums over units — category
counts, coincidence matrices, confusion counts, ANOVA sums. Those sums are computed once
per cluster (``S``, shape ``n_clusters × m``); the sums of resample ``b`` are then
``W[b] @ S`` and the statistic is evaluated on all resamples at once. The same code with
``W = 1`` (every cluster once) gives the point estimate, which equals the direct
computation of :mod:`gradercal.stats.coefficients` to float precision (checked on every
call). Rank correlations, and ordinal/ratio alpha with more than
:data:`MAX_COINCIDENCE_CATEGORIES` categories, have no such sums: they are recomputed
from the replicated data for each resample (correct but slower). Which sums, and which
formula on them, each statistic uses is declared by its entry in
:mod:`gradercal.stats.registry` (a :class:`~gradercal.stats.registry.Resample` recipe);
this module interprets the recipe.

**Undefined resamples.** A resample can make a statistic undefined (e.g. Cohen's kappa
when the resample happens to contain one category only). Those resamples are dropped
and counted (``n_valid``); the note of the result says how many.

**Intervals.** ``expanded_percentile`` (default): the percentile interval widened for
the number of clusters ``n`` (Hesterberg 2015): the ``Φ(−z)`` and ``Φ(z)`` quantiles of
the valid resample values with ``z = √(n/(n−1)) · t_{n−1, (1+ci)/2}`` instead of
``z_{(1+ci)/2}`` (:func:`interval_levels`). The factor ``√(n/(n−1))`` undoes the
bootstrap's ``(n−1)/n`` shrinkage of the variance and the Student quantile allows for
the variance being estimated from ``n`` clusters; both tend to 1 and ``z`` as ``n`` grows,
so the interval converges to the plain percentile (95 %: levels 2.03 % / 97.97 % at 40
clusters, 2.37 % / 97.63 % at 150). Being quantiles of the resample values it stays inside
the statistic's range. ``percentile``: the ``(1−ci)/2`` and ``(1+ci)/2`` quantiles
(``numpy.quantile``, linear interpolation), which under-cover with few clusters.
``bca``: Efron's bias-corrected and accelerated interval (Efron 1987; Efron & Tibshirani
1993, §14.3) with bias correction ``z₀ = Φ⁻¹((#{θ* < θ̂} + ½ #{θ* = θ̂}) / B)`` and
acceleration from the leave-one-cluster-out jackknife (each unit its own cluster without
``cluster_col``); the jackknife of a sum-based statistic takes ``O(n_clusters × m)``
memory (its sums are the total minus one cluster's), the others are recomputed one
cluster at a time, refused above :data:`MAX_RECOMPUTED_JACKKNIFE` clusters. Categories
are fixed to the full sample's category set in every resample.

References: Davison & Hinkley (1997), *Bootstrap Methods*, §3.8 (cluster resampling);
Field & Welsh (2007), JRSS-B 69:369; Hesterberg (2015), "What teachers should know about
the bootstrap", *The American Statistician* 69:371 (the expanded percentile interval).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast, get_args

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import sparse  # type: ignore[import-untyped, unused-ignore]
from scipy.special import ndtr, ndtri, stdtrit  # type: ignore[import-untyped, unused-ignore]

from gradercal.stats import coefficients as co
from gradercal.stats.catalogue import view
from gradercal.stats.coefficients import (
    FloatArray,
    IntArray,
    Level,
    RatingTable,
    Stat,
    WeightScheme,
)
from gradercal.stats.coefficients.alpha import check_level, check_level_values, coincidence_pairs
from gradercal.stats.coefficients.ratings import (
    PE_TOLERANCE,
    REL_TOLERANCE,
    category_code,
    check_scheme,
)
from gradercal.stats.registry import BOOTSTRAP_STATISTICS, STATISTICS, Options, Statistic

__all__ = [
    "BOOTSTRAP_STATISTICS",
    "CI_METHODS",
    "DEFAULT_CI_METHOD",
    "DEFAULT_STATISTICS",
    "FEW_CLUSTERS",
    "MAX_COINCIDENCE_CATEGORIES",
    "MAX_RECOMPUTED_JACKKNIFE",
    "BootResult",
    "CiMethod",
    "bootstrap_replicates",
    "cluster_labels",
    "clustered_bootstrap",
    "interval_levels",
    "resampling_weights",
]

CiMethod = Literal["expanded_percentile", "percentile", "bca"]
CI_METHODS: tuple[CiMethod, ...] = get_args(CiMethod)
#: The interval of :func:`clustered_bootstrap` and of the agreement, impact, calibration
#: and survey engines unless told otherwise (see the module docstring).
DEFAULT_CI_METHOD: CiMethod = "expanded_percentile"

#: What :func:`clustered_bootstrap` computes when ``statistics`` is not given: the
#: experts' statistics (the catalogue's view ``"human"``).
DEFAULT_STATISTICS: tuple[str, ...] = view("human")
#: Alpha at the ordinal or ratio level uses per-cluster ``q × q`` coincidence matrices up
#: to this many categories (interval and nominal alpha have a fast path for any ``q``).
MAX_COINCIDENCE_CATEGORIES = 64
#: Resamples evaluated per block (bounds memory to about this × features floats).
_BLOCK_CELLS = 4_000_000
#: Fewer clusters than this get a warning in the result's note: with 8 clusters or fewer
#: some statistics' expanded percentile intervals covered less than 93 % (95 % intended)
#: in the coverage simulation of ``benchmarks/bootstrap_coverage.py``, with 10 or more
#: none did (docs/statistics.md, "Few clusters").
FEW_CLUSTERS = 10
#: BCa's jackknife of a statistic without per-cluster sums (rank correlations, alpha
#: with many ordinal categories) recomputes it once per cluster; above this many
#: clusters BCa is refused with a note (group the units with ``cluster_col``).
MAX_RECOMPUTED_JACKKNIFE = 2000
#: Relative disagreement between the bootstrap's point estimate and the direct one
#: above which something is wrong (raise rather than publish).
_IDENTITY_TOLERANCE = 1e-9


@dataclass(frozen=True)
class BootResult:
    """A point estimate with its cluster-bootstrap confidence interval.

    Attributes:
        value: The statistic on the full data (identical to
            :func:`~gradercal.stats.registry.rating_statistics`), or ``None``.
        ci_low: Lower confidence bound, or ``None`` when no interval could be formed.
        ci_high: Upper confidence bound, or ``None``.
        n_boot: Resamples drawn.
        n_clusters: Clusters resampled.
        n_valid: Resamples on which the statistic was defined (the interval uses these).
        ci: The confidence level.
        method: ``"expanded_percentile"``, ``"percentile"`` or ``"bca"``.
        note: Why ``value`` or the interval is missing, or how many resamples were
            undefined; ``None`` otherwise.
    """

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n_boot: int
    n_clusters: int
    n_valid: int = 0
    ci: float = 0.95
    method: CiMethod = DEFAULT_CI_METHOD
    note: str | None = None


def interval_levels(
    n_clusters: int, ci: float, method: CiMethod = DEFAULT_CI_METHOD
) -> tuple[float, float]:
    """The quantile levels of the resample values bounding a percentile-type interval.

    ``"percentile"``: ``((1 − ci)/2, (1 + ci)/2)``. ``"expanded_percentile"``:
    ``(Φ(−z), Φ(z))`` with ``z = √(n/(n−1)) · t_{n−1}((1 + ci)/2)``, ``n = n_clusters``
    and ``t_{n−1}`` the Student quantile function (Hesterberg 2015) — e.g. 95 % at 40
    clusters: ``z = 1.01274 × 2.02269 = 2.04846``, levels ``0.02026`` and ``0.97974``.

    Raises:
        ValueError: ``method`` is ``"bca"`` (its levels depend on the resamples), fewer
            than two clusters for the expanded interval, or ``ci`` outside (0, 1).
    """
    if not 0.0 < ci < 1.0:
        raise ValueError("ci must be between 0 and 1")
    if method == "percentile":
        return (1.0 - ci) / 2.0, (1.0 + ci) / 2.0
    if method != "expanded_percentile":
        raise ValueError(f"no fixed quantile levels for method {method!r}")
    if n_clusters < 2:
        raise ValueError("the expanded percentile interval needs at least two clusters")
    return _expanded_levels(int(n_clusters), float(ci))


@functools.lru_cache(maxsize=256)
def _expanded_levels(n_clusters: int, ci: float) -> tuple[float, float]:
    # cached: the engines form many intervals over the same number of tasks
    upper = (1.0 + ci) / 2.0
    z = math.sqrt(n_clusters / (n_clusters - 1.0)) * float(stdtrit(n_clusters - 1.0, upper))
    return float(ndtr(-z)), float(ndtr(z))


def resampling_weights(
    n_clusters: int, n_boot: int, rng: np.random.Generator | int | None = 0
) -> npt.NDArray[np.int64]:
    """Cluster multiplicities of ``n_boot`` resamples: ``(n_boot, n_clusters)`` integers.

    Row ``b`` counts how many times each cluster is drawn when resample ``b`` draws
    ``n_clusters`` of them uniformly with replacement (``rng.integers``), so each row sums
    to ``n_clusters`` and is multinomial(``n_clusters``, 1/``n_clusters`` each).

    Args:
        n_clusters: Number of clusters.
        n_boot: Number of resamples.
        rng: A generator, or a seed for ``numpy.random.default_rng``.
    """
    if n_clusters < 1:
        raise ValueError("need at least one cluster")
    if n_boot < 1:
        raise ValueError("n_boot must be at least 1")
    if isinstance(rng, int) and not isinstance(rng, bool):
        # A seed: the same draws every time, so the last few are kept (many groups
        # of one benchmark share the number of clusters).
        return _seeded_weights(n_clusters, n_boot, rng).copy()
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    return _draw(gen, n_clusters, n_boot)


#: Cluster indices drawn at once by :func:`_draw` (bounds its scratch memory: 16 MiB).
_DRAW_CHUNK = 1 << 22


def _draw(gen: np.random.Generator, n_clusters: int, n_boot: int) -> npt.NDArray[np.int64]:
    """Each resample's clusters drawn uniformly with replacement (``n_clusters`` indices
    from ``gen.integers``), counted per cluster: multinomial counts in distribution, about
    8× faster than ``gen.multinomial`` at 750 clusters (it draws one binomial per cell)."""
    per_chunk = max(1, _DRAW_CHUNK // n_clusters)
    chunks = []
    for start in range(0, n_boot, per_chunk):
        k = min(per_chunk, n_boot - start)
        # (32-bit indices: half the generator's work; a chunk stays far below 2**31)
        drawn = gen.integers(0, n_clusters, size=(k, n_clusters), dtype=np.int32)
        drawn += np.arange(0, k * n_clusters, n_clusters, dtype=np.int32)[:, None]
        counts = np.bincount(drawn.ravel(), minlength=k * n_clusters)
        chunks.append(counts.astype(np.int64, copy=False).reshape(k, n_clusters))
    return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)


@functools.lru_cache(maxsize=16)
def _seeded_weights(n_clusters: int, n_boot: int, seed: int) -> npt.NDArray[np.int64]:
    out = _draw(np.random.default_rng(seed), n_clusters, n_boot)
    out.setflags(write=False)
    return out


# ---------------------------------------------------------------------------------------
# Design: ratings + the cluster of each unit
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Design:
    table: RatingTable
    cluster_of_unit: IntArray
    cluster_labels: npt.NDArray[Any]
    #: Per-cluster feature sums already computed on this design (several statistics
    #: share them, e.g. percent agreement, Fleiss' kappa and Gwet's AC1).
    features: dict[Any, FloatArray] = field(default_factory=dict, compare=False, repr=False)

    @property
    def n_clusters(self) -> int:
        return len(self.cluster_labels)

    def cluster_sum(self, unit_features: FloatArray) -> FloatArray:
        """Per-cluster sums of per-unit features: ``(n_clusters, m)``."""
        n_units = self.table.n_units
        indicator = sparse.csr_matrix(
            (np.ones(n_units), (self.cluster_of_unit, np.arange(n_units))),
            shape=(self.n_clusters, n_units),
        )
        return np.asarray(indicator @ unit_features, dtype=np.float64)

    def cluster_bincount(
        self, unit: IntArray, index: IntArray, size: int, w: FloatArray
    ) -> FloatArray:
        """``(n_clusters, size)`` sums of ``w`` by (cluster of ``unit``, ``index``)."""
        key = self.cluster_of_unit[unit] * size + index
        flat = np.bincount(key, weights=w, minlength=self.n_clusters * size)
        return np.asarray(flat, dtype=np.float64).reshape(self.n_clusters, size)


def _design(
    df: pd.DataFrame | RatingTable,
    cluster_col: str | None,
    categories: Sequence[Any] | None,
) -> _Design:
    if isinstance(df, RatingTable):
        if cluster_col is not None:
            raise ValueError("a RatingTable carries no cluster column; pass the DataFrame")
        t = df
        return _Design(t, np.arange(t.n_units, dtype=np.intp), t.unit_labels)
    t = RatingTable.from_frame(df, categories)
    if cluster_col is None:
        return _Design(t, np.arange(t.n_units, dtype=np.intp), t.unit_labels)
    if cluster_col not in df.columns:
        raise ValueError(f"ratings lack the cluster column {cluster_col!r}")
    # The same rows RatingTable.from_frame keeps (non-missing values), in the same order.
    clusters = df.loc[~df["value"].isna(), cluster_col]
    if clusters.isna().any():
        raise ValueError(f"cluster column {cluster_col!r} has missing values")
    codes, labels = pd.factorize(clusters, sort=False)
    codes = np.asarray(codes, dtype=np.intp)
    cluster_of_unit = np.full(t.n_units, -1, dtype=np.intp)
    cluster_of_unit[t.unit] = codes
    if np.any(cluster_of_unit[t.unit] != codes):
        bad = int(np.flatnonzero(cluster_of_unit[t.unit] != codes)[0])
        raise ValueError(
            f"unit {t.unit_labels[t.unit[bad]]!r} belongs to more than one {cluster_col!r} cluster"
        )
    return _Design(t, cluster_of_unit, np.asarray(labels, dtype=object))


def cluster_labels(df: pd.DataFrame, cluster_col: str | None = None) -> list[Any]:
    """The clusters in the order of the columns of the resampling weights.

    That is the order of first appearance among rows with a value (units themselves
    when ``cluster_col`` is ``None``).
    """
    return list(_design(df, cluster_col, None).cluster_labels)


# ---------------------------------------------------------------------------------------
# Estimators: weights (B, n_clusters) -> values (B,), NaN where undefined
# ---------------------------------------------------------------------------------------


class _Estimator:
    fast: bool = True

    def evaluate(self, weights: FloatArray) -> FloatArray:
        raise NotImplementedError

    def jackknife(self, n_clusters: int) -> FloatArray:
        """The statistic leaving out one cluster at a time: ``(n_clusters,)`` values.

        One row of weights at a time (``O(n_clusters)`` memory, never the
        ``n_clusters × n_clusters`` matrix).
        """
        out = np.empty(n_clusters)
        row = np.ones((1, n_clusters))
        for c in range(n_clusters):
            row[0, c] = 0.0
            out[c] = self.evaluate(row)[0]
            row[0, c] = 1.0
        return out


@dataclass(eq=False)
class _SumEstimator(_Estimator):
    """A statistic that is a function of per-cluster sums (the fast path)."""

    features: FloatArray  # (n_clusters, m)
    finish: Callable[[FloatArray], FloatArray]  # (B, m) sums -> (B,) values

    def evaluate(self, weights: FloatArray) -> FloatArray:
        n = len(weights)
        out = np.empty(n)
        block = max(1, _BLOCK_CELLS // max(self.features.shape[1], self.features.shape[0], 1))
        for lo in range(0, n, block):
            sums = weights[lo : lo + block] @ self.features
            out[lo : lo + block] = self.finish(sums)
        return out

    def jackknife(self, n_clusters: int) -> FloatArray:
        """Leave-one-cluster-out values from the sums ``total − S[c]`` (no n × n matrix)."""
        total = self.features.sum(axis=0)
        out = np.empty(n_clusters)
        block = max(1, _BLOCK_CELLS // max(self.features.shape[1], 1))
        for lo in range(0, n_clusters, block):
            out[lo : lo + block] = self.finish(total - self.features[lo : lo + block])
        return out


@dataclass(eq=False)
class _RecomputeEstimator(_Estimator):
    """A statistic recomputed on the replicated data of each resample (slow path)."""

    design: _Design
    compute: Callable[[RatingTable], Stat]
    fast: bool = False

    def evaluate(self, weights: FloatArray) -> FloatArray:
        out = np.empty(len(weights))
        for b, row in enumerate(weights):
            value = self.compute(_replicate(self.design, row)).value
            out[b] = np.nan if value is None else value
        return out


def _replicate(design: _Design, row: FloatArray) -> RatingTable:
    """The ratings of one resample: each unit of cluster ``c`` copied ``row[c]`` times."""
    t = design.table
    mult = np.asarray(row, dtype=np.int64)[design.cluster_of_unit[t.unit]]
    rep = np.repeat(np.arange(t.n_ratings), mult)
    copy = np.arange(len(rep)) - np.repeat(np.cumsum(mult) - mult, mult)
    width = int(mult.max()) if len(mult) else 1
    key = t.unit[rep] * max(width, 1) + copy
    _, unit = np.unique(key, return_inverse=True)
    n_units = int(unit.max()) + 1 if len(unit) else 0
    return RatingTable(
        unit=unit.astype(np.intp),
        rater=t.rater[rep],
        cat=t.cat[rep],
        unit_labels=np.arange(n_units).astype(object),
        rater_labels=t.rater_labels,
        categories=t.categories,
        numeric=t.numeric,
    )


def _safe_div(num: FloatArray, den: FloatArray) -> FloatArray:
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def _kappa_like(pa: FloatArray, pe: FloatArray) -> FloatArray:
    ok = (1.0 - pe) > PE_TOLERANCE
    out = np.full(pa.shape, np.nan)
    np.divide(pa - pe, 1.0 - pe, out=out, where=ok)
    out[np.isnan(pa)] = np.nan
    return out


# --- multi-rater (Gwet) ----------------------------------------------------------------


def _gwet_unit_features(t: RatingTable, w: FloatArray) -> FloatArray:
    """Per unit: [agreement share (0 if rated once), rated ≥ 2 times, r_ik / r_i …, 1]."""
    counts = t.counts()
    m = counts.sum(axis=1)
    two = m >= 2
    agree = np.zeros(t.n_units)
    cw = counts @ w.T
    raw = (counts * (cw - 1.0)).sum(axis=1)
    agree[two] = raw[two] / (m[two] * (m[two] - 1.0))
    return np.column_stack([agree, two.astype(np.float64), counts / m[:, None], np.ones(t.n_units)])


#: The formulas of :func:`_multi_estimator` (a ``"multi"`` recipe's ``formula``).
_MULTI_FORMULAS = (
    "percent_agreement",
    "fleiss_kappa",
    "weighted_fleiss_kappa",
    "bennett_s",
    "weighted_bennett_s",
    "gwet",
)


def _multi_estimator(d: _Design, kind: str, w: FloatArray) -> _SumEstimator:
    if kind not in _MULTI_FORMULAS:
        raise ValueError(f"unknown multi-rater formula {kind!r}; expected one of {_MULTI_FORMULAS}")
    q = d.table.q
    key = ("gwet", w.shape, w.tobytes())
    if key not in d.features:
        d.features[key] = d.cluster_sum(_gwet_unit_features(d.table, w))
    features = d.features[key]
    t_w = float(w.sum())

    def finish(s: FloatArray) -> FloatArray:
        pa = _safe_div(s[:, 0], s[:, 1])
        if kind == "percent_agreement":
            return pa
        pi = s[:, 2 : 2 + q] / s[:, [2 + q]]
        if kind == "fleiss_kappa":
            pe = np.sum(pi * pi, axis=1)
        elif kind == "weighted_fleiss_kappa":
            pe = np.einsum("bk,kl,bl->b", pi, w, pi)
        elif kind == "weighted_bennett_s":
            if q < 2:
                return np.full(len(s), np.nan)
            pe = np.full(len(s), t_w / (q * q))
        elif kind == "gwet":
            if q < 2:
                return np.full(len(s), np.nan)
            pe = t_w * np.sum(pi * (1.0 - pi), axis=1) / (q * (q - 1))
        else:  # bennett_s
            if q < 2:
                return np.full(len(s), np.nan)
            pe = np.full(len(s), 1.0 / q)
        return _kappa_like(pa, pe)

    return _SumEstimator(features, finish)


# --- two raters ------------------------------------------------------------------------


def _pair(d: _Design, raters: tuple[Any, Any] | None) -> tuple[IntArray, IntArray]:
    t = d.table
    if raters is None:
        ia, ib = 0, 1
    else:
        ia, ib = t.rater_index(raters[0]), t.rater_index(raters[1])
    wide = t.wide_codes()
    return wide[:, ia], wide[:, ib]


#: The formulas of :func:`_pair_estimator` (a ``"pair"`` recipe's ``formula``).
_PAIR_FORMULAS = ("cohen_kappa", "scott_pi", "weighted_scott_pi")


def _pair_estimator(
    d: _Design, kind: str, w: FloatArray, raters: tuple[Any, Any] | None
) -> _SumEstimator:
    if kind not in _PAIR_FORMULAS:
        raise ValueError(f"unknown two-rater formula {kind!r}; expected one of {_PAIR_FORMULAS}")
    t = d.table
    q = t.q
    a, b = _pair(d, raters)
    units = np.arange(t.n_units)
    both = (a >= 0) & (b >= 0)
    ones = np.ones(t.n_units)
    joint = d.cluster_bincount(units[both], a[both] * q + b[both], q * q, ones[both])
    n_a = d.cluster_bincount(units[a >= 0], a[a >= 0], q, ones[a >= 0])
    n_b = d.cluster_bincount(units[b >= 0], b[b >= 0], q, ones[b >= 0])
    features = np.hstack([joint, n_a, n_b])
    w_flat = w.reshape(-1)

    def finish(s: FloatArray) -> FloatArray:
        tab = s[:, : q * q]
        p_a = s[:, q * q : q * q + q]
        p_b = s[:, q * q + q :]
        p_a = p_a / p_a.sum(axis=1, keepdims=True)
        p_b = p_b / p_b.sum(axis=1, keepdims=True)
        if kind == "cohen_kappa":
            pa = _safe_div(tab @ w_flat, tab.sum(axis=1))
            pe = np.einsum("bk,kl,bl->b", p_a, w, p_b)
        elif kind == "weighted_scott_pi":
            pa = _safe_div(tab @ w_flat, tab.sum(axis=1))
            pi = (p_a + p_b) / 2.0
            pe = np.einsum("bk,kl,bl->b", pi, w, pi)
        else:  # scott_pi
            pa = _safe_div(tab @ np.eye(q).reshape(-1), tab.sum(axis=1))
            pi = (p_a + p_b) / 2.0
            pe = np.sum(pi * pi, axis=1)
        return _kappa_like(pa, pe)

    return _SumEstimator(features, finish)


def _f1_estimator(d: _Design, judge: Any, reference: Any, positive: Any) -> _SumEstimator:
    t = d.table
    if t.q > 2:
        raise ValueError(f"balanced F1 needs binary ratings (found {t.q} categories)")
    pos = category_code(t, positive)
    j, r = _pair(d, (judge, reference))
    units = np.arange(t.n_units)
    both = (j >= 0) & (r >= 0)
    jp = j[both] == pos
    rp = r[both] == pos
    # index 0 TP, 1 FP, 2 FN, 3 TN
    cell = np.where(jp, np.where(rp, 0, 1), np.where(rp, 2, 3)).astype(np.intp)
    features = d.cluster_bincount(units[both], cell, 4, np.ones(int(both.sum())))

    def finish(s: FloatArray) -> FloatArray:
        tp, fp, fn, tn = s[:, 0], s[:, 1], s[:, 2], s[:, 3]
        f_pos = _safe_div(2.0 * tp, 2.0 * tp + fp + fn)
        f_neg = _safe_div(2.0 * tn, 2.0 * tn + fn + fp)
        return (f_pos + f_neg) / 2.0

    return _SumEstimator(features, finish)


# --- Krippendorff's alpha ---------------------------------------------------------------


def _alpha_estimator(d: _Design, level: Level) -> _Estimator:
    t = d.table
    q = t.q
    c, k, weight, unit = coincidence_pairs(t)
    if level in ("nominal", "interval") and q > MAX_COINCIDENCE_CATEGORIES:
        return _alpha_moment_estimator(d, level, c, k, weight, unit)
    if q > MAX_COINCIDENCE_CATEGORIES:
        return _RecomputeEstimator(d, lambda tb: co.krippendorff_alpha(tb, level=level))
    features = d.cluster_bincount(unit, c * q + k, q * q, weight)
    values = t.category_values if level != "nominal" else None
    fixed = None if level == "ordinal" else co.distance_matrix(level, values, np.ones(q))

    def finish(s: FloatArray) -> FloatArray:
        o = s.reshape(-1, q, q)
        n_c = o.sum(axis=2)
        n = n_c.sum(axis=1)
        if fixed is None:  # ordinal: distances from each resample's marginals
            mid = co.ordinal_midranks(n_c)
            delta2 = (mid[:, :, None] - mid[:, None, :]) ** 2
            d_o = np.einsum("bck,bck->b", o, delta2)
            d_e = np.einsum("bc,bk,bck->b", n_c, n_c, delta2)
        else:
            d_o = np.einsum("bck,ck->b", o, fixed)
            d_e = np.einsum("bc,bk,ck->b", n_c, n_c, fixed)
        d_e = _safe_div(d_e, n - 1.0)
        out = np.full(len(s), np.nan)
        ok = d_e > REL_TOLERANCE * np.maximum(n, 1.0)
        out[ok] = 1.0 - d_o[ok] / d_e[ok]
        return out

    return _SumEstimator(features, finish)


def _alpha_moment_estimator(
    d: _Design, level: Level, c: IntArray, k: IntArray, weight: FloatArray, unit: IntArray
) -> _SumEstimator:
    """Nominal/interval alpha for many categories: ``D_e`` from moments of the marginals."""
    t = d.table
    q = t.q
    if level == "nominal":
        pair_d = (c != k).astype(np.float64)
        x = np.zeros(q)
    else:
        v = t.category_values
        x = v - float(np.mean(v[t.cat]))
        pair_d = (x[c] - x[k]) ** 2
    # Each pairable rating appears (m_u − 1) times as the first element of a pair, with
    # weight 1/(m_u − 1): summing the weights by first element gives n_c.
    d_o = d.cluster_bincount(unit, np.zeros(len(c), dtype=np.intp), 1, weight * pair_d)
    n_c = d.cluster_bincount(unit, c, q, weight)
    moments = n_c @ np.column_stack([np.ones(q), x, x * x])
    # Nominal D_e needs Σ n_c², which is not linear in the sums: keep n_c (q columns).
    extra = [n_c] if level == "nominal" else []
    features = np.hstack([d_o, moments, *extra])

    def finish(s: FloatArray) -> FloatArray:
        do, n, s1, s2 = s[:, 0], s[:, 1], s[:, 2], s[:, 3]
        if level == "nominal":
            nc = s[:, 4:]
            expected = n * n - np.sum(nc * nc, axis=1)
        else:
            expected = 2.0 * n * s2 - 2.0 * s1 * s1
        d_e = _safe_div(expected, n - 1.0)
        out = np.full(len(s), np.nan)
        ok = d_e > REL_TOLERANCE * np.maximum(n, 1.0)
        out[ok] = 1.0 - do[ok] / d_e[ok]
        return out

    return _SumEstimator(features, finish)


# --- ICC and Pearson ---------------------------------------------------------------------


def _icc_estimator(d: _Design, kind: co.IccKind) -> _SumEstimator:
    t = d.table
    x = t.wide_values()
    x = x - float(np.mean(x))
    k = t.n_raters
    unit_features = np.column_stack(
        [np.ones(t.n_units), x.sum(axis=1), np.sum(x * x, axis=1), x.sum(axis=1) ** 2, x]
    )
    features = d.cluster_sum(unit_features)

    def finish(s: FloatArray) -> FloatArray:
        out = np.full(len(s), np.nan)
        for b in range(len(s)):
            n = round(float(s[b, 0]))
            if n < 2:
                continue
            a = co.anova_from_sums(n, k, s[b, 1], s[b, 2], s[b, 3], float(np.sum(s[b, 4:] ** 2)))
            value = co.icc_from_anova(a, kind)
            out[b] = np.nan if value is None else value
        return out

    return _SumEstimator(features, finish)


def _pearson_estimator(d: _Design, raters: tuple[Any, Any] | None) -> _SumEstimator:
    t = d.table
    a, b = _pair(d, raters)
    both = (a >= 0) & (b >= 0)
    v = t.category_values
    x = np.where(both, v[np.maximum(a, 0)], 0.0)
    y = np.where(both, v[np.maximum(b, 0)], 0.0)
    x = np.where(both, x - float(np.mean(x[both])), 0.0)
    y = np.where(both, y - float(np.mean(y[both])), 0.0)
    unit_features = np.column_stack([both.astype(np.float64), x, y, x * x, y * y, x * y])
    features = d.cluster_sum(unit_features)

    def finish(s: FloatArray) -> FloatArray:
        n, sx, sy, sxx, syy, sxy = (s[:, i] for i in range(6))
        vx = n * sxx - sx * sx
        vy = n * syy - sy * sy
        out = np.full(len(s), np.nan)
        ok = (n >= 3) & (vx > REL_TOLERANCE * n * sxx) & (vy > REL_TOLERANCE * n * syy)
        out[ok] = (n[ok] * sxy[ok] - sx[ok] * sy[ok]) / np.sqrt(vx[ok] * vy[ok])
        return np.asarray(np.clip(out, -1.0, 1.0), dtype=np.float64)

    return _SumEstimator(features, finish)


# ---------------------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------------------


def _bootstrapped(name: str) -> Statistic:
    """The registry entry of a statistic the bootstrap knows."""
    s = STATISTICS.get(name)
    if s is None or s.resample is None:
        raise ValueError(f"unknown statistic {name!r}; expected one of {BOOTSTRAP_STATISTICS}")
    return s


def _applied(o: Options, s: Statistic) -> Options:
    """The options with the weights that apply to ``s``: the bootstrap's ``weights=`` if
    its recipe is weighted, identity otherwise."""
    assert s.resample is not None
    return o if s.resample.weighted else replace(o, weights="identity")


def _point(t: RatingTable, name: str, o: Options) -> Stat:
    """The direct (unresampled) computation of one statistic."""
    s = _bootstrapped(name)
    assert s.compute is not None, name
    return s.compute(t, _applied(o, s))


def _estimator(d: _Design, name: str, o: Options) -> _Estimator:
    """The resampled computation of one statistic, as its registry recipe says."""
    t = d.table
    w = co.weight_matrix(o.weights, t.categories)
    s = _bootstrapped(name)
    recipe = s.resample
    assert recipe is not None
    weights = w if recipe.weighted else np.eye(t.q)
    if recipe.kind == "multi":
        return _multi_estimator(d, recipe.formula, weights)
    if recipe.kind == "pair":
        return _pair_estimator(d, recipe.formula, weights, o.pair)
    if recipe.kind == "alpha":
        return _alpha_estimator(d, o.level)
    if recipe.kind == "icc":
        return _icc_estimator(d, cast(co.IccKind, recipe.formula))
    if recipe.kind == "pearson":
        return _pearson_estimator(d, o.pair)
    if recipe.kind == "f1":
        pair = o.pair
        assert pair is not None
        return _f1_estimator(d, pair[0], pair[1], o.positive)
    compute, applied = s.compute, _applied(o, s)
    assert recipe.kind == "recompute" and compute is not None, name
    return _RecomputeEstimator(d, lambda tb: compute(tb, applied))


def _options(
    level: Level,
    weights: WeightScheme | None,
    judge: Any,
    reference: Any,
    positive: Any,
) -> Options:
    lv = check_level(level)
    scheme = check_scheme(weights)
    o = Options(lv, scheme, judge, reference, positive)
    _ = o.pair  # validate
    return o


def bootstrap_replicates(
    df: pd.DataFrame | RatingTable,
    statistics: Sequence[str],
    weights: npt.ArrayLike,
    *,
    cluster_col: str | None = None,
    level: Level = "nominal",
    agreement_weights: WeightScheme | None = None,
    categories: Sequence[Any] | None = None,
    judge: Any = None,
    reference: Any = None,
    positive: Any = True,
) -> dict[str, FloatArray]:
    """Each statistic on each resample given by an explicit weights matrix.

    Args:
        df: Long-format ratings (with ``cluster_col`` when given).
        statistics: Names from :data:`BOOTSTRAP_STATISTICS`.
        weights: ``(B, n_clusters)`` cluster multiplicities (columns in the order of
            :func:`cluster_labels`); a row of ones is the original data.
        cluster_col: The cluster column; ``None``: each unit is its own cluster.
        level: Krippendorff's level of measurement.
        agreement_weights: Weights of Cohen's kappa, Gwet's AC2 and the weighted percent
            agreement (as ``weights`` of :func:`clustered_bootstrap`).
        categories: The category set (fixed across resamples).
        judge: The judge rater (Cohen's kappa, Scott's pi, correlations, balanced F1).
        reference: The reference rater.
        positive: The positive value for balanced F1.

    Returns:
        ``{name: array of B values}``, NaN where the statistic is undefined — and for
        every resample when it is undefined on the full data.
    """
    o = _options(level, agreement_weights, judge, reference, positive)
    d = _design(df, cluster_col, categories)
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    if w.shape[1] != d.n_clusters:
        raise ValueError(f"weights have {w.shape[1]} columns for {d.n_clusters} clusters")
    out: dict[str, FloatArray] = {}
    for name in statistics:
        if _point(d.table, name, o).value is None:
            out[name] = np.full(len(w), np.nan)
        else:
            out[name] = _estimator(d, name, o).evaluate(w)
    return out


def clustered_bootstrap(
    df: pd.DataFrame | RatingTable,
    cluster_col: str | None = None,
    statistics: Sequence[str] = DEFAULT_STATISTICS,
    *,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    method: CiMethod = DEFAULT_CI_METHOD,
    level: Level = "nominal",
    weights: WeightScheme | None = None,
    categories: Sequence[Any] | None = None,
    judge: Any = None,
    reference: Any = None,
    positive: Any = True,
) -> dict[str, BootResult]:
    """Point estimates and cluster-bootstrap confidence intervals.

    One set of ``n_boot`` resamples (:func:`resampling_weights` with ``seed``) is shared
    by all statistics, so their intervals are paired and reproducible.

    Args:
        df: Long-format ratings: ``unit``, ``rater``, ``value`` and ``cluster_col``.
        cluster_col: Column naming each unit's cluster (e.g. ``"task"``; constant within
            a unit). ``None``: each unit is its own cluster (the ordinary bootstrap).
        statistics: Names from :data:`BOOTSTRAP_STATISTICS`.
        n_boot: Number of resamples.
        ci: Confidence level, in (0, 1).
        seed: Seed (or generator) for ``numpy.random.default_rng``.
        method: ``"expanded_percentile"`` (default), ``"percentile"`` or ``"bca"`` (see
            the module docstring).
        level: Krippendorff's level of measurement.
        weights: ``None``/``"identity"``, ``"linear"`` or ``"quadratic"``: for Cohen's
            kappa, Gwet's AC2 and the weighted percent agreement.
        categories: The full category set (e.g. ``[0, 1]``), fixed across resamples.
        judge: Rater compared by Cohen's kappa, Scott's pi, the correlations and
            balanced F1 (with ``reference``); without them those statistics need
            exactly two raters (balanced F1 always needs both).
        reference: The reference rater.
        positive: The positive ("met") value for balanced F1.

    Returns:
        ``{name: BootResult}`` in the order of ``statistics``.

    Raises:
        ValueError: Bad arguments or malformed ratings (see
            :meth:`~gradercal.stats.coefficients.RatingTable.from_frame`), or a unit
            spread over several clusters.
        RuntimeError: The bootstrap's point estimate disagrees with the direct
            computation (a bug; nothing is reported rather than a wrong number).
    """
    if not 0.0 < ci < 1.0:
        raise ValueError("ci must be between 0 and 1")
    if method not in CI_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {CI_METHODS}")
    unknown = [s for s in statistics if s not in BOOTSTRAP_STATISTICS]
    if unknown:
        raise ValueError(f"unknown statistics: {', '.join(unknown)}")
    o = _options(level, weights, judge, reference, positive)
    d = _design(df, cluster_col, categories)
    if d.table.n_ratings:
        check_level_values(d.table, o.level)
    n_c = d.n_clusters
    w = resampling_weights(max(n_c, 1), n_boot, seed).astype(np.float64) if n_c else None
    out: dict[str, BootResult] = {}
    for name in statistics:
        out[name] = _one(d, name, o, w, n_boot, ci, method)
    return out


def _one(
    d: _Design,
    name: str,
    o: Options,
    w: FloatArray | None,
    n_boot: int,
    ci: float,
    method: CiMethod,
) -> BootResult:
    n_c = d.n_clusters
    point = _point(d.table, name, o)

    def result(low: float | None, high: float | None, n_valid: int, note: str | None) -> BootResult:
        return BootResult(point.value, low, high, n_boot, n_c, n_valid, ci, method, note)

    if point.value is None:
        return result(None, None, 0, point.note)
    if w is None or n_c < 2:
        return result(None, None, 0, "no interval: needs at least two clusters")
    est = _estimator(d, name, o)
    own = float(est.evaluate(np.ones((1, n_c)))[0])
    if not abs(own - point.value) <= _IDENTITY_TOLERANCE * max(1.0, abs(point.value)):
        raise RuntimeError(
            f"bootstrap point estimate of {name} ({own!r}) differs from the direct "
            f"computation ({point.value!r})"
        )
    reps = est.evaluate(w)
    valid = reps[np.isfinite(reps)]
    n_valid = len(valid)
    notes: list[str] = []
    if n_c < FEW_CLUSTERS:
        notes.append(f"only {n_c} clusters: bootstrap intervals are unreliable")
    if n_valid < n_boot:
        notes.append(f"{n_boot - n_valid} of {n_boot} resamples undefined and excluded")
    if n_valid < 2:
        notes.insert(0, "no interval: fewer than two resamples defined")
        return result(None, None, n_valid, "; ".join(notes))
    if method == "bca":
        adjusted = _bca_levels(est, valid, own, n_c, ci)
        if isinstance(adjusted, str):
            notes.insert(0, adjusted)
            return result(None, None, n_valid, "; ".join(notes))
        lo_q, hi_q = adjusted
    else:
        lo_q, hi_q = interval_levels(n_c, ci, method)
    low, high = np.quantile(valid, [lo_q, hi_q])
    return result(float(low), float(high), n_valid, "; ".join(notes) or None)


def _bca_levels(
    est: _Estimator, valid: FloatArray, theta: float, n_c: int, ci: float
) -> tuple[float, float] | str:
    """BCa-adjusted quantile levels, or the reason they are undefined."""
    below = float(np.sum(valid < theta)) + 0.5 * float(np.sum(valid == theta))
    share = below / len(valid)
    if share <= 0.0 or share >= 1.0:
        return "no BCa interval: every resample lies on one side of the estimate"
    z0 = float(ndtri(share))
    if not est.fast and n_c > MAX_RECOMPUTED_JACKKNIFE:
        return (
            f"no BCa interval: its jackknife would recompute the statistic {n_c} times "
            f"(more than {MAX_RECOMPUTED_JACKKNIFE} clusters); group the units into "
            "clusters (cluster_col, --cluster) or use the expanded percentile interval"
        )
    jack = est.jackknife(n_c)
    jack = jack[np.isfinite(jack)]
    accel = 0.0
    if len(jack) >= 2:
        dev = float(np.mean(jack)) - jack
        den = float(np.sum(dev**2)) ** 1.5
        if den > 0.0:
            accel = float(np.sum(dev**3)) / (6.0 * den)
    levels = []
    for qq in interval_levels(n_c, ci, "percentile"):
        z = z0 + float(ndtri(qq))
        denom = 1.0 - accel * z
        if denom <= 0.0:
            return "no BCa interval: acceleration too large"
        levels.append(float(ndtr(z0 + z / denom)))
    if not all(math.isfinite(x) for x in levels):
        return "no BCa interval: undefined adjusted levels"
    return levels[0], levels[1]
