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
from datetime import datetime
from typing import TYPE_CHECKING, Any

from gradercal.frame_rows import DashboardRows, EraRows, FrameRows

if TYPE_CHECKING:
    from gradercal.analysis.versions import VerdictEras
    from gradercal.dashboard.inputs import DashboardData
    from gradercal.db.repo import Repository
    from gradercal.db.session import Database
    from gradercal.frame_rows import Version
    from gradercal.frames import Frames

__all__ = [
    "DATA_LOADERS",
    "DataLoader",
    "fetch_dashboard_rows",
    "load_dashboard_data",
    "refresh_dashboard_data",
    "round_rows",
    "round_state",
]


@dataclass(frozen=True)
class DataLoader:
    """One field of :class:`~gradercal.dashboard.inputs.DashboardData` and how to read it.

    Attributes:
        name: The field's name.
        fetch: ``fetch(repo, benchmark)``: what is read for it, without pandas (plain
            rows, numpy arrays, dataclasses); the field's value is
            :func:`gradercal.dashboard.inputs.field_from_rows` of it.
        refresh_on: The parts of the database's fingerprint (``Repository.data_revision``)
            whose change alone reads it again (:func:`refresh_dashboard_data`); a change of
            any part no loader names reads everything.
    """

    name: str
    fetch: Callable[[Repository, str | None], object]
    refresh_on: frozenset[str] = frozenset()

    def load(self, repo: Repository, benchmark: str | None) -> object:
        """The field's value (:attr:`fetch`, then made into frames)."""
        from gradercal.dashboard.inputs import field_from_rows

        return field_from_rows(self.name, self.fetch(repo, benchmark))


class _NotColumnar(Exception):
    """A judgment names a criterion outside the benchmark: the rows path reads it."""


def _frame_rows(
    repo: Repository,
    benchmark: str | None,
    version: Version,
    ahead: Callable[[FrameRows], None] | None = None,
) -> FrameRows:
    from gradercal.db.frames_fetch import fetch_frames

    bench = repo.benchmark(benchmark)
    with repo.db.read() as s:
        rows = fetch_frames(s.connection(), bench.id, bench.pass_threshold, version, ahead)
    if rows is None:
        raise _NotColumnar
    return rows


def _versions(repo: Repository, benchmark: str | None) -> tuple[FrameRows, EraRows] | None:
    """(the rows of the frames with every verdict, stale ones included, and the eras) when
    a criterion of the benchmark was revised in a way that changes verdicts, else None
    (one small query)."""
    from gradercal.db.frames_fetch import fetch_eras

    bench = repo.benchmark(benchmark)
    with repo.db.read() as s:
        eras = fetch_eras(s.connection(), bench.id)
    if eras is None or not eras.revised:
        return None
    return _frame_rows(repo, benchmark, "all"), eras


def _reviews(repo: Repository, benchmark: str | None) -> object:
    from gradercal.db.calibrations import task_review_records

    return task_review_records(repo, benchmark)


def _rounds(repo: Repository, benchmark: str | None) -> object:
    return round_rows(repo.db, benchmark)


def _design(repo: Repository, benchmark: str | None) -> object:
    from gradercal.db.assignments import active_design

    return active_design(repo.db, benchmark)


def round_state(decision: str | None, closed_at: datetime | None) -> str:
    """A stored round's state: its decision, else ``closed`` or ``open``."""
    if decision:
        return decision
    return "closed" if closed_at is not None else "open"


