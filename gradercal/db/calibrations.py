"""Fitted judge calibrations and task review surveys in the database.

A calibration (:class:`gradercal.analysis.calibration.CalibrationResult`) is stored in the
``calibration`` table: ``params`` holds the learned values (enough to rebuild the
calibrator with :func:`gradercal.analysis.calibration.calibrator_from_params`), ``split`` the
task folds and the held-out tasks (``split["held_out"]``; absent in calibrations saved
before held-out splits), ``metrics`` the out-of-fold figures and the held-out tasks'
``test`` figures, and ``provenance`` where the data came from.
``version`` counts the fits per (judge, method) — 1, 2, … — and at most one calibration
per (judge, benchmark) is *active*: saving a new one deactivates the others, so "the
judge's calibration" is unambiguous when new judge runs are corrected.

Task review surveys come from the ``task_review`` table as the long frame
:func:`gradercal.analysis.surveys.survey_summary` reads.

SQLAlchemy only; never imports Qt.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select, update

from gradercal.db import models as m
from gradercal.db.repo import Repository
from gradercal.errors import NotFoundError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "SavedCalibration",
    "activate_calibration",
    "list_calibrations",
    "load_calibration",
    "load_task_reviews",
    "save_calibration",
]


@dataclass(frozen=True)
class SavedCalibration:
    """One row of the ``calibration`` table.

    Attributes:
        id: Primary key.
        judge: The judge's grader name.
        benchmark: The benchmark's name.
        method: ``threshold`` | ``leniency`` | ``isotonic`` | ``platt``.
        version: Fit number for this (judge, method), from 1.
        active: Whether it is the judge's active calibration on this benchmark.
        params, split, metrics, provenance: As stored (JSON).
        created_at: When it was saved (UTC).
    """

    id: int
    judge: str
    benchmark: str
    method: str
    version: int
    active: bool
    params: dict[str, Any]
    split: dict[str, Any]
    metrics: dict[str, Any]
    provenance: dict[str, Any]
    created_at: datetime

    def to_dict(self, full: bool = False) -> dict[str, Any]:
        """JSON-able form; ``full`` adds params, split and metrics."""
        out: dict[str, Any] = {
            "id": self.id,
            "judge": self.judge,
            "benchmark": self.benchmark,
            "method": self.method,
            "version": self.version,
            "active": self.active,
            "created_at": self.created_at.isoformat(),
        }
        if full:
            out |= {
                "params": self.params,
                "split": self.split,
                "metrics": self.metrics,
                "provenance": self.provenance,
            }
        return out


def _grader_id(s: Any, judge: str) -> int:
    gid = s.scalar(select(m.Grader.id).where(m.Grader.name == judge))
    if gid is None:
        raise NotFoundError(f"no grader named {judge!r}")
    return int(gid)


def _saved(row: m.Calibration, judge: str, benchmark: str) -> SavedCalibration:
    return SavedCalibration(
        id=row.id,
        judge=judge,
        benchmark=benchmark,
        method=row.method,
        version=row.version,
        active=bool(row.active),
        params=dict(row.params or {}),
        split=dict(row.split or {}),
        metrics=dict(row.metrics or {}),
        provenance=dict(row.provenance or {}),
        created_at=row.created_at,
    )


def save_calibration(
    repo: Repository,
    benchmark: str | None,
    judge: str,
    method: str,
    *,
    params: dict[str, Any],
    split: dict[str, Any],
    metrics: dict[str, Any],
    provenance: dict[str, Any],
    activate: bool = True,
) -> SavedCalibration:
    """Store a fitted calibration as the next version for (judge, method).

    Args:
        repo: The repository.
        benchmark: The benchmark's name (None: the only one).
        judge: The judge's grader name.
        method: The calibration method.
        params: Learned values (``CalibrationResult.params``).
        split: The folds and held-out tasks (``CalibrationResult.split``).
        metrics: Out-of-fold and test figures (``CalibrationResult.metrics``).
        provenance: Data provenance (``CalibrationResult.provenance``).
        activate: Make it the judge's active calibration on this benchmark (the
            others are deactivated).

    Raises:
        NotFoundError: Unknown benchmark or grader.
    """
    bench = repo.benchmark(benchmark)
    with repo.db.write() as s:
        gid = _grader_id(s, judge)
        latest = s.scalar(
            select(func.max(m.Calibration.version)).where(
                m.Calibration.grader_id == gid, m.Calibration.method == method
            )
        )
        if activate:
            s.execute(
                update(m.Calibration)
                .where(m.Calibration.grader_id == gid, m.Calibration.benchmark_id == bench.id)
                .values(active=False)
            )
        row = m.Calibration(
            grader_id=gid,
            benchmark_id=bench.id,
            method=method,
            version=int(latest or 0) + 1,
            params=params,
            split=split,
            metrics=metrics,
            provenance=provenance,
            active=activate,
            created_at=m.utcnow(),
        )
        s.add(row)
        s.flush()
        return _saved(row, judge, bench.name)


def list_calibrations(
    repo: Repository, benchmark: str | None = None, judge: str | None = None
) -> list[SavedCalibration]:
    """Every stored calibration of the benchmark (optionally of one judge), newest first."""
    bench = repo.benchmark(benchmark)
    with repo.db.read() as s:
        q = (
            select(m.Calibration, m.Grader.name)
            .join(m.Grader, m.Grader.id == m.Calibration.grader_id)
            .where(m.Calibration.benchmark_id == bench.id)
            .order_by(m.Calibration.created_at.desc(), m.Calibration.id.desc())
        )
        if judge is not None:
            q = q.where(m.Grader.name == judge)
        return [_saved(row, name, bench.name) for row, name in s.execute(q).all()]


def load_calibration(
    repo: Repository,
    benchmark: str | None,
    judge: str,
    *,
    method: str | None = None,
    version: int | None = None,
) -> SavedCalibration | None:
    """A stored calibration of the judge.

    Without ``method``/``version``: the active one on this benchmark. With ``method``:
    the given version (default: the latest) of that method. None when there is none.
    """
    rows = list_calibrations(repo, benchmark, judge)
    if method is None and version is None:
        return next((r for r in rows if r.active), None)
    rows = [r for r in rows if method is None or r.method == method]
    if version is not None:
        rows = [r for r in rows if r.version == version]
    return max(rows, key=lambda r: (r.version, r.id), default=None)


def activate_calibration(repo: Repository, calibration_id: int) -> None:
    """Make a stored calibration its judge's active one (the others on the benchmark not)."""
    with repo.db.write() as s:
        row = s.get(m.Calibration, calibration_id)
        if row is None:
            raise NotFoundError(f"no calibration with id {calibration_id}")
        s.execute(
            update(m.Calibration)
            .where(
                m.Calibration.grader_id == row.grader_id,
                m.Calibration.benchmark_id == row.benchmark_id,
            )
            .values(active=False)
        )
        row.active = True


