"""What a verdict is given under, and whether it is still current (issue #16).

The few facts every writer and reader of verdicts needs about task versions, apart from
the revision store (:mod:`gradercal.db.revisions`), so that any module of the database
layer can use them without a cycle: the current version of a task, the version it was
at some moment, and the SQL test of a verdict that is not stale.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import func, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from gradercal.db import models as m

__all__ = [
    "VERDICT_FIELDS",
    "VerdictWrite",
    "is_current",
    "task_versions",
    "task_versions_of_tasks",
    "verdict_write",
    "versions_at",
]


def task_versions(conn: Connection | Session, response_ids: Iterable[int]) -> dict[int, int]:
    """The current task version of each response (row ids): what a verdict written now
    on that response is given under."""
    ids = sorted(set(response_ids))
    out: dict[int, int] = {}
    for i in range(0, len(ids), 500):
        batch = ids[i : i + 500]
        out.update(
            (int(r), int(v))
            for r, v in conn.execute(
                select(m.Response.id, m.Task.version)
                .join(m.Task, m.Task.id == m.Response.task_id)
                .where(m.Response.id.in_(batch))
            )
        )
    return out


def task_versions_of_tasks(conn: Connection | Session, task_ids: Iterable[int]) -> dict[int, int]:
    """The current version of each task (row ids)."""
    ids = sorted(set(task_ids))
    out: dict[int, int] = {}
    for i in range(0, len(ids), 500):
        batch = ids[i : i + 500]
        out.update(
            (int(t), int(v))
            for t, v in conn.execute(select(m.Task.id, m.Task.version).where(m.Task.id.in_(batch)))
        )
    return out


def versions_at(s: Session, task_ids: Iterable[int], when: datetime) -> dict[int, int]:
    """The version each task (row ids) was at, at time ``when``: its current version
    less the revisions made since (what a packet exported at ``when`` was graded under)."""
    current = task_versions_of_tasks(s, task_ids)
    if not current:
        return {}
    later = dict(
        s.execute(
            select(m.ContentVersion.task_id, func.count())
            .where(
                m.ContentVersion.task_id.in_(sorted(current)),
                m.ContentVersion.version > 1,
                m.ContentVersion.kind != "unrecorded",
                m.ContentVersion.created_at > when,
            )
            .group_by(m.ContentVersion.task_id)
        ).all()
    )
    return {t: max(1, v - int(later.get(t, 0))) for t, v in current.items()}


VerdictWrite = Literal["new", "changed", "confirmed", "unchanged"]
"""What storing a verdict does to the stored one (:func:`verdict_write`)."""


def verdict_write(
    *,
    stored_version: int | None,
    same: bool,
    given_under: int,
    verdict_version: int,
    answered: bool = True,
) -> VerdictWrite:
    """The one rule every writer of verdicts follows (the grading window, imports,
    packet merges, the judge): what storing a verdict given under task version
    ``given_under`` does to the stored one.

    * ``new``: nothing is stored yet (``stored_version`` None).
    * ``changed``: the value differs; it is written with ``given_under``.
    * ``confirmed``: the same answered value (``answered``: a verdict, not only a
      rationale) given again under a version at which it is current
      (``given_under >= verdict_version``) while the stored one is stale
      (``stored_version < verdict_version``): written like a change — the stored value
      goes to the history with the version it was given under, and the verdict counts
      again.
    * ``unchanged``: the same value, and nothing to confirm (the stored one is current,
      or the new one is given under a version as old as it): nothing is written, so an
      old file imported again never refreshes a stale verdict, nor makes a current one
      stale.

    ``verdict_version`` is the criterion's last verdict-changing version
    (``criterion.verdict_version``); ``same`` compares the verdict's value columns.
    """
    if stored_version is None:
        return "new"
    if not same:
        return "changed"
    if answered and stored_version < verdict_version <= given_under:
        return "confirmed"
    return "unchanged"


def is_current(verdicts: Any) -> Any:
    """SQL: the verdict (a row of ``judgment`` or ``adjudication``, or an alias of one)
    is not stale: given under its criterion's last verdict-changing version or later."""
    return verdicts.task_version >= (
        select(m.Criterion.verdict_version)
        .where(m.Criterion.id == verdicts.criterion_id)
        .scalar_subquery()
    )


#: The value columns of each verdict table, in the order of its frame
#: (:mod:`gradercal.frames`): what a verdict at an earlier version is rebuilt from.
VERDICT_FIELDS = {
    "judgment": ("met", "level", "confidence", "rationale", "unclear"),
    "adjudication": ("met", "level", "adjudicator", "note"),
}
