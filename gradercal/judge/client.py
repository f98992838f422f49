"""The judge's HTTP client: OpenAI-compatible chat completions.

One :class:`JudgeClient` talks to one OpenAI-compatible server (OpenAI, Azure OpenAI,
vLLM, Ollama, LiteLLM, …). By default (``http_backend="direct"``) it posts to
``{base_url}/chat/completions`` over one pooled aiohttp session — the request the
official ``openai`` SDK sends, at a third of its CPU per request; the SDK itself
(``"aiohttp"`` or ``"httpx"`` transport) remains selectable. It bounds the requests in
flight with an :class:`asyncio.Semaphore`, and does its own retrying (the SDK's is
switched off, so that one policy governs every path): exponential backoff with jitter on timeouts, connection errors and
5xx; on 429 and 503 it waits what ``Retry-After`` (or ``retry-after-ms``) says and
pauses every other request of the client as long. A reply without a usable verdict is
asked again up to :attr:`RetryPolicy.parse_attempts` times, then reported as a parse
failure. 401, 403 and 404 stop the run (:class:`JudgeFatalError`): no later request
could succeed.

When a server rejects an optional feature with HTTP 400 naming it (``logprobs``,
``response_format``, ``seed``, or ``max_tokens`` for models that want
``max_completion_tokens``), the client adapts once for the rest of the run and records
it in :attr:`JudgeClient.adaptations`. A request that was already in flight under the
earlier settings and is refused with HTTP 400 is sent again under the adapted ones
(not counted as an error).

Every request is identified by :meth:`JudgeClient.cache_key`, a hash of its exact body,
the server and the sample index, under which replies are cached.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import logging
import math
import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args
from urllib.parse import urlsplit, urlunsplit

import openai
import orjson
from openai import AsyncOpenAI

from gradercal.errors import GradercalError
from gradercal.judge.parse import (
    ReplyParseError,
    TokenLogprob,
    answer_offset,
    p_met_from_logprobs,
    parse_reply,
)
from gradercal.judge.request import (
    ADAPTATIONS,
    chat_request_body,
    refused_feature,
)
from gradercal.judge.request import (
    VERDICT_SCHEMA as VERDICT_SCHEMA,
)
from gradercal.judge.secrets import Redactor, public_url

log = logging.getLogger("gradercal.judge")

ResponseFormat = Literal["json_object", "json_schema", "none"]
#: Every response format a judge can ask for (``gradercal judge --response-format``).
RESPONSE_FORMATS: tuple[ResponseFormat, ...] = get_args(ResponseFormat)
SampleStatus = Literal["ok", "parse_failure", "error"]

#: Placeholder sent when no key is configured (local servers ignore it).
NO_KEY = "no-key"
_RETRY_STATUSES = {408, 409, 425, 429, 500, 502, 503, 504}
_FATAL_STATUSES = {401: "authentication failed", 403: "permission denied", 404: "not found"}


class JudgeFatalError(GradercalError):
    """The server refuses in a way no retry can fix (bad key, unknown model or URL)."""


@dataclass(frozen=True)
class JudgeParams:
    """What is asked of the model; part of the judge's identity.

    Attributes:
        model: Model name as the server knows it.
        temperature: Sampling temperature.
        samples: Requests per (response, criterion); >1 gives confidence as the share
            of samples that say met when the server returns no log-probabilities.
        max_tokens: Completion token limit (None: the server's default).
        response_format: ``json_object`` (JSON mode), ``json_schema`` (structured
            output with :data:`VERDICT_SCHEMA`) or ``none``.
        logprobs: Ask for log-probabilities (confidence from the verdict token).
        top_logprobs: Alternatives per token when ``logprobs``.
        seed: Sampling seed, for servers that honour it.
    """

    model: str
    temperature: float = 0.0
    samples: int = 1
    max_tokens: int | None = 1024
    response_format: ResponseFormat = "json_object"
    logprobs: bool = True
    top_logprobs: int = 5
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise ValueError("samples must be ≥ 1")
        if self.response_format not in RESPONSE_FORMATS:
            raise ValueError(f"unknown response_format {self.response_format!r}")

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class RetryPolicy:
    """How hard the client tries.

    Attributes:
        max_attempts: HTTP attempts per sample on transient errors (timeouts, 429, 5xx).
        parse_attempts: Replies per sample before a parse failure is recorded.
        base_delay: First backoff delay in seconds (doubles per attempt, with jitter).
        max_delay: Cap of the backoff delay.
        max_retry_after: Cap of a server's ``Retry-After``.
        timeout: Per-request timeout in seconds.
    """

    max_attempts: int = 6
    parse_attempts: int = 3
    base_delay: float = 1.0
    max_delay: float = 60.0
    max_retry_after: float = 600.0
    timeout: float = 120.0


@dataclass(frozen=True)
class Completion:
    """One reply of the server, as cached: content, usage and P(met) from log-probabilities."""

    content: str | None
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    p_met: float | None = None
    server_model: str | None = None
    request_id: str | None = None
    usage_reported: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "p_met": self.p_met,
            "server_model": self.server_model,
            "request_id": self.request_id,
            "usage_reported": self.usage_reported,
        }

    @staticmethod
    def from_json(value: Mapping[str, Any]) -> Completion:
        p_met = value.get("p_met")
        return Completion(
            content=value.get("content"),
            finish_reason=value.get("finish_reason"),
            prompt_tokens=int(value.get("prompt_tokens", 0)),
            completion_tokens=int(value.get("completion_tokens", 0)),
            p_met=None if p_met is None else float(p_met),
            server_model=value.get("server_model"),
            request_id=value.get("request_id"),
            usage_reported=bool(value.get("usage_reported", True)),
        )


@dataclass
class SampleOutcome:
    """The result of one sample (one logical request, with its retries).

    ``prompt_tokens``/``completion_tokens`` add up every reply received over the
    network (unparseable ones cost too); a cached reply adds nothing.
    """

    status: SampleStatus
    cache_key: str
    met: bool | None = None
    explanation: str | None = None
    p_met: float | None = None
    raw: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 0
    parse_failures: int = 0
    errors: list[str] = field(default_factory=list)
    cached: bool = False
    cache_value: dict[str, Any] | None = None
    server_model: str | None = None
    request_id: str | None = None
    usage_reported: bool = True

    def provenance(self) -> dict[str, Any]:
        """The JSON record of this sample kept with the verdict."""
        out: dict[str, Any] = {
            "status": self.status,
            "met": self.met,
            "p_met": self.p_met,
            "raw": self.raw,
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_s": round(self.latency_s, 4),
            "attempts": self.attempts,
            "cached": self.cached,
            "request_hash": self.cache_key,
        }
        if self.parse_failures:
            out["parse_failures"] = self.parse_failures
        if self.errors:
            out["errors"] = self.errors[-5:]
        if self.server_model:
            out["server_model"] = self.server_model
        if self.request_id:
            out["request_id"] = self.request_id
        if not self.usage_reported:
            out["usage_reported"] = False
        return out


_JSON_HEADERS = {"Content-Type": "application/json"}
#: ``direct``: gradercal's own aiohttp path to ``/chat/completions``; ``aiohttp`` and
#: ``httpx``: the openai SDK with that transport; ``auto``: direct.
HttpBackend = Literal["auto", "direct", "aiohttp", "httpx"]
HTTP_BACKENDS: tuple[str, ...] = ("auto", "direct", "aiohttp", "httpx")
#: Used when neither ``base_url`` nor ``$OPENAI_BASE_URL`` names a server (as the SDK does).
OPENAI_BASE_URL = "https://api.openai.com/v1"


def check_server(base_url: str | None, timeout: float = 5.0) -> str:
    """Fail fast, saying why, when the judge server cannot be reached at all.

    Checks that the base URL (``base_url``, else ``$OPENAI_BASE_URL``, else OpenAI's) is
    an ``http(s)://`` URL, that its host resolves and that a TCP connection to it opens
    within ``timeout`` seconds. Nothing is sent. Returns the URL checked (without
    credentials).

    Raises:
        GradercalError: Not an http(s) URL, a host that does not resolve, a refused or
            unanswered connection — with the cause, in seconds rather than after every
            request's retries.
    """
    import socket

    url = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
    shown = public_url(url) or url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise GradercalError(
            f"base URL {shown!r} is not an http:// or https:// URL (e.g. http://localhost:8000/v1)"
        )
    host = parts.hostname
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise GradercalError(f"base URL {shown!r} has an invalid port") from None
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise GradercalError(
            f"cannot reach the judge server {shown}: host {host!r} does not resolve "
            f"({exc.strerror})"
        ) from None
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except ConnectionRefusedError:
        raise GradercalError(
            f"cannot reach the judge server {shown}: connection refused by {host}:{port} "
            "(is the server running, on that port?)"
        ) from None
    except TimeoutError:
        raise GradercalError(
            f"cannot reach the judge server {shown}: no answer from {host}:{port} within "
            f"{timeout:g} s"
        ) from None
    except OSError as exc:
        raise GradercalError(
            f"cannot reach the judge server {shown}: {exc.strerror or exc}"
        ) from None
    return shown


def _http_client(backend: HttpBackend) -> tuple[Any, str]:
    """The SDK's HTTP client for ``backend`` (None: the SDK's own httpx client)."""
    if backend == "httpx":
        return None, "httpx"
    factory = getattr(openai, "DefaultAioHttpClient", None)
    try:
        if factory is None:
            raise RuntimeError("this version of the openai SDK has no aiohttp transport")
        return factory(), "aiohttp"
    except RuntimeError:
        if backend == "aiohttp":
            raise GradercalError(
                "the aiohttp transport needs the openai[aiohttp] extra: pip install 'openai[aiohttp]'"
            ) from None
        return None, "httpx"


def server_message(status: int, body: bytes) -> str:
    """The SDK's wording of an HTTP error: ``Error code: N - <error.message or body>``."""
    text = body.decode("utf-8", "replace")
    detail: Any = text
    try:
        data = orjson.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error", data)
        message = err.get("message") if isinstance(err, dict) else None
        detail = message if isinstance(message, str) and message else err
    return f"Error code: {status} - {detail}"


class _DirectTransport:
    """``POST {base_url}/chat/completions`` over one pooled aiohttp session.

    The same request the SDK sends (bearer key, JSON body, the SDK's organization and
    project headers from ``$OPENAI_ORG_ID``/``$OPENAI_PROJECT_ID``), without the SDK's
    per-request option merging, URL parsing and response models: about a third of
    the CPU per request, which is what bounds throughput when latency is low.
    """

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        default_headers: Mapping[str, str] | None,
        timeout: float,
        connections: int,
    ) -> None:
        root = urlsplit(base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL)
        # a query (e.g. Azure's ?api-version=…) stays after the path
        path = root.path.rstrip("/") + "/chat/completions"
        self.url = urlunsplit((root.scheme, root.netloc, path, root.query, ""))
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"gradercal (openai-compatible; openai-python {openai.__version__})",
            "Authorization": f"Bearer {api_key or NO_KEY}",
        }
        for env, header in (("OPENAI_ORG_ID", "OpenAI-Organization"),
                            ("OPENAI_PROJECT_ID", "OpenAI-Project")):  # fmt: skip
            if os.environ.get(env):
                headers[header] = os.environ[env]
        headers.update(default_headers or {})
        self.headers = headers
        self.timeout = timeout
        self.connections = connections
        self._session: Any = None

    def _open(self) -> Any:
        import aiohttp

        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.connections, ttl_dns_cache=300),
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                headers=self.headers,
                skip_auto_headers=("Accept-Encoding",),
            )
        return self._session

    async def post(self, data: bytes) -> tuple[int, Mapping[str, str], bytes]:
        """(status, headers, body); raises TimeoutError or ``aiohttp.ClientError``."""
        session = self._open()
        async with session.post(self.url, data=data) as resp:
            return resp.status, resp.headers, await resp.read()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def encode_body(body: Mapping[str, Any]) -> bytes:
    """The JSON bytes sent for ``body`` (sorted keys, so equal bodies give equal bytes)."""
    return orjson.dumps(body, option=orjson.OPT_SORT_KEYS)


