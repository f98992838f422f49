"""The LLM judge: prompts, the async client, the runner, prices and robustness probes.

Core code: no SQLAlchemy, no Qt. :mod:`gradercal.db.judging` stores prompt versions,
runs and verdicts; :mod:`gradercal.cli.judge` is the ``gradercal judge`` command.

Typical use (what ``gradercal judge run`` does)::

    client = JudgeClient(JudgeParams(model="gpt-4.1-mini"), base_url=url, api_key=key)
    runner = JudgeRunner(client, DEFAULT_PROMPT, on_verdict=writer.submit, cache=cache)
    stats = asyncio.run(runner.run(items, total=len(items)))
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from gradercal.judge.artifacts import ArtifactInput, artifact_context, estimate_tokens
from gradercal.judge.parse import ParsedReply, ReplyParseError, p_met_from_logprobs, parse_reply
from gradercal.judge.pricing import Price, load_prices, price_for, prices_path
from gradercal.judge.probes import (
    PROBES,
    FlipStats,
    apply_probe,
    expert_reference,
    flip_stats,
    length_bias,
    wilson_interval,
)
from gradercal.judge.prompts import (
    DEFAULT_PROMPT,
    PromptContext,
    PromptTemplate,
    prompt_from_dict,
)
from gradercal.judge.secrets import ApiKey, Redactor, public_url, resolve_api_key

if TYPE_CHECKING:
    from gradercal.judge.client import (
        Completion,
        JudgeClient,
        JudgeFatalError,
        JudgeParams,
        RequestSettings,
        RetryPolicy,
        SampleOutcome,
        build_request_body,
        retry_after_seconds,
    )
    from gradercal.judge.runner import (
        JudgeRunner,
        MemoryCache,
        RequestCache,
        RunEstimate,
        RunStats,
        Verdict,
        WorkItem,
        aggregate,
        estimate_run,
    )

#: Names of the modules that import the openai SDK (seconds), loaded on first use so
#: that the prompts, probes and prices import fast.
_LAZY = {
    "Completion": "client",
    "JudgeClient": "client",
    "JudgeFatalError": "client",
    "JudgeParams": "client",
    "RequestSettings": "client",
    "RetryPolicy": "client",
    "build_request_body": "client",
    "SampleOutcome": "client",
    "retry_after_seconds": "client",
    "JudgeRunner": "runner",
    "MemoryCache": "runner",
    "RequestCache": "runner",
    "RunEstimate": "runner",
    "RunStats": "runner",
    "Verdict": "runner",
    "WorkItem": "runner",
    "aggregate": "runner",
    "estimate_run": "runner",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_PROMPT",
    "PROBES",
    "ApiKey",
    "ArtifactInput",
    "Completion",
    "FlipStats",
    "JudgeClient",
    "JudgeFatalError",
    "JudgeParams",
    "JudgeRunner",
    "MemoryCache",
    "ParsedReply",
    "Price",
    "PromptContext",
    "PromptTemplate",
    "Redactor",
    "ReplyParseError",
    "RequestCache",
    "RequestSettings",
    "RetryPolicy",
    "RunEstimate",
    "RunStats",
    "SampleOutcome",
    "Verdict",
    "WorkItem",
    "aggregate",
    "apply_probe",
    "artifact_context",
    "build_request_body",
    "estimate_run",
    "estimate_tokens",
    "expert_reference",
    "flip_stats",
    "length_bias",
    "load_prices",
    "p_met_from_logprobs",
    "parse_reply",
    "price_for",
    "prices_path",
    "prompt_from_dict",
    "public_url",
    "resolve_api_key",
    "retry_after_seconds",
    "wilson_interval",
]
