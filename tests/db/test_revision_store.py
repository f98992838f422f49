"""Rubric and task revisions stored (issue #16): versions, history, stale verdicts,
requeued items, version-filtered frames — on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from gradercal.db import models as m
from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.maintenance import check
from gradercal.db.revisions import RevisionStore, task_content, task_from_content
from gradercal.errors import NotFoundError, ValidationError
from gradercal.formats import read_path


@pytest.fixture
def stored(repo: Any, mini: Path) -> Any:
    repo.import_data(read_path(mini))
    return repo


def _count(repo: Any, table: Any, *where: Any) -> int:
    with repo.db.read() as s:
        return int(s.scalar(select(func.count()).select_from(table).where(*where)) or 0)


def test_content_round_trips(stored: Any) -> None:
    for task in stored.load_tasks():
        assert task_from_content(task_content(task)) == task


def test_a_text_change_makes_the_criterion_verdicts_stale_and_keeps_them(stored: Any) -> None:
    store = RevisionStore(stored.db)
    before = stored.load_frames(version="all").judgments
    on_c1 = before[(before.criterion_id == "c1") & before.response_id.str.startswith("M1")]
    assert len(on_c1) > 0
    report = store.revise_criterion(
        None,
        "M1",
        "c1",
        text="Names the premature stop codon and its position",
        reason="graders split on 'notes'",
        actor="coord",
    )
    assert (report.version_before, report.version, report.kind) == (1, 2, "verdict")
    assert report.stale_criteria == ("c1",)
    assert report.stale_judgments == len(on_c1)
    # never deleted: every verdict is still there with "all"
    assert len(stored.load_frames(version="all").judgments) == len(before)
    current = stored.load_frames().judgments
    m1 = current.response_id.str.startswith("M1")
    assert not ((current.criterion_id == "c1") & m1).any()
    assert len(current) == len(before) - len(on_c1)
    # version 1 = the verdicts current when the task was at version 1: all of them
    assert len(stored.load_frames(version=1).judgments) == len(before)
    # the two frame paths agree
    for version in ("current", "all", 1, 2):
        fast = stored.load_frames(version=version)
        rows = stored.load_frames_by_rows(version=version)
        assert fast.judgments.equals(rows.judgments), version
        assert fast.adjudications.equals(rows.adjudications), version
    # history: version 1 whole, version 2 with its reason and change
    hist = store.history(None, "M1")
    assert [h.version for h in hist] == [1, 2]
    assert hist[1].reason == "graders split on 'notes'" and hist[1].actor == "coord"
    (crit,) = hist[1].changes["criteria"]
    assert crit["id"] == "c1" and crit["kind"] == "verdict"
    assert crit["fields"][0]["before"] == "Notes the premature stop codon"
    assert store.task_at(None, "M1", 1).criterion("c1").text == "Notes the premature stop codon"
    assert stored.load_tasks()[0].criterion("c1").text.startswith("Names the premature")


def test_a_points_change_rescales_without_regrading(stored: Any) -> None:
    store = RevisionStore(stored.db)
    n = len(stored.load_frames().judgments)
    report = store.revise_criterion(None, "M1", "c2", points=5, reason="weight", actor="coord")
    assert report.kind == "score" and report.stale_judgments == 0
    assert report.rescored_criteria == ("c2",) and report.requeued == ()
    frames = stored.load_frames()
    assert len(frames.judgments) == n
    pts = frames.criteria.set_index(["task_id", "criterion_id"]).points
    assert pts[("M1", "c2")] == 5


def test_a_grader_sees_stale_items_back_and_regrades(stored: Any) -> None:
    grading = GradingStore(stored.db)
    grading.create_grader("zoe")
    grading.ensure_queue("zoe", None)
    item = grading.queue("zoe")[0]
    loaded = grading.load_item("zoe", item.assignment_id)
    for c in loaded.task.criteria:
        if c.auto is None:
            value = JudgmentValue(level=2) if c.levels == 3 else JudgmentValue(met=True)
            grading.save_judgment(item.assignment_id, c.id, value)
    grading.submit(item.assignment_id)
    task_id = loaded.task.id
    crit = next(c for c in loaded.task.criteria if c.auto is None)
    report = RevisionStore(stored.db).revise_criterion(
        None, task_id, crit.id, text=crit.text + " (state the evidence)", reason="r", actor="c"
    )
    assert "zoe" in report.requeued
    again = grading.queue("zoe")[0]
    assert again.status == "in_progress" and again.n_answered == loaded.item.n_criteria - 1
    reloaded = grading.load_item("zoe", item.assignment_id)
    assert reloaded.task_version == 2 and reloaded.stale == {crit.id: 1}
    assert reloaded.task.criterion(crit.id).text.endswith("(state the evidence)")
    assert grading.missing_criteria(item.assignment_id) == [crit.id]
    with pytest.raises(ValidationError):
        grading.submit(item.assignment_id)
    # the same verdict given again counts: no longer stale, nothing else changes
    grading.save_judgment(item.assignment_id, crit.id, reloaded.judgments[crit.id])
    assert grading.load_item("zoe", item.assignment_id).stale == {}
    assert grading.submit(item.assignment_id).status == "submitted"
    # the requeueing is in the item's reopen history
    assert any(
        h.get("source") == "revise" or h.get("task_version") == 2
        for h in _reopens(stored, item.assignment_id)
    )


def _reopens(repo: Any, aid: int) -> list[dict[str, Any]]:
    with repo.db.read() as s:
        return [
            {**r.data, "source": r.source}
            for r in s.scalars(
                select(m.Revision).where(
                    m.Revision.entity == "assignment_reopen", m.Revision.entity_id == aid
                )
            )
        ]


def test_import_revise_adds_and_removes_criteria_keeping_history(stored: Any) -> None:
    store = RevisionStore(stored.db)
    (m1, m2) = stored.load_tasks()
    removed_n = _count(
        stored,
        m.Judgment,
        m.Judgment.criterion_id.in_(
            select(m.Criterion.id)
            .join(m.Task)
            .where(m.Task.external_id == "M1", m.Criterion.external_id == "c3")
        ),
    )
    assert removed_n > 0
    new_c = replace(m1.criteria[0], id="c5", text="Checks the promoter", points=2, position=9)
    revised = replace(m1, criteria=(*[c for c in m1.criteria if c.id != "c3"], new_c))
    dry = store.revise_tasks(None, [revised, m2], reason="x", actor="c", dry_run=True)
    assert dry[0].dry_run and dry[0].removed_verdicts == removed_n and dry[0].version == 2
    assert stored.load_tasks()[0] == m1  # nothing written
    reports = store.revise_tasks(None, [revised, m2], reason="fix", actor="c")
    assert reports[1].version == reports[1].version_before == 1  # unchanged
    r = reports[0]
    assert r.added_criteria == ("c5",) and r.removed_criteria == ("c3",)
    assert r.removed_verdicts == removed_n
    assert [c.id for c in stored.load_tasks()[0].criteria] == ["c1", "c2", "c4", "c5"]
    kept = _count(stored, m.Revision, m.Revision.entity == "judgment_deleted")
    assert kept == removed_n
    assert check(stored.db).ok, check(stored.db).to_dict()  # no orphans, nothing amiss
    # an unknown task is refused, nothing written
    ghost = replace(m2, id="M9")
    with pytest.raises(ValidationError, match="M9"):
        store.revise_tasks(None, [ghost], reason=None, actor=None)
    with pytest.raises(NotFoundError):
        store.revise_criterion(None, "M1", "nope", text="x", reason=None, actor=None)


def test_a_plain_reimport_after_a_revision_refreshes_nothing(stored: Any, mini: Path) -> None:
    RevisionStore(stored.db).revise_criterion(
        None, "M1", "c1", text="Reworded", reason=None, actor=None
    )
    stale = RevisionStore(stored.db).stale_counts(None)
    assert sum(stale.values()) > 0
    data = read_path(mini)
    data.tasks = [t for t in data.tasks if t.id != "M1"]  # the old M1 would conflict
    stored.import_data(data)
    assert RevisionStore(stored.db).stale_counts(None) == stale


def test_adjudications_follow_versions(stored: Any) -> None:
    stored.adjudicate(None, "M1-a", "c1", met=True, adjudicator="coord")
    stored.adjudicate(None, "M1-a", "c2", met=False, adjudicator="coord")
    assert len(stored.load_frames().adjudications) == 2
    RevisionStore(stored.db).revise_criterion(
        None, "M1", "c1", text="Reworded criterion", reason=None, actor=None
    )
    after = stored.load_frames().adjudications
    assert list(after.criterion_id) == ["c2"]  # c1's decision is stale
    assert len(stored.load_frames(version="all").adjudications) == 2
    stored.adjudicate(None, "M1-a", "c1", met=False, adjudicator="coord")
    after = stored.load_frames().adjudications
    assert sorted(after.criterion_id) == ["c1", "c2"]
