"""The judge client and runner against a real HTTP server on 127.0.0.1 (tests/support/judge_server.py).

No mocking of the openai SDK: every request goes over loopback HTTP.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from gradercal.judge import (
    DEFAULT_PROMPT,
    JudgeClient,
    JudgeParams,
    JudgeRunner,
    MemoryCache,
    Price,
    RetryPolicy,
    RunStats,
    Verdict,
    WorkItem,
)
from tests.support.judge_server import Fault, JudgeServer, ServerConfig, expected_met

FAST = RetryPolicy(max_attempts=4, parse_attempts=3, base_delay=0.01, max_delay=0.05, timeout=5.0)
CRITERION = "Mentions the premature stop codon"  # keyword: "premature"


def items(n: int, *, tag: str = "") -> list[WorkItem]:
    """n items, every other one meeting CRITERION; ``tag`` goes into every response."""
    return [
        WorkItem(
            ref=i,
            task_id="T1",
            response_id=f"R{i}",
            criterion_id="c1",
            response_text=(f"Item {i}. " + ("A premature stop." if i % 2 else "All fine.") + tag),
            criterion_text=CRITERION,
            points=5,
        )
        for i in range(n)
    ]


@dataclass
class Outcome:
    stats: RunStats
    verdicts: dict[Any, Verdict] = field(default_factory=dict)
    client_max_in_flight: int = 0
    adaptations: list[str] = field(default_factory=list)


def run(
    server: JudgeServer,
    work: list[WorkItem],
    *,
    params: JudgeParams | None = None,
    retry: RetryPolicy = FAST,
    concurrency: int = 4,
    cache: MemoryCache | None = None,
    price: Price | None = None,
    max_cost: float | None = None,
    api_key: str | None = "sk-test-key-000000",
    http_backend: str = "auto",
) -> Outcome:
    async def main() -> Outcome:
        client = JudgeClient(
            params or JudgeParams(model="judge-model"),
            base_url=server.base_url,
            api_key=api_key,
            concurrency=concurrency,
            retry=retry,
            seed=0,
            http_backend=http_backend,  # type: ignore[arg-type]
        )
        got: dict[Any, Verdict] = {}

        def on_verdict(v: Verdict) -> None:
            got[v.item.ref] = v
            if cache is not None:
                cache.put(v)

        runner = JudgeRunner(
            client, DEFAULT_PROMPT, on_verdict=on_verdict, cache=cache, price=price,
            max_cost=max_cost,
        )  # fmt: skip
        async with client:
            stats = await runner.run(work, total=len(work))
        return Outcome(stats, got, client.max_in_flight, client.adaptations)

    return asyncio.run(main())


@pytest.fixture
def serve() -> Iterator[Callable[..., JudgeServer]]:
    started: list[JudgeServer] = []

    def start(**config: Any) -> JudgeServer:
        srv = JudgeServer(ServerConfig(**config))
        srv.start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()


def test_verdicts_follow_the_server_and_concurrency_is_bounded(
    serve: Callable[..., JudgeServer],
) -> None:
    srv = serve(latency=0.03)
    work = items(24)
    out = run(srv, work, concurrency=5)
    assert out.stats.status == "completed"
    assert (out.stats.done, out.stats.ok, out.stats.requests) == (24, 24, 24)
    for it in work:
        v = out.verdicts[it.ref]
        assert v.met == expected_met(CRITERION, it.response_text) == bool(it.ref % 2)
        assert v.confidence == pytest.approx(0.9)  # from the verdict token's logprobs
        assert v.provenance["confidence_source"] == "logprobs"
    assert srv.stats.max_in_flight == out.client_max_in_flight == 5
    body = srv.stats.bodies[0]
    assert body["model"] == "judge-model" and body["temperature"] == 0.0
    assert body["response_format"] == {"type": "json_object"}
    assert body["logprobs"] is True and body["top_logprobs"] == 5


def test_retry_after_on_429_is_honoured(serve: Callable[..., JudgeServer]) -> None:
    srv = serve(faults=[Fault("Item 1.", ["429:1", "ok"])])
    start = time.monotonic()
    out = run(srv, items(2), concurrency=1)
    elapsed = time.monotonic() - start
    v = out.verdicts[1]
    assert v.status == "ok" and v.met is True
    sample = v.provenance["samples"][0]
    assert sample["attempts"] == 2 and sample["errors"][0].startswith("HTTP 429")
    assert 1.0 <= sample["latency_s"] <= 1.5  # waited what Retry-After said (plus ≤10% jitter)
    assert elapsed >= 1.0
    assert srv.stats.replies == {"429": 1, "ok": 2}


def test_retry_after_ms_on_503_pauses_every_request(serve: Callable[..., JudgeServer]) -> None:
    srv = serve(latency=0.01, faults=[Fault("Item 0.", ["503:ms=400", "ok"])])
    out = run(srv, items(12), concurrency=4)
    assert out.stats.ok == 12 and srv.stats.replies["503"] == 1
    # the pause is global: no request at all reached the server while it lasted
    replied = next(done for _t, done, tag in srv.stats.log if tag == "503")
    later = sorted(t for t, _done, _tag in srv.stats.log if t > replied)
    assert len(later) == 12 - 4 + 1 and later[0] - replied >= 0.4


@pytest.mark.parametrize("backend", ["httpx", "aiohttp", "direct"])
def test_server_errors_and_timeouts_are_retried_with_backoff(
    serve: Callable[..., JudgeServer], backend: str
) -> None:
    if backend == "aiohttp":
        pytest.importorskip("aiohttp")
    srv = serve(
        hang_s=5.0,
        faults=[
            Fault("Item 0.", ["500", "500", "ok"]),
            Fault("Item 1.", ["timeout", "ok"]),
            Fault("Item 2.", ["badbody", "ok"]),
        ],
    )
    retry = RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.05, timeout=0.4)
    out = run(srv, items(4), retry=retry, http_backend=backend)
    assert out.stats.ok == 4 and out.stats.requests == 4 + 2 + 1 + 1
    assert out.verdicts[0].provenance["samples"][0]["attempts"] == 3
    s1 = out.verdicts[1].provenance["samples"][0]
    assert s1["attempts"] == 2 and s1["errors"] == ["timeout after 0.4 s"]
    s2 = out.verdicts[2].provenance["samples"][0]
    assert s2["attempts"] == 2 and "invalid response body" in s2["errors"][0]


def test_persistent_errors_give_up_without_a_verdict(serve: Callable[..., JudgeServer]) -> None:
    srv = serve(faults=[Fault("Item 0.", ["500"]), Fault("Item 1.", ["400"])])
    out = run(srv, items(3))
    assert (out.stats.ok, out.stats.errors, out.stats.parse_failures) == (1, 2, 0)
    v0, v1 = out.verdicts[0], out.verdicts[1]
    assert v0.status == "error" and v0.met is None and v0.confidence is None
    assert v0.provenance["samples"][0]["attempts"] == FAST.max_attempts
    assert v1.provenance["samples"][0]["attempts"] == 1  # a 400 is not retried
    assert v1.provenance["samples"][0]["errors"] == ["HTTP 400: Error code: 400 - injected 400"]


@pytest.mark.parametrize("fault", ["malformed", "truncated", "nobool"])
def test_unparseable_replies_are_retried_then_failures_never_not_met(
    serve: Callable[..., JudgeServer], fault: str
) -> None:
    # Item 0 does not meet the criterion: a bug reading failures as "not met" would pass
    # unnoticed if we only looked at met values, so check status and met is None.
    srv = serve(faults=[Fault("Item 0.", [fault]), Fault("Item 2.", [fault, "ok"])])
    out = run(srv, items(3))
    v0 = out.verdicts[0]
    assert v0.status == "parse_failure" and v0.met is None and v0.confidence is None
    assert v0.rationale is None and not v0.cache_entries
    sample = v0.provenance["samples"][0]
    assert sample["parse_failures"] == FAST.parse_attempts == sample["attempts"]
    assert sample["raw"]  # the last bad reply is kept for inspection
    assert out.verdicts[2].status == "ok" and out.verdicts[2].met is False
    assert out.verdicts[2].provenance["samples"][0]["parse_failures"] == 1
    assert (out.stats.ok, out.stats.parse_failures) == (2, 1)
    assert srv.stats.replies[fault] == FAST.parse_attempts + 1


def test_rejected_optional_parameters_are_dropped_once(
    serve: Callable[..., JudgeServer],
) -> None:
    srv = serve(reject_params={"logprobs", "response_format"})
    out = run(srv, items(6), concurrency=1)
    assert out.stats.ok == 6
    assert out.adaptations == [
        "logprobs dropped (server rejected them)",
        "response_format dropped (server rejected it)",
    ]
    assert srv.stats.replies["400"] == 2  # once each, not once per request
    v = out.verdicts[1]
    # one sample and no log-probabilities: no confidence was measured, none is made up
    assert v.provenance["confidence_source"] is None and v.confidence is None
    assert v.met is not None and out.stats.with_confidence == 0


def test_confidence_from_k_samples(serve: Callable[..., JudgeServer]) -> None:
    srv = serve(vote_flip_period=3)  # every third repeat of a request votes the other way
    params = JudgeParams(model="m", samples=3, temperature=0.7, logprobs=False)
    out = run(srv, items(4), params=params)
    for ref, v in out.verdicts.items():
        assert v.met is bool(ref % 2)
        assert v.p_met == pytest.approx(2 / 3 if ref % 2 else 1 / 3)
        assert v.confidence == pytest.approx(2 / 3)
        assert len(v.provenance["samples"]) == 3
        assert len({s["request_hash"] for s in v.provenance["samples"]}) == 3
    assert srv.stats.requests == 12


def test_identical_requests_come_from_the_cache(serve: Callable[..., JudgeServer]) -> None:
    srv = serve()
    cache = MemoryCache()
    first = run(srv, items(6), cache=cache)
    assert first.stats.requests == 6 and len(cache.data) == 6
    again = run(srv, items(8), cache=cache)
    assert (again.stats.cached, again.stats.requests) == (6, 2)
    assert srv.stats.requests == 8
    for ref in range(6):
        assert again.verdicts[ref].met == first.verdicts[ref].met
        assert again.verdicts[ref].provenance["samples"][0]["cached"] is True
    other_model = run(srv, items(2), cache=cache, params=JudgeParams(model="other"))
    assert other_model.stats.requests == 2  # another request, another key


def test_max_cost_stops_cleanly(serve: Callable[..., JudgeServer]) -> None:
    srv = serve(latency=0.005)
    price = Price(1000.0, 1000.0)  # ≈ 0.47 USD per request with the default prompt
    out = run(srv, items(40), price=price, max_cost=3.0, concurrency=4)
    per_item = out.stats.cost_usd / out.stats.done
    assert out.stats.status == "stopped_cost" and out.stats.message == "max cost 3 USD reached"
    assert 3 <= out.stats.done < 40
    assert out.stats.cost_usd <= 3.0 + per_item  # at most the items in flight overshoot
    assert srv.stats.requests == out.stats.done  # nothing sent that was not used


def test_bad_key_stops_the_run_and_the_key_is_not_in_the_message(
    serve: Callable[..., JudgeServer],
) -> None:
    srv = serve(require_key="sk-right-key-123456")
    out = run(srv, items(10), api_key="sk-wrong-key-987654", concurrency=2)
    assert out.stats.status == "failed"
    assert out.stats.message is not None and "authentication failed (HTTP 401)" in out.stats.message
    assert "sk-wrong-key-987654" not in out.stats.message
    assert srv.stats.requests <= 2 and not out.verdicts


def test_a_failing_verdict_sink_stops_the_run_with_its_own_error(
    serve: Callable[..., JudgeServer],
) -> None:
    from gradercal.errors import GradercalError

    srv = serve()

    def broken(_v: Verdict) -> None:
        raise GradercalError("saving verdicts failed: disk full")

    async def main() -> JudgeRunner:
        client = JudgeClient(JudgeParams(model="m"), base_url=srv.base_url, concurrency=2)
        runner = JudgeRunner(client, DEFAULT_PROMPT, on_verdict=broken)
        async with client:
            with pytest.raises(GradercalError, match="disk full"):
                await runner.run(items(10), total=10)
        return runner

    runner = asyncio.run(main())
    assert runner.stats.status == "failed" and runner.stats.message is not None
    assert srv.stats.requests <= 3
