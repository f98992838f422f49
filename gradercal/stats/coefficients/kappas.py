"""Kappa-type coefficients: multi-rater (Gwet's formulas) and two-rater ones.

Percent agreement, Fleiss' kappa, Gwet's AC1/AC2 and Bennett's S on any number of raters
with missing ratings allowed; Cohen's kappa and Scott's pi on two raters, Conger's and
Light's kappas built from them, weighted Krippendorff's alpha, and the balanced F1 of a
judge against a reference. Notation: :mod:`gradercal.stats.coefficients`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gradercal.stats.coefficients.ratings import (
    PE_TOLERANCE,
    FloatArray,
    IntArray,
    Ratings,
    RatingTable,
    Stat,
    WeightScheme,
    category_code,
    check_scheme,
    pair_codes,
    rating_table,
    too_few_raters,
    weight_matrix,
)

# ---------------------------------------------------------------------------------------
# Multi-rater coefficients (Gwet's formulas, missing ratings allowed)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _MultiParts:
    pa: float  # (weighted) percent agreement over units with >= 2 ratings
    pi: FloatArray  # pi_k = (1/n) sum_i r_ik / r_i over all n units


def _multi_parts(t: RatingTable, w: FloatArray) -> _MultiParts | Stat:
    few = too_few_raters(t)
    if few is not None:
        return few
    counts = t.counts()
    m = counts.sum(axis=1)
    two = m >= 2
    if not two.any():
        return Stat.undefined("no unit was rated by two or more raters")
    cw = counts @ w.T
    agree = (counts * (cw - 1.0)).sum(axis=1)
    pa = float(np.mean(agree[two] / (m[two] * (m[two] - 1.0))))
    pi = (counts / m[:, None]).mean(axis=0)
    return _MultiParts(pa=pa, pi=pi)


def _chance_corrected(pa: float, pe: float) -> Stat:
    """``(pa - pe) / (1 - pe)``, undefined when ``pe`` is 1 (no variation)."""
    if 1.0 - pe <= PE_TOLERANCE:
        return Stat.undefined("no variation: chance agreement is 1 (a single category used)")
    return Stat.of((pa - pe) / (1.0 - pe))


def percent_agreement(
    ratings: Ratings,
    *,
    weights: WeightScheme | None = None,
    categories: Sequence[Any] | None = None,
) -> Stat:
    """Percent agreement (weighted when ``weights`` is given), Gwet's multi-rater form.

    ``pa = (1/n₂) Σ_{i: r_i≥2} Σ_k r_ik (r*_ik − 1) / (r_i (r_i − 1))``: for each unit
    rated at least twice, the share of ordered pairs of its ratings that agree (credited
    ``w_kl`` for a pair in categories ``k``, ``l``), averaged over those units. With two
    raters and complete data this is the share of units on which they agree.

    Reference: Gwet (2014), §2.3 and §3.4; ``irrCAC.pa.coeff.raw``.

    Args:
        ratings: Long-format ratings (or a :class:`RatingTable`).
        weights: ``None``/``"identity"`` (plain agreement) or a family of
            :func:`weight_matrix`.
        categories: The category set (only matters for the weights).

    Returns:
        In [0, 1]; undefined with one rater or when no unit has two ratings.
    """
    t = rating_table(ratings, categories)
    parts = _multi_parts(t, weight_matrix(check_scheme(weights), t.categories))
    return parts if isinstance(parts, Stat) else Stat.of(parts.pa)


def fleiss_kappa(
    ratings: Ratings,
    *,
    weights: WeightScheme | None = None,
    categories: Sequence[Any] | None = None,
) -> Stat:
    """Fleiss' kappa (Fleiss 1971), weighted on request, Gwet's handling of missing ratings.

    ``κ_F = (pa − pe) / (1 − pe)`` with ``pa`` the (weighted) percent agreement of
    :func:`percent_agreement` and ``pe = Σ_kl w_kl π_k π_l`` (unweighted: ``Σ_k π_k²``),
    ``π_k = (1/n) Σ_i r_ik / r_i`` over all ``n`` units (units rated once contribute to
    ``π`` but not to ``pa``). Unweighted and with complete data this is exactly Fleiss'
    (1971) formula.

    Reference: Fleiss (1971), Psychological Bulletin 76:378; Gwet (2014), §2.5 and ch. 3;
    ``irrCAC.fleiss.kappa.raw`` (with ``weights``).

    Returns:
        At most 1; undefined with one rater, no unit rated twice, or a single category
        used by everyone (``pe = 1``: "no variation").
    """
    t = rating_table(ratings, categories)
    w = weight_matrix(check_scheme(weights), t.categories)
    parts = _multi_parts(t, w)
    if isinstance(parts, Stat):
        return parts
    return _chance_corrected(parts.pa, float(parts.pi @ w @ parts.pi))


def _gwet(t: RatingTable, w: FloatArray) -> Stat:
    parts = _multi_parts(t, w)
    if isinstance(parts, Stat):
        return parts
    q = t.q
    if q < 2:
        return Stat.undefined(
            "only one category in the category set: Gwet's chance agreement needs the "
            "number of possible categories (pass categories=…)"
        )
    pe = float(w.sum()) * float(np.sum(parts.pi * (1.0 - parts.pi))) / (q * (q - 1))
    return _chance_corrected(parts.pa, pe)


def gwet_ac1(ratings: Ratings, *, categories: Sequence[Any] | None = None) -> Stat:
    """Gwet's AC1 (Gwet 2008), multi-rater, missing ratings allowed.

    ``AC1 = (pa − pe) / (1 − pe)``, ``pe = Σ_k π_k (1 − π_k) / (q − 1)`` with ``pa`` and
    ``π_k`` as in :func:`fleiss_kappa`. ``q`` is the size of the category set, so pass
    ``categories`` when some possible category was never used (e.g. ``[0, 1]`` for
    binary verdicts): with everyone rating "met", AC1 is 1 when ``q = 2`` but undefined
    when only the observed category is known.

    Reference: Gwet (2008), Br J Math Stat Psychol 61:29; Gwet (2014), §4;
    ``irrCAC.gwet.ac1.raw``.

    Returns:
        In [−1, 1]; undefined with one rater, no unit rated twice, or ``q < 2``.
    """
    t = rating_table(ratings, categories)
    return _gwet(t, np.eye(t.q))


def gwet_ac2(
    ratings: Ratings,
    *,
    weights: WeightScheme,
    categories: Sequence[Any] | None = None,
) -> Stat:
    """Gwet's weighted AC2, multi-rater, missing ratings allowed.

    ``AC2 = (pa_w − pe) / (1 − pe)`` with ``pa_w`` the weighted percent agreement and
    ``pe = T_w / (q (q − 1)) · Σ_k π_k (1 − π_k)``, ``T_w = Σ_kl w_kl``. With identity
    weights AC2 equals AC1.

    Reference: Gwet (2014), ch. 4 (weighted AC1); ``irrCAC.gwet.ac1.raw(weights=…)``.

    Returns:
        Undefined in the same cases as :func:`gwet_ac1`.
    """
    t = rating_table(ratings, categories)
    return _gwet(t, weight_matrix(check_scheme(weights), t.categories))


def bennett_s(
    ratings: Ratings,
    *,
    weights: WeightScheme | None = None,
    categories: Sequence[Any] | None = None,
) -> Stat:
    """Bennett, Alpert & Goldstein's S (the Brennan–Prediger coefficient), weighted on request.

    ``S = (pa − pe) / (1 − pe)`` with ``pe = T_w / q²`` (unweighted: ``1/q``): chance
    agreement assumes a rater picks each of the ``q`` categories with equal probability.
    ``pa`` is the (weighted) multi-rater percent agreement (missing ratings allowed),
    ``q`` the size of the category set — pass ``categories`` when a possible category
    went unused.

    Reference: Bennett, Alpert & Goldstein (1954), Public Opinion Quarterly 18:303;
    Brennan & Prediger (1981), Educ Psychol Meas 41:687; Gwet (2014), ch. 3;
    ``irrCAC.bp.coeff.raw`` (with ``weights``).

    Returns:
        At most 1 (unweighted: in [−1/(q−1), 1]); undefined with one rater, no unit
        rated twice, or ``q < 2``.
    """
    t = rating_table(ratings, categories)
    w = weight_matrix(check_scheme(weights), t.categories)
    parts = _multi_parts(t, w)
    if isinstance(parts, Stat):
        return parts
    if t.q < 2:
        return Stat.undefined(
            "only one category in the category set: S needs the number of possible "
            "categories (pass categories=…)"
        )
    return _chance_corrected(parts.pa, float(w.sum()) / (t.q * t.q))


# ---------------------------------------------------------------------------------------
# Two-rater coefficients
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _PairParts:
    table: FloatArray  # q x q counts of units rated by both: rows rater A, columns rater B
    p_a: FloatArray  # rater A's category shares over all units A rated
    p_b: FloatArray  # rater B's category shares over all units B rated


def _pair_parts(t: RatingTable, raters: tuple[Any, Any] | None) -> _PairParts | Stat:
    codes = pair_codes(t, raters)
    if isinstance(codes, Stat):
        return codes
    return _pair_parts_of(codes[0], codes[1], t.q)


def _pair_parts_of(a: IntArray, b: IntArray, q: int) -> _PairParts | Stat:
    """Joint table and marginals of two raters' codes (``-1`` = missing)."""
    both = (a >= 0) & (b >= 0)
    if not both.any():
        return Stat.undefined("no unit was rated by both raters")
    table = np.bincount(a[both] * q + b[both], minlength=q * q).reshape(q, q).astype(np.float64)
    n_a = np.bincount(a[a >= 0], minlength=q).astype(np.float64)
    n_b = np.bincount(b[b >= 0], minlength=q).astype(np.float64)
    return _PairParts(table=table, p_a=n_a / n_a.sum(), p_b=n_b / n_b.sum())


