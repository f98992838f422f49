"""Which part of the benchmark the dashboard looks at.

:class:`DashboardFilters` restricts the benchmark by response model, task workflow and
domain, and human grader; :func:`filter_frames` applies it before any section is
computed, and :func:`filter_options` lists the values each filter can take on the frames
(a front end's choices). A missing workflow or domain is :data:`NO_VALUE`, in the filters
and in the dashboard's group tables alike.

This module imports pandas and gradercal's core only (no SQL, no Qt).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from gradercal.frames import Frames

__all__ = ["NO_VALUE", "DashboardFilters", "filter_frames", "filter_options"]

#: Label of a missing workflow / domain in filters and group tables.
NO_VALUE = "(none)"


@dataclass(frozen=True)
class DashboardFilters:
    """Which part of the benchmark the dashboard looks at (None: no restriction).

    Attributes:
        models: Response model names to keep.
        workflows: Task workflows to keep (:data:`NO_VALUE` selects tasks without one).
        domains: Task domains to keep (:data:`NO_VALUE` selects tasks without one).
        graders: The human graders to keep (their verdicts form the consensus and the
            expert–expert figures); judges are always kept. None: every human.
    """

    models: tuple[str, ...] | None = None
    workflows: tuple[str, ...] | None = None
    domains: tuple[str, ...] | None = None
    graders: tuple[str, ...] | None = None

    def is_empty(self) -> bool:
        """True when no filter is set."""
        return all(x is None for x in (self.models, self.workflows, self.domains, self.graders))

    def describe(self) -> str:
        """A one-line human description, e.g. ``"models: a, b; workflow: analysis"``."""
        parts = []
        for label, values in (
            ("models", self.models),
            ("workflows", self.workflows),
            ("domains", self.domains),
            ("experts", self.graders),
        ):
            if values is not None:
                parts.append(f"{label}: {', '.join(values) or 'none'}")
        return "; ".join(parts) or "no filter"


def _labels(s: pd.Series) -> pd.Series:
    """Object series with missing values replaced by :data:`NO_VALUE`."""
    return s.map(
        lambda x: NO_VALUE if x is None or (isinstance(x, float) and math.isnan(x)) else str(x)
    )


def filter_frames(frames: Frames, f: DashboardFilters) -> Frames:
    """The frames restricted to the filters (dtypes kept, indexes reset).

    Tasks are kept by workflow and domain; responses by model and kept task; criteria by
    kept task; judgments and adjudications by kept response, and human judgments by
    ``f.graders`` (judge verdicts stay). Values that match nothing give empty frames.
    """
    if f.is_empty():
        return frames
    tasks = frames.tasks
    keep_t = pd.Series(True, index=tasks.index)
    if f.workflows is not None:
        keep_t &= _labels(tasks["workflow"]).isin(list(f.workflows))
    if f.domains is not None:
        keep_t &= _labels(tasks["domain"]).isin(list(f.domains))
    tasks = tasks.loc[keep_t]
    task_ids = set(tasks["task_id"])
    resp = frames.responses
    keep_r = resp["task_id"].isin(task_ids)
    if f.models is not None:
        keep_r &= resp["model"].isin(list(f.models))
    resp = resp.loc[keep_r]
    rids = set(resp["response_id"])
    j = frames.judgments
    keep_j = j["response_id"].isin(rids)
    if f.graders is not None:
        keep_j &= (j["grader_kind"] != "human") | j["grader"].isin(list(f.graders))
    adj = frames.adjudications
    return Frames(
        pass_threshold=frames.pass_threshold,
        tasks=tasks.reset_index(drop=True),
        criteria=frames.criteria.loc[frames.criteria["task_id"].isin(task_ids)].reset_index(
            drop=True
        ),
        responses=resp.reset_index(drop=True),
        judgments=j.loc[keep_j].reset_index(drop=True),
        adjudications=adj.loc[adj["response_id"].isin(rids)].reset_index(drop=True),
    )


def filter_options(frames: Frames) -> dict[str, list[str]]:
    """The values each filter can take on these frames.

    Returns:
        ``{"models": […], "workflows": […], "domains": […], "graders": […],
        "judges": […]}``, each sorted; a missing workflow/domain is :data:`NO_VALUE`
        (listed last). ``graders`` are the human graders, ``judges`` the others (not a
        filter: listed so a front end can offer the primary-judge choice).
    """
    from gradercal.analysis.verdicts import human_graders, judge_graders

    def values(s: pd.Series) -> list[str]:
        got = set(_labels(s))
        return [*sorted(got - {NO_VALUE}), *([NO_VALUE] if NO_VALUE in got else [])]

    return {
        "models": sorted({str(m) for m in frames.responses["model"].dropna()}),
        "workflows": values(frames.tasks["workflow"]),
        "domains": values(frames.tasks["domain"]),
        "graders": human_graders(frames),
        "judges": judge_graders(frames),
    }
