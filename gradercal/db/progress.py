"""Coordinator progress from the database: the facts :mod:`gradercal.ops.progress` summarises.

Packets are remembered in ``database_info`` (no table of their own, so no migration):
``packet_export:<packet id>`` holds a JSON record written when the packet is exported
(grader, benchmark, exported and due dates, the queue items it carries) and updated on
every merge (how often, when last). Packets exported before gradercal kept that record
appear once they are merged (from ``packet_generation:<id>``), without a due date.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gradercal.db import models as m
from gradercal.db.repo import Repository
from gradercal.db.session import Database
from gradercal.db.times import stored_utc as _aware
from gradercal.ops.progress import DONE, ItemFact, PacketFact, Progress, TaskFact, summarise

EXPORT_PREFIX = "packet_export:"


def _parse(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return _aware(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        return None


def record_packet_export(
    s: Session,
    *,
    packet_id: str,
    grader: str,
    benchmark: str,
    exported_at: str,
    due_at: datetime | None,
    assignment_ids: Sequence[int],
) -> None:
    """Remember an exported packet (inside the caller's write transaction)."""
    record = {
        "grader": grader,
        "benchmark": benchmark,
        "exported_at": exported_at,
        "due_at": due_at.astimezone(UTC).isoformat() if due_at is not None else None,
        "assignments": sorted(int(a) for a in assignment_ids),
        "merges": 0,
        "last_merged_at": None,
    }
    s.merge(m.DatabaseInfo(key=EXPORT_PREFIX + packet_id, value=json.dumps(record)))


def record_packet_merge(s: Session, packet_id: str, generation: int, when: datetime) -> None:
    """Count a merge of a remembered packet (inside the merge's write transaction).

    Only a newer save counts: merging the same copy again is no new merge, and changes
    nothing (a repeated merge leaves the database exactly as it was)."""
    row = s.get(m.DatabaseInfo, EXPORT_PREFIX + packet_id)
    if row is None:
        return
    try:
        record = json.loads(row.value)
    except ValueError:
        return
    if not isinstance(record, dict) or int(record.get("merged_generation", -1)) >= generation:
        return
    record["merged_generation"] = generation
    record["merges"] = int(record.get("merges") or 0) + 1
    record["last_merged_at"] = when.astimezone(UTC).isoformat()
    row.value = json.dumps(record)


def _packets(s: Session, benchmark: str, status_of: dict[int, str]) -> list[PacketFact]:
    rows = s.execute(
        select(m.DatabaseInfo.key, m.DatabaseInfo.value).where(
            m.DatabaseInfo.key.like(EXPORT_PREFIX + "%")
        )
    ).all()
    out = []
    for key, value in rows:
        try:
            rec = json.loads(value)
        except ValueError:
            continue
        if not isinstance(rec, dict) or rec.get("benchmark") != benchmark:
            continue
        exported = _parse(rec.get("exported_at"))
        if exported is None:
            continue
        ids = [a for a in rec.get("assignments") or [] if isinstance(a, int)]
        # an item removed from the queue since the export no longer waits for anything
        open_items = sum(
            1 for a in ids if status_of.get(a) is not None and status_of[a] not in DONE
        )
        out.append(
            PacketFact(
                packet_id=key[len(EXPORT_PREFIX) :],
                grader=str(rec.get("grader") or ""),
                exported_at=exported,
                due_at=_parse(rec.get("due_at")),
                items=len(ids),
                open_items=open_items,
                merges=int(rec.get("merges") or 0),
                last_merged_at=_parse(rec.get("last_merged_at")),
            )
        )
    return out


def load_progress(
    db: Database,
    benchmark: str | None = None,
    *,
    now: datetime | None = None,
    window_days: int = 7,
) -> Progress:
    """Per grader, packet and task progress of one benchmark (see :mod:`gradercal.ops.progress`)."""
    repo = Repository(db)
    bench = repo.benchmark(benchmark)
    with db.read() as s:
        items = s.execute(
            select(
                m.Assignment.id,
                m.Grader.name,
                m.Task.external_id,
                m.Assignment.status,
                m.Assignment.time_spent_s,
                m.Assignment.updated_at,
                m.Assignment.submitted_at,
            )
            .join(m.Grader, m.Grader.id == m.Assignment.grader_id)
            .join(m.Response, m.Response.id == m.Assignment.response_id)
            .join(m.Task, m.Task.id == m.Response.task_id)
            .where(m.Response.benchmark_id == bench.id)
            .order_by(m.Assignment.id)
        ).all()
        tasks = s.execute(
            select(
                m.Task.external_id,
                m.Task.workflow,
                m.Task.domain,
                select(func.count(m.Response.id))
                .where(m.Response.task_id == m.Task.id)
                .scalar_subquery(),
            )
            .where(m.Task.benchmark_id == bench.id)
            .order_by(m.Task.position, m.Task.id)
        ).all()
        status_of = {int(r[0]): str(r[3]) for r in items}
        packets = _packets(s, bench.name, status_of)
    facts = [
        ItemFact(
            grader=r[1],
            task=r[2],
            status=str(r[3]),
            time_spent_s=float(r[4] or 0.0),
            updated_at=_aware(r[5]),
            submitted_at=_aware(r[6]),
        )
        for r in items
    ]
    return summarise(
        facts,
        [TaskFact(t[0], t[1], t[2], int(t[3] or 0)) for t in tasks],
        packets,
        now=now or datetime.now(UTC),
        window_days=window_days,
    )


__all__ = ["EXPORT_PREFIX", "load_progress", "record_packet_export", "record_packet_merge"]