def cohen_kappa(
    ratings: Ratings,
    *,
    weights: WeightScheme | None = None,
    categories: Sequence[Any] | None = None,
    raters: tuple[Any, Any] | None = None,
) -> Stat:
    """Cohen's kappa (Cohen 1960) and weighted kappa (Cohen 1968) for two raters.

    ``κ = (pa − pe) / (1 − pe)`` with ``pa = Σ_kl w_kl p_kl`` over the units rated by
    both raters (``p_kl`` their joint distribution) and ``pe = Σ_kl w_kl p_A,k p_B,l``,
    where each rater's marginal ``p_A``, ``p_B`` uses *all* that rater's ratings
    (Gwet's treatment of missing ratings; with complete data this is the textbook
    formula, and equals scikit-learn's ``cohen_kappa_score`` for equally spaced
    categories).

    For two raters this is Conger's kappa (:func:`conger_kappa`), which is how
    ``irrCAC`` computes it from raw ratings (``conger.kappa.raw``).

    Reference: Cohen (1960), Educ Psychol Meas 20:37; Cohen (1968), Psychol Bull 70:213;
    Gwet (2014), §2.4 and §3.

    Args:
        ratings: Long-format ratings.
        weights: ``None``/``"identity"`` or a family of :func:`weight_matrix`.
        categories: The category set (fixes the weights).
        raters: The two raters to compare; by default the data must have exactly two.

    Returns:
        In [−1, 1]; undefined unless there are exactly two raters (or ``raters`` is
        given), when no unit was rated by both, or when both raters used one and the
        same single category (``pe = 1``: "no variation").
    """
    t = rating_table(ratings, categories)
    w = weight_matrix(check_scheme(weights), t.categories)
    parts = _pair_parts(t, raters)
    if isinstance(parts, Stat):
        return parts
    return _cohen_from_parts(parts, w)


