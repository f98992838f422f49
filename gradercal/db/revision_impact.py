"""Who a revision would send back to work, before it is made (issue #16).

:meth:`gradercal.db.revisions.RevisionStore.revise_criterion` with ``dry_run=True``
counts the verdicts a revision would make stale but names nobody: the graders whose
submitted items go back to their queues are only known once the revision is written.
The coordinator's edit dialog shows them beforehand; :func:`requeue_preview` answers
with the same rule the revision applies (``_requeue`` there): a human grader's
submitted item of the task goes back when one of the task's *judgment* criteria needs
a verdict again — after a verdict-changing revision of a criterion, every grader who
submitted a response of that task is in that case.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select

from gradercal.db import models as m
from gradercal.db.session import Database
from gradercal.model import AssignmentStatus, CriterionKind

__all__ = ["requeue_preview"]


def requeue_preview(
    db: Database, benchmark: str | None, task_id: str, stale_criteria: Iterable[str]
) -> tuple[str, ...]:
    """The human graders (sorted names) whose submitted items of ``task_id`` would go
    back to their queues if ``stale_criteria`` (criterion ids of the task) became stale.

    Empty when none of those criteria is graded by people (an automatic criterion's
    verdict is computed, nobody regrades it) or nobody has submitted the task yet.
    """
    from gradercal.db.repo import Repository

    wanted = sorted(set(stale_criteria))
    if not wanted:
        return ()
    bench = Repository(db).benchmark(benchmark)
    with db.read() as s:
        task_pk = s.scalar(
            select(m.Task.id).where(m.Task.benchmark_id == bench.id, m.Task.external_id == task_id)
        )
        if task_pk is None:
            return ()
        graded_by_people = s.scalar(
            select(m.Criterion.id)
            .where(
                m.Criterion.task_id == task_pk,
                m.Criterion.external_id.in_(wanted),
                m.Criterion.kind == CriterionKind.JUDGMENT.value,
            )
            .limit(1)
        )
        if graded_by_people is None:
            return ()
        names = s.scalars(
            select(m.Grader.name)
            .distinct()
            .join(m.Assignment, m.Assignment.grader_id == m.Grader.id)
            .join(m.Response, m.Response.id == m.Assignment.response_id)
            .where(
                m.Response.task_id == task_pk,
                m.Assignment.status == AssignmentStatus.SUBMITTED.value,
                m.Grader.kind == "human",
            )
            .order_by(m.Grader.name)
        )
        return tuple(str(n) for n in names)
