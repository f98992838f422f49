"""A dashboard's data as read from the database, before pandas: plain rows and numpy columns.

The database layer fills these (:mod:`gradercal.db.frames_fetch`,
:func:`gradercal.db.dashboard_data.fetch_dashboard_rows`) without importing pandas;
:func:`gradercal.frames.frames_from_rows` and
:func:`gradercal.dashboard.inputs.dashboard_data_from_rows` make the frames from them.
``gradercal report`` reads them in a forked child that imports neither pandas nor the
engines, while the command's own process imports those (:mod:`gradercal.cli.report`).

This module imports numpy and the standard library only: its objects are unpickled in a
process that has not imported SQLAlchemy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["DashboardRows", "EraRows", "FrameRows", "JudgmentColumns", "Version", "parse_version"]

#: Which verdicts the frames hold after rubric revisions (issue #16): ``"current"`` (the
#: default) leaves stale ones out, ``"all"`` keeps every verdict, a number N keeps, for
#: each criterion, the verdicts that were current when its task was at version N.
Version = str | int


def parse_version(text: str | int) -> Version:
    """``all``, ``current`` or a version number ≥ 1 (a clear error otherwise)."""
    if isinstance(text, int) or (isinstance(text, str) and text.strip().isdigit()):
        n = int(text)
        if n >= 1:
            return n
    elif text in ("all", "current"):
        return text
    raise ValueError(f"version {text!r}: use all, current or a version number (1, 2, …)")


@dataclass
class JudgmentColumns:
    """The ``judgments`` frame's columns: names as positions (into the ``responses`` and
    ``criteria`` rows of the same :class:`FrameRows`, and the grader arrays here), values
    as numpy arrays."""

    #: Names and kinds of the graders.
    grader_names: npt.NDArray[np.object_]
    grader_kinds: npt.NDArray[np.object_]
    #: Each judgment's row in ``responses``, ``criteria`` and the grader arrays.
    response_pos: npt.NDArray[np.intp]
    criterion_pos: npt.NDArray[np.intp]
    grader_pos: npt.NDArray[np.intp]
    #: 1.0 / 0.0, NaN when not answered.
    met: npt.NDArray[np.float64]
    #: The level, NaN when none was given.
    level: npt.NDArray[np.float64]
    confidence: npt.NDArray[np.float64]
    rationale: npt.NDArray[np.object_]
    unclear: npt.NDArray[np.bool_]


@dataclass
class FrameRows:
    """The rows of each frame of :class:`gradercal.frames.Frames`, in its column order
    (``tasks``, ``criteria``, ``responses``, ``adjudications``: one tuple per row; the
    judgments as columns, or as rows when read from the history)."""

    pass_threshold: float
    tasks: list[tuple[Any, ...]]
    criteria: list[tuple[Any, ...]]
    responses: list[tuple[Any, ...]]
    judgments: JudgmentColumns | list[tuple[Any, ...]]
    adjudications: list[tuple[Any, ...]]


@dataclass
class EraRows:
    """The revised criteria of a benchmark and the rows of its verdicts on them, each
    followed by its era (:func:`gradercal.analysis.verdict_eras.eras_from_rows`)."""

    revised: dict[tuple[str, str], tuple[int, ...]]
    judgments: list[tuple[Any, ...]]
    adjudications: list[tuple[Any, ...]]


@dataclass
class DashboardRows:
    """Everything a dashboard is computed from, as read: the frames' rows and the value
    each loader of :data:`gradercal.db.dashboard_data.DATA_LOADERS` fetched."""

    frames: FrameRows
    fields: dict[str, Any] = field(default_factory=dict)