def _cohen_from_parts(parts: _PairParts, w: FloatArray) -> Stat:
    pa = float(np.sum(w * parts.table) / parts.table.sum())
    pe = float(parts.p_a @ w @ parts.p_b)
    return _chance_corrected(pa, pe)


def scott_pi(
    ratings: Ratings,
    *,
    weights: WeightScheme | None = None,
    categories: Sequence[Any] | None = None,
    raters: tuple[Any, Any] | None = None,
) -> Stat:
    """Scott's pi (Scott 1955) for two raters, weighted on request.

    ``π = (pa − pe) / (1 − pe)`` with ``pa = Σ_kl w_kl p_kl`` over the units rated by
    both (unweighted: the share of agreeing units) and ``pe = Σ_kl w_kl π_k π_l``,
    ``π_k = (p_A,k + p_B,k) / 2`` the average of the two raters' marginals (each over all
    that rater's ratings, as for :func:`cohen_kappa`). With complete data this equals
    (weighted) Fleiss' kappa for two raters and ``irrCAC``'s ``scott2.table`` on the
    raters' contingency table. For three or more raters use :func:`fleiss_kappa`.

    Reference: Scott (1955), Public Opinion Quarterly 19:321; Gwet (2014), §2.4 and ch. 3.

    Returns:
        In [−1, 1]; undefined unless there are exactly two raters (or ``raters``), when
        no unit was rated by both, or with a single category used ("no variation").
    """
    t = rating_table(ratings, categories)
    w = weight_matrix(check_scheme(weights), t.categories)
    parts = _pair_parts(t, raters)
    if isinstance(parts, Stat):
        return parts
    pa = float(np.sum(w * parts.table) / parts.table.sum())
    pi = (parts.p_a + parts.p_b) / 2.0
    return _chance_corrected(pa, float(pi @ w @ pi))


