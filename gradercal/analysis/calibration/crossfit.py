"""Held-out evaluation: the held-out split and the out-of-fold cross-fit.

With ``holdout > 0`` a seeded random share of the tasks with human-graded items is
reserved first (:func:`holdout_tasks`); the other tasks — the *calibration tasks* — are
split by ``sklearn.model_selection.GroupKFold`` (default 5 folds, grouped by task); each
fold is predicted by a calibrator fitted on the other folds, and every figure is computed
on these out-of-fold predictions, before (raw judge) and after (calibrated), with their
difference. The reserved tasks are predicted by the final calibrator (fitted on all the
calibration tasks: :attr:`CrossFit.estimator`) and give the same figures as ``test``
metrics: the only ones computed on tasks that nothing — calibrator, threshold choice, or
examples drawn from the calibration split — has seen. The figures and their intervals:
:mod:`gradercal.analysis.calibration.bootstrap`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal._util.distinct import map_distinct
from gradercal.analysis.calibration._types import (
    CRITERION_METHODS,
    FloatArray,
    Method,
    ThresholdMetric,
    calibration_level,
)
from gradercal.analysis.calibration.bootstrap import RefitDesign, add_responses, make_design
from gradercal.analysis.calibration.tables import (
    calibrated_response_scores,
    item_table,
    response_table,
)
from gradercal.analysis.calibration.thresholds import (
    LENIENCY_MIN_GROUP_SIZE,
    THRESHOLD_MIN_GROUP_SIZE,
    ThresholdFit,
    fit_thresholds,
    leniencies,
    met_probabilities,
    task_folds,
)
from gradercal.analysis.context import AnalysisContext
from gradercal.frames import Frames

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator  # type: ignore[import-untyped, unused-ignore]

__all__ = ["MIN_HOLDOUT_TASKS", "CrossFit", "cross_fit", "holdout_tasks"]


def item_features(items: pd.DataFrame, method: Method, codes: dict[str, int]) -> FloatArray:
    """The calibrators' input for items: the judge's score and the group's code (-1: unseen)."""
    first = items["judge_score"].to_numpy(np.float64)
    # One lookup per distinct group (missing groups one by one: str(None) != str(nan)).
    gvals = items["group"].to_numpy(object)
    gcodes, guniq = pd.factorize(gvals, sort=False)
    glut = np.array([codes.get(str(x), -1) for x in guniq], dtype=np.float64)
    g = glut[np.maximum(gcodes, 0)] if len(guniq) else np.full(len(gvals), -1.0)
    miss = np.asarray(gcodes) < 0
    if miss.any():
        g[miss] = [codes.get(str(x), -1) for x in gvals[miss]]
    return np.column_stack([first, g])


def item_probabilities(est: BaseEstimator, X: FloatArray) -> FloatArray:
    """A fitted calibrator's probability of "met" (a one-class fit predicts its class)."""
    proba = est.predict_proba(X)
    if proba.shape[1] == 1:
        return np.full(len(X), 1.0 if est.classes_[0] == 1 else 0.0)
    return np.asarray(proba[:, -1], np.float64)


