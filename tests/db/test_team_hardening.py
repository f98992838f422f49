"""Team mode on PostgreSQL: history cannot be skipped, by anyone (#30, section 2).

Each test is an attack by the team's own logins over plain SQL, set up as
docs/team.md sets a team up (``tests.support.team``): it succeeded before the fix, it is
refused (or recorded) now, and ``gradercal check`` tells when a database's setup or data
lets history be skipped.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, ProgrammingError

from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.maintenance import check
from gradercal.db.revisions import RevisionStore
from gradercal.db.session import open_database
from tests.support.team import BENCH, Team, crew, pg_url

__all__ = ["crew", "pg_url"]  # fixtures

pytestmark = pytest.mark.postgres

_TEMP_REVISION = (
    "CREATE TEMP TABLE revision (id serial, entity text, entity_id int, revision int, "
    "data json, actor text, source text, changed_at timestamptz) ON COMMIT DROP"
)


#: ``gradercal_keep_deleted`` as ``team init`` installed it before #30: ``revision``
#: unqualified, and ``pg_temp`` (not named) searched first
_EARLIER_KEEP_DELETED = """
CREATE OR REPLACE FUNCTION public.gradercal_keep_deleted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $fn$
BEGIN
    INSERT INTO revision (entity, entity_id, revision, data, actor, source, changed_at)
    VALUES (TG_TABLE_NAME || '_deleted', OLD.id, OLD.revision, to_json(OLD),
            session_user, 'sql-delete', now());
    RETURN NULL;
END
$fn$"""


def _scalar(engine: Engine, sql: str, **params: Any) -> Any:
    with engine.connect() as conn:
        return conn.execute(text(sql), params).scalar()


def _history(engine: Engine, entity: str, entity_id: int) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT revision, data, actor, source FROM public.revision "
                "WHERE entity = :e AND entity_id = :i ORDER BY id"
            ),
            {"e": entity, "i": entity_id},
        ).all()
    out = []
    for r in rows:
        data = r.data if isinstance(r.data, dict) else json.loads(r.data)
        out.append({**data, "revision": r.revision, "actor": r.actor, "source": r.source})
    return out


def _ana_grades_p1_c1(crew: Team) -> int:
    """ana's verdict on c1 of one P1 response, given through the app; its judgment id."""
    db = open_database(crew.url(crew.ana))
    try:
        store = GradingStore(db)
        item = next(i for i in store.ensure_queue(crew.ana, BENCH) if i.task_id == "P1")
        saved = store.save_judgment(item.assignment_id, "c1", JudgmentValue(met=True))
        return saved.judgment_id
    finally:
        db.dispose()


def _revise(crew: Team, task: str, criterion: str) -> None:
    db = open_database(crew.url(crew.dan))
    try:
        RevisionStore(db).revise_criterion(
            BENCH, task, criterion, text="Reworded so verdicts go stale", reason="r",
            actor=crew.dan,
        )  # fmt: skip
    finally:
        db.dispose()


def _check_ok(crew: Team) -> Any:
    admin = open_database(crew.admin)
    try:
        return check(admin, blobs=False)
    finally:
        admin.dispose()


# -- task_version ---------------------------------------------------------------------------
def test_a_grader_cannot_refresh_a_stale_verdict_without_its_history(crew: Team) -> None:
    """``UPDATE judgment SET task_version = <current>`` on a stale verdict used to turn it
    current with no history row (and ``check`` said ok). Now it is a new revision whose
    history keeps the version it was given under, and no version ahead of the task's can
    be written at all."""
    jid = _ana_grades_p1_c1(crew)
    _revise(crew, "P1", "c1")
    ana, admin = crew.engine(crew.ana), create_engine(crew.admin)
    try:
        current = _scalar(admin, "SELECT version FROM task WHERE external_id = 'P1'")
        assert current == 2
        with ana.begin() as conn:
            conn.execute(
                text("UPDATE judgment SET task_version = :v WHERE id = :j"),
                {"v": current, "j": jid},
            )
        assert _scalar(ana, "SELECT revision FROM judgment WHERE id = :j", j=jid) == 2
        kept = _history(admin, "judgment", jid)
        assert [(h["revision"], h["task_version"], h["actor"], h["source"]) for h in kept] == [
            (1, 1, crew.ana, "sql")
        ]
        for bad in (current + 1, 99, 0):
            with ana.begin() as conn, pytest.raises(DBAPIError, match="task version"):
                conn.execute(
                    text("UPDATE judgment SET task_version = :v WHERE id = :j"),
                    {"v": bad, "j": jid},
                )
        assert _scalar(ana, "SELECT task_version FROM judgment WHERE id = :j", j=jid) == current
    finally:
        ana.dispose()
        admin.dispose()
    report = _check_ok(crew)
    assert report.ok, report.problems


