"""The judge through the OpenAI Batch API: one JSONL file of requests, results a day later.

:class:`BatchJudge` sends the work items a :class:`~gradercal.judge.runner.JudgeRunner`
would send, as the lines of one batch (``POST /v1/files`` with purpose ``batch``, then
``POST /v1/batches`` with ``endpoint="/v1/chat/completions"`` and
``completion_window="24h"``), follows it (``GET /v1/batches/{id}``: ``validating`` →
``in_progress`` → ``finalizing`` → ``completed``, or ``failed``, ``expired``,
``cancelled``) and reads its output and error files (``GET /v1/files/{id}/content``).
Each line's body is :meth:`JudgeClient.request_body` of :meth:`JudgeRunner.messages`,
so its cache key, reply parsing, confidence and provenance are the online runner's; a
verdict records the batch it came from under ``provenance["batch"]``.

**Rounds.** A run is a sequence of rounds, each one batch. A round's lines are the work
list less the items this run already answered, less every sample whose reply is in the
request cache (an item all of whose samples are cached gets its verdict at once, as
online). When the batch ends, every item all of whose samples came back gets its verdict
(a line that failed is an ``error`` sample with the server's message, an unparseable
reply a ``parse_failure`` one); the samples of an item that did not finish (an expired or
cancelled batch) go to the cache only. A following round then sends what is left —
failed, unparsed and unfinished lines — up to ``max_rounds`` rounds (a round plays the
part of the online client's retries and re-asks).

**Crash safety.** Every step is recorded in the :class:`BatchStore` *before* the step it
guards can be lost: the round's state (with a random token) is committed before the
upload, the input file's id before the batch is created, the batch's id as soon as it
is known; verdicts are committed a chunk of items at a time together with the number of
items stored. A killed process is resumed by the next run (:meth:`BatchJudge.run` reads
the state back): a file uploaded but not recorded is found again by its name (which
holds the token), a batch created but not recorded by its metadata (the token), so no
round is ever submitted twice, and storing restarts after the last committed chunk
(result files are immutable), so no verdict is stored twice.

Costs are counted at the batch price (:meth:`~gradercal.judge.pricing.Price.batch`).
``max_cost`` limits what a round submits: lines are taken, in work-list order, while
the cost spent plus the expected cost of the lines (their prompt estimated from the
text, :data:`~gradercal.judge.runner.EXPECTED_COMPLETION_TOKENS` per reply) stays within it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import orjson

from gradercal.errors import GradercalError
from gradercal.judge.client import (
    JudgeClient,
    JudgeFatalError,
    SampleOutcome,
    server_message,
)
from gradercal.judge.parse import ReplyParseError, parse_reply
from gradercal.judge.pricing import Price
from gradercal.judge.prompts import PromptTemplate
from gradercal.judge.runner import (
    EXPECTED_COMPLETION_TOKENS,
    JudgeRunner,
    RunStats,
    Verdict,
    WorkItem,
    aggregate,
)

#: The endpoint every line is sent to, and the only completion window OpenAI offers.
ENDPOINT: Final = "/v1/chat/completions"
COMPLETION_WINDOW: Final = "24h"
#: Statuses after which a batch changes no more.
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
#: Error codes of lines the batch never ran (sent again in the next round, not errors).
NOT_RUN = frozenset({"batch_expired", "batch_cancelled"})
#: Metadata key holding a round's token (how a batch created but not recorded is found).
TOKEN_KEY = "gradercal_token"
#: Items whose verdicts are committed in one transaction.
STORE_CHUNK = 200

#: Round states, in order: ``uploading`` (token chosen, file maybe sent), ``uploaded``
#: (file id known, batch maybe created), ``submitted`` (batch id known), ``stored``.
OPEN_STATES = ("uploading", "uploaded", "submitted")


class BatchStore(Protocol):
    """Where a batch run keeps its state and its verdicts (``gradercal.db.judging``)."""

    def load_state(self) -> dict[str, Any] | None:
        """The last round's state (None: no round yet)."""
        ...

    def save_state(self, state: Mapping[str, Any]) -> None:
        """Commit the round's state (also a sign of life)."""
        ...

    def work_items(self, first_round: bool = True) -> list[WorkItem]:
        """The items of a round: the run's work list; after the first round, those of it
        still without a current verdict."""
        ...

    def items_for(self, refs: Sequence[str]) -> dict[str, WorkItem]:
        """The work items of encoded refs (:meth:`encode_ref`); unknown ones left out."""
        ...

    def encode_ref(self, ref: Hashable) -> str:
        """A work item's ref as text without ``~`` (part of the line's ``custom_id``)."""
        ...

    def cache_get_many(self, keys: Sequence[str]) -> Mapping[str, Mapping[str, Any]]: ...

    def spent(self) -> float:
        """USD this run has cost so far (every round, every process)."""
        ...

    def store(
        self,
        verdicts: Sequence[Verdict],
        cache_entries: Sequence[tuple[str, dict[str, Any]]],
        state: Mapping[str, Any],
    ) -> None:
        """Commit verdicts, extra cache entries and the state in one transaction."""
        ...


