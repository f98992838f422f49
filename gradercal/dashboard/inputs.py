"""What a dashboard is computed from, as one typed value: :class:`DashboardInputs`.

* :class:`DashboardData` — the data read from the database: the frames and every other
  table a section needs (task reviews, acceptance rounds, the verdicts per criterion
  version, the active design). One loader fills it for both front ends
  (:func:`gradercal.db.dashboard_data.load_dashboard_data`: ``gradercal report`` and the
  window's worker process), one line per field (``DATA_LOADERS``);
* :class:`DashboardRequest` — what is asked of that data: the judge, the filters, the
  calibration, the pass threshold and health bar, the benchmark's name, and the
  bootstrap (:class:`~gradercal.stats.boot_settings.BootSettings`, carried as one value
  through the sections to every engine).

:func:`~gradercal.dashboard.compute.compute_dashboard` takes a :class:`DashboardInputs`;
a section that needs new data reads one new field of :class:`DashboardData` (through
:attr:`gradercal.dashboard.tables.SectionInputs.data`), filled by one new loader line —
nothing else carries it.

This module imports pandas and gradercal's core only (no SQL, no Qt).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gradercal.dashboard.filters import DashboardFilters
from gradercal.stats.boot_settings import BootSettings

if TYPE_CHECKING:
    import pandas as pd

    from gradercal.analysis.versions import VerdictEras
    from gradercal.frame_rows import DashboardRows
    from gradercal.frames import Frames

__all__ = [
    "DEFAULT_N_BOOT",
    "DashboardData",
    "DashboardInputs",
    "DashboardRequest",
    "Design",
    "dashboard_data_from_rows",
    "field_from_rows",
]

#: Resamples of the task-clustered bootstrap used when the caller does not say (the
#: bootstrap is a small share of the dashboard's time; see benchmarks/README.md).
DEFAULT_N_BOOT = 200

#: An active design: response id → its inclusion probability, and → its draw (round)
#: (:func:`gradercal.db.assignments.active_design`).
Design = tuple[Mapping[str, float], Mapping[str, int]]


@dataclass(frozen=True)
class DashboardData:
    """The data a dashboard is computed from (every field but ``frames`` optional: a
    section whose data is missing is empty or absent).

    Attributes:
        frames: The benchmark frames (``Repository.load_frames``).
        reviews: Task review answers (``gradercal.db.calibrations.load_task_reviews``),
            for the task review section.
        rounds: The tasks' acceptance rounds (``gradercal.db.acceptance.load_round_table``),
            for the task acceptance section.
        versions: The frames with every verdict (``load_frames(version="all")``) and the
            eras of the verdicts on revised criteria (:func:`gradercal.db.eras.read_eras`),
            for the agreement per criterion version; None, or no revised criterion: that
            section is absent.
        design: An active design's inclusion probabilities and draws
            (:func:`gradercal.db.assignments.active_design`); None or empty: uniform.
    """

    frames: Frames
    reviews: pd.DataFrame | None = None
    rounds: pd.DataFrame | None = None
    versions: tuple[Frames, VerdictEras] | None = None
    design: Design | None = None


@dataclass(frozen=True)
class DashboardRequest:
    """What is asked of the data (see :func:`~gradercal.dashboard.compute.compute_dashboard`).

    Attributes:
        judge: The primary judge; None: the judge with the most verdicts.
        filters: Models / workflows / domains / experts to keep; None: everything.
        calibration: A saved calibration's params (``{"method": "none"}``: no calibrated
            judge); None: the default method.
        threshold: Pass threshold; None: the benchmark's.
        bar: Criterion-health bar; None: the health engine's default.
        benchmark: The benchmark's name, echoed in the overview.
        boot: The task-clustered bootstrap of every interval.
    """

    judge: str | None = None
    filters: DashboardFilters | None = None
    calibration: Mapping[str, Any] | None = None
    threshold: float | None = None
    bar: float | None = None
    benchmark: str | None = None
    boot: BootSettings = field(default_factory=lambda: BootSettings(DEFAULT_N_BOOT))


@dataclass(frozen=True)
class DashboardInputs:
    """Everything one dashboard is computed from: the data and the request."""

    data: DashboardData
    request: DashboardRequest = field(default_factory=DashboardRequest)

    @classmethod
    def of(
        cls,
        frames: Frames,
        *,
        judge: str | None = None,
        filters: DashboardFilters | None = None,
        calibration: Mapping[str, Any] | None = None,
        n_boot: int = DEFAULT_N_BOOT,
        seed: int = 0,
        ci: float = 0.95,
        threshold: float | None = None,
        bar: float | None = None,
        benchmark: str | None = None,
        reviews: pd.DataFrame | None = None,
        rounds: pd.DataFrame | None = None,
        versions: tuple[Frames, VerdictEras] | None = None,
        design: Design | None = None,
    ) -> DashboardInputs:
        """The inputs of the keyword form ``compute_dashboard(frames, judge=…, …)``."""
        return cls(
            DashboardData(frames, reviews, rounds, versions, design),
            DashboardRequest(
                judge, filters, calibration, threshold, bar, benchmark,
                BootSettings(n_boot, seed, ci),
            ),
        )  # fmt: skip


def field_from_rows(name: str, fetched: Any) -> Any:
    """The value of :class:`DashboardData`'s field ``name`` from what its loader fetched
    (``gradercal.db.dashboard_data.DATA_LOADERS``: rows, made into frames here)."""
    if fetched is None:
        return None
    if name == "reviews":
        from gradercal.frames import reviews_frame

        return reviews_frame(fetched)
    if name == "rounds":
        from gradercal.ops.acceptance import round_table

        return round_table(*fetched)
    if name == "versions":
        from gradercal.analysis.verdict_eras import eras_from_rows
        from gradercal.frames import frames_from_rows

        frame_rows, era_rows = fetched
        return frames_from_rows(frame_rows), eras_from_rows(era_rows)
    return fetched  # the design: no frames


def dashboard_data_from_rows(
    rows: DashboardRows, ahead: DashboardData | None = None
) -> DashboardData:
    """The :class:`DashboardData` of what ``gradercal.db.dashboard_data.fetch_dashboard_rows``
    read (in this process, or in a forked child that never imported pandas).

    ``ahead``: the data already made of what was read ahead (everything but the
    judgments: ``fetch_dashboard_rows(…, ahead=…)``): only the judgments of ``rows`` are
    made, the rest is taken from it."""
    from gradercal.frames import frames_from_rows

    if ahead is not None:
        return replace(ahead, frames=frames_from_rows(rows.frames, ahead.frames))
    values = {name: field_from_rows(name, fetched) for name, fetched in rows.fields.items()}
    return replace(DashboardData(frames_from_rows(rows.frames)), **values)