def test_an_adjudicator_cannot_refresh_a_stale_adjudication_without_its_history(
    crew: Team,
) -> None:
    admin, cleo = create_engine(crew.admin), crew.engine(crew.cleo)
    try:
        with admin.connect() as conn:
            adj = conn.execute(
                text(
                    "SELECT a.id, t.external_id AS task, c.external_id AS crit FROM adjudication a "
                    "JOIN criterion c ON c.id = a.criterion_id JOIN task t ON t.id = c.task_id "
                    "ORDER BY a.id LIMIT 1"
                )
            ).one()
        _revise(crew, adj.task, adj.crit)
        with cleo.begin() as conn:
            conn.execute(
                text("UPDATE adjudication SET task_version = 2 WHERE id = :a"), {"a": adj.id}
            )
        assert _scalar(admin, "SELECT revision FROM adjudication WHERE id = :a", a=adj.id) == 2
        kept = _history(admin, "adjudication", adj.id)
        assert [(h["revision"], h["task_version"], h["actor"]) for h in kept] == [(1, 1, crew.cleo)]
        with cleo.begin() as conn, pytest.raises(DBAPIError, match="task version"):
            conn.execute(
                text("UPDATE adjudication SET task_version = 7 WHERE id = :a"), {"a": adj.id}
            )
    finally:
        admin.dispose()
        cleo.dispose()
    report = _check_ok(crew)
    assert report.ok, report.problems


# -- temporary tables and the history functions ---------------------------------------------
@pytest.mark.parametrize("who", ["ana", "cleo", "dan"])
def test_no_team_login_may_create_a_temporary_table(crew: Team, who: str) -> None:
    """A temporary ``revision`` table used to catch the history the triggers wrote."""
    engine = crew.engine(getattr(crew, who))
    try:
        with engine.begin() as conn, pytest.raises(ProgrammingError, match="permission denied"):
            conn.execute(text(_TEMP_REVISION))
    finally:
        engine.dispose()


def test_a_temporary_revision_table_catches_no_history(crew: Team) -> None:
    """Even a session that may create temporary tables (here the superuser; before the
    fix, every team login) changes and deletes verdicts only with their history in
    ``public.revision``: the functions name every table with its schema and search
    ``pg_temp`` last."""
    jid = _ana_grades_p1_c1(crew)
    admin = create_engine(crew.admin)
    try:
        with admin.begin() as conn:
            conn.execute(text(_TEMP_REVISION))
            conn.execute(text("UPDATE judgment SET met = false WHERE id = :j"), {"j": jid})
            caught = conn.execute(text("SELECT count(*) FROM pg_temp.revision")).scalar()
        assert caught == 0
        assert [(h["revision"], h["met"]) for h in _history(admin, "judgment", jid)] == [(1, True)]
        adjudication = _scalar(admin, "SELECT min(id) FROM adjudication")
        with admin.begin() as conn:
            conn.execute(text(_TEMP_REVISION))
            conn.execute(text("DELETE FROM judgment WHERE id = :j"), {"j": jid})
            conn.execute(text("DELETE FROM adjudication WHERE id = :a"), {"a": adjudication})
        deleted = _history(admin, "judgment_deleted", jid)
        assert [(h["revision"], h["met"], h["source"]) for h in deleted] == [
            (2, False, "sql-delete")
        ]
        assert len(_history(admin, "adjudication_deleted", adjudication)) == 1
    finally:
        admin.dispose()
    report = _check_ok(crew)
    assert report.ok, report.problems


