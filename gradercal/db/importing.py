"""Importing a benchmark into the database: :class:`ImportMixin` gives
:class:`gradercal.db.repo.Repository` its :meth:`~ImportMixin.import_data` (domain objects to
rows, in batches, journaled so a killed import is undone, every change of a stored verdict
kept as a revision), with the :class:`ImportReport` it returns.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Row, Table, func, insert, select, tuple_, update
from sqlalchemy.orm import Session

from gradercal._util.collector import collections_paused
from gradercal.db import import_journal as journal
from gradercal.db import models as m
from gradercal.db.session import Database
from gradercal.db.versions import VerdictWrite, verdict_write
from gradercal.errors import ConflictError, Problem, ValidationError
from gradercal.model import (
    BenchmarkData,
    GraderKind,
    Judgment,
    Response,
    Task,
)

if TYPE_CHECKING:  # pandas and the file formats load on first use (app start-up time)
    pass
from gradercal.db.snapshots import (
    JUDGMENT_FIELDS,
    criterion_values,
    judgment_snapshot,
    keep_revision,
    response_task_version,
    revise_adjudication,
)

#: Rows per executemany batch, and bytes of artifact data per batch.
BATCH_ROWS = 5000
BATCH_BYTES = 64 * 1024 * 1024
#: Bytes per batch when each batch is its own transaction (SQLite): a save waits for one.
COMMIT_BYTES = 8 * 1024 * 1024

Progress = Callable[[str, int, int], None]
"""Progress callback: ``(stage, done, total)``."""


@dataclass
class ImportReport:
    """What an import did. ``changed`` is False when the database was left as it was."""

    benchmark: str
    benchmark_created: bool = False
    pass_threshold_changed: tuple[float, float] | None = None
    #: benchmark.json's ``instructions`` replaced the stored ones
    instructions_changed: bool = False
    tasks_added: int = 0
    tasks_unchanged: int = 0
    artifacts_added: int = 0
    blobs_added: int = 0
    bytes_added: int = 0
    responses_added: int = 0
    responses_unchanged: int = 0
    graders_added: list[str] = field(default_factory=list)
    judgments_added: int = 0
    judgments_updated: int = 0
    #: stale verdicts given again, unchanged, under a version at which they are current
    judgments_confirmed: int = 0
    #: the task versions they were confirmed under, ascending
    confirmed_versions: list[int] = field(default_factory=list)
    judgments_unchanged: int = 0
    adjudications_added: int = 0
    adjudications_updated: int = 0
    adjudications_unchanged: int = 0
    #: judge graders whose model the file named (stored where it was unknown)
    grader_models_set: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(
            self.benchmark_created
            or self.pass_threshold_changed
            or self.instructions_changed
            or self.tasks_added
            or self.responses_added
            or self.graders_added
            or self.judgments_added
            or self.judgments_updated
            or self.judgments_confirmed
            or self.adjudications_added
            or self.adjudications_updated
            or self.grader_models_set
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["changed"] = self.changed
        return out


def _judgment_columns() -> tuple[Any, ...]:
    return (
        m.Judgment.id,
        m.Judgment.grader_id,
        m.Judgment.response_id,
        m.Judgment.criterion_id,
        m.Judgment.revision,
        m.Judgment.source,
        m.Judgment.updated_at,
        m.Judgment.task_version,
        *[getattr(m.Judgment, f) for f in JUDGMENT_FIELDS],
    )


#: A judgment as the import compares and supersedes it.
_JUDGMENT_ROW = _judgment_columns()


def _import_write(
    stored: Row[Any], values: Mapping[str, Any], verdict_versions: Mapping[int, int]
) -> VerdictWrite:
    """What importing ``values`` (with the ``task_version`` it is given under) does to
    the stored judgment: the rule every writer follows (:func:`verdict_write`)."""
    return verdict_write(
        stored_version=int(stored.task_version),
        same=all(getattr(stored, f) == values[f] for f in JUDGMENT_FIELDS),
        given_under=int(values["task_version"]),
        verdict_version=int(verdict_versions.get(stored.criterion_id, 1)),
        answered=values["met"] is not None or values["level"] is not None,
    )


def _task_external_id(s: Session, task_pk: int) -> str:
    return str(s.scalar(select(m.Task.external_id).where(m.Task.id == task_pk)))


def _verdict_versions(s: Session, task_ids: Iterable[int]) -> dict[int, int]:
    """``criterion row id → verdict_version`` for the criteria of these tasks."""
    out: dict[int, int] = {}
    for batch in _batches(sorted(task_ids), 500):
        for cid, version in s.execute(
            select(m.Criterion.id, m.Criterion.verdict_version).where(
                m.Criterion.task_id.in_(batch)
            )
        ):
            out[int(cid)] = int(version)
    return out


def _relocked(
    s: Session,
    updates: list[tuple[Row[Any], dict[str, Any], datetime | None]],
    report: ImportReport,
    verdict_versions: Mapping[int, int],
) -> list[tuple[Row[Any], dict[str, Any], datetime | None]]:
    """The judgments an import changes, read again under the locks a grader's save takes
    (their queue items, in id order, as every writer takes them): a save committed since
    the import first read them is kept in the history, and revisions never repeat. What
    the import does to each is decided again on the row as it is now (a save may have
    given the same value, or confirmed it, first).
    """
    pairs = sorted({(old.grader_id, old.response_id) for old, _v, _w in updates})
    for batch in _batches(pairs, 500):
        s.execute(
            select(m.Assignment.id)
            .where(tuple_(m.Assignment.grader_id, m.Assignment.response_id).in_(batch))
            .order_by(m.Assignment.id)
            .with_for_update()
        ).all()
    fresh: dict[int, Row[Any]] = {}
    for batch in _batches(sorted(old.id for old, _v, _w in updates), 500):
        for row in s.execute(
            select(*_JUDGMENT_ROW).where(m.Judgment.id.in_(batch)).with_for_update()
        ):
            fresh[row.id] = row
    out = []
    for old, values, when in updates:
        now_row = fresh[old.id]
        if _import_write(now_row, values, verdict_versions) == "unchanged":
            report.judgments_unchanged += 1  # a save got there first, with the same value
            continue
        out.append((now_row, values, when))
    return out


def _criterion_ids(s: Session, task_ids: Iterable[int]) -> dict[tuple[int, str], int]:
    """``(task row id, criterion id in the files) → criterion row id`` for these tasks."""
    out: dict[tuple[int, str], int] = {}
    for batch in _batches(sorted(task_ids), 500):
        for cid, tid, ext in s.execute(
            select(m.Criterion.id, m.Criterion.task_id, m.Criterion.external_id).where(
                m.Criterion.task_id.in_(batch)
            )
        ):
            out[(tid, ext)] = cid
    return out


def _blind_order(new: list[tuple[Response, str]]) -> list[tuple[Response, str]]:
    """New responses in the order their row ids are given: not the file's, which often
    lists each model's responses together (a grader reads the ids of the responses they
    grade, and must not be able to group them by model), but an order keyed by everything
    imported together, ids and content (models included) — the same for the same file, so
    imports are reproducible, yet unknown to a grader, who sees neither the models nor
    the other graders' responses. Outputs list responses in file order all the same
    (``response.position``)."""
    seed = hashlib.sha256()
    for r, digest in sorted(new, key=lambda x: x[0].id):
        seed.update(f"{r.id}\x00{digest}\x00".encode())
    key = seed.digest()
    return sorted(new, key=lambda x: hashlib.sha256(key + x[0].id.encode()).digest())


def _core_insert(s: Session, table: type[m.Base], rows: Sequence[dict[str, Any]]) -> None:
    """executemany through SQLAlchemy Core: rows keyed by column name, no ORM bookkeeping."""
    if rows:
        s.connection().execute(insert(cast(Table, table.__table__)), list(rows))


def _raw_insert(
    s: Session,
    table: type[m.Base],
    columns: Sequence[str],
    rows: Sequence[tuple[Any, ...]],
    *,
    skip_existing: Sequence[str] = (),
) -> None:
    """executemany straight to the driver, for the one table with hundreds of thousands of rows.

    Values must already be what the driver stores (dates through the dialect's bind
    processor, see :meth:`Repository._import_judgments`); only plain
    scalars (str, int, float, bool, None) go through here. With ``skip_existing`` (the
    columns of a unique key) a row whose key is already stored is left out.
    """
    if not rows:
        return
    conn = s.connection()
    mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    name = table.__table__.name  # type: ignore[attr-defined]
    sql = f"INSERT INTO {name} ({', '.join(columns)}) VALUES ({', '.join([mark] * len(columns))})"
    if skip_existing:
        sql += f" ON CONFLICT ({', '.join(skip_existing)}) DO NOTHING"
    conn.exec_driver_sql(sql, list(rows))


#: The unique key of a judgment, and the first columns of every judgment row the import adds.
_JUDGMENT_KEY = ("grader_id", "response_id", "criterion_id")


def _journaled_insert(s: Session, table: type[m.Base], rows: Sequence[dict[str, Any]]) -> None:
    """One batch of an import's rows; in a batched import it commits with its journal entry."""
    if not rows:
        return
    before = journal.max_id(s, table) if journal.journal_of(s) else 0
    _core_insert(s, table, rows)
    journal.added(s, table, before)
    journal.checkpoint(s)


