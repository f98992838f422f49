"""Inter-rater agreement coefficients on long-format ratings.

Input is a "long" table with one row per rating: columns ``unit`` (what was rated, e.g.
one criterion of one response), ``rater`` (who rated it) and ``value`` (the rating).
Missing ratings are simply absent rows (rows whose ``value`` is missing are dropped), so
every coefficient here is defined on incomplete designs wherever its definition allows.

Notation used in the docstrings (Gwet, *Handbook of Inter-Rater Reliability*, 4th ed.,
2014; the formulas of the ``irrCAC`` package):

* ``n`` units with at least one rating, ``q`` categories (the *category set*: by default
  the values observed, or the ``categories`` argument, which matters for Bennett's S and
  Gwet's AC1/AC2 since their chance agreement depends on ``q``);
* ``r_ik`` the number of raters who put unit ``i`` in category ``k``, ``r_i = Σ_k r_ik``;
* ``w_kl`` agreement weights (1 on the diagonal; see :func:`weight_matrix`) and
  ``r*_ik = Σ_l w_kl r_il``;
* ``n₂`` the number of units with ``r_i ≥ 2``.

Every function returns a :class:`Stat`: a value, or ``None`` with a note saying why the
coefficient is undefined on these data (one rater, no unit rated twice, no variation, …).
Malformed input (missing columns, duplicate ``(unit, rater)`` pairs, text values where
numbers are needed, an unknown level) raises :class:`ValueError` instead.

This module imports only numpy, pandas, scipy and the ``krippendorff`` package.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, get_args

import krippendorff
import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats as sps  # type: ignore[import-untyped, unused-ignore]

__all__ = [
    "ICC_KINDS",
    "LEVELS",
    "RATING_COLUMNS",
    "WEIGHT_SCHEMES",
    "AnovaTable",
    "IccKind",
    "Level",
    "RatingTable",
    "Ratings",
    "Stat",
    "WeightScheme",
    "alpha_from_coincidences",
    "anova_from_sums",
    "balanced_f1",
    "bennett_s",
    "cohen_kappa",
    "coincidence_matrix",
    "conger_kappa",
    "distance_matrix",
    "fleiss_kappa",
    "gwet_ac1",
    "gwet_ac2",
    "icc",
    "icc_from_anova",
    "intraclass_correlations",
    "kendall_tau",
    "krippendorff_alpha",
    "light_kappa",
    "ordinal_midranks",
    "pearson_r",
    "percent_agreement",
    "scott_pi",
    "spearman_rho",
    "weight_matrix",
    "weighted_krippendorff_alpha",
]

FloatArray: TypeAlias = npt.NDArray[np.float64]
IntArray: TypeAlias = npt.NDArray[np.intp]

Level = Literal["nominal", "ordinal", "interval", "ratio"]
WeightScheme = Literal[
    "identity", "linear", "quadratic", "ordinal", "radical", "ratio", "circular", "bipolar"
]
IccKind = Literal["icc1", "icc2", "icc3", "icc1k", "icc2k", "icc3k"]

#: Krippendorff's levels of measurement, in order.
LEVELS: tuple[Level, ...] = get_args(Level)
#: Agreement-weight families of Gwet (2014, ch. 3) and ``irrCAC`` (``None`` means
#: ``"identity"``, i.e. unweighted).
WEIGHT_SCHEMES: tuple[WeightScheme, ...] = get_args(WeightScheme)
#: The six Shrout & Fleiss (1979) intraclass correlations.
ICC_KINDS: tuple[IccKind, ...] = get_args(IccKind)
#: Columns of a long-format ratings frame.
RATING_COLUMNS: tuple[str, str, str] = ("unit", "rater", "value")

#: A chance agreement within this distance of 1 makes a kappa-type coefficient 0/0.
_PE_TOLERANCE = 1e-12
#: Relative size under which an ANOVA denominator (ICC) or alpha's expected
#: disagreement counts as zero.
_REL_TOLERANCE = 1e-12
#: Largest ``n_units × q²`` handed to the ``krippendorff`` package, whose
#: coincidence step materialises an array of that size (three times).
_KRIPPENDORFF_PACKAGE_MAX_CELLS = 4_000_000


# ---------------------------------------------------------------------------------------
# Result type
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stat:
    """A statistic's value, or ``None`` with the reason it is undefined.

    Attributes:
        value: A finite float, or ``None`` when the statistic is undefined on these data.
        note: Why the value is ``None`` (always set then); ``None`` when there is a value.
    """

    value: float | None
    note: str | None = None

    def __post_init__(self) -> None:
        if self.value is None:
            if not self.note:
                raise ValueError("an undefined Stat needs a note saying why")
        elif not math.isfinite(self.value):
            raise ValueError(f"Stat value must be finite, got {self.value!r}")

    @classmethod
    def of(cls, value: float) -> Stat:
        """A defined statistic (converted to a Python float)."""
        return cls(float(value), None)

    @classmethod
    def undefined(cls, note: str) -> Stat:
        """An undefined statistic with the reason."""
        return cls(None, note)


# ---------------------------------------------------------------------------------------
# Prepared ratings
# ---------------------------------------------------------------------------------------


def _is_number(x: object) -> bool:
    return isinstance(x, numbers.Real | np.bool_) and not isinstance(x, str)


@dataclass(frozen=True, eq=False)
class RatingTable:
    """Ratings coded as integer arrays, one entry per (unit, rater) rating.

    Build one with :meth:`from_frame`. Every public function of this module accepts
    either a ratings DataFrame or a ``RatingTable`` (preparing once is cheaper when many
    statistics are computed on the same data).

    Attributes:
        unit: Unit code of each rating (``0 … n_units-1``; every unit has ≥ 1 rating).
        rater: Rater code of each rating (``0 … n_raters-1``).
        cat: Category code of each rating (index into ``categories``).
        unit_labels: The original unit identifiers, by code.
        rater_labels: The original rater identifiers, by code.
        categories: The category set, sorted (numbers ascending, or strings).
        numeric: Whether the categories are numbers (``categories`` then holds floats).
    """

    unit: IntArray
    rater: IntArray
    cat: IntArray
    unit_labels: npt.NDArray[Any]
    rater_labels: npt.NDArray[Any]
    categories: npt.NDArray[Any]
    numeric: bool

    @property
    def n_units(self) -> int:
        return len(self.unit_labels)

    @property
    def n_raters(self) -> int:
        return len(self.rater_labels)

    @property
    def n_ratings(self) -> int:
        return len(self.cat)

    @property
    def q(self) -> int:
        """The number of categories in the category set."""
        return len(self.categories)

    @property
    def category_values(self) -> FloatArray:
        """The categories as floats.

        Raises:
            ValueError: The categories are not numbers.
        """
        if not self.numeric:
            raise ValueError("the ratings are not numbers")
        return np.asarray(self.categories, dtype=np.float64)

    @property
    def values(self) -> FloatArray:
        """The numeric value of each rating (needs numeric categories)."""
        return self.category_values[self.cat]

    @classmethod
    def from_frame(
        cls,
        df: pd.DataFrame,
        categories: Sequence[Any] | None = None,
        *,
        columns: tuple[str, str, str] = RATING_COLUMNS,
    ) -> RatingTable:
        """Code a long-format ratings frame.

        Args:
            df: One row per rating with the columns named by ``columns`` (default
                ``unit``, ``rater``, ``value``); other columns are ignored. Rows whose
                value is missing (None/NaN/NA) are dropped: a missing rating.
            categories: The full category set (e.g. ``[0, 1]`` for met / not met). By
                default the set of observed values. Must contain every observed value.
            columns: Names of the unit, rater and value columns.

        Returns:
            The coded table. Booleans become 0/1; numbers become floats (so ``1`` and
            ``1.0`` are one category); otherwise values must all be strings.

        Raises:
            ValueError: A column is absent, a unit or rater is missing, a value is
                infinite, values mix numbers and text, a ``(unit, rater)`` pair occurs
                twice, or a value is outside ``categories``.
        """
        ucol, rcol, vcol = columns
        absent = [c for c in columns if c not in df.columns]
        if absent:
            raise ValueError(f"ratings lack columns: {', '.join(absent)}")
        sub = df.loc[~df[vcol].isna(), [ucol, rcol, vcol]]
        if sub[ucol].isna().any() or sub[rcol].isna().any():
            raise ValueError(f"ratings have missing {ucol!r} or {rcol!r} identifiers")
        unit_codes, unit_labels = pd.factorize(sub[ucol], sort=False)
        rater_codes, rater_labels = pd.factorize(sub[rcol], sort=False)
        unit = np.asarray(unit_codes, dtype=np.intp)
        rater = np.asarray(rater_codes, dtype=np.intp)
        n_raters = len(rater_labels)
        key = unit * max(n_raters, 1) + rater
        _, first, counts = np.unique(key, return_index=True, return_counts=True)
        if (counts > 1).any():
            dup = first[np.argmax(counts > 1)]
            raise ValueError(
                f"rater {sub[rcol].iloc[dup]!r} rated unit {sub[ucol].iloc[dup]!r} more than once"
            )
        raw = sub[vcol]
        numeric_values = _as_numbers(raw)
        if numeric_values is not None:
            if not np.isfinite(numeric_values).all():
                raise ValueError("ratings contain infinite values")
            observed: npt.NDArray[Any] = np.unique(numeric_values)
            data: npt.NDArray[Any] = numeric_values
            numeric = True
        else:
            texts = raw.to_numpy(dtype=object)
            if not all(isinstance(v, str) for v in texts):
                raise ValueError("ratings mix numbers and text; use one kind of value")
            data = texts.astype(str)
            observed = np.unique(data)
            numeric = False
        cats = observed if categories is None else _category_set(categories, numeric)
        cat = np.searchsorted(cats, data)
        cat = np.minimum(cat, len(cats) - 1) if len(cats) else cat
        bad = (cats[cat] != data) if len(cats) else np.ones(len(data), dtype=bool)
        if len(data) and bad.any():
            raise ValueError(f"value {data[np.argmax(bad)]!r} is not in the categories")
        return cls(
            unit=unit,
            rater=rater,
            cat=np.asarray(cat, dtype=np.intp),
            unit_labels=np.asarray(unit_labels, dtype=object),
            rater_labels=np.asarray(rater_labels, dtype=object),
            categories=cats,
            numeric=numeric,
        )

    def counts(self) -> FloatArray:
        """The ``n_units × q`` matrix ``r_ik`` of raters per unit and category."""
        flat = np.bincount(self.unit * self.q + self.cat, minlength=self.n_units * self.q)
        return flat.reshape(self.n_units, self.q).astype(np.float64)

    def wide_codes(self) -> IntArray:
        """The ``n_units × n_raters`` matrix of category codes, ``-1`` where missing."""
        out = np.full((self.n_units, self.n_raters), -1, dtype=np.intp)
        out[self.unit, self.rater] = self.cat
        return out

    def wide_values(self) -> FloatArray:
        """The ``n_units × n_raters`` matrix of numeric values, NaN where missing."""
        out = np.full((self.n_units, self.n_raters), np.nan)
        out[self.unit, self.rater] = self.values
        return out

    def rater_index(self, name: Any) -> int:
        """The code of rater ``name``.

        Raises:
            ValueError: No such rater.
        """
        hits = np.flatnonzero(self.rater_labels == name)
        if len(hits) == 0:
            raise ValueError(f"no rater named {name!r}")
        return int(hits[0])


def _as_numbers(raw: pd.Series) -> FloatArray | None:
    """The values as floats when they are all numbers (or booleans), else ``None``."""
    if pd.api.types.is_bool_dtype(raw.dtype) or pd.api.types.is_numeric_dtype(raw.dtype):
        return np.asarray(raw.to_numpy(dtype=np.float64), dtype=np.float64)
    values = raw.to_numpy(dtype=object)
    if len(values) and all(_is_number(v) for v in values):
        return np.asarray(values.astype(np.float64), dtype=np.float64)
    return None


def _category_set(categories: Sequence[Any], numeric: bool) -> npt.NDArray[Any]:
    items = list(categories)
    if not items:
        raise ValueError("categories must not be empty")
    if numeric:
        if not all(_is_number(c) for c in items):
            raise ValueError("numeric ratings need numeric categories")
        cats = np.asarray(items, dtype=np.float64)
        if not np.isfinite(cats).all():
            raise ValueError("categories must be finite")
    else:
        if not all(isinstance(c, str) for c in items):
            raise ValueError("text ratings need text categories")
        cats = np.asarray(items, dtype=str)
    out = np.unique(cats)
    if len(out) != len(items):
        raise ValueError("categories must not repeat")
    return out


#: What the public functions accept as ratings.
Ratings: TypeAlias = pd.DataFrame | RatingTable


def _table(ratings: Ratings, categories: Sequence[Any] | None = None) -> RatingTable:
    if isinstance(ratings, RatingTable):
        if categories is not None:
            cats = _category_set(categories, ratings.numeric)
            if not np.array_equal(cats, ratings.categories):
                raise ValueError("pass categories when building the RatingTable")
        return ratings
    return RatingTable.from_frame(ratings, categories)


# ---------------------------------------------------------------------------------------
# Weights
# ---------------------------------------------------------------------------------------


def weight_matrix(scheme: WeightScheme | None, categories: npt.ArrayLike) -> FloatArray:
    """Agreement weights ``w_kl`` between categories (Gwet 2014, ch. 3; ``irrCAC``).

    With ``x_1 < … < x_q`` the numeric category values, ``k``, ``l`` their ranks
    ``1 … q``, ``s = x_max − x_min``:

    * ``identity`` (or ``None``): ``w_kl = 1`` if ``k = l`` else 0 (unweighted).
    * ``linear``: ``1 − |x_k − x_l| / s``.
    * ``quadratic``: ``1 − (x_k − x_l)² / s²``.
    * ``radical``: ``1 − √|x_k − x_l| / √s``.
    * ``ordinal``: ``1 − m_kl / m_max`` with ``m_kl = C(|k − l| + 1, 2)``, the number
      of pairs of ranks between ``k`` and ``l`` (ranks only, not values).
    * ``ratio``: ``1 − ((x_k − x_l)/(x_k + x_l))² / ((x_max − x_min)/(x_max + x_min))²``
      (needs positive values).
    * ``circular``: ``1 − d_kl / d_max`` with ``d_kl = sin²(π (x_k − x_l) / (s + 1))``:
      the scale wraps around (meant for consecutive integers, where ``s + 1 = q``).
    * ``bipolar``: ``1 − d_kl / d_max`` with ``d_kl = (x_k − x_l)² /
      ((x_k + x_l − 2 x_min)(2 x_max − x_k − x_l))`` for ``k ≠ l`` and 0 on the
      diagonal: disagreements near either end of the scale cost more.

    ``d_max``/``m_max`` are the largest off-diagonal values, so every family has ones on
    the diagonal and 0 for the most distant pair (for ``circular``, distant on the
    circle). With equally spaced categories linear and quadratic are Cohen's (1968)
    weights on the ranks.

    Args:
        scheme: The weight family.
        categories: The category set (numbers for every family but identity; rows and
            columns follow its order).

    Returns:
        A symmetric ``q × q`` matrix with ones on the diagonal (the identity when
        ``q < 2``).

    Raises:
        ValueError: Unknown scheme, non-numeric categories with a non-identity scheme,
            or a category ≤ 0 with ``ratio`` weights.
    """
    cats = np.asarray(categories)
    q = len(cats)
    if scheme is None or scheme == "identity":
        return np.eye(q)
    if scheme not in WEIGHT_SCHEMES:
        raise ValueError(f"unknown weights {scheme!r}; expected one of {WEIGHT_SCHEMES}")
    if cats.dtype.kind not in "biuf":
        raise ValueError(f"{scheme} weights need numeric categories")
    x = cats.astype(np.float64)
    if scheme == "ratio" and q and float(x.min()) <= 0.0:
        raise ValueError(f"ratio weights need positive category values (found {float(x.min()):g})")
    if q < 2:
        return np.eye(q)
    diff = x[:, None] - x[None, :]
    lo, hi = float(x.min()), float(x.max())
    span = hi - lo
    if scheme == "linear":
        return np.asarray(1.0 - np.abs(diff) / span, dtype=np.float64)
    if scheme == "quadratic":
        return np.asarray(1.0 - (diff / span) ** 2, dtype=np.float64)
    if scheme == "radical":
        return np.asarray(1.0 - np.sqrt(np.abs(diff) / span), dtype=np.float64)
    if scheme == "ratio":
        total = x[:, None] + x[None, :]
        scale = (span / (hi + lo)) ** 2
        return np.asarray(1.0 - (diff / total) ** 2 / scale, dtype=np.float64)
    if scheme == "ordinal":
        rank = np.argsort(np.argsort(x)).astype(np.float64)
        gap = np.abs(rank[:, None] - rank[None, :])
        d = gap * (gap + 1.0) / 2.0
    elif scheme == "circular":
        d = np.sin(np.pi * diff / (span + 1.0)) ** 2
    else:  # bipolar
        off = ~np.eye(q, dtype=bool)
        den = (x[:, None] + x[None, :] - 2.0 * lo) * (2.0 * hi - x[:, None] - x[None, :])
        d = np.zeros((q, q))
        d[off] = diff[off] ** 2 / den[off]
    np.fill_diagonal(d, 0.0)
    return np.asarray(1.0 - d / float(d.max()), dtype=np.float64)


def _check_scheme(weights: WeightScheme | None) -> WeightScheme:
    scheme: WeightScheme = "identity" if weights is None else weights
    if scheme not in WEIGHT_SCHEMES:
        raise ValueError(f"unknown weights {weights!r}; expected one of {WEIGHT_SCHEMES}")
    return scheme


# ---------------------------------------------------------------------------------------
# Multi-rater coefficients (Gwet's formulas, missing ratings allowed)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _MultiParts:
    pa: float  # (weighted) percent agreement over units with >= 2 ratings
    pi: FloatArray  # pi_k = (1/n) sum_i r_ik / r_i over all n units


def _too_few_raters(t: RatingTable) -> Stat | None:
    if t.n_ratings == 0:
        return Stat.undefined("no ratings")
    if t.n_raters < 2:
        return Stat.undefined("only one rater")
    return None


def _multi_parts(t: RatingTable, w: FloatArray) -> _MultiParts | Stat:
    few = _too_few_raters(t)
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
    if 1.0 - pe <= _PE_TOLERANCE:
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
    t = _table(ratings, categories)
    parts = _multi_parts(t, weight_matrix(_check_scheme(weights), t.categories))
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
    t = _table(ratings, categories)
    w = weight_matrix(_check_scheme(weights), t.categories)
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
    t = _table(ratings, categories)
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
    t = _table(ratings, categories)
    return _gwet(t, weight_matrix(_check_scheme(weights), t.categories))


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
    t = _table(ratings, categories)
    w = weight_matrix(_check_scheme(weights), t.categories)
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


def _pair_codes(t: RatingTable, raters: tuple[Any, Any] | None) -> tuple[IntArray, IntArray] | Stat:
    if raters is None:
        if t.n_raters != 2:
            return Stat.undefined(f"needs exactly two raters (found {t.n_raters})")
        ia, ib = 0, 1
    else:
        ia, ib = t.rater_index(raters[0]), t.rater_index(raters[1])
        if ia == ib:
            raise ValueError("the two raters must differ")
    wide = t.wide_codes()
    return wide[:, ia], wide[:, ib]


def _pair_parts(t: RatingTable, raters: tuple[Any, Any] | None) -> _PairParts | Stat:
    codes = _pair_codes(t, raters)
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
    t = _table(ratings, categories)
    w = weight_matrix(_check_scheme(weights), t.categories)
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
    t = _table(ratings, categories)
    w = weight_matrix(_check_scheme(weights), t.categories)
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
    t = _table(ratings, categories)
    w = weight_matrix(_check_scheme(weights), t.categories)
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
    t = _table(ratings, categories)
    few = _too_few_raters(t)
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
    t = _table(ratings, categories)
    w = weight_matrix(_check_scheme(weights), t.categories)
    few = _too_few_raters(t)
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
    if 1.0 - pe <= _PE_TOLERANCE:
        return Stat.undefined("no variation: all pairable values are identical")
    return Stat.of((pa - pe) / (1.0 - pe))


def _category_code(t: RatingTable, label: Any) -> int | None:
    if t.numeric:
        if not _is_number(label):
            raise ValueError(f"positive label {label!r} is not a number like the ratings")
        hits = np.flatnonzero(t.category_values == float(label))
    else:
        hits = np.flatnonzero(t.categories == str(label))
    return int(hits[0]) if len(hits) else None


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
    t = _table(ratings, categories)
    if t.q > 2:
        raise ValueError(f"balanced F1 needs binary ratings (found {t.q} categories)")
    pos = _category_code(t, positive)
    codes = _pair_codes(t, (judge, reference))
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


# ---------------------------------------------------------------------------------------
# Krippendorff's alpha
# ---------------------------------------------------------------------------------------


def _check_level(level: str) -> Level:
    for lv in LEVELS:
        if level == lv:
            return lv
    raise ValueError(f"unknown level {level!r}; expected one of {LEVELS}")


def _check_level_values(t: RatingTable, level: Level) -> None:
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


def _pairs(t: RatingTable) -> tuple[IntArray, IntArray, FloatArray, IntArray]:
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
    c, k, weight, _ = _pairs(t)
    q = t.q
    flat = np.bincount(c * q + k, weights=weight, minlength=q * q)
    return np.asarray(flat, dtype=np.float64).reshape(q, q)


def alpha_from_coincidences(o: FloatArray, delta2: FloatArray) -> float | None:
    """``α = 1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck``, ``None`` when the denominator is 0."""
    n_c = o.sum(axis=1)
    n = float(n_c.sum())
    d_o = float(np.sum(o * delta2))
    d_e = float(np.sum(np.outer(n_c, n_c) * delta2)) / (n - 1.0)
    if d_e <= _REL_TOLERANCE * max(n, 1.0):
        return None
    return 1.0 - d_o / d_e


def _alpha_direct(t: RatingTable, level: Level) -> float | None:
    """Krippendorff's alpha from the pairs, without a ``q × q`` array per unit.

    Used when the ``krippendorff`` package would need too much memory (many units and
    many distinct values). Nominal, ordinal and interval use moment identities for the
    expected disagreement; ratio sums over category pairs in blocks.
    """
    c, k, weight, _ = _pairs(t)
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
    if d_e <= _REL_TOLERANCE * max(n, 1.0):
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
    lv = _check_level(level)
    t = _table(ratings, categories)
    _check_level_values(t, lv)
    few = _too_few_raters(t)
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


# ---------------------------------------------------------------------------------------
# Intraclass correlations (Shrout & Fleiss 1979)
# ---------------------------------------------------------------------------------------


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
    if den <= _REL_TOLERANCE * a.mss or a.mss <= 0.0:
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
    few = _too_few_raters(t)
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
    t = _table(ratings)
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
    t = _table(ratings)
    if not t.numeric:
        raise ValueError("correlations need numeric ratings")
    codes = _pair_codes(t, raters)
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
    return Stat.of(float(sps.pearsonr(*xy).statistic))


def spearman_rho(ratings: Ratings, *, raters: tuple[Any, Any] | None = None) -> Stat:
    """Spearman's rank correlation (Pearson on mid-ranks, ties averaged), paired units.

    Reference: ``scipy.stats.spearmanr``. Undefined as for :func:`pearson_r`.
    """
    xy = _paired_values(ratings, raters)
    if isinstance(xy, Stat):
        return xy
    return Stat.of(float(sps.spearmanr(*xy).statistic))


def kendall_tau(ratings: Ratings, *, raters: tuple[Any, Any] | None = None) -> Stat:
    """Kendall's tau-b (tie-corrected) of two raters' values on the units both rated.

    Reference: Kendall (1945); ``scipy.stats.kendalltau`` (``variant="b"``). Undefined
    as for :func:`pearson_r`.
    """
    xy = _paired_values(ratings, raters)
    if isinstance(xy, Stat):
        return xy
    return Stat.of(float(sps.kendalltau(*xy, variant="b").statistic))