def test_check_reports_a_team_setup_that_lets_history_be_skipped(crew: Team) -> None:
    """A database whose team was set up by an earlier gradercal (functions searching
    ``pg_temp`` first, temporary tables allowed) is reported until ``team init`` runs
    again; verdicts deleted there by a coordinator through a temporary ``revision``
    (no ``judgment_deleted`` row) are reported for good."""
    db = open_database(crew.url(crew.ana))
    try:  # ana submits one item, every criterion answered
        store = GradingStore(db)
        aid = next(i for i in store.ensure_queue(crew.ana, BENCH) if i.task_id == "P1")
        item = store.load_item(crew.ana, aid.assignment_id)
        for c in item.task.criteria:
            value = JudgmentValue(level=2) if c.levels == 3 else JudgmentValue(met=True)
            store.save_judgment(aid.assignment_id, c.id, value)
        store.submit(aid.assignment_id)
    finally:
        db.dispose()
    assert _check_ok(crew).ok
    admin = create_engine(crew.admin)
    try:
        with admin.begin() as conn:  # as the earlier team init left them
            conn.execute(text(_EARLIER_KEEP_DELETED))
            conn.execute(text(f'GRANT TEMPORARY ON DATABASE "{crew.database}" TO PUBLIC'))
    finally:
        admin.dispose()
    report = _check_ok(crew)
    assert {p.check for p in report.problems} == {
        "team.history_functions",
        "team.temporary_tables",
    }, report.problems
    messages = " ".join(p.message for p in report.problems)
    assert "gradercal_keep_deleted" in messages and "team init" in messages
    assert "PUBLIC" in messages
    dan = crew.engine(crew.dan)
    try:  # the attack the earlier setup allowed: the deleted values go to pg_temp
        with dan.begin() as conn:
            conn.execute(text(_TEMP_REVISION))
            n = conn.execute(
                text(
                    "DELETE FROM judgment WHERE grader_id = (SELECT id FROM grader WHERE name = :a)"
                ),
                {"a": crew.ana},
            ).rowcount
        assert n == 4
        assert _scalar(dan, "SELECT count(*) FROM revision WHERE entity = 'judgment_deleted'") == 0
    finally:
        dan.dispose()
    report = _check_ok(crew)
    assert "assignment.verdicts_missing" in {p.check for p in report.problems}
    from gradercal.db import team

    db = open_database(crew.admin)
    try:
        team.init(db)
    finally:
        db.dispose()
    report = _check_ok(crew)  # the setup is mended; the lost verdicts stay reported
    assert [(p.check, p.count) for p in report.problems] == [("assignment.verdicts_missing", 4)]


# -- submitting -----------------------------------------------------------------------------
def test_a_grader_cannot_submit_an_unanswered_item_by_sql(crew: Team) -> None:
    db = open_database(crew.url(crew.ana))
    try:
        store = GradingStore(db)
        # two items of P1 (four judgment criteria): one untouched, one with c1 answered
        empty, some = [
            i.assignment_id for i in store.ensure_queue(crew.ana, BENCH) if i.task_id == "P1"
        ][:2]
        store.save_judgment(some, "c1", JudgmentValue(met=True))
    finally:
        db.dispose()
    ana = crew.engine(crew.ana)
    try:
        for aid in (empty, some):
            with pytest.raises(DBAPIError, match="cannot be submitted"), ana.begin() as conn:
                conn.execute(
                    text(
                        "UPDATE assignment SET status = 'submitted', submitted_at = now() "
                        "WHERE id = :a"
                    ),
                    {"a": aid},
                )
        assert _scalar(ana, "SELECT count(*) FROM assignment WHERE status = 'submitted'") == 0
    finally:
        ana.dispose()
    db = open_database(crew.url(crew.ana))
    try:  # the app's own submit, with every criterion answered, still goes through
        store = GradingStore(db)
        item = store.load_item(crew.ana, empty)
        for c in item.task.criteria:
            if c.kind.value == "judgment":
                value = JudgmentValue(level=2) if c.levels == 3 else JudgmentValue(met=True)
                store.save_judgment(empty, c.id, value)
        assert store.submit(empty).status == "submitted"
    finally:
        db.dispose()
    ana = crew.engine(crew.ana)
    try:  # clearing a verdict (or making it stale) by SQL puts the item back in progress
        for sql in (
            "UPDATE judgment SET met = NULL, level = NULL WHERE id = :j",
            "UPDATE judgment SET met = true, level = NULL WHERE id = :j",
            "UPDATE assignment SET status = 'submitted' WHERE id = :a",
        ):
            jid = _scalar(
                ana,
                "SELECT j.id FROM judgment j JOIN assignment a ON a.response_id = j.response_id "
                "JOIN criterion c ON c.id = j.criterion_id "
                "WHERE a.id = :a AND c.levels = 2 ORDER BY j.id LIMIT 1",
                a=empty,
            )
            with ana.begin() as conn:
                conn.execute(text(sql), {"j": jid, "a": empty})
        assert _scalar(ana, "SELECT status FROM assignment WHERE id = :a", a=empty) == "submitted"
        with ana.begin() as conn:
            conn.execute(text("UPDATE judgment SET met = NULL WHERE id = :j"), {"j": jid})
        assert _scalar(ana, "SELECT status FROM assignment WHERE id = :a", a=empty) == (
            "in_progress"
        )
    finally:
        ana.dispose()
    assert _check_ok(crew).ok


# -- response ids ---------------------------------------------------------------------------
def _same_rank_same_model(ids_by_task: dict[int, list[int]], model: dict[int, str]) -> float:
    """Of every two responses of different tasks at the same rank of id within their
    task, the share by the same model: 1 when ids follow a file that lists the models in
    the same order in every task, about 1/k (k models) when ids tell nothing."""
    same = pairs = 0
    tasks = sorted(ids_by_task)
    for i, a in enumerate(tasks):
        for b in tasks[i + 1 :]:
            for x, y in zip(sorted(ids_by_task[a]), sorted(ids_by_task[b]), strict=False):
                pairs += 1
                same += model[x] == model[y]
    return same / pairs


