"""The calibrators: scikit-learn estimators of the four methods.

* :class:`ThresholdCalibrator` (``threshold``): met iff the judge's probability ``s ≥
  t``, with ``t`` chosen to maximise Cohen's kappa (or F1, or balanced F1) with the human
  consensus, overall or per criterion tag;
* :class:`LeniencyCalibrator` (``leniency``): per criterion tag, the threshold whose met
  rate matches the experts';
* :class:`ScoreCalibrator` (``isotonic``, ``platt``): a monotone map of the judge's rubric
  score of a response to the experts' consensus score.

Calibrators follow scikit-learn's estimator conventions (``__init__`` stores arguments,
``fit`` returns ``self``, learned attributes end in ``_``).
"""

from __future__ import annotations

import math
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin  # type: ignore[import-untyped, unused-ignore]

from gradercal.analysis.calibration._types import (
    RESPONSE_METHODS,
    FloatArray,
    Method,
    ThresholdMetric,
)
from gradercal.analysis.calibration.thresholds import (
    LENIENCY_MIN_GROUP_SIZE,
    THRESHOLD_MIN_GROUP_SIZE,
    ThresholdFit,
    fit_thresholds,
    group_codes,
    leniencies,
    threshold_curve,
    threshold_from_counts,
    thresholds_from_counts,
    thresholds_of,
)

__all__ = [
    "LeniencyCalibrator",
    "ScoreCalibrator",
    "ThresholdCalibrator",
    "calibrator_from_fit",
    "thresholds_from_counts",
]

# (the arithmetic lives in :mod:`gradercal.analysis.calibration.thresholds`; the names the
# tests and older callers know stay importable from here)
_groups = group_codes
_threshold_curve = threshold_curve
_threshold_from_counts = threshold_from_counts


def _validate_fit(
    est: BaseEstimator, X: Any, y: Any, *, classifier: bool
) -> tuple[FloatArray, Any]:
    from sklearn.utils.multiclass import check_classification_targets  # type: ignore[import-untyped, unused-ignore]
    from sklearn.utils.validation import validate_data  # type: ignore[import-untyped, unused-ignore]

    Xv, yv = validate_data(est, X, y, dtype=np.float64, y_numeric=not classifier)
    if classifier:
        check_classification_targets(yv)
    return np.asarray(Xv, np.float64), yv


def _validate_predict(est: BaseEstimator, X: Any) -> FloatArray:
    from sklearn.utils.validation import check_is_fitted, validate_data  # type: ignore[import-untyped, unused-ignore]

    check_is_fitted(est)
    return np.asarray(validate_data(est, X, dtype=np.float64, reset=False), np.float64)


def _binary_target(est: Any, y: Any) -> npt.NDArray[np.bool_]:
    from sklearn.utils.multiclass import type_of_target  # type: ignore[import-untyped, unused-ignore]

    classes = np.unique(y)
    if len(classes) > 2:
        kind = type_of_target(y, input_name="y", raise_unknown=True)
        raise ValueError(
            f"Only binary classification is supported. The type of the target is {kind}."
        )
    est.classes_ = classes
    return np.asarray(y == classes[-1], dtype=bool)


