"""A verdict counts under the wording the grader saw (issue #30): the grading store
refuses a save or a submission made under a task version older than the criterion's
wording (``seen_version``), a verdict given again under the new wording is confirmed,
and a packet merge and the judge confirm by the same rule — SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from gradercal.db import models as m
from gradercal.db.grading import GradingStore, JudgmentValue, RevisedSinceError
from gradercal.db.packets import export_packet, merge_packet, open_packet
from gradercal.db.repo import Repository
from gradercal.db.revisions import RevisionStore
from gradercal.db.session import Database, open_database
from gradercal.formats import read_path
from tests.db.test_packets import coordinator, current_judgments, grade_everything

__all__ = ["coordinator"]  # fixture

GRADER = "zoe"


@pytest.fixture
def db(db_url: str, mini: Path) -> Iterator[Database]:
    database = open_database(db_url)
    Repository(database).import_data(read_path(mini))
    store = GradingStore(database)
    store.create_grader(GRADER)
    store.ensure_queue(GRADER, "mini")
    try:
        yield database
    finally:
        database.dispose()


def first_m1(store: GradingStore) -> int:
    return next(q.assignment_id for q in store.queue(GRADER) if q.task_id == "M1")


def stored(db: Database, aid: int, crit: str) -> Any:
    """(met, task_version, revision) of GRADER's judgment, None when there is none."""
    with db.read() as s:
        a = s.get(m.Assignment, aid)
        assert a is not None
        return s.execute(
            select(m.Judgment.met, m.Judgment.task_version, m.Judgment.revision)
            .join(m.Criterion, m.Criterion.id == m.Judgment.criterion_id)
            .where(
                m.Judgment.grader_id == a.grader_id,
                m.Judgment.response_id == a.response_id,
                m.Criterion.external_id == crit,
            )
        ).first()


def history_rows(db: Database) -> int:
    with db.read() as s:
        return int(
            s.scalar(
                select(func.count()).select_from(m.Revision).where(m.Revision.entity == "judgment")
            )
            or 0
        )


def revise_c1(url: str, text: str = "Names the premature stop codon") -> None:
    """The coordinator, in another client (its own connection pool), rewords M1/c1."""
    other = open_database(url)
    try:
        RevisionStore(other).revise_criterion(
            None, "M1", "c1", text=text, reason="split", actor="coord"
        )
    finally:
        other.dispose()


def answer_all(store: GradingStore, aid: int, seen: int) -> None:
    item = store.load_item(GRADER, aid)
    for c in item.task.criteria:
        if c.auto is None:
            value = JudgmentValue(level=2) if c.levels == 3 else JudgmentValue(met=True)
            store.save_judgment(aid, c.id, value, seen_version=seen)


def test_a_save_under_the_old_wording_is_refused_then_confirmed(db: Database, db_url: str) -> None:
    store = GradingStore(db)
    aid = first_m1(store)
    item = store.load_item(GRADER, aid)
    assert item.task_version == 1
    store.save_judgment(aid, "c1", JudgmentValue(met=True), seen_version=1)
    revise_c1(db_url)  # between the load and the next save, by someone else
    before = history_rows(db)
    with pytest.raises(RevisedSinceError) as caught:
        store.save_judgment(aid, "c1", JudgmentValue(met=True), seen_version=1)
    err = caught.value
    assert (err.criterion_ids, err.seen_version, err.task_version) == (("c1",), 1, 2)
    assert "criterion c1 was revised since you opened this response (version 1 → 2)" in str(err)
    assert "nothing was saved" in str(err)
    with pytest.raises(RevisedSinceError):  # a change is refused the same way
        store.save_judgment(aid, "c1", JudgmentValue(met=False), seen_version=1)
    assert tuple(stored(db, aid, "c1")) == (True, 1, 1)  # nothing written: still stale
    assert history_rows(db) == before

    reloaded = store.load_item(GRADER, aid)
    assert reloaded.task_version == 2 and reloaded.stale == {"c1": 1}
    saved = store.save_judgment(aid, "c1", JudgmentValue(met=True), seen_version=2)
    assert saved.changed and saved.task_version == 2  # the same verdict: confirmed
    assert tuple(stored(db, aid, "c1")) == (True, 2, 2)
    assert history_rows(db) == before + 1  # the version it was first given under, kept
    assert store.load_item(GRADER, aid).stale == {}
    again = store.save_judgment(aid, "c1", JudgmentValue(met=True), seen_version=2)
    assert not again.changed and history_rows(db) == before + 1


def test_a_first_verdict_under_the_old_wording_is_refused(db: Database, db_url: str) -> None:
    store = GradingStore(db)
    aid = first_m1(store)
    store.load_item(GRADER, aid)
    revise_c1(db_url)
    with pytest.raises(RevisedSinceError):
        store.save_judgment(aid, "c1", JudgmentValue(met=True), seen_version=1)
    assert stored(db, aid, "c1") is None


