"""Export: one grader's share of a benchmark into a sealed packet file.

:func:`export_packet` writes one ``.gcpkg`` file (format: :mod:`gradercal.ops.packet_format`)
holding a small gradercal database with only what the grader needs: their assignments,
the tasks, rubrics, artifacts and responses of those assignments, and their own
judgments and task reviews so far. Models are blinded: a response's model becomes the
grader's code for it (``Response A`` …) and its id an opaque ``r00001``. No other
grader's judgments, no judge verdicts or confidences, no adjudications, no history, no
coordinator data go in — nor an active design's sampling probabilities or draws (the
assignment rows carry NULL there: they would tell the grader where the judge is unsure). The manifest names the source database (its UUID) and carries a seal (an HMAC
under a key kept in the source database's ``database_info``).
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from gradercal import __version__
from gradercal._util.scratch import scratch_dir
from gradercal.db import models as m
from gradercal.db.grading import blinding_code
from gradercal.db.packets._common import finish_sqlite, judgment_value, packet_key, response_digest
from gradercal.db.progress import record_packet_export
from gradercal.db.repo import Repository
from gradercal.db.session import Database, database_id, head_revision, open_database
from gradercal.errors import NotFoundError
from gradercal.model import GraderKind
from gradercal.ops.packet_format import (
    DATABASE,
    EXPORT,
    SUFFIX,
    Manifest,
    PacketError,
    canonical_json,
    compute_seal,
    new_packet_id,
    sha256_file,
    utc_stamp,
    write_packet,
)


@dataclass
class ExportReport:
    path: str
    packet_id: str
    grader: str
    benchmark: str
    assignments: int
    tasks: int
    responses: int
    criteria: int
    artifacts: int
    blobs: int
    judgments: int
    task_reviews: int
    bytes: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def export_packet(
    db: Database,
    grader: str,
    out_path: str | os.PathLike[str],
    *,
    benchmark: str | None = None,
    due_at: datetime | None = None,
) -> ExportReport:
    """Write one grader's share of a benchmark to a ``.gcpkg`` file (see the module docstring).

    An existing file at ``out_path`` is replaced atomically (never half-written). The
    database remembers the packet (for ``gradercal progress``: out, overdue after
    ``due_at``, returned), see :mod:`gradercal.db.progress`.

    Raises:
        NotFoundError: unknown benchmark or grader, or a grader without assignments.
        PacketError: the output path is not a ``.gcpkg`` file or cannot be written.
    """
    started = time.perf_counter()
    out = Path(out_path).expanduser().absolute()
    _check_suffix(out)
    if db.is_sqlite and db.url.database and out.resolve() == Path(db.url.database).resolve():
        raise PacketError(f"{out} is the database itself; choose another file name")
    bench = Repository(db).benchmark(benchmark)
    key = packet_key(db, create=True)
    assert key is not None
    source_id = database_id(db)
    packet_id = new_packet_id()
    created = utc_stamp()
    try:
        counts, carried = _write_export(db, bench, grader, out, key, source_id, packet_id, created)
    except OSError as exc:
        raise PacketError(f"cannot write the packet {out}: {exc.strerror or exc}") from None
    with db.write() as s:
        record_packet_export(
            s,
            packet_id=packet_id,
            grader=grader,
            benchmark=bench.name,
            exported_at=created,
            due_at=due_at,
            assignment_ids=carried,
        )
    return ExportReport(
        path=str(out),
        packet_id=packet_id,
        grader=grader,
        benchmark=bench.name,
        assignments=counts["assignments"],
        tasks=counts["tasks"],
        responses=counts["responses"],
        criteria=counts["criteria"],
        artifacts=counts["artifacts"],
        blobs=counts["blobs"],
        judgments=counts["judgments"],
        task_reviews=counts["task_reviews"],
        bytes=out.stat().st_size,
        seconds=round(time.perf_counter() - started, 3),
    )


def _check_suffix(out_path: Path) -> None:
    if out_path.suffix.lower() != SUFFIX:
        raise PacketError(f"{out_path}: a packet file name must end in {SUFFIX}")


def _write_export(
    db: Database,
    bench: m.Benchmark,
    grader: str,
    out: Path,
    key: bytes,
    source_id: str,
    packet_id: str,
    created: str,
) -> tuple[dict[str, int], list[int]]:
    out.parent.mkdir(parents=True, exist_ok=True)
    with scratch_dir(".gcpkg-", out.parent) as tmp:
        sqlite_path = tmp / DATABASE
        pdb = open_database(sqlite_path)
        try:
            with db.read() as s, pdb.write() as p:
                _repeatable_read(db, s)
                counts, record = _copy_share(s, p, bench, grader, packet_id)
                p.add(m.DatabaseInfo(key="packet_id", value=packet_id))
                p.add(m.DatabaseInfo(key="packet_source_database_id", value=source_id))
        finally:
            pdb.dispose()
        finish_sqlite(sqlite_path)
        record.update(
            {
                "format_version": 1,
                "packet_id": packet_id,
                "database_id": source_id,
                "benchmark": bench.name,
                "grader": grader,
                "created_at": created,
            }
        )
        export_path = tmp / EXPORT
        export_path.write_bytes(canonical_json(record))
        manifest = Manifest(
            packet_id=packet_id,
            database_id=source_id,
            benchmark=bench.name,
            grader=grader,
            created_at=created,
            files={EXPORT: sha256_file(export_path), DATABASE: sha256_file(sqlite_path)},
            generation=0,
            saved_at=created,
            gradercal_version=__version__,
            schema_revision=head_revision(),
            counts=counts,
        )
        manifest = _sealed(manifest, key)
        write_packet(out, manifest, export_path, sqlite_path)
    return counts, [int(a["id"]) for a in record["assignments"]]


def _sealed(manifest: Manifest, key: bytes) -> Manifest:
    from dataclasses import replace

    return replace(manifest, seal=compute_seal(key, manifest))


def _repeatable_read(db: Database, s: Session) -> None:
    """One snapshot for the whole read (PostgreSQL; SQLite transactions are snapshots)."""
    if not db.is_sqlite:
        s.connection(execution_options={"isolation_level": "REPEATABLE READ"})


def _copy_share(
    s: Session, p: Session, bench: m.Benchmark, grader: str, packet_id: str
) -> tuple[dict[str, int], dict[str, Any]]:
    """Copy the grader's share from ``s`` (source) into ``p`` (the new packet database)."""
    g = s.execute(
        select(m.Grader.id, m.Grader.name, m.Grader.kind).where(m.Grader.name == grader)
    ).first()
    if g is None or g.kind != GraderKind.HUMAN.value:
        raise NotFoundError(f"no human grader named {grader!r}")
    assignments = s.execute(
        select(m.Assignment, m.Response.task_id)
        .join(m.Response, m.Response.id == m.Assignment.response_id)
        .where(m.Assignment.grader_id == g.id, m.Response.benchmark_id == bench.id)
        .order_by(m.Assignment.position, m.Assignment.id)
    ).all()
    if not assignments:
        raise NotFoundError(
            f"grader {grader!r} has no assignments in benchmark {bench.name!r}; "
            "run `gradercal assign` first"
        )
    response_ids = [a.response_id for a, _t in assignments]
    task_ids = sorted({t for _a, t in assignments})
    responses = {
        r.id: r for r in s.scalars(select(m.Response).where(m.Response.id.in_(response_ids)))
    }
    tasks = list(s.scalars(select(m.Task).where(m.Task.id.in_(task_ids)).order_by(m.Task.id)))
    criteria = list(
        s.scalars(
            select(m.Criterion).where(m.Criterion.task_id.in_(task_ids)).order_by(m.Criterion.id)
        )
    )
    artifacts = list(
        s.scalars(
            select(m.Artifact).where(m.Artifact.task_id.in_(task_ids)).order_by(m.Artifact.id)
        )
    )
    judgments = list(
        s.scalars(
            select(m.Judgment)
            .where(m.Judgment.grader_id == g.id, m.Judgment.response_id.in_(response_ids))
            .order_by(m.Judgment.id)
        )
    )
    reviews = list(
        s.scalars(
            select(m.TaskReview)
            .where(m.TaskReview.grader_id == g.id, m.TaskReview.task_id.in_(task_ids))
            .order_by(m.TaskReview.id)
        )
    )
    now = m.utcnow()
    p.execute(
        insert(m.Benchmark).values(
            id=bench.id,
            name=bench.name,
            pass_threshold=bench.pass_threshold,
            format_version=bench.format_version,
            created_at=bench.created_at,
            instructions=bench.instructions,  # the grading instructions travel with the work
        )
    )
    p.execute(
        insert(m.Grader).values(
            id=g.id, name=g.name, kind=GraderKind.HUMAN.value, parameters={}, created_at=now
        )
    )
    task_ext = {t.id: t.external_id for t in tasks}
    _bulk(
        p,
        m.Task,
        [
            {
                "id": t.id,
                "benchmark_id": bench.id,
                "external_id": t.external_id,
                "position": t.position,
                "prompt": t.prompt,
                "workflow": t.workflow,
                "domain": t.domain,
                "answer_format": t.answer_format,
                "tags": t.tags,
                "metadata": t.meta,
                "content_hash": t.content_hash,
                "created_at": t.created_at,
                "version": t.version,
            }
            for t in tasks
        ],
    )
    # the earlier versions of revised tasks: the grading view shows what changed since
    # a verdict given under one (gradercal.db.revisions)
    _bulk(
        p,
        m.ContentVersion,
        [
            {c.name: getattr(v, c.key) for c in m.ContentVersion.__mapper__.columns}
            for v in s.scalars(
                select(m.ContentVersion)
                .where(m.ContentVersion.task_id.in_(task_ids))
                .order_by(m.ContentVersion.id)
            )
        ],
    )
    _bulk(
        p,
        m.Criterion,
        [
            {
                c.name: getattr(crit, c.key)
                for c in m.Criterion.__mapper__.columns  # every column, same values
            }
            for crit in criteria
        ],
    )
    blobs = sorted({a.sha256 for a in artifacts if a.sha256})
    for start in range(0, len(blobs), 32):
        rows = s.execute(
            select(m.Blob.sha256, m.Blob.size, m.Blob.data, m.Blob.created_at).where(
                m.Blob.sha256.in_(blobs[start : start + 32])
            )
        ).all()
        _bulk(
            p,
            m.Blob,
            [{"sha256": h, "size": n, "data": d, "created_at": c} for h, n, d, c in rows],
        )
    _bulk(
        p,
        m.Artifact,
        [{c.name: getattr(a, c.key) for c in m.Artifact.__mapper__.columns} for a in artifacts],
    )
    # responses: new ids in queue order, blinded model and id
    ranks: dict[int, int] = defaultdict(int)
    new_rid: dict[int, int] = {}
    response_rows: list[dict[str, Any]] = []
    assignment_rows: list[dict[str, Any]] = []
    record_assignments: list[dict[str, Any]] = []
    for n, (a, task_pk) in enumerate(assignments, start=1):
        r = responses[a.response_id]
        code = blinding_code(ranks[task_pk])
        ranks[task_pk] += 1
        new_rid[r.id] = n
        digest = response_digest(r.text, r.answer)
        response_rows.append(
            {
                "id": n,
                "benchmark_id": bench.id,
                "task_id": task_pk,
                "external_id": f"r{n:05d}",
                "model": code,
                "text": r.text,
                "answer": r.answer,
                "content_hash": digest,
                "created_at": now,
            }
        )
        assignment_rows.append(
            {
                "id": a.id,
                "grader_id": g.id,
                "response_id": n,
                "status": a.status,
                "position": a.position,
                "time_spent_s": a.time_spent_s,
                "calibration": a.calibration,
                "skip_reason": a.skip_reason,
                "created_at": a.created_at,
                "updated_at": a.updated_at,
                "submitted_at": a.submitted_at,
                # blinding: the active design's sampling probability and draw stay with
                # the coordinator (`gradercal export assignments`); a grader who knew
                # them would know where the judge is unsure
                "inclusion_probability": None,
                "sampling_round": None,
            }
        )
        record_assignments.append(
            {
                "id": a.id,
                "task_id": task_ext[task_pk],
                "response_sha256": digest,
                "position": a.position,
                "status": a.status,
                "skip_reason": a.skip_reason,
                "time_spent_s": float(a.time_spent_s or 0.0),
                "calibration": bool(a.calibration),
            }
        )
    _bulk(p, m.Response, response_rows)
    _bulk(p, m.Assignment, assignment_rows)
    assignment_of = {a.response_id: a.id for a, _t in assignments}
    crit_ext = {c.id: c.external_id for c in criteria}
    _bulk(
        p,
        m.Judgment,
        [
            {
                "grader_id": g.id,
                "response_id": new_rid[j.response_id],
                "criterion_id": j.criterion_id,
                **judgment_value(j),
                "source": j.source,
                "revision": j.revision,
                "created_at": j.created_at,
                "updated_at": j.updated_at,
                "task_version": j.task_version,
            }
            for j in judgments
        ],
    )
    _bulk(
        p,
        m.TaskReview,
        [
            {
                "task_id": r.task_id,
                "grader_id": g.id,
                "answers": r.answers,
                "comment": r.comment,
                "created_at": r.created_at,
                "updated_at": r.updated_at,
            }
            for r in reviews
        ],
    )
    # answered clarifications of the packet's criteria travel out, so the Guidelines panel
    # shows them offline; who asked what stays with the coordinators (as in team mode)
    _bulk(
        p,
        m.Clarification,
        [
            {
                "benchmark_id": c.benchmark_id,
                "task_id": c.task_id,
                "criterion_id": c.criterion_id,
                "status": c.status,
                "question": "",
                "asked_by": "",
                "asked_at": c.asked_at,
                "answer": c.answer,
                "answered_by": c.answered_by,
                "answered_at": c.answered_at,
                "updated_at": c.updated_at,
            }
            for c in s.scalars(
                select(m.Clarification)
                .where(m.Clarification.task_id.in_(task_ids), m.Clarification.answer.is_not(None))
                .order_by(m.Clarification.id)
            )
        ],
    )
    record = {
        "assignments": record_assignments,
        "judgments": [
            {
                "assignment_id": assignment_of[j.response_id],
                "criterion_id": crit_ext[j.criterion_id],
                "revision": j.revision,
                "value": judgment_value(j),
            }
            for j in judgments
        ],
        "reviews": [
            {"task_id": task_ext[r.task_id], "answers": r.answers or {}, "comment": r.comment}
            for r in reviews
        ],
    }
    counts = {
        "assignments": len(assignments),
        "tasks": len(tasks),
        "responses": len(response_rows),
        "criteria": len(criteria),
        "artifacts": len(artifacts),
        "blobs": len(blobs),
        "judgments": len(judgments),
        "task_reviews": len(reviews),
    }
    return counts, record


def _bulk(p: Session, table: type[m.Base], rows: Sequence[dict[str, Any]]) -> None:
    if rows:
        p.execute(insert(table), list(rows))
