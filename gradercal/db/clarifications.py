"""Clarification threads on criteria: graders ask, coordinators answer, graders read the answers.

**Opening.** A grader who flags a criterion unclear *with a note* asks a question: the
note opens the criterion's open thread, or joins it when one is open already (a
``question`` message). :meth:`gradercal.db.grading.GradingStore.save_judgment` does so
in the same transaction as the judgment (:func:`open_from_flag`), on the grader's own
connection, so in team mode the row is inserted *as* the grader and row-level security
(:mod:`gradercal.db.team`) checks it. Only a new or changed note asks: saving the same
note again (say, with another rationale) adds nothing, a grader whose last question in
the open thread says the same is not repeated, and a note edited while its thread is
open revises the question it asked (the grading app saves after every pause in
typing). A flag without a note asks nothing. A criterion has at most one open thread:
the database keeps it so (a partial unique index, 0008), and a flagger whose thread was
opened by another at the same moment joins that one.
:func:`ask` asks without a judgment (the ``gradercal clarify ask`` command).

**Answering** (:func:`answer`, a coordinator or adjudicator) writes the answer into the
thread (status ``answered``) and adds an ``answer`` message; answering again replaces
the current answer and keeps the earlier one as a message. A question asked after the
answer opens a new thread. ``recheck=True`` also puts back in progress the submitted or
skipped queue items of every human grader whose verdict on that criterion predates the
answer, recording each like :meth:`GradingStore.reopen` does (a ``revision`` row, entity
``assignment_reopen``, with the clarification's id and the person who answered); in
team mode only a coordinator may do so. :func:`close` ends a thread without an answer.

**Reading.** :func:`list_clarifications` and :func:`get` show whole threads (the
coordinator's view). :func:`answered_for_criterion` is what a grader may read: the
answers on one criterion, without the questions (in team mode a grader reads the
answers on the criteria of their assigned tasks and their own questions, nothing of
other graders). :func:`benchmark_instructions` gives the benchmark's general grading
instructions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Connection, Table, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gradercal.db import models as m
from gradercal.db.repo import Repository
from gradercal.db.session import Database
from gradercal.db.times import stored_iso as _iso
from gradercal.db.times import stored_utc as _aware
from gradercal.errors import GradercalError, NotFoundError
from gradercal.model import AssignmentStatus

__all__ = [
    "MAX_TEXT",
    "STATUSES",
    "Answered",
    "Clarification",
    "ClarificationError",
    "Guideline",
    "Message",
    "answer",
    "answered_for_criterion",
    "ask",
    "benchmark_instructions",
    "close",
    "get",
    "list_clarifications",
    "open_from_flag",
]

STATUSES = ("open", "answered", "closed")
MAX_TEXT = 8000
#: ``revision.source`` of the queue items a re-check reopened
RECHECK_SOURCE = "clarify"
#: ``revision.entity`` of a reopening, as :meth:`GradingStore.reopen` writes it (this
#: module sits below :mod:`gradercal.db.grading`, which imports it)
REOPEN_ENTITY = "assignment_reopen"
_FINAL = frozenset({AssignmentStatus.SUBMITTED.value, AssignmentStatus.SKIPPED.value})


class ClarificationError(GradercalError):
    """A clarification action is refused; the message says why."""


@dataclass(frozen=True)
class Message:
    kind: str
    author: str
    text: str
    created_at: datetime | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "author": self.author,
            "text": self.text,
            "created_at": _iso(self.created_at),
        }


@dataclass(frozen=True)
class Clarification:
    """One thread, as the coordinator sees it."""

    id: int
    benchmark: str
    task: str
    criterion: str
    criterion_text: str
    status: str
    question: str
    asked_by: str
    asked_at: datetime | None
    answer: str | None
    answered_by: str | None
    answered_at: datetime | None
    messages: tuple[Message, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "benchmark": self.benchmark,
            "task": self.task,
            "criterion": self.criterion,
            "criterion_text": self.criterion_text,
            "status": self.status,
            "question": self.question,
            "asked_by": self.asked_by,
            "asked_at": _iso(self.asked_at),
            "answer": self.answer,
            "answered_by": self.answered_by,
            "answered_at": _iso(self.answered_at),
            "messages": [msg.to_dict() for msg in self.messages],
        }


@dataclass(frozen=True)
class Answered:
    """An answer as saved, and the queue items a re-check put back in progress."""

    clarification: Clarification
    reopened: tuple[int, ...]
    """Assignment ids reopened (submitted or skipped before, in progress now)."""
    graders: tuple[str, ...]
    """Every grader asked to re-check: a verdict on the criterion predates the answer."""

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.clarification.to_dict(),
            "reopened_assignments": list(self.reopened),
            "recheck_graders": list(self.graders),
        }


@dataclass(frozen=True)
class Guideline:
    """An answered clarification as a grader reads it."""

    id: int
    answer: str
    answered_by: str | None
    answered_at: datetime | None


# -- texts and people ----------------------------------------------------------------------
def _clean(text: str | None, what: str) -> str:
    clean = (text or "").replace("\x00", "").strip()
    if not clean:
        raise ClarificationError(f"the {what} must not be empty (--text TEXT)")
    if len(clean) > MAX_TEXT:
        raise ClarificationError(f"the {what} must be at most {MAX_TEXT} characters")
    return clean


def _who(db: Database, actor: str | None) -> tuple[str, str | None]:
    """The name to record (the session user in team mode) and the team role (or None)."""
    from gradercal.db.team import identity

    who = identity(db)
    if who is not None:
        return who.user, who.role
    name = (actor or "").strip()
    if not name:
        raise ClarificationError("say who you are (--actor NAME)")
    return name[:200], None


# -- opening (the grader's side) -----------------------------------------------------------
_C = cast(Table, m.Clarification.__table__)
_M = cast(Table, m.ClarificationMessage.__table__)


def _open_thread(conn: Connection | Session, criterion_id: int) -> int | None:
    """The criterion's open thread (there is at most one: the database keeps it so)."""
    found = conn.execute(
        select(_C.c.id)
        .where(_C.c.criterion_id == criterion_id, _C.c.status == "open")
        .order_by(_C.c.id)
        .limit(1)
    ).scalar()
    return None if found is None else int(found)


