"""The agreement statistics gradercal knows, one entry each: names, scope, computation.

Every statistic is one frozen :class:`Statistic` in :data:`STATISTICS`, in the order of
:func:`rating_statistics`. An entry says

* its names: the full ``label`` (``"Gwet's AC1"``, the table of ``gradercal stats``), the
  ``phrase`` used in sentences and lists (``"percent agreement"``, the agreement and report
  tables) and, where there is one, a ``short`` column header (``"AC1"``, the dashboard);
* when it applies: the ``levels`` at which :func:`rating_statistics` reports it (none for
  a comparison figure such as balanced F1) and whether it is a ``weighted`` key (present
  only when agreement weights are given, and computed with them);
* how it is computed directly: ``compute(table, options)``, a call of the coefficient
  function of :mod:`gradercal.stats.coefficients` with the :class:`Options` that apply;
* how the bootstrap recomputes it on a resample: a :class:`Resample` recipe, data that
  :mod:`gradercal.stats.bootstrap` interprets (which per-cluster sums, which formula on
  them, whether the bootstrap's ``weights=`` apply). ``None``: the bootstrap does not know
  the name; ``resampled_as`` then names the entry the bootstrap resamples instead
  (``weighted_cohen_kappa`` is the bootstrap's ``cohen_kappa`` under the weights);
* what the tests rely on: the ``bounds`` every value lies in, whether it is ``symmetric``
  (unchanged when the raters are relabelled or, for two raters, swapped), the independent
  implementation it is checked against (``reference``, in ``checked_in``) and the page of
  ``docs/`` whose table defines it (``doc``).

The tables derived here: :data:`WEIGHTED_KEYS`, :data:`BOOTSTRAP_STATISTICS`,
:func:`statistic_keys` and :func:`rating_statistics`; the command line, the report and the
dashboard take their labels from the entries.

**Weights.** A *weighted* key is computed with the agreement weights given to
:func:`rating_statistics`; every other key with identity weights, whatever ``weights``
says. The bootstrap applies its ``weights=`` to the statistics whose recipe is weighted:
the weighted keys it knows, and ``cohen_kappa``, which ``clustered_bootstrap(...,
["cohen_kappa"], weights=W)`` computes as Cohen's kappa under ``W``.

This module imports only :mod:`gradercal.stats.coefficients` (never the bootstrap).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from gradercal.stats import coefficients as co
from gradercal.stats.coefficients import (
    ICC_KINDS,
    LEVELS,
    IccKind,
    Level,
    Ratings,
    RatingTable,
    Stat,
    WeightScheme,
)
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


@dataclass(frozen=True)
class Options:
    """What a direct computation is given besides the ratings.

    Attributes:
        level: Krippendorff's level of measurement.
        weights: The agreement weights that apply to the statistic (identity for an
            unweighted one).
        judge: The first rater of a two-rater statistic (the judge of balanced F1), or
            ``None``: then the data must have exactly two raters.
        reference: The second rater (the reference of balanced F1), or ``None``.
        positive: The positive ("met") value for balanced F1.
    """

    level: Level = "nominal"
    weights: WeightScheme = "identity"
    judge: Any = None
    reference: Any = None
    positive: Any = True

    @property
    def pair(self) -> tuple[Any, Any] | None:
        """``(judge, reference)``, or ``None`` when neither is given.

        Raises:
            ValueError: Only one of them is given.
        """
        if self.judge is None and self.reference is None:
            return None
        if self.judge is None or self.reference is None:
            raise ValueError("give both judge and reference, or neither")
        return (self.judge, self.reference)


#: The per-cluster sums a recipe rests on (see :class:`Resample`).
ResampleKind = Literal["multi", "pair", "alpha", "icc", "pearson", "f1", "recompute"]


@dataclass(frozen=True)
class Resample:
    """How the bootstrap recomputes a statistic on a resample (it interprets this).

    Attributes:
        kind: ``"multi"``: Gwet's per-unit sums (agreement share, rated twice, category
            shares), ``formula`` one of ``percent_agreement``, ``fleiss_kappa``,
            ``weighted_fleiss_kappa``, ``bennett_s``, ``weighted_bennett_s``, ``gwet``;
            ``"pair"``: two raters' joint table and category counts, ``formula`` one of
            ``cohen_kappa``, ``scott_pi``, ``weighted_scott_pi``; ``"alpha"``:
            coincidence matrices at the options' level; ``"icc"``: the ANOVA sums,
            ``formula`` the ICC kind; ``"pearson"``: six moments of two raters' values;
            ``"f1"``: the judge's confusion counts; ``"recompute"``: no such sums, the
            direct computation runs on the replicated data of each resample (slow path,
            same results).
        formula: Which statistic of those sums (empty where the kind has one).
        weighted: Whether the bootstrap's ``weights=`` apply (else identity weights), to
            the direct computation and the resamples alike.
    """

    kind: ResampleKind
    formula: str = ""
    weighted: bool = False


Compute = Callable[[RatingTable, Options], Stat]


@dataclass(frozen=True, kw_only=True)
class Statistic:
    """One agreement statistic (see the module docstring for each attribute's role).

    Attributes:
        key: The name in every result (``rating_statistics``, the bootstrap, JSON).
        label: Full readable name, e.g. ``"Gwet's AC1"``.
        phrase: The name in a sentence or a list, e.g. ``"percent agreement"``.
        short: A short column header (``"AC1"``), or ``None``.
        levels: The levels at which :func:`rating_statistics` reports it; empty for a
            comparison figure (judge against reference), which it never reports.
        weighted: Present only with agreement weights, and computed with them.
        compute: The direct computation, or ``None`` for a figure computed elsewhere
            (``leniency_bias``: the agreement engine).
        batch: Computes this statistic with its siblings in one pass (the six ICCs share
            one ANOVA); :func:`rating_statistics` runs each batch once. ``None``: alone.
        resample: How the bootstrap recomputes it; ``None``: the bootstrap does not
            know this name.
        resampled_as: For a key the bootstrap does not know, the bootstrap statistic that
            resamples it under the same weights.
        bounds: ``(low, high)``: every defined value lies in it, on any data
            (``-inf`` where no lower bound holds: with missing ratings kappas can fall
            below −1).
        symmetric: Unchanged when the raters are relabelled (two raters: swapped).
        reference: The independent implementation the tests compare it with.
        checked_in: The test module that does so.
        doc: The page of the documentation whose table defines it.
    """

    key: str
    label: str
    phrase: str
    short: str | None = None
    levels: tuple[Level, ...] = LEVELS
    weighted: bool = False
    compute: Compute | None = None
    batch: Callable[[RatingTable], Mapping[str, Stat]] | None = None
    resample: Resample | None = None
    resampled_as: str | None = None
    bounds: tuple[float, float] = (-math.inf, 1.0)
    symmetric: bool = True
    reference: str
    checked_in: str
    doc: str = "docs/statistics.md"

    @property
    def bootstrap_name(self) -> str | None:
        """The name under which :func:`~gradercal.stats.bootstrap.clustered_bootstrap`
        resamples this statistic (with the weights given to it), or ``None``."""
        return self.key if self.resample is not None else self.resampled_as


# ---------------------------------------------------------------------------------------
# Direct computations
# ---------------------------------------------------------------------------------------


def _percent_agreement(t: RatingTable, o: Options) -> Stat:
    return co.percent_agreement(t, weights=o.weights)


def _cohen_kappa(t: RatingTable, o: Options) -> Stat:
    return co.cohen_kappa(t, weights=o.weights, raters=o.pair)


def _scott_pi(t: RatingTable, o: Options) -> Stat:
    return co.scott_pi(t, weights=o.weights, raters=o.pair)


def _conger_kappa(t: RatingTable, o: Options) -> Stat:
    return co.conger_kappa(t, weights=o.weights)


def _light_kappa(t: RatingTable, o: Options) -> Stat:
    return co.light_kappa(t)


def _bennett_s(t: RatingTable, o: Options) -> Stat:
    return co.bennett_s(t, weights=o.weights)


def _fleiss_kappa(t: RatingTable, o: Options) -> Stat:
    return co.fleiss_kappa(t, weights=o.weights)


def _krippendorff_alpha(t: RatingTable, o: Options) -> Stat:
    return co.krippendorff_alpha(t, level=o.level)


def _gwet_ac1(t: RatingTable, o: Options) -> Stat:
    return co.gwet_ac1(t)


def _gwet_ac2(t: RatingTable, o: Options) -> Stat:
    return co.gwet_ac2(t, weights=o.weights)


def _weighted_krippendorff_alpha(t: RatingTable, o: Options) -> Stat:
    return co.weighted_krippendorff_alpha(t, weights=o.weights)


def _icc(kind: IccKind) -> Compute:
    def compute(t: RatingTable, o: Options) -> Stat:
        return co.intraclass_correlations(t)[kind]

    return compute


def _pearson_r(t: RatingTable, o: Options) -> Stat:
    return co.pearson_r(t, raters=o.pair)


def _spearman_rho(t: RatingTable, o: Options) -> Stat:
    return co.spearman_rho(t, raters=o.pair)


def _kendall_tau(t: RatingTable, o: Options) -> Stat:
    return co.kendall_tau(t, raters=o.pair)


def _balanced_f1(t: RatingTable, o: Options) -> Stat:
    pair = o.pair
    if pair is None:
        return Stat.undefined("balanced F1 needs judge= and reference=")
    return co.balanced_f1(t, judge=pair[0], reference=pair[1], positive=o.positive)


# ---------------------------------------------------------------------------------------
# The entries, in the order of rating_statistics
# ---------------------------------------------------------------------------------------

_IRRCAC = "tests/stats/test_stats_irrcac.py"
_COEFFICIENTS = "tests/stats/test_stats_coefficients.py"
_NUMERIC_LEVELS: tuple[Level, ...] = ("interval", "ratio")
_ORDERED_LEVELS: tuple[Level, ...] = ("ordinal", "interval", "ratio")

_ICC_LABELS: dict[IccKind, str] = {
    "icc1": "ICC(1,1)",
    "icc2": "ICC(2,1)",
    "icc3": "ICC(3,1)",
    "icc1k": "ICC(1,k)",
    "icc2k": "ICC(2,k)",
    "icc3k": "ICC(3,k)",
}

_ENTRIES: tuple[Statistic, ...] = (
    # --- unweighted, at every level ------------------------------------------------------
    Statistic(
        key="percent_agreement",
        label="Percent agreement",
        phrase="percent agreement",
        short="% agree",
        compute=_percent_agreement,
        resample=Resample("multi", "percent_agreement"),
        bounds=(0.0, 1.0),
        reference="irrCAC raw.CAC (pa)",
        checked_in=_IRRCAC,
    ),
    Statistic(
        key="cohen_kappa",
        label="Cohen's kappa",
        phrase="Cohen's kappa",
        short="κ",
        compute=_cohen_kappa,
        # the bootstrap's cohen_kappa follows its weights= (weighted_cohen_kappa resamples so)
        resample=Resample("pair", "cohen_kappa", weighted=True),
        reference="sklearn.metrics.cohen_kappa_score",
        checked_in=_COEFFICIENTS,
    ),
    Statistic(
        key="scott_pi",
        label="Scott's pi",
        phrase="Scott's pi",
        compute=_scott_pi,
        resample=Resample("pair", "scott_pi"),
        reference="irrCAC table.CAC (scott2.table) and its missing-data pieces",
        checked_in=_IRRCAC,
    ),
    # Conger's chance agreement needs each rater's category shares and Light's kappa every
    # pair's table: no per-cluster sums, so they are recomputed on each resample.
    Statistic(
        key="conger_kappa",
        label="Conger's kappa",
        phrase="Conger's kappa",
        compute=_conger_kappa,
        resample=Resample("recompute"),
        reference="irrCAC raw.CAC (conger)",
        checked_in=_IRRCAC,
    ),
    Statistic(
        key="light_kappa",
        label="Light's kappa",
        phrase="Light's kappa",
        compute=_light_kappa,
        resample=Resample("recompute"),
        reference="sklearn.metrics.cohen_kappa_score, the mean over pairs of raters",
        checked_in=_COEFFICIENTS,
    ),
    Statistic(
        key="bennett_s",
        label="Bennett's S (Brennan–Prediger)",
        phrase="Bennett's S",
        compute=_bennett_s,
        resample=Resample("multi", "bennett_s"),
        reference="irrCAC raw.CAC (bp)",
        checked_in=_IRRCAC,
    ),
    Statistic(
        key="fleiss_kappa",
        label="Fleiss' kappa",
        phrase="Fleiss' kappa",
        short="Fleiss κ",
        compute=_fleiss_kappa,
        resample=Resample("multi", "fleiss_kappa"),
        reference="statsmodels.stats.inter_rater.fleiss_kappa",
        checked_in=_COEFFICIENTS,
    ),
    Statistic(
        key="krippendorff_alpha",
        label="Krippendorff's alpha",
        phrase="Krippendorff's alpha",
        short="α",
        compute=_krippendorff_alpha,
        resample=Resample("alpha"),
        reference="krippendorff.alpha",
        checked_in=_COEFFICIENTS,
    ),
    Statistic(
        key="gwet_ac1",
        label="Gwet's AC1",
        phrase="Gwet's AC1",
        short="AC1",
        compute=_gwet_ac1,
        resample=Resample("multi", "gwet"),
        reference="irrCAC raw.CAC (gwet)",
        checked_in=_IRRCAC,
    ),
    # --- weighted: only with weights, at every level -------------------------------------
    Statistic(
        key="weighted_percent_agreement",
        label="Weighted percent agreement",
        phrase="weighted percent agreement",
        weighted=True,
        compute=_percent_agreement,
        resample=Resample("multi", "percent_agreement", weighted=True),
        bounds=(0.0, 1.0),
        reference="irrCAC raw.CAC (pa, weights=)",
        checked_in=_IRRCAC,
    ),
    Statistic(
        key="weighted_cohen_kappa",
        label="Weighted Cohen's kappa",
        phrase="weighted Cohen's kappa",
        weighted=True,
        compute=_cohen_kappa,
        resampled_as="cohen_kappa",
        reference="sklearn.metrics.cohen_kappa_score (weights=)",
        checked_in=_COEFFICIENTS,
    ),
    Statistic(
        key="weighted_scott_pi",
        label="Weighted Scott's pi",
        phrase="weighted Scott's pi",
        weighted=True,
        compute=_scott_pi,
        resample=Resample("pair", "weighted_scott_pi", weighted=True),
        reference="irrCAC table.CAC (scott2.table, weights=)",
        checked_in=_IRRCAC,
    ),
    Statistic(
        key="weighted_conger_kappa",
        label="Weighted Conger's kappa",
        phrase="weighted Conger's kappa",
        weighted=True,
        compute=_conger_kappa,
        resample=Resample("recompute", weighted=True),
        reference="irrCAC raw.CAC (conger, weights=)",
        checked_in=_IRRCAC,
    ),
    Statistic(
        key="weighted_fleiss_kappa",
        label="Weighted Fleiss' kappa",
        phrase="weighted Fleiss' kappa",
        weighted=True,
        compute=_fleiss_kappa,
        resample=Resample("multi", "weighted_fleiss_kappa", weighted=True),
        reference="irrCAC raw.CAC (fleiss, weights=)",
        checked_in=_IRRCAC,
    ),
    Statistic(
        key="weighted_bennett_s",
        label="Weighted Bennett's S (Brennan–Prediger)",
        phrase="weighted Bennett's S",
        weighted=True,
        compute=_bennett_s,
        resample=Resample("multi", "weighted_bennett_s", weighted=True),
        reference="irrCAC raw.CAC (bp, weights=)",
        checked_in=_IRRCAC,
    ),
    Statistic(
        key="gwet_ac2",
        label="Gwet's AC2",
        phrase="Gwet's AC2",
        weighted=True,
        compute=_gwet_ac2,
        resample=Resample("multi", "gwet", weighted=True),
        reference="irrCAC raw.CAC (gwet, weights=)",
        checked_in=_IRRCAC,
    ),
    Statistic(
        key="weighted_krippendorff_alpha",
        label="Weighted Krippendorff's alpha (irrCAC)",
        phrase="weighted Krippendorff's alpha",
        weighted=True,
        compute=_weighted_krippendorff_alpha,
        resample=Resample("recompute", weighted=True),
        reference="irrCAC raw.CAC (krippendorff, weights=)",
        checked_in=_IRRCAC,
    ),
    # --- interval and ratio: the ICCs and Pearson's r ------------------------------------
    *(
        Statistic(
            key=kind,
            label=_ICC_LABELS[kind],
            phrase=_ICC_LABELS[kind],
            levels=_NUMERIC_LEVELS,
            compute=_icc(kind),
            batch=co.intraclass_correlations,
            resample=Resample("icc", kind),
            reference="pingouin.intraclass_corr",
            checked_in=_COEFFICIENTS,
        )
        for kind in ICC_KINDS
    ),
    Statistic(
        key="pearson_r",
        label="Pearson's r",
        phrase="Pearson's r",
        levels=_NUMERIC_LEVELS,
        compute=_pearson_r,
        resample=Resample("pearson"),
        bounds=(-1.0, 1.0),
        reference="scipy.stats.pearsonr",
        checked_in=_COEFFICIENTS,
    ),
    # --- ordinal and above: rank correlations (no per-cluster sums) ----------------------
    Statistic(
        key="spearman_rho",
        label="Spearman's rho",
        phrase="Spearman's rho",
        levels=_ORDERED_LEVELS,
        compute=_spearman_rho,
        resample=Resample("recompute"),
        bounds=(-1.0, 1.0),
        reference="scipy.stats.spearmanr",
        checked_in=_COEFFICIENTS,
    ),
    Statistic(
        key="kendall_tau",
        label="Kendall's tau-b",
        phrase="Kendall's tau-b",
        levels=_ORDERED_LEVELS,
        compute=_kendall_tau,
        resample=Resample("recompute"),
        bounds=(-1.0, 1.0),
        reference="scipy.stats.kendalltau",
        checked_in=_COEFFICIENTS,
    ),
    # --- comparison figures of a judge against a reference ------------------------------
    Statistic(
        key="balanced_f1",
        label="Balanced F1",
        phrase="balanced F1",
        short="bal. F1",
        levels=(),
        compute=_balanced_f1,
        resample=Resample("f1"),
        bounds=(0.0, 1.0),
        reference="sklearn.metrics.f1_score (average='macro')",
        checked_in=_COEFFICIENTS,
    ),
    Statistic(
        key="leniency_bias",
        label="Leniency bias",
        phrase="leniency bias",
        short="leniency",
        levels=(),
        bounds=(-1.0, 1.0),
        symmetric=False,
        reference="the difference of the two met rates",
        checked_in="tests/analysis/test_agreement.py",
        doc="docs/agreement.md",
    ),
)

#: Every statistic by key, in the order of :func:`rating_statistics` (then the
#: comparison figures).
STATISTICS: Mapping[str, Statistic] = MappingProxyType({s.key: s for s in _ENTRIES})
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
