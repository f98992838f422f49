"""Persistence of the LLM judge: prompt versions, judge graders, runs, work lists, verdicts.

* Prompt versions are stored once per content hash (:meth:`JudgeStore.save_prompt`) and
  found again by hash prefix or name (:meth:`JudgeStore.load_prompt`).
* A judge is a grader of kind ``judge`` with a model, a prompt version and the
  parameters that define it (:data:`IDENTITY_PARAMETERS`); running it again with other
  settings under the same name is refused, so one grader's verdicts stay comparable.
* The work list (:meth:`JudgeStore.work_items`) holds the (response, criterion) pairs of
  judgment criteria the judge still has to grade; ``auto`` criteria are never in it.
* :class:`VerdictWriter` commits verdicts from a background thread as they arrive, in
  small batches, together with the cache entries and the run's token and cost totals:
  an interrupted run loses nothing it has handed over, and re-running it resumes.

A verdict that failed (parse failure or HTTP error) is stored with ``met`` NULL (not
answered; never "not met") and its provenance says why; a later success supersedes it.
A failure never replaces an earlier successful verdict.
"""

from __future__ import annotations

import contextlib
import os
import queue
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd
from sqlalchemy import Row, Table, and_, exists, insert, or_, select, tuple_, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

import gradercal.db.judge_models as jm
from gradercal.db import models as m
from gradercal.db.repo import Repository, judgments_with_names
from gradercal.db.session import Database
from gradercal.db.snapshots import JUDGMENT_FIELDS, judgment_snapshot
from gradercal.db.versions import verdict_write, versions_at
from gradercal.errors import ConflictError, GradercalError, NotFoundError
from gradercal.judge.artifacts import ArtifactInput, artifact_context
from gradercal.judge.pricing import Price
from gradercal.judge.probes import expert_reference
from gradercal.judge.prompts import DEFAULT_PROMPT, PromptTemplate
from gradercal.judge.vision import ImageSet, task_images

if TYPE_CHECKING:  # the client and runner import the openai SDK (seconds): on first use
    from gradercal.judge.client import JudgeClient
    from gradercal.judge.runner import JudgeRunner, RunStats, Verdict, WorkItem

#: Seconds between heartbeats of a running run (the writer thread refreshes it, also idle).
HEARTBEAT_S = 30.0
#: A ``running`` run silent this long is ``interrupted`` even if its process id exists
#: (another host, or the id reused by another process).
STALE_AFTER_S = 600.0
#: Judge parameters that define a judge: a grader keeps them for all its verdicts.
IDENTITY_PARAMETERS = ("temperature", "samples", "max_tokens", "seed")
ScopeKind = Literal["all", "unjudged", "calibration", "tasks", "stale"]
_IN_BATCH = 500


@dataclass(frozen=True)
class Scope:
    """Which pairs a run judges.

    * ``unjudged``: every pair without a current verdict of this judge (failures, and
      verdicts a rubric revision made stale, included);
    * ``stale``: the pairs of criteria revised in a way that can change a verdict whose
      verdict of this judge is stale or missing (``gradercal.db.revisions``);
    * ``all``: every pair, re-judging existing verdicts (kept as revisions; identical
      requests come from the cache);
    * ``calibration``: unjudged pairs of responses that experts graded (a human
      judgment, or a calibration assignment);
    * ``tasks``: unjudged pairs of the listed tasks.
    """

    kind: ScopeKind = "unjudged"
    tasks: tuple[str, ...] = ()

    @staticmethod
    def parse(text: str) -> Scope:
        """Read ``all``, ``unjudged``, ``stale``, ``calibration`` or ``tasks:ID,ID,…``."""
        if text in ("all", "unjudged", "calibration", "stale"):
            return Scope(text)  # type: ignore[arg-type]
        if text.startswith("tasks:"):
            ids = tuple(t.strip() for t in text[6:].split(",") if t.strip())
            if ids:
                return Scope("tasks", ids)
        raise GradercalError(
            f"unknown scope {text!r}; use all, unjudged, stale, calibration or tasks:ID,ID,…"
        )

    def __str__(self) -> str:
        return f"tasks:{','.join(self.tasks)}" if self.kind == "tasks" else self.kind


@dataclass(frozen=True)
class PromptInfo:
    id: int
    content_hash: str
    name: str | None
    parent_hash: str | None
    created_at: datetime
    judges: tuple[str, ...]


@dataclass(frozen=True)
class JudgeInfo:
    """A judge grader as stored."""

    grader_id: int
    name: str
    model: str | None
    prompt_version_id: int | None
    prompt_hash: str | None
    parameters: dict[str, Any]


