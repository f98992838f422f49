"""Benchmark-level impact: what each grader does to the headline numbers.

For every model: mean rubric score and pass rate under the human consensus, under the
raw judge and (when given) under the calibrated judge; their differences; the task
verdicts that flip between pass and fail; breakdowns by workflow, domain, text-only vs
with artifacts and answer format; and the *partial credit* view.

Definitions (scores from :mod:`gradercal.analysis.scoring`):

* Figures are computed on the **paired** responses: those with a defined score under
  every grader compared (consensus, judge and, if given, calibrated judge). Responses
  scored by one grader only (e.g. not graded by the experts, or with a tied consensus)
  are left out and counted (``n_unpaired``), so differences compare like with like.
* ``mean_score`` = mean rubric score; ``pass_rate`` = share with
  ``score ≥ threshold − 1e-9`` (the benchmark's threshold, 70% by default);
  ``partial_credit_rate`` = share of responses that fail the threshold yet score
  ``≥ 0.5`` — they earn at least half of the rubric's reward.
* ``difference`` = figure under the judge (or calibrated judge) minus the figure under
  the consensus, on the same responses.
* A **flip** is a paired response whose pass/fail verdict differs between the consensus
  and the judge: ``"pass→fail"`` when the experts pass it and the judge fails it,
  ``"fail→pass"`` the reverse.

**Intervals**: task-clustered bootstrap (percentile): the tasks are resampled with the
multinomial weights of :func:`gradercal.stats.bootstrap.resampling_weights`; every
figure is a ratio of per-task sums, so all models, graders and differences share the
same resamples. The calibrated judge's scores should be out-of-fold predictions on the
human-graded responses (:func:`gradercal.analysis.calibration.cross_fit`), never in-sample.

This module imports pandas, numpy and gradercal's core only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal.analysis.agreement import Progress
from gradercal.analysis.context import AnalysisContext
from gradercal.analysis.scoring import BREAKDOWNS, PASS_EPSILON, response_scores
from gradercal.analysis.verdicts import human_graders
from gradercal.frames import Frames
from gradercal.stats.bootstrap import resampling_weights
from gradercal.stats.intervals import boot_json, percentile_bounds, percentile_interval

__all__ = ["FIGURES", "PARTIAL_CREDIT", "impact_report", "paired_scores", "summarize_paired"]

FloatArray = npt.NDArray[np.float64]
#: Per-grader figures, in report order.
FIGURES: tuple[str, ...] = ("mean_score", "pass_rate", "partial_credit_rate")
#: A failing response with at least this score earns partial credit.
PARTIAL_CREDIT = 0.5
_TEXT_ONLY = "text-only"
_WITH_ARTIFACTS = "with artifacts"


def paired_scores(
    frames: Frames,
    judge: str,
    humans: Sequence[str] | None = None,
    calibrated: pd.DataFrame | None = None,
    *,
    context: AnalysisContext | None = None,
) -> tuple[pd.DataFrame, int]:
    """Per-response scores under each grader, on the responses all of them scored.

    Args:
        frames: The benchmark frames.
        judge: The judge's grader name.
        humans: The graders of the consensus (default: every human grader).
        calibrated: Optional ``response_id``, ``score`` of the calibrated judge.
        context: An ``AnalysisContext`` shared by calls on the same frames (e.g. within one
            report) to reuse the score tables; None: compute afresh.

    Returns:
        ``(table, n_unpaired)``: the table has ``response_id``, ``task_id``, ``model``,
        ``consensus``, ``judge`` (and ``calibrated``) scores, in response order;
        ``n_unpaired`` counts responses with a score under some but not all graders.
    """
    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    cons = response_scores(frames, "consensus", humans=names, context=context)
    js = response_scores(frames, judge, include_ungraded=True, context=context)
    t = cons.loc[:, ["response_id", "task_id", "model", "score"]].rename(
        columns={"score": "consensus"}
    )
    t = t.merge(
        js.loc[:, ["response_id", "score"]].rename(columns={"score": "judge"}),
        on="response_id",
        how="left",
    )
    cols = ["consensus", "judge"]
    if calibrated is not None:
        c = calibrated.loc[:, ["response_id", "score"]].drop_duplicates("response_id")
        t = t.merge(c.rename(columns={"score": "calibrated"}), on="response_id", how="left")
        cols.append("calibrated")
    vals = t.loc[:, cols].to_numpy(np.float64)
    full = np.all(np.isfinite(vals), axis=1)
    some = np.any(np.isfinite(vals), axis=1)
    return t.loc[full].reset_index(drop=True), int(np.sum(some & ~full))


def _features(t: pd.DataFrame, graders: list[str], threshold: float) -> FloatArray:
    """Per response: [1, then per grader score, pass, partial]."""
    cut = threshold - PASS_EPSILON
    cols = [np.ones(len(t))]
    for g in graders:
        s = t[g].to_numpy(np.float64)
        cols += [
            s,
            (s >= cut).astype(np.float64),
            ((s < cut) & (s >= PARTIAL_CREDIT)).astype(np.float64),
        ]
    return np.column_stack(cols)


def _figures(s: FloatArray, graders: list[str]) -> dict[str, FloatArray]:
    n = s[..., 0]
    out: dict[str, FloatArray] = {}
    safe = np.where(n > 0, n, 1.0)
    for k, g in enumerate(graders):
        for j, fig in enumerate(FIGURES):
            out[f"{g}:{fig}"] = np.where(n > 0, s[..., 1 + 3 * k + j] / safe, np.nan)
    for g in graders[1:]:
        for fig in FIGURES:
            out[f"{g}-consensus:{fig}"] = out[f"{g}:{fig}"] - out[f"consensus:{fig}"]
    return out


def _summaries(
    t: pd.DataFrame,
    keys: list[str],
    graders: list[str],
    threshold: float,
    task_codes: npt.NDArray[np.intp],
    n_tasks: int,
    w: FloatArray | None,
    n_boot: int,
    ci: float,
) -> list[dict[str, Any]]:
    feats = _features(t, graders, threshold)
    rows: list[dict[str, Any]] = []
    if t.empty:
        return rows
    group_labels: list[Any]
    if len(keys) == 1:
        group_codes, uniq = pd.factorize(t[keys[0]].astype(object), sort=True)
        group_labels = [(x,) for x in uniq]
    else:
        group_codes, multi = pd.factorize(pd.MultiIndex.from_frame(t.loc[:, keys]), sort=True)
        group_labels = list(multi)
    m = feats.shape[1]
    per = np.zeros((len(group_labels), n_tasks, m))
    np.add.at(per, (np.asarray(group_codes, dtype=np.intp), task_codes), feats)
    # All groups' resampled sums in one product: (B, T) @ (T, G·m).
    flat = (w @ per.transpose(1, 0, 2).reshape(n_tasks, -1)) if w is not None else None
    for gi, label in enumerate(group_labels):
        S = per[gi]
        present = S[:, 0] > 0
        n_clusters = int(present.sum())
        point = _figures(S.sum(axis=0, keepdims=True), graders)
        reps = _figures(flat[:, gi * m : (gi + 1) * m], graders) if flat is not None else {}
        pre = percentile_bounds(reps, ci, n_clusters)
        row: dict[str, Any] = dict(
            zip(keys, label if isinstance(label, tuple) else (label,), strict=True)
        )
        row["n_responses"] = int(S[:, 0].sum())
        row["n_tasks"] = n_clusters
        for g in graders:
            row[g] = {
                fig: boot_json(
                    _ci(
                        point[f"{g}:{fig}"][0],
                        reps.get(f"{g}:{fig}"),
                        n_boot,
                        n_clusters,
                        ci,
                        pre.get(f"{g}:{fig}"),
                    )
                )
                for fig in FIGURES
            }
        for g in graders[1:]:
            row[f"{g}_minus_consensus"] = {
                fig: boot_json(
                    _ci(
                        point[f"{g}-consensus:{fig}"][0],
                        reps.get(f"{g}-consensus:{fig}"),
                        n_boot,
                        n_clusters,
                        ci,
                        pre.get(f"{g}-consensus:{fig}"),
                    )
                )
                for fig in FIGURES
            }
        rows.append(row)
    return rows


def _ci(
    point: float,
    reps: FloatArray | None,
    n_boot: int,
    n_clusters: int,
    ci: float,
    quantiles: tuple[float, float] | None = None,
) -> Any:
    value = float(point)
    return percentile_interval(
        value if math.isfinite(value) else None,
        reps if reps is not None else np.zeros(0),
        n_boot=n_boot if reps is not None else 0,
        n_clusters=n_clusters,
        ci=ci,
        note="no paired response",
        quantiles=quantiles,
    )


def summarize_paired(
    table: pd.DataFrame,
    graders: Sequence[str] = ("consensus", "judge"),
    *,
    threshold: float = 0.7,
    by: Sequence[str] = ("model",),
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
) -> list[dict[str, Any]]:
    """Mean score, pass rate and partial-credit rate per group, with differences.

    Args:
        table: Paired scores: ``task_id``, the ``by`` columns and one score column per
            grader (e.g. from :func:`paired_scores`); every score must be defined.
        graders: Score columns; the first is the reference the others are compared to.
        threshold: The pass threshold.
        by: Grouping columns.
        n_boot: Task-clustered bootstrap resamples (0: no intervals).
        seed: Bootstrap seed.
        ci: Confidence level.

    Returns:
        One row per group, sorted: the ``by`` values, ``n_responses``, ``n_tasks``, per
        grader ``{figure: {"value", "ci", "note"}}`` and per other grader
        ``"<grader>_minus_<first>"`` with the differences.
    """
    gl = list(graders)
    t = table.rename(columns={gl[0]: "consensus"}) if gl[0] != "consensus" else table
    names = ["consensus", *gl[1:]]
    codes, labels = pd.factorize(t["task_id"], sort=False)
    w = (
        resampling_weights(len(labels), n_boot, seed).astype(np.float64)
        if n_boot > 0 and len(labels) >= 2
        else None
    )
    rows = _summaries(
        t, list(by), names, threshold, np.asarray(codes, np.intp), len(labels), w, n_boot, ci
    )
    if gl[0] != "consensus":
        for row in rows:
            row[gl[0]] = row.pop("consensus")
            for g in gl[1:]:
                row[f"{g}_minus_{gl[0]}"] = row.pop(f"{g}_minus_consensus")
    return rows


def _group_column(frames: Frames, t: pd.DataFrame, by: str) -> pd.Series:
    tasks = frames.tasks.drop_duplicates("task_id").set_index("task_id")
    if by == "artifacts":
        labels = tasks["has_artifacts"].map({True: _WITH_ARTIFACTS, False: _TEXT_ONLY})
    else:
        labels = tasks[by]
    mapping = {
        k: (None if v is None or (isinstance(v, float) and math.isnan(v)) else str(v))
        for k, v in labels.items()
    }
    return pd.Series(
        [mapping.get(x) or "(none)" for x in t["task_id"]], index=t.index, dtype=object
    )


def impact_report(
    frames: Frames,
    judge: str,
    humans: Sequence[str] | None = None,
    *,
    calibrated: pd.DataFrame | None = None,
    calibration: dict[str, Any] | None = None,
    breakdowns: Sequence[str] = BREAKDOWNS,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
    progress: Progress | None = None,
    benchmark: str | None = None,
    context: AnalysisContext | None = None,
) -> dict[str, Any]:
    """Everything ``gradercal impact --json`` prints (shape in ``docs/agreement.md``).

    Args:
        frames: The benchmark frames.
        judge: The judge's grader name.
        humans: The graders of the consensus (default: every human grader).
        calibrated: Optional calibrated judge scores (``response_id``, ``score``) —
            out-of-fold on human-graded responses.
        calibration: A description of the calibration, echoed in the report.
        breakdowns: Task attributes to break down by (:data:`gradercal.analysis.scoring.BREAKDOWNS`;
            missing values form the group ``"(none)"``).
        n_boot: Task-clustered bootstrap resamples (0: no intervals).
        seed: Bootstrap seed.
        ci: Confidence level.
        progress: Optional ``(stage, done, total)`` callback.
        benchmark: The benchmark's name, echoed in the report.
        context: See :func:`paired_scores`.

    Raises:
        ValueError: An unknown breakdown.
    """
    bad = [b for b in breakdowns if b not in BREAKDOWNS]
    if bad:
        raise ValueError(f"unknown breakdown {bad[0]!r}; use {', '.join(BREAKDOWNS)}")
    t, n_unpaired = paired_scores(frames, judge, humans, calibrated, context=context)
    graders = ["consensus", "judge"] + (["calibrated"] if calibrated is not None else [])
    threshold = float(frames.pass_threshold)
    task_codes, n_tasks, w = _task_resampling(t, n_boot, seed)
    total = 2 + len(breakdowns)
    models = _summaries(t, ["model"], graders, threshold, task_codes, n_tasks, w, n_boot, ci)
    overall = _summaries(
        t.assign(all="all"), ["all"], graders, threshold, task_codes, n_tasks, w, n_boot, ci
    )
    if progress:
        progress("impact", 1, total)
    by: dict[str, list[dict[str, Any]]] = {}
    for i, b in enumerate(breakdowns):
        tb = t.assign(group=_group_column(frames, t, b))
        by[b] = _summaries(
            tb, ["model", "group"], graders, threshold, task_codes, n_tasks, w, n_boot, ci
        )
        if progress:
            progress("impact", 2 + i, total)
    flips = _flips(t, graders, threshold)
    if progress:
        progress("impact", total, total)
    overall_row = overall[0] if overall else None
    if overall_row is not None:
        overall_row.pop("all", None)
    return {
        "benchmark": benchmark,
        "judge": judge,
        "pass_threshold": threshold,
        "partial_credit_min": PARTIAL_CREDIT,
        "graders": graders,
        "calibration": calibration,
        "n_paired": len(t),
        "n_unpaired": n_unpaired,
        "bootstrap": _bootstrap_settings(n_boot, ci, seed) if w is not None else None,
        "overall": overall_row,
        "models": models,
        "breakdowns": by,
        "flips": flips,
        "n_flips": {g: sum(1 for f in flips if f["grader"] == g) for g in graders[1:]},
    }


def _bootstrap_settings(n_boot: int, ci: float, seed: int) -> dict[str, Any]:
    """The report's ``bootstrap`` entry: task-clustered expanded percentile intervals."""
    return {
        "n_boot": n_boot,
        "ci": ci,
        "seed": seed,
        "cluster": "task",
        "method": "expanded_percentile",
    }


