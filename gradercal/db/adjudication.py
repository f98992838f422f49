"""What a coordinator needs to adjudicate one criterion of one response, and storing the decision.

:meth:`AdjudicationStore.case` gathers, in one read, everything the adjudication view
shows: the task (prompt, criteria, artifacts), the response (text, structured answer,
model), the criterion, every current judgment on it — experts' and judges' — with
rationale, confidence and prompt version, the current adjudication and its earlier
values. :meth:`AdjudicationStore.record` validates a decision and stores it through
:meth:`gradercal.db.repo.Repository.adjudicate`, which writes the ``adjudication`` table
only (and its history in ``revision``): the graders' judgments are never touched. A
decision is made on the case as read: when another adjudicator decided the unit in
between (even at the same moment), it is refused with theirs shown
(:class:`StaleAdjudicationError`), never silently replaced.

This is coordinator data: it unblinds model names and other graders' verdicts, so the
grading app's views (:mod:`gradercal.db.grading`) never call it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from gradercal.db import models as m
from gradercal.db.grading import GradingStore
from gradercal.db.repo import Repository, StaleAdjudicationError
from gradercal.db.session import Database
from gradercal.db.versions import is_current
from gradercal.errors import NotFoundError, Problem, ValidationError
from gradercal.model import Criterion, GraderKind, Task

#: Longest adjudicator name (the column's size).
MAX_ADJUDICATOR = 200
#: Longest adjudication note accepted from the app.
MAX_NOTE = 20_000
VERDICTS = ("met", "partial", "not_met")


@dataclass(frozen=True)
class GraderVerdict:
    """One grader's current judgment on the criterion being adjudicated."""

    grader: str
    kind: str  # "human" | "judge"
    met: bool | None
    level: int | None
    confidence: float | None
    rationale: str | None
    unclear: bool
    unclear_note: str | None
    updated_at: datetime | None
    #: judges only: the model and the prompt version's name or hash prefix
    model: str | None = None
    prompt_version: str | None = None

    @property
    def is_judge(self) -> bool:
        return self.kind == GraderKind.JUDGE


@dataclass(frozen=True)
class AdjudicationValue:
    """An adjudication as stored now (``revision`` > 1 means it was revised) or earlier."""

    met: bool
    level: int | None
    note: str | None
    adjudicator: str
    revision: int
    at: datetime | str | None


@dataclass(frozen=True)
class AdjudicationCase:
    benchmark: str
    task: Task
    response_id: str
    model: str
    response_text: str
    answer: Any
    criterion: Criterion
    verdicts: tuple[GraderVerdict, ...]
    current: AdjudicationValue | None
    #: earlier values of the adjudication, oldest first
    history: tuple[AdjudicationValue, ...]

    @property
    def experts(self) -> tuple[GraderVerdict, ...]:
        return tuple(v for v in self.verdicts if not v.is_judge)

    @property
    def judges(self) -> tuple[GraderVerdict, ...]:
        return tuple(v for v in self.verdicts if v.is_judge)

    @property
    def allows_partial(self) -> bool:
        return self.criterion.levels > 2


