"""The judge runner: every (response, criterion) work item through the client, verdict by verdict.

:class:`JudgeRunner` pulls :class:`WorkItem` objects from an iterable, renders each
with the prompt, asks the client for ``samples`` verdicts (cached replies are looked
up in bulk beforehand) and hands every :class:`Verdict` to ``on_verdict`` as soon as
it is complete, so the caller can commit it right away. Memory stays flat however
long the run: items are read lazily and nothing is kept per item after its verdict.
An item with figures (``images``, a prompt with the ``vision`` option) carries them as
image parts of its last message (:meth:`JudgeRunner.messages`) and records them in its
verdict's provenance.

A verdict's ``met`` is the majority of the samples that parsed (ties go to the first
sample's verdict); ``p_met`` is the mean P(met) from log-probabilities when every
such sample has one, else, with two samples or more parsed, the share of samples that
say met (self-consistency, ``confidence_source`` ``samples``); with one sample and no
log-probabilities nothing was measured: ``p_met`` and ``confidence`` are None
(``confidence_source`` None), never a made-up 1.0. ``confidence`` is the
probability of the verdict given (``p_met`` when met, ``1 − p_met`` when not). A
work item none of whose samples parsed is a ``parse_failure`` (or an ``error`` after
HTTP failures), with ``met`` None: never "not met".

A run in which no item got a verdict ends ``no_verdicts``, never ``completed``; it
gives up early, once the first :data:`GIVE_UP_AFTER` items all failed.

The run stops early, cleanly, when the cost reaches ``max_cost`` (no new request is
started once the spent cost plus the expected cost of the requests in flight would
pass it), on a :class:`~gradercal.judge.client.JudgeFatalError`, or when ``stop()``
is called (a UI's Cancel). Cancelling the task (Ctrl+C) stops it at once; verdicts
already handed over are the caller's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from itertools import islice
from typing import Any, Literal, Protocol

from gradercal.judge.client import JudgeClient, JudgeFatalError, SampleOutcome
from gradercal.judge.pricing import Price
from gradercal.judge.prompts import PromptContext, PromptTemplate
from gradercal.judge.request import combine_samples
from gradercal.judge.vision import ImageSet, with_images

VerdictStatus = Literal["ok", "parse_failure", "error"]
RunStatus = Literal[
    "running", "completed", "no_verdicts", "stopped_cost", "cancelled", "failed", "interrupted"
]
#: The run gives up (status ``no_verdicts``) when this many items in a row, from the
#: start, got no verdict: a server or model whose replies cannot be read.
GIVE_UP_AFTER = 20


@dataclass(frozen=True)
class WorkItem:
    """One (response, criterion) pair to judge.

    ``ref`` is the caller's own handle (e.g. database keys), passed through untouched.
    ``images``: the task's figures, for a prompt with the ``vision`` option (None: text
    only); one :class:`~gradercal.judge.vision.ImageSet` is shared by a task's items.
    """

    ref: Hashable
    task_id: str
    response_id: str
    criterion_id: str
    response_text: str
    criterion_text: str
    points: int = 0
    task_prompt: str = ""
    criterion_tags: tuple[str, ...] = ()
    artifacts: str = ""
    images: ImageSet | None = None

    def context(self) -> PromptContext:
        return PromptContext(
            response=self.response_text,
            criterion=self.criterion_text,
            points=self.points,
            task_prompt=self.task_prompt,
            criterion_tags=self.criterion_tags,
            artifacts=self.artifacts,
        )


@dataclass
class Verdict:
    """The judge's verdict on one work item, with everything needed to store it."""

    item: WorkItem
    status: VerdictStatus
    met: bool | None
    confidence: float | None
    p_met: float | None
    rationale: str | None
    provenance: dict[str, Any]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    network_requests: int = 0
    cache_entries: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def cached(self) -> bool:
        return self.network_requests == 0


