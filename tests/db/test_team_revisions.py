"""Rubric revisions in team mode on the real PostgreSQL server: the coordinator revises,
a grader sees the version they graded under and gives the verdict again as themselves;
a grader cannot revise."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import ProgrammingError

from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.revisions import RevisionStore
from gradercal.db.session import open_database
from tests.support.team import BENCH, Team, crew, pg_url

__all__ = ["crew", "pg_url"]  # fixtures

pytestmark = pytest.mark.postgres


def test_a_revision_reaches_the_grader_through_row_level_security(crew: Team) -> None:
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
    ana_db = open_database(crew.url(crew.ana))
    dan_db = open_database(crew.url(crew.dan))
    try:
        ana = GradingStore(ana_db)
        item = next(i for i in ana.ensure_queue(crew.ana, BENCH) if i.task_id == "P1")
        loaded = ana.load_item(crew.ana, item.assignment_id)
        for c in loaded.task.criteria:
            value = JudgmentValue(level=2) if c.levels == 3 else JudgmentValue(met=True)
            ana.save_judgment(item.assignment_id, c.id, value)
        ana.submit(item.assignment_id)

        # a grader may not revise the rubric
        with pytest.raises(ProgrammingError, match="permission denied"):
            RevisionStore(ana_db).revise_criterion(
                BENCH, "P1", "c1", text="mine now", reason="x", actor=crew.ana
            )
        # the coordinator does; ana's item goes back to her queue
        report = RevisionStore(dan_db).revise_criterion(
            BENCH, "P1", "c1", text="Says the claim is not supported by the data shown",
            reason="graders split", actor=crew.dan,
        )  # fmt: skip
        assert report.requeued == (crew.ana,)
        back = ana.load_item(crew.ana, item.assignment_id)
        assert back.item.status == "in_progress" and back.stale == {"c1": 1}
        # she reads the wording she graded under (content_version, through RLS)
        old = RevisionStore(ana_db).task_at(BENCH, "P1", 1)
        assert old.criterion("c1").text == "Says the claim is not supported"
        # and confirms her verdict as herself: no longer stale, the item submits
        ana.save_judgment(item.assignment_id, "c1", back.judgments["c1"])
        assert ana.load_item(crew.ana, item.assignment_id).stale == {}
        assert ana.submit(item.assignment_id).status == "submitted"
        # she cannot read the history of a task she was not given
        RevisionStore(dan_db).revise_criterion(
            BENCH, "P3", "c1", text="Reworded", reason="r", actor=crew.dan
        )
        engine = crew.engine(crew.ana)
        with engine.connect() as conn:
            visible = conn.execute(text("SELECT count(*) FROM content_version")).scalar()
        with admin.connect() as conn:
            total = conn.execute(text("SELECT count(*) FROM content_version")).scalar()
        assert (visible, total) == (2, 4)  # P1's two versions of P1's and P3's four
        engine.dispose()
        admin.dispose()
    finally:
        ana_db.dispose()
        dan_db.dispose()
