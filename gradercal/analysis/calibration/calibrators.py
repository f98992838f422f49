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

from gradercal.analysis.agreement import comparison_metrics
from gradercal.analysis.calibration._types import (
    RESPONSE_METHODS,
    FloatArray,
    Method,
    ThresholdMetric,
)

__all__ = ["LeniencyCalibrator", "ScoreCalibrator", "ThresholdCalibrator"]


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


def _groups(X: FloatArray, per_group: bool) -> npt.NDArray[np.int64]:
    if not per_group:
        return np.full(len(X), -1, dtype=np.int64)
    if X.shape[1] < 2:
        raise ValueError(
            f"per_group needs a second column of X with group codes (n_features = {X.shape[1]})"
        )
    return np.asarray(np.rint(X[:, 1]), dtype=np.int64)


def _threshold_curve(
    score: FloatArray, y: npt.NDArray[np.bool_], metric: str
) -> tuple[float, float]:
    """The threshold that is best for ``metric`` of ``score ≥ t`` against ``y``, and its value.

    Candidates: ``min s``, the midpoints between consecutive distinct values of ``s`` and
    just above ``max s``. ``metric="rate"`` minimises ``|share(s ≥ t) − share(y)|``
    (its value is reported as minus that gap). Ties go to the candidate closest to 0.5.
    """
    u = np.unique(score)
    cands = np.concatenate([[u[0]], (u[:-1] + u[1:]) / 2.0, [np.nextafter(u[-1], np.inf)]])
    # Counts of s ≥ t for every candidate from the sorted scores (O(n log n)).
    order = np.argsort(score, kind="stable")
    s_sorted = score[order]
    y_sorted = y[order].astype(np.float64)
    suffix = np.concatenate([np.cumsum(y_sorted[::-1])[::-1], [0.0]])
    n = float(len(score))
    idx = np.searchsorted(s_sorted, cands, side="left")
    return _best_candidate(cands, n - idx, suffix[idx], n, float(y.sum()), metric)


def _threshold_from_counts(
    values: FloatArray, count: FloatArray, positive: FloatArray, metric: str
) -> float:
    """:func:`_threshold_curve` from (weighted) counts per distinct score.

    ``count[j]`` items score ``values[j]`` (sorted, distinct), ``positive[j]`` of them
    labelled met; values with ``count == 0`` are absent. With integer counts (copies of
    items) the result is exactly that of :func:`_threshold_curve` on the copies.
    """
    return thresholds_from_counts(values, count[None, :], positive[None, :], metric)[0]


def thresholds_from_counts(
    values: FloatArray, count: FloatArray, positive: FloatArray, metric: str
) -> list[float]:
    """:func:`_threshold_from_counts` of every row of ``count`` and ``positive`` (one
    figure evaluation for all rows)."""
    segs = []
    for c_row, p_row in zip(count, positive, strict=True):
        present = c_row > 0
        u, c, pos = values[present], c_row[present], p_row[present]
        cands = np.concatenate([[u[0]], (u[:-1] + u[1:]) / 2.0, [np.nextafter(u[-1], np.inf)]])
        pred_pos = np.concatenate([np.cumsum(c[::-1])[::-1], [0.0]])
        tp = np.concatenate([np.cumsum(pos[::-1])[::-1], [0.0]])
        segs.append(
            (cands, pred_pos, tp, np.full(len(cands), pred_pos[0]), np.full(len(cands), tp[0]))
        )
    cands, pred_pos, tp, n, n_met = (np.concatenate(z) for z in zip(*segs, strict=True))
    values_all = _candidate_values(pred_pos, tp, n, n_met, metric)
    out, start = [], 0
    for seg in segs:
        stop = start + len(seg[0])
        out.append(_pick(cands[start:stop], values_all[start:stop])[0])
        start = stop
    return out


def _candidate_values(pred_pos: Any, tp: Any, n: Any, n_met: Any, metric: str) -> FloatArray:
    """The objective at each candidate from the counts of ``s ≥ t`` (−inf: undefined)."""
    if metric == "rate":
        return np.asarray(-np.abs(pred_pos / n - n_met / n), np.float64)
    fp = pred_pos - tp
    fn = n_met - tp
    tn = n - pred_pos - fn
    m = comparison_metrics(np.stack([tp, fp, fn, tn], axis=1))
    key = {"kappa": "cohen_kappa", "f1": "f1_met", "balanced_f1": "balanced_f1"}[metric]
    return np.asarray(np.where(np.isfinite(m[key]), m[key], -np.inf), np.float64)


def _pick(cands: FloatArray, values: FloatArray) -> tuple[float, float]:
    """The best candidate; ties go to the one closest to 0.5 (then the lowest)."""
    best = np.max(values)
    ties = np.flatnonzero(values == best)
    pick = ties[np.argmin(np.abs(cands[ties] - 0.5))]
    return float(cands[pick]), float(best)


def _best_candidate(
    cands: FloatArray, pred_pos: Any, tp: Any, n: float, n_met: float, metric: str
) -> tuple[float, float]:
    """The best candidate threshold given, per candidate, the counts of ``s ≥ t``."""
    return _pick(cands, _candidate_values(pred_pos, tp, n, n_met, metric))


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
        s = Xv[:, 0]
        self.threshold_, self.score_ = _threshold_curve(s, yb, metric)
        self.group_thresholds_ = {}
        g = _groups(Xv, self.per_group)
        if self.per_group:
            for code in np.unique(g):
                sel = g == code
                if sel.sum() >= self.min_group_size and 0 < yb[sel].sum() < sel.sum():
                    self.group_thresholds_[int(code)] = _threshold_curve(s[sel], yb[sel], metric)[0]
        return Xv, yb

    def _thresholds(self, Xv: FloatArray) -> FloatArray:
        g = _groups(Xv, self.per_group)
        t = np.full(len(Xv), self.threshold_)
        for code, value in self.group_thresholds_.items():
            t[g == code] = value
        return t

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
        self, metric: ThresholdMetric = "kappa", per_group: bool = False, min_group_size: int = 30
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

    def __init__(self, per_group: bool = True, min_group_size: int = 20) -> None:
        self.per_group = per_group
        self.min_group_size = min_group_size

    def fit(self, X: Any, y: Any) -> LeniencyCalibrator:
        """Learn the rate-matching threshold(s) from ``X[:, 0]`` and labels ``y``."""
        Xv, yb = self._fit_thresholds(X, y, "rate")
        raw = Xv[:, 0] >= 0.5
        self.leniency_: dict[int, float] = {-1: float(np.mean(raw) - np.mean(yb))}
        if self.per_group:
            g = _groups(Xv, True)
            for code in np.unique(g):
                sel = g == code
                self.leniency_[int(code)] = float(np.mean(raw[sel]) - np.mean(yb[sel]))
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
