"""Clarification threads on both backends: an unclear flag with a note asks in the same
transaction as the judgment, coordinators answer (and may ask for a re-check), graders
read the answers; the upgrade of a 0004 database that holds data."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, inspect, select, text

from gradercal.db import models as m
from gradercal.db.clarifications import (
    ClarificationError,
    answer,
    answered_for_criterion,
    ask,
    close,
    get,
    list_clarifications,
)
from gradercal.db.grading import GradingStore, JudgmentValue, QueueItem
from gradercal.db.session import open_database
from gradercal.errors import NotFoundError
from tests.conftest import DatabaseTemplates
from tests.support.gui import import_folder, write_gui_benchmark

BENCH = "gui-bench"


@pytest.fixture
def store(db_url: str, tmp_path: Path, db_templates: DatabaseTemplates) -> Iterator[GradingStore]:
    db_templates.fill(
        db_url,
        "gui benchmark",
        lambda url: import_folder(url, write_gui_benchmark(tmp_path / "bench")),
    )
    db = open_database(db_url)
    try:
        yield GradingStore(db)
    finally:
        db.dispose()


def _items(store: GradingStore, grader: str, task: str) -> list[QueueItem]:
    store.create_grader(grader)
    return [i for i in store.ensure_queue(grader, BENCH) if i.task_id == task]


def _count(store: GradingStore, model: type[m.Base]) -> int:
    with store.db.read() as s:
        return int(s.scalar(select(func.count()).select_from(model)) or 0)


def test_an_unclear_note_opens_the_thread_and_others_join_it(store: GradingStore) -> None:
    ana = _items(store, "ana", "P1")
    bob = _items(store, "bob", "P1")
    # a flag without a note asks nothing
    store.save_judgment(ana[0].assignment_id, "c2", JudgmentValue(met=True, unclear=True))
    assert _count(store, m.Clarification) == 0
    store.save_judgment(
        ana[0].assignment_id,
        "c1",
        JudgmentValue(met=True, unclear=True, unclear_note="Does 'supported' include trends?"),
    )
    [thread] = list_clarifications(store.db, BENCH)
    assert (thread.task, thread.criterion, thread.status) == ("P1", "c1", "open")
    assert thread.question == "Does 'supported' include trends?"
    assert thread.asked_by == "ana"
    assert thread.criterion_text == "Says the claim is not supported"
    # the same note saved again (another rationale, another response) adds nothing
    store.save_judgment(
        ana[0].assignment_id,
        "c1",
        JudgmentValue(
            met=False, rationale="x", unclear=True, unclear_note="Does 'supported' include trends?"
        ),
    )
    store.save_judgment(
        ana[1].assignment_id,
        "c1",
        JudgmentValue(met=True, unclear=True, unclear_note="Does 'supported' include trends?"),
    )
    # bob's note joins the open thread
    store.save_judgment(
        bob[0].assignment_id, "c1", JudgmentValue(met=False, unclear=True, unclear_note="p < 0.1?")
    )
    [thread] = list_clarifications(store.db, BENCH)
    assert [(x.kind, x.author, x.text) for x in thread.messages] == [
        ("question", "ana", "Does 'supported' include trends?"),
        ("question", "bob", "p < 0.1?"),
    ]
    # the thread is in the judgment's transaction: a refused save asks nothing
    with pytest.raises(NotFoundError):
        store.save_judgment(
            bob[0].assignment_id, "zz", JudgmentValue(met=True, unclear=True, unclear_note="?")
        )
    assert len(get(store.db, thread.id).messages) == 2


def test_a_note_edited_while_the_thread_is_open_revises_its_question(
    store: GradingStore,
) -> None:
    ana = _items(store, "ana", "P2")
    bob = _items(store, "bob", "P2")
    aid, bid = ana[0].assignment_id, bob[0].assignment_id
    for typed in ("Does a pl", "Does a plateau count?"):  # saved after each pause in typing
        store.save_judgment(aid, "c1", JudgmentValue(met=True, unclear=True, unclear_note=typed))
    store.save_judgment(bid, "c1", JudgmentValue(met=True, unclear=True, unclear_note="Wh"))
    store.save_judgment(bid, "c1", JudgmentValue(met=True, unclear=True, unclear_note="Which?"))
    [thread] = list_clarifications(store.db, BENCH)
    assert thread.question == "Does a plateau count?"
    assert [(x.author, x.text) for x in thread.messages] == [
        ("ana", "Does a plateau count?"),
        ("bob", "Which?"),
    ]
    # bob's edit revises his message only; ana's revises the thread's question too
    store.save_judgment(aid, "c1", JudgmentValue(met=True, unclear=True, unclear_note="Plateau?"))
    thread = get(store.db, thread.id)
    assert thread.question == "Plateau?"
    assert [x.text for x in thread.messages] == ["Plateau?", "Which?"]
    # another response's note is another question; once answered, an edit asks anew
    store.save_judgment(
        ana[1].assignment_id, "c1", JudgmentValue(met=False, unclear=True, unclear_note="Slope?")
    )
    assert [x.text for x in get(store.db, thread.id).messages] == ["Plateau?", "Which?", "Slope?"]
    answer(store.db, thread.id, "A plateau counts when it lasts 3 points.", actor="chair")
    store.save_judgment(aid, "c1", JudgmentValue(met=True, unclear=True, unclear_note="Plateau!"))
    old, new = list_clarifications(store.db, BENCH)
    assert old.messages[0].text == "Plateau?" and old.status == "answered"
    assert (new.status, new.question, new.asked_by) == ("open", "Plateau!", "ana")


def test_answer_recheck_reopens_finished_work_and_graders_read_it(store: GradingStore) -> None:
    ana = _items(store, "ana", "P1")
    bob = _items(store, "bob", "P1")
    first = ana[0].assignment_id
    for cid in ("c1", "c2", "c3"):
        store.save_judgment(first, cid, JudgmentValue(met=True))
    store.save_judgment(first, "c4", JudgmentValue(level=1))
    store.submit(first)
    store.save_judgment(
        bob[0].assignment_id, "c1", JudgmentValue(met=False, unclear=True, unclear_note="trends?")
    )
    [thread] = list_clarifications(store.db, BENCH, status="open")
    assert answered_for_criterion(store.db, _bench_id(store), "P1", "c1") == []
    done = answer(
        store.db, thread.id, "Trends do not count: only p < 0.05.", actor="chair", recheck=True
    )
    assert done.clarification.status == "answered"
    assert done.clarification.answered_by == "chair"
    assert done.reopened == (first,)  # ana had submitted; bob is still at work
    assert done.graders == ("ana", "bob")  # the imported expert has no queue item, the judge none
    assert store.queue_item(first).status == "in_progress"
    [history] = store.reopen_history(first)
    assert history["status"] == "submitted" and history["clarification"] == thread.id
    assert history["actor"] == "chair"
    assert store.queue_item(bob[0].assignment_id).status == "in_progress"
    assert list_clarifications(store.db, BENCH, status="open") == []
    [guide] = answered_for_criterion(store.db, _bench_id(store), "P1", "c1")
    assert guide.answer == "Trends do not count: only p < 0.05." and guide.answered_by == "chair"
    assert answered_for_criterion(store.db, _bench_id(store), "P1", "c2") == []
    assert answered_for_criterion(store.db, _bench_id(store), "P2", "c1") == []
    # answering again replaces the answer and keeps the first one in the thread
    again = answer(store.db, thread.id, "Only p < 0.05, two-sided.", actor="chair")
    assert again.reopened == () and again.graders == ()
    assert [x.kind for x in again.clarification.messages] == ["question", "answer", "answer"]
    assert [g.answer for g in answered_for_criterion(store.db, _bench_id(store), "P1", "c1")] == [
        "Only p < 0.05, two-sided."
    ]
    # a question after the answer opens a new thread
    store.save_judgment(
        bob[0].assignment_id,
        "c1",
        JudgmentValue(met=False, unclear=True, unclear_note="one-sided?"),
    )
    assert [c.status for c in list_clarifications(store.db, BENCH)] == ["answered", "open"]


def test_ask_close_and_refusals(store: GradingStore) -> None:
    asked = ask(store.db, BENCH, "P3", "c2", "  Which chains count?  ", actor="dana")
    assert (asked.task, asked.criterion, asked.question, asked.asked_by) == (
        "P3",
        "c2",
        "Which chains count?",
        "dana",
    )
    with pytest.raises(ClarificationError, match="must not be empty"):
        ask(store.db, BENCH, "P3", "c2", "   ", actor="dana")
    with pytest.raises(ClarificationError, match="--actor"):
        ask(store.db, BENCH, "P3", "c2", "x", actor="")
    with pytest.raises(NotFoundError, match="no criterion 'c9'"):
        ask(store.db, BENCH, "P3", "c9", "x", actor="dana")
    with pytest.raises(NotFoundError, match="no clarification 999"):
        answer(store.db, 999, "x", actor="chair")
    closed = close(store.db, asked.id, actor="chair")
    assert closed.status == "closed"
    with pytest.raises(ClarificationError, match="is closed"):
        answer(store.db, asked.id, "late", actor="chair")
    with pytest.raises(ClarificationError, match="unknown status"):
        list_clarifications(store.db, BENCH, status="pending")
    assert [c.id for c in list_clarifications(store.db, BENCH, status="closed")] == [asked.id]


def _bench_id(store: GradingStore) -> int:
    return store.repo.benchmark(BENCH).id


def test_upgrade_from_0004_keeps_the_data(db_url: str) -> None:
    from alembic import command

    from gradercal.db.session import alembic_config, make_engine, resolve_url

    engine = make_engine(resolve_url(db_url))
    try:
        cfg = alembic_config(engine)
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "0004")
        assert "clarification" not in inspect(engine).get_table_names()
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO benchmark (name, pass_threshold, format_version, created_at) "
                    "VALUES ('old', 0.7, 1, CURRENT_TIMESTAMP)"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO task (benchmark_id, external_id, position, prompt, tags, "
                    "metadata, content_hash, created_at) SELECT id, 'OLD1', 0, 'p', '[]', "
                    "'{}', 'h', CURRENT_TIMESTAMP FROM benchmark"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO criterion (task_id, external_id, position, text, points, tags, "
                    "kind, levels) SELECT id, 'c1', 0, 'Is right', 3, '[]', 'judgment', 2 "
                    "FROM task"
                )
            )
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
        names = inspect(engine).get_table_names()
        assert {"clarification", "clarification_message"} <= set(names)
    finally:
        engine.dispose()
    db = open_database(db_url)
    try:
        bench = db_bench = None
        with db.read() as s:
            db_bench = s.scalar(select(m.Benchmark).where(m.Benchmark.name == "old"))
            assert db_bench is not None and db_bench.instructions is None
            bench = db_bench.id
        assert list_clarifications(db, "old") == []
        asked = ask(
            db,
            "old",
            "OLD1",
            "c1",
            "right how?",
            actor="ana",
            now=datetime(2026, 12, 3, tzinfo=UTC),
        )
        assert asked.asked_at == datetime(2026, 12, 3, tzinfo=UTC)
        answer(db, asked.id, "Exactly right.", actor="chair")
        assert [g.answer for g in answered_for_criterion(db, bench, "OLD1", "c1")] == [
            "Exactly right."
        ]
    finally:
        db.dispose()


def test_two_graders_flagging_at_the_same_moment_share_one_thread(
    store: GradingStore, db_url: str
) -> None:
    """Two graders, each on their own connection, flag the same criterion unclear at the
    same moment, 20 times: before the database kept one open thread per criterion, both
    could find none and open one each (7 of 20 rounds on PostgreSQL). Now every round
    ends with one open thread holding both questions."""
    import threading

    ana = _items(store, "ana", "P1")[0].assignment_id
    bob = _items(store, "bob", "P1")[0].assignment_id
    stores = [GradingStore(open_database(db_url)) for _ in range(2)]
    rounds, errors = 20, []
    try:
        for r in range(rounds):
            barrier = threading.Barrier(2)

            def flag(i: int, aid: int, who: str, r: int = r, barrier: Any = barrier) -> None:
                value = JudgmentValue(met=True, unclear=True, unclear_note=f"{who} asks, {r}")
                barrier.wait()
                try:
                    stores[i].save_judgment(aid, "c1", value)
                except Exception as exc:  # reported below
                    errors.append(exc)

            threads = [
                threading.Thread(target=flag, args=(0, ana, "ana")),
                threading.Thread(target=flag, args=(1, bob, "bob")),
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert not errors, errors
            open_threads = [c for c in list_clarifications(store.db, BENCH) if c.status == "open"]
            assert len(open_threads) == 1, f"round {r}: {len(open_threads)} open threads"
            questions = {msg.text for msg in open_threads[0].messages}
            assert questions == {f"ana asks, {r}", f"bob asks, {r}"}
            close(store.db, open_threads[0].id, actor="coordinator")
    finally:
        for s in stores:
            s.db.dispose()
    assert _count(store, m.Clarification) == rounds


def test_upgrade_to_0008_merges_duplicate_open_threads_and_keeps_response_order(
    db_url: str,
) -> None:
    """A 0007 database where a race left two open threads on one criterion: the upgrade
    keeps the older one open with every question of both (the later is closed), and
    gives existing responses their id as position (ids followed the file until then)."""
    from alembic import command

    from gradercal.db.session import alembic_config, make_engine, resolve_url

    engine = make_engine(resolve_url(db_url))
    try:
        cfg = alembic_config(engine)
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "0007")
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO benchmark (name, pass_threshold, format_version, created_at) "
                    "VALUES ('old', 0.7, 1, CURRENT_TIMESTAMP)"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO task (benchmark_id, external_id, position, prompt, tags, "
                    "metadata, content_hash, created_at) SELECT id, 'OLD1', 0, 'p', '[]', "
                    "'{}', 'h', CURRENT_TIMESTAMP FROM benchmark"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO criterion (task_id, external_id, position, text, points, tags, "
                    "kind, levels) SELECT id, 'c1', 0, 'Is right', 3, '[]', 'judgment', 2 "
                    "FROM task"
                )
            )
            for ext in ("r-b", "r-a"):
                conn.execute(
                    text(
                        "INSERT INTO response (benchmark_id, task_id, external_id, model, text, "
                        "content_hash, created_at) SELECT benchmark_id, id, :e, 'm', 't', 'h', "
                        "CURRENT_TIMESTAMP FROM task"
                    ),
                    {"e": ext},
                )
            for who in ("ana", "bob", "cleo"):
                status = "answered" if who == "cleo" else "open"
                cid = conn.execute(
                    text(
                        "INSERT INTO clarification (benchmark_id, task_id, criterion_id, status, "
                        "question, asked_by, asked_at, updated_at) SELECT t.benchmark_id, t.id, "
                        "c.id, :s, :q, :w, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP FROM criterion c "
                        "JOIN task t ON t.id = c.task_id RETURNING id"
                    ),
                    {"s": status, "q": f"{who} asks", "w": who},
                ).scalar_one()
                conn.execute(
                    text(
                        "INSERT INTO clarification_message (clarification_id, kind, author, text, "
                        "created_at) VALUES (:c, 'question', :w, :q, CURRENT_TIMESTAMP)"
                    ),
                    {"c": cid, "w": who, "q": f"{who} asks"},
                )
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
        with engine.connect() as conn:
            order = conn.execute(
                text("SELECT external_id FROM response ORDER BY position")
            ).scalars()
            assert list(order) == ["r-b", "r-a"]
    finally:
        engine.dispose()
    db = open_database(db_url)
    try:
        threads = {c.asked_by: c for c in list_clarifications(db, "old")}
        assert (threads["ana"].status, threads["bob"].status) == ("open", "closed")
        assert [msg.text for msg in threads["ana"].messages] == ["ana asks", "bob asks"]
        assert threads["bob"].messages == () and threads["cleo"].status == "answered"
        # the index now keeps one open thread per criterion
        joined = ask(db, "old", "OLD1", "c1", "dan asks", actor="dan")
        assert joined.id == threads["ana"].id
    finally:
        db.dispose()
