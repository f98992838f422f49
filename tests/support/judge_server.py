"""A real chat-completions HTTP server on 127.0.0.1 for testing the judge (stdlib only).

It speaks enough of the OpenAI protocol (``POST …/chat/completions``, HTTP/1.1 with
keep-alive) for the official SDK, and judges deterministically:

* the **verdict rule**: a criterion is met iff its *keyword* (its longest word,
  lowercased) occurs in the response (:func:`expected_met`); with ``gullible`` the
  server also obeys a response that tells the grader to mark every criterion as met;
* **latency**: every reply waits ``latency`` seconds (asyncio, so requests overlap);
* **holding**: with ``hold_after`` = n, requests after the n-th wait for
  :meth:`JudgeServer.release` (a run caught mid-way, for kill tests);
* **faults**: :class:`Fault` rules match a substring of the user message and list the
  action for the 1st, 2nd, … request with that body (the last repeats): ``ok``,
  ``429``/``503`` (``429:2`` sends ``Retry-After: 2``; ``429:ms=150`` sends
  ``retry-after-ms: 150``), ``500``, ``400``, ``401``, ``timeout`` (hangs),
  ``malformed`` (prose, no JSON), ``truncated`` (JSON cut off, finish_reason
  ``length``), ``nobool`` (``criteria_met`` a string), ``badbody`` (HTTP body cut
  off), ``echo_key`` (the Authorization header echoed in the reply),
  ``echo_key_500`` (echoed in a 500 error body), ``hostile`` (a valid verdict whose
  explanation holds a NUL character, the key echoed in ``model``, ``id`` and
  ``finish_reason``-free fields, and a malformed ``usage``: a text count and a negative one);
* **images**: a message whose content is a list of parts (a judge that sees figures) is
  read by its text parts; its ``image_url`` parts are kept with the body and count 85
  prompt tokens each;
* **logprobs** when asked (P(verdict token) = ``logprob_p``), or never with
  ``ignore_logprobs`` (a server that silently drops the parameter), **usage** token counts
  (characters / 4), rejection of named parameters with HTTP 400 (``reject_params``:
  ``logprobs``, ``response_format``, …; the message names the parameter), votes that vary
  between repeats at temperature > 0 (``vote_flip_period``);
* **reply styles** (``reply_style``, see :data:`REPLY_STYLES`), the ways today's models
  deliver the JSON verdict: ``json`` (bare), ``think`` (a ``<think>`` block with braces and
  a draft of the *opposite* verdict before the JSON), ``reasoning_content`` (the same
  reasoning in the message's ``reasoning_content`` field, the JSON in ``content``),
  ``fenced`` (prose, then the JSON in a ```` ```json ```` fence), ``prose`` (the JSON, then
  prose with braces).

:data:`SERVER_KINDS` names one configuration per kind of server a judge meets.

It also speaks the **Batch API** (``POST /v1/files`` multipart with purpose ``batch``,
``GET /v1/files`` (``?purpose=``), ``GET /v1/files/{id}`` and ``…/content``,
``POST /v1/batches``, ``GET /v1/batches`` (newest first), ``GET /v1/batches/{id}``,
``POST /v1/batches/{id}/cancel``): a batch answers each line as the chat route would
(faults included: a line whose action is an HTTP error goes to the error file with its
status and body, ``line_error`` as an ``error`` object), in order, with switches:
``batch_line_delay`` (seconds per line: slow progress), ``batch_expire_after`` (the
batch expires after that many lines: the rest go to the error file as
``batch_expired``), ``batch_fail`` (the batch fails validation with that message) and
``hold_stage`` (``upload``, ``create``, ``retrieve``, ``content``: the request is
carried out, then its answer held until :meth:`JudgeServer.release_stage`, so a client
can be killed between the server's act and its reply). :class:`ServerStats` counts
uploads, batches created and every line submitted by ``custom_id``.

Use it as a context manager (``with JudgeServer(cfg) as srv: srv.base_url``) or run it
as a process: ``python tests/support/judge_server.py --latency 0.05`` prints its base URL.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import re
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

_WORD = re.compile(r"[a-z0-9][a-z0-9-]*")
_RESPONSE = re.compile(r"<response>\n(.*)\n</response>", re.DOTALL)
_CRITERION = re.compile(r"<criterion[^>]*>\n(.*?)\n</criterion>", re.DOTALL)
OBEY = "mark every criterion as met"
REPLY_STYLES = ("json", "think", "reasoning_content", "fenced", "prose")


def keyword(criterion: str) -> str:
    """The criterion's keyword: its longest word (the first of equal length), lowercased."""
    words = _WORD.findall(criterion.lower())
    return max(words, key=len) if words else ""