def _insert_blobs(s: Session, rows: Sequence[dict[str, Any]]) -> None:
    _core_insert(s, m.Blob, rows)
    journal.note(s, {"blobs": [r["sha256"] for r in rows]})
    journal.checkpoint(s)


def _not_inserted(s: Session, batch: Sequence[tuple[Any, ...]], before: int) -> list[Any]:
    """The rows of ``batch`` (keys first) that an insert skipped because a judgment with
    their key was stored in the meantime: those with no row above id ``before``."""
    ours = int(
        s.scalar(select(func.count()).select_from(m.Judgment).where(m.Judgment.id > before)) or 0
    )
    if ours == len(batch):
        return []
    mine = {
        (g, r, c)
        for g, r, c in s.execute(
            select(m.Judgment.grader_id, m.Judgment.response_id, m.Judgment.criterion_id).where(
                m.Judgment.id > before
            )
        )
    }
    return [row for row in batch if tuple(row[:3]) not in mine]


def _late_updates(
    s: Session,
    late: Sequence[tuple[Any, ...]],
    report: ImportReport,
    verdict_versions: Mapping[int, int],
) -> list[tuple[Row[Any], dict[str, Any], datetime | None]]:
    """Rows the import meant to add that a grader's save added first, as updates: the
    stored row, the file's values (the fields follow the key in each row)."""
    out: list[tuple[Row[Any], dict[str, Any], datetime | None]] = []
    for row in late:
        stored = s.execute(
            select(*_JUDGMENT_ROW).where(
                m.Judgment.grader_id == row[0],
                m.Judgment.response_id == row[1],
                m.Judgment.criterion_id == row[2],
            )
        ).one()
        values = dict(zip(JUDGMENT_FIELDS, row[3 : 3 + len(JUDGMENT_FIELDS)], strict=True))
        values["task_version"] = row[-1]
        if _import_write(stored, values, verdict_versions) == "unchanged":
            report.judgments_unchanged += 1
            continue
        out.append((stored, values, None))
    return out


