"""Grading packets: export one grader's work to a file, grade it offline, merge it back.

:func:`export_packet` writes one ``.gcpkg`` file (format: :mod:`gradercal.ops.packet_format`)
holding a small gradercal database with only what the grader needs: their assignments,
the tasks, rubrics, artifacts and responses of those assignments, and their own
judgments and task reviews so far. Models are blinded: a response's model becomes the
grader's code for it (``Response A`` …) and its id an opaque ``r00001``. No other
grader's judgments, no judge verdicts, no adjudications, no history, no coordinator data
go in. The manifest names the source database (its UUID) and carries a seal (an HMAC
under a key kept in the source database's ``database_info``).

:func:`open_packet` unpacks a packet into a working folder next to it and returns a
:class:`PacketSession` whose ``db`` the app grades into with
:class:`~gradercal.db.grading.GradingStore`; :meth:`PacketSession.save` packs the working
database back into the file (atomically). Every judgment is committed to the working
database at once, so a crash loses nothing: reopening the packet resumes from the
working folder.

:func:`merge_packet` brings the work back, in one transaction, after checking the
packet against its manifest, its seal, the database it came from and the database's
current content. For every judgment it compares three versions: at export (the export
record), in the packet, and in the database now (see
:func:`gradercal.ops.packet_format.decide`). Changed only in the packet: written, with the
old value and any intermediate values the grader entered offline kept as revisions.
Changed on both sides: a **conflict** — the database keeps its value, the packet's is
stored beside it (``revision`` rows with ``entity = 'packet_conflict'``) and reported;
nothing is overwritten. Merging the same packet again changes nothing.

:func:`list_conflicts` lists the conflicts kept, :func:`resolve_conflict` settles one
(keep the database's value, the packet's, or a new verdict), keeping the replaced value
and the decision in ``revision``.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import sqlite3
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

from sqlalchemy import Table, bindparam, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gradercal import __version__
from gradercal.db import models as m
from gradercal.db.grading import blinding_code
from gradercal.db.repo import Repository, judgment_snapshot
from gradercal.db.session import Database, database_id, head_revision, open_database
from gradercal.errors import NotFoundError
from gradercal.model import AssignmentStatus, CriterionKind, GraderKind
from gradercal.ops.packet_format import (
    DATABASE,
    EXPORT,
    MANIFEST,
    SUFFIX,
    Limits,
    Manifest,
    PacketError,
    canonical_json,
    compute_seal,
    decide,
    new_packet_id,
    read_packet,
    sha256_file,
    utc_stamp,
    verify_seal,
    write_packet,
)

__all__ = [
    "CONFLICT_ENTITY",
    "RESOLUTION_ENTITY",
    "ExportReport",
    "MergeConflict",
    "MergeReport",
    "PacketSession",
    "Resolution",
    "export_packet",
    "list_conflicts",
    "merge_packet",
    "open_packet",
    "packet_info",
    "resolve_conflict",
]

#: ``database_info`` key of the secret that seals this database's packets.
PACKET_KEY = "packet_key"
#: ``revision.entity`` of a judgment value from a packet that conflicted (kept, not applied).
CONFLICT_ENTITY = "packet_conflict"
#: ``revision.entity`` of a task review from a packet that conflicted.
REVIEW_CONFLICT_ENTITY = "packet_conflict_review"
#: ``revision.entity`` of an assignment state change made by a merge (old and new value).
ASSIGNMENT_MERGE_ENTITY = "packet_merge_assignment"
#: ``revision.entity`` of a task review written by a merge (packet id and new value).
REVIEW_MERGE_ENTITY = "packet_merge_review"
#: Longest free text (rationale, note, comment) accepted from a packet.
MAX_TEXT = 200_000
#: Stop reading a packet database after this many seconds (a crafted file could be slow).
READ_DEADLINE_S = 120.0

_JUDGMENT_TABLE = cast(Table, m.Judgment.__table__)
_REVISION_TABLE = cast(Table, m.Revision.__table__)
_ASSIGNMENT_TABLE = cast(Table, m.Assignment.__table__)
_FIELDS = ("met", "level", "confidence", "rationale", "unclear", "unclear_note")
_FINAL = {AssignmentStatus.SUBMITTED.value, AssignmentStatus.SKIPPED.value}
_STATUSES = {s.value for s in AssignmentStatus}


# -- reports --------------------------------------------------------------------------------
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


@dataclass(frozen=True)
class MergeConflict:
    """One value changed both in the packet and in the database since the export."""

    kind: str  # "judgment", "task_review" or "status"
    task_id: str
    response_id: str | None
    criterion_id: str | None
    base: Any
    packet: Any
    database: Any
    new: bool
    """True when this merge recorded it; False when an earlier merge already had."""


@dataclass
class MergeReport:
    """What a merge did. ``changed`` is False when the database was left as it was."""

    path: str
    packet_id: str
    grader: str
    benchmark: str
    generation: int
    judgments_added: int = 0
    judgments_updated: int = 0
    judgments_unchanged: int = 0
    """Not changed in the packet since the export."""
    judgments_already: int = 0
    """Already in the database with the packet's value (merged before)."""
    history_added: int = 0
    """Intermediate values entered offline, kept as revisions."""
    assignments_updated: int = 0
    reviews_added: int = 0
    reviews_updated: int = 0
    conflicts: list[MergeConflict] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """E.g. the packet's working folder holds grading not yet packed into this file."""
    seconds: float = 0.0

    @property
    def new_conflicts(self) -> int:
        return sum(1 for c in self.conflicts if c.new)

    @property
    def changed(self) -> bool:
        return bool(
            self.judgments_added
            or self.judgments_updated
            or self.assignments_updated
            or self.reviews_added
            or self.reviews_updated
            or self.new_conflicts
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["changed"] = self.changed
        out["new_conflicts"] = self.new_conflicts
        return out


# -- keys and small helpers ----------------------------------------------------------------
def _packet_key(db: Database, *, create: bool) -> bytes | None:
    """The database's packet sealing key (created on first export)."""
    with db.read() as s:
        row = s.get(m.DatabaseInfo, PACKET_KEY)
        if row is not None:
            return bytes.fromhex(row.value)
    if not create:
        return None
    try:
        with db.write() as s:
            if s.get(m.DatabaseInfo, PACKET_KEY) is None:
                s.add(m.DatabaseInfo(key=PACKET_KEY, value=secrets.token_hex(32)))
    except IntegrityError:  # another client created it at the same moment
        pass
    return _packet_key(db, create=False)


def response_digest(text: str, answer: Any) -> str:
    """sha256 of a response's content (never its model or id)."""
    return hashlib.sha256(canonical_json([text, answer])).hexdigest()


def _value(row: Any) -> dict[str, Any]:
    """A judgment's comparable value."""
    conf = getattr(row, "confidence", None)
    return {
        "met": None if row.met is None else bool(row.met),
        "level": None if row.level is None else int(row.level),
        "confidence": None if conf is None else float(conf),
        "rationale": row.rationale,
        "unclear": bool(row.unclear),
        "unclear_note": row.unclear_note,
    }


def _iso(dt: datetime | None) -> str | None:
    return None if dt is None else dt.isoformat()


def _parse_dt(value: Any, what: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str) or len(value) > 64:
        raise PacketError(f"packet database: {what} is not a timestamp")
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        raise PacketError(f"packet database: {what} is not a timestamp ({value!r})") from None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _check_suffix(out_path: Path) -> None:
    if out_path.suffix.lower() != SUFFIX:
        raise PacketError(f"{out_path}: a packet file name must end in {SUFFIX}")


# -- export -----------------------------------------------------------------------------------
def export_packet(
    db: Database, grader: str, out_path: str | os.PathLike[str], *, benchmark: str | None = None
) -> ExportReport:
    """Write one grader's share of a benchmark to a ``.gcpkg`` file (see the module docstring).

    An existing file at ``out_path`` is replaced atomically (never half-written).

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
    key = _packet_key(db, create=True)
    assert key is not None
    source_id = database_id(db)
    packet_id = new_packet_id()
    created = utc_stamp()
    try:
        counts = _write_export(db, bench, grader, out, key, source_id, packet_id, created)
    except OSError as exc:
        raise PacketError(f"cannot write the packet {out}: {exc.strerror or exc}") from None
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


def _write_export(
    db: Database,
    bench: m.Benchmark,
    grader: str,
    out: Path,
    key: bytes,
    source_id: str,
    packet_id: str,
    created: str,
) -> dict[str, int]:
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".gcpkg-", dir=out.parent) as tmp_name:
        tmp = Path(tmp_name)
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
        _finish_sqlite(sqlite_path)
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
    return counts


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
            }
            for t in tasks
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
                **_value(j),
                "source": j.source,
                "revision": j.revision,
                "created_at": j.created_at,
                "updated_at": j.updated_at,
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
    record = {
        "assignments": record_assignments,
        "judgments": [
            {
                "assignment_id": assignment_of[j.response_id],
                "criterion_id": crit_ext[j.criterion_id],
                "revision": j.revision,
                "value": _value(j),
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


def _finish_sqlite(path: Path) -> None:
    """Fold the WAL into the file so that the file alone is the whole database."""
    conn = sqlite3.connect(str(path))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise PacketError(f"could not finish {path.name}: its write-ahead log is not empty")


# -- reading a packet database (raw sqlite3: nothing in it is trusted) -------------------------
@dataclass
class _PJudgment:
    id: int
    assignment_id: int
    task_id: str
    criterion_id: str
    value: dict[str, Any]
    revision: int
    created_at: datetime | None
    updated_at: datetime | None
    history: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _PAssignment:
    id: int
    task_id: str
    response_sha256: str
    status: str
    skip_reason: str | None
    time_spent_s: float
    submitted_at: datetime | None


@dataclass
class _PReview:
    task_id: str
    answers: dict[str, Any]
    comment: str | None
    updated_at: datetime | None
    history: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _PacketContent:
    grader: str
    assignments: dict[int, _PAssignment]
    judgments: list[_PJudgment]
    reviews: list[_PReview]
    ignored: list[str]


_REQUIRED = {
    "grader": ("id", "name", "kind"),
    "task": ("id", "external_id"),
    "criterion": ("id", "task_id", "external_id"),
    "response": ("id", "task_id", "text", "answer"),
    "assignment": (
        "id",
        "grader_id",
        "response_id",
        "status",
        "time_spent_s",
        "skip_reason",
        "submitted_at",
    ),
    "judgment": (
        "id",
        "grader_id",
        "response_id",
        "criterion_id",
        *_FIELDS,
        "revision",
        "created_at",
        "updated_at",
    ),
    "task_review": ("id", "task_id", "grader_id", "answers", "comment", "updated_at"),
    "revision": ("entity", "entity_id", "revision", "data", "changed_at"),
}


def _connect_packet_db(path: Path) -> sqlite3.Connection:
    uri = f"file:{quote(str(path))}?mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise PacketError(f"packet database cannot be opened: {exc}") from None
    deadline = time.monotonic() + READ_DEADLINE_S
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    return conn


def _read_packet_db(path: Path, manifest: Manifest) -> _PacketContent:
    conn = _connect_packet_db(path)
    try:
        return _read_packet_rows(conn, manifest)
    except PacketError:
        raise
    except sqlite3.Error as exc:
        raise PacketError(
            f"packet database is damaged or not a gradercal database: {exc}"
        ) from None
    finally:
        conn.close()


def _read_packet_rows(conn: sqlite3.Connection, manifest: Manifest) -> _PacketContent:
    try:
        conn.execute("PRAGMA trusted_schema = OFF")
        check = [r[0] for r in conn.execute("PRAGMA quick_check(5)")]
    except sqlite3.Error as exc:
        raise PacketError(f"packet database is damaged or not a database: {exc}") from None
    if check != ["ok"]:
        raise PacketError(f"packet database is damaged: {'; '.join(map(str, check))[:300]}")
    kinds = dict(conn.execute("SELECT name, type FROM sqlite_master"))
    for table, columns in _REQUIRED.items():
        if kinds.get(table) != "table":
            raise PacketError(f"packet database has no {table!r} table: not a gradercal packet")
        have = {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}
        lacking = [c for c in columns if c not in have]
        if lacking:
            raise PacketError(f"packet database: table {table!r} lacks {', '.join(lacking)}")
    graders = {
        _int(gid, "grader.id"): name
        for gid, name, _kind in conn.execute("SELECT id, name, kind FROM grader")
    }
    gids = [gid for gid, name in graders.items() if name == manifest.grader]
    if len(gids) != 1:
        raise PacketError(
            f"packet database has no grader {manifest.grader!r}: it does not match its manifest"
        )
    gid = gids[0]
    ignored: list[str] = []
    others = sorted(
        str(name)
        for (name,) in conn.execute(
            "SELECT DISTINCT g.name FROM judgment j JOIN grader g ON g.id = j.grader_id "
            "WHERE j.grader_id != ?",
            (gid,),
        )
    )
    if others:
        ignored.append(
            "judgments entered under other names in the packet were not merged: "
            + ", ".join(repr(o) for o in others)
        )
    tasks = {
        _int(i, "task.id"): _text(e, "task.external_id", 200)
        for i, e in conn.execute("SELECT id, external_id FROM task")
    }
    crits = {
        _int(i, "criterion.id"): (
            _int(t, "criterion.task_id"),
            _text(e, "criterion.external_id", 200),
        )
        for i, t, e in conn.execute("SELECT id, task_id, external_id FROM criterion")
    }
    responses: dict[int, tuple[int, str]] = {}
    for rid, tid, text, answer in conn.execute("SELECT id, task_id, text, answer FROM response"):
        value = _json(answer, "response.answer") if answer is not None else None
        responses[_int(rid, "response.id")] = (
            _int(tid, "response.task_id"),
            response_digest(_text(text, "response.text", None), value),
        )
    assignments: dict[int, _PAssignment] = {}
    assignment_of: dict[int, int] = {}
    for aid, agid, rid, status, spent, reason, submitted in conn.execute(
        "SELECT id, grader_id, response_id, status, time_spent_s, skip_reason, submitted_at "
        "FROM assignment"
    ):
        if agid != gid:
            continue
        aid = _int(aid, "assignment.id")
        rid = _int(rid, "assignment.response_id")
        if rid not in responses:
            raise PacketError(f"packet database: assignment {aid} has no response")
        if status not in _STATUSES:
            raise PacketError(f"packet database: assignment {aid} has an unknown status")
        task_pk, digest = responses[rid]
        if task_pk not in tasks:
            raise PacketError(f"packet database: assignment {aid} has no task")
        assignments[aid] = _PAssignment(
            id=aid,
            task_id=tasks[task_pk],
            response_sha256=digest,
            status=str(status),
            skip_reason=_opt_text(reason, "assignment.skip_reason"),
            time_spent_s=_float(spent, "assignment.time_spent_s"),
            submitted_at=_parse_dt(submitted, "assignment.submitted_at"),
        )
        assignment_of[rid] = aid
    judgments: dict[int, _PJudgment] = {}
    for row in conn.execute(
        "SELECT id, grader_id, response_id, criterion_id, met, level, confidence, rationale, "
        "unclear, unclear_note, revision, created_at, updated_at FROM judgment WHERE grader_id = ?",
        (gid,),
    ):
        jid, _g, rid, cid = row[:4]
        aid = assignment_of.get(rid)
        if aid is None:
            raise PacketError(
                "packet database: a judgment is not on one of the grader's assignments"
            )
        crit = crits.get(cid)
        if crit is None or crit[0] != responses[rid][0]:
            raise PacketError("packet database: a judgment's criterion is not in its task")
        judgments[_int(jid, "judgment.id")] = _PJudgment(
            id=int(jid),
            assignment_id=aid,
            task_id=tasks[crit[0]],
            criterion_id=crit[1],
            value=_judgment_value(row[4:10]),
            revision=_int(row[10], "judgment.revision"),
            created_at=_parse_dt(row[11], "judgment.created_at"),
            updated_at=_parse_dt(row[12], "judgment.updated_at"),
        )
    reviews: dict[int, _PReview] = {}
    for rid, tid, rgid, answers, comment, updated in conn.execute(
        "SELECT id, task_id, grader_id, answers, comment, updated_at FROM task_review"
    ):
        if rgid != gid:
            continue
        if tid not in tasks:
            raise PacketError("packet database: a task review is on an unknown task")
        parsed = _json(answers, "task_review.answers") if answers is not None else {}
        if not isinstance(parsed, dict) or not all(
            isinstance(k, str) and _is_int(v) for k, v in parsed.items()
        ):
            raise PacketError("packet database: task_review.answers is malformed")
        reviews[_int(rid, "task_review.id")] = _PReview(
            task_id=tasks[tid],
            answers=parsed,
            comment=_opt_text(comment, "task_review.comment"),
            updated_at=_parse_dt(updated, "task_review.updated_at"),
        )
    for entity, entity_id, rev, data, changed in conn.execute(
        "SELECT entity, entity_id, revision, data, changed_at FROM revision "
        "WHERE entity IN ('judgment', 'task_review') ORDER BY entity_id, revision, id"
    ):
        target: _PJudgment | _PReview | None = (
            judgments.get(entity_id) if entity == "judgment" else reviews.get(entity_id)
        )
        if target is None:
            continue
        snap = _json(data, "revision.data")
        if not isinstance(snap, dict):
            raise PacketError("packet database: revision.data is malformed")
        item: dict[str, Any] = {
            "revision": _int(rev, "revision.revision"),
            "changed_at": _parse_dt(changed, "revision.changed_at"),
        }
        if entity == "judgment":
            item["value"] = _judgment_value(tuple(snap.get(f) for f in _FIELDS))
            item["source"] = _opt_text(snap.get("source"), "revision.data.source")
            item["updated_at"] = _opt_text(snap.get("updated_at"), "revision.data.updated_at")
        else:
            answers = snap.get("answers") or {}
            if not isinstance(answers, dict):
                raise PacketError("packet database: revision.data.answers is malformed")
            item["value"] = {
                "answers": answers,
                "comment": _opt_text(snap.get("comment"), "comment"),
            }
        target.history.append(item)
    return _PacketContent(
        grader=manifest.grader,
        assignments=assignments,
        judgments=list(judgments.values()),
        reviews=list(reviews.values()),
        ignored=ignored,
    )


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int(v: Any, what: str) -> int:
    if not _is_int(v):
        raise PacketError(f"packet database: {what} must be a whole number")
    return int(v)


def _float(v: Any, what: str) -> float:
    if (
        not isinstance(v, int | float)
        or isinstance(v, bool)
        or v != v
        or v in (float("inf"), float("-inf"))
    ):
        raise PacketError(f"packet database: {what} must be a number")
    return float(v)


def _text(v: Any, what: str, limit: int | None) -> str:
    if not isinstance(v, str):
        raise PacketError(f"packet database: {what} must be text")
    if limit is not None and len(v) > limit:
        raise PacketError(f"packet database: {what} is longer than {limit} characters")
    return v


def _opt_text(v: Any, what: str) -> str | None:
    return None if v is None else _text(v, what, MAX_TEXT)


def _json(v: Any, what: str) -> Any:
    if isinstance(v, bytes):
        raise PacketError(f"packet database: {what} must be JSON text")
    if not isinstance(v, str):
        return v
    try:
        return json.loads(v)
    except (ValueError, RecursionError):
        raise PacketError(f"packet database: {what} is not valid JSON") from None


def _bool(v: Any, what: str, *, nullable: bool) -> bool | None:
    if v is None and nullable:
        return None
    if isinstance(v, bool):
        return v
    if _is_int(v) and v in (0, 1):
        return bool(v)
    raise PacketError(f"packet database: {what} must be true or false")


def _judgment_value(raw: Sequence[Any]) -> dict[str, Any]:
    met, level, conf, rationale, unclear, note = raw
    return {
        "met": _bool(met, "judgment.met", nullable=True),
        "level": None if level is None else _int(level, "judgment.level"),
        "confidence": None if conf is None else _float(conf, "judgment.confidence"),
        "rationale": _opt_text(rationale, "judgment.rationale"),
        "unclear": bool(
            _bool(unclear if unclear is not None else 0, "judgment.unclear", nullable=False)
        ),
        "unclear_note": _opt_text(note, "judgment.unclear_note"),
    }


# -- the export record (export.json) ------------------------------------------------------------
@dataclass
class _Record:
    assignments: dict[int, dict[str, Any]]
    judgments: dict[
        tuple[int, str], dict[str, Any]
    ]  # (assignment id, criterion) → {revision, value}
    reviews: dict[str, dict[str, Any]]  # task id → {answers, comment}


def _read_record(path: Path, manifest: Manifest) -> _Record:
    try:
        raw = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise PacketError(f"{EXPORT} is not valid JSON") from None
    if not isinstance(raw, dict):
        raise PacketError(f"{EXPORT} must hold a JSON object")
    for k in ("packet_id", "database_id", "grader", "benchmark"):
        if raw.get(k) != getattr(manifest, k):
            raise PacketError(f"{EXPORT}: {k} does not match the manifest")
    try:
        assignments = {int(a["id"]): a for a in raw["assignments"]}
        for a in assignments.values():
            assert isinstance(a["task_id"], str) and isinstance(a["response_sha256"], str)
            assert a["status"] in _STATUSES
            float(a["time_spent_s"])
        judgments = {
            (int(j["assignment_id"]), str(j["criterion_id"])): {
                "revision": int(j["revision"]),
                "value": {f: j["value"][f] for f in _FIELDS},
            }
            for j in raw["judgments"]
        }
        reviews = {
            str(r["task_id"]): {"answers": dict(r["answers"]), "comment": r["comment"]}
            for r in raw["reviews"]
        }
    except (KeyError, TypeError, ValueError, AssertionError):
        raise PacketError(f"{EXPORT} is malformed") from None
    return _Record(assignments, judgments, reviews)


# -- merge -------------------------------------------------------------------------------------
def merge_packet(
    db: Database, path: str | os.PathLike[str], *, limits: Limits | None = None
) -> MergeReport:
    """Merge a packet's judgments, task reviews and queue state into the database.

    Idempotent; conflicts are kept and reported, never overwritten (module docstring).

    Raises:
        PacketError: the packet is damaged, unsafe, altered, belongs to another
            database, or no longer matches this database; the database is unchanged.
    """
    started = time.perf_counter()
    src = Path(path)
    with tempfile.TemporaryDirectory(prefix="gradercal-merge-") as tmp_name:
        tmp = Path(tmp_name)
        manifest = read_packet(src, tmp, limits)
        _check_belongs(db, manifest, src)
        record = _read_record(tmp / EXPORT, manifest)
        content = _read_packet_db(tmp / DATABASE, manifest)
    _check_content(content, record)
    if not db.is_sqlite:
        _strip_nul(content, record)
    report = MergeReport(
        path=str(src),
        packet_id=manifest.packet_id,
        grader=manifest.grader,
        benchmark=manifest.benchmark,
        generation=manifest.generation,
        ignored=list(content.ignored),
        warnings=_unpacked_work(src, manifest),
    )
    for attempt in (1, 2, 3):
        try:
            _merge(db, manifest, record, content, report)
            break
        except IntegrityError:  # a concurrent writer inserted the same row: try again
            if attempt == 3:
                raise
            _reset(report)
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _unpacked_work(src: Path, manifest: Manifest) -> list[str]:
    """A warning when the packet's working folder (beside it) holds work this file lacks.

    The app commits every judgment to the working folder at once and packs it into the
    file now and then and on close; after a crash the newest work may be only there.
    """
    work = default_workdir(src.expanduser().absolute())
    state = _load_state(work)
    if (
        state is None
        or state.get("packet_id") != manifest.packet_id
        or not (work / DATABASE).exists()
    ):
        return []
    try:
        unpacked = _fingerprint(work / DATABASE) != state.get("fingerprint")
    except PacketError:
        unpacked = True
    newer = int(state.get("generation") or 0) > manifest.generation
    if not (unpacked or newer):
        return []
    return [
        f"the working folder {work} holds grading that is not in {src.name} (the app was "
        f"closed abnormally, or this is an older copy): open the packet once "
        f"(`gradercal gui {src.name}`) to pack it, then merge again — nothing is merged twice"
    ]


def _no_nul(value: Any) -> Any:
    """``value`` with NUL characters removed from every string in it."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {_no_nul(k): _no_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_nul(v) for v in value]
    return value


def _strip_nul(content: _PacketContent, record: _Record) -> None:
    """PostgreSQL text cannot hold NUL: drop it on every side, so comparisons stay fair.

    A packet graded in SQLite may hold a NUL a grader pasted; the value is merged without
    it rather than refused (the database's own values can never contain one).
    """
    for j in content.judgments:
        j.value = _no_nul(j.value)
        j.history = _no_nul(j.history)
    for a in content.assignments.values():
        a.skip_reason = _no_nul(a.skip_reason)
    for r in content.reviews:
        r.answers = _no_nul(r.answers)
        r.comment = _no_nul(r.comment)
        r.history = _no_nul(r.history)
    record.judgments = {k: _no_nul(v) for k, v in record.judgments.items()}
    record.assignments = {k: _no_nul(v) for k, v in record.assignments.items()}
    record.reviews = {k: _no_nul(v) for k, v in record.reviews.items()}


def _reset(report: MergeReport) -> None:
    for name in (
        "judgments_added",
        "judgments_updated",
        "judgments_unchanged",
        "judgments_already",
        "history_added",
        "assignments_updated",
        "reviews_added",
        "reviews_updated",
    ):
        setattr(report, name, 0)
    report.conflicts.clear()


def _check_belongs(db: Database, manifest: Manifest, src: Path) -> None:
    here = database_id(db)
    if manifest.database_id != here:
        raise PacketError(
            f"{src} belongs to another database (id {manifest.database_id}), not to "
            f"{db.display} (id {here}); merge it into the database it was exported from"
        )
    key = _packet_key(db, create=False)
    if key is None or not manifest.seal or not verify_seal(key, manifest):
        raise PacketError(
            f"{src} was altered: its export record does not match the seal this database "
            "gave it; nothing was merged"
        )


def _check_content(content: _PacketContent, record: _Record) -> None:
    if set(content.assignments) != set(record.assignments):
        extra = sorted(set(content.assignments) - set(record.assignments))
        raise PacketError(
            "the packet's assignments do not match its export record"
            + (f" (unexpected assignment {extra[0]})" if extra else " (some are missing)")
        )
    for aid, a in content.assignments.items():
        rec = record.assignments[aid]
        if a.task_id != rec["task_id"] or a.response_sha256 != rec["response_sha256"]:
            raise PacketError(
                f"assignment {aid} in the packet does not match its export record "
                "(the task or the response text was changed in the packet)"
            )


@dataclass
class _DbAssignment:
    id: int
    grader_id: int
    response_id: int
    response_ext: str
    task_pk: int
    task_ext: str
    status: str
    skip_reason: str | None
    time_spent_s: float
    submitted_at: datetime | None


def _merge(
    db: Database,
    manifest: Manifest,
    record: _Record,
    content: _PacketContent,
    report: MergeReport,
) -> None:
    grader = manifest.grader
    with db.write() as s:
        g = s.execute(select(m.Grader.id, m.Grader.kind).where(m.Grader.name == grader)).first()
        if g is None or g.kind != GraderKind.HUMAN.value:
            raise PacketError(f"this database has no human grader {grader!r} any more")
        ids = sorted(content.assignments)
        rows = s.execute(
            select(
                m.Assignment.id,
                m.Assignment.grader_id,
                m.Assignment.response_id,
                m.Assignment.status,
                m.Assignment.skip_reason,
                m.Assignment.time_spent_s,
                m.Assignment.submitted_at,
                m.Response.external_id,
                m.Response.text,
                m.Response.answer,
                m.Task.id,
                m.Task.external_id,
            )
            .join(m.Response, m.Response.id == m.Assignment.response_id)
            .join(m.Task, m.Task.id == m.Response.task_id)
            .where(m.Assignment.id.in_(ids))
            .order_by(m.Assignment.id)  # one lock order for every writer: no deadlocks
            .with_for_update(of=m.Assignment)
        ).all()
        found: dict[int, _DbAssignment] = {}
        for r in rows:
            found[r[0]] = _DbAssignment(
                id=r[0],
                grader_id=r[1],
                response_id=r[2],
                response_ext=r[7],
                task_pk=r[10],
                task_ext=r[11],
                status=r[3],
                skip_reason=r[4],
                time_spent_s=float(r[5] or 0.0),
                submitted_at=r[6],
            )
            rec = record.assignments[r[0]]
            if (
                r[1] != g.id
                or r[11] != rec["task_id"]
                or response_digest(r[8], r[9]) != rec["response_sha256"]
            ):
                raise PacketError(
                    f"assignment {r[0]} no longer matches this database (it was reassigned, "
                    "or its response changed); nothing was merged"
                )
        gone = [aid for aid in ids if aid not in found]
        if gone:
            raise PacketError(
                f"{len(gone)} of the packet's assignments no longer exist in this database "
                f"(first: {gone[0]}); nothing was merged"
            )
        task_pks = sorted({a.task_pk for a in found.values()})
        crit_rows = s.execute(
            select(
                m.Criterion.id,
                m.Criterion.task_id,
                m.Criterion.external_id,
                m.Criterion.kind,
                m.Criterion.levels,
            ).where(m.Criterion.task_id.in_(task_pks))
        ).all()
        criteria = {(t, ext): (cid, kind, int(levels)) for cid, t, ext, kind, levels in crit_rows}
        now = m.utcnow()
        _merge_judgments(s, manifest, record, content, found, criteria, g.id, now, report)
        _merge_assignments(s, manifest, record, content, found, now, report)
        _merge_reviews(s, manifest, record, content, found, g.id, now, report)


def _checked_value(v: dict[str, Any], kind: str, levels: int, where: str) -> None:
    if kind != CriterionKind.JUDGMENT.value:
        raise PacketError(f"{where}: the packet judges an auto criterion")
    top = max(levels, 2) - 1
    if v["level"] is not None:
        if not 0 <= v["level"] <= top:
            raise PacketError(f"{where}: level {v['level']} is outside 0…{top}")
        if v["met"] is not None and v["met"] != (v["level"] == top):
            raise PacketError(f"{where}: met disagrees with level {v['level']}")
    if v["confidence"] is not None and not 0.0 <= v["confidence"] <= 1.0:
        raise PacketError(f"{where}: confidence must be between 0 and 1")


def _merge_judgments(
    s: Session,
    manifest: Manifest,
    record: _Record,
    content: _PacketContent,
    found: dict[int, _DbAssignment],
    criteria: dict[tuple[int, str], tuple[int, str, int]],
    gid: int,
    now: datetime,
    report: MergeReport,
) -> None:
    response_ids = sorted({a.response_id for a in found.values()})
    current = {
        (j.response_id, j.criterion_id): j
        for j in s.execute(
            select(
                m.Judgment.id,
                m.Judgment.response_id,
                m.Judgment.criterion_id,
                *[getattr(m.Judgment, f) for f in _FIELDS],
                m.Judgment.revision,
                m.Judgment.source,
                m.Judgment.provenance,
                m.Judgment.updated_at,
            )
            .where(m.Judgment.grader_id == gid, m.Judgment.response_id.in_(response_ids))
            .with_for_update()
        )
    }
    recorded: dict[int, list[dict[str, Any]]] = defaultdict(list)
    jids = [j.id for j in current.values()]
    for start in range(0, len(jids), 5000):
        for eid, data in s.execute(
            select(m.Revision.entity_id, m.Revision.data).where(
                m.Revision.entity == CONFLICT_ENTITY,
                m.Revision.entity_id.in_(jids[start : start + 5000]),
            )
        ):
            recorded[eid].append(data)
    inserts: list[dict[str, Any]] = []
    with_history: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    updates: list[dict[str, Any]] = []
    revisions: list[dict[str, Any]] = []
    seen: set[tuple[int, str]] = set()
    for pj in content.judgments:
        if (pj.assignment_id, pj.criterion_id) in seen:
            raise PacketError(
                f"the packet holds two judgments on assignment {pj.assignment_id}, "
                f"criterion {pj.criterion_id!r}"
            )
        seen.add((pj.assignment_id, pj.criterion_id))
        a = found[pj.assignment_id]
        crit = criteria.get((a.task_pk, pj.criterion_id))
        where = f"assignment {a.id}, criterion {pj.criterion_id!r}"
        if crit is None:
            raise PacketError(f"{where}: this criterion does not exist in the database")
        cid, kind, levels = crit
        _checked_value(pj.value, kind, levels, where)
        base_entry = record.judgments.get((pj.assignment_id, pj.criterion_id))
        base = base_entry["value"] if base_entry else None
        d = current.get((a.response_id, cid))
        dval = _value(d) if d is not None else None
        prov = d.provenance if d is not None and isinstance(d.provenance, dict) else {}
        ours = (
            d is not None and d.source == "packet" and prov.get("packet_id") == manifest.packet_id
        )
        verdict = decide(base, pj.value, dval, current_is_ours=ours)
        if verdict == "unchanged":
            report.judgments_unchanged += 1
            continue
        if verdict == "same":
            report.judgments_already += 1
            continue
        if ours:
            since = int(prov.get("packet_revision", 0))
        else:
            since = base_entry["revision"] if base_entry else 0
        between = [h for h in pj.history if h["revision"] > since]
        provenance = {"packet_id": manifest.packet_id, "packet_revision": pj.revision}
        if verdict == "conflict":
            assert d is not None
            data = {
                "packet_id": manifest.packet_id,
                "generation": manifest.generation,
                "grader": manifest.grader,
                "task_id": a.task_ext,
                "response_id": a.response_ext,
                "criterion_id": pj.criterion_id,
                "packet": pj.value,
                "packet_updated_at": _iso(pj.updated_at),
                "packet_history": [_history_json(h) for h in between],
                "base": base,
                "database": dval,
                "database_revision": d.revision,
            }
            new = not any(
                old.get("packet_id") == manifest.packet_id and old.get("packet") == pj.value
                for old in recorded.get(d.id, [])
            )
            if new:
                revisions.append(
                    {
                        "entity": CONFLICT_ENTITY,
                        "entity_id": d.id,
                        "revision": d.revision,
                        "data": data,
                        "actor": manifest.grader,
                        "source": "packet",
                        "changed_at": now,
                    }
                )
            report.conflicts.append(
                MergeConflict(
                    "judgment",
                    a.task_ext,
                    a.response_ext,
                    pj.criterion_id,
                    base,
                    pj.value,
                    dval,
                    new,
                )
            )
            continue
        # apply
        stamp = pj.updated_at or now
        if d is None:
            row = {
                "grader_id": gid,
                "response_id": a.response_id,
                "criterion_id": cid,
                **pj.value,
                "source": "packet",
                "provenance": provenance,
                "revision": len(between) + 1,
                "created_at": pj.created_at or stamp,
                "updated_at": stamp,
            }
            if between:
                with_history.append((row, between))
                report.history_added += len(between)
            else:
                inserts.append(row)
            report.judgments_added += 1
            continue
        assert dval is not None
        revisions.append(
            {
                "entity": "judgment",
                "entity_id": d.id,
                "revision": d.revision,
                "data": {
                    **dval,
                    "source": d.source,
                    "updated_at": _iso(d.updated_at),
                },
                "actor": manifest.grader,
                "source": "packet",
                "changed_at": now,
            }
        )
        for n, h in enumerate(between, start=d.revision + 1):
            revisions.append(_history_revision(d.id, n, h, manifest.grader, now))
        report.history_added += len(between)
        updates.append(
            {
                "jid": d.id,
                **pj.value,
                "source": "packet",
                "provenance": provenance,
                "revision": d.revision + 1 + len(between),
                "updated_at": stamp,
            }
        )
        report.judgments_updated += 1
    conn = s.connection()
    if inserts:
        conn.execute(insert(_JUDGMENT_TABLE), inserts)
    if with_history:
        ids = conn.execute(
            insert(_JUDGMENT_TABLE).returning(_JUDGMENT_TABLE.c.id, sort_by_parameter_order=True),
            [row for row, _between in with_history],
        ).scalars()
        for jid, (_row, between) in zip(ids, with_history, strict=True):
            for n, h in enumerate(between, start=1):
                revisions.append(_history_revision(jid, n, h, manifest.grader, now))
    if updates:
        s.connection().execute(
            update(_JUDGMENT_TABLE)
            .where(_JUDGMENT_TABLE.c.id == bindparam("jid"))
            .values(
                {
                    **{f: bindparam(f) for f in _FIELDS},
                    "source": bindparam("source"),
                    "provenance": bindparam("provenance"),
                    "revision": bindparam("revision"),
                    "updated_at": bindparam("updated_at"),
                }
            ),
            updates,
        )
    if revisions:
        conn.execute(insert(_REVISION_TABLE), revisions)


def _history_json(h: dict[str, Any]) -> dict[str, Any]:
    return {
        "revision": h["revision"],
        "value": h["value"],
        "changed_at": _iso(h.get("changed_at")),
    }


def _history_revision(
    jid: int, n: int, h: dict[str, Any], grader: str, now: datetime
) -> dict[str, Any]:
    return {
        "entity": "judgment",
        "entity_id": jid,
        "revision": n,
        "data": {**h["value"], "source": "packet", "updated_at": h.get("updated_at")},
        "actor": grader,
        "source": "packet",
        "changed_at": h.get("changed_at") or now,
    }


def _merge_assignments(
    s: Session,
    manifest: Manifest,
    record: _Record,
    content: _PacketContent,
    found: dict[int, _DbAssignment],
    now: datetime,
    report: MergeReport,
) -> None:
    ids = sorted(found)
    last: dict[int, dict[str, Any]] = {}
    counts: dict[int, int] = defaultdict(int)
    for eid, data in s.execute(
        select(m.Revision.entity_id, m.Revision.data)
        .where(m.Revision.entity == ASSIGNMENT_MERGE_ENTITY, m.Revision.entity_id.in_(ids))
        .order_by(m.Revision.id)
    ):
        last[eid] = data
        counts[eid] += 1
    updates: list[dict[str, Any]] = []
    revisions: list[dict[str, Any]] = []
    for aid, pa in sorted(content.assignments.items()):
        d = found[aid]
        rec = record.assignments[aid]
        base = {"status": rec["status"], "skip_reason": rec["skip_reason"]}
        packet = {"status": pa.status, "skip_reason": pa.skip_reason}
        dbv = {"status": d.status, "skip_reason": d.skip_reason}
        prev = last.get(aid)
        ours = bool(
            prev
            and prev.get("packet_id") == manifest.packet_id
            and prev.get("new", {}).get("status") == d.status
            and prev.get("new", {}).get("skip_reason") == d.skip_reason
        )
        verdict = decide(base, packet, dbv, current_is_ours=ours)
        new = {
            "status": d.status,
            "skip_reason": d.skip_reason,
            "submitted_at": d.submitted_at,
            "time_spent_s": d.time_spent_s,
        }
        if verdict == "apply":
            submitted = pa.status == AssignmentStatus.SUBMITTED.value
            new.update(
                status=pa.status,
                skip_reason=pa.skip_reason,
                submitted_at=(pa.submitted_at or now) if submitted else None,
            )
        elif verdict == "conflict":
            report.conflicts.append(
                MergeConflict("status", d.task_ext, d.response_ext, None, base, packet, dbv, False)
            )
        if pa.time_spent_s > d.time_spent_s + 1e-6:
            new["time_spent_s"] = pa.time_spent_s
        if verdict != "apply" and new["time_spent_s"] == d.time_spent_s:
            continue
        updates.append({"aid": aid, **new, "updated_at": now})
        revisions.append(
            {
                "entity": ASSIGNMENT_MERGE_ENTITY,
                "entity_id": aid,
                "revision": counts[aid] + 1,
                "data": {
                    "packet_id": manifest.packet_id,
                    "generation": manifest.generation,
                    "old": {
                        **dbv,
                        "time_spent_s": d.time_spent_s,
                        "submitted_at": _iso(d.submitted_at),
                    },
                    "new": {
                        "status": new["status"],
                        "skip_reason": new["skip_reason"],
                        "time_spent_s": new["time_spent_s"],
                    },
                },
                "actor": manifest.grader,
                "source": "packet",
                "changed_at": now,
            }
        )
    if not updates:
        return
    conn = s.connection()
    conn.execute(
        update(_ASSIGNMENT_TABLE)
        .where(_ASSIGNMENT_TABLE.c.id == bindparam("aid"))
        .values(
            {
                col: bindparam(col)
                for col in ("status", "skip_reason", "submitted_at", "time_spent_s", "updated_at")
            }
        ),
        updates,
    )
    conn.execute(insert(_REVISION_TABLE), revisions)
    report.assignments_updated += len(updates)


def _merge_reviews(
    s: Session,
    manifest: Manifest,
    record: _Record,
    content: _PacketContent,
    found: dict[int, _DbAssignment],
    gid: int,
    now: datetime,
    report: MergeReport,
) -> None:
    if not content.reviews:
        return
    task_pk = {a.task_ext: a.task_pk for a in found.values()}
    rows = {
        r.task_id: r
        for r in s.scalars(
            select(m.TaskReview)
            .where(
                m.TaskReview.grader_id == gid, m.TaskReview.task_id.in_(sorted(task_pk.values()))
            )
            .with_for_update()
        )
    }
    review_ids = [r.id for r in rows.values()]
    merged: dict[int, dict[str, Any]] = {}
    conflicts: dict[int, list[dict[str, Any]]] = defaultdict(list)
    n_revisions: dict[int, int] = defaultdict(int)
    if review_ids:
        for entity, eid, data in s.execute(
            select(m.Revision.entity, m.Revision.entity_id, m.Revision.data)
            .where(
                m.Revision.entity.in_([REVIEW_MERGE_ENTITY, REVIEW_CONFLICT_ENTITY, "task_review"]),
                m.Revision.entity_id.in_(review_ids),
            )
            .order_by(m.Revision.id)
        ):
            if entity == REVIEW_MERGE_ENTITY:
                merged[eid] = data
            elif entity == REVIEW_CONFLICT_ENTITY:
                conflicts[eid].append(data)
            else:
                n_revisions[eid] += 1
    for pr in content.reviews:
        pk = task_pk.get(pr.task_id)
        if pk is None:
            raise PacketError(f"task review on {pr.task_id!r}: not a task of this packet")
        packet = {"answers": pr.answers, "comment": pr.comment}
        base = record.reviews.get(pr.task_id)
        row = rows.get(pk)
        dbv = {"answers": dict(row.answers or {}), "comment": row.comment} if row else None
        prev = merged.get(row.id) if row else None
        ours = bool(prev and prev.get("packet_id") == manifest.packet_id and prev.get("new") == dbv)
        verdict = decide(base, packet, dbv, current_is_ours=ours)
        if verdict in ("unchanged", "same"):
            continue
        if verdict == "conflict":
            assert row is not None
            new = not any(
                c.get("packet_id") == manifest.packet_id and c.get("packet") == packet
                for c in conflicts[row.id]
            )
            if new:
                s.add(
                    m.Revision(
                        entity=REVIEW_CONFLICT_ENTITY,
                        entity_id=row.id,
                        revision=n_revisions[row.id] + 1,
                        data={
                            "packet_id": manifest.packet_id,
                            "grader": manifest.grader,
                            "task_id": pr.task_id,
                            "packet": packet,
                            "base": base,
                            "database": dbv,
                        },
                        actor=manifest.grader,
                        source="packet",
                        changed_at=now,
                    )
                )
            report.conflicts.append(
                MergeConflict("task_review", pr.task_id, None, None, base, packet, dbv, new)
            )
            continue
        stamp = pr.updated_at or now
        if row is None:
            row = m.TaskReview(
                task_id=pk,
                grader_id=gid,
                answers=pr.answers,
                comment=pr.comment,
                created_at=stamp,
                updated_at=stamp,
            )
            s.add(row)
            s.flush()
            report.reviews_added += 1
        else:
            s.add(
                m.Revision(
                    entity="task_review",
                    entity_id=row.id,
                    revision=n_revisions[row.id] + 1,
                    data={
                        "answers": dict(row.answers or {}),
                        "comment": row.comment,
                        "updated_at": _iso(row.updated_at),
                    },
                    actor=manifest.grader,
                    source="packet",
                    changed_at=now,
                )
            )
            row.answers = pr.answers
            row.comment = pr.comment
            row.updated_at = stamp
            report.reviews_updated += 1
        s.add(
            m.Revision(
                entity=REVIEW_MERGE_ENTITY,
                entity_id=row.id,
                revision=1,
                data={"packet_id": manifest.packet_id, "new": packet},
                actor=manifest.grader,
                source="packet",
                changed_at=now,
            )
        )


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
            current = None if j is None else {**_value(j), "revision": j.revision}
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
                "recorded_at": _iso(changed),
                "status": "open" if resolved is None else "resolved",
                "resolution": None
                if resolved is None
                else {**resolved[0], "by": resolved[1], "at": _iso(resolved[2])},
                "current": current,
            }
        )
    return out