def verdict_to_value(criterion: Criterion, verdict: str) -> tuple[bool, int | None]:
    """(met, level) stored for ``verdict`` on ``criterion`` — the grading app's convention:
    two-level criteria store ``met`` only; criteria with more levels store the level too
    (partial = the middle level, counted as not met)."""
    top = max(criterion.levels, 2) - 1
    if verdict == "met":
        return True, (top if criterion.levels > 2 else None)
    if verdict == "not_met":
        return False, (0 if criterion.levels > 2 else None)
    if verdict == "partial":
        if criterion.levels <= 2:
            raise ValidationError(
                [Problem("adjudication", None, "verdict", "this criterion has no partial level")]
            )
        return False, (top // 2 if top > 1 else 1)
    raise ValidationError(
        [Problem("adjudication", None, "verdict", f"unknown verdict {verdict!r}")]
    )


def value_to_verdict(criterion: Criterion, met: bool | None, level: int | None) -> str | None:
    """``met``, ``partial``, ``not_met`` or None (not answered)."""
    top = max(criterion.levels, 2) - 1
    if level is not None:
        k = min(max(level, 0), top)
        return "met" if k == top else ("not_met" if k == 0 else "partial")
    if met is None:
        return None
    return "met" if met else "not_met"


class AdjudicationStore:
    """Reads adjudication cases and records decisions (coordinator mode only)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.repo = Repository(db)

    def case(self, benchmark: str | None, response_id: str, criterion_id: str) -> AdjudicationCase:
        """Everything about one (response, criterion) pair.

        Raises:
            NotFoundError: no such benchmark, response, or criterion on its task.
        """
        bench = self.repo.benchmark(benchmark)
        with self.db.read() as s:
            resp = s.execute(
                select(
                    m.Response.id,
                    m.Response.task_id,
                    m.Response.model,
                    m.Response.text,
                    m.Response.answer,
                ).where(m.Response.benchmark_id == bench.id, m.Response.external_id == response_id)
            ).first()
            if resp is None:
                raise NotFoundError(f"no response {response_id!r} in benchmark {bench.name!r}")
            task = GradingStore._task(s, resp.task_id)
            criterion = next((c for c in task.criteria if c.id == criterion_id), None)
            crit_pk = s.scalar(
                select(m.Criterion.id).where(
                    m.Criterion.task_id == resp.task_id, m.Criterion.external_id == criterion_id
                )
            )
            if criterion is None or crit_pk is None:
                raise NotFoundError(
                    f"no criterion {criterion_id!r} on task {task.id!r} (response {response_id!r})"
                )
            rows = s.execute(
                select(
                    m.Grader.name,
                    m.Grader.kind,
                    m.Grader.model,
                    m.PromptVersion.name,
                    m.PromptVersion.content_hash,
                    m.Judgment.met,
                    m.Judgment.level,
                    m.Judgment.confidence,
                    m.Judgment.rationale,
                    m.Judgment.unclear,
                    m.Judgment.unclear_note,
                    m.Judgment.updated_at,
                )
                .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
                .outerjoin(m.PromptVersion, m.PromptVersion.id == m.Grader.prompt_version_id)
                .where(
                    m.Judgment.response_id == resp.id,
                    m.Judgment.criterion_id == crit_pk,
                    is_current(m.Judgment),  # verdicts a rubric revision made stale: not
                )
                .order_by(m.Grader.kind, m.Grader.name)
            ).all()
            verdicts = tuple(
                GraderVerdict(
                    grader=r[0],
                    kind=r[1],
                    met=r[5],
                    level=r[6],
                    confidence=r[7],
                    rationale=r[8],
                    unclear=bool(r[9]),
                    unclear_note=r[10],
                    updated_at=r[11],
                    model=r[2],
                    prompt_version=(r[3] or (r[4][:12] if r[4] else None)),
                )
                for r in rows
            )
            adj = s.scalar(
                select(m.Adjudication).where(
                    m.Adjudication.response_id == resp.id, m.Adjudication.criterion_id == crit_pk
                )
            )
            current: AdjudicationValue | None = None
            history: tuple[AdjudicationValue, ...] = ()
            if adj is not None:
                current = AdjudicationValue(
                    adj.met, adj.level, adj.note, adj.adjudicator, adj.revision, adj.updated_at
                )
                old = s.scalars(
                    select(m.Revision)
                    .where(m.Revision.entity == "adjudication", m.Revision.entity_id == adj.id)
                    .order_by(m.Revision.revision)
                ).all()
                history = tuple(
                    AdjudicationValue(
                        bool(r.data.get("met")),
                        r.data.get("level"),
                        r.data.get("note"),
                        str(r.data.get("adjudicator") or ""),
                        r.revision,
                        r.data.get("updated_at"),
                    )
                    for r in old
                )
        return AdjudicationCase(
            benchmark=bench.name,
            task=task,
            response_id=response_id,
            model=resp.model,
            response_text=resp.text,
            answer=resp.answer,
            criterion=criterion,
            verdicts=verdicts,
            current=current,
            history=history,
        )

    def adjudicated(self, benchmark: str | None) -> dict[tuple[str, str], AdjudicationValue]:
        """The current adjudication of every adjudicated pair of the benchmark, keyed by
        (response id, criterion id) as the dashboard's tables name them (one read).

        Raises:
            NotFoundError: no such benchmark.
        """
        bench = self.repo.benchmark(benchmark)
        with self.db.read() as s:
            rows = s.execute(
                select(
                    m.Response.external_id,
                    m.Criterion.external_id,
                    m.Adjudication.met,
                    m.Adjudication.level,
                    m.Adjudication.note,
                    m.Adjudication.adjudicator,
                    m.Adjudication.revision,
                    m.Adjudication.updated_at,
                )
                .join(m.Response, m.Response.id == m.Adjudication.response_id)
                .join(m.Criterion, m.Criterion.id == m.Adjudication.criterion_id)
                .where(m.Response.benchmark_id == bench.id)
            ).all()
        return {
            (str(r[0]), str(r[1])): AdjudicationValue(bool(r[2]), r[3], r[4], r[5], r[6], r[7])
            for r in rows
        }

    def record(
        self,
        case: AdjudicationCase,
        verdict: str,
        note: str | None,
        adjudicator: str,
        *,
        require_note: bool = True,
    ) -> AdjudicationCase:
        """Store the final verdict on ``case`` (revising an earlier one keeps its history).

        Returns the case read back from the database.

        Raises:
            ValidationError: unknown verdict, partial on a two-level criterion, an auto
                criterion, a missing or over-long note or adjudicator name, NUL characters.
            StaleAdjudicationError: another decision on the unit was stored since
                ``case`` was read (by another adjudicator, even at the same moment);
                nothing was written and the message shows that decision.
        """
        problems: list[Problem] = []
        where = f"adjudication of {case.response_id}/{case.criterion.id}"
        name = (adjudicator or "").strip()
        text = (note or "").strip()
        if case.criterion.auto is not None:
            problems.append(
                Problem(where, None, "criterion", "auto criteria are computed from the answer")
            )
        if not name:
            problems.append(Problem(where, None, "adjudicator", "say who adjudicates"))
        elif len(name) > MAX_ADJUDICATOR:
            problems.append(
                Problem(where, None, "adjudicator", f"longer than {MAX_ADJUDICATOR} characters")
            )
        if require_note and not text:
            problems.append(
                Problem(
                    where,
                    None,
                    "note",
                    "write a short note: why this verdict (it teaches the judge)",
                )
            )
        if len(text) > MAX_NOTE:
            problems.append(Problem(where, None, "note", f"longer than {MAX_NOTE} characters"))
        for field, value in (("adjudicator", name), ("note", text)):
            if "\x00" in value:
                problems.append(Problem(where, None, field, "contains a NUL character"))
        if verdict not in VERDICTS:
            problems.append(Problem(where, None, "verdict", "choose met, not met or partial"))
        if problems:
            raise ValidationError(problems)
        met, level = verdict_to_value(case.criterion, verdict)
        self.repo.adjudicate(
            case.benchmark,
            case.response_id,
            case.criterion.id,
            met=met,
            level=level,
            adjudicator=name,
            note=text or None,
            expected_revision=0 if case.current is None else case.current.revision,
        )
        return self.case(case.benchmark, case.response_id, case.criterion.id)


__all__ = [
    "AdjudicationCase",
    "AdjudicationStore",
    "AdjudicationValue",
    "GraderVerdict",
    "StaleAdjudicationError",
    "value_to_verdict",
    "verdict_to_value",
]
