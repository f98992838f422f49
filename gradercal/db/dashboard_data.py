"""The one loader of a dashboard's data: :func:`load_dashboard_data`.

Both front ends read what :func:`gradercal.dashboard.compute_dashboard` is computed from
here — ``gradercal report`` (:mod:`gradercal.cli.report`) and the window's worker process
(:mod:`gradercal.ui.dashboard.worker`, which also brings its data up to date with
:func:`refresh_dashboard_data`). Each field of
:class:`~gradercal.dashboard.inputs.DashboardData` but the frames is one
:class:`DataLoader` of :data:`DATA_LOADERS`: a section that needs new data adds its field
there and its line here, and both front ends read it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gradercal.dashboard.inputs import DashboardData

if TYPE_CHECKING:
    from gradercal.analysis.versions import VerdictEras
    from gradercal.db.frames_read import Version
    from gradercal.db.repo import Repository
    from gradercal.frames import Frames

__all__ = [
    "DATA_LOADERS",
    "DataLoader",
    "load_dashboard_data",
    "refresh_dashboard_data",
]


@dataclass(frozen=True)
class DataLoader:
    """One field of :class:`~gradercal.dashboard.inputs.DashboardData` and how to read it.

    Attributes:
        name: The field's name.
        load: ``load(repo, benchmark)``: its value.
        refresh_on: The parts of the database's fingerprint (``Repository.data_revision``)
            whose change alone reads it again (:func:`refresh_dashboard_data`); a change of
            any part no loader names reads everything.
    """

    name: str
    load: Callable[[Repository, str | None], object]
    refresh_on: frozenset[str] = frozenset()


def _versions(repo: Repository, benchmark: str | None) -> tuple[Frames, VerdictEras] | None:
    """(frames with every verdict, stale ones included, and the eras) when a criterion of
    the benchmark was revised in a way that changes verdicts, else None (one small query)."""
    from gradercal.db.eras import load_eras

    eras = load_eras(repo, benchmark)
    return (repo.load_frames(benchmark, "all"), eras) if eras else None


def _reviews(repo: Repository, benchmark: str | None) -> object:
    from gradercal.db.calibrations import load_task_reviews

    return load_task_reviews(repo, benchmark)


def _rounds(repo: Repository, benchmark: str | None) -> object:
    from gradercal.db.acceptance import load_round_table

    return load_round_table(repo.db, benchmark)


def _design(repo: Repository, benchmark: str | None) -> object:
    from gradercal.db.assignments import active_design

    return active_design(repo.db, benchmark)


#: Every field of the dashboard's data but the frames, in the order they are read.
DATA_LOADERS: tuple[DataLoader, ...] = (
    DataLoader("reviews", _reviews, frozenset({"reviews"})),
    DataLoader("rounds", _rounds, frozenset({"rounds"})),
    DataLoader("design", _design),
    DataLoader("versions", _versions, frozenset({"adjudications"})),
)


def load_dashboard_data(
    repo: Repository, benchmark: str | None, version: Version = "current"
) -> DashboardData:
    """Everything a dashboard of ``benchmark`` is computed from: its frames (of
    ``version``: ``Repository.load_frames``) and every field of :data:`DATA_LOADERS`."""
    frames = repo.load_frames(benchmark, version)
    values = {loader.name: loader.load(repo, benchmark) for loader in DATA_LOADERS}
    return replace(DashboardData(frames), **values)  # type: ignore[arg-type]


def refresh_dashboard_data(
    data: DashboardData, repo: Repository, benchmark: str | None, changed: Collection[str]
) -> DashboardData | None:
    """``data`` brought up to date when only the fingerprint's parts ``changed`` changed:
    the adjudications of its frames, and each field whose loader names one of them read
    again (a field that is None stays None: what was absent appears only with a change
    that reads everything). None: a part changed that needs everything read again."""
    partial = {"adjudications"}.union(*(loader.refresh_on for loader in DATA_LOADERS))
    if set(changed) - partial:
        return None
    values: dict[str, object] = {}
    if "adjudications" in changed:
        adjudications = repo.load_adjudications(benchmark)
        values["frames"] = replace(data.frames, adjudications=adjudications)
    for loader in DATA_LOADERS:
        if loader.refresh_on & set(changed) and getattr(data, loader.name) is not None:
            values[loader.name] = loader.load(repo, benchmark)
    return replace(data, **values)  # type: ignore[arg-type]