@dataclass
class CrossFit:
    """Out-of-fold calibrated predictions.

    Attributes:
        method: The method.
        level: ``"criterion"`` or ``"response"``.
        folds: ``{task_id: fold}`` for the calibration tasks (the human-graded tasks
            that are not held out).
        items: The :func:`item_table` with an ``oof`` column (criterion level; else
            None): the out-of-fold calibrated probability (NaN outside the calibration
            tasks), and a ``test`` column: the probability under :attr:`estimator` on
            the held-out tasks (NaN elsewhere).
        responses: :func:`response_table` plus ``oof`` (the out-of-fold calibrated
            score; NaN where undefined or outside the calibration tasks) and ``test``
            (the calibrated score under :attr:`estimator` on the held-out tasks).
        groups: Group labels in code order (criterion level).
        held_out: The held-out tasks (sorted), never used to fit anything.
        n_train: How many items or responses the final calibrator was fitted on.
        design: What the bootstrap of the whole cross-fit needs to redo it on task
            resamples (internal).
        fitted: What the final calibrator learned, when the cross-fit was computed
            without the estimators (``threshold`` and ``leniency``:
            :mod:`~gradercal.analysis.calibration.thresholds`); None otherwise.
    """

    method: Method
    level: Literal["criterion", "response"]
    folds: dict[str, int]
    items: pd.DataFrame | None
    responses: pd.DataFrame
    groups: list[str] = field(default_factory=list)
    held_out: list[str] = field(default_factory=list)
    n_train: int = 0
    design: RefitDesign | None = field(default=None, repr=False)
    fitted: ThresholdFit | None = field(default=None, repr=False)
    _estimator: BaseEstimator | None = field(default=None, repr=False)

    @property
    def estimator(self) -> BaseEstimator | None:
        """The calibrator fitted on every labelled item (criterion level) or response
        (response level) of the calibration tasks: a scikit-learn estimator (built from
        :attr:`fitted` on first use, importing scikit-learn then)."""
        if self._estimator is None and self.fitted is not None:
            from gradercal.analysis.calibration.calibrators import calibrator_from_fit

            self._estimator = calibrator_from_fit(self.fitted)
        return self._estimator


#: Fewest labelled tasks that allow a held-out split (at least one held out and two
#: calibration tasks left for the folds, with one to spare).
MIN_HOLDOUT_TASKS = 4


class HoldoutRefused(ValueError):
    """Too few tasks for the held-out split asked for."""


def holdout_tasks(tasks: Sequence[Any], holdout: float, seed: int = 0) -> list[str]:
    """The tasks to reserve: a seeded, uniformly random share of ``tasks``.

    ``ceil(holdout · n)`` of the ``n`` distinct tasks (at least one when ``holdout >
    0``; scikit-learn's ``train_test_split`` rounds the same way), drawn without
    replacement by ``numpy.random.default_rng(seed).choice`` from the tasks in sorted
    order — so the choice depends only on the set of tasks, the share and the seed.

    Args:
        tasks: Task ids (duplicates ignored).
        holdout: The share to reserve, in ``[0, 1)``.
        seed: The seed.

    Returns:
        The reserved task ids, sorted; ``[]`` when ``holdout == 0``.

    Raises:
        ValueError: ``holdout`` outside ``[0, 1)``; fewer than
            :data:`MIN_HOLDOUT_TASKS` tasks; fewer than two tasks left to calibrate on.
    """
    if not (0.0 <= holdout < 1.0) or math.isnan(holdout):
        raise ValueError(f"holdout must be a share in [0, 1); got {holdout!r}")
    names = sorted({str(t) for t in tasks})
    n = len(names)
    if holdout == 0.0:
        return []
    if n < MIN_HOLDOUT_TASKS:
        raise HoldoutRefused(
            f"a held-out split needs human-graded data on at least {MIN_HOLDOUT_TASKS} tasks; "
            f"found {n} (calibrate without one: holdout 0)"
        )
    k = max(1, math.ceil(holdout * n - 1e-9))
    if n - k < 2:
        raise HoldoutRefused(
            f"holdout {holdout:g} reserves {k} of the {n} human-graded tasks and leaves "
            f"{n - k} to calibrate on; at least 2 are needed (use a smaller share)"
        )
    pick = np.random.default_rng(seed).choice(n, size=k, replace=False)
    return sorted(names[i] for i in pick)


