"""Shared fixtures: database backends (SQLite file, real PostgreSQL), sample folders."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "samples" / "demo"
DATA = Path(__file__).resolve().parent / "data"
PG_ADMIN_URL = os.environ.get("GRADERCAL_TEST_PG_URL")
REQUIRE_PG = bool(os.environ.get("GRADERCAL_REQUIRE_PG"))


def _pg_databases() -> Iterator[str]:
    """Create a fresh PostgreSQL database, yield its URL, drop it afterwards."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    assert PG_ADMIN_URL
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"gc_test_{uuid.uuid4().hex[:12]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = :n AND pid <> pg_backend_pid()"
                ),
                {"n": name},
            )
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
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