def identity(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters of ``parameters`` that define a judge."""
    return {k: parameters.get(k) for k in IDENTITY_PARAMETERS}


class JudgeStore:
    """Reads and writes the judge's data in one gradercal database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.repo = Repository(db)

    # -- prompt versions -------------------------------------------------------------
    def save_prompt(self, prompt: PromptTemplate) -> int:
        """Store ``prompt`` (once per content hash); returns its row id."""
        digest = prompt.content_hash
        with self.db.write() as s:
            found = s.scalar(
                select(m.PromptVersion.id).where(m.PromptVersion.content_hash == digest)
            )
            if found is not None:
                return found
            parent_id = None
            if prompt.parent_hash:
                parent_id = s.scalar(
                    select(m.PromptVersion.id).where(
                        m.PromptVersion.content_hash == prompt.parent_hash
                    )
                )
                if parent_id is None:
                    raise NotFoundError(f"parent prompt {prompt.parent_hash[:12]} is not stored")
            row = m.PromptVersion(
                content_hash=digest,
                name=prompt.name,
                parent_id=parent_id,
                system_template=prompt.system,
                user_template=prompt.user,
                few_shot=[dict(x) for x in prompt.few_shot],
                options=dict(prompt.options),
            )
            s.add(row)
            s.flush()
            return row.id

    def load_prompt(self, ref: str | None = None) -> PromptTemplate:
        """The prompt with content hash (or unique prefix of ≥ 6 characters) or name ``ref``.

        ``None`` or ``"default"`` (when no stored prompt has that name) is the shipped
        default. Of several versions with one name, the newest.
        """
        if ref is None:
            return DEFAULT_PROMPT
        with self.db.read() as s:
            row = None
            if len(ref) >= 6 and all(c in "0123456789abcdef" for c in ref.lower()):
                rows = s.scalars(
                    select(m.PromptVersion).where(m.PromptVersion.content_hash.startswith(ref))
                ).all()
                if len(rows) > 1:
                    raise GradercalError(f"prompt hash prefix {ref!r} is ambiguous")
                row = rows[0] if rows else None
            if row is None:
                row = s.scalars(
                    select(m.PromptVersion)
                    .where(m.PromptVersion.name == ref)
                    .order_by(m.PromptVersion.created_at.desc(), m.PromptVersion.id.desc())
                ).first()
            if row is None:
                if ref == "default":
                    return DEFAULT_PROMPT
                raise NotFoundError(f"no prompt version {ref!r}; see `gradercal judge prompt list`")
            return self._prompt(s, row)

    def _prompt(self, s: Session, row: m.PromptVersion) -> PromptTemplate:
        parent = None
        if row.parent_id is not None:
            parent = s.scalar(
                select(m.PromptVersion.content_hash).where(m.PromptVersion.id == row.parent_id)
            )
        prompt = PromptTemplate(
            system=row.system_template,
            user=row.user_template,
            few_shot=tuple(row.few_shot or ()),
            options=dict(row.options or {}),
            name=row.name,
            parent_hash=parent,
        )
        if prompt.content_hash != row.content_hash:
            raise GradercalError(
                f"prompt version {row.content_hash[:12]} was altered in the database"
            )
        return prompt

    def prompts(self) -> list[PromptInfo]:
        """Every stored prompt version, oldest first."""
        with self.db.read() as s:
            hashes = dict(s.execute(select(m.PromptVersion.id, m.PromptVersion.content_hash)).all())
            judges: dict[int, list[str]] = {}
            for pid, name in s.execute(
                select(m.Grader.prompt_version_id, m.Grader.name).where(
                    m.Grader.prompt_version_id.is_not(None)
                )
            ):
                if pid is not None:
                    judges.setdefault(pid, []).append(name)
            return [
                PromptInfo(
                    r.id,
                    r.content_hash,
                    r.name,
                    hashes.get(r.parent_id) if r.parent_id else None,
                    r.created_at,
                    tuple(sorted(judges.get(r.id, []))),
                )
                for r in s.scalars(select(m.PromptVersion).order_by(m.PromptVersion.id))
            ]

    # -- judges --------------------------------------------------------------------
    # -- alignment certificates (0009) -------------------------------------------------
    def save_certificate(
        self, judge: JudgeInfo, benchmark: str | None, certificate: Mapping[str, Any]
    ) -> int:
        """Store the certificate of ``gradercal judge align``; returns its id.

        Its ``baseline`` and ``chosen`` prompt versions must be stored already.
        """
        bench_id = self.repo.benchmark(benchmark).id
        with self.db.write() as s:
            ids: dict[str, int] = {}
            for role in ("baseline", "chosen"):
                digest = certificate[role]["prompt_version"]
                found = s.scalar(
                    select(m.PromptVersion.id).where(m.PromptVersion.content_hash == digest)
                )
                if found is None:
                    raise NotFoundError(f"{role} prompt {str(digest)[:12]} is not stored")
                ids[role] = found
            row = m.JudgeCertificate(
                grader_id=judge.grader_id,
                benchmark_id=bench_id,
                baseline_prompt_id=ids["baseline"],
                chosen_prompt_id=ids["chosen"],
                proven_better=bool(certificate.get("proven_better", False)),
                certificate=dict(certificate),
            )
            s.add(row)
            s.flush()
            return row.id

    def certificates(self, name: str | None = None) -> list[dict[str, Any]]:
        """Stored alignment certificates, newest first (of judge ``name`` if given):
        ``{"id", "judge", "benchmark", "proven_better", "created_at", "certificate"}``."""
        c = m.JudgeCertificate
        q = (
            select(c, m.Grader.name, m.Benchmark.name)
            .join(m.Grader, m.Grader.id == c.grader_id)
            .join(m.Benchmark, m.Benchmark.id == c.benchmark_id)
        )
        if name is not None:
            q = q.where(m.Grader.name == name)
        with self.db.read() as s:
            rows = s.execute(q.order_by(c.id.desc())).all()
            return [
                {
                    "id": r.id,
                    "judge": judge,
                    "benchmark": bench,
                    "proven_better": r.proven_better,
                    "created_at": _aware(r.created_at).isoformat(),
                    "certificate": dict(r.certificate),
                }
                for r, judge, bench in rows
            ]

    def judge(self, name: str) -> JudgeInfo | None:
        """The grader called ``name`` if it is a judge; None if there is no such grader."""
        with self.db.read() as s:
            g = s.scalar(select(m.Grader).where(m.Grader.name == name))
            if g is None:
                return None
            if g.kind != "judge":
                raise ConflictError(f"grader {name!r} is a {g.kind}, not a judge")
            digest = None
            if g.prompt_version_id is not None:
                digest = s.scalar(
                    select(m.PromptVersion.content_hash).where(
                        m.PromptVersion.id == g.prompt_version_id
                    )
                )
            return JudgeInfo(g.id, g.name, g.model, g.prompt_version_id, digest, dict(g.parameters))

    def ensure_judge(
        self, name: str, *, model: str, prompt: PromptTemplate, parameters: Mapping[str, Any]
    ) -> JudgeInfo:
        """The judge ``name`` for these settings, created on first use.

        Raises:
            ConflictError: ``name`` is a person, a judge imported without settings, or
                a judge with another model, prompt version or identity parameters.
        """
        prompt_id = self.save_prompt(prompt)
        wanted = identity(parameters)
        with self.db.write() as s:
            g = s.scalar(select(m.Grader).where(m.Grader.name == name))
            if g is None:
                g = m.Grader(
                    name=name,
                    kind="judge",
                    model=model,
                    prompt_version_id=prompt_id,
                    parameters=wanted,
                )
                s.add(g)
                s.flush()
                return JudgeInfo(g.id, name, model, prompt_id, prompt.content_hash, wanted)
            if g.kind != "judge":
                raise ConflictError(f"grader {name!r} is a {g.kind}; choose another --judge name")
            if g.model is None or g.prompt_version_id is None:
                raise ConflictError(
                    f"judge {name!r} was imported without a model and prompt; its verdicts "
                    "cannot be extended by the runner: choose another --judge name"
                )
            have = identity(g.parameters or {})
            differences = []
            if g.model != model:
                differences.append(f"model {g.model!r} (asked: {model!r})")
            if g.prompt_version_id != prompt_id:
                old = s.scalar(
                    select(m.PromptVersion.content_hash).where(
                        m.PromptVersion.id == g.prompt_version_id
                    )
                )
                differences.append(f"prompt {str(old)[:12]} (asked: {prompt.content_hash[:12]})")
            for key in IDENTITY_PARAMETERS:
                if have.get(key) != wanted.get(key):
                    differences.append(f"{key} {have.get(key)!r} (asked: {wanted.get(key)!r})")
            if differences:
                raise ConflictError(
                    f"judge {name!r} was run with "
                    + ", ".join(differences)
                    + "; use the same settings to extend it, or another --judge name"
                )
            return JudgeInfo(g.id, name, g.model, prompt_id, prompt.content_hash, have)

    # -- runs ----------------------------------------------------------------------
    def start_run(
        self, judge: JudgeInfo, *, model: str, base_url: str | None, parameters: Mapping[str, Any]
    ) -> int:
        """Record the start of a run; ``base_url`` must already be free of credentials."""
        with self.db.write() as s:
            run = m.JudgeRun(
                grader_id=judge.grader_id,
                prompt_version_id=judge.prompt_version_id,
                model=model,
                base_url=base_url,
                parameters=dict(parameters),
                status="running",
                host=_HOST,
                pid=os.getpid(),
                heartbeat_at=m.utcnow(),
            )
            s.add(run)
            s.flush()
            return run.id

    def finish_run(self, run_id: int, stats: RunStats) -> None:
        """Record how a run ended (status, counters of what was handed over, message)."""
        with self.db.write() as s:
            run = s.get(m.JudgeRun, run_id)
            if run is None:
                raise NotFoundError(f"no judge run {run_id}")
            params = dict(run.parameters or {})
            params["result"] = {
                "done": stats.done,
                "ok": stats.ok,
                "parse_failures": stats.parse_failures,
                "errors": stats.errors,
                "cached": stats.cached,
                "elapsed_s": round(stats.elapsed_s, 3),
                "message": stats.message,
                "adaptations": stats.adaptations,
            }
            run.parameters = params
            run.status = stats.status
            run.finished_at = run.heartbeat_at = m.utcnow()

    def mark_interrupted(
        self, *, now: datetime | None = None, stale_after: float = STALE_AFTER_S
    ) -> list[int]:
        """Mark ``interrupted`` every ``running`` run whose process is gone; their ids.

        A run is gone when it was started on this host by a process id that no longer
        exists, or when its last heartbeat (its start, for runs recorded before
        heartbeats) is older than ``stale_after`` seconds. Its ``finished_at`` becomes
        that last sign of life. The verdicts it committed stay; re-running resumes.
        """
        now = now or m.utcnow()
        gone: list[int] = []
        with self.db.write() as s:
            for run in s.scalars(select(m.JudgeRun).where(m.JudgeRun.status == "running")):
                last = _aware(run.heartbeat_at or run.started_at)
                reason = None
                if run.host == _HOST and run.pid is not None and not _pid_alive(run.pid):
                    reason = f"process {run.pid} on {run.host} ended without closing the run"
                elif (now - last).total_seconds() > stale_after:
                    where = f"process {run.pid} on {run.host}" if run.pid else "its process"
                    reason = f"no sign of life from {where} since {last:%Y-%m-%d %H:%M:%S} UTC"
                if reason is None:
                    continue
                params = dict(run.parameters or {})
                params["result"] = {**dict(params.get("result") or {}), "message": reason}
                run.parameters = params
                run.status = "interrupted"
                run.finished_at = last
                gone.append(run.id)
        return gone

    def runs(self, name: str | None = None) -> list[dict[str, Any]]:
        """Judge runs (of judge ``name``, or all), newest first.

        Runs whose process is gone are marked ``interrupted`` first (:meth:`mark_interrupted`;
        skipped on a database this process may not write, which is listed as it is).
        """
        with contextlib.suppress(DBAPIError):
            self.mark_interrupted()
        with self.db.read() as s:
            q = (
                select(m.JudgeRun, m.Grader.name)
                .join(m.Grader, m.Grader.id == m.JudgeRun.grader_id)
                .order_by(m.JudgeRun.id.desc())
            )
            if name is not None:
                q = q.where(m.Grader.name == name)
            out = []
            for run, grader in s.execute(q):
                out.append(
                    {
                        "id": run.id,
                        "judge": grader,
                        "model": run.model,
                        "base_url": run.base_url,
                        "status": run.status,
                        "n_requests": run.n_requests,
                        "prompt_tokens": run.prompt_tokens,
                        "completion_tokens": run.completion_tokens,
                        "cost_usd": run.cost_usd,
                        "started_at": run.started_at,
                        "finished_at": run.finished_at,
                        "heartbeat_at": run.heartbeat_at,
                        "host": run.host,
                        "pid": run.pid,
                        "parameters": run.parameters,
                    }
                )
            return out

    def open_run(
        self,
        judge: JudgeInfo,
        prompt: PromptTemplate,
        client: JudgeClient,
        *,
        record: Mapping[str, Any],
        price: Price | None = None,
        max_cost: float | None = None,
        judgments: bool = True,
        collect: Callable[[Verdict], None] | None = None,
    ) -> OpenRun:
        """Record a run's start and wire its runner to a started :class:`VerdictWriter`.

        ``record`` (kind, scope, options; never the key) is stored with the run's
        parameters; ``collect`` sees each verdict before it is queued for writing.
        Run ``OpenRun.runner`` on an event loop, then call :meth:`OpenRun.finish`.
        """
        run_id = self.start_run(
            judge,
            model=client.params.model,
            base_url=client.public_base_url,
            parameters={
                **record,
                "judge": client.params.to_dict(),
                "concurrency": client.concurrency,
                "timeout": client.retry.timeout,
                "max_retries": client.retry.max_attempts,
                "max_cost": max_cost,
                "http": client.http_backend,
                "price": None if price is None else {"input": price.input, "output": price.output},
            },
        )
        writer = self.writer(grader_id=judge.grader_id, run_id=run_id, judgments=judgments)

        def on_verdict(v: Verdict) -> None:
            if collect is not None:
                collect(v)
            writer.submit(v)

        from gradercal.judge.runner import JudgeRunner

        runner = JudgeRunner(
            client, prompt, on_verdict=on_verdict, cache=self.cache(), price=price,
            max_cost=max_cost,
        )  # fmt: skip
        return OpenRun(self, run_id, writer, runner)

    # -- calibration -------------------------------------------------------------------
    def calibrated_report(self, benchmark: str | None, name: str) -> dict[str, Any] | None:
        """The judge's figures under its active calibration (None: it has none).

        See :func:`gradercal.analysis.calibration.apply.calibrated_report`; the verdicts of every
        run, including runs made after the calibration was fitted, are read through it.
        """
        from gradercal.analysis.calibration.apply import calibrated_report
        from gradercal.db.calibrations import load_calibration

        saved = load_calibration(self.repo, benchmark, name)
        if saved is None:
            return None
        frames = self.repo.load_frames(benchmark)
        return calibrated_report(frames, name, saved.to_dict(full=True))

    # -- work lists ----------------------------------------------------------------
    def work_items(
        self,
        benchmark: str | None,
        judge: JudgeInfo | None,
        scope: Scope,
        prompt: PromptTemplate,
    ) -> list[WorkItem]:
        """The (response, criterion) pairs of judgment criteria this run must grade.

        ``judge`` None: a judge not created yet (every pair is unjudged; estimates).
        """
        bench = self.repo.benchmark(benchmark)
        grader_id = -1 if judge is None else judge.grader_id
        j = m.Judgment
        with self.db.read() as s:
            q = (
                select(m.Response.id, m.Criterion.id)
                .join(m.Task, m.Task.id == m.Response.task_id)
                .join(m.Criterion, m.Criterion.task_id == m.Task.id)
                .where(m.Response.benchmark_id == bench.id, m.Criterion.kind != "auto")
                .order_by(m.Task.position, m.Response.position, m.Response.id, m.Criterion.position)
            )
            if scope.kind != "all":
                q = q.outerjoin(
                    j,
                    and_(
                        j.response_id == m.Response.id,
                        j.criterion_id == m.Criterion.id,
                        j.grader_id == grader_id,
                    ),
                ).where(
                    or_(
                        j.id.is_(None),
                        j.met.is_(None),
                        j.task_version < m.Criterion.verdict_version,  # stale
                    )
                )
            if scope.kind == "stale":
                q = q.where(m.Criterion.verdict_version > 1)
            if scope.kind == "tasks":
                known = set(
                    s.scalars(
                        select(m.Task.external_id).where(
                            m.Task.benchmark_id == bench.id, m.Task.external_id.in_(scope.tasks)
                        )
                    )
                )
                missing = [t for t in scope.tasks if t not in known]
                if missing:
                    raise NotFoundError(
                        f"no task(s) {', '.join(map(repr, missing))} in {bench.name!r}"
                    )
                q = q.where(m.Task.external_id.in_(scope.tasks))
            elif scope.kind == "calibration":
                human = (
                    select(m.Judgment.id)
                    .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
                    .where(m.Judgment.response_id == m.Response.id, m.Grader.kind == "human")
                )
                calib = select(m.Assignment.id).where(
                    m.Assignment.response_id == m.Response.id, m.Assignment.calibration.is_(True)
                )
                q = q.where(or_(exists(human), exists(calib)))
            pairs = [(int(r), int(c)) for r, c in s.execute(q)]
            return self._items(s, pairs, prompt)

    def judged_items(
        self,
        benchmark: str | None,
        judge: JudgeInfo,
        *,
        limit: int | None = None,
        seed: int = 0,
    ) -> list[tuple[WorkItem, bool]]:
        """Pairs the judge's runner graded (with a verdict), with that verdict.

        ``limit`` draws that many at random (``seed``), in work-list order.
        """
        bench = self.repo.benchmark(benchmark)
        j = m.Judgment
        with self.db.read() as s:
            rows = s.execute(
                judgments_with_names(j.response_id, j.criterion_id, j.met, task=True)
                .where(
                    m.Response.benchmark_id == bench.id,
                    j.grader_id == judge.grader_id,
                    j.met.is_not(None),
                    j.source == "judge",
                    m.Criterion.kind != "auto",
                )
                .order_by(m.Task.position, m.Response.position, m.Response.id, m.Criterion.position)
            ).all()
            if limit is not None and len(rows) > limit:
                keep = set(random.Random(seed).sample(range(len(rows)), limit))
                rows = [r for i, r in enumerate(rows) if i in keep]
            met = {(int(r), int(c)): bool(v) for r, c, v in rows}
            items = self._items(s, list(met), self._judge_prompt(s, judge))
            return [(it, met[it.ref]) for it in items]  # type: ignore[index]

    def _judge_prompt(self, s: Session, judge: JudgeInfo) -> PromptTemplate:
        if judge.prompt_version_id is None:
            raise ConflictError(f"judge {judge.name!r} has no prompt version (imported?)")
        row = s.get(m.PromptVersion, judge.prompt_version_id)
        assert row is not None
        return self._prompt(s, row)

    def _items(
        self, s: Session, pairs: Sequence[tuple[int, int]], prompt: PromptTemplate
    ) -> list[WorkItem]:
        """Work items for (response row id, criterion row id) pairs; texts are shared."""
        from gradercal.judge.runner import WorkItem

        if not pairs:
            return []
        resp_ids = sorted({r for r, _ in pairs})
        crit_ids = sorted({c for _, c in pairs})
        responses: dict[int, Any] = {}
        for batch in _batches(resp_ids):
            for row in s.execute(
                select(
                    m.Response.id, m.Response.external_id, m.Response.text, m.Response.task_id
                ).where(m.Response.id.in_(batch))
            ):
                responses[row.id] = row
        criteria: dict[int, Any] = {}
        for batch in _batches(crit_ids):
            for row in s.execute(
                select(
                    m.Criterion.id,
                    m.Criterion.external_id,
                    m.Criterion.text,
                    m.Criterion.points,
                    m.Criterion.tags,
                ).where(m.Criterion.id.in_(batch))
            ):
                criteria[row.id] = row
        task_ids = sorted({r.task_id for r in responses.values()})
        tasks: dict[int, tuple[str, str, str, ImageSet | None]] = {}
        for batch in _batches(task_ids):
            for tid, ext, text in s.execute(
                select(m.Task.id, m.Task.external_id, m.Task.prompt).where(m.Task.id.in_(batch))
            ):
                tasks[tid] = (ext, text, *self._artifacts(s, tid, prompt))
        out = []
        for rid, cid in pairs:
            r, c = responses[rid], criteria[cid]
            task_ext, task_prompt, artifacts, images = tasks[r.task_id]
            out.append(
                WorkItem(
                    ref=(rid, cid),
                    task_id=task_ext,
                    response_id=r.external_id,
                    criterion_id=c.external_id,
                    response_text=r.text,
                    criterion_text=c.text,
                    points=c.points,
                    task_prompt=task_prompt,
                    criterion_tags=tuple(c.tags or ()),
                    artifacts=artifacts,
                    images=images,
                )
            )
        return out

    def _artifacts(
        self, s: Session, task_id: int, prompt: PromptTemplate
    ) -> tuple[str, ImageSet | None]:
        """A task's artifact text and, for a prompt with ``vision``, its figures."""
        budget, vision = prompt.artifact_budget_tokens, prompt.vision
        if not budget and vision is None:
            return "", None
        arts = s.execute(
            select(
                m.Artifact.kind,
                m.Artifact.title,
                m.Artifact.original_name,
                m.Artifact.path,
                m.Artifact.media_type,
                m.Artifact.url,
                m.Artifact.sha256,
            )
            .where(m.Artifact.task_id == task_id)
            .order_by(m.Artifact.position)
        ).all()
        inputs = []
        for kind, title, name, path, media_type, url, sha in arts:
            data = s.scalar(select(m.Blob.data).where(m.Blob.sha256 == sha)) if sha else None
            inputs.append(ArtifactInput(kind, title, name or path, media_type, url, data))
        if vision is None:
            return artifact_context(inputs, budget), None
        images = task_images(inputs, vision)
        return artifact_context(inputs, budget, images.notes()), images

    # -- analysis ------------------------------------------------------------------
    def length_frame(self, benchmark: str | None, judge_name: str) -> pd.DataFrame:
        """Per (response, criterion): response length in words, the judge's and experts' verdicts.

        Only pairs with a judge verdict and an expert reference (adjudication or human
        majority without a tie) are included.
        """
        frames = self.repo.load_frames(benchmark)
        jd = frames.judgments
        judge = jd[(jd["grader"] == judge_name) & jd["met"].notna()][
            ["response_id", "criterion_id", "met"]
        ].rename(columns={"met": "judge_met"})
        ref = expert_reference(jd, frames.adjudications)
        words = pd.DataFrame(
            [(r.id, len(r.text.split())) for r in self.repo.load_responses(benchmark)],
            columns=["response_id", "words"],
        )
        out = judge.merge(ref, on=["response_id", "criterion_id"]).merge(words, on="response_id")
        out["judge_met"] = out["judge_met"].astype(bool)
        return out.reset_index(drop=True)

    # -- cache and writing -----------------------------------------------------------
    def cache(self) -> DbCache:
        return DbCache(self.db)

    def writer(
        self, *, grader_id: int, run_id: int, judgments: bool = True, max_batch: int = 256
    ) -> VerdictWriter:
        """A started :class:`VerdictWriter` for one run (``judgments=False``: probes)."""
        return VerdictWriter(
            self.db, grader_id=grader_id, run_id=run_id, judgments=judgments, max_batch=max_batch
        )


@dataclass
class OpenRun:
    """A recorded run, its writer and its runner (:meth:`JudgeStore.open_run`)."""

    store: JudgeStore
    run_id: int
    writer: VerdictWriter
    runner: JudgeRunner

    def finish(self) -> RunStats:
        """Commit every verdict handed over and record how the run ended (always both)."""
        try:
            self.writer.close()
        finally:
            self.store.finish_run(self.run_id, self.runner.stats)
        return self.runner.stats


class DbCache:
    """The request cache in the ``judge_cache`` table (a :class:`RequestCache`)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get_many(self, keys: Sequence[str]) -> Mapping[str, Mapping[str, Any]]:
        out: dict[str, Mapping[str, Any]] = {}
        with self.db.read() as s:
            for batch in _batches(sorted(set(keys))):
                for key, reply in s.execute(
                    select(jm.JudgeCache.key, jm.JudgeCache.reply).where(
                        jm.JudgeCache.key.in_(batch)
                    )
                ):
                    out[key] = reply
        return out

    def put_many(self, entries: Sequence[tuple[str, dict[str, Any]]], model: str) -> None:
        """Keep replies obtained outside a judge run (e.g. the alignment optimizer's)."""
        with self.db.write() as s:
            _insert_cache_rows(s, entries, model)

    def __len__(self) -> int:
        from sqlalchemy import func

        with self.db.read() as s:
            return int(s.scalar(select(func.count()).select_from(jm.JudgeCache)) or 0)


class VerdictWriter:
    """Commits verdicts from a background thread, a small batch per transaction.

    :meth:`submit` only queues (it is called from the event loop); the thread collects
    what arrives within ``max_delay`` seconds of the first verdict (at most
    ``max_batch``) and commits it in one transaction with the cache entries and the
    run's counters: a crash loses at most that long's verdicts, Ctrl+C none (:meth:`close`
    commits the rest). :meth:`close` commits the rest and
    waits. An error in the thread is raised by the next :meth:`submit` or by
    :meth:`close`.
    """

    def __init__(
        self,
        db: Database,
        *,
        grader_id: int,
        run_id: int,
        judgments: bool = True,
        max_batch: int = 256,
        max_delay: float = 0.2,
        heartbeat: float = HEARTBEAT_S,
        background: bool = True,
    ) -> None:
        """``background=False``: no thread; the caller writes with :meth:`write`."""
        self.db = db
        self.grader_id = grader_id
        self.run_id = run_id
        self.judgments = judgments
        #: when the run started: its work items (criterion texts) were read just before
        self._started_at: datetime | None = None
        self.max_batch = max_batch
        self.max_delay = max_delay
        self.heartbeat = heartbeat
        self.saved = 0
        self.batches = 0
        self.error: BaseException | None = None
        self._queue: queue.SimpleQueue[Verdict | None] = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(
            target=self._loop, name="gradercal-judge-writer", daemon=True
        )
        if background:
            self._thread.start()

    def submit(self, verdict: Verdict) -> None:
        if self.error is not None:
            raise GradercalError(f"saving verdicts failed: {self.error}") from self.error
        if self._closed:
            raise GradercalError("the verdict writer is closed")
        self._queue.put(verdict)

    def close(self) -> None:
        """Commit everything submitted, stop the thread; raise its error if it had one."""
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            if self._thread.is_alive():
                self._thread.join()
        if self.error is not None:
            raise GradercalError(f"saving verdicts failed: {self.error}") from self.error

    def __enter__(self) -> VerdictWriter:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _loop(self) -> None:
        done = False
        while not done:
            try:
                first = self._queue.get(timeout=self.heartbeat)
            except queue.Empty:  # idle (long requests, a rate-limit pause): still alive
                try:
                    self._beat()
                except Exception as exc:  # surfaced by submit()/close()
                    self.error = exc
                    return
                continue
            if first is None:
                break
            batch = [first]
            deadline = time.monotonic() + self.max_delay
            while len(batch) < self.max_batch:
                wait = deadline - time.monotonic()
                try:
                    nxt = self._queue.get(timeout=wait) if wait > 0 else self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    done = True
                    break
                batch.append(nxt)
            try:
                self._write(batch)
            except BaseException as exc:  # surfaced by submit()/close()
                self.error = exc
                return
            self.saved += len(batch)
            self.batches += 1

    def _beat(self) -> None:
        with self.db.write() as s:
            s.execute(
                update(m.JudgeRun)
                .where(m.JudgeRun.id == self.run_id)
                .values(heartbeat_at=m.utcnow())
            )

    def _write(self, batch: Sequence[Verdict]) -> None:
        with self.db.write() as s:
            self.write(s, batch)

    def write(self, s: Session, batch: Sequence[Verdict]) -> None:
        """Write ``batch`` in the transaction of ``s``: judgments, cache entries, the run's
        counters and heartbeat (what one commit of the writer thread holds)."""
        now = m.utcnow()
        if self.judgments and batch:
            self._write_judgments(s, batch, now)
        if batch:
            _insert_cache(s, [e for v in batch for e in v.cache_entries], batch)
        s.execute(
            update(m.JudgeRun)
            .where(m.JudgeRun.id == self.run_id)
            .values(
                n_requests=m.JudgeRun.n_requests + sum(v.network_requests for v in batch),
                prompt_tokens=m.JudgeRun.prompt_tokens + sum(v.prompt_tokens for v in batch),
                completion_tokens=m.JudgeRun.completion_tokens
                + sum(v.completion_tokens for v in batch),
                cost_usd=m.JudgeRun.cost_usd + sum(v.cost_usd for v in batch),
                heartbeat_at=now,
            )
        )

    def _write_judgments(self, s: Session, batch: Sequence[Verdict], now: datetime) -> None:
        j = m.Judgment
        refs = [_ref(v) for v in batch]
        existing: dict[tuple[int, int], Row[Any]] = {}
        for row in s.execute(
            select(
                j.id,
                j.response_id,
                j.criterion_id,
                j.revision,
                j.source,
                j.updated_at,
                j.provenance,
                j.judge_run_id,
                j.task_version,
                *[getattr(j, f) for f in JUDGMENT_FIELDS],
            ).where(j.grader_id == self.grader_id, tuple_(j.response_id, j.criterion_id).in_(refs))
        ):
            existing[(row.response_id, row.criterion_id)] = row
        versions = self._given_under(s, {r for r, _c in refs})
        verdict_versions = (
            dict(
                s.execute(
                    select(m.Criterion.id, m.Criterion.verdict_version).where(
                        m.Criterion.id.in_(sorted({c for _r, c in refs}))
                    )
                ).all()
            )
            if existing
            else {}
        )
        new_rows: list[dict[str, Any]] = []
        for v in batch:
            rid, cid = _ref(v)
            values = {
                "met": v.met,
                "level": None,
                "confidence": v.confidence,
                "rationale": v.rationale,
                "unclear": False,
                "unclear_note": None,
                "provenance": v.provenance,
                "judge_run_id": self.run_id,
                "task_version": versions[rid],
            }
            old = existing.get((rid, cid))
            if old is None:
                new_rows.append(
                    {
                        "grader_id": self.grader_id,
                        "response_id": rid,
                        "criterion_id": cid,
                        **values,
                        "source": "judge",
                        "revision": 1,
                        "created_at": now,
                        "updated_at": now,
                    }
                )
                continue
            if v.status != "ok" and old.met is not None:
                continue  # a failure never replaces a verdict
            write = verdict_write(
                stored_version=int(old.task_version),
                same=_same_verdict(old, values),
                given_under=versions[rid],
                verdict_version=int(verdict_versions.get(cid, 1)),
                answered=v.met is not None,
            )
            if write == "unchanged":
                continue  # (the same verdict given again on a stale one confirms it)
            _supersede(s, old, values, now)
        if new_rows:
            s.connection().execute(insert(_table(m.Judgment)), new_rows)

    def _given_under(self, s: Session, response_ids: set[int]) -> dict[int, int]:
        """The task version each verdict is given under, by response: the one its task
        had when the run started, as the work items were read then (a criterion revised
        during a long run leaves the verdicts on its old wording stale)."""
        if self._started_at is None:
            self._started_at = s.scalar(
                select(m.JudgeRun.started_at).where(m.JudgeRun.id == self.run_id)
            )
        task_of: dict[int, int] = {}
        for batch in _batches(sorted(response_ids)):
            task_of.update(
                (int(r), int(t))
                for r, t in s.execute(
                    select(m.Response.id, m.Response.task_id).where(m.Response.id.in_(batch))
                )
            )
        when = self._started_at if self._started_at is not None else m.utcnow()
        at = versions_at(s, set(task_of.values()), _aware(when))
        return {r: at[t] for r, t in task_of.items()}


def _same_verdict(old: Row[Any], values: Mapping[str, Any]) -> bool:
    if any(getattr(old, f) != values[f] for f in ("met", "confidence", "rationale")):
        return False
    before = [x.get("request_hash") for x in (old.provenance or {}).get("samples", [])]
    after = [x.get("request_hash") for x in values["provenance"].get("samples", [])]
    return before == after and old.source == "judge"


def _supersede(s: Session, old: Row[Any], values: Mapping[str, Any], now: datetime) -> None:
    """Keep the old value (provenance included) as a revision, then update the row."""
    snapshot = judgment_snapshot(old, "judge_run_id", "provenance")
    s.add(
        m.Revision(
            entity="judgment",
            entity_id=old.id,
            revision=old.revision,
            data=snapshot,
            actor=None,
            source="judge",
            changed_at=now,
        )
    )
    s.execute(
        update(m.Judgment)
        .where(m.Judgment.id == old.id)
        .values(**values, revision=old.revision + 1, source="judge", updated_at=now)
    )


def _insert_cache(
    s: Session,
    entries: Sequence[tuple[str, dict[str, Any]]],
    batch: Sequence[Verdict],
    model_name: str | None = None,
) -> None:
    if not entries:
        return
    if model_name is None:
        model_name = str(batch[0].provenance.get("model", ""))
    _insert_cache_rows(s, entries, model_name)


def _insert_cache_rows(
    s: Session, entries: Sequence[tuple[str, dict[str, Any]]], model: str
) -> None:
    if not entries:
        return
    model = model[:200]
    rows: list[dict[str, Any]] = list(
        {k: {"key": k, "model": model, "reply": v} for k, v in entries}.values()
    )
    dialect = s.connection().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        stmt: Any = pg_insert(_table(jm.JudgeCache)).on_conflict_do_nothing(index_elements=["key"])
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        stmt = sqlite_insert(_table(jm.JudgeCache)).on_conflict_do_nothing(index_elements=["key"])
    else:  # pragma: no cover - other backends: skip keys already there
        have = set(
            s.scalars(
                select(jm.JudgeCache.key).where(jm.JudgeCache.key.in_([r["key"] for r in rows]))
            )
        )
        rows = [r for r in rows if r["key"] not in have]
        stmt = insert(_table(jm.JudgeCache))
    stamp = m.utcnow()
    for r in rows:
        r["created_at"] = stamp
    if rows:
        s.execute(stmt, rows)


_HOST = socket.gethostname()[:255]


def _pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this host (True when that cannot be told)."""
    if pid == os.getpid():
        return True
    if os.name != "posix":
        return True  # no cheap check: the heartbeat decides
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. PermissionError: it exists, owned by someone else
        return True
    return True


def _aware(value: datetime) -> datetime:
    """``value`` as an aware UTC datetime (SQLite returns naive ones)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _ref(v: Verdict) -> tuple[int, int]:
    ref: Any = v.item.ref
    return int(ref[0]), int(ref[1])


def _table(model: type[m.Base]) -> Table:
    return model.__table__  # type: ignore[return-value]


def _batches(values: Sequence[Any], size: int = _IN_BATCH) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]
