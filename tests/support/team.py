"""A PostgreSQL team for tests: a fresh database with the GUI benchmark, ``team init``
and four people (two graders, an adjudicator, a coordinator). Roles are cluster-wide,
so their names start with the test database's name and are dropped after it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url

from gradercal.db import team
from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.session import open_database
from tests.conftest import PG_ADMIN_URL, _pg_databases
from tests.support.gui import import_folder, write_gui_benchmark

BENCH = "gui-bench"


@dataclass
class Team:
    admin: str
    database: str
    ana: str
    bob: str
    cleo: str
    dan: str

    def url(self, user: str) -> str:
        return make_url(self.admin).set(username=user).render_as_string(hide_password=False)

    def engine(self, user: str) -> Engine:
        return create_engine(self.url(user))


def _drop_roles(prefix: str) -> None:
    assert PG_ADMIN_URL
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            names = [
                r[0]
                for r in conn.execute(
                    text("SELECT rolname FROM pg_roles WHERE starts_with(rolname, :p)"),
                    {"p": prefix + "_"},
                )
            ]
            for name in names:
                conn.execute(text(f'DROP ROLE IF EXISTS "{name}"'))
    finally:
        admin.dispose()


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL database; every role named after it is dropped afterwards."""
    if not PG_ADMIN_URL:
        pytest.skip("no PostgreSQL server (set GRADERCAL_TEST_PG_URL; scripts/test.sh does)")
    gen = _pg_databases()
    url = next(gen)
    prefix = team.role_prefix(str(make_url(url).database))
    try:
        yield url
    finally:
        for _ in gen:  # drops the database
            pass
        _drop_roles(prefix)


@pytest.fixture
def crew(pg_url: str, tmp_path: Path) -> Team:
    import_folder(pg_url, write_gui_benchmark(tmp_path / "bench"))
    name = str(make_url(pg_url).database)
    t = Team(pg_url, name, f"{name}_ana", f"{name}_bob", f"{name}_cleo", f"{name}_dan")
    db = open_database(pg_url)
    try:
        team.init(db)
        team.add(db, t.ana, "grader")
        team.add(db, t.bob, "grader")
        team.add(db, t.cleo, "adjudicator")
        team.add(db, t.dan, "coordinator")
        store = GradingStore(db)  # the coordinator hands out the work
        store.ensure_queue(t.ana, BENCH)
        bob_queue = store.ensure_queue(t.bob, BENCH)
        # bob has graded something already
        store.save_judgment(bob_queue[0].assignment_id, "c1", JudgmentValue(met=True))
        from gradercal.db.packets._common import packet_key

        packet_key(db, create=True)
        with db.engine.begin() as conn:  # a final verdict already made
            conn.execute(
                text(
                    "INSERT INTO adjudication (response_id, criterion_id, adjudicator, met, "
                    "revision, created_at, updated_at) SELECT r.id, c.id, 'chair', true, 1, "
                    "now(), now() FROM response r JOIN criterion c ON c.task_id = r.task_id "
                    "ORDER BY r.id, c.id LIMIT 2"
                )
            )
    finally:
        db.dispose()
    return t
