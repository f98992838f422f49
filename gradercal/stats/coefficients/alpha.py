"""Krippendorff's alpha at the four levels of measurement, and its building blocks.

The coincidence matrix, the distances ``δ²_ck`` of each level and alpha from
coincidences are public because the bootstrap recomputes alpha from resampled
coincidences (:mod:`gradercal.stats.bootstrap`). Small inputs go through the
``krippendorff`` package; large ones through the pair-based direct computation here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import krippendorff
import numpy as np
import numpy.typing as npt

from gradercal.stats.coefficients.ratings import (
    LEVELS,
    REL_TOLERANCE,
    FloatArray,
    IntArray,
    Level,
    Ratings,
    RatingTable,
    Stat,
    rating_table,
    too_few_raters,
)

#: Largest ``n_units × q²`` handed to the ``krippendorff`` package, whose
#: coincidence step materialises an array of that size (three times).
_KRIPPENDORFF_PACKAGE_MAX_CELLS = 4_000_000


def check_level(level: str) -> Level:
    """``level`` as a :data:`Level`; :class:`ValueError` if it is not one of :data:`LEVELS`."""
    for lv in LEVELS:
        if level == lv:
            return lv
    raise ValueError(f"unknown level {level!r}; expected one of {LEVELS}")


def check_level_values(t: RatingTable, level: Level) -> None:
    """Raise :class:`ValueError` when the ratings cannot be measured at ``level``.

    Every level but nominal needs numbers; the ratio level needs values ≥ 0.
    """
    if level != "nominal" and not t.numeric:
        raise ValueError(f"the {level} level needs numeric ratings")
    if level == "ratio" and t.q and float(t.category_values.min()) < 0:
        raise ValueError("the ratio level needs non-negative values")


def ordinal_midranks(n_c: FloatArray) -> FloatArray:
    """Krippendorff's ordinal positions ``M_c = Σ_{g<c} n_g + n_c / 2``.

    The ordinal metric is ``δ²_ck = (Σ_{g=c..k} n_g − (n_c + n_k)/2)² = (M_k − M_c)²``.
    Works on the last axis (so on a batch of marginals too).
    """
    return np.cumsum(n_c, axis=-1) - n_c / 2.0


def distance_matrix(level: Level, categories: FloatArray | None, n_c: FloatArray) -> FloatArray:
    """Krippendorff's squared distances ``δ²_ck`` between categories.

    Args:
        level: ``nominal`` (0/1), ``ordinal`` (from the marginals ``n_c``, see
            :func:`ordinal_midranks`), ``interval`` (``(c − k)²``) or ``ratio``
            (``((c − k)/(c + k))²``, 0 when ``c + k = 0``).
        categories: Numeric category values (ignored for ``nominal``).
        n_c: The coincidence marginals (used by ``ordinal`` only).
    """
    q = len(n_c)
    if level == "nominal":
        return 1.0 - np.eye(q)
    if level == "ordinal":
        mid = ordinal_midranks(n_c)
        return np.asarray((mid[:, None] - mid[None, :]) ** 2, dtype=np.float64)
    assert categories is not None
    x = categories
    diff = x[:, None] - x[None, :]
    if level == "interval":
        return np.asarray(diff**2, dtype=np.float64)
    total = x[:, None] + x[None, :]
    ratio = np.divide(diff, total, out=np.zeros_like(diff), where=total != 0)
    return np.asarray(ratio**2, dtype=np.float64)


def coincidence_pairs(t: RatingTable) -> tuple[IntArray, IntArray, FloatArray, IntArray]:
    """All ordered pairs of ratings within a unit (Krippendorff's pairable values).

    Returns:
        ``(c, k, weight, unit)``: the two category codes, ``1/(m_u − 1)`` and the unit
        of every ordered pair of distinct ratings of a unit with ``m_u ≥ 2`` ratings.
    """
    order = np.argsort(t.unit, kind="stable")
    unit_sorted = t.unit[order]
    cat_sorted = t.cat[order]
    m = np.bincount(t.unit, minlength=t.n_units)
    start = np.concatenate(([0], np.cumsum(m)[:-1]))
    pos = np.arange(len(order)) - start[unit_sorted]
    max_m = int(m.max()) if len(m) else 0
    padded = np.full((t.n_units, max(max_m, 1)), -1, dtype=np.intp)
    padded[unit_sorted, pos] = cat_sorted
    units = np.arange(t.n_units)
    out_c: list[IntArray] = []
    out_k: list[IntArray] = []
    out_u: list[IntArray] = []
    for a in range(max_m):
        for b in range(max_m):
            if a == b:
                continue
            ok = (padded[:, a] >= 0) & (padded[:, b] >= 0)
            out_c.append(padded[ok, a])
            out_k.append(padded[ok, b])
            out_u.append(units[ok])
    if not out_c:
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty, np.zeros(0), empty
    c = np.concatenate(out_c)
    k = np.concatenate(out_k)
    u = np.concatenate(out_u)
    weight = np.asarray(1.0 / (m[u] - 1.0), dtype=np.float64)
    return c, k, weight, u


def coincidence_matrix(t: RatingTable) -> FloatArray:
    """Krippendorff's coincidence matrix ``o_ck = Σ_u (number of c–k pairs in u)/(m_u − 1)``.

    Units with a single rating contribute nothing. Its marginals ``n_c = Σ_k o_ck``
    count the pairable values of each category.
    """
    c, k, weight, _ = coincidence_pairs(t)
    q = t.q
    flat = np.bincount(c * q + k, weights=weight, minlength=q * q)
    return np.asarray(flat, dtype=np.float64).reshape(q, q)


def alpha_from_coincidences(o: FloatArray, delta2: FloatArray) -> float | None:
    """``α = 1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck``, ``None`` when the denominator is 0."""
    n_c = o.sum(axis=1)
    n = float(n_c.sum())
    d_o = float(np.sum(o * delta2))
    d_e = float(np.sum(np.outer(n_c, n_c) * delta2)) / (n - 1.0)
    if d_e <= REL_TOLERANCE * max(n, 1.0):
        return None
    return 1.0 - d_o / d_e


def _alpha_direct(t: RatingTable, level: Level) -> float | None:
    """Krippendorff's alpha from the pairs, without a ``q × q`` array per unit.

    Used when the ``krippendorff`` package would need too much memory (many units and
    many distinct values). Nominal, ordinal and interval use moment identities for the
    expected disagreement; ratio sums over category pairs in blocks.
    """
    c, k, weight, _ = coincidence_pairs(t)
    q = t.q
    n_c = np.asarray(np.bincount(c, weights=weight, minlength=q), dtype=np.float64)
    n = float(n_c.sum())
    if level == "nominal":
        d_o = float(np.sum(weight[c != k]))
        expected = n * n - float(np.sum(n_c**2))
    else:
        if level == "ordinal":
            x = ordinal_midranks(n_c)
        else:
            x = t.category_values - float(np.sum(n_c * t.category_values) / n)
        if level in ("ordinal", "interval"):
            d_o = float(np.sum(weight * (x[c] - x[k]) ** 2))
            s1 = float(np.sum(n_c * x))
            s2 = float(np.sum(n_c * x * x))
            expected = 2.0 * n * s2 - 2.0 * s1 * s1
        else:
            v = t.category_values
            d_o = float(np.sum(weight * _ratio_delta(v[c], v[k])))
            expected = 0.0
            block = max(1, 4_000_000 // max(q, 1))
            for lo in range(0, q, block):
                rows = slice(lo, lo + block)
                d2 = _ratio_delta(v[rows, None], v[None, :])
                expected += float(np.sum(n_c[rows, None] * n_c[None, :] * d2))
    d_e = expected / (n - 1.0)
    if d_e <= REL_TOLERANCE * max(n, 1.0):
        return None
    return 1.0 - d_o / d_e


def _ratio_delta(a: FloatArray, b: FloatArray) -> FloatArray:
    total = a + b
    diff = np.broadcast_to(a - b, np.broadcast(a, b).shape)
    out = np.divide(diff, total, out=np.zeros(diff.shape), where=total != 0)
    return np.asarray(out**2, dtype=np.float64)


def krippendorff_alpha(
    ratings: Ratings,
    *,
    level: Level = "nominal",
    categories: Sequence[Any] | None = None,
) -> Stat:
    """Krippendorff's alpha at the nominal, ordinal, interval or ratio level.

    ``α = 1 − D_o / D_e``: observed over expected disagreement, from the coincidence
    matrix ``o_ck`` (every ordered pair of ratings of a unit with ``m_u ≥ 2`` ratings,
    weighted ``1/(m_u − 1)``), its marginals ``n_c`` and ``n = Σ n_c``:
    ``D_o = Σ o_ck δ²_ck / n``, ``D_e = Σ n_c n_k δ²_ck / (n (n − 1))``. Units rated once
    are not pairable and are ignored. The distance ``δ²`` depends on the level (see
    :func:`distance_matrix`); ordinal, interval and ratio need numbers, ratio
    non-negative ones.

    Computed with the ``krippendorff`` package (Castro, ``krippendorff.alpha``) on the
    unit-by-category counts; for very large inputs (``n_units · q²`` above 4 million)
    an equivalent pair-based computation in this module is used instead (same formula,
    cross-checked in the tests).

    Reference: Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability";
    Krippendorff (2004), *Content Analysis*, ch. 11; Hayes & Krippendorff (2007).

    Convention: when every pairable value is identical (``D_e = 0``) alpha is 0/0 and
    is reported as undefined ("no variation"), not as 1 — agreement without variation
    shows nothing about reliability (Krippendorff 2011, §C).

    Returns:
        At most 1 (may be negative); undefined with one rater, no unit rated twice, or
        no variation.

    Raises:
        ValueError: Unknown level, text ratings at a non-nominal level, or negative
            values at the ratio level.
    """
    lv = check_level(level)
    t = rating_table(ratings, categories)
    check_level_values(t, lv)
    few = too_few_raters(t)
    if few is not None:
        return few
    m = np.bincount(t.unit, minlength=t.n_units)
    pairable = m >= 2
    if not pairable.any():
        return Stat.undefined("no unit was rated by two or more raters")
    pairable_cats = np.unique(t.cat[pairable[t.unit]])
    if len(pairable_cats) < 2:
        return Stat.undefined("no variation: all pairable values are identical")
    value: float | None
    if t.n_units * t.q * t.q <= _KRIPPENDORFF_PACKAGE_MAX_CELLS:
        domain: npt.NDArray[Any] = t.category_values if lv != "nominal" else np.arange(t.q)
        value = float(
            krippendorff.alpha(
                value_counts=t.counts(), value_domain=domain, level_of_measurement=lv
            )
        )
        if not math.isfinite(value):
            value = None
    else:
        value = _alpha_direct(t, lv)
    if value is None:
        return Stat.undefined("no variation: all pairable values are identical")
    return Stat.of(value)