@dataclass
class RunStats:
    """Counters of a run, updated as verdicts arrive."""

    total: int | None = None
    done: int = 0
    ok: int = 0
    parse_failures: int = 0
    errors: int = 0
    cached: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    status: RunStatus = "running"
    message: str | None = None
    elapsed_s: float = 0.0
    adaptations: list[str] = field(default_factory=list)
    #: verdicts whose confidence was measured (log-probabilities or several samples)
    with_confidence: int = 0
    #: verdicts from replies that asked for log-probabilities and carried none
    logprobs_missing: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class RequestCache(Protocol):
    """Replies known from earlier requests, looked up by cache key."""

    def get_many(self, keys: Sequence[str]) -> Mapping[str, Mapping[str, Any]]: ...


class MemoryCache:
    """An in-memory :class:`RequestCache` (tests, probes without a database)."""

    def __init__(self) -> None:
        self.data: dict[str, dict[str, Any]] = {}

    def get_many(self, keys: Sequence[str]) -> Mapping[str, Mapping[str, Any]]:
        return {k: self.data[k] for k in keys if k in self.data}

    def put(self, verdict: Verdict) -> None:
        for key, value in verdict.cache_entries:
            self.data[key] = value


def aggregate(
    item: WorkItem,
    outcomes: Sequence[SampleOutcome],
    *,
    prompt: PromptTemplate,
    client: JudgeClient,
    price: Price | None,
) -> Verdict:
    """Combine the samples of one item into a :class:`Verdict` with its provenance."""
    good = [o for o in outcomes if o.status == "ok" and o.met is not None]
    prompt_tokens = sum(o.prompt_tokens for o in outcomes)
    completion_tokens = sum(o.completion_tokens for o in outcomes)
    requests = sum(o.attempts for o in outcomes)
    cost = price.cost(prompt_tokens, completion_tokens) if price is not None else 0.0
    met: bool | None = None
    p_met: float | None = None
    source: str | None = None
    status: VerdictStatus
    if good:
        status = "ok"
        met, p_met, source = combine_samples([(o.met, o.p_met) for o in good])
    else:
        status = "parse_failure" if any(o.status == "parse_failure" for o in outcomes) else "error"
    confidence = None if p_met is None or met is None else (p_met if met else 1.0 - p_met)
    rationale = next((o.explanation for o in good if o.met == met), None)
    provenance: dict[str, Any] = {
        "status": status,
        "prompt_version": prompt.content_hash,
        "prompt_name": prompt.name,
        "model": client.params.model,
        "base_url": client.public_base_url,
        "parameters": dict(client.params_dict),
        "adaptations": list(client.adaptations),
        "p_met": p_met,
        "confidence_source": source,
        "logprobs_asked": client.settings().logprobs,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "latency_s": round(max((o.latency_s for o in outcomes), default=0.0), 4),
        "requests": requests,
        "cost_usd": cost,
        "samples": [o.provenance() for o in outcomes],
    }
    if item.images is not None:
        provenance["vision"] = item.images.provenance()
    return Verdict(
        item=item,
        status=status,
        met=met,
        confidence=None if confidence is None else round(confidence, 6),
        p_met=p_met,
        rationale=rationale,
        provenance=provenance,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost_usd=cost,
        network_requests=requests,
        cache_entries=[(o.cache_key, o.cache_value) for o in outcomes if o.cache_value],
    )