@dataclass(frozen=True)
class BatchInfo:
    """What a poll of a batch tells."""

    id: str
    status: str
    input_file_id: str | None
    output_file_id: str | None
    error_file_id: str | None
    total: int
    completed: int
    failed: int
    metadata: Mapping[str, str]
    created_at: int
    errors: tuple[str, ...] = ()


class BatchAPI(Protocol):
    """The Batch API calls :class:`BatchJudge` makes (:class:`OpenAIBatchAPI`)."""

    def upload(self, name: str, data: bytes) -> str: ...
    def find_file(self, name: str) -> str | None: ...
    def create(self, input_file_id: str, metadata: Mapping[str, str]) -> BatchInfo: ...
    def find_batch(self, token: str, since: float) -> BatchInfo | None: ...
    def retrieve(self, batch_id: str) -> BatchInfo: ...
    def content(self, file_id: str) -> bytes: ...


class OpenAIBatchAPI:
    """:class:`BatchAPI` through the official ``openai`` SDK (``files``, ``batches``).

    The SDK retries transient failures (``max_retries``); 401, 403 and 404 raise
    :class:`~gradercal.judge.client.JudgeFatalError`.
    """

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        timeout: float = 120.0,
        max_retries: int = 6,
        redact: Callable[[str], str] = str,
    ) -> None:
        from openai import OpenAI

        from gradercal.judge.client import NO_KEY

        self._client = OpenAI(
            api_key=api_key or NO_KEY,
            base_url=base_url,
            timeout=timeout,
            max_retries=max(max_retries - 1, 0),
        )
        self._redact = redact

    def close(self) -> None:
        self._client.close()

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        import openai

        try:
            return fn()
        except openai.APIStatusError as exc:
            text = self._redact(str(exc))[:500]
            if exc.status_code in (401, 403, 404):
                raise JudgeFatalError(f"{what}: HTTP {exc.status_code}: {text}") from None
            raise GradercalError(f"{what}: HTTP {exc.status_code}: {text}") from None
        except openai.APIError as exc:
            raise GradercalError(f"{what}: {self._redact(str(exc))[:500]}") from None

    def upload(self, name: str, data: bytes) -> str:
        f = self._call(
            "uploading the batch file",
            lambda: self._client.files.create(file=(name, data), purpose="batch"),
        )
        return str(f.id)

    def find_file(self, name: str) -> str | None:
        def look() -> str | None:
            for f in self._client.files.list(purpose="batch"):
                if f.filename == name:
                    return str(f.id)
            return None

        found: str | None = self._call("listing batch files", look)
        return found

    def create(self, input_file_id: str, metadata: Mapping[str, str]) -> BatchInfo:
        b = self._call(
            "creating the batch",
            lambda: self._client.batches.create(
                input_file_id=input_file_id,
                endpoint=ENDPOINT,
                completion_window=COMPLETION_WINDOW,
                metadata=dict(metadata),
            ),
        )
        return _info(b)

    def find_batch(self, token: str, since: float) -> BatchInfo | None:
        """The batch whose metadata holds ``token``, among those created since ``since``
        (Unix time; the listing is newest first, so the search stops at older ones)."""

        def look() -> BatchInfo | None:
            for b in self._client.batches.list(limit=100):
                if (b.metadata or {}).get(TOKEN_KEY) == token:
                    return _info(b)
                if b.created_at < since:
                    return None
            return None

        found: BatchInfo | None = self._call("listing batches", look)
        return found

    def retrieve(self, batch_id: str) -> BatchInfo:
        b = self._call("following the batch", lambda: self._client.batches.retrieve(batch_id))
        return _info(b)

    def content(self, file_id: str) -> bytes:
        r = self._call("downloading batch results", lambda: self._client.files.content(file_id))
        return bytes(r.content)