#: ``revision.entity`` of a conflict's resolution (``entity_id`` = the conflict's revision id).
RESOLUTION_ENTITY = "packet_conflict_resolution"
#: What :func:`resolve_conflict` may keep.
KEEP_CHOICES = ("database", "packet", "value")


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
        note = _no_nul(note).strip() or None
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
                f"{_iso(earlier.changed_at)} (kept {earlier.data.get('keep')})"
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
    previous = _value(row)
    recorded = data.get("database_revision")
    if not force and recorded is not None and row.revision != recorded:
        raise ConflictError(
            f"the judgment of conflict {conflict.id} changed after the conflict was recorded "
            f"(revision {recorded} then, {row.revision} now): look at it again, or force"
        )
    if keep == "database":
        target = previous
    elif keep == "packet":
        target = {f: data["packet"].get(f) for f in _FIELDS}
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
        _checked_value(target, crit.kind, int(crit.levels), f"conflict {conflict.id}")
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
        for f in _FIELDS:
            setattr(row, f, target[f])
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
                data={**previous, "updated_at": _iso(row.updated_at)},
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


# -- information -----------------------------------------------------------------------------
def packet_info(path: str | os.PathLike[str], db: Database | None = None) -> dict[str, Any]:
    """Check a packet's archive and hashes and describe it; with ``db``, also its seal.

    Raises:
        PacketError: the packet is damaged, unsafe, or (with ``db``) not this database's.
    """
    src = Path(path)
    with tempfile.TemporaryDirectory(prefix="gradercal-info-") as tmp:
        manifest = read_packet(src, Path(tmp))
        out = manifest.to_dict()
        out.pop("seal", None)
        out["path"] = str(src)
        out["verified"] = "hashes"
        if db is not None:
            _check_belongs(db, manifest, src)
            out["verified"] = "hashes and seal"
    return out


