"""What the coordinator window's "Where to grade next" view computes, without Qt (issue #35).

:func:`grade_next` reads the benchmark, fits :mod:`gradercal.analysis.planning`'s model to
the judgments so far (or builds it from stated assumptions) and asks
:func:`~gradercal.analysis.planning.next_batches` for the expected half-widths now and after
each kind of next batch; :func:`plan_grid` runs :func:`~gradercal.analysis.planning.plan`
(``gradercal plan``'s table) on the same model; :func:`gradercal.dashboard.charts.plan_figure` draws that table,
as ``gradercal plan --chart`` does. :func:`assign_batch`
assigns a batch through :func:`gradercal.db.assignments.assign_active`, the function
``gradercal assign --strategy active`` calls.

Refusals are data (:class:`Refusal`): without a judge's verdicts active assignment is
refused in words and uniform offered; without a pilot the plan needs assumptions.
Every function runs in a worker thread and takes ``progress(stage, done, total)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gradercal.errors import GradercalError

if TYPE_CHECKING:
    from gradercal.analysis.planning import PlanModel, PlanResult
    from gradercal.db.session import Database
    from gradercal.frames import Frames

Progress = Callable[[str, int, int], None]

#: Why active assignment is not offered (no judge run on the benchmark).
NO_JUDGE = (
    "Active assignment needs a judge run: it draws where the judge is least sure, and no "
    "judge has graded this benchmark yet (File ▸ Run the LLM judge…, Ctrl+Shift+J). "
    "Assign uniformly instead."
)
#: Why the plan needs assumptions (no pilot to fit).
NEEDS_ASSUMPTIONS = (
    "The plan needs assumptions: {reason}. Give the judge's kappa, the experts' ICC and the "
    "pass rate above, then Compute."
)

#: The batches' words, by kind of :func:`gradercal.analysis.planning.next_batches`' rows.
KIND_LABELS = {
    "now": "Now (graded so far)",
    "uniform": "{n} more responses, uniform",
    "active": "{n} more responses, active (judge least sure)",
    "experts": "+{extra} experts per item on the graded responses",
}

#: The headline figures' column titles.
FIGURE_LABELS = {
    "pass_rate_half_width": "pass rate ±",
    "mean_score_half_width": "mean score ±",
    "kappa_half_width": "κ ±",
}


@dataclass
class Refusal:
    """A refusal in words; ``needs_assumptions``: the view shows the assumption fields."""

    text: str
    needs_assumptions: bool = False


@dataclass
class GradeNext:
    """The view's rows and what it needs to assign them."""

    rows: list[dict[str, Any]]
    source: str  # "pilot" or "assumed"
    judge: str | None
    models: list[str]
    tasks_now: int
    experts_now: int
    batch: int
    n_sims: int
    refusals: list[Refusal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def active_allowed(self) -> bool:
        return self.judge is not None


def _noop(_stage: str, _done: int, _total: int) -> None:
    return None


def main_judge(frames: Frames) -> str | None:
    """The judge with most verdicts (as active assignment's pilot takes it), or None."""
    from gradercal.analysis.verdicts import judge_graders

    judges = judge_graders(frames)
    if not judges:
        return None
    counts = frames.judgments["grader"].value_counts()
    return max(judges, key=lambda j: (int(counts.get(j, 0)), j))


def graded_so_far(frames: Frames) -> tuple[int, int]:
    """Tasks with an expert verdict, and the median number of experts per graded item
    (1 when nothing is graded)."""
    j = frames.judgments
    h = j.loc[(j["grader_kind"] == "human") & j["met"].notna()]
    if h.empty:
        return 0, 1
    task_of = dict(zip(frames.responses["response_id"], frames.responses["task_id"], strict=True))
    tasks = {task_of.get(r) for r in h["response_id"]} - {None}
    per_item = h.groupby(["response_id", "criterion_id"]).size()
    return len(tasks), max(round(float(per_item.median())), 1)


def fit_model(
    frames: Frames, judge: str | None, assumptions: Mapping[str, float] | None
) -> tuple[PlanModel, list[Refusal]]:
    """The plan's model: fitted to the judgments so far, or from ``assumptions`` (the
    benchmark's tasks and models unless stated).

    Raises:
        GradercalError: no assumptions and nothing to fit (``needs_assumptions`` in words),
            or an assumption out of range.
    """
    from gradercal.analysis.planning import assumed_model, fit_pilot

    refusals = [] if judge is not None else [Refusal(NO_JUDGE)]
    if assumptions is not None:
        values = dict(assumptions)
        values.setdefault("tasks", float(frames.tasks["task_id"].nunique()))
        values.setdefault("models", float(max(frames.responses["model"].nunique(), 1)))
        values.setdefault("pass_threshold", float(frames.pass_threshold))
        try:
            return assumed_model(values), refusals
        except ValueError as exc:
            raise GradercalError(str(exc)) from exc
    if judge is None:
        reason = "no judge has graded this benchmark, so there is no pilot to fit"
        raise NeedsAssumptions(NEEDS_ASSUMPTIONS.format(reason=reason))
    try:
        return fit_pilot(frames, judge), refusals
    except ValueError as exc:
        raise NeedsAssumptions(NEEDS_ASSUMPTIONS.format(reason=str(exc).split(":")[0])) from exc


class NeedsAssumptions(GradercalError):
    """No pilot to plan from: the view asks for assumptions."""


def _frames(db: Database, benchmark: str | None) -> Frames:
    from gradercal.db.repo import Repository

    return Repository(db).load_frames(benchmark)


def grade_next(
    db: Database,
    benchmark: str | None,
    *,
    batch: int,
    assumptions: Mapping[str, float] | None = None,
    n_sims: int = 200,
    seed: int = 0,
    progress: Progress | None = None,
) -> GradeNext:
    """The expected half-widths now and after each next batch of ``batch`` responses.

    Raises:
        NeedsAssumptions: no pilot to fit and no assumptions given.
        GradercalError: a batch below one response, an assumption out of range.
    """
    from gradercal.analysis.planning import next_batches

    notify = progress or _noop
    notify("reading the judgments", 0, 1)
    frames = _frames(db, benchmark)
    judge = main_judge(frames)
    model, refusals = fit_model(frames, judge, assumptions)
    tasks_now, experts_now = graded_so_far(frames)
    if model.source == "pilot":
        experts_now = int(model.pilot.get("experts_per_item", experts_now))
    notify("reading the judgments", 1, 1)
    try:
        rows = next_batches(
            model,
            tasks_now=tasks_now,
            experts_now=experts_now,
            batch_responses=batch,
            extra_experts=extra_experts(experts_now),
            n_sims=n_sims,
            seed=seed,
            progress=notify,
        )
    except ValueError as exc:
        raise GradercalError(str(exc)) from exc
    notes = [
        "Figures are the plan's simulation (docs/planning.md): a batch is graded by as many "
        f"experts per item as now ({experts_now}); 95% intervals, widest model for the pass "
        "rate and the mean score.",
        "Active (≤): the plan simulates uniform draws, so these are the uniform figures; "
        "active assignment is narrower when the judge's confidence ranks its errors (17% in "
        "docs/planning.md's simulation) and within 2% of uniform when it does not.",
    ]
    if tasks_now < 2:
        notes.append("Fewer than two tasks graded so far: no interval yet.")
    return GradeNext(
        rows=rows,
        source=model.source,
        judge=judge,
        models=list(model.models),
        tasks_now=tasks_now,
        experts_now=experts_now,
        batch=batch,
        n_sims=n_sims,
        refusals=refusals,
        notes=notes,
    )


def extra_experts(k: int) -> int:
    """More experts per item to an odd number (an even one leaves ties unlabelled):
    +2 from 1 or 3, +1 from 2."""
    return 2 if k % 2 else 1


def row_label(row: Mapping[str, Any], batch: int) -> str:
    """The words of one batch row."""
    extra = int(row.get("added_experts") or 1)
    return KIND_LABELS[str(row["kind"])].format(n=batch, extra=extra)


def fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def change_text(row: Mapping[str, Any], now: Mapping[str, Any], key: str) -> str:
    """``"0.104 → 0.081 (−0.023)"``; the now row shows its value only."""
    after = row["expected_half_width"][key]
    prefix = "≤ " if row.get("bound") == "at most" else ""
    if row["kind"] == "now":
        return fmt(after)
    before = now["expected_half_width"][key]
    if before is None:
        return prefix + fmt(after)
    shrink = row["shrink"][key]
    sign = "−" if (shrink or 0) >= 0 else "+"
    return f"{fmt(before)} → {prefix}{fmt(after)} ({sign}{fmt(abs(shrink or 0.0))})"


def plan_grid(
    db: Database,
    benchmark: str | None,
    *,
    targets: Mapping[str, float],
    experts: Sequence[int] = (1, 3, 5),
    tasks: Sequence[int] | None = None,
    assumptions: Mapping[str, float] | None = None,
    n_sims: int = 200,
    seed: int = 0,
    progress: Progress | None = None,
) -> PlanResult:
    """``gradercal plan``'s table on this benchmark (pilot or assumptions).

    Raises:
        NeedsAssumptions: no pilot and no assumptions; GradercalError: a bad target or grid.
    """
    from gradercal.analysis.planning import plan

    notify = progress or _noop
    notify("reading the judgments", 0, 1)
    frames = _frames(db, benchmark)
    model, _ = fit_model(frames, main_judge(frames), assumptions)
    notify("reading the judgments", 1, 1)
    try:
        return plan(
            model,
            tasks=tasks,
            experts=experts,
            targets=targets,
            n_sims=n_sims,
            seed=seed,
            progress=notify,
        )
    except ValueError as exc:
        raise GradercalError(str(exc)) from exc


def assign_batch(
    db: Database,
    benchmark: str | None,
    *,
    graders: Sequence[str],
    overlap: int,
    strategy: str,
    budget: int,
    seed: str,
) -> Any:
    """Assign one batch: ``strategy`` ``"active"`` (``gradercal assign --strategy active
    --budget N``) or ``"uniform"`` (the same draw with equal probabilities). Returns the
    :class:`~gradercal.ui.coordinator_ops.Outcome`.

    Raises:
        GradercalError: no grader, an overlap above the graders, active without a judge.
    """
    from gradercal.db.assignments import assign_active
    from gradercal.ui.coordinator_ops import Outcome

    names = [g for g in graders if g.strip()]
    if not names:
        raise GradercalError("name at least one grader")
    if overlap > len(names):
        raise GradercalError(
            f"an overlap of {overlap} needs at least that many graders ({len(names)} named)"
        )
    if strategy not in ("uniform", "active"):
        raise GradercalError(f"unknown strategy {strategy!r}")
    if strategy == "active" and main_judge(_frames(db, benchmark)) is None:
        raise GradercalError(NO_JUDGE)
    report, summary = assign_active(
        db,
        names,
        overlap,
        budget,
        seed=seed,
        benchmark=benchmark,
        uniform=strategy == "uniform",
    )
    head = (
        f"Drew {summary['n_assigned']} of {summary['n_candidates']} unassigned responses "
        f"({strategy}, expected {budget}); created {report.assignments_created} assignments."
    )
    return Outcome(
        head,
        ["The sampling probabilities are stored with the assignments (graders never see them)."],
        {**report.to_dict(), **summary},
    )
