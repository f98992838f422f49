"""Calibration of an LLM judge against the human experts.

Four methods, each learned only on human-graded data and evaluated only on held-out
tasks:

* ``threshold`` (criterion level): the judge's probability that a criterion is met,
  ``s`` (:mod:`~gradercal.analysis.calibration.tables`), is turned into a verdict by a
  threshold ``t`` — met iff ``s ≥ t`` — chosen to maximise Cohen's kappa (or F1, or
  balanced F1) with the human consensus, overall or per criterion tag
  (:class:`ThresholdCalibrator`).
* ``leniency`` (criterion level): per criterion tag, each judge verdict ``v`` is replaced
  by the share of those verdicts the experts call met, ``q_v = P(expert met | judge
  says v, tag)`` (:class:`LeniencyCalibrator`). On the calibration data the corrected
  met rate of every tag equals the experts' met rate, so the judge's leniency (its
  met-rate excess) is removed.
* ``isotonic`` and ``platt`` (response level): a monotone mapping ``g`` of the judge's
  rubric score of a response to the experts' consensus score — isotonic regression, or
  the logistic curve ``g(x) = 1/(1 + exp(−(a x + b)))`` fitted by cross-entropy with the
  human scores as soft labels (:class:`ScoreCalibrator`; scikit-learn's
  ``IsotonicRegression`` and ``LogisticRegression``).

The modules, each importing only the ones before it:

* :mod:`~gradercal.analysis.calibration.tables`: the judge's probability ``s`` and the
  experts' consensus per item and per response; calibrated response scores;
* :mod:`~gradercal.analysis.calibration.reliability`: Brier score, reliability table, ECE;
* :mod:`~gradercal.analysis.calibration.thresholds`: what the ``threshold`` and
  ``leniency`` calibrators learn and predict, and the task folds, on plain arrays;
* :mod:`~gradercal.analysis.calibration.calibrators`: the estimators;
* :mod:`~gradercal.analysis.calibration.bootstrap`: the figures of a cross-fit and the task
  bootstrap of the whole cross-fit;
* :mod:`~gradercal.analysis.calibration.crossfit`: the held-out split and the out-of-fold
  cross-fit;
* :mod:`~gradercal.analysis.calibration.fit`: :func:`fit_calibration`, the saved
  parameters and :func:`apply_calibration`;
* :mod:`~gradercal.analysis.calibration.apply`: a judge's headline figures under its saved
  calibration (not imported here).

This package imports pandas, numpy, scikit-learn (and scipy, which it requires) and
gradercal's core only — scikit-learn only when an estimator is needed: the calibrator
classes (imported from here on first use), :attr:`CrossFit.estimator`,
:func:`fit_calibration`'s result and :func:`calibrator_from_params`, the ``isotonic`` and
``platt`` methods. A cross-fit of ``threshold`` or ``leniency`` (the dashboard's and the
report's default) computes the estimators' numbers without it
(:mod:`~gradercal.analysis.calibration.thresholds`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gradercal.analysis.calibration._types import (
    CRITERION_METHODS,
    FIGURE_LABELS,
    METHODS,
    RESPONSE_METHODS,
    Method,
    ThresholdMetric,
)
from gradercal.analysis.calibration.bootstrap import OOF_INTERVALS, OofInterval
from gradercal.analysis.calibration.crossfit import (
    MIN_HOLDOUT_TASKS,
    CrossFit,
    cross_fit,
    holdout_tasks,
)
from gradercal.analysis.calibration.fit import (
    CalibrationResult,
    apply_calibration,
    calibrator_from_params,
    criterion_cross_fit,
    fit_calibration,
)
from gradercal.analysis.calibration.reliability import (
    N_BINS,
    brier_score,
    expected_calibration_error,
    reliability_table,
)
from gradercal.analysis.calibration.tables import (
    UNTAGGED,
    calibrated_response_scores,
    item_table,
    response_table,
)

if TYPE_CHECKING:
    from gradercal.analysis.calibration.calibrators import (
        LeniencyCalibrator,
        ScoreCalibrator,
        ThresholdCalibrator,
    )

__all__ = [
    "CRITERION_METHODS",
    "FIGURE_LABELS",
    "METHODS",
    "MIN_HOLDOUT_TASKS",
    "N_BINS",
    "OOF_INTERVALS",
    "RESPONSE_METHODS",
    "UNTAGGED",
    "CalibrationResult",
    "CrossFit",
    "LeniencyCalibrator",
    "Method",
    "OofInterval",
    "ScoreCalibrator",
    "ThresholdCalibrator",
    "ThresholdMetric",
    "apply_calibration",
    "brier_score",
    "calibrated_response_scores",
    "calibrator_from_params",
    "criterion_cross_fit",
    "cross_fit",
    "expected_calibration_error",
    "fit_calibration",
    "holdout_tasks",
    "item_table",
    "reliability_table",
    "response_table",
]

#: The estimators, imported (with scikit-learn) on first use.
_ESTIMATORS = ("LeniencyCalibrator", "ScoreCalibrator", "ThresholdCalibrator")


def __getattr__(name: str) -> Any:
    if name in _ESTIMATORS:
        from gradercal.analysis.calibration import calibrators

        return getattr(calibrators, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
