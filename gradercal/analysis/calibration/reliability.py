"""Calibration figures of probabilities ``p`` against (possibly soft) targets ``y``.

The Brier score ``mean((p − y)²)`` and the expected calibration error ``ECE = Σ_b (n_b/n)
|p̄_b − ȳ_b|`` over :data:`N_BINS` (10) equal-width bins of ``p`` (``[0, 0.1), …, [0.9,
1]``), and the reliability-diagram data of the same bins.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from gradercal.analysis.calibration._types import FloatArray

__all__ = ["N_BINS", "brier_score", "expected_calibration_error", "reliability_table"]

#: Bins of the reliability diagram and the ECE.
N_BINS = 10


def brier_score(p: npt.ArrayLike, y: npt.ArrayLike) -> float | None:
    """``mean((p − y)²)``; None without data. ``y`` may be fractional (soft targets)."""
    pa, ya = np.asarray(p, np.float64), np.asarray(y, np.float64)
    return None if len(pa) == 0 else float(np.mean((pa - ya) ** 2))


def bin_index(p: FloatArray, n_bins: int = N_BINS) -> npt.NDArray[np.intp]:
    """The reliability bin of each probability (``n_bins`` equal bins of [0, 1]; 1 in the last)."""
    b = np.minimum(np.floor(np.clip(p, 0.0, 1.0) * n_bins), n_bins - 1)
    return np.asarray(b, dtype=np.intp)


def reliability_table(
    p: npt.ArrayLike, y: npt.ArrayLike, n_bins: int = N_BINS
) -> list[dict[str, Any]]:
    """Reliability-diagram data: per bin of ``p``, its count, mean ``p`` and mean ``y``.

    Bins are ``[k/n_bins, (k+1)/n_bins)``, the last one closed. Empty bins are listed
    with ``n = 0`` and null means.
    """
    pa, ya = np.asarray(p, np.float64), np.asarray(y, np.float64)
    b = bin_index(pa, n_bins)
    out = []
    for k in range(n_bins):
        sel = b == k
        n = int(sel.sum())
        out.append(
            {
                "bin_low": k / n_bins,
                "bin_high": (k + 1) / n_bins,
                "n": n,
                "mean_predicted": float(np.mean(pa[sel])) if n else None,
                "mean_observed": float(np.mean(ya[sel])) if n else None,
            }
        )
    return out


def expected_calibration_error(
    p: npt.ArrayLike, y: npt.ArrayLike, n_bins: int = N_BINS
) -> float | None:
    """``ECE = Σ_b (n_b / n) |mean p_b − mean y_b|`` over equal-width bins; None without data."""
    pa, ya = np.asarray(p, np.float64), np.asarray(y, np.float64)
    if len(pa) == 0:
        return None
    b = bin_index(pa, n_bins)
    sp = np.bincount(b, weights=pa, minlength=n_bins)
    sy = np.bincount(b, weights=ya, minlength=n_bins)
    return float(np.sum(np.abs(sp - sy)) / len(pa))