def open_from_flag(
    conn: Connection | Session,
    *,
    benchmark_id: int,
    task_id: int,
    criterion_id: int,
    author: str,
    text: str,
    now: datetime,
    judgment_id: int | None = None,
) -> int:
    """Ask ``text`` on a criterion inside the caller's transaction: join the criterion's
    open thread, or open one. Returns the thread's id.

    With ``judgment_id`` (the judgment whose unclear note this is) a note edited while the
    thread is open *revises* the question that judgment asked (and the thread's first
    question when it was that one) instead of adding another: the grading app saves a
    note after every pause in typing. Nothing is added when ``author``'s last question
    in the open thread is ``text`` already (the same note on another response)."""
    found = _open_thread(conn, criterion_id)
    if found is None:
        try:
            # a savepoint: when another flagger opened the criterion's thread in between,
            # the one-open-thread index refuses this insert and the transaction goes on
            with conn.begin_nested():
                cid = int(
                    conn.execute(
                        insert(_C)
                        .values(
                            benchmark_id=benchmark_id,
                            task_id=task_id,
                            criterion_id=criterion_id,
                            status="open",
                            question=text,
                            asked_by=author,
                            asked_at=now,
                            updated_at=now,
                        )
                        .returning(_C.c.id)
                    ).scalar_one()
                )
        except IntegrityError:
            found = _open_thread(conn, criterion_id)
            if found is None:  # pragma: no cover - refused for another reason
                raise
    if found is not None:
        cid = int(found)
        if judgment_id is not None:
            mine = conn.execute(
                select(_M.c.id)
                .where(
                    _M.c.clarification_id == cid,
                    _M.c.judgment_id == judgment_id,
                    _M.c.kind == "question",
                )
                .order_by(_M.c.id.desc())
                .limit(1)
            ).scalar()
            if mine is not None:
                first = conn.execute(
                    select(_M.c.id).where(_M.c.clarification_id == cid).order_by(_M.c.id).limit(1)
                ).scalar()
                conn.execute(update(_M).where(_M.c.id == mine).values(text=text))
                if first == mine:
                    conn.execute(
                        update(_C).where(_C.c.id == cid).values(question=text, updated_at=now)
                    )
                return cid
        last = conn.execute(
            select(_M.c.text)
            .where(_M.c.clarification_id == cid, _M.c.author == author, _M.c.kind == "question")
            .order_by(_M.c.id.desc())
            .limit(1)
        ).scalar()
        if last == text:
            return cid
    conn.execute(
        insert(_M).values(
            clarification_id=cid,
            kind="question",
            author=author,
            text=text,
            created_at=now,
            judgment_id=judgment_id,
        )
    )
    return cid


