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

The package is split by concept: :mod:`~gradercal.stats.coefficients.ratings` (the
:class:`Stat` result, prepared ratings, weights), :mod:`~gradercal.stats.coefficients.kappas`
(multi-rater and two-rater kappa-type coefficients),
:mod:`~gradercal.stats.coefficients.alpha` (Krippendorff's alpha) and
:mod:`~gradercal.stats.coefficients.correlations` (ICCs and correlations); this module
re-exports their public API. It imports only numpy, pandas, scipy and the
``krippendorff`` package.
"""

from __future__ import annotations

from gradercal.stats.coefficients.alpha import (
    alpha_from_coincidences,
    coincidence_matrix,
    distance_matrix,
    krippendorff_alpha,
    ordinal_midranks,
)
from gradercal.stats.coefficients.correlations import (
    AnovaTable,
    anova_from_sums,
    icc,
    icc_from_anova,
    intraclass_correlations,
    kendall_tau,
    pearson_r,
    spearman_rho,
)
from gradercal.stats.coefficients.kappas import (
    balanced_f1,
    bennett_s,
    cohen_kappa,
    conger_kappa,
    fleiss_kappa,
    gwet_ac1,
    gwet_ac2,
    light_kappa,
    percent_agreement,
    scott_pi,
    weighted_krippendorff_alpha,
)
from gradercal.stats.coefficients.ratings import (
    ICC_KINDS,
    LEVELS,
    RATING_COLUMNS,
    WEIGHT_SCHEMES,
    FloatArray,
    IccKind,
    IntArray,
    Level,
    Ratings,
    RatingTable,
    Stat,
    WeightScheme,
    weight_matrix,
)

__all__ = [
    "ICC_KINDS",
    "LEVELS",
    "RATING_COLUMNS",
    "WEIGHT_SCHEMES",
    "AnovaTable",
    "FloatArray",
    "IccKind",
    "IntArray",
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
