"""Intraclass correlations (Shrout & Fleiss 1979) and correlations of two raters.

The six ICCs from a two-way ANOVA of the complete ``units × raters`` matrix, and
Pearson's r, Spearman's rho and Kendall's tau on the units two raters both rated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gradercal.stats.coefficients.ratings import (
    ICC_KINDS,
    REL_TOLERANCE,
    FloatArray,
    IccKind,
    Ratings,
    RatingTable,
    Stat,
    pair_codes,
    rating_table,
    too_few_raters,
)


@dataclass(frozen=True)
class AnovaTable:
    """Mean squares of the two-way layout ``n`` units × ``k`` raters (one rating per cell).

    ``BMS`` between units (df ``n − 1``), ``WMS`` within units (df ``n (k − 1)``), ``JMS``
    between raters (df ``k − 1``), ``EMS`` residual (df ``(n − 1)(k − 1)``), and ``MSS``
    the total mean square (df ``nk − 1``), used as the scale for "zero".
    """

    n: int
    k: int
    bms: float
    wms: float
    jms: float
    ems: float
    mss: float


def anova_from_sums(
    n: int,
    k: int,
    total: float,
    sum_sq: float,
    row_sq: float,
    col_sq: float,
) -> AnovaTable:
    """Mean squares from the sums ``Σx``, ``Σx²``, ``Σ_i R_i²`` and ``Σ_j C_j²``.

    ``R_i`` are unit (row) totals, ``C_j`` rater (column) totals. Callers should centre
    the data first (subtract a constant): the ANOVA is shift invariant and the raw-moment
    formulas lose precision otherwise.
    """
    nk = float(n * k)
    corr = total * total / nk
    sst = sum_sq - corr
    ssr = row_sq / k - corr
    ssc = col_sq / n - corr
    sse = sst - ssr - ssc
    ssw = sst - ssr
    return AnovaTable(
        n=n,
        k=k,
        bms=ssr / (n - 1),
        wms=ssw / (n * (k - 1)),
        jms=ssc / (k - 1),
        ems=sse / ((n - 1) * (k - 1)),
        mss=sst / (nk - 1.0),
    )


def icc_from_anova(a: AnovaTable, kind: IccKind) -> float | None:
    """One Shrout & Fleiss ICC from the mean squares (``None`` when 0/0).

    * ``icc1``  ICC(1,1) = (BMS − WMS) / (BMS + (k − 1) WMS)
    * ``icc2``  ICC(2,1) = (BMS − EMS) / (BMS + (k − 1) EMS + k (JMS − EMS) / n)
    * ``icc3``  ICC(3,1) = (BMS − EMS) / (BMS + (k − 1) EMS)
    * ``icc1k`` ICC(1,k) = (BMS − WMS) / BMS
    * ``icc2k`` ICC(2,k) = (BMS − EMS) / (BMS + (JMS − EMS) / n)
    * ``icc3k`` ICC(3,k) = (BMS − EMS) / BMS
    """
    n, k = a.n, a.k
    if kind == "icc1":
        num, den = a.bms - a.wms, a.bms + (k - 1) * a.wms
    elif kind == "icc2":
        num, den = a.bms - a.ems, a.bms + (k - 1) * a.ems + k * (a.jms - a.ems) / n
    elif kind == "icc3":
        num, den = a.bms - a.ems, a.bms + (k - 1) * a.ems
    elif kind == "icc1k":
        num, den = a.bms - a.wms, a.bms
    elif kind == "icc2k":
        num, den = a.bms - a.ems, a.bms + (a.jms - a.ems) / n
    elif kind == "icc3k":
        num, den = a.bms - a.ems, a.bms
    else:
        raise ValueError(f"unknown ICC {kind!r}; expected one of {ICC_KINDS}")
    if den <= REL_TOLERANCE * a.mss or a.mss <= 0.0:
        return None
    return num / den


def _anova(x: FloatArray) -> AnovaTable:
    n, k = x.shape
    xc = x - x[0, 0]  # centring: exact zeros for constant data
    return anova_from_sums(
        n,
        k,
        float(xc.sum()),
        float(np.sum(xc * xc)),
        float(np.sum(xc.sum(axis=1) ** 2)),
        float(np.sum(xc.sum(axis=0) ** 2)),
    )


def _icc_matrix(t: RatingTable) -> FloatArray | Stat:
    if not t.numeric:
        raise ValueError("intraclass correlations need numeric ratings")
    few = too_few_raters(t)
    if few is not None:
        return few
    if t.n_units < 2:
        return Stat.undefined("needs at least two units")
    x = t.wide_values()
    incomplete = int(np.isnan(x).any(axis=1).sum())
    if incomplete:
        return Stat.undefined(
            f"incomplete data: {incomplete} of {t.n_units} units lack a rating from some "
            "rater (ICC needs every rater to rate every unit)"
        )
    return x


def intraclass_correlations(ratings: Ratings) -> dict[str, Stat]:
    """The six intraclass correlations of Shrout & Fleiss (1979).

    Two-way layout of ``n`` units × ``k`` raters with exactly one numeric rating per
    cell. ``icc1``/``icc1k``: one-way random effects (each unit rated by different
    raters); ``icc2``/``icc2k``: two-way random effects, absolute agreement (raters a
    random sample); ``icc3``/``icc3k``: two-way mixed effects, consistency (these raters
    only). The ``k`` forms are the reliability of the mean of the ``k`` raters. See
    :func:`icc_from_anova` for the formulas; they match pingouin's ``intraclass_corr``
    (ICC1, ICC2, ICC3, ICC1k, ICC2k, ICC3k) and McGraw & Wong's ICC(1), ICC(A,1), ICC(C,1).

    Reference: Shrout & Fleiss (1979), Psychol Bull 86:420; McGraw & Wong (1996).

    Returns:
        ``{"icc1": …, "icc2": …, "icc3": …, "icc1k": …, "icc2k": …, "icc3k": …}``, each
        undefined with one rater, fewer than two units, incomplete data (a unit missing
        some rater's rating: no imputation or deletion is done) or a zero denominator
        ("no variation"). Values can be negative.

    Raises:
        ValueError: The ratings are not numbers.
    """
    t = rating_table(ratings)
    x = _icc_matrix(t)
    if isinstance(x, Stat):
        return dict.fromkeys(ICC_KINDS, x)
    a = _anova(x)
    out: dict[str, Stat] = {}
    for kind in ICC_KINDS:
        value = icc_from_anova(a, kind)
        out[kind] = (
            Stat.undefined("no variation: the ICC's denominator is zero")
            if value is None
            else Stat.of(value)
        )
    return out


def icc(ratings: Ratings, kind: IccKind = "icc2") -> Stat:
    """One Shrout & Fleiss intraclass correlation (see :func:`intraclass_correlations`)."""
    if kind not in ICC_KINDS:
        raise ValueError(f"unknown ICC {kind!r}; expected one of {ICC_KINDS}")
    return intraclass_correlations(ratings)[kind]


# ---------------------------------------------------------------------------------------
# Correlations of two raters
# ---------------------------------------------------------------------------------------


def _paired_values(
    ratings: Ratings, raters: tuple[Any, Any] | None
) -> tuple[FloatArray, FloatArray] | Stat:
    t = rating_table(ratings)
    if not t.numeric:
        raise ValueError("correlations need numeric ratings")
    codes = pair_codes(t, raters)
    if isinstance(codes, Stat):
        return codes
    a, b = codes
    both = (a >= 0) & (b >= 0)
    if both.sum() < 3:
        return Stat.undefined(f"needs at least 3 units rated by both raters (found {both.sum()})")
    v = t.category_values
    x, y = v[a[both]], v[b[both]]
    if np.all(x == x[0]) or np.all(y == y[0]):
        return Stat.undefined("no variation: a rater gave every unit the same value")
    return x, y


def pearson_r(ratings: Ratings, *, raters: tuple[Any, Any] | None = None) -> Stat:
    """Pearson's product-moment correlation of two raters' values on the units both rated.

    Reference: ``scipy.stats.pearsonr``. Undefined unless there are exactly two raters
    (or ``raters``), with fewer than 3 paired units, or when a rater is constant.
    """
    xy = _paired_values(ratings, raters)
    if isinstance(xy, Stat):
        return xy
    from scipy import stats as sps  # type: ignore[import-untyped, unused-ignore]

    return Stat.of(float(sps.pearsonr(*xy).statistic))


def spearman_rho(ratings: Ratings, *, raters: tuple[Any, Any] | None = None) -> Stat:
    """Spearman's rank correlation (Pearson on mid-ranks, ties averaged), paired units.

    Reference: ``scipy.stats.spearmanr``. Undefined as for :func:`pearson_r`.
    """
    xy = _paired_values(ratings, raters)
    if isinstance(xy, Stat):
        return xy
    from scipy import stats as sps  # type: ignore[import-untyped, unused-ignore]

    return Stat.of(float(sps.spearmanr(*xy).statistic))


def kendall_tau(ratings: Ratings, *, raters: tuple[Any, Any] | None = None) -> Stat:
    """Kendall's tau-b (tie-corrected) of two raters' values on the units both rated.

    Reference: Kendall (1945); ``scipy.stats.kendalltau`` (``variant="b"``). Undefined
    as for :func:`pearson_r`.
    """
    xy = _paired_values(ratings, raters)
    if isinstance(xy, Stat):
        return xy
    from scipy import stats as sps  # type: ignore[import-untyped, unused-ignore]

    return Stat.of(float(sps.kendalltau(*xy, variant="b").statistic))
