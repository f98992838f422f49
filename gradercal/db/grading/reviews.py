"""Task reviews: a grader's Likert answers and comment on a whole task, and their history.

:class:`TaskReviews` is the part of :class:`~gradercal.db.grading.GradingStore` that
reads and writes them; a changed review first copies the old one into ``revision``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gradercal.db import models as m
from gradercal.db.grading.base import StoreBase
from gradercal.db.grading.values import ReviewItem, ReviewTask, TaskReviewValue, text_or_none
from gradercal.errors import NotFoundError, Problem, ValidationError
from gradercal.model import LIKERT, REVIEW_DIMENSIONS


def _answers(raw: Any) -> dict[str, int]:
    if not isinstance(raw, Mapping):
        return {}
    keys = {d.key for d in REVIEW_DIMENSIONS}
    return {
        str(k): int(v)
        for k, v in raw.items()
        if k in keys and isinstance(v, int) and not isinstance(v, bool)
    }


def _validated_answers(answers: Mapping[str, int | None]) -> dict[str, int]:
    keys = [d.key for d in REVIEW_DIMENSIONS]
    problems = []
    out: dict[str, int] = {}
    for k, v in answers.items():
        if k not in keys:
            problems.append(Problem("task review", None, k, "unknown survey dimension"))
        elif v is None:
            continue
        elif isinstance(v, bool) or not isinstance(v, int) or v not in LIKERT:
            problems.append(Problem("task review", None, k, f"must be 1…5, not {v!r}"))
        else:
            out[k] = v
    if problems:
        raise ValidationError(problems)
    return {k: out[k] for k in keys if k in out}


class TaskReviews(StoreBase):
    """Reads and writes task reviews (part of ``GradingStore``)."""

    def review_tasks(self, grader: str, benchmark: str | None = None) -> list[ReviewTask]:
        """Every task of the benchmark in order, with how much of the survey this grader answered."""
        bench = self.repo.benchmark(benchmark)
        with self.db.read() as s:
            gid = self._grader_id(s, grader)
            reviews = {
                tid: (answers, comment)
                for tid, answers, comment in s.execute(
                    select(m.TaskReview.task_id, m.TaskReview.answers, m.TaskReview.comment)
                    .join(m.Task, m.Task.id == m.TaskReview.task_id)
                    .where(m.TaskReview.grader_id == gid, m.Task.benchmark_id == bench.id)
                )
            }
            rows = s.execute(
                select(m.Task.id, m.Task.external_id, m.Task.position)
                .where(m.Task.benchmark_id == bench.id)
                .order_by(m.Task.position, m.Task.id)
            ).all()
        out = []
        for tid, ext, pos in rows:
            answers, comment = reviews.get(tid, ({}, None))
            out.append(ReviewTask(ext, pos, len(_answers(answers)), bool(comment)))
        return out

    def load_review(self, grader: str, benchmark: str | None, task_id: str) -> ReviewItem:
        bench = self.repo.benchmark(benchmark)
        with self.db.read() as s:
            gid = self._grader_id(s, grader)
            tasks = list(
                s.execute(
                    select(m.Task.id, m.Task.external_id)
                    .where(m.Task.benchmark_id == bench.id)
                    .order_by(m.Task.position, m.Task.id)
                )
            )
            index = next((i for i, t in enumerate(tasks) if t.external_id == task_id), None)
            if index is None:
                raise NotFoundError(f"no task {task_id!r} in {bench.name!r}")
            task_pk = tasks[index].id
            task = self._task(s, task_pk)
            review = self._review(s, task_pk, gid)
        return ReviewItem(task=task, review=review, position=index, total=len(tasks))

    @staticmethod
    def _review(s: Session, task_pk: int, gid: int) -> TaskReviewValue:
        row = s.scalar(
            select(m.TaskReview).where(
                m.TaskReview.task_id == task_pk, m.TaskReview.grader_id == gid
            )
        )
        if row is None:
            return TaskReviewValue()
        n_old = s.scalar(
            select(func.count())
            .select_from(m.Revision)
            .where(m.Revision.entity == "task_review", m.Revision.entity_id == row.id)
        )
        return TaskReviewValue(_answers(row.answers), row.comment, int(n_old or 0) + 1)

    def save_task_review(
        self,
        grader: str,
        benchmark: str | None,
        task_id: str,
        answers: Mapping[str, int | None],
        comment: str | None,
    ) -> TaskReviewValue:
        """Store the grader's whole survey on one task now, keeping the old value as a revision.

        ``answers`` maps dimension keys of :data:`REVIEW_DIMENSIONS` to 1…5 (None or a
        missing key = not answered).
        """
        clean = _validated_answers(answers)
        note = text_or_none(comment)
        bench = self.repo.benchmark(benchmark)
        with self.db.write() as s:
            gid = self._grader_id(s, grader)
            task_pk = s.scalar(
                select(m.Task.id).where(
                    m.Task.benchmark_id == bench.id, m.Task.external_id == task_id
                )
            )
            if task_pk is None:
                raise NotFoundError(f"no task {task_id!r} in {bench.name!r}")
            now = m.utcnow()
            row = s.scalar(
                select(m.TaskReview)
                .where(m.TaskReview.task_id == task_pk, m.TaskReview.grader_id == gid)
                .with_for_update()  # two windows saving at once keep both values
            )
            if row is None:
                s.add(
                    m.TaskReview(
                        task_id=task_pk,
                        grader_id=gid,
                        answers=clean,
                        comment=note,
                        created_at=now,
                        updated_at=now,
                    )
                )
                return TaskReviewValue(clean, note, 1)
            current = self._review(s, task_pk, gid)
            if dict(current.answers) == clean and current.comment == note:
                return current
            s.add(
                m.Revision(
                    entity="task_review",
                    entity_id=row.id,
                    revision=current.revision,
                    data={
                        "answers": dict(row.answers or {}),
                        "comment": row.comment,
                        "updated_at": row.updated_at.isoformat() if row.updated_at else None,
                    },
                    actor=grader,
                    source="ui",
                    changed_at=now,
                )
            )
            row.answers = clean
            row.comment = note
            row.updated_at = now
            return TaskReviewValue(clean, note, current.revision + 1)

    def task_review_history(
        self, grader: str, benchmark: str | None, task_id: str
    ) -> list[dict[str, Any]]:
        """Superseded survey values of one task by one grader, oldest first."""
        bench = self.repo.benchmark(benchmark)
        with self.db.read() as s:
            gid = self._grader_id(s, grader)
            rid = s.scalar(
                select(m.TaskReview.id)
                .join(m.Task, m.Task.id == m.TaskReview.task_id)
                .where(
                    m.TaskReview.grader_id == gid,
                    m.Task.benchmark_id == bench.id,
                    m.Task.external_id == task_id,
                )
            )
            if rid is None:
                return []
            rows = s.scalars(
                select(m.Revision)
                .where(m.Revision.entity == "task_review", m.Revision.entity_id == rid)
                .order_by(m.Revision.revision)
            ).all()
            return [{"revision": r.revision, **r.data, "actor": r.actor} for r in rows]
