"""Fitting a calibration, its saved parameters, and applying them.

:func:`fit_calibration` cross-fits a method (:mod:`gradercal.analysis.calibration.crossfit`)
and evaluates it (:mod:`gradercal.analysis.calibration.bootstrap`). The saved calibrator
is then fitted on all the calibration tasks; its reported metrics are the
cross-validated ones and, with a held-out split, the test ones
(:class:`CalibrationResult`). Its JSON-able parameters rebuild it
(:func:`calibrator_from_params`) and give the calibrated response scores of a judge's new
verdicts (:func:`apply_calibration`). :func:`criterion_cross_fit` gives the out-of-fold
criterion figures from plain arrays, for simulations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal.analysis.calibration._types import (
    CRITERION_METHODS,
    RESPONSE_METHODS,
    FloatArray,
    Method,
    ThresholdMetric,
)
from gradercal.analysis.calibration.bootstrap import (
    OOF_INTERVALS,
    OofInterval,
    criterion_features,
    criterion_figures,
    evaluate_replicates,
    make_design,
    refit_oof,
    refit_replicates,
    response_features,
    response_figures,
)
from gradercal.analysis.calibration.crossfit import (
    CrossFit,
    HoldoutRefused,
    cross_fit,
    item_features,
    item_probabilities,
)
from gradercal.analysis.calibration.reliability import reliability_table
from gradercal.analysis.calibration.tables import (
    calibrated_response_scores,
    item_table,
    response_table,
)
from gradercal.analysis.verdicts import human_graders
from gradercal.frames import Frames

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator  # type: ignore[import-untyped, unused-ignore]

__all__ = [
    "CalibrationResult",
    "apply_calibration",
    "calibrator_from_params",
    "criterion_cross_fit",
    "fit_calibration",
]


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
    from gradercal.analysis.calibration.calibrators import (
        LeniencyCalibrator,
        ScoreCalibrator,
        ThresholdBase,
    )

    p: dict[str, Any] = {
        "method": method,
        "sklearn_params": est.get_params(),
        "groups": list(groups),
    }
    p["classes"] = [int(c) for c in est.classes_] if hasattr(est, "classes_") else None
    if isinstance(est, ThresholdBase):
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
    from gradercal.analysis.calibration.calibrators import (
        LeniencyCalibrator,
        ScoreCalibrator,
        ThresholdBase,
        ThresholdCalibrator,
    )

    method = params["method"]
    groups: list[str] = list(params.get("groups") or [])
    code = {g: k for k, g in enumerate(groups)}
    sk = dict(params.get("sklearn_params") or {})
    est: BaseEstimator
    if method in CRITERION_METHODS:
        t: ThresholdBase = (
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
    calibration tasks with ``interval="refit"`` (:func:`refit_replicates`).
    """
    out: dict[str, Any] = {}
    crit_reps: FloatArray | None = None
    resp_reps: FloatArray | None = None
    clusters: int | None = None
    if column == "oof" and interval == "refit" and cf.design is not None and n_boot > 0:
        crit_reps, resp_reps = refit_replicates(cf.design, n_boot, seed)
        clusters = cf.design.n_tasks
    if cf.items is not None:
        items = cf.items.assign(oof=cf.items[column])
        t, f = criterion_features(items)
        out["criterion"] = evaluate_replicates(
            t, f, criterion_figures, n_boot, seed, ci, crit_reps, clusters
        )
        sel = np.isfinite(items["oof"]) & np.isfinite(items["human_met"])
        it = items.loc[sel]
        out["n_items"] = len(it)
        out["reliability"] = {
            "before": reliability_table(it["judge_score"], it["human_met"]),
            "after": reliability_table(it["oof"], it["human_met"]),
        }
    resp = cf.responses.assign(oof=cf.responses[column])
    t, f = response_features(resp, frames.pass_threshold)
    out["response"] = evaluate_replicates(
        t, f, response_figures, n_boot, seed, ci, resp_reps, clusters
    )
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


#: Methods that act on the judge's confidence (a threshold on P(met)).
CONFIDENCE_METHODS = ("threshold",)


