"""Grading agreement: expert vs expert, and the LLM judge vs the experts.

Everything here reads :class:`~gradercal.frames.Frames` and works on the binary
*met / not met* verdicts of **judgment criteria** (auto criteria are graded from the
answer and never judged, so they are left out). A *unit* is one criterion of one
response. Definitions:

* **Verdict** of a grader on a unit: its ordinal level when given (clipped to
  ``0 … levels−1``), else its ``met``; the unit counts as *met* when the level is the
  top level — the rule of :mod:`gradercal.analysis.scoring`, so a "partial" verdict on a 3-level
  criterion is *not met*. A verdict with neither level nor met is a missing rating. A
  grader's duplicate verdicts on one unit keep the last.
* **Human consensus** (the reference): :func:`consensus_verdicts`, the met / not met of
  :func:`gradercal.analysis.scoring.consensus` — the adjudication when there is one, else the
  strict majority of the human met / not-met verdicts (a "partial" counts as not met,
  so "not met, not met, partial, met" is a decided *not met* even though its median
  level is tied). Units where exactly half the humans say met, or with no human
  verdict, are *undecided* and left out of every judge–human comparison (their count
  is reported).
* **Human–human agreement** of a set of units: percent agreement, Fleiss' kappa, Gwet's
  AC1 and Krippendorff's alpha (nominal) of :mod:`gradercal.stats` on the human
  verdicts, category set ``{0, 1}``, missing ratings handled as Gwet does.
* **Candidate vs reference** (:func:`compare`): on the units where both have a verdict,
  with the reference taken as truth and "met" as the positive class, the confusion
  counts ``TP, FP, FN, TN`` (``n`` their sum) give

  - ``percent_agreement = (TP + TN)/n``;
  - ``precision_met = TP/(TP + FP)``, ``recall_met = TP/(TP + FN)``,
    ``f1_met = 2TP/(2TP + FP + FN)``; ``precision_not_met = TN/(TN + FN)``,
    ``recall_not_met = TN/(TN + FP)``, ``f1_not_met = 2TN/(2TN + FN + FP)``;
  - ``balanced_f1 = (f1_met + f1_not_met)/2`` — the macro F1 that HealthBench's
    meta-evaluation reports (Arora et al. 2025), = scikit-learn's
    ``f1_score(average="macro")``;
  - ``cohen_kappa = (p_o − p_e)/(1 − p_e)``, ``p_o`` the percent agreement,
    ``p_e = c·r + (1 − c)(1 − r)`` with ``c = (TP + FP)/n`` and ``r = (TP + FN)/n`` the two
    met rates on these units (Cohen 1960; = scikit-learn's ``cohen_kappa_score``);
  - ``candidate_met_rate = c``, ``reference_met_rate = r`` and
    ``leniency_bias = c − r = (FP − FN)/n``: positive when the candidate says "met" more
    often than the reference.

  A ratio whose denominator is 0 is undefined (``null`` with the reason), never 0 or 1.
* **Humans as judges**: every human ``h`` is compared, exactly like the judge, with the
  consensus of the *other* humans (leave-one-out); the judge is compared with the same
  leave-one-out reference on the same units, so each human figure has a judge figure
  beside it computed on identical data. The *human range* of a figure is its minimum and
  maximum over the humans; the judge's figure for that comparison is the mean over ``h``
  of its leave-one-out figures.

**Confidence intervals** come from the task-clustered bootstrap of
:mod:`gradercal.stats.bootstrap`: whole tasks are resampled with the multinomial weights
of :func:`~gradercal.stats.bootstrap.resampling_weights` (same seed → same resamples),
every comparison figure being a function of per-task confusion counts, so resample
``b`` has counts ``W[b] @ S``. Expanded percentile intervals (:func:`percentile_interval`:
the percentile interval widened for few tasks, Hesterberg 2015); resamples on which a
figure is undefined are excluded and counted in the note; fewer than
:data:`~gradercal.stats.bootstrap.FEW_CLUSTERS` (10) tasks give a warning.

This module imports pandas, numpy and gradercal's core only (no SQL, no Qt).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal.analysis.context import AnalysisContext
from gradercal.analysis.verdicts import (
    _consensus,
    _verdicts,
    grader_rows,
    human_graders,
    pair,
    unit_positions,
)
from gradercal.frames import Frames
from gradercal.stats.bootstrap import (
    BootResult,
    clustered_bootstrap,
)
from gradercal.stats.catalogue import in_view, view
from gradercal.stats.coefficients import (
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
    percent_agreement,
)
from gradercal.stats.intervals import (
    boot_json,
    cached_weights,
    percentile_bounds,
    percentile_interval,
)

__all__ = [
    "COMPARISON_FIGURES",
    "COMPARISON_METRICS",
    "GROUPINGS",
    "HUMAN_STATISTICS",
    "MET_CATEGORIES",
    "Comparison",
    "ComparisonFigure",
    "GroupAgreement",
    "Grouping",
    "HumanAgreement",
    "JudgeAgreement",
    "LooRow",
    "PairAgreement",
    "Progress",
    "agreement_report",
    "compare",
    "comparison_metrics",
    "group_agreement",
    "human_agreement",
    "judge_agreement",
    "leave_one_out",
    "pairwise_agreement",
]

FloatArray = npt.NDArray[np.float64]
#: Progress callback ``(stage, done, total)`` (the CLI draws a progress bar with it).
Progress = Callable[[str, int, int], None]

#: The category set of binary verdicts (not met, met).
MET_CATEGORIES: tuple[float, float] = (0.0, 1.0)
#: Human–human statistics reported for every set of units (the catalogue's view ``"human"``).
HUMAN_STATISTICS: tuple[str, ...] = view("human")


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
_UNDEFINED: dict[str, str] = {f.key: f.undefined for f in COMPARISON_FIGURES}
#: Chance agreement this close to 1 makes kappa 0/0 (as in gradercal.stats).
_PE_TOLERANCE = 1e-12

Grouping = Literal["criterion", "tag", "workflow", "domain"]
#: Values of ``by=`` for :func:`group_agreement` (the CLI's ``--by``).
GROUPINGS: tuple[Grouping, ...] = get_args(Grouping)


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
    ok = np.isfinite(pe) & ((1.0 - pe) > _PE_TOLERANCE)
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
            note=_UNDEFINED[name] if int(total.sum()) else "no unit rated by both",
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


def _describe(humans: Sequence[str]) -> str:
    return "consensus of " + ", ".join(humans) if humans else "consensus of nobody"


def _paired(
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
        cons = _consensus(frames, reference_humans, context)
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


def _compare_table(
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


# ---------------------------------------------------------------------------------------
# Human–human
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HumanAgreement:
    """Agreement among the human graders on a set of units.

    Attributes:
        raters: The human graders with at least one verdict here.
        n_units: Units with at least one human verdict.
        n_units_paired: Units with two or more human verdicts (those agreement uses).
        n_ratings: Human verdicts.
        n_tasks: Tasks (the bootstrap's clusters).
        statistics: ``{name: BootResult}`` for :data:`HUMAN_STATISTICS`.
    """

    raters: list[str]
    n_units: int
    n_units_paired: int
    n_ratings: int
    n_tasks: int
    statistics: dict[str, BootResult]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "raters": list(self.raters),
            "n_units": self.n_units,
            "n_units_paired": self.n_units_paired,
            "n_ratings": self.n_ratings,
            "n_tasks": self.n_tasks,
            **{k: boot_json(v) for k, v in self.statistics.items()},
        }


def _unit_codes(v: pd.DataFrame) -> npt.NDArray[np.int64]:
    """Codes of the (response, criterion) pairs of ``v`` in order of first appearance.

    The same codes as factorizing the pairs as tuples, without building the tuples.
    """
    rc, _ = pd.factorize(v["response_id"].to_numpy(object), sort=False)
    cc, cu = pd.factorize(v["criterion_id"].to_numpy(object), sort=False)
    pair = np.asarray(rc, np.int64) * max(len(cu), 1) + np.asarray(cc, np.int64)
    codes, _ = pd.factorize(pair, sort=False)
    return np.asarray(codes, np.int64)


#: Integer codes of the unit, grader and task of each verdict row, added once to a table
#: that is split into many groups (:func:`_with_codes`) so each group's rating table is
#: coded from integers instead of strings.
_CODE_COLUMNS = ("_unit_code", "_grader_code", "_task_code")


def _with_codes(
    v: pd.DataFrame, full: pd.DataFrame, context: AnalysisContext | None
) -> pd.DataFrame:
    """``v`` (columns of ``full``) with :data:`_CODE_COLUMNS` of the rows of ``full``.

    Any integer code that is one-to-one with the unit does as the unit code (each
    group's units are re-coded in order of first appearance): the unit position when
    the context knows it. The codes of ``full`` are kept in the context for the next grouping.
    """
    hit = None if context is None else context.codes
    if hit is None or hit[0] is not full:
        pos = unit_positions(context, full)
        grader, _ = pd.factorize(full["grader"].to_numpy(object), sort=False)
        task, _ = pd.factorize(full["task_id"].to_numpy(object), sort=False)
        codes = {
            "_unit_code": _unit_codes(full) if pos is None else pos[0].astype(np.int64),
            "_grader_code": np.asarray(grader, np.int64),
            "_task_code": np.asarray(task, np.int64),
        }
        hit = (full, codes)
        if context is not None:
            context.codes = hit
    return v.assign(**hit[1])


def _ratings(v: pd.DataFrame) -> pd.DataFrame:
    """Long ratings (unit, rater, value, task) of the verdict rows ``v``.

    When ``v`` carries :data:`_CODE_COLUMNS` (a group of a coded table), raters and tasks
    are integer codes and units are the group's own codes in order of first appearance —
    the same codes, in the same order, as from the strings (every statistic here is
    label-free), only faster.
    """
    if all(c in v.columns for c in _CODE_COLUMNS):
        units, _ = pd.factorize(v["_unit_code"].to_numpy(np.int64), sort=False)
        return pd.DataFrame(
            {
                "unit": np.asarray(units, dtype=np.int64),
                "rater": v["_grader_code"].to_numpy(np.int64),
                "value": v["met"].to_numpy(dtype=np.float64),
                "task": v["_task_code"].to_numpy(np.int64),
            }
        )
    codes = _unit_codes(v)
    return pd.DataFrame(
        {
            "unit": np.asarray(codes, dtype=np.int64),
            "rater": pd.Series(v["grader"].to_numpy(dtype=object), dtype=object),
            "value": v["met"].to_numpy(dtype=np.float64),
            "task": pd.Series(v["task_id"].to_numpy(dtype=object), dtype=object),
        }
    )


def _human_stats(hv: pd.DataFrame, n_boot: int, seed: int, ci: float) -> HumanAgreement:
    ratings = _ratings(hv)
    per_unit = np.bincount(ratings["unit"].to_numpy(np.int64)) if len(ratings) else np.zeros(0)
    n_tasks = int(ratings["task"].nunique())
    cats = list(MET_CATEGORIES)
    stats: dict[str, BootResult]
    if n_boot > 0 and len(ratings):
        stats = clustered_bootstrap(
            ratings,
            "task",
            HUMAN_STATISTICS,
            n_boot=n_boot,
            ci=ci,
            seed=seed,
            categories=cats,
        )
    else:
        direct = {
            "percent_agreement": percent_agreement,
            "fleiss_kappa": fleiss_kappa,
            "gwet_ac1": gwet_ac1,
        }
        stats = {}
        for name in HUMAN_STATISTICS:
            if name == "krippendorff_alpha":
                s = krippendorff_alpha(ratings, level="nominal", categories=cats)
            else:
                s = direct[name](ratings, categories=cats)
            stats[name] = BootResult(s.value, None, None, 0, n_tasks, 0, ci, "percentile", s.note)
    if "_grader_code" in hv.columns:  # one row per grader code, found by integers
        _, first = np.unique(hv["_grader_code"].to_numpy(np.int64), return_index=True)
        present = hv["grader"].to_numpy(object)[first]
    else:
        present = pd.unique(hv["grader"].to_numpy(object))
    return HumanAgreement(
        raters=sorted({str(r) for r in present}),
        n_units=len(per_unit),
        n_units_paired=int((per_unit >= 2).sum()),
        n_ratings=len(ratings),
        n_tasks=n_tasks,
        statistics=stats,
    )


def human_agreement(
    frames: Frames,
    humans: Sequence[str] | None = None,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
    context: AnalysisContext | None = None,
) -> HumanAgreement:
    """Agreement among the human graders over every judgment unit.

    Args:
        frames: The benchmark frames.
        humans: The graders to include (default: every human grader).
        n_boot: Task-clustered bootstrap resamples (0: no intervals).
        seed: Bootstrap seed.
        ci: Confidence level.
        context: An ``AnalysisContext`` shared by calls on the same frames to reuse verdict
            and consensus tables (e.g. within one report); None: compute afresh.
    """
    names = list(humans) if humans is not None else human_graders(frames)
    return _human_stats(_verdicts(frames, names, context), n_boot, seed, ci)


@dataclass(frozen=True)
class PairAgreement:
    """Two graders on the units both rated.

    ``percent_agreement`` is the share of those units with the same verdict and
    ``cohen_kappa`` Cohen's kappa on them (marginals from the shared units only, so it
    equals scikit-learn's ``cohen_kappa_score`` on the paired verdicts).
    """

    a: str
    b: str
    n_units: int
    n_tasks: int
    percent_agreement: BootResult
    cohen_kappa: BootResult

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "a": self.a,
            "b": self.b,
            "n_units": self.n_units,
            "n_tasks": self.n_tasks,
            "percent_agreement": boot_json(self.percent_agreement),
            "cohen_kappa": boot_json(self.cohen_kappa),
        }


def pairwise_agreement(
    frames: Frames,
    graders: Sequence[str] | None = None,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
    context: AnalysisContext | None = None,
) -> list[PairAgreement]:
    """Percent agreement and Cohen's kappa of every pair of graders.

    Args:
        frames: The benchmark frames.
        graders: The graders (default: every human grader), in the order to pair them.
        n_boot: Task-clustered bootstrap resamples (0: no intervals).
        seed: Bootstrap seed.
        ci: Confidence level.
        context: An ``AnalysisContext`` shared by calls on the same frames to reuse verdict
            and consensus tables (e.g. within one report); None: compute afresh.

    Returns:
        One entry per unordered pair ``(a, b)``, ``a`` before ``b`` in ``graders``.
    """
    names = list(graders) if graders is not None else human_graders(frames)
    v = _verdicts(frames, names, context)
    out: list[PairAgreement] = []
    met = v["met"].to_numpy(bool)
    task = v["task_id"].to_numpy(object)
    for i, a in enumerate(names):
        ra = grader_rows(context, v, a)
        for b in names[i + 1 :]:
            rb = grader_rows(context, v, b)
            ia, ib = pair(context, v, v, left_rows=ra, right_rows=rb)
            c = compare(
                met[ra[ia]],
                met[rb[ib]],
                list(task[ra[ia]]),
                candidate_name=a,
                reference_name=b,
                n_boot=n_boot,
                seed=seed,
                ci=ci,
            )
            out.append(
                PairAgreement(
                    a,
                    b,
                    c.n_units,
                    c.n_tasks,
                    c.metrics["percent_agreement"],
                    c.metrics["cohen_kappa"],
                )
            )
    return out


def leave_one_out(
    frames: Frames,
    humans: Sequence[str] | None = None,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
    context: AnalysisContext | None = None,
) -> list[Comparison]:
    """Each human against the consensus of the other humans.

    Args:
        frames: The benchmark frames.
        humans: The human graders (default: all); needs at least two.
        n_boot: Task-clustered bootstrap resamples (0: no intervals).
        seed: Bootstrap seed.
        ci: Confidence level.
        context: An ``AnalysisContext`` shared by calls on the same frames to reuse verdict
            and consensus tables (e.g. within one report); None: compute afresh.

    Returns:
        One :class:`Comparison` per human (empty with fewer than two humans), on the
        units the human rated whose leave-one-out consensus is decided.
    """
    names = list(humans) if humans is not None else human_graders(frames)
    if len(names) < 2:
        return []
    v = _verdicts(frames, names, context)
    out = []
    for h in names:
        others = [g for g in names if g != h]
        paired, undecided = _paired(frames, v, h, others, context=context)
        out.append(
            _compare_table(paired, "candidate", h, _describe(others), n_boot, seed, ci, undecided)
        )
    return out


# ---------------------------------------------------------------------------------------
# Human–judge
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LooRow:
    """One human treated as a judge, beside the judge on the same units and reference.

    Attributes:
        human: The human left out.
        human_vs_others: The human against the consensus of the other humans.
        judge_vs_others: The judge against that same consensus, on the same units.
    """

    human: str
    human_vs_others: Comparison
    judge_vs_others: Comparison

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "human": self.human,
            "reference": self.human_vs_others.reference,
            "n_units": self.human_vs_others.n_units,
            "n_tasks": self.human_vs_others.n_tasks,
            "human_metrics": {k: boot_json(b) for k, b in self.human_vs_others.metrics.items()},
            "judge_metrics": {k: boot_json(b) for k, b in self.judge_vs_others.metrics.items()},
        }


@dataclass(frozen=True)
class JudgeAgreement:
    """The judge against the human consensus, placed within the range of the humans.

    Attributes:
        judge: The judge's grader name.
        headline: The judge against the consensus of all humans.
        humans_as_judge: One :class:`LooRow` per human (needs ≥ 2 humans).
        human_range: Per figure, ``(min, max)`` over the humans' leave-one-out values
            (None when no human has the figure defined).
        judge_loo_mean: Per figure, the mean of the judge's leave-one-out values
            (None when undefined for some human).
        within_human_range: Per figure, whether ``judge_loo_mean`` lies in
            ``human_range`` (None when either is undefined).
    """

    judge: str
    headline: Comparison
    humans_as_judge: list[LooRow]
    human_range: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    judge_loo_mean: dict[str, float | None] = field(default_factory=dict)
    within_human_range: dict[str, bool | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (see ``docs/agreement.md``)."""
        return {
            "judge": self.judge,
            **{k: v for k, v in self.headline.to_dict().items() if k != "candidate"},
            "humans_as_judge": [r.to_dict() for r in self.humans_as_judge],
            "human_range": {
                k: (None if v is None else [v[0], v[1]]) for k, v in self.human_range.items()
            },
            "judge_loo_mean": dict(self.judge_loo_mean),
            "within_human_range": dict(self.within_human_range),
        }


def judge_agreement(
    frames: Frames,
    judge: str,
    humans: Sequence[str] | None = None,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
    progress: Progress | None = None,
    context: AnalysisContext | None = None,
) -> JudgeAgreement:
    """The judge against the human consensus, and every human treated as a judge.

    Args:
        frames: The benchmark frames.
        judge: The judge's grader name.
        humans: The human graders (default: every grader of kind ``"human"``).
        n_boot: Task-clustered bootstrap resamples (0: no intervals).
        seed: Bootstrap seed (the same resamples for every comparison with the same
            tasks).
        ci: Confidence level.
        context: An ``AnalysisContext`` shared by calls on the same frames to reuse verdict
            and consensus tables (e.g. within one report); None: compute afresh.
        progress: Optional ``(stage, done, total)`` callback.

    Raises:
        ValueError: ``judge`` has no verdict on any judgment criterion.
    """
    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    v = _verdicts(frames, [*names, judge], context)
    if not (v["grader"] == judge).any():
        raise ValueError(f"grader {judge!r} has no verdict on any judgment criterion")
    total = 1 + len(names)
    paired, undecided = _paired(frames, v, judge, names, context=context)
    headline = _compare_table(
        paired, "candidate", judge, _describe(names), n_boot, seed, ci, undecided
    )
    if progress:
        progress("judge vs humans", 1, total)
    rows: list[LooRow] = []
    if len(names) >= 2:
        for i, h in enumerate(names):
            others = [g for g in names if g != h]
            p, und = _paired(frames, v, h, others, also=[judge], context=context)
            ref = _describe(others)
            hc = _compare_table(p, "candidate", h, ref, n_boot, seed, ci, und)
            jc = _compare_table(p, f"also:{judge}", judge, ref, n_boot, seed, ci, und)
            rows.append(LooRow(h, hc, jc))
            if progress:
                progress("judge vs humans", i + 2, total)
    rng: dict[str, tuple[float, float] | None] = {}
    mean: dict[str, float | None] = {}
    within: dict[str, bool | None] = {}
    for name in COMPARISON_METRICS:
        hv = [r.human_vs_others.metrics[name].value for r in rows]
        jv = [r.judge_vs_others.metrics[name].value for r in rows]
        hdef = [x for x in hv if x is not None]
        rng[name] = (min(hdef), max(hdef)) if hdef and len(hdef) == len(hv) else None
        mean[name] = float(np.mean(jv)) if rows and all(x is not None for x in jv) else None  # type: ignore[arg-type]
        r, m = rng[name], mean[name]
        within[name] = None if r is None or m is None else bool(r[0] <= m <= r[1])
    return JudgeAgreement(judge, headline, rows, rng, mean, within)


# ---------------------------------------------------------------------------------------
# Groups
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupAgreement:
    """Agreement within one group of units (a tag, workflow, domain or criterion).

    Attributes:
        group: The group's label (None: units whose task has no workflow/domain).
        task_id: For ``by="criterion"``, the criterion's task (criterion ids are unique
            only within a task); None otherwise.
        humans: Human–human agreement on the group's units.
        judge: The judge against the human consensus on them (None without a judge).
        points: For ``by="criterion"``, the criterion's points; None otherwise.
    """

    group: str | None
    task_id: str | None
    humans: HumanAgreement
    judge: Comparison | None
    points: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        out: dict[str, Any] = {"group": self.group}
        if self.task_id is not None:
            out["task_id"] = self.task_id
            out["points"] = self.points
        out["human_human"] = self.humans.to_dict()
        out["human_judge"] = None if self.judge is None else self.judge.to_dict()
        return out


def _group_labels(v: pd.DataFrame, by: Grouping) -> pd.DataFrame:
    """``v`` with a ``group`` column; rows repeated for several tags."""
    if by == "tag":
        # One row per (row, tag), rows in order and each row's tags in order (as
        # ``explode`` of the tag lists would give); untagged rows get the group None.
        # The tags are looked up once per distinct tag tuple, not once per row.
        try:
            codes, uniq = pd.factorize(v["tags"].to_numpy(object), sort=False)
        except TypeError:  # unhashable tag lists: one lookup per row
            g = v.assign(group=v["tags"].map(lambda t: list(t) if t else [None]))
            g = g.explode("group").reset_index(drop=True)
            col = g["group"].astype(object)
            return g.assign(group=col.where(col.notna(), None))
        per = [list(t) if t else [None] for t in uniq]
        counts = np.array([len(x) for x in per], dtype=np.intp)
        codes = np.asarray(codes, dtype=np.intp)
        if (codes < 0).any():  # a missing tags cell: untagged
            per.append([None])
            counts = np.append(counts, 1)
            codes = np.where(codes < 0, len(per) - 1, codes)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.intp)
        flat = np.empty(int(counts.sum()), dtype=object)
        flat[:] = [x for tags in per for x in tags]
        n = counts[codes]
        rows = np.repeat(np.arange(len(v), dtype=np.intp), n)
        within = np.arange(len(rows), dtype=np.intp) - np.repeat(np.cumsum(n) - n, n)
        g = v.take(rows).reset_index(drop=True)
        col = pd.Series(flat[starts[codes][rows] + within], dtype=object)
        return g.assign(group=col.where(col.notna(), None))
    if by == "criterion":
        return v.assign(group=v["criterion_id"].astype(object))
    return v.assign(group=v[by].astype(object))


def _group_selector(g: pd.DataFrame) -> Callable[[str | None], pd.DataFrame]:
    """``label → rows of g whose group is label`` (None: missing group), in row order.

    The same rows as ``g.loc[g["group"] == label]`` (``g["group"].isna()`` for None),
    from one factorization of the group column instead of a comparison per label.
    """
    codes, uniq = pd.factorize(g["group"].to_numpy(object), sort=False)
    codes = np.asarray(codes, dtype=np.intp)
    position = {x: k for k, x in enumerate(uniq)}
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(-1, len(uniq) + 1))

    def select(label: str | None) -> pd.DataFrame:
        k = -1 if label is None else position.get(label)
        if k is None:
            return g.iloc[0:0]
        return g.iloc[order[bounds[k + 1] : bounds[k + 2]]]

    return select