def test_other_criteria_and_points_only_changes_save_and_say_the_version(
    db: Database, db_url: str
) -> None:
    store = GradingStore(db)
    aid = first_m1(store)
    store.load_item(GRADER, aid)
    revise_c1(db_url)
    # c2's wording is as the grader saw it: saved, and the window learns of version 2
    saved = store.save_judgment(aid, "c2", JudgmentValue(met=True), seen_version=1)
    assert saved.changed and saved.task_version == 2
    assert tuple(stored(db, aid, "c2")) == (True, 2, 1)
    other = open_database(db_url)
    try:
        RevisionStore(other).revise_criterion(
            None, "M1", "c2", points=5, reason="weight", actor="coord"
        )
    finally:
        other.dispose()
    saved = store.save_judgment(aid, "c2", JudgmentValue(met=False), seen_version=2)
    assert saved.changed and saved.task_version == 3  # same wording: a points change only


def test_submit_under_the_old_wording_is_refused(db: Database, db_url: str) -> None:
    store = GradingStore(db)
    aid = first_m1(store)
    answer_all(store, aid, 1)
    revise_c1(db_url)
    with pytest.raises(RevisedSinceError) as caught:
        store.submit(aid, seen_version=1)
    assert caught.value.criterion_ids == ("c1",)
    assert "the response was not submitted" in str(caught.value)
    assert store.queue_item(aid).status == "in_progress"
    store.save_judgment(aid, "c1", JudgmentValue(met=True), seen_version=2)  # confirmed
    assert store.submit(aid, seen_version=2).status == "submitted"


def test_a_revision_racing_saves_never_leaves_a_verdict_current_on_the_old_wording(
    db: Database, db_url: str
) -> None:
    """Saves made under version 1 while the coordinator revises: each is stored before
    the revision (hence stale) or refused — never stored as current."""
    store = GradingStore(db)
    aid = first_m1(store)
    store.load_item(GRADER, aid)
    done = threading.Event()
    outcomes: list[str] = []
    errors: list[BaseException] = []

    def grader() -> None:
        met = True
        try:
            while not done.is_set() or not outcomes.count("refused"):
                try:
                    store.save_judgment(aid, "c1", JudgmentValue(met=met), seen_version=1)
                    outcomes.append("saved")
                except RevisedSinceError:
                    outcomes.append("refused")
                    if done.is_set():
                        return
                met = not met
                done.wait(0.002)  # let the coordinator's client in (SQLite's one writer)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    thread = threading.Thread(target=grader)
    thread.start()
    try:
        while "saved" not in outcomes and thread.is_alive():
            threading.Event().wait(0.01)
        revise_c1(db_url)
    finally:
        done.set()
        thread.join(60)
    assert not errors and not thread.is_alive()
    assert "saved" in outcomes and outcomes[-1] == "refused"
    _met, version, _rev = stored(db, aid, "c1")
    assert version == 1  # given under the wording the grader saw: stale
    assert store.load_item(GRADER, aid).stale == {"c1": 1}


def test_an_offline_confirmation_is_counted_by_the_merge(
    coordinator: Database, tmp_path: Path
) -> None:
    db = coordinator
    first = tmp_path / "ben-1.gcpkg"
    export_packet(db, "p-ben", first)
    with open_packet(first, workdir=tmp_path / "w1") as session:
        entered = grade_everything(session, limit=1)
    merge_packet(db, first)
    (aid, crit), met = next(iter(entered.items()))
    task_id = GradingStore(db).queue_item(aid).task_id
    RevisionStore(db).revise_criterion(
        None, task_id, crit, text="A reworded criterion", reason="split", actor="coord"
    )
    second = tmp_path / "ben-2.gcpkg"
    export_packet(db, "p-ben", second)
    with open_packet(second, workdir=tmp_path / "w2") as session:
        store = GradingStore(session.db)
        item = store.load_item(session.grader, aid)
        value = item.judgments[crit]
        saved = store.save_judgment(aid, crit, value, seen_version=item.task_version)
        assert saved.changed  # confirmed offline: the same value under version 2
    report = merge_packet(db, second)
    assert report.judgments_confirmed == 1 and report.judgments_updated == 0
    assert report.changed
    row = current_judgments(db, "p-ben")[(aid, crit)]
    assert row.task_version == 2 and row.met is met
    again = merge_packet(db, second)
    assert again.judgments_confirmed == 0 and not again.changed


