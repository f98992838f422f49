"""GradingStore on SQLite and PostgreSQL: queues, blinding, judgments with history, reviews."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from gradercal.db import models as m
from gradercal.db.grading import (
    REVIEW_DIMENSIONS,
    GradingStore,
    JudgmentValue,
    blinding_code,
)
from gradercal.db.session import open_database
from gradercal.errors import ConflictError, NotFoundError, ValidationError
from tests.conftest import DatabaseTemplates
from tests.support.gui import (
    GRADER,
    JUDGE,
    JUDGE_RATIONALE,
    MODELS,
    OTHER_GRADER,
    OTHER_RATIONALE,
    import_folder,
    write_gui_benchmark,
)

BENCH = "gui-bench"


@pytest.fixture
def store(db_url: str, tmp_path: Path, db_templates: DatabaseTemplates) -> Iterator[GradingStore]:
    """The GUI benchmark imported (built once per backend, copied per test)."""
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


def _rows(store: GradingStore, model: type[m.Base]) -> int:
    with store.db.read() as s:
        return int(s.scalar(select(func.count()).select_from(model)) or 0)


def test_graders_lists_people_only_and_creates_new_ones(store: GradingStore) -> None:
    assert [g.name for g in store.graders()] == [OTHER_GRADER]
    ana = store.create_grader(f"  {GRADER} ")
    assert ana.name == GRADER and ana.kind == "human"
    assert store.create_grader(GRADER).id == ana.id  # same person, not a duplicate
    assert [g.name for g in store.graders()] == [GRADER, OTHER_GRADER]
    with pytest.raises(ConflictError, match="judge"):
        store.create_grader(JUDGE)
    with pytest.raises(ValidationError):
        store.create_grader("   ")
    with pytest.raises(NotFoundError):
        store.grader(JUDGE)


def test_queue_is_made_once_grouped_by_task_and_stable_per_grader(
    store: GradingStore, db_url: str, tmp_path: Path
) -> None:
    store.create_grader(GRADER)
    queue = store.ensure_queue(GRADER, BENCH)
    assert len(queue) == 9
    assert [q.position for q in queue] == list(range(9))
    # responses of a task come one after another, coded A, B, C within the task
    tasks = [q.task_id for q in queue]
    assert sorted(set(tasks)) == ["P1", "P2", "P3"]
    assert all(tasks[i] == tasks[i - i % 3] for i in range(9))
    assert [q.code for q in queue] == ["Response A", "Response B", "Response C"] * 3
    assert all(q.status == "pending" and q.n_answered == 0 for q in queue)
    # a second call creates nothing and returns the same queue
    assert store.ensure_queue(GRADER, BENCH) == queue
    assert _rows(store, m.Assignment) == 9

    # the same grader gets the same order in another database
    other_url = str(tmp_path / "other.sqlite")
    import_folder(other_url, write_gui_benchmark(tmp_path / "bench2"))
    other = GradingStore(open_database(other_url))
    try:
        other.create_grader(GRADER)
        again = other.ensure_queue(GRADER, BENCH)
        same = [(q.task_id, q.code) for q in again] == [(q.task_id, q.code) for q in queue]
        assert same
        first_text = [other.load_item(GRADER, q.assignment_id).response_text for q in again]
        assert first_text == [store.load_item(GRADER, q.assignment_id).response_text for q in queue]
    finally:
        other.db.dispose()

    # different graders see different orders (fixed seeds; checked once by hand)
    orders = set()
    for name in ("g1", "g2", "g3", "g4"):
        store.create_grader(name)
        items = store.ensure_queue(name, BENCH)
        orders.add(tuple(store.load_item(name, q.assignment_id).response_text for q in items))
    assert len(orders) > 1


def test_an_existing_queue_is_kept_as_it_is(store: GradingStore) -> None:
    """A grader with assignments (e.g. from an assignment design) gets no others."""
    store.create_grader(GRADER)
    with store.db.write() as s:
        gid = s.scalar(select(m.Grader.id).where(m.Grader.name == GRADER))
        p3 = s.scalars(
            select(m.Response.id)
            .join(m.Task, m.Task.id == m.Response.task_id)
            .where(m.Task.external_id == "P3")
            .order_by(m.Response.id)
        ).all()
        for pos, rid in enumerate(reversed(p3)):
            s.add(m.Assignment(grader_id=gid, response_id=rid, position=pos, calibration=True))
    queue = store.ensure_queue(GRADER, BENCH)
    assert [(q.task_id, q.code) for q in queue] == [
        ("P3", "Response A"),
        ("P3", "Response B"),
        ("P3", "Response C"),
    ]
    # a response added later does not change the queue, nor the codes
    with store.db.write() as s:
        task = s.scalar(select(m.Task).where(m.Task.external_id == "P3"))
        assert task is not None
        s.add(
            m.Response(
                benchmark_id=task.benchmark_id,
                task_id=task.id,
                external_id="P3-late",
                model="latecomer",
                text="late answer",
                content_hash="x",
            )
        )
    assert store.ensure_queue(GRADER, BENCH) == queue
    assert _rows(store, m.Assignment) == 3


def test_loaded_item_holds_only_own_judgments_and_no_model(store: GradingStore) -> None:
    store.create_grader(GRADER)
    q = store.ensure_queue(GRADER, BENCH)[0]
    item = store.load_item(GRADER, q.assignment_id)
    assert item.judgments == {}  # ben's and the judge's verdicts are not loaded
    text = repr(item)
    for secret in (*MODELS, JUDGE, OTHER_GRADER, JUDGE_RATIONALE, OTHER_RATIONALE):
        assert secret not in text
    assert item.item.code == "Response A"
    ben = store.ensure_queue(OTHER_GRADER, BENCH)[0]
    ben_item = store.load_item(OTHER_GRADER, ben.assignment_id)
    assert {v.rationale for v in ben_item.judgments.values()} == {OTHER_RATIONALE}
    with pytest.raises(NotFoundError):  # someone else's queue item
        store.load_item(GRADER, ben.assignment_id)


def test_save_judgment_commits_and_keeps_history(store: GradingStore, db_url: str) -> None:
    store.create_grader(GRADER)
    q = next(i for i in store.ensure_queue(GRADER, BENCH) if i.task_id == "P1")
    first = store.save_judgment(q.assignment_id, "c1", JudgmentValue(met=True))
    assert (first.revision, first.changed) == (1, True)
    # committed: a separate connection sees the row at once
    other = open_database(db_url)
    try:
        with other.read() as s:
            row = s.scalar(select(m.Judgment).where(m.Judgment.id == first.judgment_id))
            assert row is not None
            assert (row.met, row.source, row.revision) == (True, "ui", 1)
    finally:
        other.dispose()
    same = store.save_judgment(q.assignment_id, "c1", JudgmentValue(met=True, rationale="  "))
    assert (same.revision, same.changed) == (1, False)  # blank rationale = no rationale
    second = store.save_judgment(
        q.assignment_id, "c1", JudgmentValue(met=False, rationale="misses the batch effect")
    )
    assert (second.revision, second.changed) == (2, True)
    history = store.judgment_history(q.assignment_id, "c1")
    assert [h["revision"] for h in history] == [1, 2]
    assert history[0]["met"] is True and history[0]["source"] == "ui"
    assert history[1] == {
        "revision": 2,
        "met": False,
        "level": None,
        "rationale": "misses the batch effect",
        "unclear": False,
        "unclear_note": None,
        "source": "ui",
    }
    with store.db.read() as s:
        rev = s.scalars(select(m.Revision).where(m.Revision.entity == "judgment")).one()
        assert (rev.entity_id, rev.revision, rev.source, rev.actor) == (
            first.judgment_id,
            1,
            "ui",
            GRADER,
        )
    assert store.queue_item(q.assignment_id).status == "in_progress"


def test_levels_auto_criteria_and_bad_values(store: GradingStore) -> None:
    store.create_grader(GRADER)
    queue = store.ensure_queue(GRADER, BENCH)
    p1 = next(q for q in queue if q.task_id == "P1")
    p2 = next(q for q in queue if q.task_id == "P2")
    met = store.save_judgment(p1.assignment_id, "c4", JudgmentValue(met=True))
    assert (met.value.met, met.value.level) == (True, 2)  # 3-level criterion: top level
    partial = store.save_judgment(p1.assignment_id, "c4", JudgmentValue(level=1))
    assert (partial.value.met, partial.value.level) == (False, 1)
    binary = store.save_judgment(p1.assignment_id, "c1", JudgmentValue(level=1))
    assert (binary.value.met, binary.value.level) == (True, None)
    with pytest.raises(ValidationError, match="level"):
        store.save_judgment(p1.assignment_id, "c4", JudgmentValue(level=3))
    with pytest.raises(ValidationError, match="disagrees"):
        store.save_judgment(p1.assignment_id, "c4", JudgmentValue(met=True, level=0))
    with pytest.raises(ValidationError, match="automatically"):
        store.save_judgment(p2.assignment_id, "auto1", JudgmentValue(met=True))
    with pytest.raises(NotFoundError):
        store.save_judgment(p1.assignment_id, "nope", JudgmentValue(met=True))


def test_submit_skip_reopen_and_time(store: GradingStore) -> None:
    store.create_grader(GRADER)
    p2 = next(q for q in store.ensure_queue(GRADER, BENCH) if q.task_id == "P2")
    with pytest.raises(ValidationError) as info:
        store.submit(p2.assignment_id)
    assert [p.field for p in info.value.problems] == ["c1"]  # auto1 needs no verdict
    assert store.queue_item(p2.assignment_id).status == "pending"
    store.save_judgment(p2.assignment_id, "c1", JudgmentValue(met=True))
    done = store.submit(p2.assignment_id)
    assert done.status == "submitted" and done.done and done.n_answered == 1
    # clearing a verdict of a submitted response puts it back in progress
    store.save_judgment(p2.assignment_id, "c1", JudgmentValue())
    assert store.queue_item(p2.assignment_id).status == "in_progress"
    assert store.missing_criteria(p2.assignment_id) == ["c1"]
    with pytest.raises(ValidationError, match="reason"):
        store.skip(p2.assignment_id, "  ")
    skipped = store.skip(p2.assignment_id, "Outside my expertise")
    assert (skipped.status, skipped.skip_reason) == ("skipped", "Outside my expertise")
    assert store.reopen(p2.assignment_id).status == "in_progress"
    assert store.add_time(p2.assignment_id, 12.5) == 12.5
    assert store.add_time(p2.assignment_id, 30) == 42.5
    assert store.add_time(p2.assignment_id, 0) == 42.5
    progress = store.progress(GRADER, BENCH)
    assert (progress.total, progress.in_progress, progress.done) == (9, 1, 0)
    assert progress.time_spent_s == 42.5


def test_reopening_records_the_state_it_leaves(store: GradingStore) -> None:
    store.create_grader(GRADER)
    p2 = next(q for q in store.ensure_queue(GRADER, BENCH) if q.task_id == "P2")
    aid = p2.assignment_id
    store.reopen(aid)  # not done yet: nothing to record
    assert store.reopen_history(aid) == []
    store.save_judgment(aid, "c1", JudgmentValue(met=True))
    store.submit(aid)
    assert store.reopen(aid).status == "in_progress"
    store.skip(aid, "Outside my expertise")
    store.reopen(aid)
    history = store.reopen_history(aid)
    assert [(h["revision"], h["status"], h["actor"]) for h in history] == [
        (1, "submitted", GRADER),
        (2, "skipped", GRADER),
    ]
    assert history[0]["submitted_at"] is not None and history[0]["skip_reason"] is None
    assert history[1]["skip_reason"] == "Outside my expertise"
    with store.db.read() as s:  # kept in the history table, beside the judgments' history
        rows = s.scalars(
            select(m.Revision).where(
                m.Revision.entity == "assignment_reopen", m.Revision.entity_id == aid
            )
        ).all()
        assert [r.source for r in rows] == ["ui", "ui"]


def test_resume_point_is_the_last_item_worked_on(store: GradingStore) -> None:
    store.create_grader(GRADER)
    queue = store.ensure_queue(GRADER, BENCH)
    first = store.resume_point(GRADER, BENCH)
    assert first is not None and first.assignment_id == queue[0].assignment_id
    store.save_judgment(queue[4].assignment_id, "c1", JudgmentValue(met=True))
    store.save_judgment(queue[2].assignment_id, "c1", JudgmentValue(met=True))
    point = store.resume_point(GRADER, BENCH)
    assert point is not None and point.assignment_id == queue[2].assignment_id
    for q in queue:
        store.skip(q.assignment_id, "test")
    assert store.resume_point(GRADER, BENCH) is None


def test_task_reviews_are_saved_with_history(store: GradingStore) -> None:
    store.create_grader(GRADER)
    tasks = store.review_tasks(GRADER, BENCH)
    assert [t.task_id for t in tasks] == ["P1", "P2", "P3"]
    assert all(t.n_answered == 0 for t in tasks)
    keys = [d.key for d in REVIEW_DIMENSIONS]
    first = store.save_task_review(GRADER, BENCH, "P2", {keys[0]: 4, keys[1]: None}, " ")
    assert (dict(first.answers), first.comment, first.revision) == ({keys[0]: 4}, None, 1)
    same = store.save_task_review(GRADER, BENCH, "P2", {keys[0]: 4}, None)
    assert same.revision == 1
    second = store.save_task_review(
        GRADER, BENCH, "P2", dict.fromkeys(keys, 5), "rubric c1 is vague"
    )
    assert second.revision == 2 and second.n_answered == 4
    loaded = store.load_review(GRADER, BENCH, "P2")
    assert loaded.review == second and (loaded.position, loaded.total) == (1, 3)
    history = store.task_review_history(GRADER, BENCH, "P2")
    assert [(h["revision"], h["answers"], h["comment"], h["actor"]) for h in history] == [
        (1, {keys[0]: 4}, None, GRADER)
    ]
    assert store.review_tasks(GRADER, BENCH)[1].n_answered == 4
    # another reviewer's answers are separate
    assert store.load_review(OTHER_GRADER, BENCH, "P2").review.n_answered == 0
    with pytest.raises(ValidationError):
        store.save_task_review(GRADER, BENCH, "P2", {keys[0]: 6}, None)
    with pytest.raises(ValidationError):
        store.save_task_review(GRADER, BENCH, "P2", {"made_up": 3}, None)
    with pytest.raises(NotFoundError):
        store.save_task_review(GRADER, BENCH, "P9", {keys[0]: 3}, None)


def test_blinding_codes() -> None:
    assert [blinding_code(i) for i in (0, 1, 25, 26, 27, 701, 702)] == [
        "Response A",
        "Response B",
        "Response Z",
        "Response AA",
        "Response AB",
        "Response ZZ",
        "Response AAA",
    ]


def test_blobs_are_read_for_viewers(store: GradingStore, tmp_path: Path) -> None:
    store.create_grader(GRADER)
    q = next(i for i in store.ensure_queue(GRADER, BENCH) if i.task_id == "P1")
    item = store.load_item(GRADER, q.assignment_id)
    pdf = item.task.artifacts[0]
    assert pdf.sha256 is not None
    data = store.read_blob(pdf.sha256)
    assert data.startswith(b"%PDF") and len(data) == pdf.size
    assert json.loads(json.dumps([a.title for a in item.task.artifacts])) == [
        "Flow report",
        "Notes",
    ]


def test_check_reports_values_their_history_does_not_explain(store: GradingStore) -> None:
    """A judgment changed behind the app's back (revision moved without history, or a
    value rewritten in place under an old revision) is reported by ``check``."""
    from sqlalchemy import text

    from gradercal.db.maintenance import check

    store.create_grader(GRADER)
    aid = store.ensure_queue(GRADER, BENCH)[0].assignment_id
    jid = store.save_judgment(aid, "c1", JudgmentValue(met=True)).judgment_id
    store.save_judgment(aid, "c1", JudgmentValue(met=False))
    assert check(store.db, blobs=False).ok
    with store.db.engine.begin() as conn:  # a value bumped with no history row
        conn.execute(text("UPDATE judgment SET revision = 5 WHERE id = :j"), {"j": jid})
    problems = {p.check for p in check(store.db, blobs=False).problems}
    assert problems == {"judgment.history_gaps"}
    with store.db.engine.begin() as conn:  # rolled back below a kept revision, duplicated
        conn.execute(text("UPDATE judgment SET revision = 1 WHERE id = :j"), {"j": jid})
        conn.execute(
            text(
                "INSERT INTO revision (entity, entity_id, revision, data, source, changed_at) "
                "SELECT entity, entity_id, revision, data, source, changed_at FROM revision "
                "WHERE entity = 'judgment' AND entity_id = :j"
            ),
            {"j": jid},
        )
    problems = {p.check for p in check(store.db, blobs=False).problems}
    assert {"judgment.history_ahead", "revision.repeated"} <= problems


def test_check_reports_verdicts_gone_from_submitted_items_without_a_record(
    store: GradingStore,
) -> None:
    """A verdict deleted from a submitted item leaves no history row of its own when the
    deletion went unrecorded (a temporary ``revision`` table in team mode, before #30, or
    a plain ``DELETE`` on SQLite): ``check`` reports it; a deletion recorded as
    ``judgment_deleted`` (the team trigger's row) is explained; a verdict given under a
    task version the task never had is reported too."""
    from sqlalchemy import text

    from gradercal.db.maintenance import check

    store.create_grader(GRADER)
    item = next(i for i in store.ensure_queue(GRADER, BENCH) if i.task_id == "P1")
    loaded = store.load_item(GRADER, item.assignment_id)
    for c in loaded.task.criteria:
        value = JudgmentValue(level=2) if c.levels == 3 else JudgmentValue(met=True)
        store.save_judgment(item.assignment_id, c.id, value)
    store.submit(item.assignment_id)
    assert check(store.db, blobs=False).ok
    with store.db.engine.begin() as conn:
        rows = conn.execute(
            text(
                "SELECT j.id, j.grader_id, j.response_id, j.criterion_id FROM judgment j "
                "JOIN assignment a ON a.grader_id = j.grader_id "
                "AND a.response_id = j.response_id WHERE a.id = :a ORDER BY j.id"
            ),
            {"a": item.assignment_id},
        ).all()
        conn.execute(
            text("DELETE FROM judgment WHERE id IN (:x, :y)"), {"x": rows[0].id, "y": rows[1].id}
        )
    report = check(store.db, blobs=False)
    assert [(p.check, p.count) for p in report.problems] == [("assignment.verdicts_missing", 2)]
    with store.db.engine.begin() as conn:  # one of the two deletions recorded
        r = rows[0]
        conn.execute(
            text(
                "INSERT INTO revision (entity, entity_id, revision, data, actor, source, "
                "changed_at) VALUES ('judgment_deleted', :j, 1, :d, 'lead', 'sql-delete', "
                "CURRENT_TIMESTAMP)"
            ),
            {
                "j": r.id,
                "d": f'{{"grader_id": {r.grader_id}, "response_id": {r.response_id}, '
                f'"criterion_id": {r.criterion_id}, "met": true}}',
            },
        )
        conn.execute(text("UPDATE judgment SET task_version = 9 WHERE id = :j"), {"j": rows[2].id})
    report = check(store.db, blobs=False)
    assert [(p.check, p.count) for p in report.problems] == [
        ("judgment.task_version", 1),
        ("assignment.verdicts_missing", 1),
    ]
