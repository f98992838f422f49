"""The catalogue of figures: every number gradercal reports, one entry each, and its views.

Every figure — each agreement statistic of :func:`~gradercal.stats.registry.rating_statistics`
and each figure of a candidate–reference comparison (precision, recall and F1 of *met*
and *not met*, balanced F1, the met rates, leniency bias) — is one frozen :class:`Figure`
in :data:`FIGURES`, in catalogue order (the statistics in the order of
``rating_statistics``, then the comparison figures). An entry says

* its names: the full ``label`` (``"Gwet's AC1"``, the table of ``gradercal stats``), the
  ``phrase`` used in sentences and lists (``"percent agreement"``, the agreement and report
  tables), where there is one a ``short`` column header (``"AC1"``, the dashboard), and
  the ``comparison_label`` of a comparison's table when it is not the phrase
  (``"agreement"``);
* why it can be undefined in a comparison (``undefined``: its denominator is zero);
* the **views** it belongs to and its rank in each (:data:`VIEWS`, :func:`view`): which
  figures the experts' agreement, the judge's rows of the dashboard, a comparison, the
  versions, the acceptance bar… report, and in which order;
* when :func:`~gradercal.stats.registry.rating_statistics` reports it (``levels``: none
  for a comparison figure) and whether it is a ``weighted`` key (present only when
  agreement weights are given, and computed with them);
* how it is computed directly (``compute(table, options)``, a call of
  :mod:`gradercal.stats.coefficients` with the :class:`Options` that apply; ``None`` for a
  figure the agreement engine computes from confusion counts) and how the bootstrap
  recomputes it on a resample (a :class:`Resample` recipe that
  :mod:`gradercal.stats.bootstrap` interprets; ``None``: the bootstrap does not know the
  name, ``resampled_as`` then names the entry it resamples instead);
* what the tests rely on: the ``bounds`` every value lies in, whether it is ``symmetric``
  (unchanged when the raters are relabelled or, for two raters, swapped), the independent
  implementation it is checked against (``reference``, in ``checked_in``) and the page of
  ``docs/`` whose ``| key | …`` table defines it (``doc``).

Everything else is derived from the entries: the registry's tables
(:mod:`gradercal.stats.registry`), the experts' and judges' statistics of the agreement
engine and the dashboard, the column order of the dashboard, the report's phrases, the
statistics an acceptance bar may use, the figures per criterion version, the bootstrap's
default statistics. **Adding a figure** is its computation, one entry here (with its
views) and one row in its docs page; the lists, labels, orders, JSON keys and the tests
that check every statistic follow.

This module imports nothing at load time (the computations import
:mod:`gradercal.stats.coefficients` when first called), so the command line can build its
``--help`` choices from a view without loading numpy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from gradercal.stats.coefficients import IccKind, Level, RatingTable, Stat, WeightScheme

    #: A direct computation: the ratings and the options that apply → the figure.
    Compute = Callable[[RatingTable, "Options"], Stat]

__all__ = [
    "FIGURES",
    "VIEWS",
    "Figure",
    "Options",
    "Resample",
    "ResampleKind",
    "in_view",
    "view",
]

#: The levels of measurement (:data:`gradercal.stats.coefficients.LEVELS`, restated so this
#: module loads nothing; a test checks they are the same).
_LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval", "ratio")
_ICC_KINDS: tuple[IccKind, ...] = ("icc1", "icc2", "icc3", "icc1k", "icc2k", "icc3k")

#: The views of the catalogue: which figures a part of gradercal reports, in which order.
VIEWS: Mapping[str, str] = MappingProxyType(
    {
        "human": "the experts' agreement on every set of units (agreement, dashboard, "
        "report; the bootstrap's default statistics)",
        "comparison": "a candidate against a reference (judge or human vs consensus, pairs)",
        "judge": "the judges' rows of the dashboard's agreement table",
        "columns": "the column order of the dashboard's agreement table",
        "headline": "the experts' statistics shown first in the dashboard's agreement table",
        "version": "the experts' agreement per criterion version",
        "version_judge": "the judge against the consensus per criterion version",
        "acceptance": "the statistics a task's acceptance bar may use",
        "wilson": "the acceptance statistics whose interval is the clustered Wilson interval",
    }
)


def _in(**ranks: float) -> tuple[tuple[str, float], ...]:
    """The views of an entry with its rank in each (``_in(human=1, judge=2)``)."""
    unknown = set(ranks) - set(VIEWS)
    if unknown:
        raise ValueError(f"unknown views {sorted(unknown)}; expected one of {list(VIEWS)}")
    return tuple(ranks.items())


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


@dataclass(frozen=True, kw_only=True)
class Figure:
    """One figure gradercal reports (see the module docstring for each attribute's role).

    Attributes:
        key: The name in every result (``rating_statistics``, the bootstrap, JSON).
        label: Full readable name, e.g. ``"Gwet's AC1"``.
        phrase: The name in a sentence or a list, e.g. ``"percent agreement"``.
        short: A short column header (``"AC1"``), or ``None``.
        comparison_label: Its name in a comparison's table (``gradercal agreement``)
            when that is not ``phrase``.
        undefined: Why it is undefined in a comparison (its denominator is zero); empty
            for a figure that is not one.
        views: ``(view, rank)`` for each view of :data:`VIEWS` it belongs to: a view lists
            its figures by rank (ties in catalogue order); a rank may be fractional, to
            place a new figure between two others.
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
    comparison_label: str = ""
    undefined: str = ""
    views: tuple[tuple[str, float], ...] = ()
    levels: tuple[Level, ...] = _LEVELS
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

    def rank(self, name: str) -> float | None:
        """Its rank in the view ``name``, or ``None`` when it is not in that view."""
        return dict(self.views).get(name)


# ---------------------------------------------------------------------------------------
# Direct computations
# ---------------------------------------------------------------------------------------


def _percent_agreement(t: RatingTable, o: Options) -> Stat:
    from gradercal.stats import coefficients as co

    return co.percent_agreement(t, weights=o.weights)


def _cohen_kappa(t: RatingTable, o: Options) -> Stat:
    from gradercal.stats import coefficients as co

    return co.cohen_kappa(t, weights=o.weights, raters=o.pair)


def _scott_pi(t: RatingTable, o: Options) -> Stat:
    from gradercal.stats import coefficients as co

    return co.scott_pi(t, weights=o.weights, raters=o.pair)


def _conger_kappa(t: RatingTable, o: Options) -> Stat:
    from gradercal.stats import coefficients as co

    return co.conger_kappa(t, weights=o.weights)


def _light_kappa(t: RatingTable, o: Options) -> Stat:
    from gradercal.stats import coefficients as co

    return co.light_kappa(t)


def _bennett_s(t: RatingTable, o: Options) -> Stat:
    from gradercal.stats import coefficients as co

    return co.bennett_s(t, weights=o.weights)


def _fleiss_kappa(t: RatingTable, o: Options) -> Stat:
    from gradercal.stats import coefficients as co

    return co.fleiss_kappa(t, weights=o.weights)


def _krippendorff_alpha(t: RatingTable, o: Options) -> Stat:
    from gradercal.stats import coefficients as co

    return co.krippendorff_alpha(t, level=o.level)


def _gwet_ac1(t: RatingTable, o: Options) -> Stat:
    from gradercal.stats import coefficients as co

    return co.gwet_ac1(t)


def _gwet_ac2(t: RatingTable, o: Options) -> Stat:
    from gradercal.stats import coefficients as co

    return co.gwet_ac2(t, weights=o.weights)


def _weighted_krippendorff_alpha(t: RatingTable, o: Options) -> Stat:
    from gradercal.stats import coefficients as co

    return co.weighted_krippendorff_alpha(t, weights=o.weights)


def _icc_batch(t: RatingTable) -> Mapping[str, Stat]:
    from gradercal.stats import coefficients as co

    return co.intraclass_correlations(t)


def _icc(kind: IccKind) -> Compute:
    def compute(t: RatingTable, o: Options) -> Stat:
        return _icc_batch(t)[kind]

    return compute


def _pearson_r(t: RatingTable, o: Options) -> Stat:
    from gradercal.stats import coefficients as co

    return co.pearson_r(t, raters=o.pair)


def _spearman_rho(t: RatingTable, o: Options) -> Stat:
    from gradercal.stats import coefficients as co

    return co.spearman_rho(t, raters=o.pair)


def _kendall_tau(t: RatingTable, o: Options) -> Stat:
    from gradercal.stats import coefficients as co

    return co.kendall_tau(t, raters=o.pair)


def _balanced_f1(t: RatingTable, o: Options) -> Stat:
    from gradercal.stats import coefficients as co

    pair = o.pair
    if pair is None:
        return co.Stat.undefined("balanced F1 needs judge= and reference=")
    return co.balanced_f1(t, judge=pair[0], reference=pair[1], positive=o.positive)


# ---------------------------------------------------------------------------------------
# The entries: the statistics in the order of rating_statistics, then the comparison figures
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

_NOBODY = "no unit rated by both"
_AGREEMENT = "tests/analysis/test_agreement.py"
_CONFUSION = "the confusion counts (docs/agreement.md), checked by hand"

_ENTRIES: tuple[Figure, ...] = (
    # --- unweighted, at every level ------------------------------------------------------
    Figure(
        key="percent_agreement",
        label="Percent agreement",
        phrase="percent agreement",
        short="% agree",
        compute=_percent_agreement,
        resample=Resample("multi", "percent_agreement"),
        bounds=(0.0, 1.0),
        reference="irrCAC raw.CAC (pa)",
        checked_in=_IRRCAC,
        comparison_label="agreement",
        undefined=_NOBODY,
        views=_in(
            human=1,
            comparison=1,
            judge=1,
            columns=2,
            headline=2,
            version=1,
            version_judge=1,
            acceptance=1,
            wilson=1,
        ),
    ),
    Figure(
        key="cohen_kappa",
        label="Cohen's kappa",
        phrase="Cohen's kappa",
        short="κ",
        compute=_cohen_kappa,
        # the bootstrap's cohen_kappa follows its weights= (weighted_cohen_kappa resamples so)
        resample=Resample("pair", "cohen_kappa", weighted=True),
        reference="sklearn.metrics.cohen_kappa_score",
        checked_in=_COEFFICIENTS,
        undefined="no variation: chance agreement is 1 (both used a single category)",
        views=_in(comparison=9, judge=2, columns=3, version_judge=2),
    ),
    Figure(
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
    Figure(
        key="conger_kappa",
        label="Conger's kappa",
        phrase="Conger's kappa",
        compute=_conger_kappa,
        resample=Resample("recompute"),
        reference="irrCAC raw.CAC (conger)",
        checked_in=_IRRCAC,
        views=_in(acceptance=7),
    ),
    Figure(
        key="light_kappa",
        label="Light's kappa",
        phrase="Light's kappa",
        compute=_light_kappa,
        resample=Resample("recompute"),
        reference="sklearn.metrics.cohen_kappa_score, the mean over pairs of raters",
        checked_in=_COEFFICIENTS,
        views=_in(acceptance=6),
    ),
    Figure(
        key="bennett_s",
        label="Bennett's S (Brennan–Prediger)",
        phrase="Bennett's S",
        compute=_bennett_s,
        resample=Resample("multi", "bennett_s"),
        reference="irrCAC raw.CAC (bp)",
        checked_in=_IRRCAC,
        views=_in(acceptance=5, wilson=2),
    ),
    Figure(
        key="fleiss_kappa",
        label="Fleiss' kappa",
        phrase="Fleiss' kappa",
        short="Fleiss κ",
        compute=_fleiss_kappa,
        resample=Resample("multi", "fleiss_kappa"),
        reference="statsmodels.stats.inter_rater.fleiss_kappa",
        checked_in=_COEFFICIENTS,
        views=_in(human=2, columns=6, acceptance=4),
    ),
    Figure(
        key="krippendorff_alpha",
        label="Krippendorff's alpha",
        phrase="Krippendorff's alpha",
        short="α",
        compute=_krippendorff_alpha,
        resample=Resample("alpha"),
        reference="krippendorff.alpha",
        checked_in=_COEFFICIENTS,
        views=_in(human=4, columns=1, headline=1, version=2, acceptance=3),
    ),
    Figure(
        key="gwet_ac1",
        label="Gwet's AC1",
        phrase="Gwet's AC1",
        short="AC1",
        compute=_gwet_ac1,
        resample=Resample("multi", "gwet"),
        reference="irrCAC raw.CAC (gwet)",
        checked_in=_IRRCAC,
        views=_in(human=3, columns=7, acceptance=2),
    ),
    # --- weighted: only with weights, at every level -------------------------------------
    Figure(
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
    Figure(
        key="weighted_cohen_kappa",
        label="Weighted Cohen's kappa",
        phrase="weighted Cohen's kappa",
        weighted=True,
        compute=_cohen_kappa,
        resampled_as="cohen_kappa",
        reference="sklearn.metrics.cohen_kappa_score (weights=)",
        checked_in=_COEFFICIENTS,
    ),
    Figure(
        key="weighted_scott_pi",
        label="Weighted Scott's pi",
        phrase="weighted Scott's pi",
        weighted=True,
        compute=_scott_pi,
        resample=Resample("pair", "weighted_scott_pi", weighted=True),
        reference="irrCAC table.CAC (scott2.table, weights=)",
        checked_in=_IRRCAC,
    ),
    Figure(
        key="weighted_conger_kappa",
        label="Weighted Conger's kappa",
        phrase="weighted Conger's kappa",
        weighted=True,
        compute=_conger_kappa,
        resample=Resample("recompute", weighted=True),
        reference="irrCAC raw.CAC (conger, weights=)",
        checked_in=_IRRCAC,
    ),
    Figure(
        key="weighted_fleiss_kappa",
        label="Weighted Fleiss' kappa",
        phrase="weighted Fleiss' kappa",
        weighted=True,
        compute=_fleiss_kappa,
        resample=Resample("multi", "weighted_fleiss_kappa", weighted=True),
        reference="irrCAC raw.CAC (fleiss, weights=)",
        checked_in=_IRRCAC,
    ),
    Figure(
        key="weighted_bennett_s",
        label="Weighted Bennett's S (Brennan–Prediger)",
        phrase="weighted Bennett's S",
        weighted=True,
        compute=_bennett_s,
        resample=Resample("multi", "weighted_bennett_s", weighted=True),
        reference="irrCAC raw.CAC (bp, weights=)",
        checked_in=_IRRCAC,
    ),
    Figure(
        key="gwet_ac2",
        label="Gwet's AC2",
        phrase="Gwet's AC2",
        weighted=True,
        compute=_gwet_ac2,
        resample=Resample("multi", "gwet", weighted=True),
        reference="irrCAC raw.CAC (gwet, weights=)",
        checked_in=_IRRCAC,
    ),
    Figure(
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
        Figure(
            key=kind,
            label=_ICC_LABELS[kind],
            phrase=_ICC_LABELS[kind],
            levels=_NUMERIC_LEVELS,
            compute=_icc(kind),
            batch=_icc_batch,
            resample=Resample("icc", kind),
            reference="pingouin.intraclass_corr",
            checked_in=_COEFFICIENTS,
        )
        for kind in _ICC_KINDS
    ),
    Figure(
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
    Figure(
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
    Figure(
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
    Figure(
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
        undefined="a class occurs in neither the candidate's nor the reference's verdicts",
        views=_in(comparison=8, judge=3, columns=4),
    ),
    Figure(
        key="precision_met",
        label="Precision (met)",
        phrase="precision (met)",
        undefined="the candidate never said met",
        views=_in(comparison=2),
        levels=(),
        bounds=(0.0, 1.0),
        symmetric=False,
        reference=_CONFUSION,
        checked_in=_AGREEMENT,
        doc="docs/agreement.md",
    ),
    Figure(
        key="recall_met",
        label="Recall (met)",
        phrase="recall (met)",
        undefined="the reference never said met",
        views=_in(comparison=3),
        levels=(),
        bounds=(0.0, 1.0),
        symmetric=False,
        reference=_CONFUSION,
        checked_in=_AGREEMENT,
        doc="docs/agreement.md",
    ),
    Figure(
        key="f1_met",
        label="F1 (met)",
        phrase="F1 (met)",
        undefined="neither said met",
        views=_in(comparison=4),
        levels=(),
        bounds=(0.0, 1.0),
        symmetric=True,
        reference=_CONFUSION,
        checked_in=_AGREEMENT,
        doc="docs/agreement.md",
    ),
    Figure(
        key="precision_not_met",
        label="Precision (not met)",
        phrase="precision (not met)",
        undefined="the candidate never said not met",
        views=_in(comparison=5),
        levels=(),
        bounds=(0.0, 1.0),
        symmetric=False,
        reference=_CONFUSION,
        checked_in=_AGREEMENT,
        doc="docs/agreement.md",
    ),
    Figure(
        key="recall_not_met",
        label="Recall (not met)",
        phrase="recall (not met)",
        undefined="the reference never said not met",
        views=_in(comparison=6),
        levels=(),
        bounds=(0.0, 1.0),
        symmetric=False,
        reference=_CONFUSION,
        checked_in=_AGREEMENT,
        doc="docs/agreement.md",
    ),
    Figure(
        key="f1_not_met",
        label="F1 (not met)",
        phrase="F1 (not met)",
        undefined="neither said not met",
        views=_in(comparison=7),
        levels=(),
        bounds=(0.0, 1.0),
        symmetric=True,
        reference=_CONFUSION,
        checked_in=_AGREEMENT,
        doc="docs/agreement.md",
    ),
    Figure(
        key="candidate_met_rate",
        label="Met rate",
        phrase="met rate",
        undefined=_NOBODY,
        views=_in(comparison=10),
        levels=(),
        bounds=(0.0, 1.0),
        symmetric=False,
        reference=_CONFUSION,
        checked_in=_AGREEMENT,
        doc="docs/agreement.md",
    ),
    Figure(
        key="reference_met_rate",
        label="Reference met rate",
        phrase="reference met rate",
        undefined=_NOBODY,
        views=_in(comparison=11),
        levels=(),
        bounds=(0.0, 1.0),
        symmetric=False,
        reference=_CONFUSION,
        checked_in=_AGREEMENT,
        doc="docs/agreement.md",
    ),
    Figure(
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
        undefined=_NOBODY,
        views=_in(comparison=12, judge=4, columns=5),
    ),
)

#: Every figure by key, in catalogue order.
FIGURES: Mapping[str, Figure] = MappingProxyType({f.key: f for f in _ENTRIES})


def view(name: str) -> tuple[str, ...]:
    """The keys of the figures in the view ``name`` (one of :data:`VIEWS`), by rank.

    Raises:
        KeyError: Unknown view.
    """
    if name not in VIEWS:
        raise KeyError(f"unknown view {name!r}; expected one of {list(VIEWS)}")
    ranked = [
        (rank, i, f.key) for i, f in enumerate(_ENTRIES) if (rank := f.rank(name)) is not None
    ]
    return tuple(key for _, _, key in sorted(ranked))


def in_view(name: str) -> tuple[Figure, ...]:
    """The entries of the view ``name``, by rank (see :func:`view`)."""
    return tuple(FIGURES[key] for key in view(name))