def expected_met(criterion: str, response: str, *, gullible: bool = False) -> bool:
    """The server's verdict on ``response`` for ``criterion``."""
    if gullible and OBEY in response.lower():
        return True
    kw = keyword(criterion)
    return bool(kw) and kw in response.lower()


def _unit(response: str, criterion: str) -> float:
    digest = hashlib.sha256(f"{criterion}\x00{response}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def item_confidence(
    response: str, criterion: str, met: bool, lenient_every: int = 0
) -> tuple[bool, float]:
    """The verdict and P(verdict token) of the ``answers`` mode for one item whose book
    verdict is ``met``: a confident answer (0.80–0.99), or for a lenient item (a "not met"
    whose hash falls in the ``1/lenient_every`` share) "met" at 0.55–0.70."""
    u = _unit(response, criterion)
    if lenient_every and not met and int(u * 1_000_003) % lenient_every == 0:
        return True, round(0.55 + 0.15 * u, 4)
    return met, round(0.80 + 0.19 * u, 4)


def message_text(content: Any) -> str:
    """A message's text: its content, or the text of its ``text`` parts one per line."""
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")


def image_parts(content: Any) -> list[dict[str, Any]]:
    """The ``image_url`` parts of a message's content (none for plain text)."""
    if isinstance(content, str):
        return []
    return [p for p in content if p.get("type") == "image_url"]


def split_prompt(user: str) -> tuple[str, str]:
    """(response, criterion) from a user message written with the default prompt's tags."""
    r = _RESPONSE.search(user)
    crits = _CRITERION.findall(user)
    return (r.group(1) if r else user, crits[-1] if crits else "")


@dataclass
class Fault:
    """Actions for the requests whose user message contains ``match`` (see module doc)."""

    match: str
    actions: list[str]


@dataclass
class ServerConfig:
    latency: float = 0.0
    faults: list[Fault] = field(default_factory=list)
    gullible: bool = False
    logprob_p: float = 0.9
    reject_params: set[str] = field(default_factory=set)
    require_key: str | None = None
    vote_flip_period: int = 0
    hang_s: float = 30.0
    #: requests after this many are held unanswered until :meth:`JudgeServer.release`
    hold_after: int | None = None
    #: (response text, criterion text) → verdict: the server answers these instead of the
    #: keyword rule (e.g. the experts' majority, :func:`answer_book`)
    answers: dict[tuple[str, str], bool] | None = None
    #: with ``answers``: P(verdict token) varies per item (:func:`item_confidence`) and
    #: every ``lenient_every``-th "not met" item (by hash) is answered "met" with a low
    #: confidence, a judge a threshold calibration can correct (0: never)
    lenient_every: int = 0
    #: how the verdict is delivered (one of :data:`REPLY_STYLES`)
    reply_style: str = "json"
    #: accept ``logprobs`` but never return any
    ignore_logprobs: bool = False
    #: marker → kind of :data:`SERVER_KINDS`: a request whose user message contains the
    #: marker is answered with that kind's ``reply_style`` and ``ignore_logprobs`` (one
    #: server playing several models at once; refusals stay server-wide)
    by_marker: dict[str, str] = field(default_factory=dict)

    #: Batch API switches (see the module docstring)
    batch_line_delay: float = 0.0
    batch_expire_after: int | None = None
    batch_fail: str | None = None
    batch_validating_s: float = 0.0
    hold_stage: str | None = None