def _sample_key(digest: bytes, sample: int) -> str:
    return hashlib.sha256(digest + b"#" + str(sample).encode()).hexdigest()


def _usage(value: Any) -> tuple[int, int] | None:
    """``(prompt_tokens, completion_tokens)`` of a reply's ``usage``; None (unknown) when
    it is missing or malformed (not an object, counts that are not whole numbers ≥ 0)."""
    if not isinstance(value, dict):
        return None
    counts = []
    for key in ("prompt_tokens", "completion_tokens"):
        n = value.get(key, 0)
        if n is None:
            n = 0
        if isinstance(n, bool) or not isinstance(n, int | float):
            return None
        if not math.isfinite(n) or n < 0 or n != int(n):
            return None
        counts.append(int(n))
    return counts[0], counts[1]


def _verdict_key_token(tokens: Sequence[Any], start: int = 0) -> int:
    """Index of the token where ``criteria_met`` first begins at or after character
    ``start`` of the reply (the final answer's, past any reasoning block; 0 if unknown).

    Tokens before it cannot hold the verdict, so :func:`p_met_from_logprobs` gets the
    same answer from the rest while building far fewer objects.
    """
    texts = [t["token"] if isinstance(t, dict) else "" for t in tokens]
    if not all(isinstance(x, str) for x in texts):
        return 0
    pos = "".join(texts).find("criteria_met", start)
    if pos < 0:
        return len(tokens)
    offset = 0
    for i, text in enumerate(texts):
        offset += len(text)
        if offset > pos:
            return i
    return 0