def _task_resampling(
    t: pd.DataFrame, n_boot: int, seed: int
) -> tuple[npt.NDArray[np.intp], int, npt.NDArray[np.float64] | None]:
    """Each paired response's task code, the number of tasks, and the task-resampling
    weights (``n_boot × n_tasks``; None without a bootstrap or with fewer than two tasks)."""
    codes, task_labels = pd.factorize(t["task_id"], sort=False)
    task_codes = np.asarray(codes, dtype=np.intp)
    n_tasks = len(task_labels)
    w = (
        resampling_weights(n_tasks, n_boot, seed).astype(np.float64)
        if n_boot > 0 and n_tasks >= 2
        else None
    )
    return task_codes, n_tasks, w


def _flips(t: pd.DataFrame, graders: list[str], threshold: float) -> list[dict[str, Any]]:
    """The responses whose pass/fail under each non-consensus grader differs from the
    consensus's, sorted by grader, model, task and response."""
    cut = threshold - PASS_EPSILON
    flips: list[dict[str, Any]] = []
    for g in graders[1:]:
        cp = t["consensus"].to_numpy(np.float64) >= cut
        gp = t[g].to_numpy(np.float64) >= cut
        for k in np.flatnonzero(cp != gp):
            row = t.iloc[int(k)]
            flips.append(
                {
                    "grader": g,
                    "response_id": str(row["response_id"]),
                    "task_id": str(row["task_id"]),
                    "model": str(row["model"]),
                    "consensus_score": float(row["consensus"]),
                    "grader_score": float(row[g]),
                    "direction": "pass→fail" if cp[k] else "fail→pass",
                }
            )
    flips.sort(key=lambda f: (f["grader"], f["model"], f["task_id"], f["response_id"]))
    return flips
