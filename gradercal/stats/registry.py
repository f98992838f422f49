"""The agreement statistics gradercal computes: the registry's tables over the catalogue.

Every statistic, like every other figure gradercal reports, is one frozen entry of
:mod:`gradercal.stats.catalogue` (its names, views, scope, computation, bootstrap recipe
and what the tests rely on; the catalogue's docstring describes each attribute).
:data:`STATISTICS` is that catalogue under the registry's name (``Statistic`` is its
entry type), in catalogue order: the statistics of :func:`rating_statistics` in its
order, then the comparison figures (``levels`` empty, never reported here).

The tables derived here: :data:`WEIGHTED_KEYS`, :data:`BOOTSTRAP_STATISTICS`,
:func:`statistic_keys` and :func:`rating_statistics`; the command line, the report and the
dashboard take their labels from the entries.

**Weights.** A *weighted* key is computed with the agreement weights given to
:func:`rating_statistics`; every other key with identity weights, whatever ``weights``
says. The bootstrap applies its ``weights=`` to the statistics whose recipe is weighted:
the weighted keys it knows, and ``cohen_kappa``, which ``clustered_bootstrap(...,
["cohen_kappa"], weights=W)`` computes as Cohen's kappa under ``W``.

This module imports only :mod:`gradercal.stats.coefficients` and the catalogue (never the
bootstrap).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gradercal.stats import coefficients as co
from gradercal.stats.catalogue import FIGURES, Figure, Options, Resample, ResampleKind
from gradercal.stats.coefficients import Level, Ratings, RatingTable, Stat, WeightScheme
from gradercal.stats.coefficients.alpha import check_level, check_level_values
from gradercal.stats.coefficients.ratings import check_scheme, rating_table

__all__ = [
    "BOOTSTRAP_STATISTICS",
    "STATISTICS",
    "WEIGHTED_KEYS",
    "Options",
    "Resample",
    "ResampleKind",
    "Statistic",
    "rating_statistics",
    "statistic_keys",
]


#: An entry of the catalogue (the registry's name for a :class:`Figure`).
Statistic = Figure
_ENTRIES: tuple[Figure, ...] = tuple(FIGURES.values())

#: Every statistic by key, in the order of :func:`rating_statistics` (then the
#: comparison figures): the catalogue.
STATISTICS: Mapping[str, Statistic] = FIGURES
#: Keys of :func:`rating_statistics` computed with the agreement weights (present only
#: when weights other than identity are given). Every other key is unweighted.
WEIGHTED_KEYS: tuple[str, ...] = tuple(s.key for s in _ENTRIES if s.weighted)
#: Every statistic the bootstrap knows (the keys of ``rating_statistics`` but
#: ``weighted_cohen_kappa``, which it resamples as ``cohen_kappa``, + balanced F1).
BOOTSTRAP_STATISTICS: tuple[str, ...] = tuple(s.key for s in _ENTRIES if s.resample is not None)


# ---------------------------------------------------------------------------------------
# Everything at once
# ---------------------------------------------------------------------------------------


def statistic_keys(
    level: Level = "nominal", weights: WeightScheme | None = None
) -> tuple[str, ...]:
    """The keys :func:`rating_statistics` returns for a level and weighting, in order."""
    lv = check_level(level)
    weighted = check_scheme(weights) != "identity"
    return tuple(s.key for s in _ENTRIES if lv in s.levels and (weighted or not s.weighted))


def rating_statistics(
    df: Ratings,
    level: Level = "nominal",
    weights: WeightScheme | None = None,
    *,
    categories: Sequence[Any] | None = None,
) -> dict[str, Stat]:
    """Every applicable agreement statistic of long-format ratings.

    Keys (see :func:`statistic_keys`), always **unweighted**: ``percent_agreement``,
    ``cohen_kappa`` and ``scott_pi`` (need exactly two raters), ``conger_kappa``,
    ``light_kappa``, ``bennett_s``, ``fleiss_kappa``, ``krippendorff_alpha`` (at
    ``level``), ``gwet_ac1``. With ``weights`` (other than identity) also the
    :data:`WEIGHTED_KEYS`, computed with those weights: ``weighted_percent_agreement``,
    ``weighted_cohen_kappa`` and ``weighted_scott_pi`` (two raters),
    ``weighted_conger_kappa``, ``weighted_fleiss_kappa``, ``weighted_bennett_s``,
    ``gwet_ac2`` and ``weighted_krippendorff_alpha`` (irrCAC's). At the interval and
    ratio levels ``icc1`` … ``icc3k`` and ``pearson_r``; at the ordinal, interval and
    ratio levels ``spearman_rho`` and ``kendall_tau`` (two raters). A key is present
    whenever the options make the statistic applicable; data that leave it undefined
    (e.g. four raters for Cohen's kappa, incomplete data for ICC) give a null
    :class:`Stat` with a note.

    Args:
        df: Long-format ratings (``unit``, ``rater``, ``value``) or a RatingTable.
        level: Krippendorff's level of measurement; also selects ICC and correlations.
        weights: ``None``/``"identity"`` or one of :data:`WEIGHT_SCHEMES`: adds the
            weighted keys (the unweighted keys never change with it).
        categories: The full category set (see :class:`RatingTable`).

    Raises:
        ValueError: Malformed ratings, unknown options, text values at a numeric level
            or with weights, a category ≤ 0 with ratio weights.
    """
    lv = check_level(level)
    scheme = check_scheme(weights)
    t = rating_table(df, categories)
    check_level_values(t, lv)
    co.weight_matrix(scheme, t.categories)  # refuses text and, for ratio, values ≤ 0
    plain = Options(level=lv)
    with_weights = Options(level=lv, weights=scheme)
    batches: dict[Callable[[RatingTable], Mapping[str, Stat]], Mapping[str, Stat]] = {}
    out: dict[str, Stat] = {}
    for key in statistic_keys(lv, weights):
        s = STATISTICS[key]
        if s.batch is not None:
            if s.batch not in batches:
                batches[s.batch] = s.batch(t)
            out[key] = batches[s.batch][key]
        else:
            assert s.compute is not None, key
            out[key] = s.compute(t, with_weights if s.weighted else plain)
    return out