def _batches(rows: Sequence[Any], size: int = BATCH_ROWS) -> Iterator[Sequence[Any]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def _judgment_values(j: Judgment) -> dict[str, Any]:
    return {
        "met": j.met,
        "level": j.level,
        "confidence": j.confidence,
        "rationale": j.rationale,
        "unclear": j.unclear,
        "unclear_note": j.unclear_note,
    }


class ImportMixin:
    """The import of :class:`gradercal.db.repo.Repository`."""

    db: Database

    if TYPE_CHECKING:

        def benchmark(self, name: str | None = None) -> m.Benchmark: ...

    # -- import --------------------------------------------------------------------
    def import_data(
        self,
        data: BenchmarkData,
        *,
        threshold_from_file: bool = True,
        progress: Progress | None = None,
    ) -> ImportReport:
        """Write validated benchmark data, all or nothing.

        Identical tasks, responses and judgments are skipped, so importing the same
        data twice changes nothing. A task or response that differs from the stored one
        raises :class:`ConflictError` (nothing is written); a judgment whose verdict
        changed is updated, its old value kept as a revision.

        On PostgreSQL this is one transaction. On SQLite, where a transaction that
        writes shuts every other writer out, the rows are committed in batches of
        :data:`BATCH_ROWS`, so a grader's save waits for one batch at most, and a
        journal undoes every batch if the import does not finish
        (:mod:`gradercal.db.import_journal`); the changes to existing rows come last,
        in one transaction.
        """
        report = ImportReport(benchmark=data.benchmark.name)
        notify = progress or (lambda _stage, _done, _total: None)
        writing = (
            journal.batched(self.db, data.benchmark.name) if self.db.is_sqlite else self.db.write()
        )
        with writing as s, collections_paused():  # many small records, no cycles
            bench = s.scalar(select(m.Benchmark).where(m.Benchmark.name == data.benchmark.name))
            if bench is None:
                bench = m.Benchmark(
                    name=data.benchmark.name,
                    pass_threshold=data.benchmark.pass_threshold,
                    format_version=data.benchmark.format_version,
                    instructions=data.benchmark.instructions,
                )
                s.add(bench)
                s.flush()
                journal.note(s, {"benchmark": bench.id})
                journal.checkpoint(s)
                report.benchmark_created = True
            bench_id = bench.id
            task_ids = self._import_tasks(s, bench_id, data, report, notify)
            response_ids = self._import_responses(s, bench_id, data, task_ids, report, notify)
            self._import_judgments(s, bench_id, data, response_ids, report, notify)
            self._import_adjudications(s, data, response_ids, report)
            stored = s.get(m.Benchmark, bench_id)
            assert stored is not None
            if (
                threshold_from_file
                and not report.benchmark_created
                and stored.pass_threshold != data.benchmark.pass_threshold
            ):
                report.pass_threshold_changed = (
                    stored.pass_threshold,
                    data.benchmark.pass_threshold,
                )
                stored.pass_threshold = data.benchmark.pass_threshold
            if (
                threshold_from_file
                and data.benchmark.instructions is not None
                and stored.instructions != data.benchmark.instructions
            ):
                # new instructions in benchmark.json replace the stored ones; a file
                # without any leaves them as they are
                stored.instructions = data.benchmark.instructions
                report.instructions_changed = True
        return report

    def _import_tasks(
        self, s: Session, bench_id: int, data: BenchmarkData, report: ImportReport, notify: Progress
    ) -> dict[str, int]:
        existing = {
            ext: (tid, h)
            for tid, ext, h in s.execute(
                select(m.Task.id, m.Task.external_id, m.Task.content_hash).where(
                    m.Task.benchmark_id == bench_id
                )
            )
        }
        task_ids = {ext: tid for ext, (tid, _h) in existing.items()}
        new: list[tuple[Task, str]] = []
        conflicts: list[Problem] = []
        for task in data.tasks:
            digest = task.content_hash()
            if task.id in existing:
                if existing[task.id][1] == digest:
                    report.tasks_unchanged += 1
                else:
                    conflicts.append(
                        Problem(
                            "tasks.jsonl",
                            None,
                            task.id,
                            "task differs from the one already stored (prompt, rubric or "
                            "artifacts changed); import it under a new id or into a new benchmark",
                        )
                    )
            else:
                new.append((task, digest))
        if conflicts:
            raise ConflictError(ValidationError(conflicts).render())
        if not new:
            return task_ids
        self._store_blobs(s, [t for t, _ in new], data.blobs, report, notify)
        start = (
            s.scalar(select(func.max(m.Task.position)).where(m.Task.benchmark_id == bench_id)) or -1
        ) + 1
        task_rows = [
            {
                "benchmark_id": bench_id,
                "external_id": t.id,
                "position": start + i,
                "prompt": t.prompt,
                "workflow": t.workflow,
                "domain": t.domain,
                "answer_format": t.answer_format,
                "tags": list(t.tags),
                "metadata": t.metadata,
                "content_hash": digest,
                "version": t.version,
            }
            for i, (t, digest) in enumerate(new)
        ]
        ids = self._insert_returning_ids(s, m.Task, task_rows)
        crit_rows: list[dict[str, Any]] = []
        art_rows: list[dict[str, Any]] = []
        for (t, _), tid in zip(new, ids, strict=True):
            task_ids[t.id] = tid
            for c in t.criteria:
                crit_rows.append(
                    {
                        "task_id": tid,
                        **criterion_values(c),
                        # a task first stored at version N (a revised task's export):
                        # verdicts given under an older version are stale
                        "version": t.version,
                        "verdict_version": t.version,
                    }
                )
            for a in t.artifacts:
                art_rows.append(
                    {
                        "task_id": tid,
                        "position": a.position,
                        "kind": a.kind.value,
                        "title": a.title,
                        "original_name": a.original_name,
                        "path": a.path,
                        "url": a.url,
                        "media_type": a.media_type,
                        "sha256": a.sha256,
                        "size": a.size,
                    }
                )
        total = len(crit_rows)
        for done, batch in enumerate(_batches(crit_rows), start=1):
            _journaled_insert(s, m.Criterion, batch)
            notify("criteria", min(done * BATCH_ROWS, total), total)
        for batch in _batches(art_rows):
            _journaled_insert(s, m.Artifact, batch)
        report.tasks_added = len(new)
        report.artifacts_added = len(art_rows)
        return task_ids

    @staticmethod
    def _insert_returning_ids(
        s: Session, table: type[m.Base], rows: list[dict[str, Any]]
    ) -> list[int]:
        ids: list[int] = []
        core = cast(Table, table.__table__)
        stmt = insert(core).returning(core.c.id, sort_by_parameter_order=True)
        for batch in _batches(rows):
            before = journal.max_id(s, table) if journal.journal_of(s) else 0
            ids.extend(s.connection().execute(stmt, list(batch)).scalars().all())
            journal.added(s, table, before)
            journal.checkpoint(s)
        return ids

    def _store_blobs(
        self,
        s: Session,
        tasks: Iterable[Task],
        paths: dict[str, str],
        report: ImportReport,
        notify: Progress,
    ) -> None:
        wanted = sorted({a.sha256 for t in tasks for a in t.artifacts if a.sha256})
        if not wanted:
            return
        have: set[str] = set()
        for batch in _batches(wanted, 500):
            have.update(s.scalars(select(m.Blob.sha256).where(m.Blob.sha256.in_(batch))))
        missing = [h for h in wanted if h not in have]
        limit = COMMIT_BYTES if journal.journal_of(s) else BATCH_BYTES
        pending: list[dict[str, Any]] = []
        pending_bytes = 0
        for done, digest in enumerate(missing, start=1):
            path = Path(paths[digest])
            blob = path.read_bytes()
            if hashlib.sha256(blob).hexdigest() != digest:
                raise ConflictError(f"{path}: file changed while it was being imported; try again")
            pending.append({"sha256": digest, "size": len(blob), "data": blob})
            pending_bytes += len(blob)
            report.blobs_added += 1
            report.bytes_added += len(blob)
            if pending_bytes >= limit or len(pending) >= BATCH_ROWS:
                _insert_blobs(s, pending)
                pending, pending_bytes = [], 0
                notify("artifacts", done, len(missing))
        if pending:
            _insert_blobs(s, pending)
        notify("artifacts", len(missing), len(missing))

    def _import_responses(
        self,
        s: Session,
        bench_id: int,
        data: BenchmarkData,
        task_ids: dict[str, int],
        report: ImportReport,
        notify: Progress,
    ) -> dict[str, tuple[int, int]]:
        """Returns ``external response id → (response row id, task row id)``."""
        existing = {
            ext: (rid, tid, h)
            for rid, tid, ext, h in s.execute(
                select(
                    m.Response.id,
                    m.Response.task_id,
                    m.Response.external_id,
                    m.Response.content_hash,
                ).where(m.Response.benchmark_id == bench_id)
            )
        }
        out = {ext: (rid, tid) for ext, (rid, tid, _h) in existing.items()}
        new: list[tuple[Response, str]] = []
        conflicts: list[Problem] = []
        for r in data.responses:
            digest = r.content_hash()
            if r.id in existing:
                if existing[r.id][2] == digest:
                    report.responses_unchanged += 1
                else:
                    conflicts.append(
                        Problem(
                            "responses.jsonl",
                            None,
                            r.id,
                            "response differs from the one already stored (text, model, task "
                            "or answer changed); give it a new id",
                        )
                    )
            elif r.task_id not in task_ids:  # the reader checks this; keep the guard cheap
                conflicts.append(
                    Problem("responses.jsonl", None, r.id, f"unknown task_id {r.task_id!r}")
                )
            else:
                new.append((r, digest))
        if conflicts:
            raise ConflictError(ValidationError(conflicts).render())
        # positions continue after every response stored (the file's order); row ids
        # are given in another order (_blind_order)
        start = int(s.scalar(select(func.max(m.Response.position))) or 0) + 1
        positions = {r.id: start + n for n, (r, _d) in enumerate(new)}
        new = _blind_order(new)
        rows = [
            {
                "benchmark_id": bench_id,
                "task_id": task_ids[r.task_id],
                "position": positions[r.id],
                "external_id": r.id,
                "model": r.model,
                "text": r.text,
                "answer": r.answer,
                "content_hash": digest,
            }
            for r, digest in new
        ]
        ids = self._insert_returning_ids(s, m.Response, rows)
        for (r, _), rid in zip(new, ids, strict=True):
            out[r.id] = (rid, task_ids[r.task_id])
        report.responses_added = len(new)
        notify("responses", len(new), len(new))
        return out

    def _grader_ids(
        self,
        s: Session,
        judgments: Sequence[Judgment],
        report: ImportReport,
        data_models: Mapping[str, str] | None = None,
    ) -> dict[str, int]:
        kinds: dict[str, GraderKind] = {}
        for j in judgments:
            kinds.setdefault(j.grader, j.grader_kind)
        if not kinds:
            return {}
        rows = s.execute(
            select(m.Grader.id, m.Grader.name, m.Grader.kind, m.Grader.model).where(
                m.Grader.name.in_(list(kinds))
            )
        )
        models = data_models or {}
        ids: dict[str, int] = {}
        for gid, name, kind, model in rows:
            if kind != kinds[name].value:
                raise ConflictError(
                    f"grader {name!r} is stored as a {kind}, the file says {kinds[name].value}"
                )
            wanted = models.get(name)
            if wanted is not None and model not in (None, wanted):
                raise ConflictError(
                    f"judge {name!r} is stored as model {model!r}, the file says {wanted!r}"
                )
            if wanted is not None and model is None:
                s.execute(update(m.Grader).where(m.Grader.id == gid).values(model=wanted))
                journal.note(s, {"grader_model": gid})
                report.grader_models_set.append(name)
            ids[name] = gid
        created = []
        for name, kind in kinds.items():
            if name not in ids:
                g = m.Grader(name=name, kind=kind.value, model=models.get(name))
                s.add(g)
                s.flush()
                ids[name] = g.id
                created.append(g.id)
                report.graders_added.append(name)
        if created:
            journal.note(s, {"graders": created})
        journal.checkpoint(s)
        return ids

    def _import_judgments(
        self,
        s: Session,
        bench_id: int,
        data: BenchmarkData,
        response_ids: dict[str, tuple[int, int]],
        report: ImportReport,
        notify: Progress,
    ) -> None:
        if not data.judgments:
            return
        grader_ids = self._grader_ids(s, data.judgments, report, data.grader_models)
        existing: dict[tuple[int, int, int], Row[Any]] = {}
        with journal.reading(s):  # batched: no write lock while reading and building rows
            task_pks = {response_ids[j.response_id][1] for j in data.judgments}
            crit_ids = _criterion_ids(s, task_pks)
            verdict_versions = _verdict_versions(s, task_pks)
            if not report.benchmark_created:
                q = (
                    select(*_JUDGMENT_ROW)
                    .join(m.Response, m.Response.id == m.Judgment.response_id)
                    .where(
                        m.Response.benchmark_id == bench_id,
                        m.Judgment.grader_id.in_(list(grader_ids.values())),
                    )
                )
                for row in s.execute(q):
                    existing[(row.grader_id, row.response_id, row.criterion_id)] = row
        now = m.utcnow()
        # the dialect's own type (SQLite's DATETIME writes the text its reads expect): the
        # generic DateTime has no bind processor, and the driver's default adapter would
        # write every row's time with an offset, unlike every other writer
        dialect = s.get_bind().dialect
        bind = m.Judgment.__table__.c.created_at.type.dialect_impl(dialect).bind_processor(dialect)

        def stored(when: datetime | None) -> Any:
            value = now if when is None else when
            return bind(value) if bind is not None else value

        stamp = stored(None)
        from gradercal.db.versions import task_versions_of_tasks

        # a verdict from a file is given under the task's version the file names, else
        # under the current one
        current = task_versions_of_tasks(s, {tid for _rid, tid in response_ids.values()})
        future = [
            Problem(
                "judgments",
                None,
                "version",
                f"{j.response_id} / {j.criterion_id} by {j.grader}: given under version "
                f"{j.task_version}, but task {_task_external_id(s, tid)} is at version "
                f"{current[tid]}",
            )
            for j in data.judgments
            for _rid, tid in [response_ids[j.response_id]]
            if j.task_version is not None and j.task_version > current[tid]
        ]
        if future:
            raise ValidationError(future)
        new_rows: list[tuple[Any, ...]] = []
        updates: list[tuple[Row[Any], dict[str, Any], datetime | None]] = []
        for j in data.judgments:
            rid, tid = response_ids[j.response_id]
            key = (grader_ids[j.grader], rid, crit_ids[(tid, j.criterion_id)])
            old = existing.get(key)
            if old is None:
                created = stamp if j.created_at is None else stored(j.created_at)
                new_rows.append(
                    (
                        *key,
                        j.met,
                        j.level,
                        j.confidence,
                        j.rationale,
                        j.unclear,
                        j.unclear_note,
                        "import",
                        1,
                        created,
                        created if j.updated_at is None else stored(j.updated_at),
                        j.task_version or current[tid],
                    )
                )
                continue
            values = _judgment_values(j)
            same = all(getattr(old, f) == values[f] for f in JUDGMENT_FIELDS)
            # given under the version the file names; without one, a changed verdict is
            # given under the current version and an unchanged one keeps its own (so an
            # old file imported again never refreshes a stale verdict)
            if j.task_version is not None:
                values["task_version"] = j.task_version
            else:
                values["task_version"] = int(old.task_version) if same else current[tid]
            if _import_write(old, values, verdict_versions) == "unchanged":
                report.judgments_unchanged += 1
                continue
            updates.append((old, values, j.updated_at))
        total = len(new_rows)
        columns = (
            "grader_id",
            "response_id",
            "criterion_id",
            *JUDGMENT_FIELDS,
            "source",
            "revision",
            "created_at",
            "updated_at",
            "task_version",
        )
        batched = journal.journal_of(s) is not None
        late: list[tuple[Any, ...]] = []
        for done, batch in enumerate(_batches(new_rows), start=1):
            if batched:  # a grader's save may have added one of these since they were read
                before = journal.max_id(s, m.Judgment)
                _raw_insert(s, m.Judgment, columns, batch, skip_existing=_JUDGMENT_KEY)
                journal.added(s, m.Judgment, before)
                late.extend(_not_inserted(s, batch, before))
                journal.checkpoint(s)
            else:
                _raw_insert(s, m.Judgment, columns, batch)
            notify("judgments", min(done * BATCH_ROWS, total), total)
        if late:  # the save came first: the file's value supersedes it, kept in history
            updates.extend(_late_updates(s, late, report, verdict_versions))
        if updates:
            updates = _relocked(s, updates, report, verdict_versions)
        confirmed_under: set[int] = set()
        for old, values, when in updates:
            if _import_write(old, values, verdict_versions) == "confirmed":
                report.judgments_confirmed += 1
                confirmed_under.add(int(values["task_version"]))
            else:
                report.judgments_updated += 1
            self._supersede_judgment(s, old, values, source="import", actor=None, now=now)
            if when is not None:  # the change's own time, from the file
                s.execute(update(m.Judgment).where(m.Judgment.id == old.id).values(updated_at=when))
        report.judgments_added = len(new_rows) - len(late)
        report.confirmed_versions = sorted(confirmed_under)

    def _import_adjudications(
        self,
        s: Session,
        data: BenchmarkData,
        response_ids: dict[str, tuple[int, int]],
        report: ImportReport,
    ) -> None:
        """New final verdicts are added; a changed one is revised, its old value kept in
        ``revision`` (the same history as a decision taken in the app)."""
        if not data.adjudications:
            return
        crit_ids = _criterion_ids(s, {response_ids[a.response_id][1] for a in data.adjudications})
        keys = {
            a: (
                response_ids[a.response_id][0],
                crit_ids[(response_ids[a.response_id][1], a.criterion_id)],
            )
            for a in data.adjudications
        }
        existing: dict[tuple[int, int], m.Adjudication] = {}
        for batch in _batches(sorted({rid for rid, _c in keys.values()}), 500):
            for found in s.scalars(
                select(m.Adjudication)
                .where(m.Adjudication.response_id.in_(batch))
                .with_for_update()
            ):
                existing[(found.response_id, found.criterion_id)] = found
        now = m.utcnow()
        for a, key in keys.items():
            row = existing.get(key)
            if row is None:
                created = a.created_at or now
                s.add(
                    m.Adjudication(
                        response_id=key[0],
                        criterion_id=key[1],
                        adjudicator=a.adjudicator,
                        met=a.met,
                        level=a.level,
                        note=a.note,
                        created_at=created,
                        updated_at=a.updated_at or created,
                        task_version=response_task_version(s, key[0]),
                    )
                )
                report.adjudications_added += 1
                continue
            if (row.met, row.level, row.note, row.adjudicator) == (
                a.met,
                a.level,
                a.note,
                a.adjudicator,
            ):
                report.adjudications_unchanged += 1
                continue
            revise_adjudication(s, row, a, source="import", actor=None, now=now)
            report.adjudications_updated += 1

    @staticmethod
    def _supersede_judgment(
        s: Session,
        old: Row[Any],
        values: dict[str, Any],
        *,
        source: str,
        actor: str | None,
        now: datetime,
    ) -> None:
        keep_revision(s, "judgment", old, judgment_snapshot(old), actor, source, now)
        s.execute(
            update(m.Judgment)
            .where(m.Judgment.id == old.id)
            .values(**values, revision=old.revision + 1, source=source, updated_at=now)
        )
