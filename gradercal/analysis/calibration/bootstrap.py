"""The figures of a cross-fit and the task bootstrap of the whole cross-fit.

Figures: at the criterion level Cohen's kappa, balanced F1, percent agreement and
leniency bias of the verdicts (see :mod:`gradercal.analysis.agreement`), the Brier score
``mean((p − y)²)`` and the expected calibration error ``ECE = Σ_b (n_b/n) |p̄_b − ȳ_b|``
over 10 equal-width bins of ``p`` (``[0, 0.1), …, [0.9, 1]``; see
:mod:`gradercal.analysis.calibration.reliability`); at the response level (every method)
the mean score bias ``mean(ŝ − s)``, MAE, RMSE, Brier (= mean squared error with soft
targets), ECE and the pass-rate bias and Cohen's kappa of pass/fail at the benchmark's
threshold. Intervals: task-clustered bootstrap (percentile) — every figure is a function
of per-task sums. For the out-of-fold figures the whole cross-fit (folds, fits,
predictions) is redone on every task resample (``oof_interval="refit"``), so the interval
includes the variability of the fitting; the test figures resample the held-out tasks
under the one final calibrator.

The redone cross-fit works on plain arrays (:class:`RefitDesign`) and fits from weighted
counts, without the estimators' validation, for speed; with every task drawn once it
redoes :func:`gradercal.analysis.calibration.crossfit.cross_fit`'s procedure exactly (Platt
to ``LogisticRegression``'s tolerance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal._util.distinct import map_distinct
from gradercal.analysis.agreement import comparison_metrics
from gradercal.analysis.calibration._types import (
    FloatArray,
    Method,
    ThresholdMetric,
    calibration_level,
)
from gradercal.analysis.calibration.reliability import N_BINS, bin_index
from gradercal.analysis.calibration.tables import credit_parts
from gradercal.analysis.calibration.thresholds import (
    LENIENCY_MIN_GROUP_SIZE,
    THRESHOLD_MIN_GROUP_SIZE,
    group_folds,
    thresholds_from_counts,
)
from gradercal.analysis.context import AnalysisContext
from gradercal.analysis.scoring import PASS_EPSILON
from gradercal.frames import Frames
from gradercal.stats.bootstrap import BootResult, resampling_weights
from gradercal.stats.intervals import boot_json, percentile_interval

__all__ = ["OOF_INTERVALS", "OofInterval"]

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
class RefitDesign:
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
        return calibration_level(self.method)


def _task_index(tasks: npt.NDArray[Any], lab: BoolArray) -> tuple[list[str], IntArray]:
    """Calibration tasks in order of first appearance among the ``lab`` rows, and the
    index of every row's task among them (−1 outside)."""
    names = [str(t) for t in pd.unique(pd.Series(tasks[lab], dtype=object))]
    code = {t: k for k, t in enumerate(names)}
    return names, map_distinct(tasks, lambda t: code.get(str(t), -1)).astype(np.intp)