#: One configuration per kind of OpenAI-compatible server: what it does with
#: log-probabilities and JSON mode, and how its model writes the verdict.
SERVER_KINDS: dict[str, dict[str, Any]] = {
    "logprobs": {},
    "logprobs_ignored": {"ignore_logprobs": True},
    "logprobs_refused": {"reject_params": {"logprobs"}},
    "json_mode_refused": {"reject_params": {"response_format"}},
    "think": {"reply_style": "think"},
    "reasoning_content": {"reply_style": "reasoning_content"},
    "fenced": {"reply_style": "fenced"},
    "prose": {"reply_style": "prose"},
}


def server_kind(kind: str, **extra: Any) -> ServerConfig:
    """The :class:`ServerConfig` of one of :data:`SERVER_KINDS` (``extra`` overrides)."""
    settings = dict(SERVER_KINDS[kind])
    if "reject_params" in settings:
        settings["reject_params"] = set(settings["reject_params"])
    return ServerConfig(**{**settings, **extra})


@dataclass
class ServerStats:
    requests: int = 0
    replies: Counter[str] = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0
    auth_headers: set[str] = field(default_factory=set)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    ok_hashes: list[str] = field(default_factory=list)
    #: (arrival, reply) times (time.monotonic()) and reply tag of every request
    log: list[tuple[float, float, str]] = field(default_factory=list)
    #: Batch API: files uploaded, batches created, lines answered (``batch_lines``) and
    #: lines in a created batch (``batch_submitted``) per custom_id,
    #: requests per route ("POST /v1/files", "GET /v1/batches/{id}", …)
    uploads: int = 0
    batches_created: int = 0
    batch_lines: Counter[str] = field(default_factory=Counter)
    batch_submitted: Counter[str] = field(default_factory=Counter)
    routes: Counter[str] = field(default_factory=Counter)


