"""Shared fixtures: database backends (SQLite file, real PostgreSQL), sample folders."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Every test's dashboard is computed, never read from a cache on disk left by another test
# (or written into the user's cache directory); tests of that cache name a directory.
os.environ["GRADERCAL_DASHBOARD_CACHE"] = "off"
# Nor does a dashboard compute other filter sets ahead behind a test's back (tests of that
# set QtDashboardView.read_ahead_filters).
os.environ["GRADERCAL_DASHBOARD_READ_AHEAD"] = "0"

# Hypothesis: no per-example deadline (200 ms by default) and no "too slow" health check:
# both time the machine, which other work on two shared cores stretches, and no property
# here is about speed (a test may still name its own settings; these are the defaults).
settings.register_profile("gradercal", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("gradercal")

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "samples" / "demo"
DATA = Path(__file__).resolve().parent / "data"
PG_ADMIN_URL = os.environ.get("GRADERCAL_TEST_PG_URL")
REQUIRE_PG = bool(os.environ.get("GRADERCAL_REQUIRE_PG"))


def _pg_admin() -> Any:
    from sqlalchemy import create_engine

    assert PG_ADMIN_URL
    return create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")


def _pg_url(name: str) -> str:
    from sqlalchemy.engine import make_url

    assert PG_ADMIN_URL
    return make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)


def _pg_disconnect(conn: Any, name: str) -> None:
    """End every other session on database ``name`` (DROP and TEMPLATE need none)."""
    from sqlalchemy import text

    conn.execute(
        text(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = :n AND pid <> pg_backend_pid()"
        ),
        {"n": name},
    )


#: Empty databases of this process's earlier tests, reset and ready for the next (their
#: current names). See :func:`_pg_databases`.
_PG_SPARE: list[str] = []
#: What a new database looks like from inside (:func:`_pg_shape`), read once per process.
_PG_FRESH_SHAPE: list[list[tuple[Any, ...]]] = []

# The database-level facts a test could change and a reset does not restore: owner,
# privileges, connection settings, per-database settings (ALTER DATABASE … SET).
_PG_DB_SHAPE = """
SELECT d.datdba = (SELECT oid FROM pg_roles WHERE rolname = current_user)
       AND d.datacl IS NULL AND d.datallowconn AND NOT d.datistemplate
       AND d.datconnlimit = -1
       AND NOT EXISTS (SELECT 1 FROM pg_db_role_setting s WHERE s.setdatabase = d.oid)
FROM pg_database d WHERE d.datname = :n
"""
# Everything in a database outside the system schemas, as rows (a new database's
# public schema alone, empty; a reset database must show exactly the same).
_PG_SHAPE = """
SELECT 'schema', n.nspname, pg_get_userbyid(n.nspowner), n.nspacl::text,
       obj_description(n.oid, 'pg_namespace')
FROM pg_namespace n
WHERE n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'
UNION ALL SELECT 'relation', c.relname, '', '', '' FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'
UNION ALL SELECT 'function', p.proname, '', '', '' FROM pg_proc p
  JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'
UNION ALL SELECT 'type', t.typname, '', '', '' FROM pg_type t
  JOIN pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname = 'public'
