"""Conflicts kept by packet merges: listing them and settling them.

:func:`list_conflicts` lists the conflicts kept, :func:`resolve_conflict` settles one
(keep the database's value, the packet's, or a new verdict), keeping the replaced value
and the decision in ``revision``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gradercal.db import models as m
from gradercal.db.packets._common import (
    CONFLICT_ENTITY,
    FIELDS,
    MAX_TEXT,
    REVIEW_CONFLICT_ENTITY,
    checked_value,
    iso_or_none,
    judgment_value,
    no_nul,
)
from gradercal.db.session import Database
from gradercal.db.snapshots import judgment_snapshot
from gradercal.errors import NotFoundError
from gradercal.ops.packet_format import PacketError

#: ``revision.entity`` of a conflict's resolution (``entity_id`` = the conflict's revision id).
RESOLUTION_ENTITY = "packet_conflict_resolution"
#: What :func:`resolve_conflict` may keep.
KEEP_CHOICES = ("database", "packet", "value")


def list_conflicts(
    db: Database, *, grader: str | None = None, include_resolved: bool = True
) -> list[dict[str, Any]]:
    """Every packet value kept because of a conflict (judgments and task reviews), oldest first.

    Each entry holds the stored conflict (``packet``, ``database`` at merge time, ``base``
    at export …) plus ``id`` (for :func:`resolve_conflict`), ``kind``, ``status``
    (``"open"`` or ``"resolved"``), ``resolution`` (None, or what was kept, by whom,
    when) and ``current``: the value in the database now.
    """
    with db.read() as s:
        rows = s.execute(
            select(
                m.Revision.id,
                m.Revision.entity,
                m.Revision.entity_id,
                m.Revision.data,
                m.Revision.actor,
                m.Revision.changed_at,
            )
            .where(m.Revision.entity.in_([CONFLICT_ENTITY, REVIEW_CONFLICT_ENTITY]))
            .order_by(m.Revision.id)
        ).all()
        resolutions = {
            eid: (data, actor, changed)
            for eid, data, actor, changed in s.execute(
                select(
                    m.Revision.entity_id, m.Revision.data, m.Revision.actor, m.Revision.changed_at
                ).where(m.Revision.entity == RESOLUTION_ENTITY)
            )
        }
        jids = sorted({eid for _r, ent, eid, *_ in rows if ent == CONFLICT_ENTITY})
        rids = sorted({eid for _r, ent, eid, *_ in rows if ent == REVIEW_CONFLICT_ENTITY})
        judgments = {j.id: j for j in s.scalars(select(m.Judgment).where(m.Judgment.id.in_(jids)))}
        reviews = {
            r.id: r for r in s.scalars(select(m.TaskReview).where(m.TaskReview.id.in_(rids)))
        }
    out = []
    for rid, entity, eid, data, actor, changed in rows:
        if grader is not None and actor != grader:
            continue
        resolved = resolutions.get(rid)
        if resolved is not None and not include_resolved:
            continue
        current: dict[str, Any] | None
        if entity == CONFLICT_ENTITY:
            j = judgments.get(eid)
            current = None if j is None else {**judgment_value(j), "revision": j.revision}
        else:
            r = reviews.get(eid)
            current = (
                None if r is None else {"answers": dict(r.answers or {}), "comment": r.comment}
            )
        out.append(
            {
                **data,
                "id": rid,
                "kind": "judgment" if entity == CONFLICT_ENTITY else "task_review",
                "entity_id": eid,
                "recorded_at": iso_or_none(changed),
                "status": "open" if resolved is None else "resolved",
                "resolution": None
                if resolved is None
                else {**resolved[0], "by": resolved[1], "at": iso_or_none(resolved[2])},
                "current": current,
            }
        )
    return out


@dataclass
class Resolution:
    """What :func:`resolve_conflict` did."""

    conflict_id: int
    kind: str
    keep: str
    by: str
    note: str | None
    previous: dict[str, Any]
    """The database's value before the resolution."""
    value: dict[str, Any]
    """The value current after it."""
    changed: bool
    """False when the database already held the kept value."""
    revision: int | None
    """The judgment's revision after the resolution (None for a task review)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def resolve_conflict(
    db: Database,
    conflict_id: int,
    keep: str,
    *,
    value: dict[str, Any] | None = None,
    note: str | None = None,
    by: str = "coordinator",
    force: bool = False,
) -> Resolution:
    """Settle one recorded packet conflict: keep the database's value, the packet's, or a new one.

    Nothing is deleted: the conflict row stays, the value replaced (if any) is copied
    into ``revision`` first (as every change is), and the decision itself is kept as a
    ``revision`` row (entity :data:`RESOLUTION_ENTITY`: what was kept, by whom, the
    note). Merging the same packet again afterwards changes nothing.

    Args:
        keep: ``"database"`` (the value stays), ``"packet"`` (the packet's value is
            written), or ``"value"`` (``value`` — ``{"met": …, "level": …}`` — is written,
            with the current rationale and notes; judgments only).
        force: resolve even when the value in the database changed after the conflict
            was recorded (otherwise refused, so no newer verdict is overwritten unseen).

    Raises:
        NotFoundError: no conflict ``conflict_id``, or its judgment or review is gone.
        ConflictError: already resolved, or changed since it was recorded (see ``force``).
        ValidationError: ``keep`` or ``value`` is not valid for this conflict.
    """
    from gradercal.errors import ConflictError, Problem, ValidationError

    if keep not in KEEP_CHOICES:
        raise ValidationError(
            [Problem("resolve", None, "keep", f"must be one of {', '.join(KEEP_CHOICES)}")]
        )
    if (keep == "value") != (value is not None):
        raise ValidationError(
            [Problem("resolve", None, "value", "give a value exactly when keeping a new value")]
        )
    by = " ".join((by or "").replace("\x00", " ").split())[:200] or "coordinator"
    if note is not None:
        note = no_nul(note).strip() or None
    if note is not None and len(note) > MAX_TEXT:
        raise ValidationError([Problem("resolve", None, "note", f"at most {MAX_TEXT} characters")])
    with db.write() as s:
        # Locking the conflict's row serializes two coordinators resolving it at once.
        conflict = s.execute(
            select(m.Revision).where(m.Revision.id == conflict_id).with_for_update()
        ).scalar_one_or_none()
        if conflict is None or conflict.entity not in (CONFLICT_ENTITY, REVIEW_CONFLICT_ENTITY):
            raise NotFoundError(f"no packet conflict with id {conflict_id}")
        earlier = s.execute(
            select(m.Revision.actor, m.Revision.changed_at, m.Revision.data).where(
                m.Revision.entity == RESOLUTION_ENTITY, m.Revision.entity_id == conflict_id
            )
        ).first()
        if earlier is not None:
            raise ConflictError(
                f"conflict {conflict_id} was already resolved by {earlier.actor} at "
                f"{iso_or_none(earlier.changed_at)} (kept {earlier.data.get('keep')})"
            )
        data = dict(conflict.data)
        if conflict.entity == CONFLICT_ENTITY:
            resolution = _resolve_judgment(s, conflict, data, keep, value, force, by)
        else:
            if keep == "value":
                raise ValidationError(
                    [Problem("resolve", None, "keep", "a task review keeps database or packet")]
                )
            resolution = _resolve_review(s, conflict, data, keep, force, by)
        resolution.note = note
        s.add(
            m.Revision(
                entity=RESOLUTION_ENTITY,
                entity_id=conflict_id,
                revision=1,
                data={
                    "keep": keep,
                    "kind": resolution.kind,
                    "previous": resolution.previous,
                    "value": resolution.value,
                    "changed": resolution.changed,
                    "note": note,
                },
                actor=by,
                source="resolve",
                changed_at=m.utcnow(),
            )
        )
    return resolution


def _resolve_judgment(
    s: Session,
    conflict: m.Revision,
    data: dict[str, Any],
    keep: str,
    value: dict[str, Any] | None,
    force: bool,
    by: str,
) -> Resolution:
    from gradercal.errors import ConflictError, Problem, ValidationError

    row = s.execute(
        select(m.Judgment).where(m.Judgment.id == conflict.entity_id).with_for_update()
    ).scalar_one_or_none()
    if row is None:
        raise NotFoundError(f"the judgment of conflict {conflict.id} no longer exists")
    previous = judgment_value(row)
    recorded = data.get("database_revision")
    if not force and recorded is not None and row.revision != recorded:
        raise ConflictError(
            f"the judgment of conflict {conflict.id} changed after the conflict was recorded "
            f"(revision {recorded} then, {row.revision} now): look at it again, or force"
        )
    if keep == "database":
        target = previous
    elif keep == "packet":
        target = {f: data["packet"].get(f) for f in FIELDS}
    else:
        assert value is not None
        unknown = set(value) - {"met", "level"}
        if unknown:
            raise ValidationError(
                [Problem("resolve", None, "value", f"unknown field {sorted(unknown)[0]!r}")]
            )
        target = {**previous, "met": value.get("met"), "level": value.get("level")}
    crit = s.get(m.Criterion, row.criterion_id)
    assert crit is not None
    top = max(int(crit.levels), 2) - 1
    if keep == "value":
        if target["level"] is not None:
            target["met"] = target["level"] == top
        elif target["met"] is not None and int(crit.levels) > 2:
            target["level"] = top if target["met"] else 0
    try:
        checked_value(target, crit.kind, int(crit.levels), f"conflict {conflict.id}")
    except PacketError as exc:
        raise ValidationError([Problem("resolve", None, "value", str(exc))]) from None
    changed = target != previous
    if changed:
        now = m.utcnow()
        s.add(
            m.Revision(
                entity="judgment",
                entity_id=row.id,
                revision=row.revision,
                data=judgment_snapshot(row),
                actor=by,
                source="resolve",
                changed_at=now,
            )
        )
        for f in FIELDS:
            setattr(row, f, target[f])
        if keep == "packet" and data.get("packet_task_version") is not None:
            # the packet's verdict counts under the wording it was given under
            row.task_version = int(data["packet_task_version"])
        row.revision += 1
        row.source = "resolve"
        row.provenance = {"packet_id": data.get("packet_id"), "conflict_id": conflict.id}
        row.updated_at = now
    return Resolution(
        conflict_id=conflict.id,
        kind="judgment",
        keep=keep,
        by=by,
        note=None,
        previous=previous,
        value=target,
        changed=changed,
        revision=row.revision,
    )


def _resolve_review(
    s: Session, conflict: m.Revision, data: dict[str, Any], keep: str, force: bool, by: str
) -> Resolution:
    from gradercal.errors import ConflictError

    row = s.execute(
        select(m.TaskReview).where(m.TaskReview.id == conflict.entity_id).with_for_update()
    ).scalar_one_or_none()
    if row is None:
        raise NotFoundError(f"the task review of conflict {conflict.id} no longer exists")
    previous: dict[str, Any] = {"answers": dict(row.answers or {}), "comment": row.comment}
    if not force and data.get("database") not in (None, previous):
        raise ConflictError(
            f"the task review of conflict {conflict.id} changed after the conflict was "
            "recorded: look at it again, or force"
        )
    target: dict[str, Any] = previous if keep == "database" else dict(data["packet"])
    changed = target != previous
    if changed:
        now = m.utcnow()
        n = s.scalar(
            select(func.count())
            .select_from(m.Revision)
            .where(m.Revision.entity == "task_review", m.Revision.entity_id == row.id)
        )
        s.add(
            m.Revision(
                entity="task_review",
                entity_id=row.id,
                revision=int(n or 0) + 1,
                data={**previous, "updated_at": iso_or_none(row.updated_at)},
                actor=by,
                source="resolve",
                changed_at=now,
            )
        )
        row.answers = dict(target["answers"])
        row.comment = target["comment"]
        row.updated_at = now
    return Resolution(
        conflict_id=conflict.id,
        kind="task_review",
        keep=keep,
        by=by,
        note=None,
        previous=previous,
        value=target,
        changed=changed,
        revision=None,
    )
