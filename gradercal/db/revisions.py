"""Revising tasks and rubrics in place (issue #16): versions, history, stale verdicts.

A revision replaces a stored task by a new version of itself (same id) and sorts every
change with :mod:`gradercal.ops.revisions`:

* the task's ``version`` moves on by one; each changed criterion records it as its
  ``version``, and as its ``verdict_version`` when the change can change a verdict (its
  text, scale or automatic rule, or the task's prompt, artifacts or answer format);
* verdicts already given are **never deleted or changed**: a judgment or adjudication
  given under an older task version than its criterion's ``verdict_version`` is *stale*.
  Scores, agreement and calibration leave stale verdicts out by default
  (:func:`gradercal.db.frames_read.read_frames`' ``version``), the judge re-grades them
  with ``--scope stale``, and a grader's submitted item that holds one goes back to their
  queue (recorded like any reopening);
* a points-only change rescales scores and nobody grades again;
* a removed criterion leaves the rubric; its verdicts are kept in the history
  (``judgment_deleted`` / ``adjudication_deleted`` rows, ``source = 'revise'``);
* ``content_version`` keeps every version whole, with what changed, the reason, who and
  when (version 1 is written at the first revision).

Every writer of a verdict stores the task version it was given under
(:func:`gradercal.db.versions.task_versions`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sqlalchemy import delete, func, select, text
from sqlalchemy.orm import Session

from gradercal.db import models as m
from gradercal.db.clarifications import reopen_assignment
from gradercal.db.repo import Repository, judgments_with_names, task_from_row
from gradercal.db.session import Database
from gradercal.db.snapshots import (
    adjudication_snapshot,
    criterion_values,
    deleted_judgment_revision,
)
from gradercal.errors import ConflictError, NotFoundError, Problem, ValidationError
from gradercal.model import (
    Artifact,
    ArtifactKind,
    AssignmentStatus,
    AutoRule,
    Criterion,
    Task,
)
from gradercal.ops.revisions import TaskRevision, diff_task

__all__ = [
    "RevisionReport",
    "RevisionStore",
    "VersionInfo",
    "task_content",
    "task_from_content",
]

#: where a revision came from (``content_version.source``)
SOURCES = ("import", "revise", "ui")
_FINAL = (AssignmentStatus.SUBMITTED.value,)


# -- a task version, whole, as stored in content_version ---------------------------
def task_content(task: Task) -> dict[str, Any]:
    """A task as ``content_version.content`` keeps it (every field, artifacts by hash)."""
    return {
        "id": task.id,
        "prompt": task.prompt,
        "workflow": task.workflow,
        "domain": task.domain,
        "answer_format": task.answer_format,
        "tags": list(task.tags),
        "metadata": task.metadata,
        "artifacts": [
            {
                "kind": a.kind.value,
                "title": a.title,
                "position": a.position,
                "path": a.path,
                "original_name": a.original_name,
                "sha256": a.sha256,
                "size": a.size,
                "url": a.url,
                "media_type": a.media_type,
            }
            for a in task.artifacts
        ],
        "rubric": [
            {
                "id": c.id,
                "text": c.text,
                "points": c.points,
                "position": c.position,
                "tags": list(c.tags),
                "levels": c.levels,
                "auto": None
                if c.auto is None
                else {
                    "key": c.auto.key,
                    "target": c.auto.target,
                    "abs_tol": c.auto.abs_tol,
                    "rel_tol": c.auto.rel_tol,
                },
            }
            for c in task.criteria
        ],
    }


def task_from_content(content: Mapping[str, Any]) -> Task:
    """The task :func:`task_content` kept."""
    return Task(
        id=content["id"],
        prompt=content["prompt"],
        workflow=content.get("workflow"),
        domain=content.get("domain"),
        answer_format=content.get("answer_format"),
        tags=tuple(content.get("tags") or ()),
        metadata=dict(content.get("metadata") or {}),
        artifacts=tuple(
            Artifact(
                kind=ArtifactKind(a["kind"]),
                title=a["title"],
                position=a.get("position", 0),
                path=a.get("path"),
                original_name=a.get("original_name"),
                sha256=a.get("sha256"),
                size=a.get("size"),
                url=a.get("url"),
                media_type=a.get("media_type"),
            )
            for a in content.get("artifacts", ())
        ),
        criteria=tuple(
            Criterion(
                id=c["id"],
                text=c["text"],
                points=c["points"],
                position=c.get("position", 0),
                tags=tuple(c.get("tags") or ()),
                auto=None
                if c.get("auto") is None
                else AutoRule(
                    c["auto"]["key"],
                    c["auto"]["target"],
                    c["auto"].get("abs_tol"),
                    c["auto"].get("rel_tol"),
                ),
                levels=c.get("levels", 2),
            )
            for c in content.get("rubric", ())
        ),
    )


def revision_changes(rev: TaskRevision) -> dict[str, Any]:
    """What ``content_version.changes`` keeps of a revision (JSON): the task's changed
    fields and each changed criterion, every field with its kind and values."""

    def fields(items: Iterable[Any]) -> list[dict[str, Any]]:
        return [
            {"field": f.field, "kind": f.kind.label, "before": f.before, "after": f.after}
            for f in items
        ]

    return {
        "kind": rev.kind.label if rev.kind is not None else None,
        "task": fields(rev.task_fields),
        "criteria": [
            {
                "id": c.criterion_id,
                "kind": c.kind.label,
                "added": c.added,
                "removed": c.removed,
                "fields": fields(c.fields),
            }
            for c in rev.criteria
        ],
    }


# -- results ---------------------------------------------------------------------
@dataclass(frozen=True)
class VersionInfo:
    """One stored version of a task (``content_version``)."""

    task_id: str
    version: int
    kind: str
    changes: dict[str, Any]
    reason: str | None
    actor: str | None
    source: str
    created_at: Any
    content: dict[str, Any] = field(repr=False, default_factory=dict)

    def to_dict(self, *, content: bool = False) -> dict[str, Any]:
        out = {
            "task_id": self.task_id,
            "version": self.version,
            "kind": self.kind,
            "reason": self.reason,
            "actor": self.actor,
            "source": self.source,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "changes": self.changes,
        }
        if content:
            out["content"] = self.content
        return out


@dataclass(frozen=True)
class RevisionReport:
    """What one task's revision did (``version == version_before``: nothing changed); in
    a dry run, what it would do (every figure as the revision would make it, then rolled
    back)."""

    task_id: str
    version_before: int
    version: int
    kind: str | None = None
    changes: dict[str, Any] = field(default_factory=dict)
    stale_criteria: tuple[str, ...] = ()
    rescored_criteria: tuple[str, ...] = ()
    added_criteria: tuple[str, ...] = ()
    removed_criteria: tuple[str, ...] = ()
    stale_judgments: int = 0
    stale_adjudications: int = 0
    removed_verdicts: int = 0
    requeued: tuple[str, ...] = ()  # graders whose submitted items went back to the queue
    dry_run: bool = False

    @property
    def changed(self) -> bool:
        return self.version != self.version_before

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "version_before": self.version_before,
            "version": self.version,
            "kind": self.kind,
            "stale_criteria": list(self.stale_criteria),
            "rescored_criteria": list(self.rescored_criteria),
            "added_criteria": list(self.added_criteria),
            "removed_criteria": list(self.removed_criteria),
            "stale_judgments": self.stale_judgments,
            "stale_adjudications": self.stale_adjudications,
            "removed_verdicts": self.removed_verdicts,
            "requeued": list(self.requeued),
            "dry_run": self.dry_run,
            "changes": self.changes,
        }


# -- the store -------------------------------------------------------------------
class RevisionStore:
    """Revise stored tasks and read their versions (see the module notes)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def _bench(self, s: Session, benchmark: str | None) -> m.Benchmark:
        bench = Repository(self.db).benchmark(benchmark)
        row = s.get(m.Benchmark, bench.id)
        assert row is not None
        return row

    @staticmethod
    def _task_row(s: Session, bench_id: int, task_id: str, *, lock: bool = False) -> m.Task:
        q = select(m.Task).where(m.Task.benchmark_id == bench_id, m.Task.external_id == task_id)
        if lock and s.get_bind().dialect.name != "sqlite":
            q = q.with_for_update()
        row = s.scalar(q)
        if row is None:
            raise NotFoundError(f"no task {task_id!r} in this benchmark")
        return row

    @staticmethod
    def _stored(s: Session, row: m.Task) -> Task:
        crits = list(
            s.scalars(
                select(m.Criterion)
                .where(m.Criterion.task_id == row.id)
                .order_by(m.Criterion.position, m.Criterion.id)
            )
        )
        arts = list(
            s.scalars(
                select(m.Artifact)
                .where(m.Artifact.task_id == row.id)
                .order_by(m.Artifact.position, m.Artifact.id)
            )
        )
        return task_from_row(row, crits, arts)

    # -- reading -------------------------------------------------------------------
    def current(self, benchmark: str | None, task_id: str) -> tuple[Task, int]:
        """The stored task and its version."""
        with self.db.read() as s:
            bench = self._bench(s, benchmark)
            row = self._task_row(s, bench.id, task_id)
            return self._stored(s, row), int(row.version)

    def preview(self, benchmark: str | None, task: Task) -> TaskRevision:
        """What revising the stored task to ``task`` would change (nothing is written)."""
        old, _v = self.current(benchmark, task.id)
        return diff_task(old, task)

    def history(self, benchmark: str | None, task_id: str) -> list[VersionInfo]:
        """Every stored version of a task, oldest first (empty: never revised)."""
        with self.db.read() as s:
            bench = self._bench(s, benchmark)
            row = self._task_row(s, bench.id, task_id)
            return [
                _info(task_id, v)
                for v in s.scalars(
                    select(m.ContentVersion)
                    .where(m.ContentVersion.task_id == row.id)
                    .order_by(m.ContentVersion.version)
                )
            ]

    def all_history(self, benchmark: str | None) -> list[VersionInfo]:
        """Every revision of every task of the benchmark, in task order then version."""
        with self.db.read() as s:
            bench = self._bench(s, benchmark)
            rows = s.execute(
                select(m.Task.external_id, m.ContentVersion)
                .join(m.ContentVersion, m.ContentVersion.task_id == m.Task.id)
                .where(m.Task.benchmark_id == bench.id)
                .order_by(m.Task.position, m.ContentVersion.version)
            ).all()
            return [_info(ext, v) for ext, v in rows]

    def task_at(self, benchmark: str | None, task_id: str, version: int) -> Task:
        """The task as it was at ``version``."""
        with self.db.read() as s:
            bench = self._bench(s, benchmark)
            row = self._task_row(s, bench.id, task_id)
            if version == row.version:
                return self._stored(s, row)
            content = s.scalar(
                select(m.ContentVersion.content).where(
                    m.ContentVersion.task_id == row.id, m.ContentVersion.version == version
                )
            )
            if content is None:
                raise NotFoundError(
                    f"task {task_id!r} has no version {version} (it is at {row.version})"
                )
            return task_from_content(content)

    def stale_counts(self, benchmark: str | None) -> dict[str, int]:
        """Stale verdicts of the benchmark by grader name (judges included)."""
        with self.db.read() as s:
            bench = self._bench(s, benchmark)
            j = m.Judgment
            rows = s.execute(
                judgments_with_names(m.Grader.name, func.count(), task=True)
                .where(
                    m.Task.benchmark_id == bench.id,
                    j.task_version < m.Criterion.verdict_version,
                )
                .group_by(m.Grader.name)
                .order_by(m.Grader.name)
            ).all()
            return {str(n): int(c) for n, c in rows}

    def stale_by_task(self, benchmark: str | None) -> dict[str, dict[str, int]]:
        """Stale verdicts by task, then by grader name (judges included); tasks without
        any are left out. Summed over tasks it is :meth:`stale_counts`."""
        with self.db.read() as s:
            bench = self._bench(s, benchmark)
            j = m.Judgment
            rows = s.execute(
                judgments_with_names(m.Task.external_id, m.Grader.name, func.count(), task=True)
                .where(
                    m.Task.benchmark_id == bench.id,
                    j.task_version < m.Criterion.verdict_version,
                )
                .group_by(m.Task.external_id, m.Grader.name)
                .order_by(m.Task.external_id, m.Grader.name)
            ).all()
        out: dict[str, dict[str, int]] = {}
        for task, name, n in rows:
            out.setdefault(str(task), {})[str(name)] = int(n)
        return out

    def task_versions(self, benchmark: str | None) -> list[tuple[str, int]]:
        """Every task of the benchmark with its current version, in the benchmark's order."""
        with self.db.read() as s:
            bench = self._bench(s, benchmark)
            rows = s.execute(
                select(m.Task.external_id, m.Task.version)
                .where(m.Task.benchmark_id == bench.id)
                .order_by(m.Task.position, m.Task.id)
            ).all()
        return [(str(t), int(v)) for t, v in rows]

    # -- writing -------------------------------------------------------------------
    def revise_tasks(
        self,
        benchmark: str | None,
        tasks: Sequence[Task],
        *,
        reason: str | None,
        actor: str | None,
        source: str = "import",
        blobs: Mapping[str, str] | None = None,
        dry_run: bool = False,
    ) -> list[RevisionReport]:
        """Revise each stored task to its new version in ``tasks``, all or nothing.

        Every task must already be stored (add new ones with a plain import); unchanged
        tasks are reported with their version unchanged. ``blobs`` maps the sha256 of a
        new artifact file to its path (as :class:`gradercal.model.BenchmarkData` has it).
        ``dry_run`` makes every change, reports it, and rolls it all back: the report is
        exactly what the revision would do (who would get items back included).
        """
        if source not in SOURCES:
            raise ValueError(f"unknown source {source!r}")
        with self.db.write() as s:
            bench = self._bench(s, benchmark)
            rows = {
                r.external_id: r
                for r in s.scalars(
                    select(m.Task).where(
                        m.Task.benchmark_id == bench.id,
                        m.Task.external_id.in_([t.id for t in tasks]),
                    )
                )
            }
            missing = [t.id for t in tasks if t.id not in rows]
            if missing:
                raise ValidationError(
                    [
                        Problem(
                            "tasks.jsonl",
                            None,
                            t,
                            f"no task {t!r} in {bench.name!r} to revise; import new tasks "
                            "without --revise",
                        )
                        for t in missing
                    ]
                )
            reports = [
                self._revise(
                    s,
                    rows[t.id],
                    t,
                    reason=reason,
                    actor=actor,
                    source=source,
                    blobs=blobs or {},
                    dry_run=dry_run,
                )
                for t in tasks
            ]
            if dry_run:
                s.rollback()
            return reports

    def revise_criterion(
        self,
        benchmark: str | None,
        task_id: str,
        criterion_id: str,
        *,
        text: str | None = None,
        points: int | None = None,
        levels: int | None = None,
        tags: Sequence[str] | None = None,
        reason: str | None,
        actor: str | None,
        source: str = "revise",
        dry_run: bool = False,
    ) -> RevisionReport:
        """Revise one criterion of a stored task (the rest of the task as it is)."""
        task, _v = self.current(benchmark, task_id)
        try:
            old = task.criterion(criterion_id)
        except KeyError:
            raise NotFoundError(f"task {task_id!r} has no criterion {criterion_id!r}") from None
        problems = []
        if text is not None and not text.strip():
            problems.append(Problem("revise", None, "text", "a criterion's text cannot be empty"))
        if points is not None and points == 0:
            problems.append(Problem("revise", None, "points", "points must not be 0"))
        if levels is not None and not 2 <= levels <= 10:
            problems.append(Problem("revise", None, "levels", "levels must be 2 to 10"))
        if problems:
            raise ValidationError(problems)
        new = replace(
            old,
            text=old.text if text is None else text.strip(),
            points=old.points if points is None else points,
            levels=old.levels if levels is None else levels,
            tags=old.tags if tags is None else tuple(tags),
        )
        revised = replace(
            task, criteria=tuple(new if c.id == criterion_id else c for c in task.criteria)
        )
        return self.revise_tasks(
            benchmark, [revised], reason=reason, actor=actor, source=source, dry_run=dry_run
        )[0]

    def _revise(
        self,
        s: Session,
        row: m.Task,
        new: Task,
        *,
        reason: str | None,
        actor: str | None,
        source: str,
        blobs: Mapping[str, str],
        dry_run: bool,
    ) -> RevisionReport:
        old = self._stored(s, row)
        rev = diff_task(old, new)
        before = int(row.version)
        if not rev.changed:
            return RevisionReport(new.id, before, before)
        version = before + 1
        new_ids = [c.id for c in new.criteria]
        stale = sorted(rev.stale_criteria(new_ids))
        added = tuple(c.criterion_id for c in rev.criteria if c.added)
        removed = tuple(c.criterion_id for c in rev.criteria if c.removed)
        rescored = tuple(sorted(rev.rescored_criteria()))
        changes = revision_changes(rev)
        now = m.utcnow()
        if (
            s.scalar(
                select(func.count())
                .select_from(m.ContentVersion)
                .where(m.ContentVersion.task_id == row.id, m.ContentVersion.version == before)
            )
            == 0
        ):  # the version being replaced, kept whole (as imported, at version 1)
            s.add(
                m.ContentVersion(
                    task_id=row.id,
                    version=before,
                    kind="initial" if before == 1 else "unrecorded",
                    content=task_content(old),
                    changes={},
                    reason=None,
                    actor=None,
                    source="import",
                    created_at=row.created_at if before == 1 else now,
                )
            )
        # the task's own fields
        row.prompt = new.prompt
        row.workflow = new.workflow
        row.domain = new.domain
        row.answer_format = new.answer_format
        row.tags = list(new.tags)
        row.meta = dict(new.metadata)
        row.content_hash = new.content_hash()
        row.version = version
        if any(f.field in ("artifacts", "artifact_titles") for f in rev.task_fields):
            self._replace_artifacts(s, row.id, new, blobs)
        # criteria
        crit_rows = {
            c.external_id: c
            for c in s.scalars(select(m.Criterion).where(m.Criterion.task_id == row.id))
        }
        removed_verdicts = 0
        for cid in removed:
            removed_verdicts += _keep_removed(s, crit_rows[cid].id, actor, now)
            s.delete(crit_rows[cid])
        s.flush()
        for c in new.criteria:
            crow = crit_rows.get(c.id)
            if crow is None:
                s.add(
                    m.Criterion(
                        task_id=row.id,
                        **criterion_values(c),
                        version=version,
                        verdict_version=version,
                    )
                )
                continue
            values = criterion_values(c)
            if any(getattr(crow, k) != v for k, v in values.items()):
                for k, v in values.items():
                    setattr(crow, k, v)
                crow.version = version
            if c.id in stale:
                crow.version = version
                crow.verdict_version = version
        s.flush()
        stale_old = set(stale) - set(added)
        n_stale = _count_verdicts(s, m.Judgment, row.id, stale_old)
        n_stale_adj = _count_verdicts(s, m.Adjudication, row.id, stale_old)
        requeued = _requeue(s, row.id, version, actor, now) if stale else ()
        s.add(
            m.ContentVersion(
                task_id=row.id,
                version=version,
                kind=changes["kind"],
                content=task_content(new),
                changes=changes,
                reason=(reason or "").strip() or None,
                actor=actor,
                source=source,
                created_at=now,
            )
        )
        s.flush()
        return RevisionReport(
            new.id,
            before,
            version,
            kind=changes["kind"],
            changes=changes,
            stale_criteria=tuple(c for c in stale if c not in added),
            rescored_criteria=rescored,
            added_criteria=added,
            removed_criteria=removed,
            stale_judgments=n_stale,
            stale_adjudications=n_stale_adj,
            removed_verdicts=removed_verdicts,
            requeued=requeued,
            dry_run=dry_run,
        )

    @staticmethod
    def _replace_artifacts(s: Session, task_pk: int, new: Task, blobs: Mapping[str, str]) -> None:
        wanted = sorted({a.sha256 for a in new.artifacts if a.sha256})
        have = set(s.scalars(select(m.Blob.sha256).where(m.Blob.sha256.in_(wanted))))
        for digest in wanted:
            if digest in have:
                continue
            if digest not in blobs:
                raise ConflictError(f"artifact {digest[:12]}… of task {new.id!r}: file not given")
            data = Path(blobs[digest]).read_bytes()
            if hashlib.sha256(data).hexdigest() != digest:
                raise ConflictError(f"{blobs[digest]}: file changed while it was being read")
            s.add(m.Blob(sha256=digest, size=len(data), data=data))
        s.execute(delete(m.Artifact).where(m.Artifact.task_id == task_pk))
        for a in new.artifacts:
            s.add(
                m.Artifact(
                    task_id=task_pk,
                    position=a.position,
                    kind=a.kind.value,
                    title=a.title,
                    original_name=a.original_name,
                    path=a.path,
                    url=a.url,
                    media_type=a.media_type,
                    sha256=a.sha256,
                    size=a.size,
                )
            )