def conger_kappa(
    ratings: Ratings,
    *,
    weights: WeightScheme | None = None,
    categories: Sequence[Any] | None = None,
) -> Stat:
    """Conger's kappa (Conger 1980): Cohen's kappa generalised to any number of raters.

    ``κ_C = (pa − pe) / (1 − pe)`` with ``pa`` the (weighted) multi-rater percent
    agreement of :func:`percent_agreement` and ``pe`` the average, over all ordered pairs
    of distinct raters ``g ≠ h``, of Cohen's chance agreement ``Σ_kl w_kl p_gk p_hl``:
    ``pe = Σ_kl w_kl (p̄_k p̄_l − s²_kl / r)``, where ``p_gk`` is the share of rater
    ``g``'s ratings in category ``k`` (over *all* of ``g``'s ratings), ``p̄_k`` its mean
    over the ``r`` raters and ``s²_kl`` the sample covariance over raters of ``p_gk`` and
    ``p_gl``. With two raters it equals :func:`cohen_kappa` (also with missing ratings
    and weights).

    Missing ratings (as ``irrCAC.conger.kappa.raw``): ``pa`` averages over the units
    rated at least twice; each rater's ``p_gk`` uses all that rater's ratings, so a unit
    rated once counts in ``pe`` but not in ``pa``.

    Reference: Conger (1980), Psychol Bull 88:322; Gwet (2014), §2.5 and ch. 3;
    ``irrCAC.conger.kappa.raw``.

    Returns:
        At most 1; undefined with one rater, no unit rated twice, or when every rater
        used one and the same single category (``pe = 1``: "no variation").
    """
    t = rating_table(ratings, categories)
    w = weight_matrix(check_scheme(weights), t.categories)
    parts = _multi_parts(t, w)
    if isinstance(parts, Stat):
        return parts
    per_rater = np.bincount(t.rater * t.q + t.cat, minlength=t.n_raters * t.q).reshape(
        t.n_raters, t.q
    )
    # raters with no rating (possible in a bootstrap resample of the units) take no part
    per_rater = per_rater[per_rater.sum(axis=1) > 0]
    r = len(per_rater)
    if r < 2:
        return Stat.undefined("needs at least two raters with ratings")
    p = per_rater / per_rater.sum(axis=1, keepdims=True)
    total = p.sum(axis=0)
    same = float(np.einsum("gk,kl,gl->", p, w, p))
    pe = (float(total @ w @ total) - same) / (r * (r - 1.0))
    return _chance_corrected(parts.pa, pe)