def ask(
    db: Database,
    benchmark: str | None,
    task: str,
    criterion: str,
    text: str,
    *,
    actor: str | None,
    now: datetime | None = None,
) -> Clarification:
    """Ask a question on one criterion without a judgment (joins its open thread).

    Raises:
        ClarificationError: an empty text, or no one to record as asking.
        NotFoundError: no such task or criterion (or, for a grader in team mode, not on
            one of their assigned tasks).
    """
    question = _clean(text, "question")
    who, _role = _who(db, actor)
    bench = Repository(db).benchmark(benchmark)
    when = now or datetime.now(UTC)
    with db.write() as s:
        row = s.execute(
            select(m.Task.id, m.Criterion.id)
            .join(m.Criterion, m.Criterion.task_id == m.Task.id)
            .where(
                m.Task.benchmark_id == bench.id,
                m.Task.external_id == task,
                m.Criterion.external_id == criterion,
            )
        ).first()
        if row is None:
            raise NotFoundError(f"no criterion {criterion!r} in task {task!r} of {bench.name!r}")
        cid = open_from_flag(
            s,
            benchmark_id=bench.id,
            task_id=int(row[0]),
            criterion_id=int(row[1]),
            author=who,
            text=question,
            now=when,
        )
    return get(db, cid)


# -- answering (the coordinator's side) ----------------------------------------------------
def _locked(s: Session, clarification_id: int, db: Database) -> m.Clarification:
    q = select(m.Clarification).where(m.Clarification.id == clarification_id)
    if not db.is_sqlite:
        q = q.with_for_update()
    row = s.scalar(q)
    if row is None:
        raise NotFoundError(f"no clarification {clarification_id}")
    return row


def answer(
    db: Database,
    clarification_id: int,
    text: str,
    *,
    actor: str | None,
    recheck: bool = False,
    now: datetime | None = None,
) -> Answered:
    """Answer a thread (see the module docstring); with ``recheck`` reopen the finished
    queue items of the graders whose verdict on the criterion predates the answer.

    Raises:
        ClarificationError: an empty text, a closed thread, a re-check asked by someone
            other than a coordinator in team mode.
        NotFoundError: no such clarification.
    """
    reply = _clean(text, "answer")
    who, role = _who(db, actor)
    if role == "grader":
        raise ClarificationError("only a coordinator or an adjudicator answers clarifications")
    if recheck and role not in (None, "coordinator"):
        raise ClarificationError(
            "only a coordinator may ask graders to re-check (it reopens their work); "
            "answer without --recheck"
        )
    when = now or datetime.now(UTC)
    reopened: list[int] = []
    graders: set[str] = set()
    with db.write() as s:
        row = _locked(s, clarification_id, db)
        if row.status == "closed":
            raise ClarificationError(f"clarification {clarification_id} is closed")
        row.status = "answered"
        row.answer = reply
        row.answered_by = who
        row.answered_at = when
        row.updated_at = when
        s.add(
            m.ClarificationMessage(
                clarification_id=row.id, kind="answer", author=who, text=reply, created_at=when
            )
        )
        if recheck:
            verdicts = s.execute(
                select(m.Assignment, m.Grader.name, m.Judgment.updated_at)
                .join(
                    m.Judgment,
                    (m.Judgment.grader_id == m.Assignment.grader_id)
                    & (m.Judgment.response_id == m.Assignment.response_id),
                )
                .join(m.Grader, m.Grader.id == m.Assignment.grader_id)
                .where(
                    m.Judgment.criterion_id == row.criterion_id,
                    m.Grader.kind == "human",
                    (m.Judgment.met.is_not(None)) | (m.Judgment.level.is_not(None)),
                )
                .order_by(m.Assignment.id)
            ).all()
            for a, grader, given in verdicts:
                given_at = _aware(given)
                if given_at is not None and given_at > when:
                    continue
                graders.add(str(grader))
                if a.status not in _FINAL:
                    continue  # still at work on it: the answer is beside the rubric
                reopen_assignment(
                    s, a, actor=who, source=RECHECK_SOURCE, when=when,
                    note={"clarification": clarification_id},
                )  # fmt: skip
                reopened.append(int(a.id))
    return Answered(get(db, clarification_id), tuple(reopened), tuple(sorted(graders)))


def reopen_assignment(
    s: Session,
    a: m.Assignment,
    *,
    actor: str | None,
    source: str,
    when: datetime,
    note: dict[str, Any],
) -> None:
    """Put a finished queue item back in progress for someone else's reason (a re-check
    after an answer, a rubric revision), recording the state it leaves like a grader's
    own reopening (entity :data:`REOPEN_ENTITY`, plus ``note``: why)."""
    earlier = s.scalar(
        select(m.Revision.revision)
        .where(m.Revision.entity == REOPEN_ENTITY, m.Revision.entity_id == a.id)
        .order_by(m.Revision.revision.desc())
        .limit(1)
    )
    s.add(
        m.Revision(
            entity=REOPEN_ENTITY,
            entity_id=a.id,
            revision=int(earlier or 0) + 1,
            data={
                "status": a.status,
                "submitted_at": _iso(a.submitted_at),
                "skip_reason": a.skip_reason,
                **note,
            },
            actor=actor,
            source=source,
            changed_at=when,
        )
    )
    s.execute(
        update(m.Assignment)
        .where(m.Assignment.id == a.id)
        .values(status=AssignmentStatus.IN_PROGRESS.value, submitted_at=None, updated_at=when)
    )