def cross_fit(
    frames: Frames,
    judge: str,
    method: Method,
    humans: Sequence[str] | None = None,
    *,
    n_splits: int = 5,
    per_group: bool | None = None,
    metric: ThresholdMetric = "kappa",
    tag_prefix: str | None = None,
    holdout: float = 0.0,
    seed: int = 0,
    context: AnalysisContext | None = None,
) -> CrossFit:
    """Out-of-fold calibrated predictions on the human-graded tasks.

    Tasks with at least one human-labelled item (criterion level) or human-scored
    response (response level) are *labelled*. With ``holdout > 0`` a seeded random share
    of them is reserved (:func:`holdout_tasks`); the others, the *calibration tasks*,
    are split by ``GroupKFold(min(n_splits, n_tasks))`` and each fold is predicted by the
    calibrator fitted on the other folds. The calibrator fitted on all calibration
    tasks (:attr:`CrossFit.estimator`) then predicts the held-out tasks (``test``).

    Args:
        frames: The benchmark frames.
        judge: The judge's grader name.
        method: One of :data:`METHODS`.
        humans: The human graders (default: all).
        n_splits: Folds (at most the number of labelled tasks; at least 2).
        per_group: Per-tag calibration (default: False for ``threshold``, True for
            ``leniency``; ignored at the response level).
        metric: The threshold's objective.
        tag_prefix: See :func:`item_table`.
        holdout: Share of the labelled tasks to hold out (0: none).
        seed: Seed of the held-out draw.
        context: An ``AnalysisContext`` shared by calls on the same frames (e.g. within one
            report) to reuse the verdict, consensus and score tables; None: compute afresh.

    Raises:
        ValueError: Fewer than two labelled calibration tasks, a held-out split that
            :func:`holdout_tasks` refuses, or an unknown method.
    """
    level = calibration_level(method)
    pg = (method == "leniency") if per_group is None else per_group
    resp = response_table(frames, judge, humans, context=context)
    items = (
        item_table(frames, judge, humans, tag_prefix=tag_prefix, context=context)
        if level == "criterion"
        else None
    )
    groups, X, y, labelled, tasks = _design_rows(items, resp, method)
    held = holdout_tasks(tasks[labelled], holdout, seed)
    in_held = np.isin(np.asarray([str(t) for t in tasks], dtype=object), held)
    calib = labelled & ~in_held
    k = max(2, min(n_splits, _count_calibration_tasks(tasks, calib)))
    folds, fold_of = _task_folds(tasks, calib, k)
    oof = np.full(len(X), np.nan)
    test_p = np.full(len(X), np.nan)
    fitted: ThresholdFit | None = None
    final: BaseEstimator | None = None
    if _ESTIMATOR_FREE and _plain_threshold_fits(method, metric, X, y, calib, fold_of, in_held):
        # threshold, leniency: the estimators' arithmetic on the same rows, without
        # scikit-learn (the same numbers: tests/analysis/test_calibration_no_sklearn.py)
        for f in range(k):
            _fit_predict_plain(method, pg, metric, X, y, calib & (fold_of != f), fold_of == f, oof)
        # The final calibrator: every calibration task; it alone predicts the held-out tasks.
        fitted = _fit_predict_plain(method, pg, metric, X, y, calib, in_held, test_p)
    else:
        from gradercal.analysis.calibration.calibrators import make_calibrator

        def fit_predict(
            train: npt.NDArray[np.bool_], test: npt.NDArray[np.bool_], into: FloatArray
        ) -> BaseEstimator:
            est = make_calibrator(method, pg, metric)
            return _fit_predict(est, level, X, y, train, test, into)

        for f in range(k):
            fit_predict(calib & (fold_of != f), fold_of == f, oof)
        # The final calibrator: every calibration task; it alone predicts the held-out tasks.
        final = fit_predict(calib, in_held, test_p)
    items, resp = _with_predictions(frames, items, resp, oof, test_p, list(folds), held, context)
    judge_met = items["judge_met"].to_numpy(bool) if items is not None else None
    design = make_design(method, pg, metric, n_splits, tasks, X, y, calib, judge_met)
    add_responses(design, frames, items, resp, context)
    return CrossFit(
        method,
        level,
        folds,
        items,
        resp,
        groups,
        held,
        n_train=int(calib.sum()),
        design=design,
        fitted=fitted,
        _estimator=final,
    )


