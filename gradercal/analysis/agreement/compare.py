"""A candidate against a reference: the comparison figures from confusion counts.

See :mod:`gradercal.analysis.agreement` for the definitions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal.analysis.context import AnalysisContext
from gradercal.analysis.verdicts import (
    consensus_verdicts,
    grader_rows,
    pair,
)
from gradercal.frames import Frames
from gradercal.stats.bootstrap import BootResult
from gradercal.stats.catalogue import in_view
from gradercal.stats.intervals import (
    boot_json,
    cached_weights,
    percentile_bounds,
    percentile_interval,
)

FloatArray = npt.NDArray[np.float64]
#: Progress callback ``(stage, done, total)`` (the CLI draws a progress bar with it).
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class ComparisonFigure:
    """One figure of a candidate–reference comparison (:func:`compare`), read from its
    entry in :mod:`gradercal.stats.catalogue`.

    Attributes:
        key: Its name in every result and ``--json``.
        label: Its name in the command line's tables.
        undefined: Why it can be undefined (its denominator is zero).
    """

    key: str
    label: str
    undefined: str


#: The figures of a candidate–reference comparison, in report order: the catalogue's view
#: ``"comparison"``, from whose entries the names, labels and reasons are read.
COMPARISON_FIGURES: tuple[ComparisonFigure, ...] = tuple(
    ComparisonFigure(f.key, f.comparison_label or f.phrase, f.undefined)
    for f in in_view("comparison")
)
#: Names of the figures of a candidate–reference comparison, in report order.
COMPARISON_METRICS: tuple[str, ...] = tuple(f.key for f in COMPARISON_FIGURES)
UNDEFINED: dict[str, str] = {f.key: f.undefined for f in COMPARISON_FIGURES}
#: Chance agreement this close to 1 makes kappa 0/0 (as in gradercal.stats).
PE_TOLERANCE = 1e-12


# ---------------------------------------------------------------------------------------
# Candidate vs reference
# ---------------------------------------------------------------------------------------


def _div(num: FloatArray, den: FloatArray) -> FloatArray:
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def comparison_metrics(counts: npt.ArrayLike) -> dict[str, FloatArray]:
    """Every comparison figure from confusion counts (vectorised over rows).

    Args:
        counts: ``(..., 4)`` array of ``TP, FP, FN, TN`` (reference = truth, met =
            positive).

    Returns:
        ``{name: array}`` for the names of :data:`COMPARISON_METRICS`, NaN where the
        figure is undefined (see the module docstring for the formulas).
    """
    c = np.asarray(counts, dtype=np.float64)
    tp, fp, fn, tn = c[..., 0], c[..., 1], c[..., 2], c[..., 3]
    n = tp + fp + fn + tn
    f1_met = _div(2 * tp, 2 * tp + fp + fn)
    f1_not = _div(2 * tn, 2 * tn + fn + fp)
    cand = _div(tp + fp, n)
    ref = _div(tp + fn, n)
    po = _div(tp + tn, n)
    pe = cand * ref + (1.0 - cand) * (1.0 - ref)
    kappa = np.full(po.shape, np.nan)
    ok = np.isfinite(pe) & ((1.0 - pe) > PE_TOLERANCE)
    np.divide(po - pe, 1.0 - pe, out=kappa, where=ok)
    return {
        "percent_agreement": po,
        "precision_met": _div(tp, tp + fp),
        "recall_met": _div(tp, tp + fn),
        "f1_met": f1_met,
        "precision_not_met": _div(tn, tn + fn),
        "recall_not_met": _div(tn, tn + fp),
        "f1_not_met": f1_not,
        "balanced_f1": (f1_met + f1_not) / 2.0,
        "cohen_kappa": kappa,
        "candidate_met_rate": cand,
        "reference_met_rate": ref,
        "leniency_bias": _div(fp - fn, n),
    }


@dataclass(frozen=True)
class Comparison:
    """A candidate grader against a reference on the units both have a verdict on.

    Attributes:
        candidate: The grader evaluated (a judge, or a human treated as one).
        reference: What it is compared with, e.g. ``"consensus of ana, ben"``.
        n_units: Units compared.
        n_tasks: Tasks those units belong to (the bootstrap's clusters).
        confusion: ``{"tp", "fp", "fn", "tn"}`` with the reference as truth.
        metrics: ``{name: BootResult}`` for :data:`COMPARISON_METRICS`.
        n_undecided: Units the candidate rated whose reference was undecided (ties,
            no verdict) and which were therefore left out.
    """

    candidate: str
    reference: str
    n_units: int
    n_tasks: int
    confusion: dict[str, int]
    metrics: dict[str, BootResult]
    n_undecided: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (see ``docs/agreement.md``)."""
        return {
            "candidate": self.candidate,
            "reference": self.reference,
            "n_units": self.n_units,
            "n_tasks": self.n_tasks,
            "n_undecided": self.n_undecided,
            "confusion": dict(self.confusion),
            "metrics": {k: boot_json(v) for k, v in self.metrics.items()},
        }


def _task_counts(
    tasks: Sequence[Any], candidate: npt.ArrayLike, reference: npt.ArrayLike
) -> tuple[list[Any], FloatArray]:
    """Per-task confusion counts ``(n_tasks, 4)`` in order of first appearance."""
    cand = np.asarray(candidate, dtype=bool)
    ref = np.asarray(reference, dtype=bool)
    arr = np.empty(len(cand), dtype=object)
    arr[:] = list(tasks)
    codes, labels = pd.factorize(arr, sort=False)
    cell = np.where(cand, np.where(ref, 0, 1), np.where(ref, 2, 3))
    flat = np.bincount(
        np.asarray(codes, dtype=np.intp) * 4 + cell, minlength=len(labels) * 4
    ).astype(np.float64)
    return list(labels), flat.reshape(len(labels), 4)


def compare(
    candidate: npt.ArrayLike,
    reference: npt.ArrayLike,
    tasks: Sequence[Any],
    *,
    candidate_name: str = "candidate",
    reference_name: str = "reference",
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
    n_undecided: int = 0,
) -> Comparison:
    """Compare paired binary verdicts, with task-clustered bootstrap intervals.

    Args:
        candidate: The candidate's verdicts (True = met), one per unit.
        reference: The reference verdicts on the same units.
        tasks: The task of each unit (the bootstrap's cluster).
        candidate_name: Label of the candidate.
        reference_name: Label of the reference.
        n_boot: Resamples (0: point estimates only).
        seed: Seed of the resampling weights.
        ci: Confidence level.
        n_undecided: Passed through to the result.

    Returns:
        The figures of :data:`COMPARISON_METRICS`; the point estimates are the direct
        formulas on the total counts, the intervals percentile intervals over tasks
        resampled with :func:`~gradercal.stats.bootstrap.resampling_weights`.
    """
    if not 0.0 < ci < 1.0:
        raise ValueError("ci must be between 0 and 1")
    cand = np.asarray(candidate, dtype=bool)
    ref = np.asarray(reference, dtype=bool)
    if cand.shape != ref.shape or len(cand) != len(tasks):
        raise ValueError("candidate, reference and tasks must have one entry per unit")
    labels, per_task = _task_counts(tasks, cand, ref)
    total = per_task.sum(axis=0) if len(labels) else np.zeros(4)
    point = comparison_metrics(total)
    w = cached_weights(len(labels), n_boot, seed)
    reps = comparison_metrics(w @ per_task) if len(w) else {}
    pre = percentile_bounds(reps, ci, len(labels))
    metrics: dict[str, BootResult] = {}
    for name in COMPARISON_METRICS:
        value = float(point[name])
        metrics[name] = percentile_interval(
            value if math.isfinite(value) else None,
            reps.get(name, np.zeros(0)),
            n_boot=n_boot,
            n_clusters=len(labels),
            ci=ci,
            note=UNDEFINED[name] if int(total.sum()) else "no unit rated by both",
            quantiles=pre.get(name),
        )
    tp, fp, fn, tn = (int(x) for x in total)
    return Comparison(
        candidate=candidate_name,
        reference=reference_name,
        n_units=len(cand),
        n_tasks=len(labels),
        confusion={"tp": tp, "fp": fp, "fn": fn, "tn": tn},
        metrics=metrics,
        n_undecided=n_undecided,
    )


def describe_reference(humans: Sequence[str]) -> str:
    return "consensus of " + ", ".join(humans) if humans else "consensus of nobody"


def paired_units(
    frames: Frames,
    v: pd.DataFrame,
    candidate: str,
    reference_humans: Sequence[str],
    also: Sequence[str] = (),
    cons: pd.DataFrame | None = None,
    context: AnalysisContext | None = None,
) -> tuple[pd.DataFrame, int]:
    """Units rated by ``candidate`` (and every grader in ``also``) with a decided reference.

    Returns the paired table (``response_id``, ``criterion_id``, ``task_id``,
    ``candidate``, ``reference``, ``tags``, ``workflow``, ``domain`` + one column per
    ``also`` grader) in verdict order, and the number of otherwise eligible units
    whose reference was undecided.
    """
    if cons is None and reference_humans:
        cons = consensus_verdicts(frames, reference_humans, context=context)
    # The candidate's rows, kept where every grader of ``also`` rated the unit too.
    rows = grader_rows(context, v, candidate)
    also_rows: dict[str, npt.NDArray[np.intp]] = {}
    for other in also:
        theirs = grader_rows(context, v, other)
        i, j = pair(context, v, v, left_rows=rows, right_rows=theirs)
        rows = rows[i]
        also_rows = {g: r[i] for g, r in also_rows.items()}
        also_rows[other] = theirs[j]
    if cons is None or cons.empty:
        ref = np.full(len(rows), -1, dtype=np.intp)
        cons_met = np.zeros(0, dtype=bool)
    else:
        i, ref = pair(context, v, cons, left_rows=rows, keep_unmatched=True)
        rows, also_rows = rows[i], {g: r[i] for g, r in also_rows.items()}
        cons_met = cons["met"].to_numpy(bool)
    decided = ref >= 0
    cols = ["response_id", "criterion_id", "task_id", "met", "tags", "workflow", "domain"]
    out = v.iloc[rows[decided]].loc[:, cols].rename(columns={"met": "candidate"})
    out = out.reset_index(drop=True)
    met = v["met"].to_numpy(bool)
    for other, theirs in also_rows.items():
        out[f"also:{other}"] = met[theirs[decided]]
    out["reference"] = cons_met[ref[decided]]
    return out, int((~decided).sum())


def compare_table(
    paired: pd.DataFrame,
    column: str,
    name: str,
    reference: str,
    n_boot: int,
    seed: int,
    ci: float,
    n_undecided: int = 0,
) -> Comparison:
    return compare(
        paired[column].to_numpy(dtype=bool),
        paired["reference"].to_numpy(dtype=bool),
        list(paired["task_id"]),
        candidate_name=name,
        reference_name=reference,
        n_boot=n_boot,
        seed=seed,
        ci=ci,
        n_undecided=n_undecided,
    )
