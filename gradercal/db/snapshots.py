"""The rows a revision keeps, and the small row helpers the import and the adjudication share.

:func:`judgment_snapshot` and :func:`adjudication_snapshot` are what a history row records of
a judgment or an adjudication; :func:`keep_revision` writes a judgment's history row before a
change, :func:`deleted_judgment_revision` the row of a removed one; :func:`revise_adjudication`
keeps an adjudication's old version; :func:`criterion_values` are a criterion's stored columns.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from gradercal.db import models as m
from gradercal.model import (
    Adjudication,
    Criterion,
)

if TYPE_CHECKING:  # pandas and the file formats load on first use (app start-up time)
    pass

JUDGMENT_FIELDS = ("met", "level", "confidence", "rationale", "unclear", "unclear_note")


def judgment_snapshot(row: Any, *extra: str) -> dict[str, Any]:
    """The value of a judgment row as the ``revision`` table keeps it before a change.

    ``row`` is any object with the judgment's columns as attributes (an ORM row or a
    Core ``Row``); ``extra`` names further columns to keep (the judge keeps its run and
    provenance).
    """
    snapshot = {f: getattr(row, f) for f in JUDGMENT_FIELDS}
    snapshot["source"] = row.source
    snapshot["updated_at"] = row.updated_at.isoformat() if row.updated_at else None
    version = getattr(row, "task_version", None)
    if version is not None:  # the task version it was given under (0006; absent: 1)
        snapshot["task_version"] = int(version)
    for f in extra:
        snapshot[f] = getattr(row, f)
    return snapshot


def deleted_judgment_revision(
    row: m.Judgment, *, actor: str | None, source: str, changed_at: datetime
) -> m.Revision:
    """The ``judgment_deleted`` history row that keeps a judgment about to be deleted
    (its value and whose verdict on what it was), as the team trigger writes it in SQL."""
    data = judgment_snapshot(row)
    data.update(
        grader_id=row.grader_id,
        response_id=row.response_id,
        criterion_id=row.criterion_id,
        task_version=row.task_version,
    )
    return m.Revision(
        entity="judgment_deleted",
        entity_id=row.id,
        revision=row.revision,
        data=data,
        actor=actor,
        source=source,
        changed_at=changed_at,
    )


def keep_revision(
    s: Session,
    entity: str,
    row: Any,
    data: dict[str, Any],
    actor: str | None,
    source: str,
    now: datetime,
) -> None:
    """The ``revision`` row keeping ``row``'s value (``data``) before it changes."""
    s.add(
        m.Revision(
            entity=entity,
            entity_id=row.id,
            revision=row.revision,
            data=data,
            actor=actor,
            source=source,
            changed_at=now,
        )
    )


def revise_adjudication(
    s: Session,
    row: m.Adjudication,
    decision: Adjudication,
    *,
    source: str,
    actor: str | None,
    now: datetime,
) -> None:
    """Replace a stored final verdict by ``decision``, its old value kept in ``revision``
    (changed at ``decision.updated_at`` when it says, else now)."""
    keep_revision(s, "adjudication", row, adjudication_snapshot(row), actor, source, now)
    row.met, row.level, row.note = decision.met, decision.level, decision.note
    row.adjudicator = decision.adjudicator
    row.revision += 1
    row.updated_at = decision.updated_at or now
    row.task_version = response_task_version(s, row.response_id)


def response_task_version(s: Session, response_pk: int) -> int:
    """The current version of a response's task (what a verdict is given under now)."""
    from gradercal.db.versions import task_versions

    return task_versions(s, [response_pk])[response_pk]


def adjudication_snapshot(row: m.Adjudication) -> dict[str, Any]:
    """The value of an adjudication as the ``revision`` table keeps it before a change."""
    return {
        "met": row.met,
        "level": row.level,
        "note": row.note,
        "adjudicator": row.adjudicator,
        "updated_at": row.updated_at.isoformat(),
        "task_version": int(row.task_version or 1),
    }


def criterion_values(c: Criterion) -> dict[str, Any]:
    """A criterion's columns as stored (its task and versions aside)."""
    return {
        "external_id": c.id,
        "position": c.position,
        "text": c.text,
        "points": c.points,
        "tags": list(c.tags),
        "kind": c.kind.value,
        "levels": c.levels,
        "auto_key": c.auto.key if c.auto else None,
        "auto_target": c.auto.target if c.auto else None,
        "auto_abs_tol": c.auto.abs_tol if c.auto else None,
        "auto_rel_tol": c.auto.rel_tol if c.auto else None,
    }
