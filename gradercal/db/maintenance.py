"""Keeping a database safe: backups, integrity checks, opening a damaged file read-only.

* :func:`backup` makes a consistent copy while others keep working: SQLite's online
  backup API (checked with ``PRAGMA quick_check`` before it is renamed into place), or
  ``pg_dump --format=custom`` for PostgreSQL (the password goes through the environment,
  never the command line).
* :func:`check` looks for everything that would mean lost or mixed-up work: SQLite's
  ``PRAGMA integrity_check`` (or ``quick_check``) and ``foreign_key_check``; orphan rows
  on both backends (a judgment whose response, criterion or grader is gone, a judgment
  on a criterion of another task, an artifact without its bytes, history rows of
  nothing …); rows whose history does not explain their current value (a revision
  without the history rows before it, history ahead of the row, repeated revision
  numbers, a verdict given under a task version the task never had, a submitted item
  missing a verdict whose deletion is not recorded); on PostgreSQL, a team setup that
  would let history be skipped (:func:`gradercal.db.team.setup_problems`); every blob's
  bytes re-hashed against its sha256 and size.
* :func:`open_checked` opens a database for the app: a SQLite file that fails its quick
  check is opened **read-only**, with a message saying so, instead of crashing or
  writing into a damaged file; :func:`grading_store` gives the app a store on it that
  reads and refuses every write (:class:`ReadOnlyGradingStore`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from sqlalchemy import create_engine, event, select, text
from sqlalchemy.engine import URL

from gradercal.db import models as m
from gradercal.db.grading import (
    GraderInfo,
    GradingStore,
    JudgmentValue,
    JudgmentVersion,
    QueueItem,
    SavedJudgment,
    TaskReviewValue,
)
from gradercal.db.session import (
    BUSY_TIMEOUT_MS,
    Database,
    DatabaseError,
    display_url,
    open_database,
    resolve_url,
)
from gradercal.errors import GradercalError

if TYPE_CHECKING:  # the journal loads only when an import is undone
    from gradercal.db.import_journal import UndoReport

__all__ = [
    "BackupReport",
    "CheckProblem",
    "CheckReport",
    "MaintenanceError",
    "OpenResult",
    "ReadOnlyError",
    "ReadOnlyGradingStore",
    "backup",
    "check",
    "grading_store",
    "open_checked",
]


class MaintenanceError(DatabaseError):
    """A backup or check could not be made; the message says why and what to do."""


# -- backup ------------------------------------------------------------------------------------
@dataclass
class BackupReport:
    database: str
    path: str
    method: str  # "sqlite-online-backup" or "pg_dump"
    bytes: int
    seconds: float
    verified: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def default_backup_path(db: Database) -> Path:
    """Next to a SQLite file (``NAME.backup-<time>.sqlite``); ``./gradercal-<db>-<time>.dump``."""
    if db.is_sqlite and db.url.database:
        src = Path(db.url.database)
        return src.with_name(f"{src.name}.backup-{_stamp()}.sqlite")
    return Path.cwd() / f"gradercal-{db.url.database or 'db'}-{_stamp()}.dump"


def backup(db: Database, out: str | os.PathLike[str] | None = None) -> BackupReport:
    """Copy the database consistently to ``out`` (default: :func:`default_backup_path`).

    The copy is written to a temporary name, verified, flushed to disk and then renamed,
    so ``out`` is either a complete backup or absent.

    Raises:
        MaintenanceError: the copy failed, or pg_dump is missing or failed.
    """
    started = time.perf_counter()
    target = Path(out).expanduser().absolute() if out is not None else default_backup_path(db)
    target.parent.mkdir(parents=True, exist_ok=True)
    if db.is_sqlite:
        if not db.url.database or db.url.database == ":memory:":
            raise MaintenanceError("an in-memory database cannot be backed up")
        src = Path(db.url.database)
        if target.resolve() == src.resolve():
            raise MaintenanceError(f"{target} is the database itself; choose another file")
        verified = _backup_sqlite(src, target)
        method = "sqlite-online-backup"
    else:
        _backup_postgres(db.url, target)
        method, verified = "pg_dump", "pg_dump exited 0"
    return BackupReport(
        database=db.display,
        path=str(target),
        method=method,
        bytes=target.stat().st_size,
        seconds=round(time.perf_counter() - started, 3),
        verified=verified,
    )


def _tmp_name(target: Path) -> Path:
    return target.with_name(f".{target.name}.{os.getpid()}.tmp")


def _backup_sqlite(src: Path, target: Path) -> str:
    tmp = _tmp_name(target)
    try:
        source = sqlite3.connect(f"file:{quote(str(src))}?mode=ro", uri=True, timeout=30)
        try:
            dest = sqlite3.connect(str(tmp))
            try:
                source.backup(dest)
                result = [r[0] for r in dest.execute("PRAGMA quick_check")]
                dest.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                dest.close()
        finally:
            source.close()
        if result != ["ok"]:
            raise MaintenanceError(
                f"the backup of {src} fails its integrity check ({'; '.join(result)[:300]}); "
                "the database itself may be damaged: run `gradercal check`"
            )
        with tmp.open("rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
        _fsync_dir(target.parent)
    except sqlite3.Error as exc:
        raise MaintenanceError(f"cannot back up {src}: {exc}") from None
    except OSError as exc:
        raise MaintenanceError(f"cannot write {target}: {exc.strerror or exc}") from None
    finally:
        for p in (tmp, tmp.with_name(tmp.name + "-wal"), tmp.with_name(tmp.name + "-shm")):
            if p.exists():
                p.unlink()
    return "quick_check ok"


def _backup_postgres(url: URL, target: Path) -> None:
    exe = shutil.which("pg_dump")
    if exe is None:
        raise MaintenanceError(
            "pg_dump was not found on PATH, so this PostgreSQL database cannot be backed up "
            "from here. Install the PostgreSQL client tools (e.g. `apt-get install "
            "postgresql-client`, the same major version as the server or newer), or use your "
            "database provider's backups."
        )
    env = dict(os.environ)
    if url.password is not None:
        env["PGPASSWORD"] = str(url.password)
    args = [exe, "--format=custom", "--no-password", "--file", str(_tmp_name(target))]
    if url.host:
        args += ["--host", url.host]
    if url.port:
        args += ["--port", str(url.port)]
    if url.username:
        args += ["--username", url.username]
    args.append(str(url.database or "postgres"))
    tmp = _tmp_name(target)
    try:
        proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=24 * 3600)
        if proc.returncode != 0:
            message = proc.stderr.strip() or f"exit status {proc.returncode}"
            if url.password:
                message = message.replace(str(url.password), "***")
            raise MaintenanceError(f"pg_dump failed for {display_url(url)}: {message[:500]}")
        with tmp.open("rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
        _fsync_dir(target.parent)
    except OSError as exc:
        raise MaintenanceError(f"cannot run pg_dump or write {target}: {exc}") from None
    except subprocess.TimeoutExpired:
        raise MaintenanceError("pg_dump did not finish within a day; stopped") from None
    finally:
        if tmp.exists():
            tmp.unlink()


def _fsync_dir(folder: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -- check --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckProblem:
    check: str
    message: str
    count: int = 1


@dataclass
class CheckReport:
    database: str
    checks: list[str] = field(default_factory=list)
    problems: list[CheckProblem] = field(default_factory=list)
    blobs_checked: int = 0
    bytes_hashed: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ok"] = self.ok
        return out


#: (name, SQL counting offending rows, message). Every query is plain SQL for both backends.
ORPHAN_CHECKS: tuple[tuple[str, str, str], ...] = (
    (
        "task.benchmark",
        "SELECT count(*) FROM task t LEFT JOIN benchmark b ON b.id = t.benchmark_id "
        "WHERE b.id IS NULL",
        "tasks whose benchmark is missing",
    ),
    (
        "criterion.task",
        "SELECT count(*) FROM criterion c LEFT JOIN task t ON t.id = c.task_id WHERE t.id IS NULL",
        "criteria whose task is missing",
    ),
    (
        "artifact.task",
        "SELECT count(*) FROM artifact a LEFT JOIN task t ON t.id = a.task_id WHERE t.id IS NULL",
        "artifacts whose task is missing",
    ),
    (
        "artifact.blob",
        "SELECT count(*) FROM artifact a LEFT JOIN blob b ON b.sha256 = a.sha256 "
        "WHERE a.sha256 IS NOT NULL AND b.sha256 IS NULL",
        "artifacts whose bytes are missing",
    ),
    (
        "artifact.size",
        "SELECT count(*) FROM artifact a JOIN blob b ON b.sha256 = a.sha256 "
        "WHERE a.size IS NOT NULL AND a.size <> b.size",
        "artifacts whose recorded size differs from their bytes",
    ),
    (
        "response.task",
        "SELECT count(*) FROM response r LEFT JOIN task t ON t.id = r.task_id "
        "WHERE t.id IS NULL OR t.benchmark_id <> r.benchmark_id",
        "responses whose task is missing or in another benchmark",
    ),
    (
        "assignment.grader",
        "SELECT count(*) FROM assignment a LEFT JOIN grader g ON g.id = a.grader_id "
        "WHERE g.id IS NULL",
        "assignments whose grader is missing",
    ),
    (
        "assignment.response",
        "SELECT count(*) FROM assignment a LEFT JOIN response r ON r.id = a.response_id "
        "WHERE r.id IS NULL",
        "assignments whose response is missing",
    ),
    (
        "assignment.status",
        "SELECT count(*) FROM assignment WHERE status NOT IN "
        "('pending', 'in_progress', 'submitted', 'skipped')",
        "assignments with an unknown status",
    ),
    (
        "judgment.grader",
        "SELECT count(*) FROM judgment j LEFT JOIN grader g ON g.id = j.grader_id "
        "WHERE g.id IS NULL",
        "judgments whose grader is missing",
    ),
    (
        "judgment.response",
        "SELECT count(*) FROM judgment j LEFT JOIN response r ON r.id = j.response_id "
        "WHERE r.id IS NULL",
        "judgments whose response is missing",
    ),
    (
        "judgment.criterion",
        "SELECT count(*) FROM judgment j LEFT JOIN criterion c ON c.id = j.criterion_id "
        "LEFT JOIN response r ON r.id = j.response_id "
        "WHERE c.id IS NULL OR (r.id IS NOT NULL AND c.task_id <> r.task_id)",
        "judgments whose criterion is missing or belongs to another task than the response",
    ),
    (
        "judgment.level",
        "SELECT count(*) FROM judgment j JOIN criterion c ON c.id = j.criterion_id "
        "WHERE j.level IS NOT NULL AND (j.level < 0 OR j.level >= c.levels)",
        "judgments with a level outside their criterion's scale",
    ),
    (
        "judgment.judge_run",
        "SELECT count(*) FROM judgment j LEFT JOIN judge_run r ON r.id = j.judge_run_id "
        "WHERE j.judge_run_id IS NOT NULL AND r.id IS NULL",
        "judgments whose judge run is missing",
    ),
    (
        "adjudication.response",
        "SELECT count(*) FROM adjudication a LEFT JOIN response r ON r.id = a.response_id "
        "LEFT JOIN criterion c ON c.id = a.criterion_id "
        "WHERE r.id IS NULL OR c.id IS NULL OR c.task_id <> r.task_id",
        "adjudications whose response or criterion is missing or mismatched",
    ),
    (
        "task_review.task",
        "SELECT count(*) FROM task_review v LEFT JOIN task t ON t.id = v.task_id "
        "LEFT JOIN grader g ON g.id = v.grader_id WHERE t.id IS NULL OR g.id IS NULL",
        "task reviews whose task or grader is missing",
    ),
    (
        "revision.judgment",
        "SELECT count(*) FROM revision v LEFT JOIN judgment j ON j.id = v.entity_id "
        "WHERE v.entity IN ('judgment', 'packet_conflict') AND j.id IS NULL "
        "AND NOT EXISTS (SELECT 1 FROM revision d WHERE d.entity = 'judgment_deleted' "
        "AND d.entity_id = v.entity_id)",
        "judgment history rows whose judgment is missing (and not recorded as deleted)",
    ),
    (
        "revision.adjudication",
        "SELECT count(*) FROM revision v LEFT JOIN adjudication a ON a.id = v.entity_id "
        "WHERE v.entity = 'adjudication' AND a.id IS NULL "
        "AND NOT EXISTS (SELECT 1 FROM revision d WHERE d.entity = 'adjudication_deleted' "
        "AND d.entity_id = v.entity_id)",
        "adjudication history rows whose adjudication is missing (and not recorded as deleted)",
    ),
    (
        "revision.task_review",
        "SELECT count(*) FROM revision v LEFT JOIN task_review t ON t.id = v.entity_id "
        "WHERE v.entity IN ('task_review', 'packet_conflict_review', 'packet_merge_review') "
        "AND t.id IS NULL",
        "task review history rows whose review is missing",
    ),
    (
        "revision.assignment",
        "SELECT count(*) FROM revision v LEFT JOIN assignment a ON a.id = v.entity_id "
        "WHERE v.entity = 'packet_merge_assignment' AND a.id IS NULL",
        "assignment history rows whose assignment is missing",
    ),
    (
        "revision.conflict_resolution",
        "SELECT count(*) FROM revision v LEFT JOIN revision c ON c.id = v.entity_id "
        "AND c.entity IN ('packet_conflict', 'packet_conflict_review') "
        "WHERE v.entity = 'packet_conflict_resolution' AND c.id IS NULL",
        "conflict resolutions whose conflict is missing",
    ),
    (
        "database_info.database_id",
        "SELECT 1 - count(*) FROM database_info WHERE key = 'database_id'",
        "the database has no database_id",
    ),
)


def _history_checks() -> tuple[tuple[str, str, str], ...]:
    """Rows whose history does not explain their current value: revision ``r`` of a
    judgment or adjudication must come after exactly the history rows ``1 … r-1``."""
    out: list[tuple[str, str, str]] = []
    for table in ("judgment", "adjudication"):
        out += [
            (
                f"{table}.history_gaps",
                f"SELECT count(*) FROM {table} t WHERE t.revision - 1 <> (SELECT count(DISTINCT "
                f"v.revision) FROM revision v WHERE v.entity = '{table}' AND v.entity_id = t.id "
                "AND v.revision >= 1 AND v.revision < t.revision)",
                f"{table}s whose history lacks some of their earlier revisions",
            ),
            (
                f"{table}.history_ahead",
                f"SELECT count(*) FROM revision v JOIN {table} t ON t.id = v.entity_id "
                f"WHERE v.entity = '{table}' AND v.revision >= t.revision",
                f"{table} history rows at or after the current revision (a value changed "
                "without its revision)",
            ),
        ]
    for table in ("judgment", "adjudication"):
        out.append(
            (
                f"{table}.task_version",
                f"SELECT count(*) FROM {table} v JOIN criterion c ON c.id = v.criterion_id "
                "JOIN task t ON t.id = c.task_id "
                "WHERE v.task_version < 1 OR v.task_version > t.version",
                f"{table}s given under a task version the task never had (they would not go "
                "stale when their criterion is revised)",
            )
        )
    out.append(
        (
            "revision.repeated",
            "SELECT count(*) FROM (SELECT entity, entity_id, revision FROM revision "
            "WHERE entity IN ('judgment', 'adjudication') "
            "GROUP BY entity, entity_id, revision HAVING count(*) > 1) d",
            "revision numbers kept twice for the same judgment or adjudication",
        )
    )
    return tuple(out)


#: Checks that history explains every current value (see :func:`_history_checks`).
HISTORY_CHECKS = _history_checks()


def _missing_verdicts_check(sqlite: bool) -> tuple[str, str, str]:
    """Submitted items of a human grader lacking a verdict on one of their judgment
    criteria, with no ``judgment_deleted`` row for it: a verdict removed (or cleared)
    without its history. Submitting needs every verdict, and clearing one reopens the
    item, so nothing else leaves an item like this."""

    def key(k: str) -> str:
        if sqlite:
            return f"json_extract(d.data, '$.{k}')"
        return f"CAST((CAST(d.data AS jsonb) ->> '{k}') AS integer)"

    return (
        "assignment.verdicts_missing",
        "SELECT count(*) FROM assignment a JOIN grader g ON g.id = a.grader_id "
        "JOIN response r ON r.id = a.response_id "
        "JOIN criterion c ON c.task_id = r.task_id AND c.kind = 'judgment' "
        "WHERE a.status = 'submitted' AND g.kind = 'human' AND NOT EXISTS ("
        "SELECT 1 FROM judgment j WHERE j.grader_id = a.grader_id "
        "AND j.response_id = a.response_id AND j.criterion_id = c.id "
        "AND (j.met IS NOT NULL OR j.level IS NOT NULL)) AND NOT EXISTS ("
        "SELECT 1 FROM revision d WHERE d.entity = 'judgment_deleted' "
        f"AND {key('grader_id')} = a.grader_id AND {key('response_id')} = a.response_id "
        f"AND {key('criterion_id')} = c.id)",
        "verdicts missing from submitted items with no record of their deletion (removed "
        "or cleared without their history)",
    )


def check(db: Database, *, quick: bool = False, blobs: bool = True) -> CheckReport:
    """Check the database (see the module docstring). Reads only; never writes.

    Args:
        quick: SQLite ``quick_check`` instead of the slower full ``integrity_check``.
        blobs: re-hash every artifact's bytes (reads them all).
    """
    started = time.perf_counter()
    report = CheckReport(database=db.display)
    if db.is_sqlite:
        _sqlite_checks(db, quick, report)
    try:
        with db.engine.connect() as conn:
            checks = (*ORPHAN_CHECKS, *HISTORY_CHECKS, _missing_verdicts_check(db.is_sqlite))
            for name, sql, message in checks:
                report.checks.append(name)
                n = int(conn.execute(text(sql)).scalar() or 0)
                if n:
                    report.problems.append(CheckProblem(name, f"{n} {message}", n))
            if not db.is_sqlite:  # team mode: a setup that would let history be skipped
                from gradercal.db.team import setup_problems

                report.checks += ["team.history_functions", "team.temporary_tables"]
                for name, message, n in setup_problems(conn):
                    report.problems.append(CheckProblem(name, message, n))
    except Exception as exc:  # a damaged file fails in arbitrary places; say where
        report.problems.append(CheckProblem("orphans", f"could not run the checks: {exc}"))
    if db.is_sqlite:
        _unfinished_imports(db, report)
    if blobs:
        _blob_checks(db, report)
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _unfinished_imports(db: Database, report: CheckReport) -> None:
    """An import on SQLite commits batch by batch (:mod:`gradercal.db.import_journal`):
    while one runs, or after one was killed, part of it is in the database."""
    from gradercal.db import import_journal

    report.checks.append("import.unfinished")
    try:
        with db.read() as s:
            found = import_journal.headers(s)
    except Exception as exc:  # a damaged file: the integrity check says why
        report.problems.append(CheckProblem("import.unfinished", f"could not read: {exc}"))
        return
    for header in found:
        alive = header.alive
        if alive:
            state = "still running: part of it is written, the rest is to come"
        else:
            state = (
                "its process is gone and part of it is written: "
                "`gradercal check --undo-import` removes it (so does the next import here)"
                if alive is False
                else "on another host: if it is no longer running, "
                "`gradercal check --undo-import` removes what it wrote"
            )
        report.problems.append(CheckProblem("import.unfinished", f"{header.describe()} is {state}"))


def undo_unfinished_imports(db: Database) -> list[UndoReport]:
    """Undo every unfinished import whose process is not running here (see
    :func:`gradercal.db.import_journal.undo`); refuses one that is still running."""
    from gradercal.db import import_journal

    with db.read() as s:
        found = import_journal.headers(s)
    for header in found:
        if header.alive:
            raise MaintenanceError(f"{header.describe()} is still running: wait for it")
    return [import_journal.undo(db, header) for header in found]


def _sqlite_checks(db: Database, quick: bool, report: CheckReport) -> None:
    pragma = "quick_check" if quick else "integrity_check"
    report.checks.append(pragma)
    raw = db.engine.raw_connection()
    try:
        cur = raw.cursor()
        try:
            lines = [str(r[0]) for r in cur.execute(f"PRAGMA {pragma}(100)")]
        except sqlite3.DatabaseError as exc:
            lines = [str(exc)]
        if lines != ["ok"]:
            report.problems.append(
                CheckProblem(pragma, "SQLite reports damage: " + "; ".join(lines[:20]), len(lines))
            )
        report.checks.append("foreign_key_check")
        try:
            fk = list(cur.execute("PRAGMA foreign_key_check"))
        except sqlite3.DatabaseError as exc:
            fk = [(str(exc),)]
        if fk:
            tables = sorted({str(r[0]) for r in fk})
            report.problems.append(
                CheckProblem(
                    "foreign_key_check",
                    f"{len(fk)} rows refer to missing rows (tables: {', '.join(tables)})",
                    len(fk),
                )
            )
        cur.close()
    finally:
        raw.close()


def _blob_checks(db: Database, report: CheckReport) -> None:
    report.checks.append("blob.sha256")
    bad: list[str] = []
    try:
        with db.read() as s:
            keys = list(s.scalars(select(m.Blob.sha256).order_by(m.Blob.sha256)))
            for start in range(0, len(keys), 16):
                batch = keys[start : start + 16]
                for digest, size, data in s.execute(
                    select(m.Blob.sha256, m.Blob.size, m.Blob.data).where(m.Blob.sha256.in_(batch))
                ):
                    payload = bytes(data)
                    report.blobs_checked += 1
                    report.bytes_hashed += len(payload)
                    if hashlib.sha256(payload).hexdigest() != digest or len(payload) != size:
                        bad.append(digest)
    except Exception as exc:
        report.problems.append(CheckProblem("blob.sha256", f"could not read the blobs: {exc}"))
        return
    if bad:
        report.problems.append(
            CheckProblem(
                "blob.sha256",
                f"{len(bad)} artifact files whose bytes do not match their sha256 or size "
                f"(first: {bad[0]})",
                len(bad),
            )
        )


# -- opening a damaged database ------------------------------------------------------------------
@dataclass
class OpenResult:
    """A database opened for the app: ``read_only`` with a ``message`` when it is damaged."""

    db: Database
    read_only: bool = False
    message: str | None = None
    #: Why it is read-only, in a few words ("damaged database", "file cannot be written").
    reason: str | None = None
    #: What a refused write says (one line).
    refusal: str | None = None


def open_checked(
    db: str | os.PathLike[str] | URL | None = None, *, create: bool = True
) -> OpenResult:
    """Open a database for the app; a damaged SQLite file is opened read-only.

    ``create=False`` refuses a SQLite file that does not exist (see
    :func:`~gradercal.db.session.open_database`).

    A SQLite file is first checked with ``PRAGMA quick_check`` through a read-only
    connection. When the file is damaged it is opened read-only (no migration, no
    write) and ``message`` says what is wrong and what to do; PostgreSQL databases and
    healthy files open as :func:`~gradercal.db.session.open_database` opens them.

    Raises:
        DatabaseError: the file cannot be read at all (the message says why).
    """
    url = db if isinstance(db, URL) else resolve_url(db)
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return OpenResult(open_database(url))
    path = Path(url.database)
    if not path.exists():
        return OpenResult(open_database(url, create=create))
    problem = _quick_check_file(path)
    if problem is None:
        try:
            healthy = open_database(url)
        except DatabaseError as exc:
            if not _looks_damaged(str(exc)):
                raise
            problem = str(exc)
        else:
            why = _write_problem(path)
            if why is None:
                return OpenResult(healthy)
            healthy.dispose()
            return OpenResult(
                _open_read_only(path, why),
                read_only=True,
                message=(
                    f"{path} cannot be written ({why}). It was opened read-only: you can "
                    "look at and export everything, but nothing can be saved. Make the file "
                    "and its folder writable (or grade on a writable copy) to keep grading."
                ),
                reason="file cannot be written",
                refusal=(
                    f"this database file cannot be written ({why}), so nothing can be "
                    "saved; make it writable to keep grading"
                ),
            )
    readonly = _open_read_only(path, problem)
    return OpenResult(
        readonly,
        read_only=True,
        message=(
            f"{path} is damaged ({problem}). It was opened read-only: you can look at and "
            "export what is readable, but nothing can be saved. Restore the latest backup "
            f"({path.name}.backup-… or {path.name}.before-….bak next to it), or run "
            "`gradercal check` for details."
        ),
        reason="damaged database",
    )


def _write_problem(path: Path) -> str | None:
    """Why SQLite could not write ``path`` (a healthy database file), or None.

    ``access`` sees what the kernel would refuse: modes, read-only mounts, and immutable
    files (``chattr +i``), which stop even root. A WAL database also writes its ``-wal``
    and ``-shm`` files beside it, so a read-only folder matters unless both exist.
    """
    if not os.access(path, os.W_OK):
        return "the file is read-only"
    sidecars = [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm")]
    if not os.access(path.parent, os.W_OK) and not all(p.exists() for p in sidecars):
        return f"its folder {path.parent} is read-only"
    if any(p.exists() and not os.access(p, os.W_OK) for p in sidecars):
        return "its -wal or -shm file is read-only"
    return None


def _quick_check_file(path: Path) -> str | None:
    """None when the file passes ``quick_check``; else what is wrong."""
    try:
        conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error as exc:
        return str(exc)
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check(20)")]
    except sqlite3.Error as exc:
        return str(exc)
    finally:
        conn.close()
    return None if rows == ["ok"] else "; ".join(rows)[:500]


def _looks_damaged(message: str) -> bool:
    lower = message.lower()
    return any(
        s in lower for s in ("malformed", "not a database", "disk image", "corrupt", "file is not")
    )


def _open_read_only(path: Path, problem: str) -> Database:
    uri = f"file:{quote(str(path))}?mode=ro"
    engine = create_engine(
        "sqlite+pysqlite://",
        creator=lambda: sqlite3.connect(uri, uri=True, check_same_thread=False),
    )

    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA query_only = ON")
        cur.close()

    def on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN")

    event.listen(engine, "connect", on_connect)
    event.listen(engine, "begin", on_begin)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT count(*) FROM sqlite_master")).scalar()
    except Exception as exc:
        engine.dispose()
        raise DatabaseError(
            f"{path} is damaged beyond reading ({problem}; {exc}). Restore the latest backup "
            f"({path.name}.backup-… or {path.name}.before-….bak next to it)."
        ) from None
    return Database(engine)


# -- grading on a damaged database ------------------------------------------------------------------
class ReadOnlyError(DatabaseError):
    """A write was refused: the database was opened read-only (it is damaged)."""


class ReadOnlyGradingStore(GradingStore):
    """A :class:`~gradercal.db.grading.GradingStore` that reads and refuses every write.

    For the app on a damaged database (:func:`open_checked` opened it read-only): the
    grader can look at the queue, the responses and their own verdicts; every attempt to
    change something raises :class:`ReadOnlyError`, and nothing reaches the file (the
    connection is ``query_only`` besides).
    """

    read_only = True

    def __init__(
        self,
        db: Database,
        message: str | None = None,
        *,
        reason: str | None = None,
        refusal: str | None = None,
    ) -> None:
        super().__init__(db)
        #: Why the database is read-only (for the app's banner).
        self.read_only_message = message or f"{db.display} was opened read-only"
        #: The same in a few words (for the window's title).
        self.read_only_reason = reason or "damaged database"
        self._refusal = refusal or (
            "this database is damaged and was opened read-only, so nothing can be saved; "
            "restore a backup to keep grading"
        )

    def _refuse(self) -> ReadOnlyError:
        return ReadOnlyError(self._refusal)

    def create_grader(self, name: str) -> GraderInfo:
        """An existing grader only (creating one would write)."""
        try:
            return self.grader(" ".join(name.replace("\x00", " ").split()))
        except GradercalError:
            raise self._refuse() from None

    def ensure_queue(
        self, grader: str, benchmark: str | None = None, *, seed: str = ""
    ) -> list[QueueItem]:
        return self.queue(grader, benchmark)

    def save_judgment(
        self,
        assignment_id: int,
        criterion_id: str,
        value: JudgmentValue,
        *,
        expected: JudgmentVersion | None = None,
        seen_version: int | None = None,
    ) -> SavedJudgment:
        raise self._refuse()

    def add_time(self, assignment_id: int, seconds: float) -> float:
        # Time on task is not the grader's work: dropped, never written, no alarm.
        return float(self.queue_item(assignment_id).time_spent_s)

    def submit(self, assignment_id: int, *, seen_version: int | None = None) -> QueueItem:
        raise self._refuse()

    def skip(self, assignment_id: int, reason: str) -> QueueItem:
        raise self._refuse()

    def reopen(self, assignment_id: int) -> QueueItem:
        raise self._refuse()

    def save_task_review(
        self,
        grader: str,
        benchmark: str | None,
        task_id: str,
        answers: Mapping[str, int | None],
        comment: str | None,
    ) -> TaskReviewValue:
        raise self._refuse()


def grading_store(opened: OpenResult) -> GradingStore:
    """The app's store for what :func:`open_checked` opened: read-only when it is damaged."""
    if opened.read_only:
        return ReadOnlyGradingStore(
            opened.db, opened.message, reason=opened.reason, refusal=opened.refusal
        )
    return GradingStore(opened.db)
