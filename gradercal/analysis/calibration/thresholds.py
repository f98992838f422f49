"""The arithmetic of the criterion-level calibrators and the task folds, without scikit-learn.

The ``threshold`` and ``leniency`` calibrators (:mod:`~gradercal.analysis.calibration.calibrators`)
are scikit-learn estimators; what they learn and predict is computed here, from plain
arrays, so that a cross-fit of those two methods
(:func:`gradercal.analysis.calibration.crossfit.cross_fit`) needs no scikit-learn (its
import is ≈ 1 s with scipy.stats, for a dashboard or a report computed in a few seconds):

* :func:`threshold_curve`, :func:`thresholds_from_counts`: the threshold maximising a
  figure of ``s ≥ t`` (or matching a met rate), from scores or from counts per score;
* :func:`fit_thresholds`, :func:`leniencies`: what a calibrator's ``fit`` learns
  (:class:`ThresholdFit`), and :func:`met_probabilities` what its ``predict_proba``
  gives for "met" — the estimators call the same functions after their input checks;
* :func:`group_folds`, :func:`task_folds`: scikit-learn's ``GroupKFold`` (no shuffle)
  split of tasks into folds.

This module imports numpy and gradercal's core only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from gradercal.analysis.agreement import comparison_metrics
from gradercal.analysis.calibration._types import FloatArray

__all__ = [
    "LENIENCY_MIN_GROUP_SIZE",
    "THRESHOLD_MIN_GROUP_SIZE",
    "ThresholdFit",
    "fit_thresholds",
    "group_codes",
    "group_folds",
    "leniencies",
    "met_probabilities",
    "task_folds",
    "threshold_curve",
    "thresholds_from_counts",
    "thresholds_of",
]

#: The fewest items of a group that get their own threshold (``min_group_size``'s
#: default of :class:`ThresholdCalibrator` and of :class:`LeniencyCalibrator`).
THRESHOLD_MIN_GROUP_SIZE = 30
LENIENCY_MIN_GROUP_SIZE = 20


def group_codes(X: FloatArray, per_group: bool) -> npt.NDArray[np.int64]:
    """The group code of every row (``X[:, 1]``; all −1 without ``per_group``).

    Raises:
        ValueError: ``per_group`` with a single column.
    """
    if not per_group:
        return np.full(len(X), -1, dtype=np.int64)
    if X.shape[1] < 2:
        raise ValueError(
            f"per_group needs a second column of X with group codes (n_features = {X.shape[1]})"
        )
    return np.asarray(np.rint(X[:, 1]), dtype=np.int64)


def threshold_curve(
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


def threshold_from_counts(
    values: FloatArray, count: FloatArray, positive: FloatArray, metric: str
) -> float:
    """:func:`threshold_curve` from (weighted) counts per distinct score.

    ``count[j]`` items score ``values[j]`` (sorted, distinct), ``positive[j]`` of them
    labelled met; values with ``count == 0`` are absent. With integer counts (copies of
    items) the result is exactly that of :func:`threshold_curve` on the copies.
    """
    return thresholds_from_counts(values, count[None, :], positive[None, :], metric)[0]


def thresholds_from_counts(
    values: FloatArray, count: FloatArray, positive: FloatArray, metric: str
) -> list[float]:
    """:func:`threshold_from_counts` of every row of ``count`` and ``positive`` (one
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


@dataclass(frozen=True)
class ThresholdFit:
    """What a ``threshold`` or ``leniency`` calibrator learned: its fitted attributes.

    Attributes:
        method: ``"threshold"`` or ``"leniency"``.
        per_group: Per-group thresholds (the calibrator's ``per_group``).
        metric: The threshold's objective (``threshold``; ``"rate"`` for ``leniency``).
        classes: The class labels seen (``classes_``; the last is "met").
        threshold: The overall threshold (``threshold_``).
        score: The objective at it on the training data (``score_``).
        group_thresholds: ``{group code: threshold}`` (``group_thresholds_``).
        leniency: ``{group code: raw met rate − expert met rate}`` (``leniency_``;
            ``leniency`` only, else None).
        n_features: Columns of ``X`` in the fit (``n_features_in_``).
    """

    method: str
    per_group: bool
    metric: str
    classes: npt.NDArray[Any]
    threshold: float
    score: float
    group_thresholds: dict[int, float] = field(default_factory=dict)
    leniency: dict[int, float] | None = None
    n_features: int = 2


def fit_thresholds(
    X: FloatArray, yb: npt.NDArray[np.bool_], per_group: bool, min_group_size: int, metric: str
) -> tuple[float, float, dict[int, float]]:
    """``(threshold, its objective, {group code: threshold})`` of scores ``X[:, 0]``
    against the labels ``yb`` (True: met): the overall threshold of
    :func:`threshold_curve`, and with ``per_group`` one per group code ``X[:, 1]`` with at
    least ``min_group_size`` items of both classes."""
    s = X[:, 0]
    threshold, score = threshold_curve(s, yb, metric)
    groups: dict[int, float] = {}
    g = group_codes(X, per_group)
    if per_group:
        for code in np.unique(g):
            sel = g == code
            if sel.sum() >= min_group_size and 0 < yb[sel].sum() < sel.sum():
                groups[int(code)] = threshold_curve(s[sel], yb[sel], metric)[0]
    return threshold, score, groups


def leniencies(X: FloatArray, yb: npt.NDArray[np.bool_], per_group: bool) -> dict[int, float]:
    """``{group code: raw judge met rate (s ≥ 0.5) − expert met rate}`` (−1: overall)."""
    raw = X[:, 0] >= 0.5
    out: dict[int, float] = {-1: float(np.mean(raw) - np.mean(yb))}
    if per_group:
        g = group_codes(X, True)
        for code in np.unique(g):
            sel = g == code
            out[int(code)] = float(np.mean(raw[sel]) - np.mean(yb[sel]))
    return out


def thresholds_of(
    X: FloatArray, per_group: bool, threshold: float, group_thresholds: dict[int, float]
) -> FloatArray:
    """The threshold that applies to every row of ``X``."""
    g = group_codes(X, per_group)
    t = np.full(len(X), threshold)
    for code, value in group_thresholds.items():
        t[g == code] = value
    return t


def met_probabilities(fit: ThresholdFit, X: FloatArray) -> FloatArray:
    """The probability of "met" the fitted calibrator gives every row of ``X``: 1.0 or
    0.0 (``s ≥ t``); a fit that saw one class predicts it."""
    if len(fit.classes) == 1:
        return np.full(len(X), 1.0 if fit.classes[0] == 1 else 0.0)
    t = thresholds_of(X, fit.per_group, fit.threshold, fit.group_thresholds)
    return np.asarray((X[:, 0] >= t).astype(np.float64), np.float64)


def group_folds(sizes: FloatArray, k: int) -> npt.NDArray[np.intp]:
    """scikit-learn's ``GroupKFold(k)`` (no shuffle) assignment of groups to folds.

    ``sizes`` are the groups' sizes in the order of their sorted ids; the largest group
    goes first (ties: the later one), each to the currently lightest fold (ties: the
    first one). ``tests/analysis/test_calibration.py`` checks it against ``GroupKFold``.
    """
    order = np.argsort(sizes, kind="stable")[::-1]
    load = [0.0] * k
    fold = np.empty(len(sizes), dtype=np.intp)
    for g in order.tolist():
        j = load.index(min(load))
        load[j] += float(sizes[g])
        fold[g] = j
    return fold


def task_folds(groups: Sequence[str] | npt.NDArray[Any], k: int) -> dict[str, int]:
    """``{group: fold}`` of ``GroupKFold(k).split(rows, groups=groups)`` (the fold whose
    test rows hold the group), for groups that are strings; in fold order, each fold's
    groups sorted.

    Raises:
        ValueError: ``k`` greater than the number of distinct groups (as ``GroupKFold``).
    """
    names, inverse = np.unique(np.asarray(groups, dtype=object), return_inverse=True)
    if k > len(names):
        raise ValueError(
            f"Cannot have number of splits n_splits={k} greater than the number of "
            f"groups: {len(names)}."
        )
    sizes = np.bincount(np.asarray(inverse, dtype=np.intp).ravel(), minlength=len(names))
    fold = group_folds(sizes.astype(np.float64), k)
    order = np.lexsort((np.arange(len(names)), fold))
    return {str(names[i]): int(fold[i]) for i in order.tolist()}
