"""Prepared ratings, the result type and agreement weights of :mod:`gradercal.stats.coefficients`.

:class:`Stat` (a value or the reason it is undefined), :class:`RatingTable` (long-format
ratings coded once as integer arrays), the type names and constants every coefficient
shares, the agreement weights of Gwet (2014, ch. 3) (:func:`weight_matrix`), and the
small helpers the coefficient modules and the bootstrap share: preparing ratings
(:func:`rating_table`), checking a weight scheme, the "fewer than two raters" rule and
one pair of raters' codes.

This module imports only numpy and pandas.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, get_args

import numpy as np
import numpy.typing as npt
import pandas as pd

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
PE_TOLERANCE = 1e-12

#: Relative size under which an ANOVA denominator (ICC) or alpha's expected
#: disagreement counts as zero.
REL_TOLERANCE = 1e-12


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


def rating_table(ratings: Ratings, categories: Sequence[Any] | None = None) -> RatingTable:
    """The ratings as a :class:`RatingTable` (built from a frame, or the table itself).

    Raises:
        ValueError: Malformed ratings, or ``categories`` that differ from those a
            given ``RatingTable`` was built with.
    """
    if isinstance(ratings, RatingTable):
        if categories is not None:
            cats = _category_set(categories, ratings.numeric)
            if not np.array_equal(cats, ratings.categories):
                raise ValueError("pass categories when building the RatingTable")
        return ratings
    return RatingTable.from_frame(ratings, categories)


def too_few_raters(t: RatingTable) -> Stat | None:
    """Why no agreement coefficient is defined (no ratings, one rater), else ``None``."""
    if t.n_ratings == 0:
        return Stat.undefined("no ratings")
    if t.n_raters < 2:
        return Stat.undefined("only one rater")
    return None


def pair_codes(t: RatingTable, raters: tuple[Any, Any] | None) -> tuple[IntArray, IntArray] | Stat:
    """Two raters' codes per unit (``-1`` where missing).

    ``raters`` names the two; ``None`` means the only two raters, undefined when there are
    not exactly two. Raises :class:`ValueError` for unknown or equal names.
    """
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


def category_code(t: RatingTable, label: Any) -> int | None:
    """The code of category ``label`` in ``t``, ``None`` when it was not observed.

    Raises:
        ValueError: A non-numeric label for numeric ratings.
    """
    if t.numeric:
        if not _is_number(label):
            raise ValueError(f"positive label {label!r} is not a number like the ratings")
        hits = np.flatnonzero(t.category_values == float(label))
    else:
        hits = np.flatnonzero(t.categories == str(label))
    return int(hits[0]) if len(hits) else None


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


def check_scheme(weights: WeightScheme | None) -> WeightScheme:
    """The weight scheme (``None`` is ``"identity"``); :class:`ValueError` if unknown."""
    scheme: WeightScheme = "identity" if weights is None else weights
    if scheme not in WEIGHT_SCHEMES:
        raise ValueError(f"unknown weights {weights!r}; expected one of {WEIGHT_SCHEMES}")
    return scheme