#: Whether :func:`cross_fit` fits ``threshold`` and ``leniency`` without the estimators
#: (the tests switch it off to compare the two paths).
_ESTIMATOR_FREE = True


def _plain_threshold_fits(
    method: Method,
    metric: str,
    X: FloatArray,
    y: FloatArray,
    calib: npt.NDArray[np.bool_],
    fold_of: npt.NDArray[np.int64],
    in_held: npt.NDArray[np.bool_],
) -> bool:
    """Whether the cross-fit of ``method`` may run on plain arrays with the estimators'
    numbers: a ``threshold`` or ``leniency`` fit on the input the estimators accept
    without a complaint — finite features on every row fitted or predicted, labels 0/1,
    a known metric. Anything else takes the estimators' path (and meets their errors)."""
    if method not in CRITERION_METHODS:
        return False
    if method == "threshold" and metric not in get_args(ThresholdMetric):
        return False
    seen = calib | (fold_of >= 0) | in_held
    if X.ndim != 2 or not np.isfinite(X[seen]).all():
        return False
    return bool(np.isin(y[calib], (0.0, 1.0)).all())


def _fit_predict_plain(
    method: Method,
    per_group: bool,
    metric: str,
    X: FloatArray,
    y: FloatArray,
    train: npt.NDArray[np.bool_],
    test: npt.NDArray[np.bool_],
    into: FloatArray,
) -> ThresholdFit:
    """:func:`_fit_predict` of a ``threshold`` or ``leniency`` calibrator, computed as
    its ``fit`` and ``predict_proba`` compute (:mod:`~gradercal.analysis.calibration.thresholds`):
    what it learned on the ``train`` rows; the probabilities of "met" of the ``test``
    rows are written ``into``."""
    Xt = X[train]
    yi = y[train].astype(np.int64)
    classes = np.unique(yi)
    yb = np.asarray(yi == classes[-1], dtype=bool)
    lenient = method == "leniency"
    min_size = LENIENCY_MIN_GROUP_SIZE if lenient else THRESHOLD_MIN_GROUP_SIZE
    threshold, score, groups = fit_thresholds(
        Xt, yb, per_group, min_size, "rate" if lenient else metric
    )
    fit = ThresholdFit(
        method=method,
        per_group=per_group,
        metric=metric,
        classes=classes,
        threshold=threshold,
        score=score,
        group_thresholds=groups,
        leniency=leniencies(Xt, yb, per_group) if lenient else None,
        n_features=int(X.shape[1]),
    )
    if test.any():
        into[test] = met_probabilities(fit, X[test])
    return fit


def _count_calibration_tasks(tasks: Any, calib: npt.NDArray[np.bool_]) -> int:
    """The number of distinct tasks of the calibration rows.

    Raises:
        ValueError: Fewer than two.
    """
    lab_tasks = pd.unique(pd.Series(tasks[calib], dtype=object))
    if len(lab_tasks) < 2:
        raise ValueError(
            f"calibration needs human-graded data on at least two tasks; found {len(lab_tasks)}"
        )
    return len(lab_tasks)


def _with_predictions(
    frames: Frames,
    items: pd.DataFrame | None,
    resp: pd.DataFrame,
    oof: FloatArray,
    test_p: FloatArray,
    calibration_tasks: list[str],
    held: list[str],
    context: AnalysisContext | None,
) -> tuple[pd.DataFrame | None, pd.DataFrame]:
    """The item and response tables with the ``oof`` and held-out ``test`` predictions;
    at the criterion level the responses' scores are recomputed from the items'."""
    if items is None:
        return None, resp.assign(oof=oof, test=test_p)
    items = items.assign(oof=oof, test=test_p)
    resp = resp.assign(
        oof=_scores_within(frames, items, resp, oof, calibration_tasks, context),
        test=(
            _scores_within(frames, items, resp, test_p, held, context)
            if held
            else np.full(len(resp), np.nan)
        ),
    )
    return items, resp