# -- grading in a packet ------------------------------------------------------------------------
STATE = "state.json"


class PacketSession:
    """A packet opened for grading: ``db`` is the working database inside ``workdir``.

    Grade into ``db`` with :class:`~gradercal.db.grading.GradingStore` (as grader
    :attr:`grader` in benchmark :attr:`benchmark`); every judgment is committed there at
    once. :meth:`save` packs the working database back into the packet file (atomic
    replace); :meth:`close` saves (by default) and releases the database.
    """

    def __init__(self, path: Path, workdir: Path, manifest: Manifest, warnings: list[str]) -> None:
        self.path = path
        self.workdir = workdir
        self.manifest = manifest
        self.warnings = warnings
        self.db = open_database(workdir / DATABASE)
        self._closed = False

    @property
    def grader(self) -> str:
        return self.manifest.grader

    @property
    def benchmark(self) -> str:
        return self.manifest.benchmark

    def __enter__(self) -> PacketSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def has_unsaved_changes(self) -> bool:
        """True when the working database holds work not yet packed into the file."""
        state = _load_state(self.workdir)
        return state is None or state.get("fingerprint") != _fingerprint(self.workdir / DATABASE)

    def save(self) -> Manifest:
        """Pack the working database into the packet file (atomically). Returns the manifest."""
        if self._closed:
            raise PacketError("this packet is closed")
        snap = self.workdir / f".snapshot-{os.getpid()}.sqlite"
        try:
            _snapshot(self.workdir / DATABASE, snap)
            fp = _fingerprint(snap)
            manifest = self.manifest.with_database(sha256_file(snap), utc_stamp())
            write_packet(self.path, manifest, self.workdir / EXPORT, snap)
        except (OSError, sqlite3.Error, PacketError) as exc:
            raise PacketError(
                f"could not save {self.path.name}: {exc}. Nothing is lost: every judgment "
                f"is in the working folder {self.workdir}, and saving again will retry."
            ) from None
        finally:
            for p in (snap, snap.with_name(snap.name + "-wal"), snap.with_name(snap.name + "-shm")):
                if p.exists():
                    p.unlink()
        self.manifest = manifest
        _atomic_write(self.workdir / MANIFEST, manifest.to_json())
        _save_state(self.workdir, manifest, fp)
        return manifest

    def close(self, *, save: bool = True) -> None:
        if self._closed:
            return
        try:
            if save and self.has_unsaved_changes():
                self.save()
        finally:
            self.db.dispose()
            self._closed = True