class ThresholdBase(ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """Shared prediction of the threshold-type calibrators (per-group thresholds)."""

    per_group: bool
    min_group_size: int
    classes_: Any
    threshold_: float
    score_: float
    group_thresholds_: dict[int, float]

    def _fit_thresholds(self, X: Any, y: Any, metric: str) -> tuple[FloatArray, Any]:
        Xv, yv = _validate_fit(self, X, y, classifier=True)
        yb = _binary_target(self, yv)
        self.threshold_, self.score_, self.group_thresholds_ = fit_thresholds(
            Xv, yb, self.per_group, self.min_group_size, metric
        )
        return Xv, yb

    def _thresholds(self, Xv: FloatArray) -> FloatArray:
        return thresholds_of(Xv, self.per_group, self.threshold_, self.group_thresholds_)

    def decision_function(self, X: Any) -> FloatArray:
        """``s − t`` (positive: met)."""
        Xv = _validate_predict(self, X)
        return Xv[:, 0] - self._thresholds(Xv)

    def predict(self, X: Any) -> Any:
        """The class label: ``classes_[-1]`` when ``s ≥ t``."""
        Xv = _validate_predict(self, X)
        met = Xv[:, 0] >= self._thresholds(Xv)
        return self.classes_[np.where(met, len(self.classes_) - 1, 0)]

    def predict_proba(self, X: Any) -> FloatArray:
        """Hard probabilities ``[1 − met, met]`` (a threshold carries no probability)."""
        Xv = _validate_predict(self, X)
        met = (Xv[:, 0] >= self._thresholds(Xv)).astype(np.float64)
        if len(self.classes_) == 1:
            return np.ones((len(Xv), 1))
        return np.column_stack([1.0 - met, met])

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.classifier_tags.poor_score = True
        return tags


class ThresholdCalibrator(ThresholdBase):
    """Predict "met" when the judge's probability reaches a learned threshold.

    ``X[:, 0]`` is the judge's probability ``s`` of met; with ``per_group=True``,
    ``X[:, 1]`` holds integer group codes (e.g. criterion tags). The threshold ``t``
    maximises ``metric`` (``"kappa"``: Cohen's kappa; ``"f1"``: F1 of the positive
    class; ``"balanced_f1"``) of ``s ≥ t`` against ``y`` over the candidates ``min s``,
    the midpoints between consecutive distinct values of ``s`` and just above ``max s``;
    ties go to the candidate closest to 0.5, the uncalibrated rule. Groups with fewer
    than ``min_group_size`` items, or with one class only, use the overall threshold.

    Attributes:
        classes_: The class labels (``classes_[-1]`` is "met").
        threshold_: The overall threshold.
        score_: The metric at ``threshold_`` on the training data.
        group_thresholds_: ``{group code: threshold}`` (empty without ``per_group``).
        n_features_in_: Columns of ``X`` seen in ``fit``.
    """

    def __init__(
        self,
        metric: ThresholdMetric = "kappa",
        per_group: bool = False,
        min_group_size: int = THRESHOLD_MIN_GROUP_SIZE,
    ) -> None:
        self.metric = metric
        self.per_group = per_group
        self.min_group_size = min_group_size

    def fit(self, X: Any, y: Any) -> ThresholdCalibrator:
        """Learn the threshold(s) from probabilities ``X[:, 0]`` and labels ``y``."""
        if self.metric not in get_args(ThresholdMetric):
            raise ValueError(f"metric must be one of {get_args(ThresholdMetric)}")
        self._fit_thresholds(X, y, self.metric)
        return self


class LeniencyCalibrator(ThresholdBase):
    """Per-tag leniency correction: match the judge's met rate to the experts'.

    ``X[:, 0]`` is the judge's probability ``s`` of met; with ``per_group=True``,
    ``X[:, 1]`` holds integer group codes (criterion tags). For each group (and
    overall) the threshold ``t`` is the candidate (as in :class:`ThresholdCalibrator`)
    whose met rate ``share(s ≥ t)`` is closest to the experts' met rate ``share(y)`` on
    the training data: a lenient judge's least confident "met" verdicts become "not
    met" (a severe judge's least confident "not met" verdicts become "met") until the
    rates match. Without confidences (``s`` ∈ {0, 1}) only the raw verdicts, "all met"
    and "none met" are possible, so the raw verdicts are usually kept. Groups with
    fewer than ``min_group_size`` items or one class use the overall threshold.

    Attributes:
        classes_: The class labels (``classes_[-1]`` is "met").
        threshold_: The overall threshold.
        score_: Minus the remaining gap between the two met rates overall.
        group_thresholds_: ``{group code: threshold}``.
        leniency_: ``{group code: raw judge met rate (s ≥ 0.5) − expert met rate}`` on
            the training data (key −1: overall).
        n_features_in_: Columns of ``X`` seen in ``fit``.
    """

    def __init__(
        self, per_group: bool = True, min_group_size: int = LENIENCY_MIN_GROUP_SIZE
    ) -> None:
        self.per_group = per_group
        self.min_group_size = min_group_size

    def fit(self, X: Any, y: Any) -> LeniencyCalibrator:
        """Learn the rate-matching threshold(s) from ``X[:, 0]`` and labels ``y``."""
        Xv, yb = self._fit_thresholds(X, y, "rate")
        self.leniency_: dict[int, float] = leniencies(Xv, yb, self.per_group)
        return self


class ScoreCalibrator(RegressorMixin, BaseEstimator):  # type: ignore[misc]
    """A monotone map of judge scores (``X[:, 0]``) to human scores ``y``.

    ``bounds=(lo, hi)`` (default ``(0, 1)``, rubric scores) is the range of ``y`` and of
    the predictions; ``bounds=None`` takes the range of the training targets.
    ``method="isotonic"``: scikit-learn's ``IsotonicRegression(increasing=True,
    y_min=lo, y_max=hi, out_of_bounds="clip")``. ``method="platt"``: ``g(x) = lo + (hi −
    lo)·σ(a x + b)`` with ``a, b`` minimising the cross-entropy of ``σ(a x + b)`` against
    the soft labels ``z = (y − lo)/(hi − lo)`` (scikit-learn's unpenalised
    ``LogisticRegression`` with every row entered as a positive of weight ``z`` and a
    negative of weight ``1 − z``). When every ``z`` is equal the map is that constant.

    Attributes:
        y_low_, y_high_: The bounds used.
        X_thresholds_, y_thresholds_: The isotonic step points (isotonic only;
            prediction interpolates linearly between them and clips outside).
        coef_, intercept_: ``a`` and ``b`` (Platt only; NaN for a constant map).
        constant_: The constant soft label (Platt with constant targets), else None.
        n_features_in_: Columns of ``X`` seen in ``fit``.

    Raises:
        ValueError: In ``fit``, targets outside ``bounds`` or an unknown method.
    """

    def __init__(
        self,
        method: Literal["isotonic", "platt"] = "isotonic",
        bounds: tuple[float, float] | None = (0.0, 1.0),
    ) -> None:
        self.method = method
        self.bounds = bounds

    def fit(self, X: Any, y: Any) -> ScoreCalibrator:
        """Fit the mapping."""
        if self.method not in RESPONSE_METHODS:
            raise ValueError(f"method must be one of {RESPONSE_METHODS}, not {self.method!r}")
        Xv, yv = _validate_fit(self, X, y, classifier=False)
        yf = np.asarray(yv, dtype=np.float64)
        if self.bounds is None:
            lo, hi = float(np.min(yf)), float(np.max(yf))
        else:
            lo, hi = float(self.bounds[0]), float(self.bounds[1])
            if not lo < hi:
                raise ValueError("bounds must be (low, high) with low < high")
            if np.any(yf < lo) or np.any(yf > hi):
                raise ValueError(f"targets must lie in [{lo:g}, {hi:g}] (rubric scores)")
        self.y_low_, self.y_high_ = lo, hi
        x = Xv[:, 0]
        if self.method == "isotonic":
            from sklearn.isotonic import IsotonicRegression  # type: ignore[import-untyped, unused-ignore]

            iso = IsotonicRegression(increasing=True, y_min=lo, y_max=hi, out_of_bounds="clip")
            iso.fit(x, yf)
            self.X_thresholds_ = np.asarray(iso.X_thresholds_, np.float64)
            self.y_thresholds_ = np.asarray(iso.y_thresholds_, np.float64)
            return self
        z = (yf - lo) / (hi - lo) if hi > lo else np.zeros_like(yf)
        self.constant_: float | None = None
        self.coef_, self.intercept_ = math.nan, math.nan
        if np.all(z == z[0]):
            self.constant_ = float(z[0])
            return self
        from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped, unused-ignore]

        xx = np.concatenate([x, x])[:, None]
        lab = np.concatenate([np.ones(len(x)), np.zeros(len(x))])
        w = np.concatenate([z, 1.0 - z])
        lr = LogisticRegression(C=np.inf, max_iter=1000).fit(xx, lab, sample_weight=w)
        self.coef_ = float(lr.coef_[0, 0])
        self.intercept_ = float(lr.intercept_[0])
        return self

    def predict(self, X: Any) -> FloatArray:
        """Calibrated scores within the bounds."""
        Xv = _validate_predict(self, X)
        x = Xv[:, 0]
        if self.method == "isotonic":
            if len(self.X_thresholds_) == 1:
                return np.full(len(x), float(self.y_thresholds_[0]))
            return np.asarray(np.interp(x, self.X_thresholds_, self.y_thresholds_), np.float64)
        if self.constant_ is not None:
            z = np.full(len(x), self.constant_)
        else:
            z = 1.0 / (1.0 + np.exp(-(self.coef_ * x + self.intercept_)))
        return np.asarray(self.y_low_ + (self.y_high_ - self.y_low_) * z, np.float64)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags


