"""Opening databases: URLs, SQLite pragmas, sessions and migrations on open.

``--db`` accepts a file path (SQLite) or a SQLAlchemy URL such as
``postgresql+psycopg://user@host/dbname``. With neither flag nor ``GRADERCAL_DB``
the database is ``gradercal.sqlite`` in the user data directory (platformdirs).
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from platformdirs import user_data_dir
from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session, sessionmaker

from gradercal.db import write_turns
from gradercal.errors import GradercalError

if TYPE_CHECKING:  # Alembic is imported only when a schema must change (start-up time)
    from alembic.config import Config
    from alembic.script import ScriptDirectory

ENV_VAR = "GRADERCAL_DB"
DEFAULT_FILENAME = "gradercal.sqlite"
#: How long a SQLite writer waits for another writer's lock before giving up (ms).
BUSY_TIMEOUT_MS = 30_000


class DatabaseError(GradercalError):
    """The database cannot be opened or migrated; the message says why."""


def default_path() -> Path:
    return Path(user_data_dir("gradercal", appauthor=False)) / DEFAULT_FILENAME


def resolve_url(db: str | os.PathLike[str] | None = None) -> URL:
    """Turn ``--db`` (a path or URL), ``$GRADERCAL_DB`` or the default into a URL."""
    raw = os.fspath(db) if db is not None else os.environ.get(ENV_VAR) or str(default_path())
    if "://" in raw:
        try:
            return make_url(raw)
        except Exception as exc:  # sqlalchemy raises ArgumentError with a terse message
            raise DatabaseError(f"not a valid database URL: {_redact(raw)} ({exc})") from exc
    path = Path(raw).expanduser()
    return URL.create("sqlite+pysqlite", database=str(path.absolute()))


def _redact(raw: str) -> str:
    try:
        return make_url(raw).render_as_string(hide_password=True)
    except Exception:
        return "<unparsable URL>"


def display_url(url: URL) -> str:
    """The URL as shown to users: never with its password."""
    if url.get_backend_name() == "sqlite":
        return str(url.database)
    return url.render_as_string(hide_password=True)


def _on_sqlite_connect(dbapi_conn: Any, _record: Any) -> None:
    # Let SQLAlchemy, not pysqlite, decide when transactions begin (see _on_sqlite_begin):
    # this makes DDL transactional and lets writers take the lock up front.
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys = ON")
    cur.execute("PRAGMA synchronous = FULL")
    cur.close()


def _on_sqlite_begin(conn: Any) -> None:
    options = conn.get_execution_options()
    mode = options.get("sqlite_begin", "DEFERRED")
    if mode == "IMMEDIATE" and not options.get("bulk_write"):
        # A short writer: its turn at the write lock is kept fair against a bulk import
        # (gradercal.db.write_turns); the bulk writer's own batches say bulk_write=True.
        write_turns.take(conn.info, write_turns.path_of(conn.engine.url.database))
    try:
        conn.exec_driver_sql(f"BEGIN {mode}")
    except BaseException:
        write_turns.release(conn.info)
        raise


def _on_sqlite_end(conn: Any) -> None:
    write_turns.release(conn.info)


def _json_dumps(value: Any) -> str:
    """JSON columns are written with orjson: several times faster than ``json.dumps``
    (verdict provenance is written once per judge request), the same text for JSON data,
    and datetimes as ISO 8601. Integer dict keys become strings, as ``json`` does."""
    return orjson.dumps(
        value,
        default=_json_default,
        option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY,
    ).decode("utf-8")


def _json_default(value: Any) -> Any:
    """Subclasses orjson does not take itself (numpy's float64 is a float subclass)."""
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def make_engine(url: URL, **kwargs: Any) -> Engine:
    """Create an engine with gradercal's settings for the backend.

    Raises:
        DatabaseError: A URL scheme SQLAlchemy has no driver for.
    """
    from sqlalchemy.exc import NoSuchModuleError

    if url.get_backend_name() not in ("sqlite", "postgresql"):
        raise DatabaseError(
            f"unknown database URL scheme {url.drivername!r} in {display_url(url)}: "
            "gradercal stores its data in SQLite or PostgreSQL: use a file path, "
            "sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"
        )
    try:
        return _make_engine(url, **kwargs)
    except (NoSuchModuleError, ModuleNotFoundError):
        raise DatabaseError(
            f"unknown database URL scheme {url.drivername!r} in {display_url(url)}: use a "
            "file path, sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"
        ) from None


def _make_engine(url: URL, **kwargs: Any) -> Engine:
    kwargs.setdefault("json_serializer", _json_dumps)
    if url.get_backend_name() == "sqlite":
        if url.database and url.database != ":memory:":
            Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, **kwargs)
        event.listen(engine, "connect", _on_sqlite_connect)
        event.listen(engine, "begin", _on_sqlite_begin)
        event.listen(engine, "commit", _on_sqlite_end)
        event.listen(engine, "rollback", _on_sqlite_end)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, **kwargs)


