"""Persistence of a judge run through the Batch API (``gradercal judge run --batch``).

A batch run is a ``judge_run`` row with ``parameters["kind"] == "batch"``; the state of
its current round (:mod:`gradercal.judge.batch`: token, input file id, batch id, status,
items stored) is kept under ``parameters["batch"]`` and committed at every step, so a
killed process loses nothing: :func:`open_batch_run` finds a run whose round is still
open (its process gone) and hands it to the next ``judge run --batch`` of that judge,
which resumes it under the same run id. Verdicts, cache entries, the run's counters and
the round's state are committed together (:meth:`DbBatchStore.store`), so a verdict is
stored once however often the process is killed.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from gradercal.db import models as m
from gradercal.db.judging import (
    _HOST,
    DbCache,
    JudgeInfo,
    JudgeStore,
    Scope,
    VerdictWriter,
    _insert_cache,
)
from gradercal.errors import ConflictError
from gradercal.judge.prompts import PromptTemplate

if TYPE_CHECKING:
    from gradercal.judge.runner import Verdict, WorkItem

#: Round states of a batch that is not finished (:data:`gradercal.judge.batch.OPEN_STATES`).
_OPEN = ("uploading", "uploaded", "submitted")


def open_batch_run(
    store: JudgeStore, judge: JudgeInfo, *, base_url: str | None, start: Mapping[str, Any]
) -> tuple[int, bool]:
    """The run id a ``--batch`` run of ``judge`` continues, and whether it is resumed.

    A batch run of this judge whose round is open and whose process is gone (it is
    ``interrupted``, :meth:`JudgeStore.mark_interrupted` is called first) is taken over:
    status ``running`` again under this process. Otherwise a new run is recorded with
    ``start`` (the keyword arguments of :meth:`JudgeStore.start_run`).

    Raises:
        ConflictError: Another live process follows an open batch of this judge, or the
            open batch was sent to another server.
    """
    store.mark_interrupted()
    with store.db.write() as s:
        runs = s.scalars(
            select(m.JudgeRun)
            .where(m.JudgeRun.grader_id == judge.grader_id)
            .order_by(m.JudgeRun.id.desc())
        ).all()
        for run in runs:
            params = dict(run.parameters or {})
            state = params.get("batch") or {}
            if params.get("kind") != "batch" or state.get("state") not in _OPEN:
                continue
            if run.status == "running":
                raise ConflictError(
                    f"judge run {run.id} of {judge.name!r} is following batch "
                    f"{state.get('batch_id') or '(being submitted)'} in process {run.pid} on "
                    f"{run.host}; wait for it, or stop that process and run again to resume"
                )
            if run.base_url != base_url:
                raise ConflictError(
                    f"judge run {run.id} of {judge.name!r} has an open batch at "
                    f"{run.base_url or 'the default API'}: resume it with that --base-url"
                )
            result = dict(params.get("result") or {})
            resumes = list(params.get("resumed") or [])
            resumes.append({"at": m.utcnow().isoformat(), "after": result.get("message")})
            params["resumed"] = resumes
            params.pop("result", None)
            run.parameters = params
            run.status = "running"
            run.finished_at = None
            run.pid = os.getpid()
            run.host = _HOST
            run.heartbeat_at = m.utcnow()
            return run.id, True
    return store.start_run(judge, **start), False


def has_open_batch(store: JudgeStore, judge: JudgeInfo) -> bool:
    """Whether a batch run of ``judge`` has a round not collected yet."""
    with store.db.read() as s:
        for params in s.scalars(
            select(m.JudgeRun.parameters).where(m.JudgeRun.grader_id == judge.grader_id)
        ):
            p = params or {}
            if p.get("kind") == "batch" and (p.get("batch") or {}).get("state") in _OPEN:
                return True
    return False


class DbBatchStore:
    """:class:`gradercal.judge.batch.BatchStore` on one run of a gradercal database."""

    def __init__(
        self,
        store: JudgeStore,
        judge: JudgeInfo,
        run_id: int,
        *,
        benchmark: str | None,
        scope: Scope,
        prompt: PromptTemplate,
        model: str,
    ) -> None:
        self.js = store
        self.judge = judge
        self.run_id = run_id
        self.benchmark = benchmark
        self.scope = scope
        self.prompt = prompt
        self.model = model
        self._cache = DbCache(store.db)
        self._rows = VerdictWriter(
            store.db, grader_id=judge.grader_id, run_id=run_id, background=False
        )

    def load_state(self) -> dict[str, Any] | None:
        with self.js.db.read() as s:
            params = s.scalar(select(m.JudgeRun.parameters).where(m.JudgeRun.id == self.run_id))
        state = (params or {}).get("batch")
        return dict(state) if state else None

    def save_state(self, state: Mapping[str, Any]) -> None:
        with self.js.db.write() as s:
            self._put_state(s, state)

    def _put_state(self, s: Any, state: Mapping[str, Any]) -> None:
        run = s.get(m.JudgeRun, self.run_id)
        params = dict(run.parameters or {})
        params["batch"] = dict(state)
        rounds = dict(params.get("batches") or {})
        if state.get("batch_id"):  # every round's batch, for `judge runs`
            rounds[str(state["round"])] = {
                "batch_id": state["batch_id"],
                "input_file_id": state.get("input_file_id"),
                "status": state.get("status"),
                "lines": state.get("lines"),
            }
            params["batches"] = rounds
        run.parameters = params
        run.heartbeat_at = m.utcnow()

    def work_items(self, first_round: bool = True) -> list[WorkItem]:
        scope = self.scope
        if not first_round and scope.kind == "all":
            scope = Scope("unjudged")  # what is left: items still without a current verdict
        return self.js.work_items(self.benchmark, self.judge, scope, self.prompt)

    def encode_ref(self, ref: Hashable) -> str:
        pair: Any = ref
        return f"{int(pair[0])}.{int(pair[1])}"

    def items_for(self, refs: Sequence[str]) -> dict[str, WorkItem]:
        pairs: list[tuple[int, int]] = []
        for text in refs:
            a, _, b = text.partition(".")
            if a.isdigit() and b.isdigit():
                pairs.append((int(a), int(b)))
        if not pairs:
            return {}
        with self.js.db.read() as s:
            known = set()
            for chunk in _chunks(pairs, 500):
                rs = {r for r, _ in chunk}
                cs = {c for _, c in chunk}
                q = (
                    select(m.Response.id, m.Criterion.id)
                    .join(m.Criterion, m.Criterion.task_id == m.Response.task_id)
                    .where(m.Response.id.in_(rs), m.Criterion.id.in_(cs))
                )
                known |= {(int(r), int(c)) for r, c in s.execute(q)}
            pairs = [p for p in pairs if p in known]
            items = self.js._items(s, pairs, self.prompt)
        return {self.encode_ref(it.ref): it for it in items}

    def cache_get_many(self, keys: Sequence[str]) -> Mapping[str, Mapping[str, Any]]:
        return self._cache.get_many(keys)

    def spent(self) -> float:
        with self.js.db.read() as s:
            cost = s.scalar(select(m.JudgeRun.cost_usd).where(m.JudgeRun.id == self.run_id))
        return float(cost or 0.0)

    def store(
        self,
        verdicts: Sequence[Verdict],
        cache_entries: Sequence[tuple[str, dict[str, Any]]],
        state: Mapping[str, Any],
    ) -> None:
        with self.js.db.write() as s:
            self._rows.write(s, verdicts)
            _insert_cache(s, cache_entries, verdicts, self.model)
            self._put_state(s, state)


def _chunks(values: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [values[i : i + size] for i in range(0, len(values), size)]


__all__ = ["DbBatchStore", "has_open_batch", "open_batch_run"]