def make_calibrator(method: Method, per_group: bool, metric: ThresholdMetric) -> BaseEstimator:
    """A new, unfitted calibrator of ``method`` (``metric``: what a threshold maximises)."""
    if method == "threshold":
        return ThresholdCalibrator(metric=metric, per_group=per_group)
    if method == "leniency":
        return LeniencyCalibrator(per_group=per_group)
    return ScoreCalibrator(method=method)


def calibrator_from_fit(fit: ThresholdFit) -> ThresholdBase:
    """The fitted estimator whose ``fit`` learned ``fit`` (a cross-fit computed without
    scikit-learn: :func:`gradercal.analysis.calibration.crossfit.cross_fit`): the same
    parameters and fitted attributes as the estimator fitted on the same rows."""
    est: ThresholdBase
    if fit.method == "threshold":
        est = ThresholdCalibrator(metric=fit.metric, per_group=fit.per_group)  # type: ignore[arg-type]
    elif fit.method == "leniency":
        est = LeniencyCalibrator(per_group=fit.per_group)
    else:
        raise ValueError(f"not a threshold-type method: {fit.method!r}")
    est.classes_ = fit.classes
    est.threshold_, est.score_ = fit.threshold, fit.score
    est.group_thresholds_ = dict(fit.group_thresholds)
    if isinstance(est, LeniencyCalibrator):
        est.leniency_ = dict(fit.leniency or {})
    est.n_features_in_ = fit.n_features
    return est
