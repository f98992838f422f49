"""SQLAlchemy 2 models: the one schema every part of gradercal stores its data in.

Conventions: integer surrogate keys (``id``) for joins, the benchmark files' own ids in
``external_id`` columns; timestamps are timezone-aware UTC; JSON columns hold lists and
free metadata. Nothing is deleted in normal operation: judgments and adjudications keep
every previous value in :class:`Revision` rows.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

# re-exported: the schema's base, naming convention and clock (see gradercal.db.base)
from gradercal.db.base import NAMING as NAMING
from gradercal.db.base import Base as Base
from gradercal.db.base import utcnow as utcnow

#: the server-side default of the version columns (0006), so existing rows read as 1
_ONE = text("1")
_ZERO = text("0")


class DatabaseInfo(Base):
    """Facts about the database itself, as key/value pairs.

    ``database_id`` (a UUID written by the first migration) tells databases apart, so a
    grading packet exported from one can be refused by another.
    """

    __tablename__ = "database_info"

    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class Benchmark(Base):
    __tablename__ = "benchmark"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(500), unique=True)
    pass_threshold: Mapped[float] = mapped_column(Float, default=0.7)
    format_version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: general grading instructions (benchmark.json ``instructions``), shown beside the rubric
    instructions: Mapped[str | None] = mapped_column(Text)

    tasks: Mapped[list[Task]] = relationship(back_populates="benchmark")


class Task(Base):
    __tablename__ = "task"
    __table_args__ = (UniqueConstraint("benchmark_id", "external_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmark.id", ondelete="CASCADE"))
    external_id: Mapped[str] = mapped_column(String(200))
    position: Mapped[int] = mapped_column(Integer, default=0)
    prompt: Mapped[str] = mapped_column(Text)
    workflow: Mapped[str | None] = mapped_column(String(200))
    domain: Mapped[str | None] = mapped_column(String(200))
    answer_format: Mapped[str | None] = mapped_column(String(200))
    tags: Mapped[list[Any]] = mapped_column(JSON, default=list)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    content_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: 1 when imported, one more per revision (0006; see :class:`ContentVersion`)
    version: Mapped[int] = mapped_column(Integer, default=1, server_default=_ONE)

    benchmark: Mapped[Benchmark] = relationship(back_populates="tasks")
    artifacts: Mapped[list[Artifact]] = relationship(order_by="Artifact.position")
    criteria: Mapped[list[Criterion]] = relationship(order_by="Criterion.position")


class Blob(Base):
    """Artifact bytes, content-addressed by sha256, stored inside the database itself."""

    __tablename__ = "blob"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Artifact(Base):
    __tablename__ = "artifact"

    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("task.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer, default=0)
    kind: Mapped[str] = mapped_column(String(20))
    title: Mapped[str] = mapped_column(Text)
    original_name: Mapped[str | None] = mapped_column(String(500))
    path: Mapped[str | None] = mapped_column(Text)
    url: Mapped[str | None] = mapped_column(Text)
    media_type: Mapped[str | None] = mapped_column(String(200))
    sha256: Mapped[str | None] = mapped_column(ForeignKey("blob.sha256"), index=True)
    size: Mapped[int | None] = mapped_column(BigInteger)


class Criterion(Base):
    __tablename__ = "criterion"
    __table_args__ = (UniqueConstraint("task_id", "external_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("task.id", ondelete="CASCADE"))
    external_id: Mapped[str] = mapped_column(String(200))
    position: Mapped[int] = mapped_column(Integer, default=0)
    text: Mapped[str] = mapped_column(Text)
    points: Mapped[int] = mapped_column(Integer)
    tags: Mapped[list[Any]] = mapped_column(JSON, default=list)
    kind: Mapped[str] = mapped_column(String(20), default="judgment")
    levels: Mapped[int] = mapped_column(Integer, default=2)
    auto_key: Mapped[str | None] = mapped_column(Text)
    auto_target: Mapped[Any | None] = mapped_column(JSON)
    auto_abs_tol: Mapped[float | None] = mapped_column(Float)
    auto_rel_tol: Mapped[float | None] = mapped_column(Float)
    #: the task version this criterion last changed at, and last changed at in a way
    #: that can change a verdict (0006): a verdict given under an older task version
    #: than ``verdict_version`` is stale (:func:`gradercal.ops.revisions.is_stale`)
    version: Mapped[int] = mapped_column(Integer, default=1, server_default=_ONE)
    verdict_version: Mapped[int] = mapped_column(Integer, default=1, server_default=_ONE)


class Response(Base):
    __tablename__ = "response"
    __table_args__ = (UniqueConstraint("benchmark_id", "external_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmark.id", ondelete="CASCADE"))
    task_id: Mapped[int] = mapped_column(ForeignKey("task.id", ondelete="CASCADE"), index=True)
    external_id: Mapped[str] = mapped_column(String(200))
    model: Mapped[str] = mapped_column(String(200), index=True)
    text: Mapped[str] = mapped_column(Text)
    answer: Mapped[Any | None] = mapped_column(JSON)
    content_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: the order of the file it was imported from (0008): what outputs list responses by.
    #: Row ids follow another order, which graders cannot tell models apart by.
    position: Mapped[int] = mapped_column(Integer, default=0, server_default=_ZERO)


class PromptVersion(Base):
    """An immutable judge prompt, identified by the hash of its content."""

    __tablename__ = "prompt_version"

    id: Mapped[int] = mapped_column(primary_key=True)
    content_hash: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str | None] = mapped_column(String(200))
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("prompt_version.id"))
    system_template: Mapped[str] = mapped_column(Text)
    user_template: Mapped[str] = mapped_column(Text)
    few_shot: Mapped[list[Any]] = mapped_column(JSON, default=list)
    options: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Grader(Base):
    __tablename__ = "grader"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    kind: Mapped[str] = mapped_column(String(20), default="human")
    model: Mapped[str | None] = mapped_column(String(200))
    prompt_version_id: Mapped[int | None] = mapped_column(ForeignKey("prompt_version.id"))
    parameters: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class JudgeRun(Base):
    """One invocation of the judge runner: what was asked, of whom, at what cost."""

    __tablename__ = "judge_run"

    id: Mapped[int] = mapped_column(primary_key=True)
    grader_id: Mapped[int] = mapped_column(ForeignKey("grader.id"), index=True)
    prompt_version_id: Mapped[int | None] = mapped_column(ForeignKey("prompt_version.id"))
    model: Mapped[str] = mapped_column(String(200))
    base_url: Mapped[str | None] = mapped_column(Text)
    parameters: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(20), default="running")
    n_requests: Mapped[int] = mapped_column(Integer, default=0)
    prompt_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    completion_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # who runs it and its last sign of life, to tell a live run from a killed one (0003)
    host: Mapped[str | None] = mapped_column(String(255))
    pid: Mapped[int | None] = mapped_column(Integer)
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Calibration(Base):
    """A fitted correction of a judge against the experts, with how it was obtained.

    ``params`` holds the fitted estimator's learned values, ``split`` the task ids used to
    fit and to evaluate, ``metrics`` the held-out figures, ``provenance`` the data it came
    from (graders, counts, dates). ``version`` counts fits per (judge, method).
    """

    __tablename__ = "calibration"
    __table_args__ = (UniqueConstraint("grader_id", "method", "version"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    grader_id: Mapped[int] = mapped_column(ForeignKey("grader.id", ondelete="CASCADE"))
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmark.id", ondelete="CASCADE"))
    method: Mapped[str] = mapped_column(String(40))
    version: Mapped[int] = mapped_column(Integer, default=1)
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    split: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    provenance: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class JudgeCertificate(Base):
    """The outcome of ``gradercal judge align`` (0009): a judge's prompt versions compared.

    ``certificate`` is the command's JSON (docs/cli.md): the split (task ids, seed), every
    candidate with its provenance, the held-out figures with paired and corrected
    intervals, the alt-test, how many candidates were evaluated on the held-out tasks,
    tokens and cost. ``chosen_prompt_id`` is the proven candidate, or the baseline when
    none is proven (``proven_better`` false).
    """

    __tablename__ = "judge_certificate"

    id: Mapped[int] = mapped_column(primary_key=True)
    grader_id: Mapped[int] = mapped_column(ForeignKey("grader.id", ondelete="CASCADE"))
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmark.id", ondelete="CASCADE"))
    baseline_prompt_id: Mapped[int] = mapped_column(ForeignKey("prompt_version.id"))
    chosen_prompt_id: Mapped[int] = mapped_column(ForeignKey("prompt_version.id"))
    proven_better: Mapped[bool] = mapped_column(Boolean, default=False)
    certificate: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Assignment(Base):
    __tablename__ = "assignment"
    __table_args__ = (UniqueConstraint("grader_id", "response_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    grader_id: Mapped[int] = mapped_column(ForeignKey("grader.id", ondelete="CASCADE"))
    response_id: Mapped[int] = mapped_column(
        ForeignKey("response.id", ondelete="CASCADE"), index=True
    )
    status: Mapped[str] = mapped_column(String(20), default="pending")
    position: Mapped[int] = mapped_column(Integer, default=0)
    time_spent_s: Mapped[float] = mapped_column(Float, default=0.0)
    calibration: Mapped[bool] = mapped_column(Boolean, default=False)
    skip_reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, onupdate=utcnow
    )
    submitted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    inclusion_probability: Mapped[float | None] = mapped_column(Float, deferred=True)
    """Probability the response was drawn with (``assign --strategy active``); null:
    uniform. Never shown to graders; in team mode their role cannot read it, so it is
    deferred: loading an ``Assignment`` (the grading view's queries) never selects it."""
    sampling_round: Mapped[int | None] = mapped_column(Integer, deferred=True)
    """Which active draw of the benchmark took the response (1, 2, …); null: uniform."""


class Judgment(Base):
    """The current verdict of one grader on one criterion of one response."""

    __tablename__ = "judgment"
    __table_args__ = (
        UniqueConstraint("grader_id", "response_id", "criterion_id"),
        Index("ix_judgment_response_criterion", "response_id", "criterion_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    grader_id: Mapped[int] = mapped_column(ForeignKey("grader.id", ondelete="CASCADE"))
    response_id: Mapped[int] = mapped_column(ForeignKey("response.id", ondelete="CASCADE"))
    criterion_id: Mapped[int] = mapped_column(ForeignKey("criterion.id", ondelete="CASCADE"))
    met: Mapped[bool | None] = mapped_column(Boolean)
    level: Mapped[int | None] = mapped_column(Integer)
    confidence: Mapped[float | None] = mapped_column(Float)
    rationale: Mapped[str | None] = mapped_column(Text)
    unclear: Mapped[bool] = mapped_column(Boolean, default=False)
    unclear_note: Mapped[str | None] = mapped_column(Text)
    source: Mapped[str] = mapped_column(String(20), default="import")
    judge_run_id: Mapped[int | None] = mapped_column(ForeignKey("judge_run.id"))
    #: judge provenance (prompt version, parameters, raw reply, tokens, latency); None for people
    provenance: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    revision: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: the version of the task this verdict was given under (0006)
    task_version: Mapped[int] = mapped_column(Integer, default=1, server_default=_ONE)


class Adjudication(Base):
    """The final verdict on one criterion of one response; graders' judgments stay as they were."""

    __tablename__ = "adjudication"
    __table_args__ = (UniqueConstraint("response_id", "criterion_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    response_id: Mapped[int] = mapped_column(ForeignKey("response.id", ondelete="CASCADE"))
    criterion_id: Mapped[int] = mapped_column(ForeignKey("criterion.id", ondelete="CASCADE"))
    adjudicator: Mapped[str] = mapped_column(String(200))
    met: Mapped[bool] = mapped_column(Boolean)
    level: Mapped[int | None] = mapped_column(Integer)
    note: Mapped[str | None] = mapped_column(Text)
    revision: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: the version of the task this verdict was given under (0006)
    task_version: Mapped[int] = mapped_column(Integer, default=1, server_default=_ONE)


class TaskReview(Base):
    """A reviewer's survey answers about a task (5-point scale items and a comment)."""

    __tablename__ = "task_review"
    __table_args__ = (UniqueConstraint("task_id", "grader_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("task.id", ondelete="CASCADE"))
    grader_id: Mapped[int] = mapped_column(ForeignKey("grader.id", ondelete="CASCADE"))
    answers: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    comment: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class TaskRound(Base):
    """One review round of a task (0004): when it opened and closed, what was measured
    when it closed, and the coordinator's decision.

    The round's state follows from its columns: ``open`` (no ``closed_at``), ``closed``
    (closed, no ``decision``), else the decision (``accepted``, ``rejected``,
    ``needs_revision``). The agreement (``statistic``, ``agreement`` and its interval),
    the survey means and ``passed``/``proposed`` are written once, when the round closes:
    a decided round keeps the numbers it was decided on. Every change moves ``revision``
    on and copies the previous value into :class:`Revision` (entity ``task_round``).
    """

    __tablename__ = "task_round"
    __table_args__ = (UniqueConstraint("task_id", "number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("task.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    opened_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    closed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    decision: Mapped[str | None] = mapped_column(String(20))
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    note: Mapped[str | None] = mapped_column(Text)
    actor: Mapped[str | None] = mapped_column(String(200))
    statistic: Mapped[str | None] = mapped_column(String(40))
    agreement: Mapped[float | None] = mapped_column(Float)
    agreement_low: Mapped[float | None] = mapped_column(Float)
    agreement_high: Mapped[float | None] = mapped_column(Float)
    n_units: Mapped[int | None] = mapped_column(Integer)
    n_criteria: Mapped[int | None] = mapped_column(Integer)
    agreement_note: Mapped[str | None] = mapped_column(Text)
    survey: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    passed: Mapped[bool | None] = mapped_column(Boolean)
    proposed: Mapped[bool | None] = mapped_column(Boolean)
    reasons: Mapped[list[Any] | None] = mapped_column(JSON(none_as_null=True))
    revision: Mapped[int] = mapped_column(Integer, default=1)
    #: (0007) the interval's ``method`` and ``n_effective`` and the agreement test's
    #: ``at_bar`` operating characteristic, written with the numbers at close.
    decision_basis: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))


class Clarification(Base):
    """A clarification thread on one criterion (0005), opened by a grader's unclear flag.

    ``status`` is ``open`` (asked, not answered), ``answered`` or ``closed``;
    ``question`` is the first question, ``answer`` the current answer. Every question
    and answer is also a :class:`ClarificationMessage`, so the thread keeps them all.
    """

    __tablename__ = "clarification"
    __table_args__ = (
        Index("ix_clarification_criterion_status", "criterion_id", "status"),
        # one open thread per criterion (0008): two flaggers at once join one thread.
        # The migration makes it partial on both backends; the model names only SQLite's
        # clause, because a ``postgresql_where`` here would import SQLAlchemy's PostgreSQL
        # dialect with the models (≈ 50 ms of every command's start). The migrations make
        # every schema, and Alembic's comparison does not read partial-index clauses.
        Index(
            "uq_clarification_open_criterion",
            "criterion_id",
            unique=True,
            sqlite_where=text("status = 'open'"),
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmark.id", ondelete="CASCADE"))
    task_id: Mapped[int] = mapped_column(ForeignKey("task.id", ondelete="CASCADE"))
    criterion_id: Mapped[int] = mapped_column(ForeignKey("criterion.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(20), default="open")
    question: Mapped[str] = mapped_column(Text)
    asked_by: Mapped[str] = mapped_column(String(200))
    asked_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    answer: Mapped[str | None] = mapped_column(Text)
    answered_by: Mapped[str | None] = mapped_column(String(200))
    answered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ClarificationMessage(Base):
    """One message of a clarification thread: a grader's ``question`` or an ``answer``.

    A question asked by an unclear note keeps its judgment: editing the note while the
    thread is open revises this message instead of adding one."""

    __tablename__ = "clarification_message"

    id: Mapped[int] = mapped_column(primary_key=True)
    clarification_id: Mapped[int] = mapped_column(
        ForeignKey("clarification.id", ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(String(20))
    author: Mapped[str] = mapped_column(String(200))
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: the judgment whose unclear note asked this question (None: asked without one)
    judgment_id: Mapped[int | None] = mapped_column(ForeignKey("judgment.id", ondelete="SET NULL"))


class ContentVersion(Base):
    """One version of a task, whole (0006): ``content`` is the task as format v1 writes
    it (prompt, artifacts, rubric), ``changes`` what this version changed against the one
    before (fields and criteria, each with its kind: verdict, score or note; see
    :mod:`gradercal.ops.revisions`), with the ``reason``, ``actor`` and ``source``
    (``import``, ``revise``, ``ui``). Version 1 is written when a task is first revised,
    so every version a verdict was given under can be shown beside the current one.
    """

    __tablename__ = "content_version"
    __table_args__ = (UniqueConstraint("task_id", "version"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("task.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(20))
    content: Mapped[dict[str, Any]] = mapped_column(JSON)
    changes: Mapped[dict[str, Any]] = mapped_column(JSON)
    reason: Mapped[str | None] = mapped_column(Text)
    actor: Mapped[str | None] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Revision(Base):
    """Append-only history of superseded values.

    Whenever a judgment, adjudication or task review is changed, its *previous* value is
    copied here first (``entity`` names the table, ``entity_id`` the row, ``revision``
    the row's revision number at the time, ``data`` the full old value). The current row
    plus its revisions is the complete history: nothing a grader entered is ever lost.
    """

    __tablename__ = "revision"
    __table_args__ = (Index("ix_revision_entity", "entity", "entity_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    entity: Mapped[str] = mapped_column(String(40))
    entity_id: Mapped[int] = mapped_column(Integer)
    revision: Mapped[int] = mapped_column(Integer)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    actor: Mapped[str | None] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(20), default="import")
    changed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


# Tables of the LLM judge (judge_cache) live in their own module on the same Base;
# importing it here makes Base.metadata complete wherever the models are loaded.
from gradercal.db import judge_models as _judge_models  # noqa: E402, F401