def _stat(value: float, note: str | None, ci: float) -> BootResult:
    if math.isfinite(value):
        return BootResult(float(value), None, None, 0, 1, 0, ci, "percentile", None)
    return BootResult(None, None, None, 0, 1, 0, ci, "percentile", note or "undefined")


def _criterion_groups(
    frames: Frames,
    v: pd.DataFrame,
    paired: pd.DataFrame | None,
    judge: str | None,
    names: Sequence[str],
    ci: float,
) -> list[GroupAgreement]:
    """Per-criterion agreement, vectorised (no bootstrap: one task is one cluster).

    The human statistics are Gwet's percent agreement, Fleiss' kappa, Gwet's AC1 and
    nominal Krippendorff's alpha on the category set {0, 1}, with the formulas (and the
    notes) of :mod:`gradercal.stats.coefficients`, computed from per-unit counts.
    """
    crit = frames.criteria.loc[
        frames.criteria["kind"] != "auto", ["task_id", "criterion_id", "points"]
    ].drop_duplicates(["task_id", "criterion_id"])
    keys = ["task_id", "criterion_id"]
    # Per unit: r (ratings) and r1 (met).
    unit = (
        v.groupby([*keys, "response_id"], sort=False)["met"].agg(r="size", r1="sum").reset_index()
    )
    r = unit["r"].to_numpy(np.float64)
    r1 = unit["r1"].to_numpy(np.float64)
    r0 = r - r1
    two = r >= 2
    safe = np.where(two, r * (r - 1), 1.0)
    unit = unit.assign(
        agree=np.where(two, (r1 * (r1 - 1) + r0 * (r0 - 1)) / safe, 0.0),
        two=two.astype(np.float64),
        share1=r1 / r,
        o01=np.where(two, r0 * r1 / np.where(two, r - 1, 1.0), 0.0),
        n0=np.where(two, r0, 0.0),
        n1=np.where(two, r1, 0.0),
    )
    g = unit.groupby(keys, sort=False).agg(
        n_units=("r", "size"),
        n_ratings=("r", "sum"),
        n_two=("two", "sum"),
        agree=("agree", "sum"),
        pi1=("share1", "mean"),
        o01=("o01", "sum"),
        n0=("n0", "sum"),
        n1=("n1", "sum"),
    )
    raters = (
        v.drop_duplicates([*keys, "grader"])
        .groupby(keys, sort=False)["grader"]
        .agg(lambda x: sorted(str(a) for a in x))
        .rename("raters")
    )
    table = crit.merge(g.reset_index(), on=keys, how="left").merge(
        raters.reset_index(), on=keys, how="left"
    )
    cols = ["tp", "fp", "fn", "tn"]
    if paired is not None and judge is not None:
        cell = np.where(
            paired["candidate"].to_numpy(bool),
            np.where(paired["reference"].to_numpy(bool), 0, 1),
            np.where(paired["reference"].to_numpy(bool), 2, 3),
        )
        onehot = pd.DataFrame(np.eye(4)[cell], columns=cols)
        onehot[keys[0]] = paired["task_id"].to_numpy(object)
        onehot[keys[1]] = paired["criterion_id"].to_numpy(object)
        counts = onehot.groupby(keys, sort=False)[cols].sum().reset_index()
        table = table.merge(counts, on=keys, how="left")
    # Everything as aligned arrays (0 where a criterion has no rating).
    num = {
        c: table[c].to_numpy(np.float64, na_value=0.0)
        for c in ("n_units", "n_ratings", "n_two", "agree", "pi1", "o01", "n0", "n1")
    }
    n_raters = np.array([len(x) if isinstance(x, list) else 0 for x in table["raters"]])
    with np.errstate(divide="ignore", invalid="ignore"):
        pa = np.where(
            num["n_two"] > 0, num["agree"] / np.where(num["n_two"] > 0, num["n_two"], 1), np.nan
        )
        pi1 = num["pi1"]
        pe_f = pi1**2 + (1 - pi1) ** 2
        pe_g = 2 * pi1 * (1 - pi1)
        fk = np.where(1 - pe_f > _PE_TOLERANCE, (pa - pe_f) / (1 - pe_f), np.nan)
        ac1 = np.where(1 - pe_g > _PE_TOLERANCE, (pa - pe_g) / (1 - pe_g), np.nan)
        n0, n1 = num["n0"], num["n1"]
        ok = (n0 > 0) & (n1 > 0)
        alpha = np.where(ok, 1 - (n0 + n1 - 1) * num["o01"] / np.where(ok, n0 * n1, 1), np.nan)
    base = np.select(
        [num["n_ratings"] == 0, n_raters < 2, num["n_two"] == 0],
        ["no ratings", "only one rater", "no unit was rated by two or more raters"],
        default="",
    )
    flat = "no variation: chance agreement is 1 (a single category used)"
    same = "no variation: all pairable values are identical"
    judged = paired is not None and judge is not None
    if judged:
        conf = table.loc[:, cols].to_numpy(np.float64, na_value=0.0)
        jm = comparison_metrics(conf)
    reference = _describe(names)
    out: list[GroupAgreement] = []
    for i, (task, cid, points, who) in enumerate(
        table.loc[:, ["task_id", "criterion_id", "points", "raters"]].itertuples(
            index=False, name=None
        )
    ):
        if base[i]:
            stats = {k: _stat(math.nan, str(base[i]), ci) for k in HUMAN_STATISTICS}
        else:
            stats = {
                "percent_agreement": _stat(float(pa[i]), None, ci),
                "fleiss_kappa": _stat(float(fk[i]), flat, ci),
                "gwet_ac1": _stat(float(ac1[i]), flat, ci),
                "krippendorff_alpha": _stat(float(alpha[i]), same, ci),
            }
        n_units = int(num["n_units"][i])
        ha = HumanAgreement(
            list(who) if isinstance(who, list) else [],
            n_units,
            int(num["n_two"][i]),
            int(num["n_ratings"][i]),
            1 if n_units else 0,
            stats,
        )
        jc = None
        if judged:
            c = conf[i]
            total = int(c.sum())
            jc = Comparison(
                candidate=str(judge),
                reference=reference,
                n_units=total,
                n_tasks=1 if total else 0,
                confusion={k: int(x) for k, x in zip(cols, c, strict=True)},
                metrics={
                    k: _stat(
                        float(jm[k][i]), _UNDEFINED[k] if total else "no unit rated by both", ci
                    )
                    for k in COMPARISON_METRICS
                },
            )
        out.append(GroupAgreement(str(cid), str(task), ha, jc, int(points)))
    return out


