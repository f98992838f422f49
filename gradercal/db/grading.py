"""Persistence for expert grading: graders, queues, judgments as they are entered, task reviews.

The desktop app (``gradercal.ui``) reads and writes everything through
:class:`GradingStore`; nothing above ``gradercal.db`` writes SQL.

Addressing, chosen for blinding:

* graders by **name**, tasks and criteria by their **external ids** (as in the benchmark
  files), as everywhere else in gradercal;
* responses only through their **assignment id** — an opaque handle into one grader's
  queue. A response's external id and model are never handed out by this module
  (external ids often carry the model's name, e.g. ``T01-atlas``). A grader sees a
  response as a per-grader code, ``Response A``, ``Response B``, … within its task.

Queue order: when a grader has no assignment in a benchmark yet, :meth:`GradingStore.ensure_queue`
creates one for every response (a grader with assignments, e.g. from an assignment
design, keeps exactly those). Tasks come in a per-grader random order, and the
responses of a task one after another, again in a per-grader random order; both orders
come from keyed sha256 hashes of (benchmark, grader, seed, id), so they are the same
on every machine and every Python version and never change once made. The codes are
the rank of a response's assignment (by queue position) within its task, so they are
stable too: assignments added later get later letters.

A verdict flagged unclear with a new or changed note also asks a question on the
criterion in the same transaction (:mod:`gradercal.db.clarifications`).

Every write commits at once. Changing a judgment or a task review first copies the
old value into ``revision`` (``source="ui"``, ``actor`` = the grader), so nothing a
grader entered is ever lost. Judges' verdicts and other graders' judgments are never
read by this module.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import (
    Select,
    Table,
    bindparam,
    case,
    func,
    insert,
    literal,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gradercal.db import models as m

# re-exported: the ``revision.entity`` of the rows GradingStore.reopen keeps
from gradercal.db.clarifications import REOPEN_ENTITY as REOPEN_ENTITY
from gradercal.db.clarifications import (
    answered_for_criterion,
    benchmark_instructions,
    open_from_flag,
)
from gradercal.db.repo import Repository, _task_from_row, judgment_snapshot
from gradercal.db.session import Database
from gradercal.db.versions import verdict_write
from gradercal.errors import ConflictError, NotFoundError, Problem, ValidationError
from gradercal.model import (
    LIKERT,
    REVIEW_DIMENSIONS,
    AssignmentStatus,
    CriterionKind,
    GraderKind,
    ReviewDimension,
    Task,
)

__all__ = [
    "LIKERT",
    "REVIEW_DIMENSIONS",
    "GraderInfo",
    "GradingItem",
    "GradingStore",
    "Guidelines",
    "JudgmentValue",
    "JudgmentVersion",
    "QueueItem",
    "QueueProgress",
    "ReviewDimension",
    "ReviewItem",
    "ReviewTask",
    "RevisedSinceError",
    "SavedJudgment",
    "StaleJudgmentError",
    "TaskReviewValue",
    "blinding_code",
]

#: Assignment states in which the grader is done with a response.
FINAL_STATUSES = frozenset({AssignmentStatus.SUBMITTED.value, AssignmentStatus.SKIPPED.value})


def blinding_code(rank: int) -> str:
    """``Response A`` for rank 0, … ``Response Z``, ``Response AA``, ``Response AB`` …"""
    letters = string.ascii_uppercase
    n = rank + 1
    out = ""
    while n > 0:
        n, rem = divmod(n - 1, 26)
        out = letters[rem] + out
    return f"Response {out}"


@dataclass(frozen=True)
class GraderInfo:
    id: int
    name: str
    kind: str


@dataclass(frozen=True)
class JudgmentValue:
    """What a grader entered for one criterion. ``met`` None and ``level`` None = not answered.

    For criteria with more than two levels, ``level`` is the answer (0 = not met,
    ``levels - 1`` = met, in between = partial) and ``met`` is ``level == levels - 1``.
    """

    met: bool | None = None
    level: int | None = None
    rationale: str | None = None
    unclear: bool = False
    unclear_note: str | None = None

    @property
    def answered(self) -> bool:
        return self.met is not None or self.level is not None

    def normalized(self) -> JudgmentValue:
        """Blank texts as None."""
        return JudgmentValue(
            met=self.met,
            level=self.level,
            rationale=_text_or_none(self.rationale),
            unclear=bool(self.unclear),
            unclear_note=_text_or_none(self.unclear_note),
        )


@dataclass(frozen=True)
class JudgmentVersion:
    """What a view last saw of one judgment: its ``revision`` (0 = none yet) and the
    ``adjudication`` revision of the same criterion of the same response (0 = none).

    Passed back to :meth:`GradingStore.save_judgment` as ``expected`` for an optimistic
    check: a write over a value someone else changed in between is refused.
    """

    revision: int = 0
    adjudication: int = 0


class StaleJudgmentError(ConflictError):
    """The judgment (or its adjudication) changed elsewhere since the view loaded it.

    Nothing was written. ``current`` is the version now in the database and
    ``current_value`` the judgment's value there (None when it has none); save again
    with ``expected=current`` to overwrite on purpose.
    """

    def __init__(
        self,
        assignment_id: int,
        criterion_id: str,
        expected: JudgmentVersion,
        current: JudgmentVersion,
        current_value: JudgmentValue | None,
        changed_by: str | None,
    ) -> None:
        self.assignment_id = assignment_id
        self.criterion_id = criterion_id
        self.expected = expected
        self.current = current
        self.current_value = current_value
        self.changed_by = changed_by
        if current.adjudication != expected.adjudication:
            what = f"criterion {criterion_id} was adjudicated since you opened this response"
        else:
            via = {"packet": "a merged packet", "resolve": "a conflict resolution"}.get(
                changed_by or "", "another window or person"
            )
            what = (
                f"your verdict on criterion {criterion_id} was changed elsewhere ({via}) "
                "since you opened this response"
            )
        super().__init__(f"{what}: reload to see the current value, or overwrite it")

    @property
    def adjudicated(self) -> bool:
        return self.current.adjudication != self.expected.adjudication


class RevisedSinceError(ConflictError):
    """The criteria were revised (a change that can change a verdict) since the task
    version the grader's window shows: a verdict given there would be given under a
    wording the grader did not see, so nothing was written.

    ``criterion_ids`` are the criteria changed since ``seen_version`` (for a save, the
    one saved); ``task_version`` is the task's version now. Reload the item: the
    criteria then show what changed, and a verdict given again is current.
    """

    def __init__(
        self,
        assignment_id: int,
        criterion_ids: tuple[str, ...],
        seen_version: int,
        task_version: int,
        *,
        saving: bool = True,
    ) -> None:
        self.assignment_id = assignment_id
        self.criterion_ids = criterion_ids
        self.seen_version = seen_version
        self.task_version = task_version
        names = ", ".join(criterion_ids)
        what = (
            f"criterion {names} was revised"
            if len(criterion_ids) == 1
            else f"criteria {names} were revised"
        )
        done = "nothing was saved" if saving else "the response was not submitted"
        super().__init__(
            f"{what} since you opened this response (version {seen_version} → "
            f"{task_version}): {done}; read {'it' if len(criterion_ids) == 1 else 'them'} "
            "as it reads now and give your verdict again"
        )

    @property
    def criterion_id(self) -> str:
        """The first criterion changed (the one saved, for a refused save)."""
        return self.criterion_ids[0]


@dataclass(frozen=True)
class SavedJudgment:
    """The stored state of a judgment after :meth:`GradingStore.save_judgment`."""

    judgment_id: int
    value: JudgmentValue
    revision: int
    changed: bool
    task_version: int = 1
    """The task's version now (what the verdict is given under when it was written): a
    window showing an older version should reload the item."""


@dataclass(frozen=True)
class QueueItem:
    """One response in a grader's queue, as the grader may see it (blinded)."""

    assignment_id: int
    position: int
    task_id: str
    code: str
    status: str
    time_spent_s: float
    skip_reason: str | None
    n_artifacts: int
    n_criteria: int
    n_answered: int

    @property
    def done(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def label(self) -> str:
        return f"{self.task_id} · {self.code}"


@dataclass(frozen=True)
class QueueProgress:
    total: int
    submitted: int
    skipped: int
    in_progress: int
    pending: int
    time_spent_s: float

    @property
    def done(self) -> int:
        return self.submitted + self.skipped


@dataclass(frozen=True)
class GradingItem:
    """Everything the grading view shows for one queue item — and nothing that unblinds it.

    ``judgments`` holds only this grader's own judgments, by criterion id.
    """

    item: QueueItem
    task: Task
    response_text: str
    answer: Any
    judgments: Mapping[str, JudgmentValue]
    pass_threshold: float
    versions: Mapping[str, JudgmentVersion] = field(default_factory=dict)
    """By criterion id, the version of what was loaded (for ``save_judgment(expected=…)``);
    criteria without a judgment or adjudication are absent (version 0, 0)."""
    task_version: int = 1
    """The version of :attr:`task` (1 until the task is first revised)."""
    stale: Mapping[str, int] = field(default_factory=dict)
    """By criterion id, the task version of this grader's verdicts that a revision made
    stale (given before the criterion last changed in a way that can change a verdict):
    shown with what changed, they count as unanswered until given again."""


@dataclass(frozen=True)
class Guidelines:
    """What the Guidelines panel shows beside one criterion: the benchmark's grading
    instructions and the answered clarifications of the criterion, oldest first."""

    instructions: str | None
    answers: tuple[str, ...]


@dataclass(frozen=True)
class TaskReviewValue:
    """A reviewer's survey answers on one task: ``answers`` maps dimension key → 1…5."""

    answers: Mapping[str, int] = field(default_factory=dict)
    comment: str | None = None
    revision: int = 0

    @property
    def n_answered(self) -> int:
        return len(self.answers)


@dataclass(frozen=True)
class ReviewTask:
    task_id: str
    position: int
    n_answered: int
    has_comment: bool


@dataclass(frozen=True)
class ReviewItem:
    task: Task
    review: TaskReviewValue
    position: int
    total: int


def _text_or_none(text: str | None) -> str | None:
    """``text`` without NUL characters (PostgreSQL text cannot hold them), blank → None."""
    if text is None:
        return None
    text = text.replace("\x00", "")
    return text if text.strip() else None


def _order_key(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


_JUDGMENT_COLUMNS = ("met", "level", "rationale", "unclear", "unclear_note")

#: Everything :meth:`GradingStore.save_judgment` needs, in one query: the assignment,
#: the criterion (by external id, within the response's task) and the current judgment.
_SAVE_CONTEXT = (
    select(
        m.Assignment.grader_id,
        m.Assignment.response_id,
        m.Assignment.status,
        m.Response.benchmark_id,
        m.Response.task_id,
        m.Grader.name,
        m.Criterion.id.label("criterion_pk"),
        m.Criterion.kind,
        m.Criterion.levels,
        m.Criterion.verdict_version,
        m.Task.version.label("current_version"),
        m.Judgment.task_version,
        m.Judgment.id,
        m.Judgment.revision,
        m.Judgment.source,
        m.Judgment.updated_at,
        m.Judgment.confidence,
        *[getattr(m.Judgment, c) for c in _JUDGMENT_COLUMNS],
    )
    .join(m.Grader, m.Grader.id == m.Assignment.grader_id)
    .join(m.Response, m.Response.id == m.Assignment.response_id)
    .join(m.Task, m.Task.id == m.Response.task_id)
    .join(
        m.Criterion,
        (m.Criterion.task_id == m.Response.task_id) & (m.Criterion.external_id == bindparam("cid")),
    )
    .outerjoin(
        m.Judgment,
        (m.Judgment.grader_id == m.Assignment.grader_id)
        & (m.Judgment.response_id == m.Assignment.response_id)
        & (m.Judgment.criterion_id == m.Criterion.id),
    )
    .where(m.Assignment.id == bindparam("aid"))
)
_JUDGMENT_TABLE = cast(Table, m.Judgment.__table__)
_INSERT_JUDGMENT = insert(_JUDGMENT_TABLE).returning(_JUDGMENT_TABLE.c.id)
_UPDATE_JUDGMENT = (
    update(_JUDGMENT_TABLE)
    .where(_JUDGMENT_TABLE.c.id == bindparam("jid"))
    .values(
        {
            _JUDGMENT_TABLE.c[c]: bindparam(c)
            for c in (
                *_JUDGMENT_COLUMNS,
                "confidence",
                "revision",
                "source",
                "updated_at",
                "task_version",
            )
        }
    )
)
_INSERT_REVISION = insert(cast(Table, m.Revision.__table__))

#: Tasks kept as domain objects by one store (an import never changes a stored task).
TASK_CACHE_SIZE = 256


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
_ADJUDICATION_REVISION = select(m.Adjudication.revision).where(
    m.Adjudication.response_id == bindparam("rid"),
    m.Adjudication.criterion_id == bindparam("cpk"),
)
_ASSIGNMENT_TABLE = cast(Table, m.Assignment.__table__)
_LOCK_ASSIGNMENT = (
    select(_ASSIGNMENT_TABLE.c.id)
    .where(_ASSIGNMENT_TABLE.c.id == bindparam("aid"))
    .with_for_update()
)
_TOUCH_ASSIGNMENT = (
    update(_ASSIGNMENT_TABLE)
    .where(_ASSIGNMENT_TABLE.c.id == bindparam("aid"))
    .values(
        {
            _ASSIGNMENT_TABLE.c.status: bindparam("status"),
            _ASSIGNMENT_TABLE.c.updated_at: bindparam("updated_at"),
            _ASSIGNMENT_TABLE.c.submitted_at: case(
                (bindparam("keep"), _ASSIGNMENT_TABLE.c.submitted_at), else_=literal(None)
            ),
        }
    )
)


class GradingStore:
    """Reads and writes everything the grading app needs, one short transaction per call."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.repo = Repository(db)
        # Writers take SQLite's write lock when they begin (see Database.write).
        self._write_engine = db.engine.execution_options(sqlite_begin="IMMEDIATE")
        self._tasks: dict[tuple[int, int], Task] = {}
        self._sees_adjudications: bool | None = None
        self._team_user: tuple[str | None] | None = None
        #: benchmark name → (id, grading instructions); imports do not change them often
        self._instructions: dict[str, tuple[int, str | None]] = {}

    def team_user(self) -> str | None:
        """The login role this session grades as in team mode (PostgreSQL roles, see
        :mod:`gradercal.db.team`); None outside team mode, where anyone may be chosen."""
        if self._team_user is None:
            from gradercal.db.team import identity

            who = identity(self.db)
            self._team_user = (None if who is None else who.user,)
        return self._team_user[0]

    def sees_adjudications(self) -> bool:
        """Whether this session may read adjudications. Not so for a grader in team mode
        (:mod:`gradercal.db.team`): their views then carry adjudication version 0 and
        their queue is the one the coordinator assigned."""
        if self._sees_adjudications is None:
            if self.db.is_sqlite:
                self._sees_adjudications = True
            else:
                with self.db.engine.connect() as conn:
                    self._sees_adjudications = bool(
                        conn.execute(
                            text("SELECT has_table_privilege('adjudication', 'SELECT')")
                        ).scalar()
                    )
        return self._sees_adjudications

    # -- benchmarks and graders -----------------------------------------------------
    def benchmark_names(self) -> list[str]:
        with self.db.read() as s:
            return list(s.scalars(select(m.Benchmark.name).order_by(m.Benchmark.name)))

    def benchmark_name(self, benchmark: str | None = None) -> str:
        """The benchmark's name (the only one when ``benchmark`` is None)."""
        return self.repo.benchmark(benchmark).name

    def graders(self) -> list[GraderInfo]:
        """Human graders, by name. Judges are never listed here."""
        with self.db.read() as s:
            rows = s.execute(
                select(m.Grader.id, m.Grader.name, m.Grader.kind)
                .where(m.Grader.kind == GraderKind.HUMAN.value)
                .order_by(m.Grader.name)
            ).all()
        return [GraderInfo(gid, name, kind) for gid, name, kind in rows]

    def grader(self, name: str) -> GraderInfo:
        with self.db.read() as s:
            row = s.execute(
                select(m.Grader.id, m.Grader.name, m.Grader.kind).where(m.Grader.name == name)
            ).first()
        if row is None or row.kind != GraderKind.HUMAN.value:
            raise NotFoundError(f"no human grader named {name!r}")
        return GraderInfo(row.id, row.name, row.kind)

    def create_grader(self, name: str) -> GraderInfo:
        """The human grader called ``name``, created when new. A judge's name is refused."""
        clean = " ".join(name.replace("\x00", " ").split())
        if not clean:
            raise ValidationError([Problem("grader", None, "name", "must not be empty")])
        if len(clean) > 200:
            raise ValidationError([Problem("grader", None, "name", "at most 200 characters")])
        for attempt in (1, 2):
            try:
                with self.db.write() as s:
                    row = s.execute(
                        select(m.Grader.id, m.Grader.kind).where(m.Grader.name == clean)
                    ).first()
                    if row is not None:
                        if row.kind != GraderKind.HUMAN.value:
                            raise ConflictError(
                                f"{clean!r} is the name of a {row.kind}; choose another name"
                            )
                        return GraderInfo(row.id, clean, row.kind)
                    gid = s.execute(
                        insert(m.Grader)
                        .values(name=clean, kind=GraderKind.HUMAN.value, parameters={})
                        .returning(m.Grader.id)
                    ).scalar_one()
                    return GraderInfo(gid, clean, GraderKind.HUMAN.value)
            except IntegrityError:  # created by someone else in between
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _grader_id(self, s: Session, name: str) -> int:
        row = s.execute(select(m.Grader.id, m.Grader.kind).where(m.Grader.name == name)).first()
        if row is None or row.kind != GraderKind.HUMAN.value:
            raise NotFoundError(f"no human grader named {name!r}")
        return int(row.id)

    # -- queue --------------------------------------------------------------------------
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

    # -- one response ---------------------------------------------------------------------
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

    def _cached_task(self, s: Session, task_pk: int, version: int) -> Task:
        """A task as a domain object, cached by its version (a revision makes a new one)."""
        task = self._tasks.get((task_pk, version))
        if task is None:
            task = self._task(s, task_pk)
            if len(self._tasks) >= TASK_CACHE_SIZE:
                self._tasks.pop(next(iter(self._tasks)))
            self._tasks[(task_pk, version)] = task
        return task

    @staticmethod
    def _task(s: Session, task_pk: int) -> Task:
        t = s.get(m.Task, task_pk)
        if t is None:
            raise NotFoundError(f"no task {task_pk}")
        crits = list(
            s.scalars(
                select(m.Criterion)
                .where(m.Criterion.task_id == task_pk)
                .order_by(m.Criterion.position, m.Criterion.id)
            )
        )
        arts = list(
            s.scalars(
                select(m.Artifact)
                .where(m.Artifact.task_id == task_pk)
                .order_by(m.Artifact.position, m.Artifact.id)
            )
        )
        return _task_from_row(t, crits, arts)

    def save_judgment(
        self,
        assignment_id: int,
        criterion_id: str,
        value: JudgmentValue,
        *,
        expected: JudgmentVersion | None = None,
        seen_version: int | None = None,
    ) -> SavedJudgment:
        """Store the grader's verdict on one criterion now (one committed transaction).

        A changed value first copies the old one into ``revision`` and increments the
        judgment's ``revision``; an unchanged value writes nothing — except that the
        same answered value given again on a stale verdict confirms it (written like a
        change, under the current version: :func:`gradercal.db.versions.verdict_write`).
        The assignment moves from pending to in progress, and a submitted one back to in
        progress when a verdict is cleared.

        ``seen_version`` is the task version the grader's window shows
        (:attr:`GradingItem.task_version`). When the criterion was revised since in a
        way that can change a verdict (its ``verdict_version`` is newer), the verdict
        was given under a wording the grader did not see: nothing is written and
        :class:`RevisedSinceError` says so. Checked under the row lock, so a revision
        committed between the load and the save cannot slip through. Without it (None)
        the verdict is taken as given under the current version.

        With ``expected`` (the version the view loaded, :attr:`GradingItem.versions`) the
        write is optimistic: when the judgment's revision or the criterion's adjudication
        changed in between (another window, a packet merge, a coordinator), nothing is
        written and :class:`StaleJudgmentError` says so — unless the database already
        holds exactly ``value``. The check runs under the row lock, so it cannot race.

        Raises:
            NotFoundError: unknown assignment, or a criterion not in the response's task.
            ValidationError: an auto criterion, or a level outside the criterion's scale.
            StaleJudgmentError: ``expected`` is older than the database.
            RevisedSinceError: the criterion was revised since ``seen_version``.
        """
        for attempt in (1, 2):
            try:
                return self._save_judgment(
                    assignment_id, criterion_id, value.normalized(), expected, seen_version
                )
            except IntegrityError:  # another client inserted the same row in between
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _save_judgment(
        self,
        assignment_id: int,
        criterion_id: str,
        value: JudgmentValue,
        expected: JudgmentVersion | None = None,
        seen_version: int | None = None,
    ) -> SavedJudgment:
        # The grader's hot path (one call per key press): prepared Core statements on one
        # connection, no ORM unit of work, so the commit stays within a few milliseconds.
        with self._write_engine.begin() as conn:
            if not self.db.is_sqlite:
                # Serialize writers of one queue item before reading the current value (on
                # SQLite, BEGIN IMMEDIATE already did), so that two windows saving the same
                # judgment can never both write revision r+1 (a lost update).
                conn.execute(_LOCK_ASSIGNMENT, {"aid": assignment_id})
            ctx = conn.execute(_SAVE_CONTEXT, {"aid": assignment_id, "cid": criterion_id}).first()
            if ctx is None:
                raise NotFoundError(f"no criterion {criterion_id!r} for assignment {assignment_id}")
            value = _checked(value, criterion_id, ctx.kind, int(ctx.levels))
            current_version = int(ctx.current_version)
            if seen_version is not None and seen_version < int(ctx.verdict_version):
                raise RevisedSinceError(
                    assignment_id, (criterion_id,), seen_version, current_version
                )
            now = m.utcnow()
            values = {c: getattr(value, c) for c in _JUDGMENT_COLUMNS}
            if expected is not None:
                _check_version(
                    conn,
                    ctx,
                    assignment_id,
                    criterion_id,
                    values,
                    expected,
                    adjudications=self.sees_adjudications(),
                )
            write = verdict_write(
                stored_version=None if ctx.id is None else int(ctx.task_version),
                same=all(getattr(ctx, c) == values[c] for c in _JUDGMENT_COLUMNS),
                given_under=current_version,
                verdict_version=int(ctx.verdict_version),
                answered=value.answered,
            )
            if write == "new":
                jid = conn.execute(
                    _INSERT_JUDGMENT,
                    {
                        "grader_id": ctx.grader_id,
                        "response_id": ctx.response_id,
                        "criterion_id": ctx.criterion_pk,
                        "confidence": None,
                        "source": "ui",
                        "revision": 1,
                        "created_at": now,
                        "updated_at": now,
                        "task_version": current_version,
                        **values,
                    },
                ).scalar_one()
                revision, changed = 1, True
            elif write == "unchanged":
                jid, revision, changed = int(ctx.id), int(ctx.revision), False
            else:
                # a new value, or the same one confirmed under a revised criterion (no
                # longer stale; the history keeps the version it was first given under)
                # The previous value goes to ``revision`` exactly as Repository keeps it.
                conn.execute(
                    _INSERT_REVISION,
                    {
                        "entity": "judgment",
                        "entity_id": ctx.id,
                        "revision": ctx.revision,
                        "data": judgment_snapshot(ctx),
                        "actor": ctx.name,
                        "source": "ui",
                        "changed_at": now,
                    },
                )
                conn.execute(
                    _UPDATE_JUDGMENT,
                    {
                        "jid": ctx.id,
                        "confidence": None,
                        "revision": int(ctx.revision) + 1,
                        "source": "ui",
                        "updated_at": now,
                        "task_version": current_version,
                        **values,
                    },
                )
                jid, revision, changed = int(ctx.id), int(ctx.revision) + 1, True
            asks = value.unclear and value.unclear_note is not None
            if asks and (
                ctx.id is None or not ctx.unclear or ctx.unclear_note != value.unclear_note
            ):
                # a new or changed note asks the coordinators (gradercal.db.clarifications)
                open_from_flag(
                    conn,
                    benchmark_id=int(ctx.benchmark_id),
                    task_id=int(ctx.task_id),
                    criterion_id=int(ctx.criterion_pk),
                    author=str(ctx.name),
                    text=str(value.unclear_note),
                    now=now,
                    judgment_id=jid,
                )
            if changed:
                starts = ctx.status == AssignmentStatus.PENDING.value and value.answered
                reopens = ctx.status == AssignmentStatus.SUBMITTED.value and not value.answered
                status = AssignmentStatus.IN_PROGRESS.value if starts or reopens else ctx.status
                conn.execute(
                    _TOUCH_ASSIGNMENT,
                    {
                        "aid": assignment_id,
                        "status": status,
                        "keep": status == ctx.status,
                        "updated_at": now,
                    },
                )
        return SavedJudgment(jid, value, revision, changed, current_version)

    def judgment_history(self, assignment_id: int, criterion_id: str) -> list[dict[str, Any]]:
        """Every value this grader gave one criterion, oldest first, the current one last."""
        with self.db.read() as s:
            row = s.execute(
                select(m.Judgment)
                .join(
                    m.Assignment,
                    (m.Assignment.grader_id == m.Judgment.grader_id)
                    & (m.Assignment.response_id == m.Judgment.response_id),
                )
                .join(m.Criterion, m.Criterion.id == m.Judgment.criterion_id)
                .where(m.Assignment.id == assignment_id, m.Criterion.external_id == criterion_id)
            ).scalar_one_or_none()
            if row is None:
                return []
            old = s.scalars(
                select(m.Revision)
                .where(m.Revision.entity == "judgment", m.Revision.entity_id == row.id)
                .order_by(m.Revision.revision)
            ).all()
            out = [{"revision": r.revision, **r.data} for r in old]
            current = {c: getattr(row, c) for c in _JUDGMENT_COLUMNS}
            out.append({"revision": row.revision, **current, "source": row.source})
            return out

    # -- assignment state -------------------------------------------------------------------
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
                s.execute(_LOCK_ASSIGNMENT, {"aid": assignment_id})
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
        clean = _text_or_none(reason)
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

    # -- task reviews -------------------------------------------------------------------------
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
        note = _text_or_none(comment)
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

    # -- artifacts ----------------------------------------------------------------------------
    def read_blob(self, sha256: str) -> bytes:
        """An artifact's bytes (safe to call from a worker thread)."""
        return self.repo.read_blob(sha256)


def _check_version(
    conn: Any,
    ctx: Any,
    assignment_id: int,
    criterion_id: str,
    values: Mapping[str, Any],
    expected: JudgmentVersion,
    *,
    adjudications: bool = True,
) -> None:
    """Raise :class:`StaleJudgmentError` when ``expected`` is older than the locked row."""
    if ctx.id is not None and all(getattr(ctx, c) == values[c] for c in _JUDGMENT_COLUMNS):
        return  # the database already holds this value: nothing to overwrite
    adjudication = (
        conn.execute(
            _ADJUDICATION_REVISION, {"rid": ctx.response_id, "cpk": ctx.criterion_pk}
        ).scalar()
        if adjudications
        else 0
    )
    current = JudgmentVersion(0 if ctx.id is None else int(ctx.revision), int(adjudication or 0))
    if current == expected:
        return
    value = (
        None
        if ctx.id is None
        else JudgmentValue(ctx.met, ctx.level, ctx.rationale, bool(ctx.unclear), ctx.unclear_note)
    )
    raise StaleJudgmentError(
        assignment_id,
        criterion_id,
        expected,
        current,
        value,
        None if ctx.id is None else str(ctx.source),
    )


def _checked(value: JudgmentValue, criterion_id: str, kind: str, levels: int) -> JudgmentValue:
    if kind != CriterionKind.JUDGMENT.value:
        raise ValidationError(
            [Problem("rubric", None, criterion_id, "is graded automatically from the answer")]
        )
    top = max(levels, 2) - 1
    if value.level is not None:
        if not 0 <= value.level <= top:
            raise ValidationError(
                [Problem("rubric", None, criterion_id, f"level must be 0…{top}, not {value.level}")]
            )
        met = value.level == top
        if value.met is not None and value.met != met:
            raise ValidationError(
                [Problem("rubric", None, criterion_id, f"met disagrees with level {value.level}")]
            )
        level: int | None = value.level if levels > 2 else None
        return JudgmentValue(met, level, value.rationale, value.unclear, value.unclear_note)
    if value.met is not None and levels > 2:
        return JudgmentValue(
            value.met, top if value.met else 0, value.rationale, value.unclear, value.unclear_note
        )
    return value


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