def check_confidences(frames: Frames, judge: str, method: str = "threshold") -> None:
    """Refuse a confidence-based ``method`` for a judge without measured confidences.

    A judge's verdicts carry a measured confidence when it is strictly between 0 and 1
    for at least one of them (log-probabilities, or the vote share of several samples).
    Without (a server that returns no log-probabilities and one sample per pair: NULL
    confidences, or the 1.0 stored by earlier versions), a threshold on P(met) can only
    keep or flip every verdict at once: it would be fitted on nothing.

    Raises:
        ValueError: No verdict of ``judge`` with a confidence in (0, 1); the message says
            what still works.
    """
    j = frames.judgments
    conf = j.loc[j["grader"] == judge, "confidence"].to_numpy(np.float64)
    if len(conf) and np.any((conf > 0.0) & (conf < 1.0)):
        return
    measured = int(np.count_nonzero(~np.isnan(conf)))
    why = (
        "none of its verdicts has a confidence"
        if measured == 0
        else f"all {measured} of its confidences are 0 or 1 (none measured)"
    )
    raise ValueError(
        f"judge {judge!r}: `--method {method}` needs the judge's confidence, and {why} "
        "(its server returned no log-probabilities and it ran one sample per pair). "
        "What works without: --method leniency (per-tag correction of the verdicts), "
        "--method isotonic or platt (maps of the response scores); or judge again with "
        "`gradercal judge run --samples K` (K ≥ 3, K requests per pair) for a "
        "self-consistency confidence."
    )


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
    if method in CONFIDENCE_METHODS:
        check_confidences(frames, judge, method)
    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    pg = (method == "leniency") if per_group is None else per_group
    options: dict[str, Any] = {"n_splits": n_splits, "per_group": pg, "metric": metric}
    options |= {"tag_prefix": tag_prefix, "seed": seed}
    warnings: list[str] = []
    cf = _holding_out(frames, judge, method, names, holdout, strict_holdout, warnings, options)
    if oof_interval not in OOF_INTERVALS:
        raise ValueError(f"oof_interval must be one of {OOF_INTERVALS}, not {oof_interval!r}")
    metrics = _metrics(frames, cf, n_boot, seed, ci, oof_interval)
    return _result(frames, cf, judge, names, benchmark, holdout, options, metrics, warnings)


def _holding_out(
    frames: Frames,
    judge: str,
    method: Method,
    names: list[str],
    holdout: float,
    strict_holdout: bool,
    warnings: list[str],
    options: dict[str, Any],
) -> CrossFit:
    """:func:`cross_fit` with ``holdout``; when the held-out split is refused, raise
    (``strict_holdout``) or cross-fit again holding nothing out and add a warning."""
    try:
        return cross_fit(frames, judge, method, names, holdout=holdout, **options)
    except HoldoutRefused as exc:
        if strict_holdout:
            raise
        warnings.append(f"nothing held out: {exc}")
        return cross_fit(frames, judge, method, names, holdout=0.0, **options)


def _metrics(
    frames: Frames, cf: CrossFit, n_boot: int, seed: int, ci: float, oof_interval: OofInterval
) -> dict[str, Any]:
    """The result's ``metrics``: the out-of-fold figures, the bootstrap's settings and
    the held-out test figures (None without held-out tasks)."""
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
    return metrics


def _result(
    frames: Frames,
    cf: CrossFit,
    judge: str,
    names: list[str],
    benchmark: str | None,
    holdout: float,
    options: dict[str, Any],
    metrics: dict[str, Any],
    warnings: list[str],
) -> CalibrationResult:
    """The :class:`CalibrationResult` of a cross-fit (``options``: those of
    :func:`cross_fit`): the final calibrator, its parameters, the figures, the split and
    the provenance."""
    from gradercal import __version__

    method, seed = cf.method, options["seed"]
    tag_prefix, metric = options["tag_prefix"], options["metric"]

    est = cf.estimator
    assert est is not None
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
    d = make_design(
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
    fit = refit_oof(d, np.ones(d.n_tasks))
    assert fit is not None
    items = pd.DataFrame(
        {"task_id": tk, "oof": fit[0], "human_met": yy, "judge_met": s >= 0.5, "judge_score": s}
    )
    t, f = criterion_features(items)
    if oof_interval == "fixed":
        return evaluate_replicates(t, f, criterion_figures, n_boot, seed, ci)
    reps, _ = refit_replicates(d, n_boot, seed)
    return evaluate_replicates(t, f, criterion_figures, n_boot, seed, ci, reps, d.n_tasks)


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
        p = (
            item_probabilities(est, item_features(items, method, codes))
            if len(items)
            else np.zeros(0)
        )
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