def default_workdir(path: Path) -> Path:
    """The working folder of a packet: next to it, ``NAME.gcpkg.work``.

    When the packet's folder is not writable (a read-only share, a mail attachment
    folder), a folder in the user data directory named after the packet's path instead.
    """
    beside = path.with_name(path.name + ".work")
    if os.access(path.parent, os.W_OK):
        return beside
    from platformdirs import user_data_dir

    tag = hashlib.sha256(str(path).encode("utf-8")).hexdigest()[:12]
    return Path(user_data_dir("gradercal", appauthor=False)) / "packets" / f"{path.stem}-{tag}"


def open_packet(
    path: str | os.PathLike[str], *, workdir: str | os.PathLike[str] | None = None
) -> PacketSession:
    """Open a packet for grading (see :class:`PacketSession`).

    The packet is checked (archive safety, manifest hashes) and unpacked into
    ``workdir`` (default: :func:`default_workdir`). A working folder left by an earlier
    session is reused when the file still holds what that session last saved; work it
    holds that was not packed yet is packed at once. Otherwise (the file was replaced
    or saved elsewhere in the meantime) the old working folder is moved aside
    (``….previous-<time>``, never deleted) and a warning says where.

    Raises:
        PacketError: the packet is damaged or unsafe.
    """
    src = Path(path).expanduser().absolute()
    work = Path(workdir).expanduser().absolute() if workdir is not None else default_workdir(src)
    try:
        return _open_packet(src, work)
    except OSError as exc:
        raise PacketError(
            f"cannot open the packet {src} for grading (working folder {work}): "
            f"{exc.strerror or exc}"
        ) from None