class JudgeRunner:
    """Runs work items through a :class:`JudgeClient`.

    Args:
        client: The client (its ``concurrency`` bounds the requests in flight).
        prompt: The prompt version.
        on_verdict: Called with each verdict as soon as it is complete (from the event
            loop's thread; keep it quick, e.g. put it on a writer's queue).
        cache: Known replies; looked up in bulk, a chunk of items at a time.
        price: Price of the model (None: cost not counted).
        max_cost: Stop once this many USD would be exceeded (requires ``price``).
        progress: Called with the run's :class:`RunStats` after each verdict.
        chunk: Items whose cache entries are looked up together.
    """

    def __init__(
        self,
        client: JudgeClient,
        prompt: PromptTemplate,
        *,
        on_verdict: Callable[[Verdict], None],
        cache: RequestCache | None = None,
        price: Price | None = None,
        max_cost: float | None = None,
        progress: Callable[[RunStats], None] | None = None,
        chunk: int = 256,
    ) -> None:
        if max_cost is not None and price is None:
            raise ValueError("max_cost needs the model's price")
        self.client = client
        self.prompt = prompt
        self.on_verdict = on_verdict
        self.cache = cache
        self.price = price
        self.max_cost = max_cost
        self.progress = progress
        self.chunk = max(chunk, client.concurrency)
        self.stats = RunStats()
        self._stopping = False
        self._in_flight_items = 0
        self._last_problem: str | None = None

    def messages(self, item: WorkItem) -> list[dict[str, Any]]:
        """The chat messages of one request: the prompt's (:meth:`PromptTemplate.render`),
        with the item's figures as image parts of the last one when it has some."""
        messages = self.prompt.render(item.context())
        if item.images is not None and item.images.images:
            return with_images(messages, item.images.images)
        return list(messages)

    def stop(self, reason: str = "cancelled") -> None:
        """Start no new work item; the run ends when those in flight are done."""
        if not self._stopping:
            self._stopping = True
            if self.stats.status == "running":
                self.stats.status = "cancelled" if reason == "cancelled" else "stopped_cost"
                self.stats.message = None if reason == "cancelled" else reason

    async def run(self, items: Iterable[WorkItem], total: int | None = None) -> RunStats:
        """Judge every item (until stopped); returns the final :class:`RunStats`."""
        start = time.monotonic()
        self.stats.total = total
        samples = self.client.params.samples
        queue: asyncio.Queue[_Entry | None] = asyncio.Queue(maxsize=self.chunk)
        n_workers = min(self.client.concurrency, total) if total else self.client.concurrency
        n_workers = max(n_workers, 1)
        first = asyncio.Event()

        async def produce() -> None:
            for batch in _chunks(iter(items), self.chunk):
                if self._stopping:
                    break
                rendered = [self.messages(it) for it in batch]
                known: Mapping[str, Mapping[str, Any]] = {}
                if self.cache is not None:
                    keys = [
                        self.client.cache_key(self.client.request_body(msgs), i)
                        for msgs in rendered
                        for i in range(samples)
                    ]
                    known = await asyncio.to_thread(self.cache.get_many, keys)
                for it, msgs in zip(batch, rendered, strict=True):
                    if self._stopping:
                        break
                    await queue.put((it, msgs, known))
            for _ in range(n_workers):
                await queue.put(None)

        async def work() -> None:
            while (entry := await queue.get()) is not None:
                if self._stopping:
                    continue
                item, messages, known = entry
                if self.max_cost is not None and self._in_flight_items and not first.is_set():
                    await first.wait()  # learn what one item costs before spending in parallel
                if self._stopping:
                    continue
                if not self._budget_allows():
                    self.stop(f"max cost {self.max_cost:g} USD reached")
                    continue
                self._in_flight_items += 1
                try:
                    verdict = await self._judge(item, known, messages)
                finally:
                    self._in_flight_items -= 1
                self._account(verdict)
                first.set()
                self.on_verdict(verdict)
                if self.progress is not None:
                    self.stats.elapsed_s = time.monotonic() - start
                    self.progress(self.stats)

        try:
            try:
                async with asyncio.TaskGroup() as tg:
                    tg.create_task(produce())
                    for _ in range(n_workers):
                        tg.create_task(work())
            except* JudgeFatalError as group:
                self.stats.status = "failed"
                self.stats.message = str(group.exceptions[0])
        except BaseExceptionGroup as group:  # e.g. on_verdict failed: raise that error itself
            error = group.exceptions[0]
            self.stats.status = "failed"
            self.stats.message = str(error)
            raise error from group
        except asyncio.CancelledError:
            self.stats.status = "cancelled"
            raise
        finally:
            self.stats.elapsed_s = time.monotonic() - start
            self.stats.adaptations = list(self.client.adaptations)
        if self.stats.status == "running":
            self.stats.status = "completed"
        s = self.stats
        gave_up = s.status == "no_verdicts"
        if gave_up or (s.status == "completed" and s.done and not s.ok):
            s.status = "no_verdicts"
            s.message = (
                ("gave up: " if gave_up else "")
                + f"{s.ok} verdicts in {s.done} items ({s.parse_failures} without a "
                f"readable verdict, {s.errors} errors); last problem: "
                f"{self._last_problem or 'unknown'}"
            )
        return self.stats

    async def _judge(
        self,
        item: WorkItem,
        known: Mapping[str, Mapping[str, Any]],
        messages: list[dict[str, Any]] | None = None,
    ) -> Verdict:
        if messages is None:
            messages = self.messages(item)
        n = self.client.params.samples
        if n == 1:
            outcomes = [await self.client.sample(messages, 0, known)]
        else:
            outcomes = list(
                await asyncio.gather(*(self.client.sample(messages, i, known) for i in range(n)))
            )
        return aggregate(item, outcomes, prompt=self.prompt, client=self.client, price=self.price)

    def _account(self, v: Verdict) -> None:
        s = self.stats
        s.done += 1
        s.requests += v.network_requests
        s.prompt_tokens += v.prompt_tokens
        s.completion_tokens += v.completion_tokens
        s.cost_usd += v.cost_usd
        if v.cached:
            s.cached += 1
        if v.status == "ok":
            s.ok += 1
            if v.confidence is not None:
                s.with_confidence += 1
            if v.provenance.get("logprobs_asked") and v.provenance.get("confidence_source") != (
                "logprobs"
            ):
                s.logprobs_missing += 1
        else:
            if v.status == "parse_failure":
                s.parse_failures += 1
            else:
                s.errors += 1
            errors = [e for o in v.provenance.get("samples", ()) for e in o.get("errors", ())]
            if errors:
                self._last_problem = str(errors[-1])[:300]
            if not s.ok and s.done >= GIVE_UP_AFTER and s.status == "running":
                self.stop(f"no verdict in the first {s.done} items")
                s.status = "no_verdicts"
        if self.max_cost is not None and s.cost_usd >= self.max_cost:
            self.stop(f"max cost {self.max_cost:g} USD reached")

    def _budget_allows(self) -> bool:
        if self.max_cost is None:
            return True
        s = self.stats
        paid = s.done - s.cached
        per_item = s.cost_usd / paid if paid else 0.0
        return s.cost_usd + per_item * (self._in_flight_items + 1) <= self.max_cost