def close(
    db: Database, clarification_id: int, *, actor: str | None, now: datetime | None = None
) -> Clarification:
    """Close a thread (answered or not): it takes no more questions; a new one opens."""
    _who_name, role = _who(db, actor)
    if role == "grader":
        raise ClarificationError("only a coordinator or an adjudicator closes clarifications")
    when = now or datetime.now(UTC)
    with db.write() as s:
        row = _locked(s, clarification_id, db)
        row.status = "closed"
        row.updated_at = when
    return get(db, clarification_id)


# -- reading -------------------------------------------------------------------------------
def _threads(s: Session, where: list[Any]) -> list[Clarification]:
    rows = s.execute(
        select(
            m.Clarification,
            m.Benchmark.name,
            m.Task.external_id,
            m.Criterion.external_id,
            m.Criterion.text,
        )
        .join(m.Benchmark, m.Benchmark.id == m.Clarification.benchmark_id)
        .join(m.Task, m.Task.id == m.Clarification.task_id)
        .join(m.Criterion, m.Criterion.id == m.Clarification.criterion_id)
        .where(*where)
        .order_by(m.Clarification.id)
    ).all()
    ids = [r[0].id for r in rows]
    messages: dict[int, list[Message]] = {i: [] for i in ids}
    if ids:
        for msg in s.scalars(
            select(m.ClarificationMessage)
            .where(m.ClarificationMessage.clarification_id.in_(ids))
            .order_by(m.ClarificationMessage.id)
        ):
            messages[msg.clarification_id].append(
                Message(msg.kind, msg.author, msg.text, _aware(msg.created_at))
            )
    return [
        Clarification(
            id=c.id,
            benchmark=str(bench),
            task=str(task),
            criterion=str(crit),
            criterion_text=str(crit_text),
            status=c.status,
            question=c.question,
            asked_by=c.asked_by,
            asked_at=_aware(c.asked_at),
            answer=c.answer,
            answered_by=c.answered_by,
            answered_at=_aware(c.answered_at),
            messages=tuple(messages[c.id]),
        )
        for c, bench, task, crit, crit_text in rows
    ]


def list_clarifications(
    db: Database, benchmark: str | None = None, *, status: str | None = None
) -> list[Clarification]:
    """Every thread of the benchmark (oldest first), or those with ``status``."""
    if status is not None and status not in STATUSES:
        raise ClarificationError(f"unknown status {status!r}: one of {', '.join(STATUSES)}")
    bench = Repository(db).benchmark(benchmark)
    where: list[Any] = [m.Clarification.benchmark_id == bench.id]
    if status is not None:
        where.append(m.Clarification.status == status)
    with db.read() as s:
        return _threads(s, where)


def get(db: Database, clarification_id: int) -> Clarification:
    with db.read() as s:
        found = _threads(s, [m.Clarification.id == clarification_id])
    if not found:
        raise NotFoundError(f"no clarification {clarification_id}")
    return found[0]


def answered_for_criterion(
    db: Database, benchmark_id: int, task: str, criterion: str
) -> list[Guideline]:
    """The answers on one criterion, oldest first: only columns a grader may read."""
    with db.read() as s:
        rows = s.execute(
            select(_C.c.id, _C.c.answer, _C.c.answered_by, _C.c.answered_at)
            .join(m.Criterion, m.Criterion.id == _C.c.criterion_id)
            .join(m.Task, m.Task.id == m.Criterion.task_id)
            .where(
                m.Task.benchmark_id == benchmark_id,
                m.Task.external_id == task,
                m.Criterion.external_id == criterion,
                _C.c.answer.is_not(None),
                _C.c.status != "open",
            )
            .order_by(_C.c.answered_at, _C.c.id)
        ).all()
    return [Guideline(int(i), str(a), by, _aware(at)) for i, a, by, at in rows]


def benchmark_instructions(db: Database, benchmark_id: int) -> str | None:
    """The benchmark's general grading instructions (benchmark.json ``instructions``)."""
    with db.read() as s:
        value = s.scalar(select(m.Benchmark.instructions).where(m.Benchmark.id == benchmark_id))
    return value if value and value.strip() else None