def _info(task_id: str, v: m.ContentVersion) -> VersionInfo:
    return VersionInfo(
        task_id=task_id,
        version=int(v.version),
        kind=v.kind,
        changes=dict(v.changes or {}),
        reason=v.reason,
        actor=v.actor,
        source=v.source,
        created_at=v.created_at,
        content=dict(v.content or {}),
    )


def _count_verdicts(s: Session, table: Any, task_pk: int, criteria: set[str]) -> int:
    if not criteria:
        return 0
    return int(
        s.scalar(
            select(func.count())
            .select_from(table)
            .join(m.Criterion, m.Criterion.id == table.criterion_id)
            .where(m.Criterion.task_id == task_pk, m.Criterion.external_id.in_(sorted(criteria)))
        )
        or 0
    )


def _keep_removed(s: Session, criterion_pk: int, actor: str | None, now: Any) -> int:
    """Copy the verdicts on a criterion about to be removed into the history; their count.

    On PostgreSQL in team mode a trigger already records every deleted verdict
    (``source = 'sql-delete'``); then nothing is copied twice."""
    n = 0
    by_trigger = s.get_bind().dialect.name == "postgresql" and bool(
        s.scalar(text("SELECT count(*) FROM pg_trigger WHERE tgname = 'gradercal_keep_deleted'"))
    )
    for j in s.scalars(select(m.Judgment).where(m.Judgment.criterion_id == criterion_pk)):
        n += 1
        if by_trigger:
            continue
        s.add(deleted_judgment_revision(j, actor=actor, source="revise", changed_at=now))
    for a in s.scalars(select(m.Adjudication).where(m.Adjudication.criterion_id == criterion_pk)):
        n += 1
        if by_trigger:
            continue
        data = adjudication_snapshot(a)
        data.update(
            response_id=a.response_id, criterion_id=a.criterion_id, task_version=a.task_version
        )
        s.add(
            m.Revision(
                entity="adjudication_deleted",
                entity_id=a.id,
                revision=a.revision,
                data=data,
                actor=actor,
                source="revise",
                changed_at=now,
            )
        )
    s.flush()
    return n