def group_agreement(
    frames: Frames,
    by: Grouping,
    humans: Sequence[str] | None = None,
    judge: str | None = None,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
    progress: Progress | None = None,
    context: AnalysisContext | None = None,
) -> list[GroupAgreement]:
    """Human–human agreement and judge–consensus comparison within each group.

    Groups: ``"tag"`` (a unit counts in every tag of its criterion; untagged units form
    the group None), ``"workflow"`` and ``"domain"`` (the task's; None when unset), or
    ``"criterion"`` (one group per criterion of a task; no bootstrap intervals: all its
    units lie in one task, i.e. one cluster).

    Args:
        frames: The benchmark frames.
        by: The grouping.
        humans: The human graders (default: all).
        judge: The judge to compare with the consensus, or None.
        n_boot: Task-clustered bootstrap resamples (0: no intervals).
        seed: Bootstrap seed.
        ci: Confidence level.
        context: An ``AnalysisContext`` shared by calls on the same frames to reuse verdict
            and consensus tables (e.g. within one report); None: compute afresh.
        progress: Optional ``(stage, done, total)`` callback.

    Returns:
        One entry per group, sorted by label (None last); criteria in rubric order.

    Raises:
        ValueError: Unknown ``by``.
    """
    if by not in GROUPINGS:
        raise ValueError(f"by must be one of {GROUPINGS}, not {by!r}")
    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    v = _verdicts(frames, names, context)
    # Only the columns the group statistics read travel through the grouping.
    label_col = {"tag": "tags", "criterion": "criterion_id"}.get(by, by)
    need = ["response_id", "criterion_id", "task_id", "grader", "met", label_col]
    hv = _group_labels(
        v if by == "criterion" else _with_codes(v.loc[:, list(dict.fromkeys(need))], v, context), by
    )
    paired = None
    if judge is not None:
        jv = _verdicts(frames, [judge], context)
        cons = _consensus(frames, names, context) if names else None
        paired, _ = _paired(frames, jv, judge, names, cons=cons, context=context)
        if by != "criterion":
            pneed = ["task_id", "candidate", "reference", label_col]
            paired = paired.loc[:, list(dict.fromkeys(pneed))]
        paired = _group_labels(paired, by)
    if by == "criterion":
        out_c = _criterion_groups(frames, v, paired, judge, names, ci)
        if progress:
            progress("by criterion", len(out_c), len(out_c))
        return out_c
    labels = set(hv["group"].tolist()) | (
        set(paired["group"].tolist()) if paired is not None else set()
    )
    groups: list[str | None] = [*sorted(str(x) for x in labels if x is not None)]
    if None in labels:
        groups.append(None)
    hsel_of = _group_selector(hv)
    psel_of = _group_selector(paired) if paired is not None else None
    out: list[GroupAgreement] = []
    for i, label in enumerate(groups):
        hsel = hsel_of(label)
        psel = psel_of(label) if psel_of is not None else None
        ha = _human_stats(hsel, n_boot, seed, ci)
        jc = None
        if psel is not None and judge is not None:
            jc = _compare_table(psel, "candidate", judge, _describe(names), n_boot, seed, ci)
        out.append(GroupAgreement(label, None, ha, jc, None))
        if progress:
            progress(f"by {by}", i + 1, len(groups))
    return out


