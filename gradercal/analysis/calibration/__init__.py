"""Calibration of an LLM judge against the human experts.

Four methods, each learned only on human-graded data and evaluated only on held-out
tasks:

* ``threshold`` (criterion level): the judge's probability that a criterion is met,
  ``s`` (below), is turned into a verdict by a threshold ``t`` — met iff ``s ≥ t`` —
  chosen to maximise Cohen's kappa (or F1, or balanced F1) with the human consensus,
  overall or per criterion tag (:class:`ThresholdCalibrator`).
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

**The judge's probability** ``s`` of "met" on one criterion: ``confidence`` when the judge
said met, ``1 − confidence`` when it said not met (judge confidences are confidences in
the verdict given); 1 or 0 when it gave no confidence. With several judge graders
(``judge=[…]``) ``s`` is the *vote share*, the fraction of them saying met, and the raw
verdict is the strict majority.

**Calibrated response scores** of the criterion-level methods: with ``p_c`` the
calibrated probability of criterion ``c`` (0/1 for ``threshold``), credit
``points_c · (p_c + (1 − p_c) f_c)`` where ``f_c`` is the judge's own partial credit when
its verdict is below the top level of a multi-level criterion (0 otherwise); auto
criteria keep their credit from the answer; score = clip(Σ credits / Σ positive points,
0, 1) — with ``p_c`` the judge's raw verdicts this is exactly
:func:`gradercal.analysis.scoring.response_scores` of the judge.

**Held-out evaluation**: with ``holdout > 0`` a seeded random share of the tasks with
human-graded items is reserved first (:func:`holdout_tasks`); the other tasks — the
*calibration tasks* — are split by ``sklearn.model_selection.GroupKFold`` (default 5
folds, grouped by task); each fold is predicted by a calibrator fitted on the other
folds, and every figure is computed on these out-of-fold predictions, before (raw judge)
and after (calibrated), with their difference. The reserved tasks are predicted by the
final calibrator (below) and give the same figures as ``test`` metrics: the only ones
computed on tasks that nothing — calibrator, threshold choice, or examples drawn from
the calibration split — has seen. Figures: at the criterion level Cohen's kappa,
balanced F1, percent agreement and leniency bias of the verdicts (see :mod:`gradercal.analysis.agreement`), the Brier
score ``mean((p − y)²)`` and the expected calibration error ``ECE = Σ_b (n_b/n) |p̄_b −
ȳ_b|`` over 10 equal-width bins of ``p`` (``[0, 0.1), …, [0.9, 1]``); at the response level
(every method) the mean score bias ``mean(ŝ − s)``, MAE, RMSE, Brier (= mean squared
error with soft targets), ECE and the pass-rate bias and Cohen's kappa of pass/fail at
the benchmark's threshold. Intervals: task-clustered bootstrap (percentile) — every
figure is a function of per-task sums. For the out-of-fold figures the whole cross-fit
(folds, fits, predictions) is redone on every task resample (``oof_interval="refit"``),
so the interval includes the variability of the fitting; the test figures resample the
held-out tasks under the one final calibrator. The saved calibrator is then fitted on all the
calibration tasks; its reported metrics are the cross-validated ones and, with a
held-out split, the test ones.

Calibrators follow scikit-learn's estimator conventions (``__init__`` stores arguments,
``fit`` returns ``self``, learned attributes end in ``_``). This module imports pandas,
numpy, scikit-learn (and scipy, which it requires) and gradercal's core only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin  # type: ignore[import-untyped, unused-ignore]

from gradercal.analysis.agreement import comparison_metrics
from gradercal.analysis.scoring import PASS_EPSILON, auto_verdicts, response_scores
from gradercal.analysis.verdicts import consensus_verdicts, human_graders, verdicts
from gradercal.frames import Frames, object_frame
from gradercal.stats.bootstrap import BootResult, resampling_weights
from gradercal.stats.intervals import boot_json, percentile_interval

__all__ = [
    "CRITERION_METHODS",
    "METHODS",
    "MIN_HOLDOUT_TASKS",
    "OOF_INTERVALS",
    "RESPONSE_METHODS",
    "CalibrationResult",
    "CrossFit",
    "LeniencyCalibrator",
    "Method",
    "OofInterval",
    "ScoreCalibrator",
    "ThresholdCalibrator",
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

FloatArray = npt.NDArray[np.float64]
Method = Literal["threshold", "leniency", "isotonic", "platt"]
METHODS: tuple[Method, ...] = get_args(Method)
#: Methods that correct criterion verdicts (the rest map response scores).
CRITERION_METHODS: tuple[Method, ...] = ("threshold", "leniency")
RESPONSE_METHODS: tuple[Method, ...] = ("isotonic", "platt")
ThresholdMetric = Literal["kappa", "f1", "balanced_f1"]
#: Bins of the reliability diagram and the ECE.
N_BINS = 10
#: Items labelled "(untagged)" have no tag.
UNTAGGED = "(untagged)"


# ---------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------


def _primary_tag(tags: Any, prefix: str | None) -> str:
    seq = list(tags) if tags else []
    if prefix is not None:
        seq = [t for t in seq if str(t).startswith(prefix)]
    return str(seq[0]) if seq else UNTAGGED


def item_table(
    frames: Frames,
    judge: str | Sequence[str],
    humans: Sequence[str] | None = None,
    *,
    tag_prefix: str | None = None,
    memo: dict[Any, Any] | None = None,
) -> pd.DataFrame:
    """The judge's verdict on every judgment criterion of every response it graded.

    Args:
        frames: The benchmark frames.
        judge: A judge grader, or several (their vote share is the score).
        humans: The graders of the consensus (default: every human grader).
        tag_prefix: The *group* of an item is its criterion's first tag (with this
            prefix, e.g. ``"axis:"``, when given); ``"(untagged)"`` without one.
        memo: A dict shared by calls on the same frames (e.g. within one report) to
            reuse the verdict and consensus tables (:data:`gradercal.analysis.agreement.Memo`);
            None: compute afresh.

    Returns:
        One row per item the judge(s) rated: ``response_id``, ``task_id``, ``model``,
        ``criterion_id``, ``points``, ``group``, ``judge_met`` (bool), ``judge_score``
        (the probability ``s`` of the module docstring), ``judge_partial`` (the judge's
        partial credit ``f`` in [0, 1)), ``human_met`` (1.0/0.0, NaN when the human
        consensus is undecided or absent). With several judges, items need a verdict
        from every one of them.
    """
    judges = [judge] if isinstance(judge, str) else list(judge)
    names = [
        h
        for h in (list(humans) if humans is not None else human_graders(frames))
        if h not in judges
    ]
    v = verdicts(frames, judges, memo=memo)
    keys = ["response_id", "criterion_id"]
    raw = frames.judgments.loc[frames.judgments["grader"].isin(judges)]
    raw = raw.drop_duplicates([*keys, "grader"], keep="last").loc[:, [*keys, "grader", "level"]]
    v = v.merge(raw, on=[*keys, "grader"], how="left")
    top = np.clip(v["levels"].to_numpy(np.float64), 2.0, None) - 1.0
    level = np.asarray(v["level"].astype("Float64").to_numpy(np.float64, na_value=np.nan))
    partial = np.where(
        ~v["met"].to_numpy(bool) & ~np.isnan(level), np.clip(level, 0.0, top) / top, 0.0
    )
    conf = v["confidence"].to_numpy(np.float64)
    met = v["met"].to_numpy(bool)
    score = np.where(np.isnan(conf), met.astype(np.float64), np.where(met, conf, 1.0 - conf))
    v = v.assign(judge_score=np.clip(score, 0.0, 1.0), judge_partial=partial)
    if len(judges) == 1:
        out = v.rename(columns={"met": "judge_met"})
    else:
        g = v.groupby(keys, sort=False)
        agg = g.agg(
            n=("grader", "size"),
            share=("met", "mean"),
            partial=("judge_partial", "mean"),
        ).reset_index()
        agg = agg.loc[agg["n"] == len(judges)]
        first = v.drop_duplicates(keys).drop(columns=["met", "judge_score", "judge_partial"])
        out = first.merge(agg, on=keys, how="inner")
        out = out.assign(
            judge_met=out["share"].to_numpy(np.float64) > 0.5,
            judge_score=out["share"].to_numpy(np.float64),
            judge_partial=out["partial"].to_numpy(np.float64),
        )
    cons = consensus_verdicts(frames, names, memo=memo) if names else None
    if cons is not None and not cons.empty:
        out = out.merge(
            cons.loc[:, [*keys, "met"]].rename(columns={"met": "human"}), on=keys, how="left"
        )
        human = np.asarray(out["human"].astype("Float64").to_numpy(np.float64, na_value=np.nan))
    else:
        human = np.full(len(out), np.nan)
    return object_frame(
        {
            "response_id": out["response_id"].to_numpy(object),
            "task_id": out["task_id"].to_numpy(object),
            "model": out["model"].to_numpy(object),
            "criterion_id": out["criterion_id"].to_numpy(object),
            "points": out["points"].to_numpy(np.int64),
            "group": np.array([_primary_tag(t, tag_prefix) for t in out["tags"]], dtype=object),
            "judge_met": out["judge_met"].to_numpy(bool),
            "judge_score": out["judge_score"].to_numpy(np.float64),
            "judge_partial": out["judge_partial"].to_numpy(np.float64),
            "human_met": human,
        }
    )


def response_table(
    frames: Frames,
    judge: str,
    humans: Sequence[str] | None = None,
    *,
    memo: dict[Any, Any] | None = None,
) -> pd.DataFrame:
    """Rubric scores of every response under the judge and under the human consensus.

    ``memo``: see :func:`item_table`.

    Returns:
        ``response_id``, ``task_id``, ``model``, ``judge_score``, ``human_score`` (NaN
        when the grader's score is undefined or incomplete), one row per response.
    """
    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    cons = response_scores(frames, "consensus", humans=names, memo=memo) if names else None
    js = response_scores(frames, judge, include_ungraded=True, memo=memo)
    out = js.loc[:, ["response_id", "task_id", "model", "score"]].rename(
        columns={"score": "judge_score"}
    )
    if cons is not None and not cons.empty:
        out = out.merge(
            cons.loc[:, ["response_id", "score"]].rename(columns={"score": "human_score"}),
            on="response_id",
            how="left",
        )
    else:
        out = out.assign(human_score=np.nan)
    return out.reset_index(drop=True)


def calibrated_response_scores(
    frames: Frames,
    items: pd.DataFrame,
    probability: npt.ArrayLike,
    *,
    memo: dict[Any, Any] | None = None,
) -> pd.DataFrame:
    """Response scores when each judged criterion is met with a calibrated probability.

    Args:
        frames: The benchmark frames.
        items: An :func:`item_table` (its ``points`` and ``judge_partial`` are used).
        probability: ``p_c`` for each row of ``items``.
        memo: See :func:`item_table`.

    Returns:
        ``response_id``, ``task_id``, ``model``, ``score`` for every response of the
        frames; ``score`` is NaN when the task has no positive points or when a
        judgment criterion of the response has no row in ``items`` (see the module
        docstring for the formula).
    """
    p = np.asarray(probability, dtype=np.float64)
    resp, auto_credit, need, pos = _credit_parts(frames, memo)
    credit = items["points"].to_numpy(np.float64) * (
        p + (1.0 - p) * items["judge_partial"].to_numpy(np.float64)
    )
    it = object_frame({"response_id": items["response_id"].to_numpy(object), "credit": credit})
    per = it.groupby("response_id").agg(credit=("credit", "sum"), n=("credit", "size"))
    rid = resp["response_id"]
    earned = rid.map(per["credit"]).fillna(0.0).to_numpy(np.float64) + auto_credit
    n_items = rid.map(per["n"]).fillna(0).to_numpy(np.float64)
    ok = (pos > 0) & (n_items == need)
    score = np.full(len(resp), np.nan)
    score[ok] = np.clip(earned[ok] / pos[ok], 0.0, 1.0)
    return pd.DataFrame(
        {
            "response_id": rid.to_numpy(object),
            "task_id": resp["task_id"].to_numpy(object),
            "model": resp["model"].to_numpy(object),
            "score": score,
        }
    )


def _credit_parts(
    frames: Frames, memo: dict[Any, Any] | None = None
) -> tuple[pd.DataFrame, FloatArray, FloatArray, FloatArray]:
    """The parts of a response score that do not depend on the judged criteria.

    Returns:
        The responses (``response_id``, ``task_id``, ``model``; one row each), and per
        response its auto credit, its number of judgment criteria and the positive
        points of its task.
    """
    crit = frames.criteria.drop_duplicates(["task_id", "criterion_id"], keep="last")
    resp = frames.responses.drop_duplicates("response_id").loc[
        :, ["response_id", "task_id", "model"]
    ]
    positive = (
        crit.assign(pos=np.clip(crit["points"].to_numpy(np.float64), 0, None))
        .groupby("task_id")["pos"]
        .sum()
    )
    n_judged = (crit["kind"] != "auto").groupby(crit["task_id"]).sum()
    auto = auto_verdicts(frames, memo=memo)
    auto = auto.merge(resp, on="response_id").merge(
        crit.loc[:, ["task_id", "criterion_id", "points"]], on=["task_id", "criterion_id"]
    )
    auto_credit = (
        (auto["points"] * auto["met"].astype(np.float64)).groupby(auto["response_id"]).sum()
    )
    rid = resp["response_id"]
    return (
        resp,
        np.asarray(rid.map(auto_credit).fillna(0.0).to_numpy(np.float64), np.float64),
        np.asarray(resp["task_id"].map(n_judged).fillna(0).to_numpy(np.float64), np.float64),
        np.asarray(resp["task_id"].map(positive).fillna(0.0).to_numpy(np.float64), np.float64),
    )


# ---------------------------------------------------------------------------------------
# Calibration figures
# ---------------------------------------------------------------------------------------


def brier_score(p: npt.ArrayLike, y: npt.ArrayLike) -> float | None:
    """``mean((p − y)²)``; None without data. ``y`` may be fractional (soft targets)."""
    pa, ya = np.asarray(p, np.float64), np.asarray(y, np.float64)
    return None if len(pa) == 0 else float(np.mean((pa - ya) ** 2))


def _bin_index(p: FloatArray, n_bins: int = N_BINS) -> npt.NDArray[np.intp]:
    b = np.minimum(np.floor(np.clip(p, 0.0, 1.0) * n_bins), n_bins - 1)
    return np.asarray(b, dtype=np.intp)


def reliability_table(
    p: npt.ArrayLike, y: npt.ArrayLike, n_bins: int = N_BINS
) -> list[dict[str, Any]]:
    """Reliability-diagram data: per bin of ``p``, its count, mean ``p`` and mean ``y``.

    Bins are ``[k/n_bins, (k+1)/n_bins)``, the last one closed. Empty bins are listed
    with ``n = 0`` and null means.
    """
    pa, ya = np.asarray(p, np.float64), np.asarray(y, np.float64)
    b = _bin_index(pa, n_bins)
    out = []
    for k in range(n_bins):
        sel = b == k
        n = int(sel.sum())
        out.append(
            {
                "bin_low": k / n_bins,
                "bin_high": (k + 1) / n_bins,
                "n": n,
                "mean_predicted": float(np.mean(pa[sel])) if n else None,
                "mean_observed": float(np.mean(ya[sel])) if n else None,
            }
        )
    return out


def expected_calibration_error(
    p: npt.ArrayLike, y: npt.ArrayLike, n_bins: int = N_BINS
) -> float | None:
    """``ECE = Σ_b (n_b / n) |mean p_b − mean y_b|`` over equal-width bins; None without data."""
    pa, ya = np.asarray(p, np.float64), np.asarray(y, np.float64)
    if len(pa) == 0:
        return None
    b = _bin_index(pa, n_bins)
    sp = np.bincount(b, weights=pa, minlength=n_bins)
    sy = np.bincount(b, weights=ya, minlength=n_bins)
    return float(np.sum(np.abs(sp - sy)) / len(pa))


# ---------------------------------------------------------------------------------------
# Estimators
# ---------------------------------------------------------------------------------------


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
    return _thresholds_from_counts(values, count[None, :], positive[None, :], metric)[0]


def _thresholds_from_counts(
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


class _ThresholdBase(ClassifierMixin, BaseEstimator):  # type: ignore[misc]
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


class ThresholdCalibrator(_ThresholdBase):
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


class LeniencyCalibrator(_ThresholdBase):
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


# ---------------------------------------------------------------------------------------
# Cross-fitting and evaluation
# ---------------------------------------------------------------------------------------


def _level(method: str) -> Literal["criterion", "response"]:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    return "criterion" if method in CRITERION_METHODS else "response"


def _make(method: Method, per_group: bool, metric: ThresholdMetric) -> BaseEstimator:
    if method == "threshold":
        return ThresholdCalibrator(metric=metric, per_group=per_group)
    if method == "leniency":
        return LeniencyCalibrator(per_group=per_group)
    return ScoreCalibrator(method=method)


def _item_X(items: pd.DataFrame, method: Method, codes: dict[str, int]) -> FloatArray:
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


def _item_p(est: BaseEstimator, X: FloatArray) -> FloatArray:
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
        estimator: The calibrator fitted on every labelled item (criterion level) or
            response (response level) of the calibration tasks.
        n_train: How many items or responses it was fitted on.
        design: What the bootstrap of the whole cross-fit needs to redo it on task
            resamples (internal).
    """

    method: Method
    level: Literal["criterion", "response"]
    folds: dict[str, int]
    items: pd.DataFrame | None
    responses: pd.DataFrame
    groups: list[str] = field(default_factory=list)
    held_out: list[str] = field(default_factory=list)
    estimator: BaseEstimator | None = None
    n_train: int = 0
    design: _Design | None = field(default=None, repr=False)


#: Fewest labelled tasks that allow a held-out split (at least one held out and two
#: calibration tasks left for the folds, with one to spare).
MIN_HOLDOUT_TASKS = 4


class _HoldoutRefused(ValueError):
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
        raise _HoldoutRefused(
            f"a held-out split needs human-graded data on at least {MIN_HOLDOUT_TASKS} tasks; "
            f"found {n} (calibrate without one: holdout 0)"
        )
    k = max(1, math.ceil(holdout * n - 1e-9))
    if n - k < 2:
        raise _HoldoutRefused(
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
    memo: dict[Any, Any] | None = None,
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
        memo: A dict shared by calls on the same frames (e.g. within one report) to
            reuse the verdict, consensus and score tables; None: compute afresh.

    Raises:
        ValueError: Fewer than two labelled calibration tasks, a held-out split that
            :func:`holdout_tasks` refuses, or an unknown method.
    """
    from sklearn.model_selection import GroupKFold  # type: ignore[import-untyped, unused-ignore]

    level = _level(method)
    pg = (method == "leniency") if per_group is None else per_group
    resp = response_table(frames, judge, humans, memo=memo)
    if level == "criterion":
        items = item_table(frames, judge, humans, tag_prefix=tag_prefix, memo=memo)
        gvals = items["group"].to_numpy(object)
        gna = pd.isna(gvals)
        groups = sorted({str(g) for g in pd.unique(gvals[~gna])} | {str(g) for g in gvals[gna]})
        codes = {g: k for k, g in enumerate(groups)}
        X = _item_X(items, method, codes)
        labelled = np.isfinite(items["human_met"].to_numpy(np.float64))
        tasks = items["task_id"].to_numpy(object)
    else:
        items = None
        groups = []
        codes = {}
        X = resp["judge_score"].to_numpy(np.float64)[:, None]
        labelled = np.isfinite(resp["human_score"].to_numpy(np.float64)) & np.isfinite(X[:, 0])
        tasks = resp["task_id"].to_numpy(object)
    held = holdout_tasks(tasks[labelled], holdout, seed)
    in_held = np.isin(np.asarray([str(t) for t in tasks], dtype=object), held)
    calib = labelled & ~in_held
    lab_tasks = pd.unique(pd.Series(tasks[calib], dtype=object))
    if len(lab_tasks) < 2:
        raise ValueError(
            f"calibration needs human-graded data on at least two tasks; found {len(lab_tasks)}"
        )
    k = max(2, min(n_splits, len(lab_tasks)))
    gkf = GroupKFold(n_splits=k)
    lab_idx = np.flatnonzero(calib)
    folds: dict[str, int] = {}
    for f, (_, test) in enumerate(gkf.split(lab_idx, groups=tasks[lab_idx])):
        for t in set(tasks[lab_idx[test]]):
            folds[str(t)] = f
    fold_of = np.array([folds.get(str(t), -1) for t in tasks], dtype=np.int64)
    y = (
        items["human_met"].to_numpy(np.float64)
        if items is not None
        else resp["human_score"].to_numpy(np.float64)
    )

    def fit_predict(
        train: npt.NDArray[np.bool_], test: npt.NDArray[np.bool_], into: FloatArray
    ) -> BaseEstimator:
        """Fit on the ``train`` rows; write predictions of the ``test`` rows ``into``."""
        if level == "response":
            test = test & np.isfinite(X[:, 0])
        est = _make(method, pg, metric)
        if level == "criterion":
            est.fit(X[train], y[train].astype(np.int64))
            if test.any():
                into[test] = _item_p(est, X[test])
        else:
            est.fit(X[train], y[train])
            if test.any():
                into[test] = est.predict(X[test])
        return est

    oof = np.full(len(X), np.nan)
    for f in range(k):
        fit_predict(calib & (fold_of != f), fold_of == f, oof)
    # The final calibrator: every calibration task; it alone predicts the held-out tasks.
    test_p = np.full(len(X), np.nan)
    final = fit_predict(calib, in_held, test_p)
    if items is not None:
        items = items.assign(oof=oof, test=test_p)
        resp = resp.assign(
            oof=_scores_within(frames, items, resp, oof, list(folds), memo),
            test=(
                _scores_within(frames, items, resp, test_p, held, memo)
                if held
                else np.full(len(resp), np.nan)
            ),
        )
    else:
        resp = resp.assign(oof=oof, test=test_p)
    design = _make_design(
        method,
        pg,
        metric,
        n_splits,
        tasks,
        X,
        y,
        calib,
        items["judge_met"].to_numpy(bool) if items is not None else None,
    )
    _add_responses(design, frames, items, resp, memo)
    return CrossFit(
        method, level, folds, items, resp, groups, held, final, int(calib.sum()), design
    )


def _scores_within(
    frames: Frames,
    items: pd.DataFrame,
    resp: pd.DataFrame,
    p: FloatArray,
    tasks: list[str],
    memo: dict[Any, Any] | None = None,
) -> npt.NDArray[np.float64]:
    """Calibrated response scores (criterion level) from ``p``, NaN outside ``tasks``."""
    scored = calibrated_response_scores(frames, items, np.where(np.isnan(p), 0.0, p), memo=memo)
    inside = np.isin(scored["task_id"].to_numpy(object), tasks)
    by_id = dict(zip(scored["response_id"], scored["score"].where(inside), strict=True))
    return np.asarray(resp["response_id"].map(by_id).to_numpy(np.float64), np.float64)


# ---------------------------------------------------------------------------------------
# The bootstrap of the whole cross-fit
# ---------------------------------------------------------------------------------------

IntArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]
#: How the out-of-fold figures get their interval: ``"refit"`` redoes the cross-fit
#: (folds, fits, out-of-fold predictions) on every task resample; ``"fixed"`` resamples
#: the out-of-fold predictions of the data with the fitted calibrators held fixed (the
#: behaviour before gradercal 0.1.1: it ignores the variability of the fitting and
#: undercovers, see docs/agreement.md).
OofInterval = Literal["refit", "fixed"]
OOF_INTERVALS: tuple[OofInterval, ...] = get_args(OofInterval)


@dataclass
class _Design:
    """What a task resample needs to redo the cross-fit, as plain arrays.

    *Rows* are items (criterion level) or responses (response level); *tasks* are the
    calibration tasks, indexed in the order of the bootstrap weights. ``lab`` marks the
    labelled rows of the calibration tasks: they are fitted on and evaluated. Response
    scores of the criterion-level methods are ``clip((Σ a·p + b + const) / pos, 0, 1)``
    over the items of a response (``item_resp``), evaluated where ``resp_eval``.
    """

    method: Method
    per_group: bool
    metric: str
    min_group_size: int
    n_splits: int
    task_names: list[str]
    fold_order: IntArray
    fold_size: FloatArray
    row_task: IntArray
    x: FloatArray
    group: IntArray
    y: FloatArray
    lab: BoolArray
    judge_met: BoolArray
    resp_task: IntArray
    resp_judge: FloatArray
    resp_human: FloatArray
    resp_eval: BoolArray
    pass_cut: float
    item_resp: IntArray | None = None
    credit_a: FloatArray | None = None
    credit_b: FloatArray | None = None
    resp_const: FloatArray | None = None
    resp_pos: FloatArray | None = None

    @property
    def n_tasks(self) -> int:
        return len(self.task_names)

    @property
    def level(self) -> Literal["criterion", "response"]:
        return _level(self.method)


def _task_index(tasks: npt.NDArray[Any], lab: BoolArray) -> tuple[list[str], IntArray]:
    """Calibration tasks in order of first appearance among the ``lab`` rows, and the
    index of every row's task among them (−1 outside)."""
    names = [str(t) for t in pd.unique(pd.Series(tasks[lab], dtype=object))]
    code = {t: k for k, t in enumerate(names)}
    return names, np.array([code.get(str(t), -1) for t in tasks], dtype=np.intp)


def _make_design(
    method: Method,
    per_group: bool,
    metric: ThresholdMetric,
    n_splits: int,
    tasks: npt.NDArray[Any],
    X: FloatArray,
    y: FloatArray,
    lab: BoolArray,
    judge_met: BoolArray | None = None,
) -> _Design:
    """The design of rows ``X``/``y``/``tasks`` (no response part; see
    :func:`_add_responses`)."""
    names, row_task = _task_index(tasks, lab)
    fold_order = np.asarray(sorted(range(len(names)), key=lambda k: names[k]), dtype=np.intp)
    fold_size = np.bincount(row_task[lab], minlength=len(names)).astype(np.float64)
    est = _make(method, per_group, metric)
    level = _level(method)
    group = (
        np.asarray(np.rint(X[:, 1]), dtype=np.intp)
        if level == "criterion" and per_group
        else np.full(len(X), -1, dtype=np.intp)
    )
    empty_i, empty_f = np.zeros(0, np.intp), np.zeros(0)
    return _Design(
        method=method,
        per_group=per_group and level == "criterion",
        metric="rate" if method == "leniency" else metric,
        min_group_size=int(getattr(est, "min_group_size", 0)),
        n_splits=n_splits,
        task_names=names,
        fold_order=fold_order,
        fold_size=fold_size,
        row_task=row_task,
        x=np.asarray(X[:, 0], np.float64),
        group=group,
        y=np.asarray(y, np.float64),
        lab=np.asarray(lab, bool),
        judge_met=(
            np.asarray(judge_met, bool) if judge_met is not None else np.zeros(len(X), bool)
        ),
        resp_task=empty_i,
        resp_judge=empty_f,
        resp_human=empty_f,
        resp_eval=np.zeros(0, bool),
        pass_cut=0.0,
    )


def _group_folds(sizes: FloatArray, k: int) -> IntArray:
    """scikit-learn's ``GroupKFold(k)`` (no shuffle) assignment of groups to folds.

    ``sizes`` are the groups' sizes in the order of their sorted ids; the largest group
    goes first (ties: the later one), each to the currently lightest fold (ties: the
    first one). ``tests/test_calibration.py`` checks it against ``GroupKFold``.
    """
    order = np.argsort(sizes, kind="stable")[::-1]
    load = [0.0] * k
    fold = np.empty(len(sizes), dtype=np.intp)
    for g in order.tolist():
        j = load.index(min(load))
        load[j] += float(sizes[g])
        fold[g] = j
    return fold


def _refit_oof(d: _Design, w: FloatArray) -> tuple[FloatArray, FloatArray] | None:
    """The cross-fit redone on the tasks drawn ``w`` times each (copies stay together).

    Returns the out-of-fold predictions of every row of a drawn task (NaN elsewhere) and
    the rows' weights (their task's multiplicity), or None when fewer than two tasks are
    drawn. With ``w = 1`` this is exactly :func:`cross_fit`'s procedure.
    """
    drawn = w > 0
    n_drawn = int(drawn.sum())
    if n_drawn < 2:
        return None
    k = max(2, min(d.n_splits, n_drawn))
    order = d.fold_order[drawn[d.fold_order]]
    tfold = np.full(d.n_tasks, -1, dtype=np.intp)
    tfold[order] = _group_folds(d.fold_size[order] * w[order], k)
    inside = d.row_task >= 0
    rfold = np.where(inside, tfold[d.row_task], -1)
    rw = np.where(inside, w[d.row_task], 0.0)
    p = np.full(len(d.x), np.nan)
    if d.level == "criterion":
        _refit_thresholds(d, rfold, rw, k, p)
        return p, rw
    usable = np.isfinite(d.x)
    for f in range(k):
        train = d.lab & (rfold >= 0) & (rfold != f)
        test = (rfold == f) & usable
        if test.any():
            p[test] = _weighted_score_map(d.method, d.x[train], d.y[train], rw[train], d.x[test])
    return p, rw


def _weighted_score_map(
    method: Method, x: FloatArray, y: FloatArray, w: FloatArray, x_new: FloatArray
) -> FloatArray:
    """:class:`ScoreCalibrator` (bounds (0, 1)) fitted on ``w[i]`` copies of each row,
    predicting ``x_new`` — without the estimator's validation, for speed.

    Isotonic: the weighted isotonic regression (``scipy.optimize.isotonic_regression``,
    which scikit-learn's ``IsotonicRegression`` calls) of the weighted mean target per
    distinct ``x``, clipped to (0, 1), interpolated linearly and constant beyond the ends. Platt: Newton's method on the weighted cross-entropy (the
    unpenalised maximum-likelihood fit of ``LogisticRegression``); when it does not
    converge, the estimator itself fits the copies.
    """
    if method == "isotonic":
        from scipy.optimize import isotonic_regression  # type: ignore[import-untyped, unused-ignore]

        ux, inv = np.unique(x, return_inverse=True)
        wu = np.bincount(inv, weights=w, minlength=len(ux))
        yu = np.bincount(inv, weights=w * y, minlength=len(ux)) / wu
        if len(ux) == 1:
            return np.full(len(x_new), float(np.clip(yu[0], 0.0, 1.0)))
        fitted = np.clip(isotonic_regression(yu, weights=wu, increasing=True).x, 0.0, 1.0)
        return np.asarray(np.interp(x_new, ux, fitted), np.float64)
    z = np.clip(y, 0.0, 1.0)
    if np.all(z == z[0]):
        return np.full(len(x_new), float(z[0]))
    A = np.column_stack([x, np.ones(len(x))])
    beta = np.zeros(2)
    for _ in range(100):
        q = 1.0 / (1.0 + np.exp(-(A @ beta)))
        grad = A.T @ (w * (q - z))
        hess = (A * (w * q * (1.0 - q))[:, None]).T @ A
        try:
            step = np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            break
        beta = beta - step
        if float(np.max(np.abs(step))) < 1e-10:
            return np.asarray(1.0 / (1.0 + np.exp(-(beta[0] * x_new + beta[1]))), np.float64)
    idx = np.repeat(np.arange(len(x)), w.astype(np.intp))
    est = ScoreCalibrator(method="platt").fit(x[idx][:, None], y[idx])
    return np.asarray(est.predict(x_new[:, None]), np.float64)


def _refit_thresholds(d: _Design, rfold: IntArray, rw: FloatArray, k: int, out: FloatArray) -> None:
    """Threshold-type fits of every fold from weighted counts per distinct score."""
    lab = np.flatnonzero(d.lab & (rfold >= 0))
    s, yl, fl, wl, gl = d.x[lab], d.y[lab] == 1.0, rfold[lab], rw[lab], d.group[lab]
    values, vcode = np.unique(s, return_inverse=True)
    nv = len(values)
    cnt = np.bincount(fl * nv + vcode, weights=wl, minlength=k * nv).reshape(k, nv)
    pos = np.bincount(fl * nv + vcode, weights=wl * yl, minlength=k * nv).reshape(k, nv)
    tot_c, tot_p = cnt.sum(axis=0), pos.sum(axis=0)
    codes = np.unique(gl) if d.per_group else np.zeros(0, np.intp)
    per_group = []
    for code in codes.tolist():
        sel = gl == code
        gc = np.bincount(fl[sel] * nv + vcode[sel], weights=wl[sel], minlength=k * nv)
        gp = np.bincount(fl[sel] * nv + vcode[sel], weights=(wl * yl)[sel], minlength=k * nv)
        gc, gp = gc.reshape(k, nv), gp.reshape(k, nv)
        per_group.append((code, gc.sum(axis=0) - gc, gp.sum(axis=0) - gp))
    # Every fold's fits (overall, then per group) in one evaluation of the objective.
    train_c, train_p = tot_c[None, :] - cnt, tot_p[None, :] - pos
    rows: list[tuple[int, int]] = []  # (fold, group code or -1)
    fits_c, fits_p = [], []
    for f in range(k):
        n, n_met = float(train_c[f].sum()), float(train_p[f].sum())
        if n_met in (0.0, n):  # one class in the training folds: predict it
            out[rfold == f] = 1.0 if n_met == n else 0.0
            continue
        rows.append((f, -1))
        fits_c.append(train_c[f])
        fits_p.append(train_p[f])
        for code, gc, gp in per_group:
            gn, gm = float(gc[f].sum()), float(gp[f].sum())
            if gn > 0 and gn >= d.min_group_size and 0 < gm < gn:
                rows.append((f, code))
                fits_c.append(gc[f])
                fits_p.append(gp[f])
    if not rows:
        return
    found = _thresholds_from_counts(values, np.stack(fits_c), np.stack(fits_p), d.metric)
    t = np.full(len(d.x), np.nan)
    for (f, code), value in zip(rows, found, strict=True):
        if code == -1:
            t[rfold == f] = value
        else:
            t[(rfold == f) & (d.group == code)] = value
    for f in {f for f, _ in rows}:
        test = rfold == f
        out[test] = (d.x[test] >= t[test]).astype(np.float64)


def _conf_sums(pred: BoolArray, y: BoolArray, w: FloatArray) -> FloatArray:
    """Weighted TP, FP, FN, TN (the columns of :func:`_onehot_conf`)."""
    cell = np.where(pred, np.where(y, 0, 1), np.where(y, 2, 3))
    return np.bincount(cell, weights=w, minlength=4).astype(np.float64)


def _bin_sums(p: FloatArray, y: FloatArray, w: FloatArray) -> FloatArray:
    """Weighted sums of :func:`_bin_features` (per bin: count, Σp, Σy)."""
    b = _bin_index(p)
    out = np.empty(3 * N_BINS)
    out[0::3] = np.bincount(b, weights=w, minlength=N_BINS)
    out[1::3] = np.bincount(b, weights=w * p, minlength=N_BINS)
    out[2::3] = np.bincount(b, weights=w * y, minlength=N_BINS)
    return out


def _criterion_sums(
    y: BoolArray, before_v: BoolArray, before_p: FloatArray, after_p: FloatArray, w: FloatArray
) -> FloatArray:
    """The weighted column sums of :func:`_features_criterion`'s features."""
    yf = y.astype(np.float64)
    return np.concatenate(
        [
            _conf_sums(before_v, y, w),
            _conf_sums(after_p >= 0.5, y, w),
            [float(np.sum(w * (before_p - yf) ** 2)), float(np.sum(w * (after_p - yf) ** 2))],
            _bin_sums(before_p, yf, w),
            _bin_sums(after_p, yf, w),
            [float(np.sum(w))],
        ]
    )


def _response_sums(
    before: FloatArray, after: FloatArray, y: FloatArray, w: FloatArray, cut: float
) -> FloatArray:
    """The weighted column sums of :func:`_features_response`'s features."""
    parts: list[Any] = []
    for pred in (before, after):
        e = pred - y
        parts += [
            [float(np.sum(w * e)), float(np.sum(w * np.abs(e))), float(np.sum(w * e**2))],
            _conf_sums(pred >= cut, y >= cut, w),
            _bin_sums(pred, y, w),
        ]
    parts.append([float(np.sum(w))])
    return np.concatenate(parts)


_CRITERION_WIDTH = 4 + 4 + 2 + 6 * N_BINS + 1
_RESPONSE_WIDTH = 2 * (3 + 4 + 3 * N_BINS) + 1


def _replicate_sums(d: _Design, w: FloatArray) -> tuple[FloatArray, FloatArray] | None:
    """Criterion and response feature sums of the cross-fit redone on resample ``w``
    (the criterion part is empty at the response level, the response part when the
    design has no responses)."""
    fit = _refit_oof(d, w)
    if fit is None:
        return None
    p, rw = fit
    crit, resp = np.zeros(0), np.zeros(0)
    if d.level == "criterion":
        sel = d.lab & (rw > 0)
        crit = _criterion_sums(d.y[sel] == 1.0, d.judge_met[sel], d.x[sel], p[sel], rw[sel])
        if d.item_resp is None:
            return crit, resp
        assert d.credit_a is not None and d.credit_b is not None
        assert d.resp_const is not None and d.resp_pos is not None
        ok = (rw > 0) & (d.item_resp >= 0)
        earned = d.resp_const + np.bincount(
            d.item_resp[ok],
            weights=d.credit_a[ok] * p[ok] + d.credit_b[ok],
            minlength=len(d.resp_task),
        )
        pos = np.where(d.resp_pos > 0, d.resp_pos, 1.0)
        score = np.clip(earned / pos, 0.0, 1.0)
    else:
        score = p
    wr = np.where(d.resp_task >= 0, w[d.resp_task], 0.0)
    rsel = d.resp_eval & (wr > 0)
    resp = _response_sums(d.resp_judge[rsel], score[rsel], d.resp_human[rsel], wr[rsel], d.pass_cut)
    return crit, resp


def _refit_replicates(
    d: _Design, n_boot: int, seed: int
) -> tuple[FloatArray | None, FloatArray | None]:
    """Feature sums (one row per resample; NaN where undefined) of the cross-fit redone
    on each of the ``n_boot`` task resamples of :func:`resampling_weights`."""
    if n_boot <= 0 or d.n_tasks < 2:
        return None, None
    W = resampling_weights(d.n_tasks, n_boot, seed).astype(np.float64)
    crit = np.full((n_boot, _CRITERION_WIDTH), np.nan) if d.level == "criterion" else None
    has_resp = d.level == "response" or d.item_resp is not None
    resp = np.full((n_boot, _RESPONSE_WIDTH), np.nan) if has_resp else None
    for b in range(n_boot):
        out = _replicate_sums(d, W[b])
        if out is None:
            continue
        if crit is not None:
            crit[b] = out[0]
        if resp is not None:
            resp[b] = out[1]
    return crit, resp


def _add_responses(
    d: _Design,
    frames: Frames,
    items: pd.DataFrame | None,
    resp: pd.DataFrame,
    memo: dict[Any, Any] | None,
) -> None:
    """Attach the response part of the design (rows of :func:`response_table`)."""
    rtask = resp["task_id"].to_numpy(object)
    code = {t: k for k, t in enumerate(d.task_names)}
    d.resp_task = np.array([code.get(str(t), -1) for t in rtask], dtype=np.intp)
    d.resp_judge = resp["judge_score"].to_numpy(np.float64)
    d.resp_human = resp["human_score"].to_numpy(np.float64)
    d.pass_cut = float(frames.pass_threshold) - PASS_EPSILON
    finite = np.isfinite(d.resp_judge) & np.isfinite(d.resp_human) & (d.resp_task >= 0)
    if items is None:
        d.resp_eval = finite & d.lab
        return
    parts, auto, need, pos = _credit_parts(frames, memo)
    row_of = {r: k for k, r in enumerate(resp["response_id"].to_numpy(object))}
    at = np.array([row_of.get(r, -1) for r in parts["response_id"].to_numpy(object)], np.intp)
    keep = at >= 0
    n_resp = len(resp)
    const, rpos, rneed = np.zeros(n_resp), np.zeros(n_resp), np.zeros(n_resp)
    const[at[keep]], rpos[at[keep]], rneed[at[keep]] = auto[keep], pos[keep], need[keep]
    d.item_resp = np.array(
        [row_of.get(r, -1) for r in items["response_id"].to_numpy(object)], dtype=np.intp
    )
    n_items = np.bincount(d.item_resp[d.item_resp >= 0], minlength=n_resp)
    points = items["points"].to_numpy(np.float64)
    partial = items["judge_partial"].to_numpy(np.float64)
    d.credit_a, d.credit_b = points * (1.0 - partial), points * partial
    d.resp_const, d.resp_pos = const, rpos
    d.resp_eval = finite & (rpos > 0) & (n_items == rneed)


def _features_criterion(items: pd.DataFrame) -> tuple[list[Any], FloatArray]:
    sel = np.isfinite(items["oof"].to_numpy(np.float64)) & np.isfinite(
        items["human_met"].to_numpy(np.float64)
    )
    it = items.loc[sel]
    y = it["human_met"].to_numpy(np.float64) == 1.0
    before_v = it["judge_met"].to_numpy(bool)
    after_p = it["oof"].to_numpy(np.float64)
    after_v = after_p >= 0.5
    before_p = it["judge_score"].to_numpy(np.float64)
    cols = [
        _onehot_conf(before_v, y),
        _onehot_conf(after_v, y),
        ((before_p - y) ** 2)[:, None],
        ((after_p - y) ** 2)[:, None],
        _bin_features(before_p, y.astype(np.float64)),
        _bin_features(after_p, y.astype(np.float64)),
        np.ones((len(it), 1)),
    ]
    return list(it["task_id"]), np.hstack(cols) if len(it) else np.zeros(
        (0, 4 + 4 + 2 + 6 * N_BINS + 1)
    )


def _onehot_conf(pred: npt.NDArray[np.bool_], y: npt.NDArray[np.bool_]) -> FloatArray:
    cell = np.where(pred, np.where(y, 0, 1), np.where(y, 2, 3))
    return np.asarray(np.eye(4)[cell], np.float64)


def _bin_features(p: FloatArray, y: FloatArray) -> FloatArray:
    b = _bin_index(p)
    out = np.zeros((len(p), 3 * N_BINS))
    r = np.arange(len(p))
    out[r, 3 * b] = 1.0
    out[r, 3 * b + 1] = p
    out[r, 3 * b + 2] = y
    return out


def _ece_from_sums(s: FloatArray) -> FloatArray:
    s3 = s.reshape(len(s), N_BINS, 3)
    n = s3[:, :, 0].sum(axis=1)
    out = np.full(len(s), np.nan)
    np.divide(np.abs(s3[:, :, 1] - s3[:, :, 2]).sum(axis=1), n, out=out, where=n > 0)
    return out


def _criterion_figures(s: FloatArray) -> dict[str, FloatArray]:
    mb = comparison_metrics(s[:, 0:4])
    ma = comparison_metrics(s[:, 4:8])
    n = s[:, -1]
    nb = 10 + 3 * N_BINS
    with np.errstate(invalid="ignore", divide="ignore"):
        out = {}
        for tag, m, brier, bins in (
            ("before", mb, s[:, 8], s[:, 10:nb]),
            ("after", ma, s[:, 9], s[:, nb : nb + 3 * N_BINS]),
        ):
            out[f"{tag}:cohen_kappa"] = m["cohen_kappa"]
            out[f"{tag}:balanced_f1"] = m["balanced_f1"]
            out[f"{tag}:percent_agreement"] = m["percent_agreement"]
            out[f"{tag}:leniency_bias"] = m["leniency_bias"]
            out[f"{tag}:brier"] = np.where(n > 0, brier / np.where(n > 0, n, 1), np.nan)
            out[f"{tag}:ece"] = _ece_from_sums(bins)
    return out


def _features_response(resp: pd.DataFrame, threshold: float) -> tuple[list[Any], FloatArray]:
    sel = (
        np.isfinite(resp["oof"].to_numpy(np.float64))
        & np.isfinite(resp["human_score"].to_numpy(np.float64))
        & np.isfinite(resp["judge_score"].to_numpy(np.float64))
    )
    r = resp.loc[sel]
    y = r["human_score"].to_numpy(np.float64)
    cut = threshold - PASS_EPSILON
    cols = []
    for pred in (r["judge_score"].to_numpy(np.float64), r["oof"].to_numpy(np.float64)):
        e = pred - y
        cols += [
            e[:, None],
            np.abs(e)[:, None],
            (e**2)[:, None],
            _onehot_conf(pred >= cut, y >= cut),
            _bin_features(pred, y),
        ]
    cols.append(np.ones((len(r), 1)))
    width = 2 * (3 + 4 + 3 * N_BINS) + 1
    return list(r["task_id"]), np.hstack(cols) if len(r) else np.zeros((0, width))


def _response_figures(s: FloatArray) -> dict[str, FloatArray]:
    n = s[:, -1]
    safe = np.where(n > 0, n, 1.0)
    block = 3 + 4 + 3 * N_BINS
    out: dict[str, FloatArray] = {}
    for k, tag in enumerate(("before", "after")):
        o = k * block
        conf = comparison_metrics(s[:, o + 3 : o + 7])
        out[f"{tag}:mean_score_bias"] = np.where(n > 0, s[:, o] / safe, np.nan)
        out[f"{tag}:mae"] = np.where(n > 0, s[:, o + 1] / safe, np.nan)
        out[f"{tag}:rmse"] = np.where(n > 0, np.sqrt(s[:, o + 2] / safe), np.nan)
        out[f"{tag}:brier"] = np.where(n > 0, s[:, o + 2] / safe, np.nan)
        out[f"{tag}:ece"] = _ece_from_sums(s[:, o + 7 : o + block])
        out[f"{tag}:pass_rate_bias"] = conf["leniency_bias"]
        out[f"{tag}:pass_kappa"] = conf["cohen_kappa"]
        out[f"{tag}:pass_agreement"] = conf["percent_agreement"]
    return out


#: The range of every figure (intervals are kept inside it; a change lies within
#: ``[lo − hi, hi − lo]``).
_RANGES: dict[str, tuple[float, float]] = {
    "cohen_kappa": (-1.0, 1.0),
    "balanced_f1": (0.0, 1.0),
    "percent_agreement": (0.0, 1.0),
    "leniency_bias": (-1.0, 1.0),
    "brier": (0.0, 1.0),
    "ece": (0.0, 1.0),
    "mean_score_bias": (-1.0, 1.0),
    "mae": (0.0, 1.0),
    "rmse": (0.0, 1.0),
    "pass_rate_bias": (-1.0, 1.0),
    "pass_kappa": (-1.0, 1.0),
    "pass_agreement": (0.0, 1.0),
}


def _within(b: BootResult, lo: float, hi: float) -> BootResult:
    if b.ci_low is None or b.ci_high is None:
        return b
    return replace(b, ci_low=min(max(b.ci_low, lo), hi), ci_high=max(min(b.ci_high, hi), lo))


def _evaluate(
    tasks: list[Any],
    feats: FloatArray,
    figures: Any,
    n_boot: int,
    seed: int,
    ci: float,
    replicates: FloatArray | None = None,
    n_clusters: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Before/after/change figures with their percentile intervals.

    The point estimates are the figures of the feature sums of all rows. The intervals
    come from ``replicates`` (feature sums, one row per resample, e.g. of the cross-fit
    redone on each resample: :func:`_refit_replicates`) over ``n_clusters`` tasks when
    given, else from the task bootstrap of the rows' features as they are.
    """
    codes, labels = pd.factorize(pd.Series(tasks, dtype=object), sort=False)
    per_task = np.zeros((len(labels), feats.shape[1]))
    np.add.at(per_task, np.asarray(codes, dtype=np.intp), feats)
    point = figures(per_task.sum(axis=0, keepdims=True))
    reps: dict[str, FloatArray] = {}
    clusters = len(labels) if n_clusters is None else n_clusters
    if replicates is not None:
        if len(replicates):
            reps = figures(replicates)
    elif n_boot > 0 and len(labels) >= 2:
        w = resampling_weights(len(labels), n_boot, seed).astype(np.float64)
        reps = figures(w @ per_task)
    names = sorted(
        {k.split(":", 1)[1] for k in point}, key=lambda k: list(point).index(f"before:{k}")
    )

    def interval(v: float, rep: FloatArray, lo: float, hi: float) -> dict[str, Any]:
        b = percentile_interval(
            v if math.isfinite(v) else None,
            rep,
            n_boot=n_boot,
            n_clusters=clusters,
            ci=ci,
            note="undefined on the held-out data",
        )
        return boot_json(_within(b, lo, hi))

    out: dict[str, dict[str, Any]] = {"before": {}, "after": {}, "change": {}}
    for name in names:
        lo, hi = _RANGES.get(name, (-math.inf, math.inf))
        for tag in ("before", "after"):
            key = f"{tag}:{name}"
            out[tag][name] = interval(float(point[key][0]), reps.get(key, np.zeros(0)), lo, hi)
        d = float(point[f"after:{name}"][0] - point[f"before:{name}"][0])
        drep = reps[f"after:{name}"] - reps[f"before:{name}"] if reps else np.zeros(0)
        out["change"][name] = interval(d, drep, lo - hi, hi - lo)
    return out


@dataclass
class CalibrationResult:
    """A fitted calibration with its held-out evaluation.

    Attributes:
        judge: The judge's grader name.
        method: One of :data:`METHODS`.
        level: ``"criterion"`` or ``"response"``.
        estimator: The calibrator fitted on all human-graded data.
        params: JSON-able learned parameters (enough to rebuild ``estimator``).
        metrics: Out-of-fold figures on the calibration tasks, and under ``test`` the
            figures on the held-out tasks (``docs/agreement.md`` gives the shape).
        split: ``{"scheme": "GroupKFold", "group": "task", "n_splits", "folds": {task:
            fold}, "held_out": [task, …], "holdout": share, "seed"}`` — ``folds`` holds
            the calibration tasks only.
        provenance: Where the data came from (humans, counts, pass threshold, time).
        warnings: What the caller should know (e.g. nothing could be held out).
    """

    judge: str
    method: Method
    level: Literal["criterion", "response"]
    estimator: BaseEstimator
    params: dict[str, Any]
    metrics: dict[str, Any]
    split: dict[str, Any]
    provenance: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (without the estimator object)."""
        return {
            "judge": self.judge,
            "method": self.method,
            "level": self.level,
            "params": self.params,
            "metrics": self.metrics,
            "split": self.split,
            "provenance": self.provenance,
            "warnings": list(self.warnings),
        }


def _params(est: BaseEstimator, method: Method, groups: list[str]) -> dict[str, Any]:
    p: dict[str, Any] = {
        "method": method,
        "sklearn_params": est.get_params(),
        "groups": list(groups),
    }
    p["classes"] = [int(c) for c in est.classes_] if hasattr(est, "classes_") else None
    if isinstance(est, _ThresholdBase):
        p["threshold"] = est.threshold_
        p["train_score"] = est.score_
        p["group_thresholds"] = {
            groups[c]: t for c, t in est.group_thresholds_.items() if 0 <= c < len(groups)
        }
        if isinstance(est, LeniencyCalibrator):
            p["leniency"] = {
                ("(overall)" if c == -1 else groups[c]): v
                for c, v in est.leniency_.items()
                if c < len(groups)
            }
    elif isinstance(est, ScoreCalibrator):
        p["y_low"], p["y_high"] = est.y_low_, est.y_high_
        if est.method == "isotonic":
            p["x_thresholds"] = [float(x) for x in est.X_thresholds_]
            p["y_thresholds"] = [float(x) for x in est.y_thresholds_]
        else:
            p["constant"] = est.constant_
            p["coef"] = None if math.isnan(est.coef_) else est.coef_
            p["intercept"] = None if math.isnan(est.intercept_) else est.intercept_
    return p


def calibrator_from_params(params: dict[str, Any]) -> BaseEstimator:
    """Rebuild a fitted calibrator from :attr:`CalibrationResult.params` (e.g. from the DB).

    Group codes are positions in ``params["groups"]``.
    """
    method = params["method"]
    groups: list[str] = list(params.get("groups") or [])
    code = {g: k for k, g in enumerate(groups)}
    sk = dict(params.get("sklearn_params") or {})
    est: BaseEstimator
    if method in CRITERION_METHODS:
        t: _ThresholdBase = (
            ThresholdCalibrator(**sk) if method == "threshold" else LeniencyCalibrator(**sk)
        )
        t.threshold_ = float(params["threshold"])
        t.score_ = float(params.get("train_score") or math.nan)
        t.group_thresholds_ = {
            code[g]: float(v) for g, v in (params.get("group_thresholds") or {}).items()
        }
        if isinstance(t, LeniencyCalibrator):
            t.leniency_ = {
                (-1 if g == "(overall)" else code[g]): float(v)
                for g, v in (params.get("leniency") or {}).items()
            }
        est = t
    elif method in RESPONSE_METHODS:
        if sk.get("bounds") is not None:
            sk["bounds"] = tuple(sk["bounds"])
        sc = ScoreCalibrator(**sk)
        sc.y_low_, sc.y_high_ = float(params["y_low"]), float(params["y_high"])
        if method == "isotonic":
            sc.X_thresholds_ = np.asarray(params["x_thresholds"], np.float64)
            sc.y_thresholds_ = np.asarray(params["y_thresholds"], np.float64)
        else:
            sc.constant_ = params.get("constant")
            sc.coef_ = math.nan if params.get("coef") is None else float(params["coef"])
            sc.intercept_ = (
                math.nan if params.get("intercept") is None else float(params["intercept"])
            )
        est = sc
    else:
        raise ValueError(f"unknown calibration method {method!r}")
    if params.get("classes") is not None:
        est.classes_ = np.asarray(params["classes"], dtype=np.int64)
    est.n_features_in_ = 2 if method in CRITERION_METHODS else 1
    return est


def _figures(
    frames: Frames,
    cf: CrossFit,
    column: Literal["oof", "test"],
    n_boot: int,
    seed: int,
    ci: float,
    interval: OofInterval = "fixed",
) -> dict[str, Any]:
    """Before/after figures of the predictions in ``column`` (NaN rows are left out).

    The same features and sums serve the out-of-fold figures (``oof``, the calibration
    tasks) and the test figures (``test``, the held-out tasks). The intervals of the
    test figures resample the held-out tasks under the one final calibrator; those of
    the out-of-fold figures redo the whole cross-fit on every resample of the
    calibration tasks with ``interval="refit"`` (:func:`_refit_replicates`).
    """
    out: dict[str, Any] = {}
    crit_reps: FloatArray | None = None
    resp_reps: FloatArray | None = None
    clusters: int | None = None
    if column == "oof" and interval == "refit" and cf.design is not None and n_boot > 0:
        crit_reps, resp_reps = _refit_replicates(cf.design, n_boot, seed)
        clusters = cf.design.n_tasks
    if cf.items is not None:
        items = cf.items.assign(oof=cf.items[column])
        t, f = _features_criterion(items)
        out["criterion"] = _evaluate(
            t, f, _criterion_figures, n_boot, seed, ci, crit_reps, clusters
        )
        sel = np.isfinite(items["oof"]) & np.isfinite(items["human_met"])
        it = items.loc[sel]
        out["n_items"] = len(it)
        out["reliability"] = {
            "before": reliability_table(it["judge_score"], it["human_met"]),
            "after": reliability_table(it["oof"], it["human_met"]),
        }
    resp = cf.responses.assign(oof=cf.responses[column])
    t, f = _features_response(resp, frames.pass_threshold)
    out["response"] = _evaluate(t, f, _response_figures, n_boot, seed, ci, resp_reps, clusters)
    rsel = (
        np.isfinite(resp["oof"])
        & np.isfinite(resp["human_score"])
        & np.isfinite(resp["judge_score"])
    )
    rr = resp.loc[rsel]
    out["n_responses"] = len(rr)
    if cf.items is None:
        out["reliability"] = {
            "before": reliability_table(rr["judge_score"], rr["human_score"]),
            "after": reliability_table(rr["oof"], rr["human_score"]),
        }
    return out


def fit_calibration(
    frames: Frames,
    judge: str,
    method: Method = "threshold",
    humans: Sequence[str] | None = None,
    *,
    n_splits: int = 5,
    per_group: bool | None = None,
    metric: ThresholdMetric = "kappa",
    tag_prefix: str | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    benchmark: str | None = None,
    holdout: float = 0.0,
    strict_holdout: bool = True,
    oof_interval: OofInterval = "refit",
) -> CalibrationResult:
    """Fit a calibration of ``judge`` and evaluate it on held-out tasks.

    With ``holdout > 0`` a seeded random share of the human-graded tasks is reserved
    first (:func:`holdout_tasks`): nothing learned sees them — neither the out-of-fold
    fits nor the final calibrator — and the final calibrator's figures on them are the
    ``test`` metrics. The out-of-fold figures and the final fit use the other tasks
    (the *calibration tasks*) only.

    Args:
        frames: The benchmark frames.
        judge: The judge's grader name.
        method: One of :data:`METHODS`.
        humans: The human graders (default: all).
        n_splits: GroupKFold folds.
        per_group: Per-tag calibration (criterion-level methods; see :func:`cross_fit`).
        metric: Objective of the threshold.
        tag_prefix: See :func:`item_table`.
        n_boot: Bootstrap resamples for the intervals of the held-out figures.
        seed: Seed of the bootstrap and of the held-out draw.
        ci: Confidence level.
        benchmark: The benchmark's name, for the provenance.
        holdout: Share of the human-graded tasks to hold out, in ``[0, 1)`` (0: none,
            every labelled task is a calibration task, as before held-out splits).
        strict_holdout: With too few tasks for the held-out split, raise (True) or
            hold nothing out and say so in :attr:`CalibrationResult.warnings` (False).
        oof_interval: Interval of the out-of-fold figures: ``"refit"`` (default) the
            task bootstrap of the whole cross-fit — every resample of the calibration
            tasks is split into folds, fitted and predicted out of fold again — so the
            interval includes the variability of the fitting; ``"fixed"`` resamples the
            out-of-fold predictions with the fits held fixed (faster; it undercovers:
            see docs/agreement.md).

    Returns:
        The calibrator fitted on all calibration tasks with the cross-validated
        figures and, when tasks are held out, the test figures (see the module
        docstring).

    Raises:
        ValueError: See :func:`cross_fit` and :func:`holdout_tasks`.
    """
    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    pg = (method == "leniency") if per_group is None else per_group
    options: dict[str, Any] = {
        "n_splits": n_splits,
        "per_group": pg,
        "metric": metric,
        "tag_prefix": tag_prefix,
        "seed": seed,
    }
    warnings: list[str] = []
    try:
        cf = cross_fit(frames, judge, method, names, holdout=holdout, **options)
    except _HoldoutRefused as exc:
        if strict_holdout:
            raise
        warnings.append(f"nothing held out: {exc}")
        cf = cross_fit(frames, judge, method, names, holdout=0.0, **options)
    if oof_interval not in OOF_INTERVALS:
        raise ValueError(f"oof_interval must be one of {OOF_INTERVALS}, not {oof_interval!r}")
    metrics: dict[str, Any] = {"level": cf.level}
    metrics |= _figures(frames, cf, "oof", n_boot, seed, ci, oof_interval)
    metrics["n_tasks"] = len(cf.folds)
    metrics["bootstrap"] = (
        {
            "n_boot": n_boot,
            "seed": seed,
            "ci": ci,
            "cluster": "task",
            "oof_interval": oof_interval,
            "test_interval": "fixed",
        }
        if n_boot > 0
        else None
    )
    metrics["test"] = (
        {"n_tasks": len(cf.held_out)} | _figures(frames, cf, "test", n_boot, seed, ci)
        if cf.held_out
        else None
    )
    est = cf.estimator
    assert est is not None
    from gradercal import __version__

    return CalibrationResult(
        judge=judge,
        method=method,
        level=cf.level,
        estimator=est,
        params=_params(est, method, cf.groups) | {"tag_prefix": tag_prefix, "metric": metric},
        metrics=metrics,
        split={
            "scheme": "GroupKFold",
            "group": "task",
            "n_splits": len(set(cf.folds.values())),
            "folds": dict(sorted(cf.folds.items())),
            "held_out": list(cf.held_out),
            "holdout": float(holdout) if cf.held_out else 0.0,
            "seed": int(seed),
        },
        provenance={
            "benchmark": benchmark,
            "judge": judge,
            "humans": names,
            "n_train": cf.n_train,
            "n_tasks": len(cf.folds),
            "n_held_out_tasks": len(cf.held_out),
            "pass_threshold": float(frames.pass_threshold),
            "gradercal_version": __version__,
            "fitted_at": datetime.now(UTC).isoformat(timespec="seconds"),
        },
        warnings=warnings,
    )


def criterion_cross_fit(
    score: npt.ArrayLike,
    y: npt.ArrayLike,
    tasks: Sequence[Any],
    *,
    method: Literal["threshold", "leniency"] = "threshold",
    groups: npt.ArrayLike | None = None,
    n_splits: int = 5,
    metric: ThresholdMetric = "kappa",
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    oof_interval: OofInterval = "refit",
) -> dict[str, dict[str, Any]]:
    """The out-of-fold criterion figures of :func:`fit_calibration` from plain arrays.

    The judge's probability of met ``score``, the experts' verdicts ``y`` (0/1) and the
    items' ``tasks``: split by ``GroupKFold(n_splits)`` by task, each fold predicted by
    the calibrator fitted on the others (per group when ``groups`` holds integer group
    codes), figures and intervals as in :func:`fit_calibration` (the raw verdict is
    ``score ≥ 0.5``). For simulations with a known truth.

    Returns:
        ``{"before", "after", "change"}`` → figure → ``{"value", "ci", "note"}``.
    """
    s = np.asarray(score, np.float64)
    yy = np.asarray(y, np.float64)
    tk = np.asarray([str(t) for t in tasks], dtype=object)
    per_group = groups is not None
    g = np.asarray(groups, np.float64) if groups is not None else np.full(len(s), -1.0)
    if oof_interval not in OOF_INTERVALS:
        raise ValueError(f"oof_interval must be one of {OOF_INTERVALS}, not {oof_interval!r}")
    d = _make_design(
        method,
        per_group,
        metric,
        n_splits,
        tk,
        np.column_stack([s, g]),
        yy,
        np.isfinite(yy),
        s >= 0.5,
    )
    if d.n_tasks < 2:
        raise ValueError("needs labelled items on at least two tasks")
    fit = _refit_oof(d, np.ones(d.n_tasks))
    assert fit is not None
    items = pd.DataFrame(
        {"task_id": tk, "oof": fit[0], "human_met": yy, "judge_met": s >= 0.5, "judge_score": s}
    )
    t, f = _features_criterion(items)
    if oof_interval == "fixed":
        return _evaluate(t, f, _criterion_figures, n_boot, seed, ci)
    reps, _ = _refit_replicates(d, n_boot, seed)
    return _evaluate(t, f, _criterion_figures, n_boot, seed, ci, reps, d.n_tasks)


def apply_calibration(
    frames: Frames, judge: str, params: dict[str, Any], humans: Sequence[str] | None = None
) -> pd.DataFrame:
    """Calibrated response scores of a judge's (new) verdicts under a fitted calibration.

    Args:
        frames: The benchmark frames holding the judge's verdicts.
        judge: The judge's grader name.
        params: :attr:`CalibrationResult.params` (e.g. loaded from the database).
        humans: Only used to build the tables (the consensus is not needed).

    Returns:
        ``response_id``, ``task_id``, ``model``, ``score`` (calibrated; NaN when the
        judge's grading of the response is incomplete), plus ``judge_score`` (raw).
    """
    est = calibrator_from_params(params)
    method: Method = params["method"]
    resp = response_table(frames, judge, humans)
    if method in CRITERION_METHODS:
        items = item_table(frames, judge, humans, tag_prefix=params.get("tag_prefix"))
        codes = {g: k for k, g in enumerate(params.get("groups") or [])}
        p = _item_p(est, _item_X(items, method, codes)) if len(items) else np.zeros(0)
        scored = calibrated_response_scores(frames, items, p)
        out = scored.merge(
            resp.loc[:, ["response_id", "judge_score"]], on="response_id", how="left"
        )
        return out.loc[out["response_id"].isin(set(resp["response_id"]))].reset_index(drop=True)
    x = resp["judge_score"].to_numpy(np.float64)
    score = np.full(len(x), np.nan)
    ok = np.isfinite(x)
    if ok.any():
        score[ok] = est.predict(x[ok][:, None])
    return pd.DataFrame(
        {
            "response_id": resp["response_id"],
            "task_id": resp["task_id"],
            "model": resp["model"],
            "score": score,
            "judge_score": x,
        }
    )