def _info(b: Any) -> BatchInfo:
    counts = b.request_counts
    errors: tuple[str, ...] = ()
    if b.errors is not None and b.errors.data:
        errors = tuple(
            f"{e.code or 'error'}: {e.message or ''}".strip()
            + (f" (line {e.line})" if e.line else "")
            for e in b.errors.data
        )
    return BatchInfo(
        id=str(b.id),
        status=str(b.status),
        input_file_id=b.input_file_id,
        output_file_id=b.output_file_id,
        error_file_id=b.error_file_id,
        total=int(counts.total) if counts else 0,
        completed=int(counts.completed) if counts else 0,
        failed=int(counts.failed) if counts else 0,
        metadata=dict(b.metadata or {}),
        created_at=int(b.created_at or 0),
        errors=errors,
    )


@dataclass
class BatchProgress:
    """What the terminal shows while a batch runs."""

    round: int
    batch_id: str | None
    status: str
    total: int
    completed: int
    failed: int


@dataclass
class _Line:
    custom_id: str
    item: WorkItem
    sample: int
    key: str
    body: dict[str, Any]


@dataclass
class _Round:
    """A round's lines, verdicts from the cache and what ``max_cost`` left out."""

    lines: list[_Line] = field(default_factory=list)
    cached: list[Verdict] = field(default_factory=list)
    items: int = 0
    cut: int = 0


def custom_id(ref: str, sample: int, key: str) -> str:
    """A line's id: the item's encoded ref, the sample index and the cache key's head
    (so a reply is never attributed to a request whose text has changed since)."""
    return f"{ref}~{sample}~{key[:16]}"


def split_custom_id(value: str) -> tuple[str, int, str] | None:
    parts = value.split("~")
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1]), parts[2]