def _open_packet(src: Path, work: Path) -> PacketSession:
    work.parent.mkdir(parents=True, exist_ok=True)
    incoming = Path(tempfile.mkdtemp(prefix=".incoming-", dir=work.parent))
    warnings: list[str] = []
    try:
        manifest = read_packet(src, incoming)
        _check_grading_db(incoming / DATABASE)
        fresh = _fingerprint(incoming / DATABASE, immutable=True)
        state = _load_state(work)
        reuse = False
        if work.exists():
            current = _fingerprint(work / DATABASE) if (work / DATABASE).exists() else None
            if (
                state is not None
                and state.get("packet_id") == manifest.packet_id
                and state.get("fingerprint") == fresh
                and current is not None
            ):
                reuse = True
            elif current == fresh:
                shutil.rmtree(work)
            else:
                aside = work.with_name(f"{work.name}.previous-{_stamp()}")
                work.rename(aside)
                warnings.append(
                    f"the working folder of {src.name} did not match the packet file (the "
                    f"file was replaced or saved elsewhere); it was kept in {aside}"
                )
        if reuse:
            manifest = Manifest.from_json((work / MANIFEST).read_bytes())
        else:
            work.mkdir(parents=True)
            for name in (MANIFEST, EXPORT, DATABASE):
                os.replace(incoming / name, work / name)
            _save_state(work, manifest, fresh)
    finally:
        shutil.rmtree(incoming, ignore_errors=True)
    session = PacketSession(src, work, manifest, warnings)
    if reuse and session.has_unsaved_changes():
        session.save()
        warnings.append("grading not yet saved into the packet by an earlier session was recovered")
    return session