UNION ALL SELECT 'extension', extname, extversion, '', '' FROM pg_extension
UNION ALL SELECT 'default acl', defaclrole::regrole::text, '', '', '' FROM pg_default_acl
UNION ALL SELECT 'large object', oid::text, '', '', '' FROM pg_largeobject_metadata
UNION ALL SELECT 'event trigger', evtname, '', '', '' FROM pg_event_trigger
UNION ALL SELECT 'publication', pubname, '', '', '' FROM pg_publication
ORDER BY 1, 2
"""


def _pg_shape(url: str) -> list[tuple[Any, ...]]:
    from sqlalchemy import create_engine, text

    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text(_PG_SHAPE))]
    finally:
        engine.dispose()


def _pg_reset(conn: Any, name: str) -> bool:
    """Empty database ``name`` (no session on it) again, as a new one is: True when it now
    looks exactly like a new database, False when it must be dropped instead (a test
    changed what a reset does not restore, or the reset failed)."""
    from sqlalchemy import create_engine, text

    if not conn.execute(text(_PG_DB_SHAPE), {"n": name}).scalar():
        return False
    url = _pg_url(name)
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as db:
            db.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
            db.execute(text("CREATE SCHEMA public AUTHORIZATION pg_database_owner"))
            db.execute(text("GRANT USAGE ON SCHEMA public TO PUBLIC"))
            db.execute(text("COMMENT ON SCHEMA public IS 'standard public schema'"))
    except Exception:
        return False
    finally:
        engine.dispose()
    return bool(_PG_FRESH_SHAPE) and _pg_shape(url) == _PG_FRESH_SHAPE[0]


def _pg_databases() -> Iterator[str]:
    """A fresh, empty PostgreSQL database: yield its URL; afterwards it is emptied for the
    next test or dropped.

    ``CREATE DATABASE`` copies ``template1`` (several MB written through the server's
    log: 0.2–0.8 s on two shared cores, once per PostgreSQL test), so a database a test
    is done with is emptied instead — every session on it ended, its ``public`` schema
    dropped with everything in it and made again as a new database has it — and handed
    to the process's next test under a new name (a process left over from a test cannot
    reach it). It is kept only when it then looks exactly like a new database from inside
    (:data:`_PG_SHAPE`: schemas with their owners, privileges and comments, every
    relation, function and type, extensions, default privileges, large objects) and from
    outside (owner, privileges and settings of the database, :data:`_PG_DB_SHAPE`);
    otherwise (a team's grants, say) it is dropped as before.
    """
    from sqlalchemy import text

    admin = _pg_admin()
    # unique per test, so xdist workers sharing the server never meet
    name = f"gc_test_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as conn:
            while _PG_SPARE:
                spare = _PG_SPARE.pop()
                try:
                    _pg_disconnect(conn, spare)
                    conn.execute(text(f'ALTER DATABASE "{spare}" RENAME TO "{name}"'))
                    break
                except Exception:
                    conn.execute(text(f'DROP DATABASE IF EXISTS "{spare}" WITH (FORCE)'))
            else:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
                if not _PG_FRESH_SHAPE:
                    _PG_FRESH_SHAPE.append(_pg_shape(_pg_url(name)))
        yield _pg_url(name)
    finally:
        with admin.connect() as conn:
            _pg_disconnect(conn, name)
            exists = conn.execute(
                text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}
            ).scalar()
            if exists and _pg_reset(conn, name):
                _PG_SPARE.append(name)
            else:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The spare databases of :func:`_pg_databases` are dropped at the end."""
    if not _PG_SPARE or not PG_ADMIN_URL:
        return
    from sqlalchemy import text

    admin = _pg_admin()
    try:
        with admin.connect() as conn:
            while _PG_SPARE:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{_PG_SPARE.pop()}" WITH (FORCE)'))
    finally:
        admin.dispose()


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
    ]
)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database on each backend: a SQLite path or a PostgreSQL URL."""
    if request.param == "sqlite":
        yield str(tmp_path / "gradercal.sqlite")
        return
    if not PG_ADMIN_URL:
        if REQUIRE_PG:
            pytest.fail("GRADERCAL_REQUIRE_PG is set but GRADERCAL_TEST_PG_URL is not")
        pytest.skip("no PostgreSQL server (set GRADERCAL_TEST_PG_URL; scripts/test.sh does)")
    yield from _pg_databases()


class DatabaseTemplates:
    """Databases built once per session and copied into a test's own fresh database.

    For fixtures that import and prepare the same benchmark for many tests: ``fill(db_url,
    key, build)`` runs ``build(url)`` on a template database of ``db_url``'s backend the
    first time ``key`` is asked for, then makes ``db_url`` (the empty database of the
    ``db_url`` fixture) a copy of it: SQLite through the backup API, PostgreSQL by
    ``CREATE DATABASE … TEMPLATE``, so the test gets every row ``build`` wrote, on its own.
    ``build`` must be deterministic in what tests look at and close its connections. With
    pytest-xdist each worker builds its own templates (a session per worker).
    """

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._built: dict[tuple[str, str], str] = {}
        self._pg: list[str] = []

    def fill(self, db_url: str, key: str, build: Callable[[str], object]) -> str:
        postgres = "://" in db_url
        template = self._built.get((str(postgres), key))
        if template is None:
            template = self._new(key, postgres)
            build(template)
            self._built[(str(postgres), key)] = template
        if postgres:
            self._pg_copy(template, db_url)
        else:
            self._sqlite_copy(template, db_url)
        return db_url

    def _new(self, key: str, postgres: bool) -> str:
        slug = hashlib.sha256(key.encode()).hexdigest()[:10]
        if not postgres:
            return str(self._folder / f"{slug}.sqlite")
        from sqlalchemy import text

        name = f"gc_template_{slug}_{uuid.uuid4().hex[:8]}"
        admin = _pg_admin()
        try:
            with admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
        finally:
            admin.dispose()
        self._pg.append(name)
        return _pg_url(name)

    @staticmethod
    def _sqlite_copy(template: str, path: str) -> None:
        assert not Path(path).exists(), "the test's database must still be empty"
        src, dst = sqlite3.connect(template), sqlite3.connect(path)
        try:
            src.backup(dst)
        finally:
            src.close()
            dst.close()

    @staticmethod
    def _pg_copy(template: str, db_url: str) -> None:
        from sqlalchemy import text
        from sqlalchemy.engine import make_url

        source, target = make_url(template).database, make_url(db_url).database
        assert source and target
        admin = _pg_admin()
        try:
            with admin.connect() as conn:
                _pg_disconnect(conn, source)
                _pg_disconnect(conn, target)
                conn.execute(text(f'DROP DATABASE "{target}"'))
                conn.execute(text(f'CREATE DATABASE "{target}" TEMPLATE "{source}"'))
        finally:
            admin.dispose()

    def drop(self) -> None:
        if not self._pg:
            return
        from sqlalchemy import text

        admin = _pg_admin()
        try:
            with admin.connect() as conn:
                for name in self._pg:
                    _pg_disconnect(conn, name)
                    conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        finally:
            admin.dispose()


def import_demo(url: str) -> None:
    """The demo benchmark (samples/demo) imported, as ``gradercal import`` would: a
    ``build`` for :meth:`DatabaseTemplates.fill` (key ``"demo imported"``)."""
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database
    from gradercal.formats import read_path

    db = open_database(url)
    try:
        Repository(db).import_data(read_path(DEMO))
    finally:
        db.dispose()


@pytest.fixture(scope="session")
def db_templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DatabaseTemplates]:
    templates = DatabaseTemplates(tmp_path_factory.mktemp("db-templates"))
    try:
        yield templates
    finally:
        templates.drop()


@pytest.fixture
def qtbot(qapp: Any, request: pytest.FixtureRequest) -> Any:
    """pytest-qt's ``qtbot``, every failing wait lasting at least 60 s (pytest-qt: 5 s unless named)
    (tests/support/qtbot.py: none of them is a claim about speed)."""
    from tests.support.qtbot import PatientQtBot

    return PatientQtBot(request)


@pytest.fixture
def repo(db_url: str) -> Iterator[Any]:
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database

    db = open_database(db_url)
    try:
        yield Repository(db)
    finally:
        db.dispose()


def fingerprint(db_url: str) -> str:
    """A hash of every row of every table: equal fingerprints mean an unchanged database."""
    from sqlalchemy import select

    from gradercal.db.models import Base
    from gradercal.db.session import make_engine, resolve_url

    engine = make_engine(resolve_url(db_url))
    h = hashlib.sha256()
    try:
        with engine.connect() as conn:
            for table in Base.metadata.sorted_tables:
                rows = conn.execute(select(table).order_by(*table.primary_key.columns)).all()
                h.update(table.name.encode())
                for row in rows:
                    h.update(repr(tuple(row)).encode())
    finally:
        engine.dispose()
    return h.hexdigest()


@pytest.fixture
def mini(tmp_path: Path) -> Path:
    """A small, hand-written, valid benchmark folder (copied so tests may break it)."""
    dst = tmp_path / "mini"
    shutil.copytree(DATA / "mini", dst)
    return dst


def write_jsonl(path: Path, records: list[Any]) -> None:
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )


def read_jsonl(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
