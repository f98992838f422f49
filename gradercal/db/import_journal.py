"""A long import on SQLite, written in short transactions that still add up to all or nothing.

SQLite lets one writer in at a time. An import that wrote a large benchmark in a single
transaction held the write lock for the whole import, so a grader's save in the app waited
behind it for ``busy_timeout`` and then failed. Here an import commits every batch of rows
(a few thousand, a fraction of a second) on its own, so a save waits at most one batch.

What makes the batches one import is a journal in ``database_info``, written in the same
transaction as the rows it describes:

* ``import:<token>`` — the header: which process (pid, host), when, which benchmark. It is
  also the lock that keeps a second import out while the first one runs;
* ``import:<token>:<n>`` — one entry per committed batch: the id range of the rows it added
  to a table (ids are read under the write lock before and after the batch, so a save that
  commits between two batches is never inside a range), the artifact blobs, graders and
  benchmark it created.

The import's last transaction applies what changes existing rows (verdicts that differ,
adjudications, the pass threshold) and deletes the journal, so a finished import leaves
nothing behind. If the import fails, its own ``except`` undoes every committed batch
(:func:`undo`); if the process was killed, the next import on the same host finds the
header of a dead pid and undoes it first, and ``gradercal check`` reports it.

PostgreSQL does not need any of this: writers there do not exclude one another, so the
import stays one transaction.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import and_, delete, exists, func, select, update
from sqlalchemy.orm import Session

from gradercal.db import models as m
from gradercal.db import write_turns
from gradercal.db.session import Database
from gradercal.errors import ConflictError

if TYPE_CHECKING:
    from sqlalchemy.engine import CursorResult

PREFIX = "import:"

#: Tables whose added rows an import records as id ranges, in the order undo deletes them
#: (children first, though the foreign keys cascade anyway).
_RANGE_TABLES: dict[str, type[m.Base]] = {
    "judgment": m.Judgment,
    "artifact": m.Artifact,
    "criterion": m.Criterion,
    "response": m.Response,
    "task": m.Task,
}


@dataclass(frozen=True)
class Header:
    """Who is (or was) importing."""

    token: str
    pid: int
    host: str
    started: str
    benchmark: str

    @property
    def alive(self) -> bool | None:
        """Whether the import still runs: ``None`` when it cannot be told (another host).
        An import of this very process that :func:`batched` has left (one that failed and
        left batches behind) is over, though its process lives on (the app, a test)."""
        if self.host != socket.gethostname():
            return None
        if self.pid == os.getpid() and self.token in _ENDED:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # it exists, under another user
            return True
        return True

    def describe(self) -> str:
        return (
            f"an import of {self.benchmark!r} started {self.started} by process {self.pid} "
            f"on {self.host}"
        )


@dataclass
class UndoReport:
    """What undoing an unfinished import removed, and what it kept because later work
    depends on it."""

    header: Header
    rows_deleted: dict[str, int] = field(default_factory=dict)
    judgments_kept: int = 0
    blobs_deleted: int = 0
    graders_deleted: int = 0
    benchmark_deleted: bool = False


class ImportBusyError(ConflictError):
    """Another import is writing to this SQLite database."""


def headers(s: Session) -> list[Header]:
    """Every import journal in the database (normally none)."""
    out = []
    for key, value in s.execute(
        select(m.DatabaseInfo.key, m.DatabaseInfo.value).where(
            m.DatabaseInfo.key.like(f"{PREFIX}%")
        )
    ):
        if key.count(":") != 1:
            continue
        data = json.loads(value)
        out.append(
            Header(
                token=key[len(PREFIX) :],
                pid=int(data["pid"]),
                host=str(data["host"]),
                started=str(data["started"]),
                benchmark=str(data["benchmark"]),
            )
        )
    return out


class Journal:
    """The journal of one running import, kept on its session (``session.info``)."""

    def __init__(self, token: str, turns: str | None = None) -> None:
        self.token = token
        self.turns = turns  # the database's turns file (gradercal.db.write_turns)
        self.pending: list[dict[str, Any]] = []
        self.written = 0

    def note(self, entry: dict[str, Any]) -> None:
        self.pending.append(entry)

    def flush(self, s: Session) -> None:
        """Write the entries noted in this transaction, in this transaction."""
        for entry in self.pending:
            self.written += 1
            s.add(
                m.DatabaseInfo(
                    key=f"{PREFIX}{self.token}:{self.written:06d}", value=json.dumps(entry)
                )
            )
        self.pending.clear()
        s.flush()


def journal_of(s: Session) -> Journal | None:
    """The journal of the batched import running on ``s``, if any."""
    found = s.info.get("import_journal")
    return found if isinstance(found, Journal) else None


def max_id(s: Session, table: type[m.Base]) -> int:
    column = table.__table__.c.id
    return int(s.scalar(select(func.max(column))) or 0)


def added(s: Session, table: type[m.Base], before: int) -> None:
    """Record the rows of ``table`` added since its largest id was ``before`` (call it in
    the transaction that added them, before :func:`checkpoint`)."""
    journal = journal_of(s)
    if journal is None:
        return
    after = max_id(s, table)
    if after > before:
        journal.note({"table": table.__tablename__, "lo": before + 1, "hi": after})


def note(s: Session, entry: dict[str, Any]) -> None:
    """Record something else this transaction created (blobs, graders, the benchmark)."""
    journal = journal_of(s)
    if journal is not None:
        journal.note(entry)


def checkpoint(s: Session) -> None:
    """End this batch: its rows and their journal entries commit together, and the write
    lock is free for a grader's save until the next batch begins. Nothing outside a
    batched import."""
    journal = journal_of(s)
    if journal is None:
        return
    journal.flush(s)
    s.commit()
    # let every save that queued behind this batch in before the next one begins
    write_turns.let_waiting_writers_in(journal.turns)


def _bulk_writer(db: Database) -> Any:
    """The engine a bulk writer's batches use: the write lock taken at BEGIN, and no
    shared turn (it yields its turn between batches instead)."""
    return db.engine.execution_options(sqlite_begin="IMMEDIATE", bulk_write=True)


@contextmanager
def reading(s: Session) -> Iterator[Session]:
    """A long read inside a batched import, holding no write lock (SQLite's readers never
    wait for writers in WAL mode). Outside a batched import: the same transaction."""
    journal = journal_of(s)
    if journal is None:
        yield s
        return
    checkpoint(s)
    s.connection(execution_options={"sqlite_begin": "DEFERRED"})
    yield s
    s.commit()  # a read transaction: nothing to write, but it must end before the next write


#: Tokens of the imports this process has ended (see :attr:`Header.alive`).
_ENDED: set[str] = set()


@contextmanager
def batched(db: Database, benchmark: str) -> Iterator[Session]:
    """A session for one import on SQLite that commits batch by batch and undoes every
    batch if the import does not finish.

    The body calls :func:`checkpoint` between batches; its last transaction commits here,
    together with the journal's removal.
    """
    token = uuid.uuid4().hex
    try:
        with _batched(db, benchmark, token) as s:
            yield s
    finally:
        _ENDED.add(token)


@contextmanager
def _batched(db: Database, benchmark: str, token: str) -> Iterator[Session]:
    with Session(_bulk_writer(db), expire_on_commit=False) as s:
        stale = _claim(s, token, benchmark)
        s.commit()
        for header in stale:
            undo(db, header)
        journal = Journal(token, write_turns.path_of(db.url.database))
        s.info["import_journal"] = journal
        try:
            yield s
            journal.flush(s)
            _forget(s, token)
            s.commit()
        except BaseException as exc:
            s.rollback()
            s.info.pop("import_journal", None)
            mine = next((h for h in headers(s) if h.token == token), None)
            s.rollback()
            if mine is not None:
                try:
                    undo(db, mine)
                except Exception as undo_exc:  # a full disk refuses the undo's writes too
                    raise ImportLeftBehind(db, mine, exc, undo_exc) from exc
            raise


def _reason(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return (text.splitlines() or [type(exc).__name__])[0]


def left_behind(db: Database, header: Header) -> str:
    """What the committed batches of an unfinished import hold (``"5,000 judgment rows,
    40 task rows and 1 benchmark"``), from its journal; ``"its committed batches"`` when
    the journal cannot be read."""
    try:
        with Session(db.engine) as s:
            entries = _entries(s, header.token)
    except Exception:
        return "its committed batches"
    rows: dict[str, int] = {}
    other: list[str] = []
    for e in entries:
        if e.get("table") is not None:
            rows[e["table"]] = rows.get(e["table"], 0) + int(e["hi"]) - int(e["lo"]) + 1
        elif "blobs" in e:
            rows["artifact file"] = rows.get("artifact file", 0) + len(e["blobs"])
        elif "graders" in e:
            rows["grader"] = rows.get("grader", 0) + len(e["graders"])
        elif "benchmark" in e:
            other.append("its new benchmark")
    parts = [f"up to {n:,} {name} rows" for name, n in rows.items() if n > 0] + other
    if not parts:
        return "its journal only (no rows)"
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]


class ImportLeftBehind(ConflictError):
    """An import failed after committing batches, and undoing them failed too (a full
    disk refuses the undo's writes as it refused the import's): the message says what
    stays in the database and how to remove it."""

    def __init__(
        self, db: Database, header: Header, cause: BaseException, undo_error: BaseException
    ) -> None:
        self.header = header
        super().__init__(
            f"the import stopped ({_reason(cause)}) after committing "
            f"{left_behind(db, header)}, and undoing them failed too "
            f"({_reason(undo_error)}): they are still in the database, marked as an "
            "unfinished import (`gradercal check` reports import.unfinished; `export` needs "
            "--benchmark meanwhile). Free some space, then remove them with `gradercal "
            "check --undo-import`"
        )


def _claim(s: Session, token: str, benchmark: str) -> list[Header]:
    """Write this import's header, refusing while another import is alive; returns the
    headers of dead imports, to undo."""
    stale = []
    for other in headers(s):
        alive = other.alive
        if alive is False:
            stale.append(other)
            continue
        if alive is None:
            raise ImportBusyError(
                f"{other.describe()} has not finished; if that process is gone, undo "
                "what it wrote with `gradercal check --undo-import`"
            )
        raise ImportBusyError(f"{other.describe()} is still running: wait until it finishes")
    started = datetime.now(UTC).isoformat(timespec="seconds")
    s.add(
        m.DatabaseInfo(
            key=f"{PREFIX}{token}",
            value=json.dumps(
                {
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                    "started": started,
                    "benchmark": benchmark,
                }
            ),
        )
    )
    return stale


def _forget(s: Session, token: str) -> None:
    s.execute(
        delete(m.DatabaseInfo).where(
            (m.DatabaseInfo.key == f"{PREFIX}{token}")
            | m.DatabaseInfo.key.like(f"{PREFIX}{token}:%")
        )
    )


def _entries(s: Session, token: str) -> list[dict[str, Any]]:
    rows = s.execute(
        select(m.DatabaseInfo.key, m.DatabaseInfo.value)
        .where(m.DatabaseInfo.key.like(f"{PREFIX}{token}:%"))
        .order_by(m.DatabaseInfo.key)
    ).all()
    return [json.loads(value) for _key, value in rows]


def undo(db: Database, header: Header, *, step: int = 5000) -> UndoReport:
    """Remove what an unfinished import committed, newest batch first, each deletion in
    its own short transaction; the journal goes last, so an undo that is itself
    interrupted is taken up again by the next one.

    Judgments the import added that a grader has saved since (revision above 1) are kept:
    they are the grader's work now.
    """
    report = UndoReport(header=header)
    turns = write_turns.path_of(db.url.database)
    with Session(_bulk_writer(db)) as s:
        s.info["turns"] = turns
        entries = _entries(s, header.token)
        s.rollback()
        for entry in reversed(entries):
            table_name = entry.get("table")
            if table_name is not None:
                _undo_range(s, table_name, int(entry["lo"]), int(entry["hi"]), step, report)
            elif "blobs" in entry:
                report.blobs_deleted += _undo_blobs(s, entry["blobs"])
            elif "graders" in entry:
                report.graders_deleted += _undo_graders(s, entry["graders"])
            elif "grader_model" in entry:  # a judge's model the import filled in
                s.execute(
                    update(m.Grader)
                    .where(m.Grader.id == int(entry["grader_model"]))
                    .values(model=None)
                )
                _commit(s)
            elif "benchmark" in entry:
                report.benchmark_deleted = _undo_benchmark(s, int(entry["benchmark"]))
        _forget(s, header.token)
        _commit(s)
    return report


def _undo_range(s: Session, name: str, lo: int, hi: int, step: int, report: UndoReport) -> None:
    table = _RANGE_TABLES[name]
    column = table.__table__.c.id
    for start in range(lo, hi + 1, step):
        end = min(start + step - 1, hi)
        where = and_(column >= start, column <= end)
        if table is m.Judgment:
            report.judgments_kept += int(
                s.scalar(
                    select(func.count()).where(where, m.Judgment.revision > 1)
                ) or 0
            )  # fmt: skip
            where = and_(where, m.Judgment.revision == 1)
        gone = _count(s, delete(table).where(where))
        report.rows_deleted[name] = report.rows_deleted.get(name, 0) + gone
        _commit(s)


def _undo_blobs(s: Session, shas: Sequence[str]) -> int:
    gone = 0
    for start in range(0, len(shas), 500):
        batch = list(shas[start : start + 500])
        unused = ~exists().where(m.Artifact.sha256 == m.Blob.sha256)
        gone += _count(s, delete(m.Blob).where(m.Blob.sha256.in_(batch), unused))
        _commit(s)
    return gone


def _undo_graders(s: Session, ids: Sequence[int]) -> int:
    """Graders the import created, unless someone has given them work since."""
    used = exists().where(m.Judgment.grader_id == m.Grader.id) | exists().where(
        m.Assignment.grader_id == m.Grader.id
    )
    gone = _count(s, delete(m.Grader).where(m.Grader.id.in_(list(ids)), ~used))
    _commit(s)
    return int(gone)


def _undo_benchmark(s: Session, bench_id: int) -> bool:
    """The benchmark the import created, unless it holds tasks by now."""
    has_tasks = exists().where(m.Task.benchmark_id == m.Benchmark.id)
    gone = _count(s, delete(m.Benchmark).where(m.Benchmark.id == bench_id, ~has_tasks))
    _commit(s)
    return bool(gone)


def _commit(s: Session) -> None:
    """One step of an undo: commit it, and let the saves queued behind it in."""
    s.commit()
    write_turns.let_waiting_writers_in(s.info.get("turns"))


def _count(s: Session, statement: Any) -> int:
    """Run a DELETE; how many rows it removed."""
    result = cast("CursorResult[Any]", s.execute(statement))
    return int(result.rowcount or 0)
