"""Reading and validating a packet's database and export record: nothing in a packet is trusted.

The packet database is read with raw :mod:`sqlite3` (read-only, immutable, with
``trusted_schema`` off, under a deadline of :data:`READ_DEADLINE_S`), never as a
gradercal database: its integrity and its tables are checked first, then every field is
type-checked and bounded (free text at most :data:`~gradercal.db.packets._common.MAX_TEXT`
characters) as it is read. Only the packet's grader's rows are read; judgments entered
under other names are reported as ignored. The export record (``export.json``) must match
the manifest, and the packet's assignments must match the export record.

:func:`packet_info` checks a packet file's archive and hashes and describes it; with a
database, also its seal (:func:`check_belongs`, which
:func:`~gradercal.db.packets.merge.merge_packet` uses too).
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from gradercal._util.scratch import scratch_dir
from gradercal.db.grading import REOPEN_ENTITY
from gradercal.db.packets._common import FIELDS, MAX_TEXT, packet_key, response_digest
from gradercal.db.session import Database, database_id
from gradercal.model import AssignmentStatus
from gradercal.ops.packet_format import EXPORT, Manifest, PacketError, read_packet, verify_seal

#: Stop reading a packet database after this many seconds (a crafted file could be slow).
READ_DEADLINE_S = 120.0

_FINAL = {AssignmentStatus.SUBMITTED.value, AssignmentStatus.SKIPPED.value}
_STATUSES = {s.value for s in AssignmentStatus}


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
    #: the task version it was given under (None: a packet from before versions, 0006)
    task_version: int | None = None


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
class PacketContent:
    grader: str
    assignments: dict[int, _PAssignment]
    judgments: list[_PJudgment]
    reviews: list[_PReview]
    ignored: list[str]
    #: assignment id → the reopenings recorded offline (Ctrl+O), oldest first:
    #: {revision, changed_at, data: the state left (status, submitted_at, skip_reason)}
    reopens: dict[int, list[dict[str, Any]]] = field(default_factory=dict)


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
        *FIELDS,
        "revision",
        "created_at",
        "updated_at",
    ),
    "task_review": ("id", "task_id", "grader_id", "answers", "comment", "updated_at"),
    "revision": ("entity", "entity_id", "revision", "data", "changed_at"),
}


def connect_packet_db(path: Path) -> sqlite3.Connection:
    uri = f"file:{quote(str(path))}?mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise PacketError(f"packet database cannot be opened: {exc}") from None
    deadline = time.monotonic() + READ_DEADLINE_S
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    return conn


def read_packet_db(path: Path, manifest: Manifest) -> PacketContent:
    conn = connect_packet_db(path)
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


def _read_packet_rows(conn: sqlite3.Connection, manifest: Manifest) -> PacketContent:
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
    versioned = any(r[1] == "task_version" for r in conn.execute("PRAGMA table_info(judgment)"))
    for row in conn.execute(
        "SELECT id, grader_id, response_id, criterion_id, met, level, confidence, rationale, "
        "unclear, unclear_note, revision, created_at, updated_at, "
        + ("task_version" if versioned else "NULL")
        + " FROM judgment WHERE grader_id = ?",
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
            task_version=None if row[13] is None else _int(row[13], "judgment.task_version"),
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
            item["value"] = _judgment_value(tuple(snap.get(f) for f in FIELDS))
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
    return PacketContent(
        grader=manifest.grader,
        assignments=assignments,
        judgments=list(judgments.values()),
        reviews=list(reviews.values()),
        ignored=ignored,
        reopens=_read_reopens(conn, assignments),
    )


def _read_reopens(
    conn: sqlite3.Connection, assignments: dict[int, _PAssignment]
) -> dict[int, list[dict[str, Any]]]:
    """The reopenings of the grader's assignments recorded in the packet (a packet is
    exported without any: each was made offline)."""
    out: dict[int, list[dict[str, Any]]] = {}
    for aid, rev, data, changed in conn.execute(
        "SELECT entity_id, revision, data, changed_at FROM revision WHERE entity = ? "
        "ORDER BY entity_id, revision, id",
        (REOPEN_ENTITY,),
    ):
        if aid not in assignments:
            continue
        snap = _json(data, "revision.data")
        if not isinstance(snap, dict) or snap.get("status") not in _FINAL:
            raise PacketError(
                f"packet database: a reopening of assignment {aid} does not say which "
                "submitted or skipped state it left"
            )
        out.setdefault(_int(aid, "revision.entity_id"), []).append(
            {
                "revision": _int(rev, "revision.revision"),
                "changed_at": _parse_dt(changed, "revision.changed_at"),
                "data": {
                    "status": str(snap["status"]),
                    "submitted_at": _opt_text(snap.get("submitted_at"), "submitted_at"),
                    "skip_reason": _opt_text(snap.get("skip_reason"), "skip_reason"),
                },
            }
        )
    return out


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
class Record:
    assignments: dict[int, dict[str, Any]]
    judgments: dict[
        tuple[int, str], dict[str, Any]
    ]  # (assignment id, criterion) → {revision, value}
    reviews: dict[str, dict[str, Any]]  # task id → {answers, comment}


def read_record(path: Path, manifest: Manifest) -> Record:
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
                "value": {f: j["value"][f] for f in FIELDS},
            }
            for j in raw["judgments"]
        }
        reviews = {
            str(r["task_id"]): {"answers": dict(r["answers"]), "comment": r["comment"]}
            for r in raw["reviews"]
        }
    except (KeyError, TypeError, ValueError, AssertionError):
        raise PacketError(f"{EXPORT} is malformed") from None
    return Record(assignments, judgments, reviews)


# -- checks against the record and the database ------------------------------------------------
#: Most time on one response a packet may report (the app counts time while a response
#: is open; a week is far beyond any real grading).
MAX_TIME_ON_TASK_S = 7 * 24 * 3600.0
#: Clock difference allowed between the grader's machine and the coordinator's.
CLOCK_SKEW = timedelta(minutes=10)


def check_content(content: PacketContent, record: Record, created_at: str | None = None) -> None:
    """The packet matches its export record, and holds only what the app could have
    written since the export: plausible time on task, and changes (verdicts, their
    history) dated between the export and now."""
    _check_matches_record(content, record)
    for aid, a in content.assignments.items():
        if not (math.isfinite(a.time_spent_s) and 0 <= a.time_spent_s <= MAX_TIME_ON_TASK_S):
            raise PacketError(
                f"assignment {aid} ({a.task_id}) reports {a.time_spent_s:g} s on task; the "
                f"app never records more than {MAX_TIME_ON_TASK_S:g} s"
            )
    if created_at is None:
        return
    try:
        made = datetime.fromisoformat(created_at)
    except ValueError:
        raise PacketError("the packet's manifest has no valid creation time") from None
    made = made if made.tzinfo else made.replace(tzinfo=UTC)
    earliest, latest = made - CLOCK_SKEW, datetime.now(UTC) + CLOCK_SKEW

    def dated(when: datetime | None, what: str) -> None:
        if when is not None and not earliest <= when <= latest:
            raise PacketError(
                f"{what} is dated {when.isoformat()}, outside the packet's life (made "
                f"{made.isoformat()}): the app could not have written it; nothing was merged"
            )

    for j in content.judgments:
        exported = record.judgments.get((j.assignment_id, j.criterion_id))
        where = f"the judgment on {j.task_id}/{j.criterion_id} (assignment {j.assignment_id})"
        if exported is None or exported["value"] != j.value:
            dated(j.updated_at, where)
        base = exported["revision"] if exported is not None else 1  # revisions start at 1
        for h in j.history:
            if h["revision"] < base:  # a row kept at revision base is the exported value
                raise PacketError(
                    f"{where} carries history from before the export (revision "
                    f"{h['revision']}); nothing was merged"
                )
            dated(h["changed_at"], f"a revision of {where}")
    for aid, a in content.assignments.items():
        if a.status != record.assignments[aid]["status"]:
            dated(a.submitted_at, f"the submission of assignment {aid} ({a.task_id})")
    for aid, reopens in content.reopens.items():
        for r in reopens:
            dated(r["changed_at"], f"a reopening of assignment {aid}")


def _check_matches_record(content: PacketContent, record: Record) -> None:
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


def check_belongs(db: Database, manifest: Manifest, src: Path) -> None:
    here = database_id(db)
    if manifest.database_id != here:
        raise PacketError(
            f"{src} belongs to another database (id {manifest.database_id}), not to "
            f"{db.display} (id {here}); merge it into the database it was exported from"
        )
    key = packet_key(db, create=False)
    if key is None or not manifest.seal or not verify_seal(key, manifest):
        raise PacketError(
            f"{src} was altered: its export record does not match the seal this database "
            "gave it; nothing was merged"
        )


# -- information -----------------------------------------------------------------------------
def packet_info(path: str | os.PathLike[str], db: Database | None = None) -> dict[str, Any]:
    """Check a packet's archive and hashes and describe it; with ``db``, also its seal.

    Raises:
        PacketError: the packet is damaged, unsafe, or (with ``db``) not this database's.
    """
    src = Path(path)
    with scratch_dir("gradercal-info-") as tmp:
        manifest = read_packet(src, tmp)
        out = manifest.to_dict()
        out.pop("seal", None)
        out["path"] = str(src)
        out["verified"] = "hashes"
        if db is not None:
            check_belongs(db, manifest, src)
            out["verified"] = "hashes and seal"
    return out