def _requeue(
    s: Session, task_pk: int, version: int, actor: str | None, now: Any
) -> tuple[str, ...]:
    """Put back in progress every submitted item of the task's responses whose grader now
    has a stale verdict or a criterion without one; the graders' names.

    Each reopening is recorded like a grader's own (``revision`` entity
    ``assignment_reopen``, ``source = 'revise'``)."""
    j = m.Judgment
    needs = (
        select(m.Criterion.id)
        .where(
            m.Criterion.task_id == task_pk,
            m.Criterion.kind == "judgment",
            m.Criterion.verdict_version == version,
        )
        .where(
            ~select(j.id)
            .where(
                j.grader_id == m.Assignment.grader_id,
                j.response_id == m.Assignment.response_id,
                j.criterion_id == m.Criterion.id,
                j.task_version >= m.Criterion.verdict_version,
            )
            .exists()
        )
        .exists()
    )
    rows = s.execute(
        select(m.Assignment, m.Grader.name)
        .join(m.Response, m.Response.id == m.Assignment.response_id)
        .join(m.Grader, m.Grader.id == m.Assignment.grader_id)
        .where(
            m.Response.task_id == task_pk,
            m.Assignment.status.in_(_FINAL),
            m.Grader.kind == "human",
            needs,
        )
        .order_by(m.Assignment.id)
    ).all()
    names: list[str] = []
    for a, name in rows:
        reopen_assignment(
            s, a, actor=actor, source="revise", when=now, note={"task_version": version}
        )
        names.append(str(name))
    return tuple(sorted(set(names)))