def round_rows(
    db: Database, benchmark: str | None = None
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The benchmark's tasks ``(row id, task id, workflow, domain)`` in order and its
    rounds ``(task row id, number, state, statistic, agreement, agreement_low,
    agreement_high)`` in number order: what :func:`gradercal.ops.acceptance.round_table`
    makes the report's acceptance table of."""
    from sqlalchemy import select

    from gradercal.db import models as m
    from gradercal.db.repo import Repository

    bench = Repository(db).benchmark(benchmark)
    with db.read() as s:
        tasks = s.execute(
            select(m.Task.id, m.Task.external_id, m.Task.workflow, m.Task.domain)
            .where(m.Task.benchmark_id == bench.id)
            .order_by(m.Task.position, m.Task.id)
        ).all()
        rounds = s.execute(
            select(
                m.TaskRound.task_id,
                m.TaskRound.number,
                m.TaskRound.decision,
                m.TaskRound.closed_at,
                m.TaskRound.statistic,
                m.TaskRound.agreement,
                m.TaskRound.agreement_low,
                m.TaskRound.agreement_high,
            )
            .join(m.Task, m.Task.id == m.TaskRound.task_id)
            .where(m.Task.benchmark_id == bench.id)
            .order_by(m.TaskRound.number)
        ).all()
    return [tuple(t) for t in tasks], [
        (int(task), number, round_state(decision, closed), statistic, agreement, low, high)
        for task, number, decision, closed, statistic, agreement, low, high in rounds
    ]


#: Every field of the dashboard's data but the frames, in the order they are read.
DATA_LOADERS: tuple[DataLoader, ...] = (
    DataLoader("reviews", _reviews, frozenset({"reviews"})),
    DataLoader("rounds", _rounds, frozenset({"rounds"})),
    DataLoader("design", _design),
    DataLoader("versions", _versions, frozenset({"adjudications"})),
)


def fetch_dashboard_rows(
    repo: Repository,
    benchmark: str | None,
    version: Version = "current",
    ahead: Callable[[DashboardRows], None] | None = None,
) -> DashboardRows | None:
    """What :func:`load_dashboard_data` reads, before pandas
    (:func:`gradercal.dashboard.inputs.dashboard_data_from_rows` makes the data): the
    frames' rows and each loader's fetch. None when a judgment names a criterion outside
    the benchmark (then :func:`load_dashboard_data` reads it the rows way).

    ``ahead``: given everything but the judgments (an empty list there), before the
    judgments — most of the reading — are read (the report makes its frames meanwhile)."""
    try:
        fields = {loader.name: loader.fetch(repo, benchmark) for loader in DATA_LOADERS}
        hand = None if ahead is None else lambda rows: ahead(DashboardRows(rows, fields))
        frames = _frame_rows(repo, benchmark, version, hand)
    except _NotColumnar:
        return None
    return DashboardRows(frames, fields)


def load_dashboard_data(
    repo: Repository, benchmark: str | None, version: Version = "current"
) -> DashboardData:
    """Everything a dashboard of ``benchmark`` is computed from: its frames (of
    ``version``: ``Repository.load_frames``) and every field of :data:`DATA_LOADERS`."""
    from gradercal.dashboard.inputs import DashboardData, dashboard_data_from_rows

    rows = fetch_dashboard_rows(repo, benchmark, version)
    if rows is not None:
        return dashboard_data_from_rows(rows)
    # the rows path (a database written by hand)
    values = {loader.name: _loaded(loader, repo, benchmark) for loader in DATA_LOADERS}
    data = DashboardData(repo.load_frames(benchmark, version))
    return replace(data, **values)  # type: ignore[arg-type]


def _loaded(loader: DataLoader, repo: Repository, benchmark: str | None) -> object:
    if loader.name != "versions":
        return loader.load(repo, benchmark)
    return _versions_by_rows(repo, benchmark)


def _versions_by_rows(repo: Repository, benchmark: str | None) -> tuple[Frames, VerdictEras] | None:
    """:func:`_versions` made into frames, the frames read the rows way when need be."""
    from gradercal.db.eras import load_eras

    eras = load_eras(repo, benchmark)
    return (repo.load_frames(benchmark, "all"), eras) if eras else None


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
            values[loader.name] = _loaded(loader, repo, benchmark)
    return replace(data, **values)  # type: ignore[arg-type]
