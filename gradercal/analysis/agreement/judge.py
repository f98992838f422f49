"""The judge against the human consensus, placed within the range of the humans.

See :mod:`gradercal.analysis.agreement` for the definitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gradercal.analysis.agreement.compare import (
    COMPARISON_METRICS,
    Comparison,
    Progress,
    compare_table,
    describe_reference,
    paired_units,
)
from gradercal.analysis.context import AnalysisContext
from gradercal.analysis.verdicts import (
    human_graders,
    verdicts,
)
from gradercal.frames import Frames
from gradercal.stats.intervals import (
    boot_json,
)

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
    v = verdicts(frames, [*names, judge], context=context)
    if not (v["grader"] == judge).any():
        raise ValueError(f"grader {judge!r} has no verdict on any judgment criterion")
    total = 1 + len(names)
    paired, undecided = paired_units(frames, v, judge, names, context=context)
    headline = compare_table(
        paired, "candidate", judge, describe_reference(names), n_boot, seed, ci, undecided
    )
    if progress:
        progress("judge vs humans", 1, total)
    rows: list[LooRow] = []
    if len(names) >= 2:
        for i, h in enumerate(names):
            others = [g for g in names if g != h]
            p, und = paired_units(frames, v, h, others, also=[judge], context=context)
            ref = describe_reference(others)
            hc = compare_table(p, "candidate", h, ref, n_boot, seed, ci, und)
            jc = compare_table(p, f"also:{judge}", judge, ref, n_boot, seed, ci, und)
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
