"""Merging a returned packet into the database it came from.

:func:`merge_packet` brings the work back, in one transaction, after checking the
packet against its manifest, its seal, the database it came from and the database's
current content. For every judgment it compares three versions: at export (the export
record), in the packet, and in the database now (see
:func:`gradercal.ops.packet_format.decide`). Changed only in the packet: written, with the
old value and any intermediate values the grader entered offline kept as revisions.
Changed on both sides: a **conflict** — the database keeps its value, the packet's is
stored beside it (``revision`` rows with ``entity = 'packet_conflict'``) and reported;
nothing is overwritten. Merging the same packet again changes nothing.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gradercal._util.scratch import scratch_dir
from gradercal.db import models as m
from gradercal.db.clarifications import open_from_flag
from gradercal.db.grading import REOPEN_ENTITY
from gradercal.db.packets._common import (
    CONFLICT_ENTITY,
    FIELDS,
    REVIEW_CONFLICT_ENTITY,
    checked_value,
    iso_or_none,
    judgment_value,
    no_nul,
    response_digest,
)
from gradercal.db.packets.read import (
    PacketContent,
    Record,
    check_belongs,
    check_content,
    read_packet_db,
    read_record,
)
from gradercal.db.packets.session import default_workdir, grading_fingerprint, load_state
from gradercal.db.progress import record_packet_merge
from gradercal.db.session import Database
from gradercal.db.versions import verdict_write, versions_at
from gradercal.model import AssignmentStatus, GraderKind
from gradercal.ops.packet_format import (
    DATABASE,
    EXPORT,
    Limits,
    Manifest,
    PacketError,
    decide,
    read_packet,
)

#: ``revision.entity`` of an assignment state change made by a merge (old and new value).
ASSIGNMENT_MERGE_ENTITY = "packet_merge_assignment"
#: ``revision.entity`` of a task review written by a merge (packet id and new value).
REVIEW_MERGE_ENTITY = "packet_merge_review"

_JUDGMENT_TABLE = cast(Table, m.Judgment.__table__)
_REVISION_TABLE = cast(Table, m.Revision.__table__)
_ASSIGNMENT_TABLE = cast(Table, m.Assignment.__table__)


# -- report --------------------------------------------------------------------------------
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
    judgments_confirmed: int = 0
    """Stale verdicts given again offline, unchanged, under the revised task: current now
    (also counted as unchanged or already merged)."""
    judgments_already: int = 0
    """Already in the database with the packet's value (merged before)."""
    history_added: int = 0
    """Intermediate values entered offline, kept as revisions."""
    assignments_updated: int = 0
    reopens_added: int = 0
    """Reopenings (Ctrl+O) of submitted or skipped responses recorded offline."""
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
            or self.judgments_confirmed
            or self.assignments_updated
            or self.reopens_added
            or self.reviews_added
            or self.reviews_updated
            or self.new_conflicts
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["changed"] = self.changed
        out["new_conflicts"] = self.new_conflicts
        return out


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
    with scratch_dir("gradercal-merge-") as tmp:
        manifest = read_packet(src, tmp, limits)
        check_belongs(db, manifest, src)
        record = read_record(tmp / EXPORT, manifest)
        content = read_packet_db(tmp / DATABASE, manifest)
    check_content(content, record, manifest.created_at)
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


def _check_submissions(
    content: PacketContent,
    record: Record,
    found: dict[int, _DbAssignment],
    criteria: dict[tuple[int, str], tuple[int, str, int]],
) -> None:
    """A response the packet newly marks submitted has every judged criterion answered
    in the packet, as the app demands before it lets a grader submit."""
    answered: dict[int, set[str]] = {}
    for j in content.judgments:
        if j.value.get("met") is not None or j.value.get("level") is not None:
            answered.setdefault(j.assignment_id, set()).add(j.criterion_id)
    for aid, a in content.assignments.items():
        if a.status != "submitted" or record.assignments[aid]["status"] == "submitted":
            continue
        task = found[aid].task_pk
        judged = {
            ext for (t, ext), (_c, kind, _l) in criteria.items() if t == task and kind != "auto"
        }
        missing = sorted(judged - answered.get(aid, set()))
        if missing:
            raise PacketError(
                f"assignment {aid} ({a.task_id}) is marked submitted with {len(missing)} of "
                f"its {len(judged)} criteria unanswered (first: {missing[0]}); the app never "
                "submits that, so nothing was merged"
            )


def _check_generation(s: Any, manifest: Manifest) -> None:
    """Refuse an older copy of a packet than one already merged (its verdicts would roll
    the newer ones back), and remember the newest merged save of each packet."""
    key = f"packet_generation:{manifest.packet_id}"
    row = s.get(m.DatabaseInfo, key, with_for_update=True)
    merged = int(row.value) if row is not None else -1
    if manifest.generation < merged:
        raise PacketError(
            f"this is an older copy of packet {manifest.packet_id} ({manifest.grader}): "
            f"save {manifest.generation} of it, but save {merged} was merged already; "
            "merging it would undo the later work, so nothing was merged (merge the newest "
            "copy, or export a new packet)"
        )
    if row is None:
        s.add(m.DatabaseInfo(key=key, value=str(manifest.generation)))
    elif manifest.generation > merged:
        row.value = str(manifest.generation)
    record_packet_merge(s, manifest.packet_id, manifest.generation, datetime.now(UTC))