class JudgeServer:
    """The server, run on its own event loop in a daemon thread."""

    def __init__(self, config: ServerConfig | None = None, *, keep_bodies: bool = True) -> None:
        self.config = config or ServerConfig()
        self.keep_bodies = keep_bodies
        self.stats = ServerStats()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._attempts: Counter[tuple[int, str]] = Counter()
        self._repeats: Counter[str] = Counter()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self.port = 0
        self.files: dict[str, dict[str, Any]] = {}
        self.file_data: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self._ids = 0
        self.stage_reached = threading.Event()

    # -- lifecycle -------------------------------------------------------------------
    def start(self, port: int = 0) -> str:
        self._thread.start()
        fut = asyncio.run_coroutine_threadsafe(self._start(port), self._loop)
        fut.result(10)
        return self.base_url

    async def _start(self, port: int) -> None:
        self._released = asyncio.Event()
        self._stage_released = asyncio.Event()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", port, backlog=512)
        self.port = self._server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        async def _close() -> None:
            if self._server is not None:
                self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(_close(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def __enter__(self) -> JudgeServer:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def release(self) -> None:
        """Answer the held requests (and hold no more)."""
        self.config.hold_after = None
        self._loop.call_soon_threadsafe(self._released.set)

    def release_stage(self) -> None:
        """Answer a request held by ``hold_stage`` (and hold no more)."""
        self.config.hold_stage = None
        self.stage_reached.clear()
        self._loop.call_soon_threadsafe(self._stage_released.set)

    def wait_requests(self, n: int, timeout: float = 30.0) -> bool:
        """Block until the server has received ``n`` requests (True) or ``timeout`` passed."""
        with self._changed:
            return self._changed.wait_for(lambda: self.stats.requests >= n, timeout)

    # -- HTTP ------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                length = int(headers.get("content-length", "0"))
                body = await reader.readexactly(length) if length else b""
                status, extra, payload = await self._respond(method, path, headers, body)
                reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found"}
                ctype = extra.pop("Content-Type", "application/json")
                head_out = [
                    f"HTTP/1.1 {status} {reason.get(status, 'Error')}",
                    f"Content-Type: {ctype}",
                    f"Content-Length: {len(payload)}",
                    "Connection: keep-alive",
                    *(f"{k}: {v}" for k, v in extra.items()),
                ]
                writer.write(("\r\n".join(head_out) + "\r\n\r\n").encode() + payload)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _respond(
        self, method: str, path: str, headers: dict[str, str], raw: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        route = path.split("?", 1)[0].rstrip("/")
        if "/files" in route or "/batches" in route:
            return await self._batch_api(method, path, headers, raw)
        if method != "POST" or not route.endswith("/chat/completions"):
            return 404, {}, b'{"error": {"message": "no such route"}}'
        body = json.loads(raw)
        arrival = time.monotonic()
        auth = headers.get("authorization", "")
        with self._changed:
            self.stats.requests += 1
            number = self.stats.requests
            self.stats.in_flight += 1
            self.stats.max_in_flight = max(self.stats.max_in_flight, self.stats.in_flight)
            self.stats.auth_headers.add(auth)
            if self.keep_bodies:
                self.stats.bodies.append(body)
            self._changed.notify_all()
        try:
            hold = self.config.hold_after
            if hold is not None and number > hold:
                await self._released.wait()
            status, extra, payload, tag = await self._reply(body, auth)
        finally:
            with self._changed:
                self.stats.in_flight -= 1
        with self._changed:
            self.stats.replies[tag] += 1
            self.stats.log.append((arrival, time.monotonic(), tag))
            if tag == "ok":
                self.stats.ok_hashes.append(_digest(body))
            self._changed.notify_all()
        return status, extra, payload

    async def _reply(
        self, body: dict[str, Any], auth: str
    ) -> tuple[int, dict[str, str], bytes, str]:
        cfg = self.config
        if cfg.latency:
            await asyncio.sleep(cfg.latency)
        if cfg.require_key is not None and auth != f"Bearer {cfg.require_key}":
            return 401, {}, _error("Incorrect API key provided"), "401"
        for param in sorted(cfg.reject_params):
            if param in body:
                return 400, {}, _error(f"Unsupported parameter: '{param}'"), "400"
        user = next(
            (message_text(m["content"]) for m in reversed(body["messages"]) if m["role"] == "user"),
            "",
        )
        action = self._action(user, body)
        if action.startswith(("429", "503")):
            code, _, arg = action.partition(":")
            extra = {}
            if arg.startswith("ms="):
                extra["retry-after-ms"] = arg[3:]
            elif arg:
                extra["Retry-After"] = arg
            return int(code), extra, _error("slow down"), code
        if action in ("500", "400", "401"):
            return int(action), {}, _error(f"injected {action}"), action
        if action == "line_error":
            return 500, {}, _error("the line could not be processed"), "line_error"
        if action == "echo_key_500":
            return 500, {}, _error(f"upstream failed for {auth}"), "500"
        if action == "timeout":
            await asyncio.sleep(cfg.hang_s)
            return 500, {}, _error("hung"), "timeout"
        if action == "badbody":
            return 200, {}, b'{"id": "x", "object": "chat.completion", "choices": [{"ind', "badbody"
        response, criterion = split_prompt(user)
        p_token = cfg.logprob_p
        if cfg.answers is not None and (response, criterion) in cfg.answers:
            met, p_token = item_confidence(
                response, criterion, cfg.answers[(response, criterion)], cfg.lenient_every
            )
        else:
            met = expected_met(criterion, response, gullible=cfg.gullible)
        if cfg.vote_flip_period and float(body.get("temperature") or 0) > 0:
            digest = _digest(body)
            with self._lock:
                seen = self._repeats[digest]
                self._repeats[digest] += 1
            if seen % cfg.vote_flip_period == cfg.vote_flip_period - 1:
                met = not met
        kw = keyword(criterion)
        explanation = f"keyword {kw!r} {'found' if met else 'not found'}"
        if action == "echo_key":
            explanation += f" (caller {auth})"
        content = json.dumps({"explanation": explanation, "criteria_met": met})
        finish = "stop"
        tag = "ok"
        if action == "malformed":
            content, tag = f"I think the criterion is {'met' if met else 'not met'}.", "malformed"
        elif action == "truncated":
            content, finish, tag = content[: len(content) // 2], "length", "truncated"
        elif action == "nobool":
            content = json.dumps({"explanation": explanation, "criteria_met": "yes"})
            tag = "nobool"
        prompt_chars = sum(len(message_text(m["content"])) for m in body["messages"])
        prompt_chars += 4 * 85 * sum(len(image_parts(m["content"])) for m in body["messages"])
        style, ignore_logprobs = cfg.reply_style, cfg.ignore_logprobs
        for marker, kind in cfg.by_marker.items():
            if marker in user:
                style = SERVER_KINDS[kind].get("reply_style", "json")
                ignore_logprobs = SERVER_KINDS[kind].get("ignore_logprobs", False)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tag == "ok":
            content = _styled(style, content, met, kw, message)
            message["content"] = content
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
        if body.get("logprobs") and not ignore_logprobs:
            choice["logprobs"] = {"content": _logprobs(content, p_token, body)}
        reply = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [choice],
            "usage": {
                "prompt_tokens": math.ceil(prompt_chars / 4),
                "completion_tokens": math.ceil(len(content) / 4),
                "total_tokens": math.ceil(prompt_chars / 4) + math.ceil(len(content) / 4),
            },
        }
        if action == "hostile":
            key = auth.removeprefix("Bearer ")
            choice["message"]["content"] = json.dumps(
                {"explanation": f"{explanation}\u0000 seen", "criteria_met": met}
            )
            choice.pop("logprobs", None)
            reply.update(
                model=f"{body['model']}-{key}",
                id=f"chatcmpl-{key}",
                usage={"prompt_tokens": "lots", "completion_tokens": -5},
            )
            tag = "hostile"
        return 200, {"x-request-id": "req-test"}, json.dumps(reply).encode(), tag

    # -- Batch API -------------------------------------------------------------------
    def _new_id(self, prefix: str) -> str:
        with self._lock:
            self._ids += 1
            return f"{prefix}-{self._ids:06d}"

    async def _hold(self, stage: str) -> None:
        if self.config.hold_stage == stage:
            self.stage_reached.set()
            await self._stage_released.wait()

    async def _batch_api(
        self, method: str, path: str, headers: dict[str, str], raw: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        route, _, query = path.partition("?")
        parts = [p for p in route.split("/") if p]
        if parts and parts[0] == "v1":
            parts = parts[1:]
        params = dict(q.split("=", 1) for q in query.split("&") if "=" in q)
        shape = f"{method} /v1/{parts[0]}" + ("/{id}" if len(parts) > 1 else "")
        shape += "/" + "/".join(parts[2:]) if len(parts) > 2 else ""
        with self._changed:
            self.stats.routes[shape] += 1
        auth = headers.get("authorization", "")
        if self.config.require_key is not None and auth != f"Bearer {self.config.require_key}":
            return 401, {}, _error("Incorrect API key provided")
        missing = 404, {}, _error(f"no such object: {path}")
        if parts == ["files"] and method == "POST":
            fields = _multipart(headers.get("content-type", ""), raw)
            name, data = fields.get("file", ("upload.jsonl", b""))
            fid = self._new_id("file")
            obj = {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                   "filename": name, "purpose": fields.get("purpose", ("", b""))[1].decode(),
                   "status": "processed"}  # fmt: skip
            with self._changed:
                self.files[fid] = obj
                self.file_data[fid] = data
                self.stats.uploads += 1
                self._changed.notify_all()
            await self._hold("upload")
            return 200, {}, json.dumps(obj).encode()
        if parts == ["files"] and method == "GET":
            purpose = params.get("purpose")
            data = [f for f in self.files.values() if purpose in (None, f["purpose"])]
            return 200, {}, json.dumps({"object": "list", "data": data, "has_more": False}).encode()
        if len(parts) >= 2 and parts[0] == "files" and method == "GET":
            if parts[1] not in self.files:
                return missing
            if parts[2:] == ["content"]:
                await self._hold("content")
                return 200, {"Content-Type": "application/octet-stream"}, self.file_data[parts[1]]
            return 200, {}, json.dumps(self.files[parts[1]]).encode()
        if parts == ["batches"] and method == "POST":
            req = json.loads(raw)
            if req.get("input_file_id") not in self.files:
                return 400, {}, _error("input_file_id is not an uploaded file")
            bid = self._new_id("batch")
            now = int(time.time())
            batch = {
                "id": bid, "object": "batch", "endpoint": req.get("endpoint"),
                "errors": None, "input_file_id": req["input_file_id"],
                "completion_window": req.get("completion_window"), "status": "validating",
                "output_file_id": None, "error_file_id": None, "created_at": now,
                "expires_at": now + 86400, "metadata": req.get("metadata"),
                "request_counts": {"total": 0, "completed": 0, "failed": 0},
            }  # fmt: skip
            with self._changed:
                self.batches[bid] = batch
                self.stats.batches_created += 1
                self._changed.notify_all()
            self._loop.create_task(self._run_batch(batch, auth))
            await self._hold("create")
            return 200, {}, json.dumps(batch).encode()
        if parts == ["batches"] and method == "GET":
            rows = sorted(self.batches.values(), key=lambda b: b["id"], reverse=True)
            after = params.get("after")
            if after is not None:
                rows = [b for b in rows if b["id"] < after]
            limit = int(params.get("limit", "20"))
            page = {"object": "list", "data": rows[:limit], "has_more": len(rows) > limit,
                    "first_id": rows[0]["id"] if rows else None,
                    "last_id": rows[:limit][-1]["id"] if rows else None}  # fmt: skip
            return 200, {}, json.dumps(page).encode()
        if len(parts) >= 2 and parts[0] == "batches":
            batch = self.batches.get(parts[1])
            if batch is None:
                return missing
            if parts[2:] == ["cancel"] and method == "POST":
                if batch["status"] not in ("completed", "failed", "expired", "cancelled"):
                    batch["status"] = "cancelling"
                return 200, {}, json.dumps(batch).encode()
            if method == "GET" and not parts[2:]:
                await self._hold("retrieve")
                return 200, {}, json.dumps(batch).encode()
        return missing

    async def _run_batch(self, batch: dict[str, Any], auth: str) -> None:
        cfg = self.config
        if cfg.batch_validating_s:
            await asyncio.sleep(cfg.batch_validating_s)
        data = self.file_data[batch["input_file_id"]]
        lines = [json.loads(x) for x in data.splitlines() if x.strip()]
        if cfg.batch_fail is not None:
            batch["errors"] = {"object": "list", "data": [
                {"code": "invalid_request", "message": cfg.batch_fail, "line": 1, "param": None}
            ]}  # fmt: skip
            batch["status"] = "failed"
            return
        counts = batch["request_counts"]
        counts["total"] = len(lines)
        with self._changed:
            self.stats.batch_submitted.update(line["custom_id"] for line in lines)
        batch["status"] = "in_progress"
        out: list[dict[str, Any]] = []
        err: list[dict[str, Any]] = []
        for n, line in enumerate(lines):
            if batch["status"] == "cancelling":
                break
            if cfg.batch_expire_after is not None and n >= cfg.batch_expire_after:
                break
            if cfg.batch_line_delay:
                await asyncio.sleep(cfg.batch_line_delay)
            elif n % 200 == 199:
                await asyncio.sleep(0)
            with self._changed:
                self.stats.batch_lines[line["custom_id"]] += 1
            status, _extra, payload, tag = await self._reply(line["body"], auth)
            rid = self._new_id("batch_req")
            row: dict[str, Any] = {"id": rid, "custom_id": line["custom_id"], "error": None,
                                   "response": {"status_code": status, "request_id": rid,
                                                "body": json.loads(payload)}}  # fmt: skip
            if tag == "line_error":
                row["response"] = None
                row["error"] = {
                    "code": "server_error",
                    "message": "the line could not be processed",
                }
            if status == 200 and tag != "line_error":
                out.append(row)
                counts["completed"] += 1
            else:
                err.append(row)
                counts["failed"] += 1
        done = len(out) + len(err)
        final = "completed"
        if done < len(lines):
            final = "cancelled" if batch["status"] == "cancelling" else "expired"
            code = "batch_cancelled" if final == "cancelled" else "batch_expired"
            for line in lines[done:]:
                err.append({"id": self._new_id("batch_req"), "custom_id": line["custom_id"],
                            "response": None, "error": {"code": code, "message":
                            "This request could not be executed before the batch ended."}})  # fmt: skip
        batch["status"] = "finalizing"
        await asyncio.sleep(0)
        for key, rows in (("output_file_id", out), ("error_file_id", err)):
            if rows:
                fid = self._new_id("file")
                body = "".join(json.dumps(r) + "\n" for r in rows).encode()
                self.files[fid] = {"id": fid, "object": "file", "bytes": len(body),
                                   "created_at": int(time.time()), "filename": f"{key}.jsonl",
                                   "purpose": "batch_output", "status": "processed"}  # fmt: skip
                self.file_data[fid] = body
                batch[key] = fid
        batch["status"] = final
        batch[f"{final}_at"] = int(time.time())

    def _action(self, user: str, body: dict[str, Any]) -> str:
        digest = _digest(body)
        for i, fault in enumerate(self.config.faults):
            if fault.match in user:
                with self._lock:
                    n = self._attempts[(i, digest)]
                    self._attempts[(i, digest)] += 1
                return fault.actions[min(n, len(fault.actions) - 1)]
        return "ok"


def _styled(style: str, verdict: str, met: bool, kw: str, message: dict[str, Any]) -> str:
    """The content of a reply that delivers the JSON ``verdict`` in ``style``."""
    draft = json.dumps({"criteria_met": not met})
    reasoning = (
        f"The criterion wants {{{kw}}}; a set like {{a, b}} is not JSON. "
        f"First guess: {draft}. Checking again before answering."
    )
    if style == "json":
        return verdict
    if style == "think":
        return f"<think>\n{reasoning}\n</think>\n\n{verdict}"
    if style == "reasoning_content":
        message["reasoning_content"] = reasoning
        return verdict
    if style == "fenced":
        return f"Here is my verdict on {{{kw}}}:\n\n```json\n{verdict}\n```\n"
    if style == "prose":
        return f"{verdict}\n\nI looked for {{{kw}}} in the response {{as asked}}."
    raise ValueError(f"unknown reply style {style!r}")


def _digest(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str, bytes]]:
    """The fields of a multipart/form-data body: name → (filename, data)."""
    m = re.search(r'boundary="?([^";]+)"?', content_type)
    if not m:
        return {}
    out: dict[str, tuple[str, bytes]] = {}
    for part in raw.split(b"--" + m.group(1).encode()):
        head, sep, data = part.partition(b"\r\n\r\n")
        if not sep:
            continue
        text = head.decode("latin-1")
        name = re.search(r'name="([^"]*)"', text)
        filename = re.search(r'filename="([^"]*)"', text)
        if name:
            out[name.group(1)] = (filename.group(1) if filename else "", data.removesuffix(b"\r\n"))
    return out


def _error(message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "test_error"}}).encode()


def _logprobs(content: str, p: float, body: dict[str, Any]) -> list[dict[str, Any]]:
    top_n = int(body.get("top_logprobs") or 0)
    out = []
    for tok in re.findall(r"\w+|[^\w\s]+|\s+", content):
        entry: dict[str, Any] = {"token": tok, "logprob": 0.0, "bytes": None, "top_logprobs": []}
        if tok in ("true", "false"):
            other = "false" if tok == "true" else "true"
            entry["logprob"] = math.log(p)
            alts = [(tok, math.log(p)), (other, math.log(1 - p))]
            entry["top_logprobs"] = [
                {"token": t, "logprob": lp, "bytes": None} for t, lp in alts[:top_n]
            ]
        out.append(entry)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--fault", action="append", default=[], help="MATCH=ACTION,ACTION…")
    args = parser.parse_args()
    faults = [Fault(m, a.split(",")) for m, _, a in (f.partition("=") for f in args.fault)]
    server = JudgeServer(ServerConfig(latency=args.latency, faults=faults), keep_bodies=False)
    print(server.start(args.port), flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        sys.stdin.read()  # serve until stdin closes
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