def light_kappa(ratings: Ratings, *, categories: Sequence[Any] | None = None) -> Stat:
    """Light's kappa (Light 1971): the mean of Cohen's kappa over all pairs of raters.

    Each pair's kappa is :func:`cohen_kappa` (unweighted) on the units that pair rated in
    common, with each rater's marginal over all that rater's ratings; the ``r(r − 1)/2``
    pairwise kappas are averaged with equal weight. With two raters this is Cohen's
    kappa. (``irrCAC`` has no Light's kappa; ``irr::kappam.light`` in R first drops every
    unit with a missing rating, which this function does not.)

    Reference: Light (1971), Psychol Bull 76:365; Conger (1980).

    Returns:
        In [−1, 1] with complete data; undefined with one rater, or when the kappa of
        some pair is undefined (the pair and the reason are named) — a mean over the
        remaining pairs would silently describe different raters.
    """
    t = rating_table(ratings, categories)
    few = too_few_raters(t)
    if few is not None:
        return few
    wide = t.wide_codes()
    eye = np.eye(t.q)
    kappas: list[float] = []
    # raters with no rating (possible in a bootstrap resample of the units) take no part
    present = np.flatnonzero(np.bincount(t.rater, minlength=t.n_raters) > 0)
    if len(present) < 2:
        return Stat.undefined("needs at least two raters with ratings")
    for g, h in itertools.combinations(present.tolist(), 2):
        parts = _pair_parts_of(wide[:, g], wide[:, h], t.q)
        kappa = parts if isinstance(parts, Stat) else _cohen_from_parts(parts, eye)
        if kappa.value is None:
            if len(present) == 2:
                return kappa  # Light's kappa of two raters is their Cohen's kappa
            names = f"{t.rater_labels[g]!r} and {t.rater_labels[h]!r}"
            return Stat.undefined(f"Cohen's kappa of raters {names} is undefined: {kappa.note}")
        kappas.append(kappa.value)
    return Stat.of(math.fsum(kappas) / len(kappas))


