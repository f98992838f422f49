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

__all__ = ["boot_json", "cached_weights", "percentile_bounds", "percentile_interval"]

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
