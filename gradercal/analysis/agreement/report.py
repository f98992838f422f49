"""Everything ``gradercal agreement --json`` prints.

See :mod:`gradercal.analysis.agreement` for the definitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gradercal.analysis.agreement.compare import Progress
from gradercal.analysis.agreement.groups import Grouping, group_agreement
from gradercal.analysis.agreement.humans import human_agreement, leave_one_out, pairwise_agreement
from gradercal.analysis.agreement.judge import judge_agreement
from gradercal.analysis.context import AnalysisContext
from gradercal.analysis.verdicts import (
    human_graders,
)
from gradercal.frames import Frames

# ---------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------


def _human_human(
    frames: Frames,
    names: Sequence[str],
    n_boot: int,
    seed: int,
    ci: float,
    progress: Progress | None,
    context: AnalysisContext,
) -> dict[str, Any]:
    """The report's ``human_human``: overall, every pair, each human against the others."""
    overall = human_agreement(frames, names, n_boot=n_boot, seed=seed, ci=ci, context=context)
    if progress:
        progress("human agreement", 1, 3)
    pairs = pairwise_agreement(frames, names, n_boot=n_boot, seed=seed, ci=ci, context=context)
    if progress:
        progress("human agreement", 2, 3)
    loo = leave_one_out(frames, names, n_boot=n_boot, seed=seed, ci=ci, context=context)
    if progress:
        progress("human agreement", 3, 3)
    return {
        "overall": overall.to_dict(),
        "pairwise": [p.to_dict() for p in pairs],
        "leave_one_out": [c.to_dict() for c in loo],
    }


def _bootstrap(n_boot: int, ci: float, seed: int) -> dict[str, Any] | None:
    """The report's ``bootstrap`` settings (None without resamples)."""
    if n_boot <= 0:
        return None
    method = "expanded_percentile"
    return {"n_boot": n_boot, "ci": ci, "seed": seed, "cluster": "task", "method": method}


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
    human_human = _human_human(frames, names, n_boot, seed, ci, progress, context)
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
        "bootstrap": _bootstrap(n_boot, ci, seed),
        "human_human": human_human,
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