# ---------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------


def agreement_report(
    frames: Frames,
    *,
    judge: str | None = None,
    humans: Sequence[str] | None = None,
    by: Grouping | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
    progress: Progress | None = None,
    benchmark: str | None = None,
) -> dict[str, Any]:
    """Everything ``gradercal agreement --json`` prints (shape in ``docs/agreement.md``).

    Args:
        frames: The benchmark frames.
        judge: The judge to compare (None: human–human only).
        humans: The human graders (default: every grader of kind ``"human"``).
        by: Also break agreement down by this grouping.
        n_boot: Task-clustered bootstrap resamples (0: no intervals).
        seed: Bootstrap seed.
        ci: Confidence level.
        progress: Optional ``(stage, done, total)`` callback.
        benchmark: The benchmark's name, echoed in the report.
    """
    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    context = AnalysisContext()
    overall = human_agreement(frames, names, n_boot=n_boot, seed=seed, ci=ci, context=context)
    if progress:
        progress("human agreement", 1, 3)
    pairs = pairwise_agreement(frames, names, n_boot=n_boot, seed=seed, ci=ci, context=context)
    if progress:
        progress("human agreement", 2, 3)
    loo = leave_one_out(frames, names, n_boot=n_boot, seed=seed, ci=ci, context=context)
    if progress:
        progress("human agreement", 3, 3)
    notes: list[str] = []
    if len(names) < 2:
        notes.append(
            f"{len(names)} human grader{'s' if len(names) != 1 else ''}: human–human "
            "agreement needs at least two"
        )
    report: dict[str, Any] = {
        "benchmark": benchmark,
        "humans": names,
        "judge": judge,
        "bootstrap": (
            {
                "n_boot": n_boot,
                "ci": ci,
                "seed": seed,
                "cluster": "task",
                "method": "expanded_percentile",
            }
            if n_boot > 0
            else None
        ),
        "human_human": {
            "overall": overall.to_dict(),
            "pairwise": [p.to_dict() for p in pairs],
            "leave_one_out": [c.to_dict() for c in loo],
        },
        "human_judge": None,
        "groups": None,
        "notes": notes,
    }
    if judge is not None:
        ja = judge_agreement(
            frames,
            judge,
            names,
            n_boot=n_boot,
            seed=seed,
            ci=ci,
            progress=progress,
            context=context,
        )
        report["human_judge"] = ja.to_dict()
    if by is not None:
        rows = group_agreement(
            frames,
            by,
            names,
            judge,
            n_boot=n_boot,
            seed=seed,
            ci=ci,
            progress=progress,
            context=context,
        )
        report["groups"] = {"by": by, "rows": [r.to_dict() for r in rows]}
    return report
