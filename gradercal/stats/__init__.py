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

This package imports neither Qt nor SQLAlchemy; its names load on first use.
:mod:`gradercal.stats.catalogue` holds the one entry of every figure gradercal reports
and its views.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

#: Where each name of the package lives: imported on first use, so that importing
#: :mod:`gradercal.stats.catalogue` (the command line's ``--help`` choices) loads no numpy.
_LAZY: dict[str, str] = {
    "DEFAULT_STATISTICS": "gradercal.stats.bootstrap",
    "BootResult": "gradercal.stats.bootstrap",
    "bootstrap_replicates": "gradercal.stats.bootstrap",
    "cluster_labels": "gradercal.stats.bootstrap",
    "clustered_bootstrap": "gradercal.stats.bootstrap",
    "resampling_weights": "gradercal.stats.bootstrap",
    "ICC_KINDS": "gradercal.stats.coefficients",
    "LEVELS": "gradercal.stats.coefficients",
    "RATING_COLUMNS": "gradercal.stats.coefficients",
    "WEIGHT_SCHEMES": "gradercal.stats.coefficients",
    "IccKind": "gradercal.stats.coefficients",
    "Level": "gradercal.stats.coefficients",
    "Ratings": "gradercal.stats.coefficients",
    "RatingTable": "gradercal.stats.coefficients",
    "Stat": "gradercal.stats.coefficients",
    "WeightScheme": "gradercal.stats.coefficients",
    "balanced_f1": "gradercal.stats.coefficients",
    "bennett_s": "gradercal.stats.coefficients",
    "cohen_kappa": "gradercal.stats.coefficients",
    "conger_kappa": "gradercal.stats.coefficients",
    "fleiss_kappa": "gradercal.stats.coefficients",
    "gwet_ac1": "gradercal.stats.coefficients",
    "gwet_ac2": "gradercal.stats.coefficients",
    "icc": "gradercal.stats.coefficients",
    "intraclass_correlations": "gradercal.stats.coefficients",
    "kendall_tau": "gradercal.stats.coefficients",
    "krippendorff_alpha": "gradercal.stats.coefficients",
    "light_kappa": "gradercal.stats.coefficients",
    "pearson_r": "gradercal.stats.coefficients",
    "percent_agreement": "gradercal.stats.coefficients",
    "scott_pi": "gradercal.stats.coefficients",
    "spearman_rho": "gradercal.stats.coefficients",
    "weight_matrix": "gradercal.stats.coefficients",
    "weighted_krippendorff_alpha": "gradercal.stats.coefficients",
    "BOOTSTRAP_STATISTICS": "gradercal.stats.registry",
    "STATISTICS": "gradercal.stats.registry",
    "WEIGHTED_KEYS": "gradercal.stats.registry",
    "Statistic": "gradercal.stats.registry",
    "rating_statistics": "gradercal.stats.registry",
    "statistic_keys": "gradercal.stats.registry",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


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
