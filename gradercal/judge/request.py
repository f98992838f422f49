"""The judge's request: its JSON body, and what to drop when a server refuses a feature.

Standard library only, and no other gradercal import: the exported judges
(:mod:`gradercal.prompt_package.standalone`) carry this very source, so the Inspect AI
scorer and the promptfoo assertion send the body gradercal's client sends and degrade
as it does.

* :func:`chat_request_body` — the chat-completions body for a judge's parameters (as
  :meth:`gradercal.judge.client.JudgeParams.to_dict` records them);
* :func:`refused_feature` — which optional feature (``logprobs``, ``response_format``,
  ``seed``, or ``max_tokens`` for models that want ``max_completion_tokens``) a
  server's HTTP 400 message refuses, among those the request carried;
* :func:`drop_feature` — the body without it (the client instead changes its settings
  once for the rest of the run: :meth:`gradercal.judge.client.JudgeClient.request_body`);
* :func:`combine_samples` — one verdict from the ``samples`` replies of one (response,
  criterion): majority, and the confidence from log-probabilities or self-consistency
  (the runner's :func:`gradercal.judge.runner.aggregate` and the exported judges use it).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

#: JSON schema of a verdict, sent with ``response_format=json_schema``.
VERDICT_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "explanation": {"type": "string"},
        "criteria_met": {"type": "boolean"},
    },
    "required": ["explanation", "criteria_met"],
    "additionalProperties": False,
}

#: The optional features a server may refuse with HTTP 400, in the order they are
#: tried against its message, with what the judge records when it drops one.
ADAPTATIONS: Mapping[str, str] = {
    "logprobs": "logprobs dropped (server rejected them)",
    "response_format": "response_format dropped (server rejected it)",
    "seed": "seed dropped (server rejected it)",
    "max_tokens": "max_tokens sent as max_completion_tokens",
}


def chat_request_body(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    parameters: Mapping[str, Any] | None = None,
    *,
    tokens_field: str = "max_tokens",
) -> dict[str, Any]:
    """The exact chat-completions body of one judge request.

    ``parameters``: ``temperature`` (default 0), ``max_tokens`` (None: not sent),
    ``response_format`` (``json_object`` — the default —, ``json_schema`` with
    :data:`VERDICT_SCHEMA`, or ``none``), ``logprobs`` (default True) with
    ``top_logprobs`` (default 5), ``seed`` (None: not sent); other keys are ignored.
    ``tokens_field`` is the name the token limit is sent under. Keys, in order:
    ``model``, ``messages``, ``temperature``, the token limit, ``response_format``,
    ``logprobs``, ``top_logprobs``, ``seed``.
    """
    p = dict(parameters or {})
    body: dict[str, Any] = {
        "model": model,
        "messages": [dict(m) for m in messages],
        "temperature": p.get("temperature", 0.0),
    }
    if p.get("max_tokens") is not None:
        body[tokens_field] = p["max_tokens"]
    fmt = p.get("response_format", "json_object")
    if fmt == "json_object":
        body["response_format"] = {"type": "json_object"}
    elif fmt == "json_schema":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "verdict", "strict": True, "schema": dict(VERDICT_SCHEMA)},
        }
    if p.get("logprobs", True):
        body["logprobs"] = True
        top = p.get("top_logprobs", 5)
        body["top_logprobs"] = 5 if top is None else top
    if p.get("seed") is not None:
        body["seed"] = p["seed"]
    return body


def refused_feature(message: str, sent: Collection[str]) -> str | None:
    """The optional feature a server's HTTP 400 ``message`` refuses: the first of
    :data:`ADAPTATIONS` that the message names and ``sent`` (the request's keys)
    holds; None when it names none (the request itself is at fault)."""
    lower = message.lower()
    for feature in ADAPTATIONS:
        if feature in sent and feature in lower:
            return feature
    return None


def drop_feature(body: Mapping[str, Any], feature: str) -> dict[str, Any]:
    """``body`` without ``feature`` (``logprobs`` takes ``top_logprobs`` along;
    ``max_tokens`` is renamed ``max_completion_tokens``), key order kept."""
    out: dict[str, Any] = {}
    for key, value in body.items():
        if key == feature == "max_tokens":
            out["max_completion_tokens"] = value
        elif key == feature or (feature == "logprobs" and key == "top_logprobs"):
            continue
        else:
            out[key] = value
    return out


def combine_samples(
    samples: Sequence[tuple[bool | None, float | None]],
) -> tuple[bool | None, float | None, str | None]:
    """``(met, p_met, source)`` of one (response, criterion) from its samples' ``(met,
    p_met)`` (``met`` None: the sample gave no verdict).

    ``met`` is the majority of the samples with a verdict (a tie goes to the first such
    sample's verdict; None when none has one). ``p_met`` is the mean P(met) from
    log-probabilities when every such sample has one (``source`` ``"logprobs"``), else,
    with two samples or more, the share of them that say met (self-consistency,
    ``"samples"``), else None: nothing was measured (``source`` None).
    """
    good = [(met, p) for met, p in samples if met is not None]
    if not good:
        return None, None, None
    share = sum(1 for met, _p in good if met) / len(good)
    verdict = good[0][0] if share == 0.5 else share > 0.5
    measured = [p for _m, p in good if p is not None]
    if len(measured) == len(good):
        return verdict, sum(measured) / len(measured), "logprobs"
    if len(good) > 1:
        return verdict, share, "samples"
    return verdict, None, None
