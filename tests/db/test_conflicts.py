"""Settling packet conflicts (``gradercal packet conflicts|resolve``) and stale-view checks.

Both run on SQLite and on a real PostgreSQL server (``db_url``). A conflict is resolved
with its history intact; a second merge of the same packet then changes nothing. Two
stores on one database play two windows (or a window and a coordinator): a write over
a value changed in between is refused with :class:`StaleJudgmentError`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from gradercal.cli import main
from gradercal.db import models as m
from gradercal.db.assignments import assign
from gradercal.db.grading import (
    GradingStore,
    JudgmentValue,
    JudgmentVersion,
    StaleJudgmentError,
)
from gradercal.db.packets import (
    RESOLUTION_ENTITY,
    export_packet,
    list_conflicts,
    merge_packet,
    open_packet,
    resolve_conflict,
)
from gradercal.db.repo import Repository
from gradercal.db.session import Database, open_database
from gradercal.errors import ConflictError, NotFoundError, ValidationError
from gradercal.formats import read_path
from tests.conftest import DEMO, DatabaseTemplates, fingerprint

GRADERS = ("k-ana", "k-ben")


def _build_team(db_url: str) -> None:
    db = open_database(db_url)
    try:
        Repository(db).import_data(read_path(DEMO))
        assign(db, list(GRADERS), 2, seed="conflicts")
    finally:
        db.dispose()


@pytest.fixture
def team(db_url: str, db_templates: DatabaseTemplates) -> Iterator[Database]:
    """The demo with two graders assigned (built once per backend, copied per test)."""
    db = open_database(db_templates.fill(db_url, "conflicts team", _build_team))
    try:
        yield db
    finally:
        db.dispose()


def judgment_criteria(store: GradingStore, grader: str, aid: int) -> list[str]:
    item = store.load_item(grader, aid)
    return [c.id for c in item.task.criteria if c.kind.value == "judgment"]


def conflicted(db: Database, tmp_path: Path) -> tuple[Path, list[tuple[int, str]]]:
    """Three judgment conflicts for k-ana (two on one multi-level-free item, one on another)."""
    store = GradingStore(db)
    path = tmp_path / "ana.gcpkg"
    queue = store.queue("k-ana")
    picked = [
        (queue[0].assignment_id, judgment_criteria(store, "k-ana", queue[0].assignment_id)[0]),
        (queue[0].assignment_id, judgment_criteria(store, "k-ana", queue[0].assignment_id)[1]),
        (queue[1].assignment_id, judgment_criteria(store, "k-ana", queue[1].assignment_id)[0]),
    ]
    export_packet(db, "k-ana", path)
    for aid, crit in picked:
        store.save_judgment(aid, crit, JudgmentValue(met=True, rationale="online"))
    with open_packet(path, workdir=tmp_path / "work") as session:
        pstore = GradingStore(session.db)
        for aid, crit in picked:
            pstore.save_judgment(aid, crit, JudgmentValue(met=False, rationale="offline 1"))
            pstore.save_judgment(aid, crit, JudgmentValue(met=False, rationale="offline 2"))
    report = merge_packet(db, path)
    assert len(report.conflicts) == 3 and report.new_conflicts == 3
    return path, picked


def run(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def test_cli_lists_and_resolves_conflicts_with_history(
    team: Database, db_url: str, tmp_path: Path
) -> None:
    path, picked = conflicted(team, tmp_path)
    res = run("packet", "conflicts", "--db", db_url, "--json")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [r["status"] for r in rows] == ["open"] * 3
    assert [(r["criterion_id"], r["database"]["met"], r["packet"]["met"]) for r in rows] == [
        (crit, True, False) for _aid, crit in picked
    ]
    assert all(r["current"]["rationale"] == "online" and r["resolution"] is None for r in rows)
    text = run("packet", "conflicts", "--db", db_url)
    assert text.exit_code == 0 and f"#{rows[0]['id']} k-ana" in text.stdout
    ids = [r["id"] for r in rows]

    # keep the packet's value: written, the database's value goes to the history
    res = run(
        "packet", "resolve", str(ids[0]), "--db", db_url, "--keep", "packet",
        "--note", "ana re-read the figure", "--by", "lead", "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["changed"] is True and out["value"]["rationale"] == "offline 2"
    assert out["previous"]["rationale"] == "online" and out["by"] == "lead"
    # keep the database's value: nothing changes but the decision is recorded
    res = run("packet", "resolve", str(ids[1]), "--db", db_url, "--keep", "database")
    assert res.exit_code == 0 and "stays" in res.stdout
    # a verdict of the coordinator's own: met/not-met/level:N (rationale kept)
    res = run("packet", "resolve", str(ids[2]), "--db", db_url, "--keep", "not-met", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["value"] == {
        "met": False,
        "level": None,
        "confidence": None,
        "rationale": "online",
        "unclear": False,
        "unclear_note": None,
    }

    store = GradingStore(team)
    now = {(aid, c): store.load_item("k-ana", aid).judgments[c] for aid, c in picked}
    assert [(v.met, v.rationale) for v in now.values()] == [
        (False, "offline 2"),
        (True, "online"),
        (False, "online"),
    ]
    aid0, crit0 = picked[0]
    history = store.judgment_history(aid0, crit0)
    assert [(h["met"], h["rationale"], h["source"]) for h in history] == [
        (True, "online", "ui"),
        (False, "offline 2", "resolve"),
    ]
    assert run("packet", "conflicts", "--db", db_url, "--json").stdout.strip() == "[]"
    resolved = json.loads(run("packet", "conflicts", "--db", db_url, "--all", "--json").stdout)
    assert [r["resolution"]["keep"] for r in resolved] == ["packet", "database", "value"]
    assert resolved[0]["resolution"]["note"] == "ana re-read the figure"
    assert resolved[0]["resolution"]["by"] == "lead"

    # merging the packet again changes nothing; no conflict is recorded anew
    before = fingerprint(db_url)
    again = merge_packet(team, path)
    assert not again.changed and again.new_conflicts == 0
    assert fingerprint(db_url) == before

    # refusals: resolved already, unknown id, bad --keep; the database is unchanged
    for args, words, code in (
        ([str(ids[0]), "--keep", "database"], "already resolved by lead", 1),
        (["999999", "--keep", "packet"], "no packet conflict with id 999999", 1),
        ([str(ids[1]), "--keep", "maybe"], "database, packet, met", 2),
        ([str(ids[1]), "--keep", "level:x"], "level:N", 2),
    ):
        res = run("packet", "resolve", *args, "--db", db_url)
        assert res.exit_code == code and words in res.output, res.output
    assert fingerprint(db_url) == before


def test_a_judgment_changed_after_the_conflict_needs_force(team: Database, tmp_path: Path) -> None:
    _path, picked = conflicted(team, tmp_path)
    rows = list_conflicts(team)
    store = GradingStore(team)
    aid, crit = picked[0]
    store.save_judgment(aid, crit, JudgmentValue(met=True, rationale="newer, online"))
    with pytest.raises(ConflictError, match="changed after the conflict was recorded"):
        resolve_conflict(team, rows[0]["id"], "packet")
    assert store.load_item("k-ana", aid).judgments[crit].rationale == "newer, online"
    done = resolve_conflict(team, rows[0]["id"], "packet", force=True, by="lead")
    assert done.changed and done.previous["rationale"] == "newer, online"
    assert store.load_item("k-ana", aid).judgments[crit].rationale == "offline 2"
    with pytest.raises(ValidationError, match="one of database, packet, value"):
        resolve_conflict(team, rows[1]["id"], "mine")
    with pytest.raises(ValidationError, match="level"):
        resolve_conflict(team, rows[1]["id"], "value", value={"met": None, "level": 7})
    with pytest.raises(NotFoundError):
        resolve_conflict(team, 10**8, "packet")


def test_two_coordinators_resolving_at_once_decide_once(team: Database, tmp_path: Path) -> None:
    conflicted(team, tmp_path)
    cid = list_conflicts(team)[0]["id"]
    url = team.url
    outcomes: list[str] = []
    barrier = threading.Barrier(4)

    def resolver(keep: str) -> None:
        db = open_database(url)
        try:
            barrier.wait()
            resolve_conflict(db, cid, keep, by=keep)
            outcomes.append("ok")
        except ConflictError:
            outcomes.append("refused")
        finally:
            db.dispose()

    threads = [
        threading.Thread(target=resolver, args=(k,))
        for k in ("packet", "database", "packet", "database")
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(outcomes) == ["ok", "refused", "refused", "refused"]
    with team.read() as s:
        decisions = s.scalars(
            select(m.Revision).where(
                m.Revision.entity == RESOLUTION_ENTITY, m.Revision.entity_id == cid
            )
        ).all()
    assert len(decisions) == 1


# -- stale views --------------------------------------------------------------------------------
def test_two_windows_stale_writes_are_refused_not_lost(team: Database) -> None:
    """Window A loads an item; window B (same grader elsewhere) changes a verdict; A's write
    is refused with what is there now; A overwrites on purpose with the version it saw."""
    a, b = GradingStore(team), GradingStore(open_database(team.url))
    try:
        aid = a.queue("k-ben")[0].assignment_id
        c1, c2 = judgment_criteria(a, "k-ben", aid)[:2]
        seen = a.load_item("k-ben", aid)
        assert seen.versions == {}  # nothing judged yet
        v0 = seen.versions.get(c1, JudgmentVersion())
        saved = a.save_judgment(aid, c1, JudgmentValue(met=True), expected=v0)
        assert saved.revision == 1
        v1 = JudgmentVersion(saved.revision)
        # B, from an older view (revision 0), is refused; nothing written
        with pytest.raises(StaleJudgmentError) as info:
            b.save_judgment(aid, c1, JudgmentValue(met=False), expected=v0)
        exc = info.value
        assert exc.current == v1 and exc.current_value == JudgmentValue(met=True)
        assert exc.changed_by == "ui" and not exc.adjudicated
        assert "changed elsewhere" in str(exc)
        assert b.load_item("k-ben", aid).judgments[c1].met is True
        # the same value as the database holds is not a conflict
        assert not b.save_judgment(aid, c1, JudgmentValue(met=True), expected=v0).changed
        # overwrite on purpose: with the version now current
        over = b.save_judgment(aid, c1, JudgmentValue(met=False), expected=exc.current)
        assert over.revision == 2
        # a new judgment created elsewhere in between is stale too (0 → 1)
        b.save_judgment(aid, c2, JudgmentValue(met=True))
        with pytest.raises(StaleJudgmentError):
            a.save_judgment(aid, c2, JudgmentValue(met=False), expected=JudgmentVersion())
        # and without ``expected`` (scripts, the old behaviour) the last write wins
        assert a.save_judgment(aid, c2, JudgmentValue(met=False)).revision == 2
        assert [h["met"] for h in a.judgment_history(aid, c1)] == [True, False]
    finally:
        b.db.dispose()


def test_an_adjudication_since_the_view_was_loaded_is_reported(team: Database) -> None:
    store = GradingStore(team)
    aid = store.queue("k-ana")[0].assignment_id
    crit = judgment_criteria(store, "k-ana", aid)[0]
    store.save_judgment(aid, crit, JudgmentValue(met=True))
    seen = store.load_item("k-ana", aid).versions[crit]
    assert seen == JudgmentVersion(1, 0)
    with team.read() as s:
        response = s.execute(
            select(m.Response.external_id)
            .join(m.Assignment, m.Assignment.response_id == m.Response.id)
            .where(m.Assignment.id == aid)
        ).scalar_one()
    Repository(team).adjudicate(None, response, crit, met=False, adjudicator="lead")
    with pytest.raises(StaleJudgmentError, match="adjudicated") as info:
        store.save_judgment(aid, crit, JudgmentValue(met=False), expected=seen)
    assert info.value.adjudicated and info.value.current == JudgmentVersion(1, 1)
    assert store.load_item("k-ana", aid).versions[crit] == JudgmentVersion(1, 1)
    assert store.save_judgment(aid, crit, JudgmentValue(met=False), expected=info.value.current)


def test_concurrent_optimistic_writers_exactly_one_wins_per_version(team: Database) -> None:
    """Eight writers race from the same version: one write lands, seven are refused, and
    the history holds every landed value (no lost update on either backend)."""
    store = GradingStore(team)
    aid = store.queue("k-ben")[1].assignment_id
    crit = judgment_criteria(store, "k-ben", aid)[0]
    start = store.save_judgment(aid, crit, JudgmentValue(met=True, rationale="start"))
    expected = JudgmentVersion(start.revision)
    results: list[str] = []
    barrier = threading.Barrier(8)

    def writer(n: int) -> None:
        db = open_database(team.url)
        try:
            barrier.wait()
            GradingStore(db).save_judgment(
                aid, crit, JudgmentValue(met=n % 2 == 0, rationale=f"writer {n}"), expected=expected
            )
            results.append(f"ok {n}")
        except StaleJudgmentError:
            results.append("stale")
        finally:
            db.dispose()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    winners = [r for r in results if r.startswith("ok")]
    assert len(results) == 8 and len(winners) == 1 and results.count("stale") == 7
    now = store.load_item("k-ben", aid)
    assert now.judgments[crit].rationale == f"writer {winners[0].split()[1]}"
    assert now.versions[crit].revision == start.revision + 1


def test_task_review_conflicts_keep_database_or_packet(team: Database, tmp_path: Path) -> None:
    from gradercal.db.maintenance import check

    store = GradingStore(team)
    task = store.queue("k-ben")[0].task_id
    store.save_task_review("k-ben", None, task, {"real_research": 2}, "before")
    path = tmp_path / "ben.gcpkg"
    export_packet(team, "k-ben", path)
    store.save_task_review("k-ben", None, task, {"real_research": 3}, "online")
    with open_packet(path, workdir=tmp_path / "bw") as session:
        GradingStore(session.db).save_task_review(
            "k-ben", None, task, {"real_research": 5}, "offline"
        )
    report = merge_packet(team, path)
    assert [c.kind for c in report.conflicts] == ["task_review"]
    (row,) = list_conflicts(team)
    assert row["kind"] == "task_review" and row["current"]["comment"] == "online"
    with pytest.raises(ValidationError, match="database or packet"):
        resolve_conflict(team, row["id"], "value", value={"met": True})
    done = resolve_conflict(team, row["id"], "packet", note="ok")
    assert done.changed and done.previous == {"answers": {"real_research": 3}, "comment": "online"}
    review = store.load_review("k-ben", None, task).review
    assert dict(review.answers) == {"real_research": 5} and review.comment == "offline"
    comments = [h["comment"] for h in store.task_review_history("k-ben", None, task)]
    assert comments[:2] == ["before", "online"]
    assert not merge_packet(team, path).changed
    assert check(team, blobs=False).ok


@pytest.mark.parametrize("first", ["none", "earlier"])
def test_two_adjudicators_deciding_one_unit_at_once_decide_once(team: Database, first: str) -> None:
    """Two adjudicators open the same unit (not yet decided, or decided earlier) and
    decide it at the same moment, each on their own connection: one decision is stored,
    the other is refused showing it (as a grading conflict is), never silently replaced.
    Deciding again on the reloaded case replaces it on purpose, with history."""
    from gradercal.db.adjudication import AdjudicationStore

    store = GradingStore(team)
    aid = store.queue("k-ana")[0].assignment_id
    crit = judgment_criteria(store, "k-ana", aid)[0]
    with team.read() as s:
        response = s.execute(
            select(m.Response.external_id)
            .join(m.Assignment, m.Assignment.response_id == m.Response.id)
            .where(m.Assignment.id == aid)
        ).scalar_one()
    if first == "earlier":
        Repository(team).adjudicate(None, response, crit, met=True, adjudicator="chair")
    for rnd in range(5):
        cases = [AdjudicationStore(team).case(None, response, crit) for _ in range(2)]
        before = 0 if cases[0].current is None else cases[0].current.revision
        barrier = threading.Barrier(2)
        results: dict[str, Any] = {}

        def decide(
            who: str, verdict: str, case: Any, barrier: Any = barrier, results: Any = results
        ) -> None:
            db = open_database(team.url)
            try:
                barrier.wait()
                AdjudicationStore(db).record(case, verdict, f"{who} says so", who)
                results[who] = "ok"
            except ConflictError as exc:  # StaleAdjudicationError
                results[who] = exc
            finally:
                db.dispose()

        threads = [
            threading.Thread(target=decide, args=(f"adj-{n}-{rnd}", v, c))
            for n, (v, c) in enumerate(zip(("met", "not_met"), cases, strict=True))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        winners = [w for w, r in results.items() if r == "ok"]
        assert len(results) == 2 and len(winners) == 1, results
        loser = next(r for r in results.values() if r != "ok")
        stored = AdjudicationStore(team).case(None, response, crit)
        assert stored.current is not None and stored.current.adjudicator == winners[0]
        assert stored.current.revision == before + 1
        assert loser.current["adjudicator"] == winners[0]
        assert winners[0] in str(loser) and f"{winners[0]} says so" in str(loser)
    # deciding again on the reloaded case replaces the decision, keeping the earlier ones
    fresh = AdjudicationStore(team).case(None, response, crit)
    done = AdjudicationStore(team).record(fresh, "met", "on purpose", "adj-last")
    assert done.current is not None and done.current.adjudicator == "adj-last"
    assert len(done.history) == done.current.revision - 1
