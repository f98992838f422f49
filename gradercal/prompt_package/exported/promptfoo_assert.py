"""promptfoo glue of the exported judge (written below the kernel in the exported file).

promptfoo runs :func:`get_assert` once per test, in a fresh Python process, with the
test's output and context. ``PACKAGE_JSON`` is replaced by the package's prompt,
decision and judge settings when exported. Standard library only.

A judge run with ``--samples K`` asks K times per criterion and combines the replies as
gradercal's runner does (:func:`combine_samples`: majority verdict; confidence from
log-probabilities, else the share of samples that say met).
"""

from __future__ import annotations

import json
import math
import os
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gradercal.prompt_package.kernel import (
    ADAPTATIONS,
    build_messages,
    check_prompt,
    combine_samples,
    criteria_of,
    decide,
    drop_feature,
    read_reply,
    refused_feature,
    request_body,
)

PACKAGE_JSON = "{}"
PACKAGE: dict[str, Any] = json.loads(PACKAGE_JSON)
PROMPT_VERSION: str = str(PACKAGE.get("prompt_version", ""))
_PROMPT: dict[str, Any] = PACKAGE.get("prompt", {})
_DECISION: dict[str, Any] = PACKAGE.get("decision", {})
_JUDGE: dict[str, Any] = PACKAGE.get("judge", {})
#: Samples per criterion: the judge's ``--samples K`` (gradercal's ``JudgeParams.samples``).
_SAMPLES = max(1, int((_JUDGE.get("parameters") or {}).get("samples") or 1))
#: HTTP statuses worth another attempt.
_RETRY = {408, 409, 429, 500, 502, 503, 504}
#: Replies asked for per criterion before it is left without a verdict (gradercal's
#: ``RetryPolicy.parse_attempts``).
_PARSE_ATTEMPTS = 3
#: Optional features the server refused (HTTP 400 naming them): left out of every later
#: request, as gradercal's client does for the rest of a run.
_REFUSED: set[str] = set()


check_prompt(_PROMPT, PROMPT_VERSION)  # an edited embedded prompt is refused


def _settings(config: dict[str, Any]) -> tuple[str, str, str | None, int, float]:
    """(chat-completions URL, model, API key, concurrency, timeout) from the assertion's
    ``config`` and the environment."""
    base = os.environ.get(str(config.get("base_url_env", "OPENAI_BASE_URL"))) or str(
        config.get("base_url") or "https://api.openai.com/v1"
    )
    model = str(config.get("model") or _JUDGE.get("model") or "")
    if not model:
        raise RuntimeError("no judge model: set `model` in the assertion's config")
    key = os.environ.get(str(config.get("api_key_env", "OPENAI_API_KEY")))
    return (
        base.rstrip("/") + "/chat/completions",
        model,
        key,
        int(config.get("concurrency", 8)),
        float(config.get("timeout", 120.0)),
    )


def _server_message(exc: urllib.error.HTTPError) -> str:
    """The server's own words for an HTTP error (its JSON ``error.message``, else the body)."""
    try:
        raw = exc.read().decode("utf-8", "replace")
    except OSError:  # a body that cannot be read says nothing more
        raw = ""
    message: Any = None
    try:
        error = json.loads(raw).get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        pass
    return str(message or raw.strip() or exc.reason)[:500]


