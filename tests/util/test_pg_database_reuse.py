"""The PostgreSQL test databases of ``tests/conftest.py`` are reused only when a reused one is
indistinguishable from a new one: empty, under a new name, the same from inside and outside;
one whose database-level privileges a test changed is dropped instead."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import make_url

from gradercal.db.session import open_database
from tests import conftest

pytestmark = pytest.mark.postgres


@pytest.fixture(autouse=True)
def _server() -> None:
    if not conftest.PG_ADMIN_URL:
        pytest.skip("no PostgreSQL server (set GRADERCAL_TEST_PG_URL; scripts/test.sh does)")


def _exists(name: str) -> bool:
    admin = conftest._pg_admin()
    try:
        with admin.connect() as conn:
            return bool(
                conn.execute(
                    text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}
                ).scalar()
            )
    finally:
        admin.dispose()


def test_a_used_database_comes_back_empty_under_a_new_name() -> None:
    first = conftest._pg_databases()
    url = next(first)
    open_database(url).dispose()  # every table of gradercal, rows in two of them
    old = str(make_url(url).database)
    for _ in first:
        pass
    assert old in conftest._PG_SPARE  # kept for the next test
    again = conftest._pg_databases()
    url2 = next(again)
    try:
        new = str(make_url(url2).database)
        assert new != old and not _exists(old)
        assert conftest._pg_shape(url2) == conftest._PG_FRESH_SHAPE[0]
        engine = create_engine(url2)
        try:
            assert inspect(engine).get_table_names() == []
        finally:
            engine.dispose()
    finally:
        for _ in again:
            pass


def test_a_database_whose_privileges_changed_is_dropped() -> None:
    gen = conftest._pg_databases()
    url = next(gen)
    name = str(make_url(url).database)
    admin = conftest._pg_admin()
    try:
        with admin.connect() as conn:
            conn.execute(text(f'GRANT TEMPORARY ON DATABASE "{name}" TO PUBLIC'))
    finally:
        admin.dispose()
    for _ in gen:
        pass
    assert name not in conftest._PG_SPARE and not _exists(name)
