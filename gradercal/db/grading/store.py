"""The grading store: queues, the item on screen, submitting, skipping, reopening.

:class:`GradingStore` joins the parts (:class:`~gradercal.db.grading.judgments.JudgmentWrites`,
:class:`~gradercal.db.grading.reviews.TaskReviews`, over
:class:`~gradercal.db.grading.base.StoreBase`) and adds a grader's queue (its order and
blinding codes, see :mod:`gradercal.db.grading`), one response as the grading view shows
it, and the assignment's state.
"""

from __future__ import annotations

import hashlib
from typing import Any

from sqlalchemy import Select, bindparam, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gradercal.db import models as m
from gradercal.db.clarifications import (
    REOPEN_ENTITY,
    answered_for_criterion,
    benchmark_instructions,
)
from gradercal.db.grading.base import LOCK_ASSIGNMENT
from gradercal.db.grading.judgments import JudgmentWrites
from gradercal.db.grading.reviews import TaskReviews
from gradercal.db.grading.values import (
    FINAL_STATUSES,
    GradingItem,
    Guidelines,
    JudgmentValue,
    JudgmentVersion,
    QueueItem,
    QueueProgress,
    RevisedSinceError,
    blinding_code,
    text_or_none,
)
from gradercal.errors import NotFoundError, Problem, ValidationError
from gradercal.model import AssignmentStatus, CriterionKind, GraderKind, Task