def make_design(
    method: Method,
    per_group: bool,
    metric: ThresholdMetric,
    n_splits: int,
    tasks: npt.NDArray[Any],
    X: FloatArray,
    y: FloatArray,
    lab: BoolArray,
    judge_met: BoolArray | None = None,
) -> RefitDesign:
    """The design of rows ``X``/``y``/``tasks`` (no response part; see
    :func:`add_responses`)."""
    names, row_task = _task_index(tasks, lab)
    fold_order = np.asarray(sorted(range(len(names)), key=lambda k: names[k]), dtype=np.intp)
    fold_size = np.bincount(row_task[lab], minlength=len(names)).astype(np.float64)
    level = calibration_level(method)
    group = (
        np.asarray(np.rint(X[:, 1]), dtype=np.intp)
        if level == "criterion" and per_group
        else np.full(len(X), -1, dtype=np.intp)
    )
    empty_i, empty_f = np.zeros(0, np.intp), np.zeros(0)
    return RefitDesign(
        method=method,
        per_group=per_group and level == "criterion",
        metric="rate" if method == "leniency" else metric,
        min_group_size=_MIN_GROUP_SIZE.get(method, 0),
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


#: The calibrators' default ``min_group_size`` (what :func:`make_design`'s fits use; the
#: response-level methods have no groups).
_MIN_GROUP_SIZE: dict[str, int] = {
    "threshold": THRESHOLD_MIN_GROUP_SIZE,
    "leniency": LENIENCY_MIN_GROUP_SIZE,
}
#: scikit-learn's ``GroupKFold`` assignment of groups to folds (the name the tests know)
_group_folds = group_folds


def refit_oof(d: RefitDesign, w: FloatArray) -> tuple[FloatArray, FloatArray] | None:
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
    from gradercal.analysis.calibration.calibrators import ScoreCalibrator

    idx = np.repeat(np.arange(len(x)), w.astype(np.intp))
    est = ScoreCalibrator(method="platt").fit(x[idx][:, None], y[idx])
    return np.asarray(est.predict(x_new[:, None]), np.float64)


def _refit_thresholds(
    d: RefitDesign, rfold: IntArray, rw: FloatArray, k: int, out: FloatArray
) -> None:
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
    found = thresholds_from_counts(values, np.stack(fits_c), np.stack(fits_p), d.metric)
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
    b = bin_index(p)
    out = np.empty(3 * N_BINS)
    out[0::3] = np.bincount(b, weights=w, minlength=N_BINS)
    out[1::3] = np.bincount(b, weights=w * p, minlength=N_BINS)
    out[2::3] = np.bincount(b, weights=w * y, minlength=N_BINS)
    return out


def _criterion_sums(
    y: BoolArray, before_v: BoolArray, before_p: FloatArray, after_p: FloatArray, w: FloatArray
) -> FloatArray:
    """The weighted column sums of :func:`criterion_features`'s features."""
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
    """The weighted column sums of :func:`response_features`'s features."""
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


def _replicate_sums(d: RefitDesign, w: FloatArray) -> tuple[FloatArray, FloatArray] | None:
    """Criterion and response feature sums of the cross-fit redone on resample ``w``
    (the criterion part is empty at the response level, the response part when the
    design has no responses)."""
    fit = refit_oof(d, w)
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


def refit_replicates(
    d: RefitDesign, n_boot: int, seed: int
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


def add_responses(
    d: RefitDesign,
    frames: Frames,
    items: pd.DataFrame | None,
    resp: pd.DataFrame,
    context: AnalysisContext | None,
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
    parts, auto, need, pos = credit_parts(frames, context)
    row_of = {r: k for k, r in enumerate(resp["response_id"].to_numpy(object))}
    at = map_distinct(parts["response_id"].to_numpy(object), lambda r: row_of.get(r, -1)).astype(
        np.intp
    )
    keep = at >= 0
    n_resp = len(resp)
    const, rpos, rneed = np.zeros(n_resp), np.zeros(n_resp), np.zeros(n_resp)
    const[at[keep]], rpos[at[keep]], rneed[at[keep]] = auto[keep], pos[keep], need[keep]
    d.item_resp = map_distinct(
        items["response_id"].to_numpy(object), lambda r: row_of.get(r, -1)
    ).astype(np.intp)
    n_items = np.bincount(d.item_resp[d.item_resp >= 0], minlength=n_resp)
    points = items["points"].to_numpy(np.float64)
    partial = items["judge_partial"].to_numpy(np.float64)
    d.credit_a, d.credit_b = points * (1.0 - partial), points * partial
    d.resp_const, d.resp_pos = const, rpos
    d.resp_eval = finite & (rpos > 0) & (n_items == rneed)


def criterion_features(items: pd.DataFrame) -> tuple[list[Any], FloatArray]:
    """Per item with an out-of-fold prediction and a human verdict: its task and the sums the
    criterion-level figures are made of (before/after confusion cells, Brier terms, bins)."""
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
    b = bin_index(p)
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


def criterion_figures(s: FloatArray) -> dict[str, FloatArray]:
    """The criterion-level figures (``before:…``, ``after:…``) from feature sums, one row each."""
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


def response_features(resp: pd.DataFrame, threshold: float) -> tuple[list[Any], FloatArray]:
    """Per response with an out-of-fold score and both scores: its task and the sums the
    response-level figures are made of (errors, pass/fail cells, bins)."""
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


def response_figures(s: FloatArray) -> dict[str, FloatArray]:
    """The response-level figures (``before:…``, ``after:…``) from feature sums, one row each."""
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


def evaluate_replicates(
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
    redone on each resample: :func:`refit_replicates`) over ``n_clusters`` tasks when
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