def weighted_krippendorff_alpha(
    ratings: Ratings,
    *,
    weights: WeightScheme | None,
    categories: Sequence[Any] | None = None,
) -> Stat:
    """Krippendorff's alpha with agreement weights, as ``irrCAC.krippen.alpha.raw``.

    On the ``n′`` units rated at least twice (the others are not pairable), with
    ``r̄`` their mean number of ratings and ``ε = 1 / Σ r_i``:
    ``pa′ = (1/n′) Σ_i Σ_k r_ik (r*_ik − 1) / (r̄ (r_i − 1))``, ``pa = (1 − ε) pa′ + ε``,
    ``π_k = Σ_i r_ik / Σ_i r_i``, ``pe = Σ_kl w_kl π_k π_l`` and
    ``α = (pa − pe) / (1 − pe)``. For weights of the form ``1 − δ²/δ²_max`` this is
    Krippendorff's ``1 − D_o/D_e`` with distance ``δ²``: identity weights give the
    nominal alpha, quadratic weights the interval alpha and ratio weights the ratio
    alpha of :func:`krippendorff_alpha` (not so for ``ordinal``: Krippendorff's ordinal
    metric depends on the observed marginals, irrCAC's ordinal weights on ranks only).

    Reference: Krippendorff (2011); Gwet (2014), ch. 3 and §2.5;
    ``irrCAC.krippen.alpha.raw`` (with ``weights``).

    Returns:
        At most 1; undefined with one rater, no unit rated twice, or when all pairable
        ratings are in one category (``pe = 1``: "no variation").
    """
    t = rating_table(ratings, categories)
    w = weight_matrix(check_scheme(weights), t.categories)
    few = too_few_raters(t)
    if few is not None:
        return few
    counts = t.counts()
    m = counts.sum(axis=1)
    pairable = m >= 2
    if not pairable.any():
        return Stat.undefined("no unit was rated by two or more raters")
    c, mp = counts[pairable], m[pairable]
    r_bar = float(mp.mean())
    eps = 1.0 / float(mp.sum())
    agree = (c * (c @ w.T - 1.0)).sum(axis=1)
    pa = (1.0 - eps) * float(np.mean(agree / (r_bar * (mp - 1.0)))) + eps
    pi = c.sum(axis=0) / float(mp.sum())
    pe = float(pi @ w @ pi)
    if 1.0 - pe <= PE_TOLERANCE:
        return Stat.undefined("no variation: all pairable values are identical")
    return Stat.of((pa - pe) / (1.0 - pe))


def balanced_f1(
    ratings: Ratings,
    *,
    judge: Any,
    reference: Any,
    positive: Any = True,
    categories: Sequence[Any] | None = None,
) -> Stat:
    """Balanced F1 of a judge against a reference rater on binary verdicts.

    The mean of the F1 score for the positive class ("met") and for the negative class
    ("not met"), on the units rated by both: with ``TP, FP, FN, TN`` counted with the
    reference as truth, ``F1₊ = 2TP / (2TP + FP + FN)``, ``F1₋ = 2TN / (2TN + FN + FP)``
    and ``F1_bal = (F1₊ + F1₋) / 2`` (= scikit-learn's ``f1_score(average="macro")``
    when both classes occur).

    Args:
        ratings: Long-format ratings with at most two categories.
        judge: The rater being evaluated.
        reference: The rater taken as truth.
        positive: The positive ("met") value; every other value is negative.
        categories: The category set.

    Returns:
        In [0, 1]; undefined when no unit was rated by both or when a class occurs in
        neither the judge's nor the reference's ratings (its F1 is 0/0).

    Raises:
        ValueError: More than two categories, or unknown rater names.
    """
    t = rating_table(ratings, categories)
    if t.q > 2:
        raise ValueError(f"balanced F1 needs binary ratings (found {t.q} categories)")
    pos = category_code(t, positive)
    codes = pair_codes(t, (judge, reference))
    assert not isinstance(codes, Stat)
    j, r = codes
    both = (j >= 0) & (r >= 0)
    if not both.any():
        return Stat.undefined("no unit was rated by both the judge and the reference")
    jp = j[both] == pos
    rp = r[both] == pos
    tp = float(np.sum(jp & rp))
    fp = float(np.sum(jp & ~rp))
    fn = float(np.sum(~jp & rp))
    tn = float(np.sum(~jp & ~rp))
    value = _balanced_f1_from_counts(tp, fp, fn, tn)
    if value is None:
        return Stat.undefined("a class occurs in neither the judge's nor the reference's ratings")
    return Stat.of(value)


def _balanced_f1_from_counts(tp: float, fp: float, fn: float, tn: float) -> float | None:
    den_pos = 2.0 * tp + fp + fn
    den_neg = 2.0 * tn + fn + fp
    if den_pos == 0.0 or den_neg == 0.0:
        return None
    return (2.0 * tp / den_pos + 2.0 * tn / den_neg) / 2.0