def alembic_config(engine: Engine | None = None) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option(
        "script_location", str(resources.files("gradercal.db").joinpath("migrations"))
    )
    if engine is not None:
        cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    return cfg


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


_REVISION_LINE = re.compile(
    r"^(down_revision|revision)\b[^=\n]*=\s*(?:[\"']([^\"'\n]+)[\"']|None)", re.MULTILINE
)


def packaged_head() -> str | None:
    """The newest revision among the migration scripts that ship with gradercal, read from
    the files' ``revision`` / ``down_revision`` lines without importing Alembic (which
    costs most of a second at start-up). None when the files cannot be read this way;
    tests check it equals :func:`head_revision`.
    """
    revisions: set[str] = set()
    parents: set[str] = set()
    folder = resources.files("gradercal.db").joinpath("migrations", "versions")
    try:
        for entry in folder.iterdir():
            if not entry.name.endswith(".py") or entry.name.startswith("_"):
                continue
            found = {
                m.group(1): m.group(2) for m in _REVISION_LINE.finditer(entry.read_text("utf-8"))
            }
            if "revision" not in found or found["revision"] is None:
                return None
            revisions.add(found["revision"])
            if found.get("down_revision"):
                parents.add(str(found["down_revision"]))
    except OSError:
        return None
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def _stamp(engine: Engine) -> str | None:
    """The schema revision recorded in the database (None when it has none)."""
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        value = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
        return None if value is None else str(value)


def backup_sqlite(path: Path, suffix: str) -> Path:
    """Copy a SQLite database consistently (online backup API) next to itself."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.{suffix}-{stamp}.bak")
    src = sqlite3.connect(str(path))
    try:
        dst = sqlite3.connect(str(target))
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()
    return target


def upgrade(engine: Engine) -> Path | None:
    """Bring the schema to the newest revision. Returns the backup made, if any.

    A database at an older revision is copied first (SQLite); one from a newer
    gradercal, or with tables but no revision stamp, is refused untouched.
    """
    packaged = packaged_head()
    if packaged is not None and _stamp(engine) == packaged:
        return None  # the usual case, decided without importing Alembic
    from alembic import command
    from alembic.script import ScriptDirectory

    head = head_revision()
    current = current_revision(engine)
    if current == head:
        return None
    script = ScriptDirectory.from_config(alembic_config())
    if current is not None and not _known_revision(script, current):
        raise DatabaseError(
            f"database {display_url(engine.url)} has schema revision {current}, which this "
            "version of gradercal does not know; upgrade gradercal"
        )
    if current is None:
        tables = set(inspect(engine).get_table_names())
        if tables:
            raise DatabaseError(
                f"{display_url(engine.url)} holds tables but is not a gradercal database"
            )
    if current is not None and engine.url.get_backend_name() == "postgresql":
        _require_schema_owner(engine, current, head)
    backup: Path | None = None
    if engine.url.get_backend_name() == "sqlite" and engine.url.database:
        if current is not None:
            backup = backup_sqlite(Path(engine.url.database), f"before-{head}")
        # WAL is a property of the file: set once, after we know the file is ours.
        raw = engine.raw_connection()
        try:
            raw.cursor().execute("PRAGMA journal_mode = WAL")
        finally:
            raw.close()
    with engine.begin() as conn:
        cfg = alembic_config(engine)
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
    return backup


def _require_schema_owner(engine: Engine, current: str, head: str) -> None:
    """A team member's login (gradercal.db.team) cannot change the schema: say who can,
    instead of failing halfway through a migration on a permission error."""
    with engine.connect() as conn:
        row = conn.execute(
            text(
                "SELECT current_user, pg_has_role(current_user, tableowner, 'USAGE') "
                "FROM pg_tables WHERE schemaname = current_schema() "
                "AND tablename = 'alembic_version'"
            )
        ).one_or_none()
    if row is None or row[1]:
        return
    raise DatabaseError(
        f"database {display_url(engine.url)} is at schema revision {current} and this "
        f"gradercal needs {head}; your login {row[0]!r} may not change the schema: ask the "
        "database's owner (the coordinator who ran `gradercal team init`) to run "
        "`gradercal init --db URL` with this version of gradercal, then try again"
    )


def _known_revision(script: ScriptDirectory, rev: str) -> bool:
    try:
        return script.get_revision(rev) is not None
    except Exception:  # alembic raises ResolutionError (or KeyError) for unknown ids
        return False


class Database:
    """An open gradercal database: an engine plus session factories."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.url = engine.url
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._write_sessions = sessionmaker(
            engine.execution_options(sqlite_begin="IMMEDIATE"), expire_on_commit=False
        )

    @property
    def is_sqlite(self) -> bool:
        return self.url.get_backend_name() == "sqlite"

    @property
    def display(self) -> str:
        return display_url(self.url)

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A session for reading (deferred transaction, rolled back at the end)."""
        with self._sessions() as session:
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A session whose transaction commits on success and rolls back on error.

        On SQLite the write lock is taken when the transaction begins, so two writers
        queue on ``busy_timeout`` instead of failing halfway through.
        """
        with self._write_sessions() as session, session.begin():
            yield session

    def dispose(self) -> None:
        self.engine.dispose()