#: Completion tokens assumed per reply in :func:`estimate_run` (a JSON verdict with a
#: one- or two-sentence explanation).
EXPECTED_COMPLETION_TOKENS = 80


@dataclass(frozen=True)
class RunEstimate:
    """What a run would send, before sending it (cache hits not deducted).

    ``prompt_tokens`` is estimated from the rendered prompts (characters / 4);
    ``completion_tokens`` assumes :data:`EXPECTED_COMPLETION_TOKENS` per request and
    ``completion_tokens_max`` the ``max_tokens`` limit. Costs are None without a price.
    """

    items: int
    requests: int
    prompt_tokens: int
    completion_tokens: int
    completion_tokens_max: int | None
    cost_usd: float | None
    cost_usd_max: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def estimate_run(
    items: Iterable[WorkItem],
    prompt: PromptTemplate,
    *,
    samples: int = 1,
    max_tokens: int | None = None,
    price: Price | None = None,
    completion_tokens: int = EXPECTED_COMPLETION_TOKENS,
) -> RunEstimate:
    """Size and cost of judging ``items`` (every sample a request; retries not counted);
    figures count :meth:`~gradercal.judge.vision.ImageSet.estimated_tokens`."""
    from gradercal.judge.artifacts import estimate_tokens

    n = 0
    per_sample = 0
    for item in items:
        n += 1
        per_sample += sum(estimate_tokens(msg["content"]) for msg in prompt.render(item.context()))
        if item.images is not None:
            per_sample += item.images.estimated_tokens()
    requests = n * samples
    prompt_tokens = per_sample * samples
    out_tokens = requests * completion_tokens
    out_max = None if max_tokens is None else requests * max_tokens
    return RunEstimate(
        items=n,
        requests=requests,
        prompt_tokens=prompt_tokens,
        completion_tokens=out_tokens,
        completion_tokens_max=out_max,
        cost_usd=None if price is None else price.cost(prompt_tokens, out_tokens),
        cost_usd_max=None
        if price is None or out_max is None
        else price.cost(prompt_tokens, out_max),
    )


_Entry = tuple[WorkItem, list[dict[str, Any]], Mapping[str, Mapping[str, Any]]]


def _chunks(it: Iterator[WorkItem], size: int) -> Iterator[list[WorkItem]]:
    while batch := list(islice(it, size)):
        yield batch