def _order_key(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


def _queue_statement(one_task: bool) -> Select[*tuple[Any, ...]]:
    """The grader's queue with artifact / criterion / answered counts (bind: gid, bench[, task])."""
    n_art = (
        select(m.Artifact.task_id, func.count().label("n")).group_by(m.Artifact.task_id).subquery()
    )
    n_crit = (
        select(m.Criterion.task_id, func.count().label("n"))
        .where(m.Criterion.kind == CriterionKind.JUDGMENT.value)
        .group_by(m.Criterion.task_id)
        .subquery()
    )
    answered_q = (
        select(m.Judgment.response_id, func.count().label("n"))
        .join(m.Criterion, m.Criterion.id == m.Judgment.criterion_id)
        .where(
            m.Judgment.grader_id == bindparam("gid"),
            m.Criterion.kind == CriterionKind.JUDGMENT.value,
            (m.Judgment.met.is_not(None)) | (m.Judgment.level.is_not(None)),
            m.Judgment.task_version >= m.Criterion.verdict_version,  # a stale one is not
        )
        .group_by(m.Judgment.response_id)
    )
    if one_task:
        answered_q = answered_q.where(m.Criterion.task_id == bindparam("task"))
    answered = answered_q.subquery()
    q = (
        select(
            m.Assignment.id,
            m.Assignment.position,
            m.Assignment.status,
            m.Assignment.time_spent_s,
            m.Assignment.skip_reason,
            m.Task.id,
            m.Task.external_id,
            func.coalesce(n_art.c.n, 0),
            func.coalesce(n_crit.c.n, 0),
            func.coalesce(answered.c.n, 0),
        )
        .join(m.Response, m.Response.id == m.Assignment.response_id)
        .join(m.Task, m.Task.id == m.Response.task_id)
        .outerjoin(n_art, n_art.c.task_id == m.Task.id)
        .outerjoin(n_crit, n_crit.c.task_id == m.Task.id)
        .outerjoin(answered, answered.c.response_id == m.Assignment.response_id)
        .where(
            m.Assignment.grader_id == bindparam("gid"),
            m.Response.benchmark_id == bindparam("bench"),
        )
        .order_by(m.Assignment.position, m.Assignment.id)
    )
    if one_task:
        q = q.where(m.Response.task_id == bindparam("task"))
    return q


_QUEUE_ALL = _queue_statement(False)


_QUEUE_TASK = _queue_statement(True)


_ASSIGNMENT_SCOPE = (
    select(m.Assignment.grader_id, m.Response.benchmark_id, m.Response.task_id, m.Task.version)
    .join(m.Response, m.Response.id == m.Assignment.response_id)
    .join(m.Task, m.Task.id == m.Response.task_id)
    .where(m.Assignment.id == bindparam("aid"))
)


_ITEM_ROW = (
    select(
        m.Assignment.grader_id,
        m.Grader.name.label("grader_name"),
        m.Grader.kind.label("grader_kind"),
        m.Response.id.label("response_id"),
        m.Response.benchmark_id,
        m.Response.text,
        m.Response.answer,
        m.Response.task_id,
        m.Benchmark.pass_threshold,
        m.Task.version.label("task_version"),
    )
    .join(m.Grader, m.Grader.id == m.Assignment.grader_id)
    .join(m.Response, m.Response.id == m.Assignment.response_id)
    .join(m.Benchmark, m.Benchmark.id == m.Response.benchmark_id)
    .join(m.Task, m.Task.id == m.Response.task_id)
    .where(m.Assignment.id == bindparam("aid"))
)


#: Only the grader's own judgments: never another grader's, never a judge's.
_ITEM_JUDGMENTS = (
    select(
        m.Criterion.external_id,
        m.Judgment.met,
        m.Judgment.level,
        m.Judgment.rationale,
        m.Judgment.unclear,
        m.Judgment.unclear_note,
        m.Judgment.revision,
        m.Judgment.task_version,
        m.Criterion.verdict_version,
    )
    .join(m.Criterion, m.Criterion.id == m.Judgment.criterion_id)
    .where(m.Judgment.grader_id == bindparam("gid"), m.Judgment.response_id == bindparam("rid"))
)


#: Adjudication revisions of one response, by criterion (only their versions: never values).
_ITEM_ADJUDICATIONS = (
    select(m.Criterion.external_id, m.Adjudication.revision)
    .join(m.Criterion, m.Criterion.id == m.Adjudication.criterion_id)
    .where(m.Adjudication.response_id == bindparam("rid"))
)


class GradingStore(JudgmentWrites, TaskReviews):
    """Reads and writes everything the grading app needs, one short transaction per call."""

    # -- queue ----------------------------------------------------------------------
    def ensure_queue(
        self, grader: str, benchmark: str | None = None, *, seed: str = ""
    ) -> list[QueueItem]:
        """The grader's queue in ``benchmark``; made for every response when the grader has none.

        A grader who already has assignments in the benchmark (e.g. from an assignment
        design, :mod:`gradercal.db.assignments`) keeps exactly those. See the module
        docstring for the order of a new queue; ``seed`` draws a different (still
        stable) order, the same seed always the same one.
        """
        bench = self.repo.benchmark(benchmark)
        with self.db.read() as s:
            queue = self._queue(s, self._grader_id(s, grader), bench.id)
        if queue or not self.sees_adjudications():
            return queue  # a team grader's queue is the one assigned to them
        for attempt in (1, 2):
            try:
                return self._create_queue(grader, bench.id, bench.name, seed)
            except IntegrityError:  # another client created it at the same moment
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _create_queue(
        self, grader: str, bench_id: int, bench_name: str, seed: str
    ) -> list[QueueItem]:
        with self.db.write() as s:
            gid = self._grader_id(s, grader)
            existing = s.scalar(
                select(func.count())
                .select_from(m.Assignment)
                .join(m.Response, m.Response.id == m.Assignment.response_id)
                .where(m.Assignment.grader_id == gid, m.Response.benchmark_id == bench_id)
            )
            if not existing:
                rows = s.execute(
                    select(m.Response.id, m.Response.external_id, m.Task.external_id)
                    .join(m.Task, m.Task.id == m.Response.task_id)
                    .where(m.Response.benchmark_id == bench_id)
                ).all()
                base = (bench_name, grader, seed)

                def key(row: Any) -> tuple[str, str]:
                    return (_order_key(*base, "task", row[2]), _order_key(*base, "resp", row[1]))

                now = m.utcnow()
                values = [
                    {
                        "grader_id": gid,
                        "response_id": rid,
                        "status": AssignmentStatus.PENDING.value,
                        "position": i,
                        "time_spent_s": 0.0,
                        "calibration": False,
                        "created_at": now,
                        "updated_at": now,
                    }
                    for i, (rid, _ext, _task) in enumerate(sorted(rows, key=key))
                ]
                if values:
                    s.execute(insert(m.Assignment), values)
            return self._queue(s, gid, bench_id)

    def queue(self, grader: str, benchmark: str | None = None) -> list[QueueItem]:
        """The grader's queue in order (empty until :meth:`ensure_queue` made it)."""
        bench = self.repo.benchmark(benchmark)
        with self.db.read() as s:
            return self._queue(s, self._grader_id(s, grader), bench.id)

    def _queue(
        self, s: Session, gid: int, bench_id: int, task_pk: int | None = None
    ) -> list[QueueItem]:
        """The queue (or, with ``task_pk``, its items of one task) with codes and counts."""
        params: dict[str, Any] = {"gid": gid, "bench": bench_id}
        stmt = _QUEUE_ALL
        if task_pk is not None:
            params["task"] = task_pk
            stmt = _QUEUE_TASK
        ranks: dict[int, int] = {}
        out: list[QueueItem] = []
        for aid, pos, status, spent, reason, t_pk, task_ext, na, nc, nans in s.execute(
            stmt, params
        ):
            rank = ranks.get(t_pk, 0)
            ranks[t_pk] = rank + 1
            out.append(
                QueueItem(
                    assignment_id=aid,
                    position=pos,
                    task_id=task_ext,
                    code=blinding_code(rank),
                    status=status,
                    time_spent_s=float(spent or 0.0),
                    skip_reason=reason,
                    n_artifacts=int(na),
                    n_criteria=int(nc),
                    n_answered=int(nans),
                )
            )
        return out

    def task_texts(self, benchmark: str | None = None) -> dict[str, str]:
        """Each task's prompt and criteria as one text, by task id (the queue search reads
        them; nothing here unblinds a response)."""
        bench = self.repo.benchmark(benchmark)
        with self.db.read() as s:
            texts: dict[str, str] = {
                str(ext): str(prompt)
                for ext, prompt in s.execute(
                    select(m.Task.external_id, m.Task.prompt).where(m.Task.benchmark_id == bench.id)
                )
            }
            for task_ext, text in s.execute(
                select(m.Task.external_id, m.Criterion.text)
                .join(m.Criterion, m.Criterion.task_id == m.Task.id)
                .where(m.Task.benchmark_id == bench.id)
                .order_by(m.Criterion.position, m.Criterion.id)
            ):
                texts[task_ext] = f"{texts[task_ext]}\n{text}"
        return texts

    def queue_item(self, assignment_id: int) -> QueueItem:
        with self.db.read() as s:
            return self._queue_item(s, assignment_id)

    def _queue_item(self, s: Session, assignment_id: int) -> QueueItem:
        row = s.execute(_ASSIGNMENT_SCOPE, {"aid": assignment_id}).first()
        if row is None:
            raise NotFoundError(f"no assignment {assignment_id}")
        items = self._queue(s, row.grader_id, row.benchmark_id, task_pk=row.task_id)
        return next(i for i in items if i.assignment_id == assignment_id)

    def progress(self, grader: str, benchmark: str | None = None) -> QueueProgress:
        bench = self.repo.benchmark(benchmark)
        with self.db.read() as s:
            gid = self._grader_id(s, grader)
            rows = s.execute(
                select(m.Assignment.status, func.count(), func.sum(m.Assignment.time_spent_s))
                .join(m.Response, m.Response.id == m.Assignment.response_id)
                .where(m.Assignment.grader_id == gid, m.Response.benchmark_id == bench.id)
                .group_by(m.Assignment.status)
            ).all()
        counts = {status: int(n) for status, n, _t in rows}
        return QueueProgress(
            total=sum(counts.values()),
            submitted=counts.get(AssignmentStatus.SUBMITTED.value, 0),
            skipped=counts.get(AssignmentStatus.SKIPPED.value, 0),
            in_progress=counts.get(AssignmentStatus.IN_PROGRESS.value, 0),
            pending=counts.get(AssignmentStatus.PENDING.value, 0),
            time_spent_s=float(sum(float(t or 0.0) for _s, _n, t in rows)),
        )

    def resume_point(self, grader: str, benchmark: str | None = None) -> QueueItem | None:
        """Where the grader stopped: the in-progress item touched last, else the first pending.

        None when every item is submitted or skipped (or the queue is empty).
        """
        items = self.queue(grader, benchmark)
        open_items = [i for i in items if not i.done]
        if not open_items:
            return None
        in_progress = {
            i.assignment_id: i for i in open_items if i.status == AssignmentStatus.IN_PROGRESS
        }
        if in_progress:
            with self.db.read() as s:
                last = s.scalar(
                    select(m.Assignment.id)
                    .where(m.Assignment.id.in_(list(in_progress)))
                    .order_by(m.Assignment.updated_at.desc(), m.Assignment.id.desc())
                    .limit(1)
                )
            if last is not None:
                return in_progress[last]
        return open_items[0]

    # -- one response ---------------------------------------------------------------
    def load_item(self, grader: str, assignment_id: int) -> GradingItem:
        """One queue item with its task, the response text and **only this grader's** judgments."""
        with self.db.read() as s:
            row = s.execute(_ITEM_ROW, {"aid": assignment_id}).first()
            if row is None or row.grader_name != grader or row.grader_kind != GraderKind.HUMAN:
                raise NotFoundError(f"assignment {assignment_id} is not in {grader!r}'s queue")
            task = self._cached_task(s, row.task_id, int(row.task_version))
            judgments: dict[str, JudgmentValue] = {}
            revisions: dict[str, int] = {}
            stale: dict[str, int] = {}
            for ext, met, level, rationale, unclear, note, rev, given, verdict_v in s.execute(
                _ITEM_JUDGMENTS, {"gid": row.grader_id, "rid": row.response_id}
            ):
                judgments[ext] = JudgmentValue(met, level, rationale, bool(unclear), note)
                revisions[ext] = int(rev)
                if int(given) < int(verdict_v):
                    stale[ext] = int(given)
            adjudicated: dict[str, int] = (
                {
                    ext: int(rev)
                    for ext, rev in s.execute(_ITEM_ADJUDICATIONS, {"rid": row.response_id})
                }
                if self.sees_adjudications()
                else {}
            )
            versions = {
                ext: JudgmentVersion(revisions.get(ext, 0), int(adjudicated.get(ext, 0)))
                for ext in {*revisions, *adjudicated}
            }
            items = self._queue(s, row.grader_id, row.benchmark_id, task_pk=row.task_id)
            item = next(i for i in items if i.assignment_id == assignment_id)
        return GradingItem(
            item=item,
            task=task,
            response_text=row.text,
            answer=row.answer,
            judgments=judgments,
            pass_threshold=float(row.pass_threshold),
            versions=versions,
            task_version=int(row.task_version),
            stale=stale,
        )

    def guidelines(self, benchmark: str | None, task_id: str, criterion_id: str) -> Guidelines:
        """The benchmark's grading instructions and the answers on one criterion (read
        now, so an answer given meanwhile shows; instructions are read once per store)."""
        key = benchmark or ""
        known = self._instructions.get(key)
        if known is None:
            bench_id = self.repo.benchmark(benchmark).id
            known = (bench_id, benchmark_instructions(self.db, bench_id))
            self._instructions[key] = known
        found = answered_for_criterion(self.db, known[0], task_id, criterion_id)
        return Guidelines(known[1], tuple(g.answer for g in found))

    def peek_task(self, assignment_id: int) -> Task:
        """The task of a queue item (e.g. to prepare its artifacts ahead of time)."""
        with self.db.read() as s:
            row = s.execute(_ASSIGNMENT_SCOPE, {"aid": assignment_id}).first()
            if row is None:
                raise NotFoundError(f"no assignment {assignment_id}")
            return self._cached_task(s, row.task_id, int(row.version))

    # -- assignment state -----------------------------------------------------------
    def add_time(self, assignment_id: int, seconds: float) -> float:
        """Add time on task; returns the new total (seconds)."""
        if seconds <= 0:
            with self.db.read() as s:
                total = s.scalar(
                    select(m.Assignment.time_spent_s).where(m.Assignment.id == assignment_id)
                )
            if total is None:
                raise NotFoundError(f"no assignment {assignment_id}")
            return float(total)
        with self.db.write() as s:
            total = s.execute(
                update(m.Assignment)
                .where(m.Assignment.id == assignment_id)
                .values(
                    time_spent_s=m.Assignment.time_spent_s + float(seconds), updated_at=m.utcnow()
                )
                .returning(m.Assignment.time_spent_s)
            ).scalar_one_or_none()
        if total is None:
            raise NotFoundError(f"no assignment {assignment_id}")
        return float(total)

    def missing_criteria(self, assignment_id: int) -> list[str]:
        """Judgment criteria of the item that the grader has not answered, in rubric order."""
        with self.db.read() as s:
            return self._missing(s, assignment_id)

    @staticmethod
    def _check_seen(s: Session, assignment_id: int, seen_version: int) -> None:
        """Raise :class:`RevisedSinceError` when a criterion of the item's task was
        revised since task version ``seen_version``."""
        scope = s.execute(_ASSIGNMENT_SCOPE, {"aid": assignment_id}).first()
        if scope is None:
            raise NotFoundError(f"no assignment {assignment_id}")
        revised = tuple(
            s.scalars(
                select(m.Criterion.external_id)
                .where(
                    m.Criterion.task_id == scope.task_id,
                    m.Criterion.verdict_version > seen_version,
                )
                .order_by(m.Criterion.position, m.Criterion.id)
            )
        )
        if revised:
            raise RevisedSinceError(
                assignment_id, revised, seen_version, int(scope.version), saving=False
            )

    @staticmethod
    def _missing(s: Session, assignment_id: int) -> list[str]:
        a = s.get(m.Assignment, assignment_id)
        if a is None:
            raise NotFoundError(f"no assignment {assignment_id}")
        task_pk = s.scalar(select(m.Response.task_id).where(m.Response.id == a.response_id))
        answered = set(
            s.scalars(
                select(m.Judgment.criterion_id)
                .join(m.Criterion, m.Criterion.id == m.Judgment.criterion_id)
                .where(
                    m.Judgment.grader_id == a.grader_id,
                    m.Judgment.response_id == a.response_id,
                    (m.Judgment.met.is_not(None)) | (m.Judgment.level.is_not(None)),
                    m.Judgment.task_version >= m.Criterion.verdict_version,  # not stale
                )
            )
        )
        return [
            ext
            for cid, ext in s.execute(
                select(m.Criterion.id, m.Criterion.external_id)
                .where(
                    m.Criterion.task_id == task_pk,
                    m.Criterion.kind == CriterionKind.JUDGMENT.value,
                )
                .order_by(m.Criterion.position, m.Criterion.id)
            )
            if cid not in answered
        ]

    def submit(self, assignment_id: int, *, seen_version: int | None = None) -> QueueItem:
        """Mark the item submitted. Every judgment criterion must be answered.

        ``seen_version`` is the task version the grader's window shows: when a criterion
        was revised since (a change that can change a verdict, or a new criterion), the
        window shows a rubric that is no longer the task's and nothing is submitted.

        Raises:
            RevisedSinceError: naming the criteria revised since ``seen_version``.
            ValidationError: listing the unanswered criteria; nothing is changed.
        """
        with self.db.write() as s:
            if not self.db.is_sqlite:  # no verdict may be cleared while we check
                s.execute(LOCK_ASSIGNMENT, {"aid": assignment_id})
            if seen_version is not None:
                self._check_seen(s, assignment_id, seen_version)
            missing = self._missing(s, assignment_id)
            if missing:
                raise ValidationError(
                    [Problem("rubric", None, c, "not answered yet") for c in missing]
                )
            now = m.utcnow()
            s.execute(
                update(m.Assignment)
                .where(m.Assignment.id == assignment_id)
                .values(
                    status=AssignmentStatus.SUBMITTED.value,
                    submitted_at=now,
                    skip_reason=None,
                    updated_at=now,
                )
            )
            return self._queue_item(s, assignment_id)

    def skip(self, assignment_id: int, reason: str) -> QueueItem:
        """Mark the item skipped; a reason is required. Judgments entered so far are kept."""
        clean = text_or_none(reason)
        if clean is None:
            raise ValidationError([Problem("skip", None, "reason", "a reason is required")])
        with self.db.write() as s:
            if s.get(m.Assignment, assignment_id) is None:
                raise NotFoundError(f"no assignment {assignment_id}")
            s.execute(
                update(m.Assignment)
                .where(m.Assignment.id == assignment_id)
                .values(
                    status=AssignmentStatus.SKIPPED.value,
                    skip_reason=clean.strip(),
                    submitted_at=None,
                    updated_at=m.utcnow(),
                )
            )
            return self._queue_item(s, assignment_id)

    def reopen(self, assignment_id: int) -> QueueItem:
        """Put a submitted or skipped item back in progress (the skip reason is kept).

        Reopening a submitted or skipped item is recorded: the state it leaves goes into
        ``revision`` (entity ``assignment_reopen``, actor = the grader), so a submission
        changed afterwards stays visible (:meth:`reopen_history`).
        """
        with self.db.write() as s:
            a = s.get(m.Assignment, assignment_id)
            if a is None:
                raise NotFoundError(f"no assignment {assignment_id}")
            now = m.utcnow()
            if a.status in FINAL_STATUSES:
                earlier = s.scalar(
                    select(func.count())
                    .select_from(m.Revision)
                    .where(m.Revision.entity == REOPEN_ENTITY, m.Revision.entity_id == a.id)
                )
                s.add(
                    m.Revision(
                        entity=REOPEN_ENTITY,
                        entity_id=a.id,
                        revision=int(earlier or 0) + 1,
                        data={
                            "status": a.status,
                            "submitted_at": a.submitted_at.isoformat() if a.submitted_at else None,
                            "skip_reason": a.skip_reason,
                        },
                        actor=s.scalar(select(m.Grader.name).where(m.Grader.id == a.grader_id)),
                        source="ui",
                        changed_at=now,
                    )
                )
            s.execute(
                update(m.Assignment)
                .where(m.Assignment.id == assignment_id)
                .values(
                    status=AssignmentStatus.IN_PROGRESS.value,
                    submitted_at=None,
                    updated_at=now,
                )
            )
            return self._queue_item(s, assignment_id)

    def reopen_history(self, assignment_id: int) -> list[dict[str, Any]]:
        """Every reopening of the item, oldest first: the state it left, who and when."""
        with self.db.read() as s:
            rows = s.scalars(
                select(m.Revision)
                .where(m.Revision.entity == REOPEN_ENTITY, m.Revision.entity_id == assignment_id)
                .order_by(m.Revision.revision)
            ).all()
            return [
                {"revision": r.revision, **r.data, "actor": r.actor, "changed_at": r.changed_at}
                for r in rows
            ]