def database_id(db: Database) -> str:
    """The UUID that identifies this database (written by the first migration)."""
    from sqlalchemy import text

    with db.engine.connect() as conn:
        value = conn.execute(
            text("SELECT value FROM database_info WHERE key = 'database_id'")
        ).scalar()
    if value is None:
        raise DatabaseError(f"{db.display} has no database id")
    return str(value)


def database_exists(db: str | os.PathLike[str] | URL | None = None) -> bool:
    """False only for a SQLite file that is not there yet (a server database is taken to
    exist: connecting says otherwise)."""
    url = db if isinstance(db, URL) else resolve_url(db)
    if url.get_backend_name() != "sqlite":
        return True
    path = url.database
    return not path or path == ":memory:" or Path(path).exists()


def open_database(
    db: str | os.PathLike[str] | URL | None = None,
    *,
    migrate: bool = True,
    create: bool = True,
) -> Database:
    """Open (creating or upgrading as needed) the gradercal database at ``db``.

    ``create=False`` (the commands that read or change an existing benchmark) refuses a
    SQLite file that does not exist instead of creating an empty one: a mistyped
    ``--db`` is an error, never a new database.

    Raises:
        DatabaseError: No such database file (``create=False``), an unknown URL scheme,
            or a database that cannot be opened or migrated.
    """
    url = db if isinstance(db, URL) else resolve_url(db)
    if not create and url.get_backend_name() == "sqlite":
        path = url.database
        if path and path != ":memory:" and not Path(path).exists():
            raise DatabaseError(
                f"no database at {path} (a mistyped --db or $GRADERCAL_DB?); "
                "`gradercal import PATH --db FILE` creates one"
            )
    engine = make_engine(url)
    try:
        if migrate:
            upgrade(engine)
        elif _stamp(engine) != (packaged_head() or head_revision()):
            raise DatabaseError(
                f"database {display_url(url)} is not at the current schema; run `gradercal init`"
            )
    except DatabaseError:
        engine.dispose()
        raise
    except Exception as exc:
        engine.dispose()
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        hint = ""
        if "not a database" in reason or "malformed" in reason:
            hint = " (damaged, or not a gradercal database: restore a copy from `gradercal backup`)"
        raise DatabaseError(f"cannot open database {display_url(url)}: {reason}{hint}") from exc
    return Database(engine)
