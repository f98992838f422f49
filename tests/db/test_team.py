"""Team mode on the real PostgreSQL server: roles, row-level security, enforced history.

Every test gets a fresh database with the GUI benchmark (three models with distinctive
names, judgments by another expert and a judge, adjudications), ``team init`` run by
the admin, and four people: two graders, an adjudicator and a coordinator. Roles are
cluster-wide, so their names start with the test database's name and are dropped
after it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DBAPIError, ProgrammingError

from gradercal.cli import main
from gradercal.db import team
from gradercal.db.grading import GradingStore, JudgmentValue, JudgmentVersion
from gradercal.db.maintenance import check
from gradercal.db.session import open_database
from tests.support.gui import (
    JUDGE,
    JUDGE_RATIONALE,
    MODELS,
    OTHER_GRADER,
    OTHER_RATIONALE,
)
from tests.support.team import BENCH, Team, crew, pg_url

__all__ = ["crew", "pg_url"]  # fixtures

pytestmark = pytest.mark.postgres


def _scalar(engine: Engine, sql: str, **params: Any) -> Any:
    with engine.connect() as conn:
        return conn.execute(text(sql), params).scalar()


def _denied(engine: Engine, sql: str) -> None:
    with engine.connect() as conn, pytest.raises(ProgrammingError, match="permission denied"):
        conn.execute(text(sql))


def test_team_init_is_idempotent_and_lists_the_members(crew: Team) -> None:
    db = open_database(crew.admin)
    try:
        again = team.init(db)
        assert again.created_roles == []
        assert again.roles["grader"] == f"{crew.database}_grader"
        people = {p.user: p.role for p in team.members(db)}
        assert people == {
            crew.ana: "grader",
            crew.bob: "grader",
            crew.cleo: "adjudicator",
            crew.dan: "coordinator",
        }
        # a second add changes the role, never adds a second one
        team.add(db, crew.bob, "adjudicator")
        assert {p.user: p.role for p in team.members(db)}[crew.bob] == "adjudicator"
        assert team.remove(db, crew.bob) is True
        assert crew.bob not in {p.user for p in team.members(db)}
        with pytest.raises(team.TeamError, match="not a member"):
            team.remove(db, crew.bob)
    finally:
        db.dispose()


def test_identity_is_the_session_user(crew: Team) -> None:
    for user, role in ((crew.ana, "grader"), (crew.cleo, "adjudicator"), (crew.dan, "coordinator")):
        db = open_database(crew.url(user))
        try:
            assert team.identity(db) == team.Identity(user, role)
        finally:
            db.dispose()
    admin = open_database(crew.admin)
    try:
        assert team.identity(admin) is None  # a superuser is outside the team
    finally:
        admin.dispose()


def test_a_grader_reads_only_their_own_rows(crew: Team) -> None:
    ana = crew.engine(crew.ana)
    try:
        assert _scalar(ana, "SELECT count(*) FROM judgment") == 0  # bob's, ben's, judge's hidden
        assert _scalar(ana, "SELECT count(*) FROM grader") == 1
        assert _scalar(ana, "SELECT name FROM grader") == crew.ana
        assert _scalar(ana, "SELECT count(*) FROM assignment") == 9
        assert _scalar(ana, "SELECT count(*) FROM response") == 9
        assert _scalar(ana, "SELECT count(*) FROM revision") == 0
        assert _scalar(ana, "SELECT count(*) FROM task_review") == 0
        assert _scalar(ana, "SELECT count(*) FROM database_info WHERE key = 'packet_key'") == 0
        assert _scalar(ana, "SELECT count(*) FROM database_info") == 1
        for sql in (
            "SELECT model FROM response",
            "SELECT external_id FROM response",
            "SELECT * FROM response",
            "SELECT * FROM adjudication",
            "SELECT * FROM calibration",
            "SELECT * FROM judge_run",
            "SELECT * FROM judge_cache",
            "SELECT * FROM prompt_version",
        ):
            _denied(ana, sql)
    finally:
        ana.dispose()


def test_a_grader_cannot_change_anyone_elses_judgment(crew: Team) -> None:
    admin = create_engine(crew.admin)
    ana = crew.engine(crew.ana)
    try:
        before = _scalar(admin, "SELECT count(*) FROM judgment WHERE NOT met")
        with ana.begin() as conn:
            n = conn.execute(text("UPDATE judgment SET met = NOT met")).rowcount
            assert n == 0  # nobody else's row is even visible
            with pytest.raises(ProgrammingError, match="permission denied"):
                conn.execute(text("DELETE FROM judgment"))
        assert _scalar(admin, "SELECT count(*) FROM judgment WHERE NOT met") == before
        bob_id = _scalar(admin, "SELECT id FROM grader WHERE name = :n", n=crew.bob)
        rid = _scalar(admin, "SELECT response_id FROM assignment WHERE grader_id = :g", g=bob_id)
        with ana.begin() as conn, pytest.raises(ProgrammingError, match="row-level security"):
            conn.execute(
                text(
                    "INSERT INTO judgment (grader_id, response_id, criterion_id, met, unclear, "
                    "source, revision, created_at, updated_at) "
                    "SELECT :g, :r, c.id, false, false, 'ui', 1, now(), now() FROM criterion c "
                    "LIMIT 1"
                ),
                {"g": bob_id, "r": rid},
            )
    finally:
        ana.dispose()
        admin.dispose()


def test_the_grader_view_holds_no_model_name(crew: Team) -> None:
    """Everything a grader may read, table by table, with no model name in it."""
    ana = crew.engine(crew.ana)
    seen: list[str] = []
    readable = {
        "benchmark": "*",
        "task": "*",
        "criterion": "*",
        "artifact": "*",
        "grader": "*",
        # every column but the active design's inclusion_probability (refused: see below)
        "assignment": "id, grader_id, response_id, status, position, time_spent_s, "
        "calibration, skip_reason, created_at, updated_at, submitted_at",
        "judgment": "*",
        "revision": "*",
        "task_review": "*",
        "database_info": "*",
        "response": "id, benchmark_id, task_id, text, answer, created_at",
    }
    db = open_database(crew.url(crew.ana))
    try:
        store = GradingStore(db)
        queue = store.ensure_queue(crew.ana, BENCH)
        item = store.load_item(crew.ana, queue[0].assignment_id)
        store.save_judgment(queue[0].assignment_id, "c1", JudgmentValue(met=True))
        seen.append(repr(item))
        with ana.connect() as conn:
            for table, cols in readable.items():
                for row in conn.execute(text(f"SELECT {cols} FROM {table}")):
                    seen.append(repr(tuple(row)))
    finally:
        db.dispose()
        ana.dispose()
    blob = "\n".join(seen)
    assert "Answer 0 to task" in blob  # the responses are there …
    for secret in (*MODELS, JUDGE, OTHER_GRADER, JUDGE_RATIONALE, OTHER_RATIONALE):
        assert secret not in blob  # … but nothing that unblinds them


def test_the_coordinator_sees_everything(crew: Team) -> None:
    admin = create_engine(crew.admin)
    dan = crew.engine(crew.dan)
    cleo = crew.engine(crew.cleo)
    try:
        for table in ("judgment", "adjudication", "response", "grader", "database_info"):
            total = _scalar(admin, f"SELECT count(*) FROM {table}")
            assert total, table
            assert _scalar(dan, f"SELECT count(*) FROM {table}") == total
            assert _scalar(cleo, f"SELECT count(*) FROM {table}") == total
        with dan.connect() as conn:
            models = set(conn.execute(text("SELECT DISTINCT model FROM response")).scalars())
        assert models == set(MODELS)
        # the adjudicator writes final verdicts, never the graders' judgments
        with cleo.begin() as conn:
            assert conn.execute(text("UPDATE adjudication SET met = NOT met")).rowcount == 2
        history = _scalar(
            admin,
            "SELECT count(*) FROM revision WHERE entity = 'adjudication' AND source = 'sql' "
            "AND actor = :a AND revision = 1",
            a=crew.cleo,
        )
        assert history == 2  # recorded, and the revisions moved on
        assert _scalar(admin, "SELECT min(revision) FROM adjudication") == 2
        _denied(cleo, "UPDATE judgment SET met = NOT met")
    finally:
        for e in (admin, dan, cleo):
            e.dispose()


def test_acceptance_rounds_are_the_coordinators_and_hidden_from_graders(crew: Team) -> None:
    from gradercal.db.acceptance import act, save_settings

    db = open_database(crew.url(crew.dan))
    try:
        save_settings(db, BENCH, bar=0.8)
        with db.engine.connect() as conn:
            task = conn.execute(text("SELECT external_id FROM task ORDER BY id LIMIT 1")).scalar()
        after = act(db, BENCH, task, "open", actor="someone else")
        assert after.rounds[0].actor == crew.dan  # in team mode, always the session user
    finally:
        db.dispose()
    ana, cleo = crew.engine(crew.ana), crew.engine(crew.cleo)
    try:
        # a grader has no privilege on the table at all, and sees none of its history
        _denied(ana, "SELECT * FROM task_round")
        _denied(
            ana,
            "INSERT INTO task_round (task_id, number, opened_at, revision) "
            "SELECT id, 9, now(), 1 FROM task LIMIT 1",
        )
        assert _scalar(ana, "SELECT count(*) FROM revision WHERE entity = 'task_round'") == 0
        assert _scalar(ana, "SELECT count(*) FROM database_info WHERE key LIKE 'acceptance%'") == 0
        # the adjudicator reads the rounds, and cannot change them
        assert _scalar(cleo, "SELECT count(*) FROM task_round") == 1
        _denied(cleo, "UPDATE task_round SET decision = 'accepted'")
    finally:
        ana.dispose()
        cleo.dispose()


def test_the_store_grades_saves_and_resumes_as_the_session_user(crew: Team) -> None:
    db = open_database(crew.url(crew.ana))
    try:
        store = GradingStore(db)
        assert [g.name for g in store.graders()] == [crew.ana]
        queue = store.ensure_queue(crew.ana, BENCH)
        assert len(queue) == 9
        first = queue[0].assignment_id
        item = store.load_item(crew.ana, first)
        assert item.judgments == {}
        saved = store.save_judgment(
            first, "c1", JudgmentValue(met=True), expected=JudgmentVersion()
        )
        assert saved.revision == 1
        again = store.save_judgment(first, "c1", JudgmentValue(met=False, rationale="no"))
        assert again.revision == 2
        assert [h["met"] for h in store.judgment_history(first, "c1")] == [True, False]
        store.add_time(first, 12.5)
        store.save_task_review(crew.ana, BENCH, queue[0].task_id, {"grounded": 4}, "ok")
        review = store.save_task_review(crew.ana, BENCH, queue[0].task_id, {"grounded": 5}, None)
        assert review.revision == 2
        # another grader's queue does not exist for ana
        with pytest.raises(Exception, match="no human grader"):
            store.queue(crew.bob, BENCH)
    finally:
        db.dispose()
    db = open_database(crew.url(crew.ana))
    try:
        store = GradingStore(db)
        point = store.resume_point(crew.ana, BENCH)
        assert point is not None and point.assignment_id == first
        assert store.load_item(crew.ana, first).judgments["c1"].met is False
    finally:
        db.dispose()
    admin = open_database(crew.admin)
    try:
        assert check(admin, blobs=False).ok
    finally:
        admin.dispose()


def test_a_direct_update_is_recorded_in_the_history(crew: Team) -> None:
    db = open_database(crew.url(crew.ana))
    try:
        store = GradingStore(db)
        aid = store.ensure_queue(crew.ana, BENCH)[0].assignment_id
        jid = store.save_judgment(aid, "c1", JudgmentValue(met=True, rationale="first")).judgment_id
    finally:
        db.dispose()
    ana = crew.engine(crew.ana)
    try:
        with ana.begin() as conn:  # psql-style, bypassing the app
            conn.execute(
                text("UPDATE judgment SET met = false, rationale = 'sneaky' WHERE id = :j"),
                {"j": jid},
            )
        assert _scalar(ana, "SELECT revision FROM judgment WHERE id = :j", j=jid) == 2
        with ana.connect() as conn:
            row = conn.execute(
                text("SELECT revision, data, actor, source FROM revision WHERE entity_id = :j"),
                {"j": jid},
            ).one()
        assert row.revision == 1 and row.source == "sql" and row.actor == crew.ana
        data = row.data if isinstance(row.data, dict) else json.loads(row.data)
        assert data["met"] is True and data["rationale"] == "first"
        # moving the revision back is refused
        with ana.begin() as conn, pytest.raises(DBAPIError, match="cannot go back"):
            conn.execute(text("UPDATE judgment SET revision = 1 WHERE id = :j"), {"j": jid})
        # a forged history row does not cover a change: the commit is refused

        def forge() -> None:
            with ana.begin() as conn:  # refused when it commits (the check is deferred)
                conn.execute(
                    text(
                        "INSERT INTO revision (entity, entity_id, revision, data, actor, source, "
                        "changed_at) VALUES ('judgment', :j, 2, '{\"met\": true}', current_user, "
                        "'ui', now())"
                    ),
                    {"j": jid},
                )
                conn.execute(text("UPDATE judgment SET met = true WHERE id = :j"), {"j": jid})

        with pytest.raises(DBAPIError, match="does not hold the value"):
            forge()
        assert _scalar(ana, "SELECT met FROM judgment WHERE id = :j", j=jid) is False
        # a forged history row in someone else's name is refused outright
        with ana.begin() as conn, pytest.raises(ProgrammingError, match="row-level security"):
            conn.execute(
                text(
                    "INSERT INTO revision (entity, entity_id, revision, data, actor, source, "
                    "changed_at) VALUES ('judgment', :j, 9, '{}', 'someone', 'ui', now())"
                ),
                {"j": jid},
            )
    finally:
        ana.dispose()
    admin = open_database(crew.admin)
    try:
        assert check(admin, blobs=False).ok
    finally:
        admin.dispose()


def test_a_coordinators_delete_is_recorded_and_history_cannot_be_rewritten(crew: Team) -> None:
    """Coordinators may delete verdicts (they manage the data), but the deleted value
    stays in the history under ``<table>_deleted`` with who deleted it; nobody in the team
    may rewrite, delete or truncate the history, nor truncate the verdict tables (TRUNCATE
    fires no row trigger). ``check`` then finds nothing amiss."""
    db = open_database(crew.url(crew.ana))
    try:
        store = GradingStore(db)
        aid = store.ensure_queue(crew.ana, BENCH)[0].assignment_id
        store.save_judgment(aid, "c1", JudgmentValue(met=True, rationale="first"))
        jid = store.save_judgment(
            aid, "c1", JudgmentValue(met=False, rationale="second")
        ).judgment_id
    finally:
        db.dispose()
    dan = crew.engine(crew.dan)
    try:
        adjudication = _scalar(dan, "SELECT min(id) FROM adjudication")
        with dan.begin() as conn:
            conn.execute(text("DELETE FROM judgment WHERE id = :j"), {"j": jid})
            conn.execute(text("DELETE FROM adjudication WHERE id = :a"), {"a": adjudication})
        with dan.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT entity, revision, data, actor, source FROM revision "
                    "WHERE (entity LIKE 'judgment%' AND entity_id = :j) "
                    "OR (entity LIKE 'adjudication%' AND entity_id = :a) ORDER BY id"
                ),
                {"j": jid, "a": adjudication},
            ).all()
        got = [(r.entity, r.revision, r.actor, r.source) for r in rows]
        assert got == [
            ("judgment", 1, crew.ana, "ui"),
            ("judgment_deleted", 2, crew.dan, "sql-delete"),
            ("adjudication_deleted", 1, crew.dan, "sql-delete"),
        ]
        deleted = rows[1].data if isinstance(rows[1].data, dict) else json.loads(rows[1].data)
        assert (deleted["met"], deleted["rationale"]) == (False, "second")
        assert deleted["grader_id"] is not None and deleted["criterion_id"] is not None
        for sql in (
            "UPDATE revision SET data = '{}' WHERE entity = 'judgment_deleted'",
            "DELETE FROM revision WHERE entity = 'judgment_deleted'",
            "TRUNCATE revision",
            "TRUNCATE judgment",
            "TRUNCATE adjudication",
        ):
            _denied(dan, sql)
        assert _scalar(dan, "SELECT count(*) FROM revision WHERE source = 'sql-delete'") == 2
    finally:
        dan.dispose()
    admin = open_database(crew.admin)
    try:
        report = check(admin, blobs=False)
        assert report.ok, report.problems
    finally:
        admin.dispose()


def test_a_grader_on_a_database_at_an_older_schema_is_told_who_can_upgrade_it(
    crew: Team,
) -> None:
    """A grader's login cannot migrate; instead of a permission error halfway through a
    migration, one line says which revisions and who can upgrade. Nothing changes."""
    admin = create_engine(crew.admin)
    try:
        with admin.begin() as conn:  # as if this gradercal were one version newer
            conn.execute(text("UPDATE alembic_version SET version_num = '0002'"))
    finally:
        admin.dispose()
    out = CliRunner().invoke(main, ["scores", "--db", crew.url(crew.ana), "--json"])
    assert out.exit_code == 1
    message = out.output.strip().splitlines()
    assert len(message) == 1, out.output
    assert "at schema revision 0002" in message[0]
    assert f"your login '{crew.ana}' may not change the schema" in message[0]
    assert "gradercal init --db URL" in message[0]
    assert "Traceback" not in out.output
    admin = create_engine(crew.admin)
    try:
        assert _scalar(admin, "SELECT version_num FROM alembic_version") == "0002"
    finally:
        admin.dispose()


def test_team_commands(crew: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    res = runner.invoke(main, ["team", "init", "--db", crew.admin])
    assert res.exit_code == 0, res.output
    assert "policies" in res.output
    eve = f"{crew.database}_eve"
    monkeypatch.setenv("EVE_PW", "s3cret-enough")
    res = runner.invoke(
        main,
        ["team", "add", eve, "--role", "grader", "--password-env", "EVE_PW", "--db", crew.admin],
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["team", "list", "--json", "--db", crew.admin])
    assert res.exit_code == 0, res.output
    listed = {p["user"]: p for p in json.loads(res.output)}
    assert listed[eve] == {"user": eve, "role": "grader", "can_login": True, "grader": eve}
    res = runner.invoke(
        main, ["team", "passwd", eve, "--password-env", "EVE_PW", "--db", crew.admin]
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(
        main, ["team", "add", eve, "--role", "grader", "--password-env", "NOPE", "--db", crew.admin]
    )
    assert res.exit_code == 1 and "NOPE" in res.output
    res = runner.invoke(main, ["team", "add", "Bad-Name", "--role", "grader", "--db", crew.admin])
    assert res.exit_code == 1 and "not a usable role name" in res.output
    # a grader cannot manage the team
    res = runner.invoke(
        main,
        ["team", "add", f"{crew.database}_x", "--role", "coordinator", "--db", crew.url(crew.ana)],
    )
    assert res.exit_code == 1 and "CREATEROLE" in res.output
    res = runner.invoke(main, ["team", "remove", eve, "--db", crew.admin])
    assert res.exit_code == 0, res.output
    admin = open_database(crew.admin)
    try:
        assert eve not in {p.user for p in team.members(admin)}
    finally:
        admin.dispose()


def test_team_commands_on_sqlite_say_so(tmp_path: Path) -> None:
    db = tmp_path / "g.sqlite"
    open_database(str(db)).dispose()
    for args in (["init"], ["list"], ["add", "ana", "--role", "grader"], ["remove", "ana"]):
        res = CliRunner().invoke(main, ["team", *args, "--db", str(db)])
        assert res.exit_code == 1
        assert "team mode needs PostgreSQL" in res.output
        assert len(res.output.strip().splitlines()) == 1


def test_team_init_in_a_fresh_process_sets_the_policies_and_a_grader_gets_one_line(
    pg_url: str, tmp_path: Path
) -> None:
    """`gradercal team init` as its own process (no models imported beforehand: once it
    set no policy at all, and said "0 policies on 0 tables"); then a grader's reporting
    command is refused in one line, not a traceback."""
    import os
    import subprocess
    import sys

    from tests.support.gui import import_folder, write_gui_benchmark

    import_folder(pg_url, write_gui_benchmark(tmp_path / "bench"))
    name = str(make_url(pg_url).database)
    env = {**os.environ, "GC_PW": "pw-for-the-test"}

    def gc(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "gradercal", *args], env=env, capture_output=True, text=True
        )

    done = gc("team", "init", "--db", pg_url, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["policies"] > 20 and len(report["tables"]) > 10
    user = f"{name}_gwen"
    assert gc("team", "add", user, "--role", "grader", "--db", pg_url).returncode == 0
    engine = create_engine(pg_url)
    try:
        n = _scalar(engine, "SELECT count(*) FROM pg_policies WHERE tablename = 'judgment'")
        assert n >= 3
    finally:
        engine.dispose()
    grader_url = make_url(pg_url).set(username=user).render_as_string(hide_password=False)
    done = gc("scores", "--db", grader_url)
    assert done.returncode == 1
    assert done.stderr.strip().startswith("error: your database login may not do this")
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_grader_cannot_read_the_sampling_probability_but_grades_as_before(crew: Team) -> None:
    """Active assignment's probabilities: stored per assignment, refused to the grader's
    own login over plain SQL, while the grader's normal work goes on; the coordinator
    reads them."""
    admin = create_engine(crew.admin)
    try:
        with admin.begin() as conn:
            conn.execute(text("UPDATE assignment SET inclusion_probability = 0.125"))
    finally:
        admin.dispose()
    ana = crew.engine(crew.ana)
    try:
        for sql in (
            "SELECT inclusion_probability FROM assignment",
            "SELECT * FROM assignment",
            "SELECT count(*) FROM assignment WHERE inclusion_probability > 0.1",
        ):
            _denied(ana, sql)
        assert _scalar(ana, "SELECT count(*) FROM assignment") == 9
    finally:
        ana.dispose()
    db = open_database(crew.url(crew.ana))
    try:
        store = GradingStore(db)
        queue = store.ensure_queue(crew.ana, BENCH)
        assert len(queue) == 9
        first = queue[0].assignment_id
        store.load_item(crew.ana, first)
        saved = store.save_judgment(first, "c1", JudgmentValue(met=True))
        assert saved.revision == 1
        store.add_time(first, 3.0)
        assert store.resume_point(crew.ana, BENCH) is not None
    finally:
        db.dispose()
    dan = crew.engine(crew.dan)  # the coordinator
    try:
        assert _scalar(dan, "SELECT min(inclusion_probability) FROM assignment") == 0.125
    finally:
        dan.dispose()