def load_task_reviews(repo: Repository, benchmark: str | None = None) -> pd.DataFrame:
    """The benchmark's task review answers as a long frame
    (:func:`gradercal.frames.reviews_frame` of :func:`task_review_records`).

    Returns:
        ``task_id`` (external id), ``reviewer`` (grader name), ``dimension``,
        ``answer`` (int 1–5), one row per answered survey item, in task then reviewer
        order. Non-integer stored answers are skipped.
    """
    from gradercal.frames import reviews_frame

    return reviews_frame(task_review_records(repo, benchmark))


def task_review_records(
    repo: Repository, benchmark: str | None = None
) -> list[tuple[str, str, str, int]]:
    """The rows of :func:`load_task_reviews` (no pandas here)."""
    bench = repo.benchmark(benchmark)
    with repo.db.read() as s:
        rows = s.execute(
            select(m.Task.external_id, m.Grader.name, m.TaskReview.answers)
            .join(m.Task, m.Task.id == m.TaskReview.task_id)
            .join(m.Grader, m.Grader.id == m.TaskReview.grader_id)
            .where(m.Task.benchmark_id == bench.id)
            .order_by(m.Task.position, m.Task.id, m.Grader.name)
        ).all()
    return [
        (task, reviewer, str(dim), int(ans))
        for task, reviewer, answers in rows
        for dim, ans in (answers or {}).items()
        if isinstance(ans, int) and not isinstance(ans, bool)
    ]
