"""Agreement statistics: inter-rater coefficients and their cluster bootstrap.

:mod:`gradercal.stats.coefficients` computes percent agreement, Cohen's kappa, Scott's
pi, Conger's and Light's kappas, Bennett's S, Fleiss' kappa, Krippendorff's alpha, Gwet's
AC1/AC2 (the irrCAC family, with its eight weight families), the Shrout & Fleiss ICCs and
correlations from long-format ratings (``unit``, ``rater``, ``value``);
:mod:`gradercal.stats.registry` holds one entry per statistic (its labels, when it
applies, how it is computed directly and how the bootstrap recomputes it) and computes
every applicable one at once (:func:`rating_statistics`);
:mod:`gradercal.stats.bootstrap` attaches task-clustered bootstrap intervals. See
``docs/statistics.md`` for definitions and conventions.

This package imports neither Qt nor SQLAlchemy.
"""

from __future__ import annotations

from gradercal.stats.bootstrap import (
    DEFAULT_STATISTICS,
    BootResult,
    bootstrap_replicates,
    cluster_labels,
    clustered_bootstrap,
    resampling_weights,
)
from gradercal.stats.coefficients import (
    ICC_KINDS,
    LEVELS,
    RATING_COLUMNS,
    WEIGHT_SCHEMES,
    IccKind,
    Level,
    Ratings,
    RatingTable,
    Stat,
    WeightScheme,
    balanced_f1,
    bennett_s,
    cohen_kappa,
    conger_kappa,
    fleiss_kappa,
    gwet_ac1,
    gwet_ac2,
    icc,
    intraclass_correlations,
    kendall_tau,
    krippendorff_alpha,
    light_kappa,
    pearson_r,
    percent_agreement,
    scott_pi,
    spearman_rho,
    weight_matrix,
    weighted_krippendorff_alpha,
)
from gradercal.stats.registry import (
    BOOTSTRAP_STATISTICS,
    STATISTICS,
    WEIGHTED_KEYS,
    Statistic,
    rating_statistics,
    statistic_keys,
)

__all__ = [
    "BOOTSTRAP_STATISTICS",
    "DEFAULT_STATISTICS",
    "ICC_KINDS",
    "LEVELS",
    "RATING_COLUMNS",
    "STATISTICS",
    "WEIGHTED_KEYS",
    "WEIGHT_SCHEMES",
    "BootResult",
    "IccKind",
    "Level",
    "RatingTable",
    "Ratings",
    "Stat",
    "Statistic",
    "WeightScheme",
    "balanced_f1",
    "bennett_s",
    "bootstrap_replicates",
    "cluster_labels",
    "clustered_bootstrap",
    "cohen_kappa",
    "conger_kappa",
    "fleiss_kappa",
    "gwet_ac1",
    "gwet_ac2",
    "icc",
    "intraclass_correlations",
    "kendall_tau",
    "krippendorff_alpha",
    "light_kappa",
    "pearson_r",
    "percent_agreement",
    "rating_statistics",
    "resampling_weights",
    "scott_pi",
    "spearman_rho",
    "statistic_keys",
    "weight_matrix",
    "weighted_krippendorff_alpha",
]
