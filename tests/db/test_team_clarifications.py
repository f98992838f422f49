"""Clarification threads in team mode on the real PostgreSQL server: a grader asks as
themselves on the criteria of their tasks and reads the answers, nothing else."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import ProgrammingError

from gradercal.db.clarifications import (
    ClarificationError,
    answer,
    answered_for_criterion,
    ask,
    get,
)
from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.session import open_database
from tests.support.team import BENCH, Team, crew, pg_url

__all__ = ["crew", "pg_url"]  # fixtures

pytestmark = pytest.mark.postgres


def _scalar(engine: Engine, sql: str, **params: Any) -> Any:
    with engine.connect() as conn:
        return conn.execute(text(sql), params).scalar()


def _refused(engine: Engine, sql: str, match: str) -> None:
    with engine.connect() as conn, pytest.raises(ProgrammingError, match=match):
        conn.execute(text(sql))


def test_a_grader_asks_reads_answers_and_nothing_else(crew: Team) -> None:
    admin = create_engine(crew.admin)
    with admin.begin() as conn:  # ana is not assigned task P3
        conn.execute(
            text(
                "DELETE FROM assignment WHERE grader_id = (SELECT id FROM grader WHERE name = :a) "
                "AND response_id IN (SELECT r.id FROM response r JOIN task t ON t.id = r.task_id "
                "WHERE t.external_id = 'P3')"
            ),
            {"a": crew.ana},
        )
    owner = open_database(crew.admin)
    ana_db = open_database(crew.url(crew.ana))
    bob_db = open_database(crew.url(crew.bob))
    dan_db = open_database(crew.url(crew.dan))
    cleo_db = open_database(crew.url(crew.cleo))
    ana = crew.engine(crew.ana)
    try:
        bench_id = int(_scalar(admin, "SELECT id FROM benchmark"))
        outside = ask(owner, BENCH, "P3", "c1", "Which stop codons?", actor="chair")
        answer(owner, outside.id, "TAA, TAG and TGA.", actor="chair")

        # ana flags P1 c1 unclear with a note: the thread is opened as ana
        store = GradingStore(ana_db)
        item = next(i for i in store.ensure_queue(crew.ana, BENCH) if i.task_id == "P1")
        store.save_judgment(
            item.assignment_id, "c1", JudgmentValue(met=True, unclear=True, unclear_note="trends?")
        )
        bob_store = GradingStore(bob_db)
        bob_item = next(i for i in bob_store.ensure_queue(crew.bob, BENCH) if i.task_id == "P1")
        bob_store.save_judgment(
            bob_item.assignment_id,
            "c1",
            JudgmentValue(met=False, unclear=True, unclear_note="BOB-QUESTION"),
        )
        # ana edits her note: her question (the thread's first) is revised, as ana
        store.save_judgment(
            item.assignment_id,
            "c1",
            JudgmentValue(met=True, unclear=True, unclear_note="Do trends count?"),
        )
        thread_id = int(
            _scalar(admin, "SELECT id FROM clarification WHERE asked_by = :a", a=crew.ana)
        )
        thread = get(owner, thread_id)
        assert thread.question == "Do trends count?"
        assert [(x.author, x.text) for x in thread.messages] == [
            (crew.ana, "Do trends count?"),
            (crew.bob, "BOB-QUESTION"),
        ]
        # she cannot rewrite bob's question (row-level security hides it from her)
        with ana.begin() as conn:
            changed = conn.execute(
                text("UPDATE clarification_message SET text = 'x' WHERE author = :b"),
                {"b": crew.bob},
            ).rowcount
        assert changed == 0
        assert get(owner, thread_id).messages[1].text == "BOB-QUESTION"

        # only the coordinator or an adjudicator answers; only the coordinator re-checks
        with pytest.raises(ClarificationError, match="only a coordinator or an adjudicator"):
            answer(ana_db, thread_id, "mine", actor=None)
        with pytest.raises(ClarificationError, match="only a coordinator may ask"):
            answer(cleo_db, thread_id, "x", actor=None, recheck=True)
        done = answer(dan_db, thread_id, "Trends do not count.", actor="ignored", recheck=True)
        assert done.clarification.answered_by == crew.dan  # the session user, always
        assert set(done.graders) == {crew.ana, crew.bob}
        later = answer(cleo_db, thread_id, "Trends never count.", actor=None)
        assert later.clarification.answered_by == crew.cleo

        # ana reads the answers on her task's criterion, not those outside her tasks
        guides = answered_for_criterion(ana_db, bench_id, "P1", "c1")
        assert [g.answer for g in guides] == ["Trends never count."]
        assert answered_for_criterion(ana_db, bench_id, "P3", "c1") == []
        assert _scalar(ana, "SELECT count(*) FROM clarification") == 1
        # her own question and the answers; never bob's question, nor who asked what
        assert _scalar(ana, "SELECT count(*) FROM clarification_message") == 3
        assert (
            _scalar(ana, "SELECT count(*) FROM clarification_message WHERE author = :b", b=crew.bob)
            == 0
        )
        for column in ("question", "asked_by"):
            _refused(ana, f"SELECT {column} FROM clarification", "permission denied")
        # she cannot answer, nor ask as someone else, nor ask outside her tasks
        _refused(ana, "UPDATE clarification SET answer = 'mine'", "permission denied")
        _refused(
            ana,
            f"INSERT INTO clarification_message (clarification_id, kind, author, text, "
            f"created_at) VALUES ({thread_id}, 'answer', current_user, 'mine', now())",
            "row-level security",
        )
        crit = int(
            _scalar(
                admin,
                "SELECT c.id FROM criterion c JOIN task t ON t.id = c.task_id "
                "WHERE t.external_id = :t AND c.external_id = 'c2'",
                t="P1",
            )
        )
        task = int(_scalar(admin, "SELECT id FROM task WHERE external_id = 'P1'"))
        values = f"{bench_id}, {task}, {crit}, 'open', 'q', '{crew.bob}', now(), now()"
        _refused(
            ana,
            "INSERT INTO clarification (benchmark_id, task_id, criterion_id, status, question, "
            f"asked_by, asked_at, updated_at) VALUES ({values})",
            "row-level security",
        )
        p3 = int(
            _scalar(
                admin,
                "SELECT c.id FROM criterion c JOIN task t ON t.id = c.task_id "
                "WHERE t.external_id = 'P3' AND c.external_id = 'c2'",
            )
        )
        p3_task = int(_scalar(admin, "SELECT id FROM task WHERE external_id = 'P3'"))
        values = f"{bench_id}, {p3_task}, {p3}, 'open', 'q', current_user, now(), now()"
        _refused(
            ana,
            "INSERT INTO clarification (benchmark_id, task_id, criterion_id, status, question, "
            f"asked_by, asked_at, updated_at) VALUES ({values})",
            "row-level security",
        )
        assert _scalar(admin, "SELECT count(*) FROM clarification") == 2
    finally:
        for db in (owner, ana_db, bob_db, dan_db, cleo_db):
            db.dispose()
        ana.dispose()
        admin.dispose()