def _design_rows(
    items: pd.DataFrame | None, resp: pd.DataFrame, method: Method
) -> tuple[list[str], FloatArray, FloatArray, npt.NDArray[np.bool_], Any]:
    """The rows a calibrator is fitted on: items (criterion level, ``items`` given) or
    responses. Returns the groups (sorted tags; none at the response level), the features
    ``X``, the human label ``y``, which rows are labelled, and each row's task."""
    if items is not None:
        gvals = items["group"].to_numpy(object)
        gna = pd.isna(gvals)
        groups = sorted({str(g) for g in pd.unique(gvals[~gna])} | {str(g) for g in gvals[gna]})
        codes = {g: k for k, g in enumerate(groups)}
        X = item_features(items, method, codes)
        y = items["human_met"].to_numpy(np.float64)
        return groups, X, y, np.isfinite(y), items["task_id"].to_numpy(object)
    X = resp["judge_score"].to_numpy(np.float64)[:, None]
    y = resp["human_score"].to_numpy(np.float64)
    labelled = np.isfinite(y) & np.isfinite(X[:, 0])
    return [], X, y, labelled, resp["task_id"].to_numpy(object)


def _task_folds(
    tasks: npt.NDArray[Any], calib: npt.NDArray[np.bool_], k: int
) -> tuple[dict[str, int], npt.NDArray[np.int64]]:
    """``GroupKFold(k)`` of the calibration rows by task: each calibration task's fold,
    and each row's fold (-1 outside the calibration tasks). Task ids that are strings
    (always, from the frames) are split without scikit-learn, exactly as ``GroupKFold``
    splits them (:func:`~gradercal.analysis.calibration.thresholds.task_folds`)."""
    lab_idx = np.flatnonzero(calib)
    groups = tasks[lab_idx]
    folds: dict[str, int] = {}
    if all(isinstance(t, str) for t in pd.unique(pd.Series(groups, dtype=object))):
        folds = task_folds(groups, k)
    else:
        from sklearn.model_selection import GroupKFold  # type: ignore[import-untyped, unused-ignore]

        gkf = GroupKFold(n_splits=k)
        for f, (_, test) in enumerate(gkf.split(lab_idx, groups=groups)):
            for t in set(tasks[lab_idx[test]]):
                folds[str(t)] = f
    return folds, map_distinct(tasks, lambda t: folds.get(str(t), -1)).astype(np.int64)


def _fit_predict(
    est: BaseEstimator,
    level: str,
    X: FloatArray,
    y: FloatArray,
    train: npt.NDArray[np.bool_],
    test: npt.NDArray[np.bool_],
    into: FloatArray,
) -> BaseEstimator:
    """Fit ``est`` on the ``train`` rows; write predictions of the ``test`` rows ``into``
    (probabilities of "met" for items, scores for responses with a judge score)."""
    if level == "response":
        test = test & np.isfinite(X[:, 0])
    if level == "criterion":
        est.fit(X[train], y[train].astype(np.int64))
        if test.any():
            into[test] = item_probabilities(est, X[test])
    else:
        est.fit(X[train], y[train])
        if test.any():
            into[test] = est.predict(X[test])
    return est


def _scores_within(
    frames: Frames,
    items: pd.DataFrame,
    resp: pd.DataFrame,
    p: FloatArray,
    tasks: list[str],
    context: AnalysisContext | None = None,
) -> npt.NDArray[np.float64]:
    """Calibrated response scores (criterion level) from ``p``, NaN outside ``tasks``."""
    scored = calibrated_response_scores(
        frames, items, np.where(np.isnan(p), 0.0, p), context=context
    )
    inside = np.isin(scored["task_id"].to_numpy(object), tasks)
    by_id = dict(zip(scored["response_id"], scored["score"].where(inside), strict=True))
    return np.asarray(resp["response_id"].map(by_id).to_numpy(np.float64), np.float64)