def test_the_judge_confirms_a_stale_verdict_given_again(db: Database, db_url: str) -> None:
    from gradercal.db.judging import JudgeStore
    from gradercal.judge import DEFAULT_PROMPT
    from gradercal.judge.runner import Verdict, WorkItem

    judges = JudgeStore(db)
    info = judges.ensure_judge("j", model="local", prompt=DEFAULT_PROMPT, parameters={})
    with db.read() as s:
        rid = s.scalar(select(m.Response.id).where(m.Response.external_id == "M1-a"))
        cid = s.scalar(
            select(m.Criterion.id)
            .join(m.Task, m.Task.id == m.Criterion.task_id)
            .where(m.Task.external_id == "M1", m.Criterion.external_id == "c1")
        )
    item = WorkItem((rid, cid), "M1", "M1-a", "c1", "text", "Notes the premature stop codon")

    def judge_once() -> Any:
        run_id = judges.start_run(info, model="local", base_url=None, parameters={})
        with judges.writer(grader_id=info.grader_id, run_id=run_id) as writer:
            provenance = {"samples": [{"request_hash": "h1"}]}
            writer.submit(Verdict(item, "ok", True, 0.9, 0.9, "because", provenance))
        with db.read() as s:
            return s.execute(
                select(m.Judgment.task_version, m.Judgment.revision).where(
                    m.Judgment.grader_id == info.grader_id,
                    m.Judgment.response_id == rid,
                    m.Judgment.criterion_id == cid,
                )
            ).one()

    assert tuple(judge_once()) == (1, 1)
    revise_c1(db_url)
    assert tuple(judge_once()) == (2, 2)  # the same verdict again: confirmed, kept in history
    other = open_database(db_url)
    try:
        RevisionStore(other).revise_criterion(
            None, "M1", "c1", points=4, reason="weight", actor="coord"
        )
    finally:
        other.dispose()
    assert tuple(judge_once()) == (2, 2)  # current already: nothing to write


def test_a_judge_verdict_on_the_old_wording_stays_stale(db: Database, db_url: str) -> None:
    """A run reads its criteria when it starts; a revision during the run leaves the
    verdicts it writes afterwards given under the old version: stale, judged again."""
    from gradercal.db.judging import JudgeStore, Scope
    from gradercal.judge import DEFAULT_PROMPT
    from gradercal.judge.runner import Verdict

    judges = JudgeStore(db)
    info = judges.ensure_judge("j", model="local", prompt=DEFAULT_PROMPT, parameters={})
    items = judges.work_items(None, info, Scope(), DEFAULT_PROMPT)
    item = next(i for i in items if (i.response_id, i.criterion_id) == ("M1-a", "c1"))
    assert item.criterion_text == "Notes the premature stop codon"
    run_id = judges.start_run(info, model="local", base_url=None, parameters={})
    with judges.writer(grader_id=info.grader_id, run_id=run_id) as writer:
        revise_c1(db_url)  # while the run is going
        writer.submit(Verdict(item, "ok", True, 0.9, 0.9, "r", {"samples": []}))
    rid, cid = item.ref  # type: ignore[misc]
    with db.read() as s:
        version = s.scalar(
            select(m.Judgment.task_version).where(
                m.Judgment.grader_id == info.grader_id,
                m.Judgment.response_id == rid,
                m.Judgment.criterion_id == cid,
            )
        )
    assert version == 1
    again = judges.work_items(None, info, Scope.parse("stale"), DEFAULT_PROMPT)
    assert ("M1-a", "c1") in {(i.response_id, i.criterion_id) for i in again}


def test_a_packet_verdict_kept_in_a_conflict_keeps_its_version(
    coordinator: Database, tmp_path: Path
) -> None:
    """Exported under version 1, changed offline; online the grader gave the revised
    criterion again (version 2), so the merge records a conflict. Keeping the packet's value keeps the version it was
    given under: stale, not current."""
    from gradercal.db.packets import list_conflicts, resolve_conflict

    db = coordinator
    store = GradingStore(db)
    aid = store.queue("p-ben")[0].assignment_id
    item = store.load_item("p-ben", aid)
    crit = next(c.id for c in item.task.criteria if c.kind.value == "judgment")
    store.save_judgment(aid, crit, JudgmentValue(met=True), seen_version=1)
    path = tmp_path / "ben.gcpkg"
    export_packet(db, "p-ben", path)
    RevisionStore(db).revise_criterion(
        None, item.task.id, crit, text="Reworded", reason="r", actor="coord"
    )
    online = JudgmentValue(met=True, rationale="online")
    store.save_judgment(aid, crit, online, seen_version=2)  # given again under version 2
    with open_packet(path, workdir=tmp_path / "w") as session:
        GradingStore(session.db).save_judgment(aid, crit, JudgmentValue(met=False))
    report = merge_packet(db, path)
    assert len(report.conflicts) == 1
    assert current_judgments(db, "p-ben")[(aid, crit)].task_version == 2
    (conflict,) = list_conflicts(db)
    resolve_conflict(db, conflict["id"], "packet", by="lead")
    row = current_judgments(db, "p-ben")[(aid, crit)]
    assert row.met is False and row.task_version == 1
    assert crit in GradingStore(db).load_item("p-ben", aid).stale