@dataclass(frozen=True)
class RequestSettings:
    """The optional features of a request, as a server has accepted them so far.

    Starts from :class:`JudgeParams` (:meth:`from_params`); a client drops a feature
    that the server rejects with HTTP 400 (see :attr:`JudgeClient.adaptations`).

    Attributes:
        logprobs: Send ``logprobs``/``top_logprobs``.
        response_format: ``json_object``, ``json_schema`` or ``none`` (not sent).
        seed: The seed sent (None: not sent).
        tokens_field: The name under which ``max_tokens`` is sent (``max_tokens`` or
            ``max_completion_tokens``).
    """

    logprobs: bool
    response_format: ResponseFormat
    seed: int | None
    tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"

    @staticmethod
    def from_params(params: JudgeParams) -> RequestSettings:
        return RequestSettings(
            logprobs=params.logprobs, response_format=params.response_format, seed=params.seed
        )


def build_request_body(
    params: JudgeParams,
    messages: Sequence[Mapping[str, Any]],
    settings: RequestSettings | None = None,
) -> dict[str, Any]:
    """The exact JSON body of one chat-completions request for ``messages``.

    The one place a judge request is built: the client (:meth:`JudgeClient.request_body`),
    the cache keys, and any other path that sends the runner's requests use it (it is
    :func:`gradercal.judge.request.chat_request_body`, which the exported judges carry).
    ``settings`` are the optional features as the server accepts them (default: as
    ``params`` asks). Keys, in order: ``model``, ``messages``, ``temperature``, the token
    limit (unless ``max_tokens`` is None), ``response_format`` (``{"type":
    "json_object"}`` or a strict ``json_schema`` with :data:`VERDICT_SCHEMA`), ``logprobs``
    and ``top_logprobs``, ``seed``.
    """
    s = settings or RequestSettings.from_params(params)
    return chat_request_body(
        params.model,
        messages,
        {
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
            "response_format": s.response_format,
            "logprobs": s.logprobs,
            "top_logprobs": params.top_logprobs,
            "seed": s.seed,
        },
        tokens_field=s.tokens_field,
    )