def _check_grading_db(path: Path) -> None:
    conn = _connect_packet_db(path)
    try:
        result = [r[0] for r in conn.execute("PRAGMA quick_check(3)")]
    except sqlite3.Error as exc:
        raise PacketError(f"the packet's database is damaged: {exc}") from None
    finally:
        conn.close()
    if result != ["ok"]:
        raise PacketError(f"the packet's database is damaged: {'; '.join(map(str, result))[:300]}")


def _snapshot(src: Path, dst: Path) -> None:
    """A consistent copy of a live SQLite database (online backup API), as one file."""
    source = sqlite3.connect(str(src), timeout=30)
    try:
        target = sqlite3.connect(str(dst))
        try:
            source.backup(target)
        finally:
            target.close()
    finally:
        source.close()
    _finish_sqlite(dst)


def _fingerprint(path: Path, *, immutable: bool = False) -> str:
    """Hash of everything grading writes (judgments, history, queue state, reviews)."""
    flags = "mode=ro&immutable=1" if immutable else "mode=ro"
    conn = sqlite3.connect(f"file:{quote(str(path))}?{flags}", uri=True, timeout=30)
    h = hashlib.sha256()
    try:
        conn.execute("BEGIN")
        for table in ("grader", "assignment", "judgment", "revision", "task_review"):
            h.update(table.encode())
            for row in conn.execute(f'SELECT * FROM "{table}" ORDER BY 1'):
                h.update(repr(row).encode())
        conn.execute("ROLLBACK")
    except sqlite3.Error as exc:
        raise PacketError(f"cannot read the working database {path}: {exc}") from None
    finally:
        conn.close()
    return h.hexdigest()


def _load_state(work: Path) -> dict[str, Any] | None:
    try:
        value = json.loads((work / STATE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _save_state(work: Path, manifest: Manifest, fingerprint: str) -> None:
    _atomic_write(
        work / STATE,
        json.dumps(
            {
                "packet_id": manifest.packet_id,
                "generation": manifest.generation,
                "fingerprint": fingerprint,
            }
        ).encode("utf-8"),
    )


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