def _unpacked_work(src: Path, manifest: Manifest) -> list[str]:
    """A warning when the packet's working folder (beside it) holds work this file lacks.

    The app commits every judgment to the working folder at once and packs it into the
    file now and then and on close; after a crash the newest work may be only there.
    """
    work = default_workdir(src.expanduser().absolute())
    state = load_state(work)
    if (
        state is None
        or state.get("packet_id") != manifest.packet_id
        or not (work / DATABASE).exists()
    ):
        return []
    try:
        unpacked = grading_fingerprint(work / DATABASE) != state.get("fingerprint")
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


def _strip_nul(content: PacketContent, record: Record) -> None:
    """PostgreSQL text cannot hold NUL: drop it on every side, so comparisons stay fair.

    A packet graded in SQLite may hold a NUL a grader pasted; the value is merged without
    it rather than refused (the database's own values can never contain one).
    """
    for j in content.judgments:
        j.value = no_nul(j.value)
        j.history = no_nul(j.history)
    for a in content.assignments.values():
        a.skip_reason = no_nul(a.skip_reason)
    for r in content.reviews:
        r.answers = no_nul(r.answers)
        r.comment = no_nul(r.comment)
        r.history = no_nul(r.history)
    record.judgments = {k: no_nul(v) for k, v in record.judgments.items()}
    record.assignments = {k: no_nul(v) for k, v in record.assignments.items()}
    record.reviews = {k: no_nul(v) for k, v in record.reviews.items()}


def _reset(report: MergeReport) -> None:
    for name in (
        "judgments_added",
        "judgments_updated",
        "judgments_unchanged",
        "judgments_confirmed",
        "judgments_already",
        "history_added",
        "assignments_updated",
        "reopens_added",
        "reviews_added",
        "reviews_updated",
    ):
        setattr(report, name, 0)
    report.conflicts.clear()


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
    record: Record,
    content: PacketContent,
    report: MergeReport,
) -> None:
    grader = manifest.grader
    with db.write() as s:
        g = s.execute(select(m.Grader.id, m.Grader.kind).where(m.Grader.name == grader)).first()
        if g is None or g.kind != GraderKind.HUMAN.value:
            raise PacketError(f"this database has no human grader {grader!r} any more")
        _check_generation(s, manifest)
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
                m.Criterion.verdict_version,
            ).where(m.Criterion.task_id.in_(task_pks))
        ).all()
        criteria = {
            (t, ext): (cid, kind, int(levels)) for cid, t, ext, kind, levels, _v in crit_rows
        }
        verdict_versions = {int(row[0]): int(row[5]) for row in crit_rows}
        _check_submissions(content, record, found, criteria)
        now = m.utcnow()
        _merge_judgments(
            s, manifest, record, content, found, criteria, verdict_versions, g.id, now, report
        )
        _merge_assignments(s, manifest, record, content, found, now, report)
        _merge_reopens(s, manifest, content, report)
        _merge_reviews(s, manifest, record, content, found, g.id, now, report)