def _adapted(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` without the features the server has refused so far."""
    for feature in ADAPTATIONS:
        if feature in _REFUSED and feature in body:
            body = drop_feature(body, feature)
    return body


def _post(url: str, body: dict[str, Any], key: str | None, timeout: float) -> dict[str, Any]:
    """The server's reply to ``body``; a feature the server refuses (HTTP 400 naming it)
    is dropped and the request sent again, as gradercal's client does.

    Raises:
        RuntimeError: Another HTTP error (with the server's message), or no answer.
    """
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    attempt = 0
    while True:
        body = _adapted(body)
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        try:
            req = urllib.request.Request(url, data=data, headers=headers, method="POST")
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                reply: dict[str, Any] = json.loads(resp.read().decode("utf-8"))
                return reply
        except urllib.error.HTTPError as exc:
            message = _server_message(exc)
            if exc.code == 400:
                feature = refused_feature(message, body)
                if feature is not None:
                    _REFUSED.add(feature)
                    continue
                if _adapted(body) != body:  # refused under settings learnt since: resend
                    continue
            if exc.code not in _RETRY or attempt == 3:
                raise RuntimeError(f"judge server: HTTP {exc.code}: {message}") from None
        except (urllib.error.URLError, TimeoutError) as exc:
            if attempt == 3:
                raise RuntimeError(f"judge server unreachable: {exc}") from None
        time.sleep(0.5 * 2**attempt)
        attempt += 1


def grade(output: str, sample: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """gradercal's grading of ``output`` against the sample's rubric (see the kernel)."""
    url, model, key, concurrency, timeout = _settings(config)
    criteria = criteria_of(sample.get("rubric") or [])
    params = dict(_JUDGE.get("parameters") or {})

    def ask(c: Any) -> tuple[str, bool | None, float | None, str]:
        msgs = build_messages(
            _PROMPT,
            response=output,
            criterion=c.text,
            points=c.points,
            task_prompt=str(sample.get("input", "")),
            tags=list(c.tags),
            artifacts=str(sample.get("artifacts", "")),
        )
        got = []
        for _sample in range(_SAMPLES):
            for _ in range(_PARSE_ATTEMPTS):
                reply = _post(url, request_body(model, msgs, params), key, timeout)
                choice = (reply.get("choices") or [{}])[0]
                content = (choice.get("message") or {}).get("content")
                logprobs = (choice.get("logprobs") or {}).get("content")
                met, p_met, why = read_reply(content, logprobs)
                if met is not None:
                    break
            got.append((met, p_met, why))
        met, p_met, _source = combine_samples([(m, p) for m, p, _w in got])
        why = next((w for m, _p, w in got if m is not None and m == met), got[0][2])
        return c.id, met, p_met, why

    judged = [c for c in criteria if c.auto is None]
    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(judged) or 1))) as pool:
        replies = list(pool.map(ask, judged))
    verdicts = {cid: (met, p_met) for cid, met, p_met, _why in replies}
    why = {cid: text for cid, _m, _p, text in replies}
    threshold = config.get("pass_threshold")
    result = decide(
        _DECISION,
        criteria,
        verdicts,
        answer=sample.get("answer"),
        pass_threshold=None if threshold is None else float(threshold),
    )
    for entry in result["criteria"]:
        entry["explanation"] = why.get(entry["id"], "")
    result["adaptations"] = [ADAPTATIONS[f] for f in ADAPTATIONS if f in _REFUSED]
    result["without_confidence"] = sum(1 for _c, m, p, _w in replies if m is not None and p is None)
    result["samples"] = _SAMPLES
    return result


def _number(x: float) -> float | None:
    return None if math.isnan(x) else x


def get_assert(output: str, context: dict[str, Any]) -> dict[str, Any]:
    """promptfoo's entry point: the test's score is gradercal's calibrated rubric score
    and it passes exactly when gradercal's pass/fail says so (``score ≥ threshold −
    1e-9``). A response with a criterion the judge gave no verdict on scores 0 and
    fails, saying so."""
    test_vars = dict(context.get("vars") or {})
    sample = test_vars.get("sample")
    if not isinstance(sample, dict):
        sample = ((context.get("test") or {}).get("vars") or {}).get("sample")
    if not isinstance(sample, dict):
        return {"pass": False, "score": 0.0, "reason": "the test has no `sample` variable"}
    result = grade(output, sample, dict(context.get("config") or {}))
    score = result["score"]
    components = [
        {
            "pass": bool(e.get("calibrated_met", e["met"])),
            "score": 1.0 if e.get("calibrated_met", e["met"]) else 0.0,
            "reason": f"{e['id']}: {'no verdict' if e['met'] is None else e['explanation']}",
        }
        for e in result["criteria"]
    ]
    complete = result["unanswered"] == 0 and not math.isnan(score)
    reason = (
        f"rubric score {score:.4f} ({result['rule']}; raw {result['raw_score']:.4f}), "
        f"{'passes' if result['passed'] else 'fails'} at {result['pass_threshold']}"
        if complete
        else f"incomplete: {result['unanswered']} criteria without a verdict"
    )
    lost = list(result["adaptations"])
    if result["without_confidence"]:
        lost.append(f"{result['without_confidence']} verdicts without a confidence")
    if lost:
        reason += f" (the judge server: {'; '.join(lost)})"
    return {
        "pass": bool(result["passed"]),
        "score": score if complete else 0.0,
        "reason": reason,
        "componentResults": components,
        "namedScores": {
            "rubric_score": score if complete else 0.0,
            "raw_rubric_score": _number(result["raw_score"]) or 0.0,
        },
        "metadata": {
            "prompt_version": PROMPT_VERSION,
            "raw_score": _number(result["raw_score"]),
            "score": _number(score),
            "passed": result["passed"],
            "rule": result["rule"],
            "complete": complete,
            "criteria": result["criteria"],
            "adaptations": result["adaptations"],
            "without_confidence": result["without_confidence"],
            "samples": result["samples"],
        },
    }
