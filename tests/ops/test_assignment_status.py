"""The assignment-status rule of a save: the store applies it, the grading view shows it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import update

from gradercal.db import models as m
from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.session import open_database
from gradercal.model import AssignmentStatus
from gradercal.ops.assignment_status import status_after_save
from tests.conftest import DatabaseTemplates
from tests.support.gui import GRADER, import_folder, write_gui_benchmark

BENCH = "gui-bench"
MET, CLEARED, NOT_MET = JudgmentValue(met=True), JudgmentValue(), JudgmentValue(met=False)


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


def test_the_rule() -> None:
    p, ip, sub, sk = (s.value for s in AssignmentStatus)
    assert status_after_save(p, answered=True, changed=True) == ip  # starts
    assert status_after_save(sub, answered=False, changed=True) == ip  # reopens
    for status in (p, ip, sub, sk):  # a save that changed nothing changes nothing
        for answered in (True, False):
            assert status_after_save(status, answered=answered, changed=False) == status
    assert status_after_save(p, answered=False, changed=True) == p
    assert status_after_save(sub, answered=True, changed=True) == sub
    assert status_after_save(sk, answered=False, changed=True) == sk
    assert status_after_save(ip, answered=False, changed=True) == ip


@pytest.mark.parametrize("status", [s.value for s in AssignmentStatus])
def test_the_store_applies_the_rule(store: GradingStore, status: str) -> None:
    """Every save from every status, answered or cleared, changed or not: the status the
    store writes is the rule's."""
    store.create_grader(GRADER)
    aid = store.ensure_queue(GRADER, BENCH)[0].assignment_id
    for value in (MET, MET, CLEARED, CLEARED, NOT_MET):
        with store.db.write() as s:
            s.execute(update(m.Assignment).where(m.Assignment.id == aid).values(status=status))
        saved = store.save_judgment(aid, "c1", value)
        expected = status_after_save(status, answered=value.answered, changed=saved.changed)
        assert store.queue_item(aid).status == expected, (status, value, saved.changed)


def test_the_store_asks_the_rule(store: GradingStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store has no copy of the rule: a changed rule changes what the store writes."""
    from gradercal.db.grading import judgments

    monkeypatch.setattr(
        judgments, "status_after_save", lambda status, **_: AssignmentStatus.SKIPPED.value
    )
    store.create_grader(GRADER)
    aid = store.ensure_queue(GRADER, BENCH)[0].assignment_id
    assert store.save_judgment(aid, "c1", MET).changed
    assert store.queue_item(aid).status == AssignmentStatus.SKIPPED.value