def _merge_judgments(
    s: Session,
    manifest: Manifest,
    record: Record,
    content: PacketContent,
    found: dict[int, _DbAssignment],
    criteria: dict[tuple[int, str], tuple[int, str, int]],
    verdict_versions: dict[int, int],
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
                *[getattr(m.Judgment, f) for f in FIELDS],
                m.Judgment.revision,
                m.Judgment.source,
                m.Judgment.provenance,
                m.Judgment.updated_at,
                m.Judgment.task_version,
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
    # unclear notes new or changed in the packet: questions back to the coordinators
    asks: list[tuple[int, int, str, int | None, datetime]] = []
    seen: set[tuple[int, str]] = set()
    reconfirmed: list[dict[str, Any]] = []
    # the packet's verdicts were given under the task versions of its export: a revision
    # made since leaves them stale (gradercal.db.revisions)
    exported = datetime.fromisoformat(manifest.created_at) if manifest.created_at else now
    if exported.tzinfo is None:
        exported = exported.replace(tzinfo=UTC)
    given_under = versions_at(s, {a.task_pk for a in found.values()}, exported)
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
        checked_value(pj.value, kind, levels, where)
        base_entry = record.judgments.get((pj.assignment_id, pj.criterion_id))
        base = base_entry["value"] if base_entry else None
        d = current.get((a.response_id, cid))
        dval = judgment_value(d) if d is not None else None
        prov = d.provenance if d is not None and isinstance(d.provenance, dict) else {}
        ours = (
            d is not None and d.source == "packet" and prov.get("packet_id") == manifest.packet_id
        )
        verdict = decide(base, pj.value, dval, current_is_ours=ours)
        if (
            verdict in ("unchanged", "same")
            and d is not None
            and dval is not None
            and verdict_write(
                stored_version=int(d.task_version),
                same=pj.value == dval,
                # a packet without versions (an old one) confirms nothing
                given_under=int(pj.task_version or d.task_version),
                verdict_version=verdict_versions.get(cid, 1),
                answered=pj.value.get("met") is not None or pj.value.get("level") is not None,
            )
            == "confirmed"
        ):  # given again offline under a revised task: no longer stale, the history
            # keeps the version it was first given under
            report.judgments_confirmed += 1
            reconfirmed.append(
                {"jid": d.id, "v": pj.task_version, "rev": d.revision + 1, "now": now}
            )
            revisions.append(
                {
                    "entity": "judgment",
                    "entity_id": d.id,
                    "revision": d.revision,
                    "data": {
                        **dval,
                        "source": d.source,
                        "updated_at": iso_or_none(d.updated_at),
                        "task_version": int(d.task_version),
                    },
                    "actor": manifest.grader,
                    "source": "packet",
                    "changed_at": now,
                }
            )
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
                # the version the packet's verdict was given under (kept if it is chosen)
                "packet_task_version": int(pj.task_version or given_under[a.task_pk]),
                "packet_updated_at": iso_or_none(pj.updated_at),
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
        note = pj.value.get("unclear_note") if pj.value.get("unclear") else None
        if note and (dval is None or not dval.get("unclear") or dval.get("unclear_note") != note):
            asks.append((a.task_pk, cid, str(note), None if d is None else int(d.id), stamp))
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
                "task_version": pj.task_version or given_under[a.task_pk],
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
                    "updated_at": iso_or_none(d.updated_at),
                    "task_version": int(d.task_version),
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
                "task_version": pj.task_version or given_under[a.task_pk],
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
                    **{f: bindparam(f) for f in FIELDS},
                    "source": bindparam("source"),
                    "provenance": bindparam("provenance"),
                    "revision": bindparam("revision"),
                    "updated_at": bindparam("updated_at"),
                    "task_version": bindparam("task_version"),
                }
            ),
            updates,
        )
    if revisions:
        conn.execute(insert(_REVISION_TABLE), revisions)
    if reconfirmed:
        conn.execute(
            update(_JUDGMENT_TABLE)
            .where(_JUDGMENT_TABLE.c.id == bindparam("jid"))
            .values(
                task_version=bindparam("v"), revision=bindparam("rev"), updated_at=bindparam("now")
            ),
            reconfirmed,
        )
    if asks:
        bench_of = dict(
            s.execute(
                select(m.Task.id, m.Task.benchmark_id).where(
                    m.Task.id.in_(sorted({t for t, *_ in asks}))
                )
            ).all()
        )
        for task_pk, cid, note, jid, stamp in asks:
            open_from_flag(
                conn,
                benchmark_id=int(bench_of[task_pk]),
                task_id=task_pk,
                criterion_id=cid,
                author=manifest.grader,
                text=note,
                now=stamp,
                judgment_id=jid,
            )


def _history_json(h: dict[str, Any]) -> dict[str, Any]:
    return {
        "revision": h["revision"],
        "value": h["value"],
        "changed_at": iso_or_none(h.get("changed_at")),
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
    record: Record,
    content: PacketContent,
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
                        "submitted_at": iso_or_none(d.submitted_at),
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


def _merge_reopens(
    s: Session, manifest: Manifest, content: PacketContent, report: MergeReport
) -> None:
    """The packet's reopenings join the assignment's reopen history (entity
    :data:`~gradercal.db.grading.REOPEN_ENTITY`, as the app records them online), each
    once: a reopening merged before (same packet, same packet revision) is not added
    again. The state each left and its time are the packet's; the packet and its
    revision are noted in the row's data."""
    if not content.reopens:
        return
    ids = sorted(content.reopens)
    merged: set[tuple[int, int]] = set()
    counts: dict[int, int] = defaultdict(int)
    for eid, rev, data in s.execute(
        select(m.Revision.entity_id, m.Revision.revision, m.Revision.data).where(
            m.Revision.entity == REOPEN_ENTITY, m.Revision.entity_id.in_(ids)
        )
    ):
        counts[eid] = max(counts[eid], int(rev))
        if isinstance(data, dict) and data.get("packet_id") == manifest.packet_id:
            merged.add((eid, int(data.get("packet_revision", -1))))
    rows: list[dict[str, Any]] = []
    for aid in ids:
        for r in content.reopens[aid]:
            if (aid, r["revision"]) in merged:
                continue
            counts[aid] += 1
            rows.append(
                {
                    "entity": REOPEN_ENTITY,
                    "entity_id": aid,
                    "revision": counts[aid],
                    "data": {
                        **r["data"],
                        "packet_id": manifest.packet_id,
                        "packet_revision": r["revision"],
                    },
                    "actor": manifest.grader,
                    "source": "packet",
                    "changed_at": r["changed_at"] or m.utcnow(),
                }
            )
    if rows:
        s.connection().execute(insert(_REVISION_TABLE), rows)
        report.reopens_added += len(rows)


def _merge_reviews(
    s: Session,
    manifest: Manifest,
    record: Record,
    content: PacketContent,
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
                        "updated_at": iso_or_none(row.updated_at),
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