def test_a_grader_cannot_group_responses_by_model_from_their_ids(crew: Team) -> None:
    """ana reads the ids of the responses she grades (never their models). They used to
    follow the input file, which lists the models in the same order under every task:
    the n-th id of each task was always the same model."""
    ana, admin = crew.engine(crew.ana), create_engine(crew.admin)
    try:
        with ana.connect() as conn:
            seen = conn.execute(text("SELECT id, task_id FROM response")).all()
        with admin.connect() as conn:
            model = dict(conn.execute(text("SELECT id, model FROM response")).all())
    finally:
        ana.dispose()
        admin.dispose()
    by_task: dict[int, list[int]] = {}
    for rid, tid in seen:
        by_task.setdefault(tid, []).append(rid)
    assert len(by_task) == 3 and all(len(v) == 3 for v in by_task.values())
    assert _same_rank_same_model(by_task, model) < 1.0


# -- races between two people ---------------------------------------------------------------
def test_two_graders_flagging_at_once_over_their_own_logins_share_one_thread(crew: Team) -> None:
    """ana and bob, each connected as themselves, flag P1's c1 unclear at the same moment,
    ten times: one open thread each time, holding both questions."""
    import threading

    from gradercal.db.clarifications import close, list_clarifications

    dbs = [open_database(crew.url(u)) for u in (crew.ana, crew.bob)]
    dan = open_database(crew.url(crew.dan))
    try:
        stores = [GradingStore(db) for db in dbs]
        aids = [
            next(i for i in s.ensure_queue(u, BENCH) if i.task_id == "P1").assignment_id
            for s, u in zip(stores, (crew.ana, crew.bob), strict=True)
        ]
        for r in range(10):
            barrier, errors = threading.Barrier(2), []

            def flag(i: int, r: int = r, barrier: Any = barrier, errors: Any = errors) -> None:
                value = JudgmentValue(met=True, unclear=True, unclear_note=f"{i} asks, {r}")
                barrier.wait()
                try:
                    stores[i].save_judgment(aids[i], "c1", value)
                except Exception as exc:  # reported below
                    errors.append(exc)

            threads = [threading.Thread(target=flag, args=(i,)) for i in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert not errors, errors
            opened = [c for c in list_clarifications(dan, BENCH) if c.status == "open"]
            assert len(opened) == 1, f"round {r}: {len(opened)} open threads"
            assert {m.text for m in opened[0].messages} == {f"0 asks, {r}", f"1 asks, {r}"}
            close(dan, opened[0].id, actor=None)
    finally:
        for db in (*dbs, dan):
            db.dispose()


def test_an_adjudicator_and_a_coordinator_deciding_at_once_decide_once(crew: Team) -> None:
    import threading

    from gradercal.db.adjudication import AdjudicationStore
    from gradercal.errors import ConflictError

    admin = create_engine(crew.admin)
    try:
        with admin.connect() as conn:
            response, crit = conn.execute(
                text(
                    "SELECT r.external_id, c.external_id FROM response r JOIN criterion c "
                    "ON c.task_id = r.task_id WHERE c.kind = 'judgment' AND NOT EXISTS (SELECT 1 "
                    "FROM adjudication a WHERE a.response_id = r.id AND a.criterion_id = c.id) "
                    "ORDER BY r.external_id, c.external_id LIMIT 1"
                )
            ).one()
    finally:
        admin.dispose()
    dbs = {u: open_database(crew.url(u)) for u in (crew.cleo, crew.dan)}
    try:
        cases = {u: AdjudicationStore(db).case(BENCH, response, crit) for u, db in dbs.items()}
        barrier, results = threading.Barrier(2), {}

        def decide(user: str, verdict: str) -> None:
            barrier.wait()
            try:
                AdjudicationStore(dbs[user]).record(cases[user], verdict, f"{user}'s note", user)
                results[user] = "ok"
            except ConflictError as exc:
                results[user] = str(exc)

        threads = [
            threading.Thread(target=decide, args=(crew.cleo, "met")),
            threading.Thread(target=decide, args=(crew.dan, "not_met")),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [u for u, r in results.items() if r == "ok"]
        assert len(results) == 2 and len(winners) == 1, results
        loser = next(r for r in results.values() if r != "ok")
        assert f"{winners[0]}'s note" in loser
        now = AdjudicationStore(dbs[crew.dan]).case(BENCH, response, crit).current
        assert now is not None and now.adjudicator == winners[0] and now.revision == 1
    finally:
        for db in dbs.values():
            db.dispose()