class _Retry(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _ItemError(Exception):
    pass


class _Adapted(Exception):
    pass


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    now = time.time() if now is None else now
    return max(when.timestamp() - now, 0.0)


class JudgeClient:
    """Sends judge requests to one server with bounded concurrency and retries.

    Args:
        params: What to ask (model, temperature, …).
        base_url: The server's OpenAI-compatible base URL (None: the SDK's default).
        api_key: The key (None: a placeholder, for servers without authentication).
        concurrency: Requests in flight at most.
        retry: Retry policy.
        seed: Seed of the backoff jitter (tests).
        default_headers: Extra HTTP headers.
        http_backend: ``direct`` (gradercal's own aiohttp path to
            ``/chat/completions``: the least CPU per request), ``aiohttp`` (the openai
            SDK with its aiohttp transport), ``httpx`` (the SDK's default), or ``auto``:
            direct. All send the same bytes and share one retry policy.
    """

    def __init__(
        self,
        params: JudgeParams,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int = 8,
        retry: RetryPolicy | None = None,
        seed: int | None = None,
        default_headers: Mapping[str, str] | None = None,
        http_backend: HttpBackend = "auto",
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be ≥ 1")
        self.params = params
        self.params_dict = params.to_dict()
        self.retry = retry or RetryPolicy()
        self.base_url = base_url
        self.public_base_url = public_url(base_url)
        self.redact = Redactor(api_key)
        self.concurrency = concurrency
        self.adaptations: list[str] = []
        self._sem = asyncio.Semaphore(concurrency)
        self._paused_until = 0.0
        self._rng = random.Random(seed)
        self._logprobs = params.logprobs
        self._response_format = params.response_format
        self._seed = params.seed
        self._tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
        self._settings_version = 0
        self._server_tag = f"{self.public_base_url}\n".encode()
        self.in_flight = 0
        self.max_in_flight = 0
        if http_backend not in HTTP_BACKENDS:
            raise ValueError(f"unknown http_backend {http_backend!r}")
        self._client: AsyncOpenAI | None = None
        self._direct: _DirectTransport | None = None
        if http_backend in ("auto", "direct"):
            self.http_backend = "direct"
            self._direct = _DirectTransport(
                base_url, api_key, default_headers, self.retry.timeout, concurrency
            )
        else:
            http_client, self.http_backend = _http_client(http_backend)
            self._client = AsyncOpenAI(
                api_key=api_key or NO_KEY,
                base_url=base_url,
                max_retries=0,
                timeout=self.retry.timeout,
                default_headers=default_headers,
                http_client=http_client,
            )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
        if self._direct is not None:
            await self._direct.close()

    async def __aenter__(self) -> JudgeClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    # -- requests ----------------------------------------------------------------
    def request_body(self, messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The exact JSON body sent for ``messages`` under the current settings
        (:func:`build_request_body` with what this client has adapted so far)."""
        return build_request_body(self.params, messages, self.settings())

    def settings(self) -> RequestSettings:
        """The optional request features as currently sent (after any adaptation)."""
        return RequestSettings(
            logprobs=self._logprobs,
            response_format=self._response_format,
            seed=self._seed,
            tokens_field=self._tokens_field,
        )

    def cache_key(self, body: Mapping[str, Any], sample: int) -> str:
        """The cache key of one request: its exact body, the server and the sample index."""
        return _sample_key(self._digest(encode_body(body)), sample)

    def _digest(self, data: bytes) -> bytes:
        h = hashlib.sha256(self._server_tag)
        h.update(data)
        return h.digest()

    async def sample(
        self,
        messages: Sequence[Mapping[str, Any]],
        index: int = 0,
        cached: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        check: Callable[[str | None], object] | None = None,
    ) -> SampleOutcome:
        """Ask for one verdict, with retries; never raises except :class:`JudgeFatalError`.

        Args:
            messages: The chat messages (from :meth:`JudgeRunner.messages`: a message's
                content is text, or a list of text and image parts).
            index: Sample index (0 … samples−1), part of the cache key.
            cached: Replies already known, by cache key (see :meth:`cache_key`).
            check: For a request that is not a verdict (e.g. the alignment optimizer's):
                called with the reply's content instead of :func:`parse_reply`; raising
                :class:`ReplyParseError` counts as a parse failure (asked again, as a
                verdict would be); otherwise the outcome is ``ok`` with ``met`` None and
                the reply in ``raw``.
        """
        start = time.monotonic()
        out = SampleOutcome(status="error", cache_key="")
        version = -1
        data = b""
        while True:
            if version != self._settings_version:
                version = self._settings_version
                data = encode_body(self.request_body(messages))
                out.cache_key = _sample_key(self._digest(data), index)
            hit = cached.get(out.cache_key) if cached else None
            if hit is not None and out.parse_failures == 0:
                completion = Completion.from_json(hit)
                out.cached = True
            else:
                out.cached = False
                out.attempts += 1
                try:
                    completion = await self._send(data)
                except _Adapted:
                    out.attempts -= 1
                    continue
                except _ItemError as exc:
                    if version != self._settings_version:
                        # sent before another request taught the client what this
                        # server refuses: ask again under the adapted settings
                        out.attempts -= 1
                        continue
                    out.errors.append(str(exc))
                    out.status = "error"
                    break
                except _Retry as exc:
                    out.errors.append(str(exc))
                    if out.attempts >= self.retry.max_attempts:
                        out.status = "error"
                        break
                    await self._backoff(out.attempts, exc.retry_after)
                    continue
                out.prompt_tokens += completion.prompt_tokens
                out.completion_tokens += completion.completion_tokens
                out.usage_reported = out.usage_reported and completion.usage_reported
            out.raw = completion.content
            out.finish_reason = completion.finish_reason
            out.server_model = completion.server_model
            out.request_id = completion.request_id
            try:
                if check is not None:
                    check(completion.content)
                    parsed = None
                else:
                    parsed = parse_reply(completion.content)
            except ReplyParseError as exc:
                out.parse_failures += 1
                out.errors.append(f"parse: {exc} (finish_reason {completion.finish_reason})")
                if out.parse_failures >= self.retry.parse_attempts:
                    out.status = "parse_failure"
                    break
                continue
            out.status = "ok"
            if parsed is not None:
                out.met = parsed.met
                out.explanation = parsed.explanation
                out.p_met = completion.p_met
            if not out.cached:
                out.cache_value = completion.to_json()
            break
        out.latency_s = time.monotonic() - start
        return out

    async def _send(self, data: bytes) -> Completion:
        await self._wait_pause()
        async with self._sem:
            await self._wait_pause()
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                return await self._create(data)
            finally:
                self.in_flight -= 1

    async def _create(self, data: bytes) -> Completion:
        if self._direct is not None:
            return await self._create_direct(self._direct, data)
        return await self._create_sdk(data)

    async def _create_direct(self, transport: _DirectTransport, data: bytes) -> Completion:
        import aiohttp

        try:
            status, headers, raw = await transport.post(data)
        except TimeoutError as exc:
            raise _Retry(f"timeout after {self.retry.timeout:g} s") from exc
        except (aiohttp.ClientPayloadError, aiohttp.ClientResponseError) as exc:
            raise _Retry(f"invalid response body: {self._text(exc)}") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise _Retry(f"connection error: {self._text(exc)}") from exc
        if status >= 400:
            raise self._status_error(status, headers, self.redact(server_message(status, raw)))
        try:
            reply = orjson.loads(raw)
            if not isinstance(reply, dict):
                raise ValueError("the reply is not a JSON object")
        except ValueError as exc:
            raise _Retry(f"invalid response body: {self._text(exc)}") from exc
        return self._completion(reply)

    async def _create_sdk(self, data: bytes) -> Completion:
        # The body goes out exactly as built and hashed, through the SDK's generic
        # ``post`` (its documented way to send any request): ``chat.completions.create``
        # would re-validate, transform and deep-copy every field, milliseconds per request.
        assert self._client is not None
        try:
            async with asyncio.timeout(self.retry.timeout + 1.0):
                raw = await self._client.post(
                    "/chat/completions",
                    cast_to=bytes,
                    content=data,
                    options={"timeout": self.retry.timeout, "headers": _JSON_HEADERS},
                )
            reply = orjson.loads(raw)
            if not isinstance(reply, dict):
                raise ValueError("the reply is not a JSON object")
        except (openai.APITimeoutError, TimeoutError) as exc:
            raise _Retry(f"timeout after {self.retry.timeout:g} s") from exc
        except openai.APIStatusError as exc:
            raise self._status_error(
                exc.status_code, exc.response.headers, self._text(exc)
            ) from exc
        except openai.APIConnectionError as exc:
            raise _Retry(f"connection error: {self._text(exc)}") from exc
        except (openai.APIResponseValidationError, ValueError) as exc:
            raise _Retry(f"invalid response body: {self._text(exc)}") from exc
        return self._completion(reply)

    def _status_error(self, status: int, headers: Mapping[str, str], message: str) -> Exception:
        message = message[:500]
        if status in _RETRY_STATUSES or status >= 500:
            wait = None
            if status in (429, 503):
                wait = retry_after_seconds(headers)
                if wait is not None:
                    wait = min(wait, self.retry.max_retry_after)
                    self._pause(wait)
            return _Retry(f"HTTP {status}: {message}", wait)
        if status in _FATAL_STATUSES:
            return JudgeFatalError(
                f"{_FATAL_STATUSES[status]} (HTTP {status}) at {self.public_base_url or 'the API'}"
                f" for model {self.params.model!r}: {message}"
            )
        if status == 400 and self._adapt(message):
            return _Adapted()
        return _ItemError(f"HTTP {status}: {message}")

    def _adapt(self, message: str) -> bool:
        sent = {
            "logprobs": self._logprobs,
            "response_format": self._response_format != "none",
            "seed": self._seed is not None,
            "max_tokens": self._tokens_field == "max_tokens",
        }
        feature = refused_feature(message, {k for k, on in sent.items() if on})
        if feature is None:
            return False
        if feature == "logprobs":
            self._logprobs = False
        elif feature == "response_format":
            self._response_format = "none"
        elif feature == "seed":
            self._seed = None
        else:
            self._tokens_field = "max_completion_tokens"
        self.adaptations.append(ADAPTATIONS[feature])
        self._settings_version += 1
        log.info("judge: %s", self.adaptations[-1])
        return True

    def _completion(self, reply: Mapping[str, Any]) -> Completion:
        choices = reply.get("choices") or []
        choice = choices[0] if isinstance(choices, list) and choices else {}
        if not isinstance(choice, dict):
            choice = {}
        message = choice.get("message") or {}
        content = message.get("content") if isinstance(message, dict) else None
        finish = choice.get("finish_reason")
        p_met: float | None = None
        lp = choice.get("logprobs")
        tokens = lp.get("content") if isinstance(lp, dict) else None
        if isinstance(tokens, list) and tokens:
            try:
                p_met = p_met_from_logprobs(
                    TokenLogprob(
                        str(t["token"]),
                        float(t["logprob"]),
                        tuple(
                            (str(a["token"]), float(a["logprob"]))
                            for a in t.get("top_logprobs") or ()
                        ),
                    )
                    for t in tokens[
                        _verdict_key_token(
                            tokens, answer_offset(content if isinstance(content, str) else None)
                        ) :
                    ]
                )
            except (KeyError, TypeError, ValueError, AttributeError):
                p_met = None  # malformed log-probabilities: confidence falls back to samples
        tokens_used = _usage(reply.get("usage"))
        model = reply.get("model")
        rid = reply.get("id")
        return Completion(
            content=self._clean(content),
            finish_reason=self._clean(finish),
            prompt_tokens=tokens_used[0] if tokens_used else 0,
            completion_tokens=tokens_used[1] if tokens_used else 0,
            p_met=p_met,
            server_model=self._clean(model),
            request_id=self._clean(rid),
            usage_reported=tokens_used is not None,
        )

    def _clean(self, value: Any) -> str | None:
        """A reply's field as it may be stored: text, the key redacted (a server may echo
        it anywhere), NUL characters dropped (PostgreSQL text cannot hold them)."""
        if value is None:
            return None
        return self.redact(str(value)).replace("\x00", "")

    def _text(self, exc: BaseException) -> str:
        text = str(exc) or type(exc).__name__
        return self.redact(text[:500]).replace("\x00", "")

    # -- waiting -------------------------------------------------------------------
    def _pause(self, seconds: float) -> None:
        self._paused_until = max(self._paused_until, time.monotonic() + seconds)

    async def _wait_pause(self) -> None:
        while (delay := self._paused_until - time.monotonic()) > 0:
            await asyncio.sleep(delay)

    def backoff_delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before attempt ``attempt + 1``.

        With ``retry_after`` (from the server): that, plus up to 10% jitter. Otherwise
        exponential backoff with "equal jitter": uniform in [d/2, d] for
        ``d = min(max_delay, base_delay · 2^(attempt−1))``.
        """
        if retry_after is not None:
            return retry_after * (1.0 + 0.1 * self._rng.random())
        d = min(self.retry.max_delay, self.retry.base_delay * 2 ** (attempt - 1))
        return float(d / 2 + self._rng.random() * d / 2)

    async def _backoff(self, attempt: int, retry_after: float | None) -> None:
        delay = self.backoff_delay(attempt, retry_after)
        log.debug("judge: retry in %.2f s (attempt %d)", delay, attempt)
        await asyncio.sleep(delay)
        await self._wait_pause()
