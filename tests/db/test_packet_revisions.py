"""Packets and rubric revisions (issue #16): a packet carries the task versions and
their history; a stale verdict given again offline is no longer stale once merged; a
packet exported before a revision brings back verdicts that are stale."""

from __future__ import annotations

from pathlib import Path

from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.packets import export_packet, merge_packet, open_packet
from gradercal.db.revisions import RevisionStore
from gradercal.db.session import Database
from tests.db.test_packets import coordinator, current_judgments, grade_everything

__all__ = ["coordinator"]  # fixture


def test_offline_regrading_after_a_revision(coordinator: Database, tmp_path: Path) -> None:
    db = coordinator
    first = tmp_path / "ben-1.gcpkg"
    export_packet(db, "p-ben", first)
    with open_packet(first, workdir=tmp_path / "w1") as session:
        entered = grade_everything(session, limit=2)
    merge_packet(db, first)
    (aid, crit), met = next(iter(entered.items()))
    task_id = GradingStore(db).queue_item(aid).task_id
    RevisionStore(db).revise_criterion(
        None, task_id, crit, text="A reworded criterion", reason="split", actor="coord"
    )
    assert current_judgments(db, "p-ben")[(aid, crit)].task_version == 1
    stale_before = sum(RevisionStore(db).stale_counts(None).values())
    assert stale_before > 0

    # a new packet: the revised task, its history, ben's stale verdict shown as such
    second = tmp_path / "ben-2.gcpkg"
    export_packet(db, "p-ben", second)
    with open_packet(second, workdir=tmp_path / "w2") as session:
        store = GradingStore(session.db)
        item = store.load_item(session.grader, aid)
        assert item.task_version == 2 and crit in item.stale
        old = RevisionStore(session.db).task_at(session.benchmark, task_id, 1)
        assert old.criterion(crit).text != "A reworded criterion"
        store.save_judgment(aid, crit, JudgmentValue(met=met, rationale="offline "))
        assert crit not in store.load_item(session.grader, aid).stale
    merge_packet(db, second)
    row = current_judgments(db, "p-ben")[(aid, crit)]
    assert row.task_version == 2 and row.met is met
    assert sum(RevisionStore(db).stale_counts(None).values()) < stale_before


def test_a_packet_graded_before_a_revision_merges_stale(
    coordinator: Database, tmp_path: Path
) -> None:
    db = coordinator
    path = tmp_path / "ben.gcpkg"
    export_packet(db, "p-ben", path)
    with open_packet(path, workdir=tmp_path / "w") as session:
        entered = grade_everything(session, limit=1)
    (aid, crit), _met = next(iter(entered.items()))
    task_id = GradingStore(db).queue_item(aid).task_id
    RevisionStore(db).revise_criterion(
        None, task_id, crit, text="Changed while the packet was out", reason="r", actor="c"
    )
    merge_packet(db, path)
    row = current_judgments(db, "p-ben")[(aid, crit)]
    assert row.task_version == 1  # given under the version the packet was exported at
    assert RevisionStore(db).stale_counts(None).get("p-ben", 0) >= 1