class BatchJudge:
    """Judges work items through the Batch API, resumably (see the module docstring).

    Args:
        client: Builds the request bodies and reads the replies (it sends nothing).
        prompt: The prompt version.
        api: The Batch API.
        store: Where state and verdicts go.
        price: The model's price (its batch price is charged); None: not counted.
        max_cost: USD the run may cost at most (needs ``price``).
        max_rounds: Rounds at most (a round resends what failed or did not finish).
        poll_interval: Seconds between polls of a running batch.
        progress: Called after each poll.
        run_id: Written into the batch's metadata.
        store_chunk: Items whose verdicts are committed in one transaction.
    """

    def __init__(
        self,
        client: JudgeClient,
        prompt: PromptTemplate,
        api: BatchAPI,
        store: BatchStore,
        *,
        price: Price | None = None,
        max_cost: float | None = None,
        max_rounds: int = 3,
        poll_interval: float = 30.0,
        progress: Callable[[BatchProgress], None] | None = None,
        note: Callable[[str], None] | None = None,
        run_id: int | None = None,
        store_chunk: int = STORE_CHUNK,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if max_cost is not None and price is None:
            raise ValueError("max_cost needs the model's price")
        self.client = client
        self.prompt = prompt
        self.api = api
        self.store = store
        self.price = None if price is None else price.batch()
        self.max_cost = max_cost
        self.max_rounds = max_rounds
        self.poll_interval = poll_interval
        self.progress = progress
        self.note = note or (lambda _msg: None)
        self.run_id = run_id
        self.store_chunk = store_chunk
        self.sleep = sleep
        self.batches: list[str] = []
        self._runner = JudgeRunner(client, prompt, on_verdict=lambda _v: None)
        self.stats: RunStats = self._runner.stats
        #: encoded ref → (item, cache keys) of the lines this process built (a resumed
        #: round rebuilds them from the database instead)
        self._known: dict[str, tuple[WorkItem, list[str]]] = {}
        #: HTTP 400 messages of this round's lines: after it, the client adapts to them
        #: (drops what the server rejected) for the next round, as it does online
        self._rejected: list[str] = []

    # -- requests --------------------------------------------------------------------
    def body(self, item: WorkItem) -> dict[str, Any]:
        """The request body of ``item``: the online runner's, byte for byte."""
        return self.client.request_body(self._runner.messages(item))

    def _prepare(self, round_no: int) -> _Round:
        """The next round: lines of the samples not in the cache, verdicts of the items
        whose every sample is, within ``max_cost``."""
        from gradercal.judge.artifacts import estimate_tokens

        out = _Round()
        n = self.client.params.samples
        budget = None
        if self.max_cost is not None and self.price is not None:
            budget = self.max_cost - self.store.spent()
        for chunk in _chunks(self.store.work_items(round_no == 1), 512):
            bodies = [self.body(it) for it in chunk]
            keys = [[self.client.cache_key(b, i) for i in range(n)] for b in bodies]
            known = self.store.cache_get_many([k for ks in keys for k in ks])
            for item, body, ks in zip(chunk, bodies, keys, strict=True):
                missing = [i for i in range(n) if ks[i] not in known]
                if not missing:
                    outcomes = [self._from_cache(ks[i], known[ks[i]]) for i in range(n)]
                    out.cached.append(self._verdict(item, outcomes, None))
                    continue
                if budget is not None and self.price is not None:
                    tokens = sum(estimate_tokens(_text(m)) for m in body["messages"])
                    if item.images is not None:
                        tokens += item.images.estimated_tokens()
                    cost = len(missing) * self.price.cost(tokens, EXPECTED_COMPLETION_TOKENS)
                    if cost > budget:
                        out.cut += 1
                        budget = -1.0  # keep the work-list order: nothing after it either
                        continue
                    budget -= cost
                out.items += 1
                ref = self.store.encode_ref(item.ref)
                self._known[ref] = (item, ks)
                for i in missing:
                    out.lines.append(_Line(custom_id(ref, i, ks[i]), item, i, ks[i], body))
        return out

    @staticmethod
    def jsonl(lines: Sequence[_Line]) -> bytes:
        """The input file: one request per line."""
        return b"".join(
            orjson.dumps(
                {"custom_id": x.custom_id, "method": "POST", "url": ENDPOINT, "body": x.body},
                option=orjson.OPT_SORT_KEYS,
            )
            + b"\n"
            for x in lines
        )

    # -- the run ---------------------------------------------------------------------
    def run(self) -> RunStats:
        """Finish the open round (if a previous process left one), then run new rounds
        until nothing is left, ``max_rounds`` is reached or ``max_cost`` stops it."""
        start = time.monotonic()
        try:
            self._run()
        except JudgeFatalError as exc:
            self.stats.status = "failed"
            self.stats.message = str(exc)
        finally:
            self.stats.elapsed_s = time.monotonic() - start
            self.stats.adaptations = list(self.client.adaptations)
        if self.stats.status == "running":
            self.stats.status = "completed"
        return self.stats

    def _run(self) -> None:
        state = self.store.load_state()
        if state is not None and state.get("state") in OPEN_STATES:
            self.note(f"resuming round {state['round']} ({state['state']})")
            self.stats.total = int(state.get("items", 0))
            state = self._follow(dict(state), None)
            if state is None:
                return
        done_rounds = int(state["round"]) if state else 0
        while done_rounds < self.max_rounds:
            prepared = self._prepare(done_rounds + 1)
            token = uuid.uuid4().hex
            new = {
                "round": done_rounds + 1,
                "token": token,
                "state": "uploading" if prepared.lines else "stored",
                "lines": len(prepared.lines),
                "items": prepared.items,
                "since": time.time(),
            }
            self._account(prepared.cached)
            self.store.store(prepared.cached, [], new)  # the marker comes before the upload
            if prepared.cut:
                self.stats.status = "stopped_cost"
                self.stats.message = f"max cost {self.max_cost:g} USD reached"
            if not prepared.lines:
                return
            self.stats.total = (self.stats.total or 0) + prepared.items
            followed = self._follow(new, prepared)
            if followed is None or prepared.cut:
                return
            done_rounds = int(followed["round"])
            if not int(followed.get("unfinished", 0)):
                return  # every item answered (or failed for good: the same command retries)
        left = self.store.work_items(False)
        if left:
            self.stats.message = (
                f"{len(left)} items without a verdict after {self.max_rounds} batch rounds"
            )

    def _follow(self, state: dict[str, Any], prepared: _Round | None) -> dict[str, Any] | None:
        """Carry one round from its recorded state to ``stored``; None when the run stops."""
        name = f"gradercal-{state['token']}.jsonl"
        # a batch may exist only if a process that recorded the file id was stopped
        maybe_created = state["state"] == "uploaded"
        if state["state"] == "uploading":
            file_id = self.api.find_file(name) if prepared is None else None
            if file_id is None:
                if prepared is None:
                    prepared = self._prepare(int(state["round"]))  # the same lines
                    self._account(prepared.cached)
                    if prepared.cached:
                        self.store.store(prepared.cached, [], state)
                    if not prepared.lines:
                        state["state"] = "stored"
                        self.store.save_state(state)
                        return state
                self.note(f"round {state['round']}: uploading {len(prepared.lines)} requests")
                file_id = self.api.upload(name, self.jsonl(prepared.lines))
            state.update(state="uploaded", input_file_id=file_id)
            self.store.save_state(state)
        if state["state"] == "uploaded":
            found = None
            if maybe_created:
                found = self.api.find_batch(state["token"], float(state.get("since", 0)) - 600)
            if found is None:
                meta = {TOKEN_KEY: state["token"]}
                if self.run_id is not None:
                    meta["gradercal_run"] = str(self.run_id)
                found = self.api.create(state["input_file_id"], meta)
            state.update(state="submitted", batch_id=found.id, status=found.status)
            self.store.save_state(state)
            self.note(f"round {state['round']}: batch {found.id} submitted")
        info = self._poll(state)
        self.batches.append(info.id)
        if info.status == "failed":
            message = "; ".join(info.errors) or "the batch failed"
            state.update(state="stored", status="failed", message=message[:2000])
            self.store.save_state(state)
            self.stats.status = "failed"
            self.stats.message = f"batch {info.id} failed: {message}"
            return None
        return self._collect(state, info)

    def _poll(self, state: dict[str, Any]) -> BatchInfo:
        while True:
            info = self.api.retrieve(state["batch_id"])
            if self.progress is not None:
                self.progress(
                    BatchProgress(
                        state["round"],
                        info.id,
                        info.status,
                        info.total,
                        info.completed,
                        info.failed,
                    )
                )
            if info.status in TERMINAL:
                return info
            if info.status != state.get("status"):
                state["status"] = info.status
            self.store.save_state(state)  # also the run's heartbeat
            self.sleep(self.poll_interval)

    # -- results ---------------------------------------------------------------------
    def _collect(self, state: dict[str, Any], info: BatchInfo) -> dict[str, Any]:
        """Read the output and error files; commit verdicts a chunk of items at a time."""
        replies: dict[str, dict[str, Any]] = {}
        for file_id in (info.output_file_id, info.error_file_id):
            if file_id:
                for row in _jsonl(self.api.content(file_id)):
                    cid = row.get("custom_id")
                    if isinstance(cid, str):
                        replies.setdefault(cid, row)
        by_ref: dict[str, dict[int, tuple[str, dict[str, Any]]]] = {}
        for cid, row in replies.items():
            parsed = split_custom_id(cid)
            if parsed is not None:
                by_ref.setdefault(parsed[0], {})[parsed[1]] = (parsed[2], row)
        refs = sorted(by_ref)
        n = self.client.params.samples
        unknown = [r for r in refs if r not in self._known]
        items = {r: self._known[r][0] for r in refs if r in self._known}
        if unknown:
            items.update(self.store.items_for(unknown))
        stored = int(state.get("stored", 0))
        state.update(status=info.status, state="submitted")
        unfinished = 0
        where = {"batch_id": info.id, "input_file_id": state.get("input_file_id"),
                 "round": state["round"]}  # fmt: skip
        todo: list[tuple[int, str]] = list(enumerate(refs))
        for chunk in _chunks(iter(todo), self.store_chunk):
            verdicts: list[Verdict] = []
            extra: list[tuple[str, dict[str, Any]]] = []
            for _pos, ref in chunk:
                item = items.get(ref)
                if item is None:
                    unfinished += 1  # its pair is gone from the benchmark
                    continue
                known_keys = self._known.get(ref)
                if known_keys is not None:
                    keys = known_keys[1]
                else:
                    body = self.body(item)
                    keys = [self.client.cache_key(body, i) for i in range(n)]
                got = by_ref[ref]
                outcomes: list[SampleOutcome | None] = [None] * n
                for i, (head, row) in got.items():
                    if i < n and keys[i].startswith(head):
                        outcomes[i] = self._from_line(keys[i], row)
                missing = [i for i in range(n) if outcomes[i] is None]
                if missing:
                    known = self.store.cache_get_many([keys[i] for i in missing])
                    for i in missing:
                        if keys[i] in known:
                            outcomes[i] = self._from_cache(keys[i], known[keys[i]])
                if any(o is None for o in outcomes):
                    unfinished += 1
                    extra += [(o.cache_key, o.cache_value) for o in outcomes
                              if o is not None and o.cache_value]  # fmt: skip
                    continue
                done = [o for o in outcomes if o is not None]
                v = self._verdict(item, done, where)
                if v.status != "ok":
                    unfinished += 1
                verdicts.append(v)
            last = chunk[-1][0] + 1
            if last <= stored:
                continue  # committed by the process that was killed
            state["stored"] = last
            if last == len(refs):
                state.update(state="stored", unfinished=unfinished)
            self._account(verdicts)
            self.store.store(verdicts, extra, state)
        for message in dict.fromkeys(self._rejected):
            if self.client._adapt(message):
                self.note(f"next round: {self.client.adaptations[-1]}")
        self._rejected.clear()
        if state["state"] != "stored":  # an empty result (nothing came back)
            state.update(state="stored", unfinished=unfinished, stored=len(refs))
            self.store.save_state(state)
        expected = int(state.get("lines", 0))
        if info.status in ("expired", "cancelled") or expected > len(replies):
            state["unfinished"] = max(int(state.get("unfinished", 0)), 1)
        self.note(
            f"round {state['round']}: batch {info.id} {info.status}, {len(replies)} replies read"
        )
        return state

    def _from_line(self, key: str, row: Mapping[str, Any]) -> SampleOutcome | None:
        """One sample from an output or error line (as :meth:`JudgeClient.sample` would
        report its reply, without re-asking); None for a line the batch never ran."""
        out = SampleOutcome(status="error", cache_key=key, attempts=1)
        response = row.get("response") if isinstance(row.get("response"), dict) else None
        error = row.get("error") if isinstance(row.get("error"), dict) else None
        if error is not None and response is None:
            code = str(error.get("code") or "error")
            if code in NOT_RUN:
                return None
            out.errors.append(self.client._clean(f"{code}: {error.get('message') or ''}") or "")
            return out
        if response is None:
            out.errors.append("batch line without a response")
            return out
        status = int(response.get("status_code") or 0)
        body = response.get("body")
        if status != 200 or not isinstance(body, dict):
            raw = orjson.dumps(body) if body is not None else b""
            message = self.client.redact(server_message(status, raw))
            out.errors.append(f"HTTP {status}: {message}")
            if status == 400:
                self._rejected.append(message)
            return out
        completion = self.client._completion(body)
        out.prompt_tokens = completion.prompt_tokens
        out.completion_tokens = completion.completion_tokens
        out.usage_reported = completion.usage_reported
        out.raw = completion.content
        out.finish_reason = completion.finish_reason
        out.server_model = completion.server_model
        out.request_id = completion.request_id
        try:
            parsed = parse_reply(completion.content)
        except ReplyParseError as exc:
            out.parse_failures = 1
            out.errors.append(f"parse: {exc} (finish_reason {completion.finish_reason})")
            out.status = "parse_failure"
            return out
        out.status = "ok"
        out.met = parsed.met
        out.explanation = parsed.explanation
        out.p_met = completion.p_met
        out.cache_value = completion.to_json()
        return out

    def _from_cache(self, key: str, value: Mapping[str, Any]) -> SampleOutcome:
        from gradercal.judge.client import Completion

        c = Completion.from_json(value)
        out = SampleOutcome(status="error", cache_key=key, cached=True, raw=c.content,
                            finish_reason=c.finish_reason, server_model=c.server_model,
                            request_id=c.request_id)  # fmt: skip
        try:
            parsed = parse_reply(c.content)
        except ReplyParseError as exc:
            out.status = "parse_failure"
            out.parse_failures = 1
            out.errors.append(f"parse: {exc} (finish_reason {c.finish_reason})")
            return out
        out.status, out.met, out.explanation, out.p_met = (
            "ok",
            parsed.met,
            parsed.explanation,
            c.p_met,
        )
        return out

    def _verdict(
        self, item: WorkItem, outcomes: Sequence[SampleOutcome], where: Mapping[str, Any] | None
    ) -> Verdict:
        v = aggregate(item, outcomes, prompt=self.prompt, client=self.client, price=self.price)
        if where is not None:
            v.provenance["batch"] = dict(where)
        return v

    def _account(self, verdicts: Sequence[Verdict]) -> None:
        for v in verdicts:
            self._runner._account(v)


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _jsonl(data: bytes) -> Iterator[dict[str, Any]]:
    for raw in data.splitlines():
        if raw.strip():
            try:
                row = orjson.loads(raw)
            except ValueError:
                continue
            if isinstance(row, dict):
                yield row


def _chunks(it: Iterator[Any] | Sequence[Any], size: int) -> Iterator[list[Any]]:
    from itertools import islice

    source = iter(it)
    while chunk := list(islice(source, size)):
        yield chunk
