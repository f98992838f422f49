"""Bootstrap intervals as the engines report them: a value, its interval and why not.

:func:`percentile_interval` turns task-clustered bootstrap replicates into a
:class:`~gradercal.stats.bootstrap.BootResult` (the expanded percentile interval by
default, Hesterberg 2015), :func:`percentile_bounds` computes the bounds of many
replicate series at once, :func:`boot_json` is the JSON shape every report uses, and
:func:`cached_weights` shares one set of resampling weights among the comparisons of a
report (same tasks, same seed → same resamples).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from gradercal.stats.bootstrap import (
    DEFAULT_CI_METHOD,
    FEW_CLUSTERS,
    BootResult,
    CiMethod,
    interval_levels,
    resampling_weights,
)

__all__ = [
    "boot_json",
    "cached_weights",
    "clustered_wilson",
    "percentile_bounds",
    "percentile_interval",
    "wilson",
]

FloatArray = npt.NDArray[np.float64]


def percentile_interval(
    point: float | None,
    replicates: FloatArray,
    *,
    n_boot: int,
    n_clusters: int,
    ci: float,
    note: str | None = None,
    quantiles: tuple[float, float] | None = None,
    method: CiMethod = DEFAULT_CI_METHOD,
) -> BootResult:
    """A :class:`BootResult` from bootstrap replicates, as :mod:`gradercal.stats` reports it.

    The interval of ``method`` from the finite replicates: by default the expanded
    percentile interval, i.e. their quantiles (``numpy.quantile``, linear interpolation)
    at the levels :func:`~gradercal.stats.bootstrap.interval_levels` gives for
    ``n_clusters`` (``"percentile"``: the plain ``(1 ∓ ci)/2`` quantiles). Non-finite
    replicates are undefined resamples, excluded and counted in the note; fewer than
    :data:`~gradercal.stats.bootstrap.FEW_CLUSTERS` clusters add a warning.

    Args:
        point: The estimate on the original data, or None (then no interval).
        replicates: One value per resample (NaN where undefined).
        n_boot: Resamples drawn.
        n_clusters: Clusters resampled.
        ci: Confidence level.
        note: Why ``point`` is None (required then).
        quantiles: The bounds when already computed for all-finite replicates by
            :func:`percentile_bounds` with the same ``n_clusters``, ``ci`` and ``method``.
        method: ``"expanded_percentile"`` or ``"percentile"``.
    """
    if method not in ("expanded_percentile", "percentile"):
        raise ValueError(f"percentile_interval cannot form a {method!r} interval")

    def result(
        value: float | None, lo: float | None, hi: float | None, k: int, why: str | None
    ) -> BootResult:
        return BootResult(value, lo, hi, n_boot, n_clusters, k, ci, method, why)

    if point is None or not math.isfinite(point):
        return result(None, None, None, 0, note)
    if n_boot == 0:
        return BootResult(float(point), None, None, 0, n_clusters, 0, ci, method, None)
    if n_clusters < 2:
        return result(float(point), None, None, 0, "no interval: needs at least two clusters")
    valid = replicates[np.isfinite(replicates)]
    notes: list[str] = []
    if n_clusters < FEW_CLUSTERS:
        notes.append(f"only {n_clusters} clusters: bootstrap intervals are unreliable")
    if len(valid) < n_boot:
        notes.append(f"{n_boot - len(valid)} of {n_boot} resamples undefined and excluded")
    if len(valid) < 2:
        notes.insert(0, "no interval: fewer than two resamples defined")
        return result(float(point), None, None, len(valid), "; ".join(notes))
    if quantiles is not None and len(valid) == len(replicates):
        lo, hi = quantiles
    else:
        lo, hi = np.quantile(valid, interval_levels(n_clusters, ci, method))
    return result(float(point), float(lo), float(hi), len(valid), "; ".join(notes) or None)


def boot_json(b: BootResult) -> dict[str, Any]:
    """``{"value": x|null, "ci": [lo, hi]|null, "note": str|null}`` (plain floats)."""
    ci = None
    if b.ci_low is not None and b.ci_high is not None:
        ci = [float(b.ci_low), float(b.ci_high)]
    return {"value": None if b.value is None else float(b.value), "ci": ci, "note": b.note}


@functools.lru_cache(maxsize=4)
def cached_weights(n_clusters: int, n_boot: int, seed: int) -> FloatArray:
    """The resampling weights (cached: many comparisons share the same tasks and seed)."""
    if n_boot <= 0 or n_clusters < 2:
        return np.zeros((0, max(n_clusters, 1)))
    w = resampling_weights(n_clusters, n_boot, seed).astype(np.float64)
    w.setflags(write=False)
    return w


def percentile_bounds(
    reps: dict[str, FloatArray],
    ci: float,
    n_clusters: int | None = None,
    method: CiMethod = DEFAULT_CI_METHOD,
) -> dict[str, tuple[float, float]]:
    """The bounds of every replicate series without undefined values, at once.

    The quantiles at :func:`~gradercal.stats.bootstrap.interval_levels` of ``n_clusters``,
    ``ci`` and ``method`` — what :func:`percentile_interval` computes one series at a
    time (``n_clusters`` None: the plain percentile levels). Pass them to it as
    ``quantiles`` with the same ``n_clusters``, ``ci`` and ``method``.
    """
    names = [n for n, r in reps.items() if len(r) and bool(np.isfinite(r).all())]
    if not names:
        return {}
    levels = (
        interval_levels(n_clusters, ci, method)
        if n_clusters is not None and n_clusters >= 2
        else ((1.0 - ci) / 2.0, (1.0 + ci) / 2.0)
    )
    q = np.quantile(np.stack([reps[n] for n in names]), levels, axis=1)
    return {n: (float(q[0, i]), float(q[1, i])) for i, n in enumerate(names)}


def clustered_wilson(
    totals: npt.ArrayLike, sizes: npt.ArrayLike, ci: float = 0.95
) -> tuple[float, float, float, float]:
    """Wilson interval of a proportion estimated from few clusters (design effect, ``t``).

    The proportion is ``p = Σ T_c / Σ M_c`` with ``T_c`` the sum of the unit values (each
    in [0, 1], e.g. a unit's share of agreeing pairs) of cluster ``c`` and ``M_c`` its
    number of units, ``n = Σ M_c``. The effective number of units is Kish's
    ``n_eff = p(1 − p) / v₀`` with ``v₀ = Σ (T_c − p M_c)² / n²`` (the ratio estimator's
    variance between clusters), kept between 1 and ``n`` (a design effect below 1 is not
    credited, and ``n`` is used when ``v₀`` or ``p(1 − p)`` is 0: a sample of perfect
    agreement still leaves room below 1). The interval is Wilson's score interval with
    ``n_w = n_eff (K − 1)/K`` observations (the usual ``K/(K − 1)`` correction of a
    variance from ``K`` clusters) and the Student quantile ``q = t_{K−1, (1+ci)/2}`` for
    ``z`` (Korn & Graubard 1998, Survey Methodology 24:193; Dean & Pagano 2015, J Surv
    Stat Methodol 3:484): ``(p + q²/2n_w ± q √(p(1 − p)/n_w + q²/4n_w²)) / (1 + q²/n_w)``,
    always inside [0, 1] and never of zero width.

    Returns:
        ``(low, high, p, n_eff)``.

    Raises:
        ValueError: fewer than two clusters, an empty cluster, or ``ci`` outside (0, 1).
    """
    from scipy.special import stdtrit  # type: ignore[import-untyped, unused-ignore]

    t = np.asarray(totals, np.float64)
    m = np.asarray(sizes, np.float64)
    k = len(t)
    if k < 2 or len(m) != k:
        raise ValueError("the clustered Wilson interval needs at least two clusters")
    if not 0.0 < ci < 1.0:
        raise ValueError("ci must be between 0 and 1")
    if np.any(m <= 0):
        raise ValueError("every cluster needs at least one unit")
    n = float(m.sum())
    p = min(max(float(t.sum()) / n, 0.0), 1.0)
    v0 = float(np.sum((t - p * m) ** 2)) / (n * n)
    pq = p * (1.0 - p)
    n_eff = n if v0 <= 0.0 or pq <= 0.0 else min(n, max(1.0, pq / v0))
    q = float(stdtrit(k - 1.0, (1.0 + ci) / 2.0))
    low, high = wilson(p, n_eff * (k - 1.0) / k, q)
    return low, high, p, n_eff


def wilson(p: float, n: float, q: float) -> tuple[float, float]:
    """Wilson's score interval of a proportion ``p`` from ``n`` (possibly effective,
    non-integer) observations with quantile ``q``, clipped to [0, 1]."""
    a = q * q / n
    centre = (p + a / 2.0) / (1.0 + a)
    half = q * math.sqrt(p * (1.0 - p) / n + a / (4.0 * n)) / (1.0 + a)
    return max(centre - half, 0.0), min(centre + half, 1.0)
