"""Inspect AI glue of the exported judge (written below the kernel in the exported file).

``PACKAGE_JSON`` is replaced by the package's prompt and decision when exported.

Each request is gradercal's (:func:`request_body` from the judge's recorded parameters:
JSON mode as ``extra_body``, log-probabilities, seed, token limit). A feature the
server refuses with HTTP 400 naming it is left out from then on and the request sent
again, as gradercal's client does; a reply without a verdict is asked again (three
replies at most, gradercal's default). A judge run with ``--samples K`` asks K times
per criterion and combines the replies as gradercal's runner does (:func:`combine_samples`:
majority verdict; confidence from log-probabilities, else the share of samples that say
met).
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import FieldSpec, json_dataset
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.scorer import Score, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver

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
#: Replies asked for per sample before it is left without a verdict.
_PARSE_ATTEMPTS = 3
#: Samples per criterion: the judge's ``--samples K`` (gradercal's ``JudgeParams.samples``).
_SAMPLES = max(1, int((_JUDGE.get("parameters") or {}).get("samples") or 1))
#: Optional features the server refused: left out of every later request.
_REFUSED: set[str] = set()


check_prompt(_PROMPT, PROMPT_VERSION)  # an edited embedded prompt is refused

_ROLES = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}


def messages(
    task_prompt: str,
    response: str,
    criterion: str,
    points: int = 1,
    tags: list[str] | None = None,
    artifacts: str = "",
) -> list[ChatMessage]:
    """The chat messages for one criterion of one response (gradercal's, exactly)."""
    out: list[ChatMessage] = []
    for m in build_messages(
        _PROMPT,
        response=response,
        criterion=criterion,
        points=points,
        task_prompt=task_prompt,
        tags=list(tags or []),
        artifacts=artifacts,
    ):
        out.append(_ROLES[m["role"]](content=m["content"]))
    return out


def _body() -> dict[str, Any]:
    """The options of gradercal's request body (no model, no messages), without the
    features the server has refused so far."""
    body = request_body("", [], dict(_JUDGE.get("parameters") or {}))
    for feature in ADAPTATIONS:
        if feature in _REFUSED and feature in body:
            body = drop_feature(body, feature)
    return body


def _config(body: dict[str, Any]) -> GenerateConfig:
    """The request ``body`` as Inspect's generate options (what Inspect has no option
    for, JSON mode and ``max_completion_tokens``, goes in ``extra_body``)."""
    extra: dict[str, Any] = {
        k: body[k] for k in ("response_format", "max_completion_tokens") if k in body
    }
    return GenerateConfig(
        temperature=float(body["temperature"]),
        max_tokens=body.get("max_tokens"),
        seed=body.get("seed"),
        logprobs=True if body.get("logprobs") else None,
        top_logprobs=body.get("top_logprobs") if body.get("logprobs") else None,
        extra_body=extra or None,
    )


def _server_message(exc: BaseException) -> str:
    """The server's own words in a failed request: the ``body`` of the SDK's error,
    found along the chain of causes (Inspect wraps it in an error that also quotes the
    whole request, whose field names must not be taken for the server's complaint)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        body = getattr(current, "body", None)
        if isinstance(body, dict):
            error = body.get("error", body)
            message = error.get("message") if isinstance(error, dict) else error
            if message:
                return str(message)
        current = current.__cause__ or current.__context__
    text = str(exc)
    return text.split("Request:", 1)[0] if "Request:" in text else text


async def _generate(grader: Model, msgs: list[ChatMessage]) -> ModelOutput:
    """The reply to ``msgs``; a refused feature is dropped and the request sent again."""
    while True:
        body = _body()
        try:
            return await grader.generate(msgs, config=_config(body))
        except Exception as exc:
            feature = refused_feature(_server_message(exc), body)
            if feature is not None:
                _REFUSED.add(feature)
                continue
            if _body() != body:  # refused under settings learnt since: send again
                continue
            raise


def _logprobs(output: ModelOutput) -> list[dict[str, Any]] | None:
    if not output.choices or output.choices[0].logprobs is None:
        return None
    return [
        {
            "token": t.token,
            "logprob": t.logprob,
            "top_logprobs": [
                {"token": a.token, "logprob": a.logprob} for a in t.top_logprobs or []
            ],
        }
        for t in output.choices[0].logprobs.content
    ]


def _rubric(state: TaskState, target: Target) -> list[dict[str, Any]]:
    items = (state.metadata or {}).get("rubric")
    if items:
        return [dict(x) for x in items]
    return [{"id": "c1", "criterion": target.text, "points": 1, "tags": []}]


@solver
def replay_response() -> Solver:
    """Take the sample's stored response (``metadata["response"]``) as the model's output,
    to grade existing responses without generating new ones."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        text = str((state.metadata or {}).get("response", ""))
        state.output = ModelOutput.from_content(model="gradercal/replay", content=text)
        return state

    return solve


@scorer(metrics=[mean(), stderr()])
def gradercal_judge(
    model: str | Model | None = None,
    pass_threshold: float | None = None,
    concurrency: int = 16,
) -> Any:
    """Grade the output against the sample's rubric as gradercal does: judgment criteria
    by the judge prompt (concurrently, at most ``concurrency`` requests per sample), auto
    criteria from ``metadata["answer"]``, the package's calibration applied.

    Args:
        model: The grader model (default: the model being evaluated).
        pass_threshold: Pass mark of the rubric score (default: the package's).
        concurrency: Requests in flight per sample.

    Each judgment criterion is asked ``samples`` times (the judge's ``--samples K``) and
    its verdict and confidence combined as gradercal's runner combines them.
    """

    async def score(state: TaskState, target: Target) -> Score:
        grader = get_model(model)
        rubric = _rubric(state, target)
        criteria = criteria_of(rubric)
        meta = state.metadata or {}
        response = state.output.completion
        task_prompt = str(meta.get("task_prompt", state.input_text))
        artifacts = str(meta.get("artifacts", ""))
        gate = asyncio.Semaphore(max(1, int(concurrency)))

        async def one(msgs: list[ChatMessage]) -> tuple[bool | None, float | None, str]:
            for _ in range(_PARSE_ATTEMPTS):
                async with gate:
                    out = await _generate(grader, msgs)
                met, p_met, why = read_reply(out.completion, _logprobs(out))
                if met is not None:
                    break
            return met, p_met, why

        async def ask(c: Any) -> tuple[str, bool | None, float | None, str]:
            msgs = messages(task_prompt, response, c.text, c.points, list(c.tags), artifacts)
            got = await asyncio.gather(*(one(msgs) for _ in range(_SAMPLES)))
            met, p_met, _source = combine_samples([(m, p) for m, p, _w in got])
            why = next((w for m, _p, w in got if m is not None and m == met), got[0][2])
            return c.id, met, p_met, why

        replies = await asyncio.gather(*(ask(c) for c in criteria if c.auto is None))
        verdicts = {cid: (met, p_met) for cid, met, p_met, _why in replies}
        why = {cid: text for cid, _m, _p, text in replies}
        result = decide(
            _DECISION, criteria, verdicts, answer=meta.get("answer"), pass_threshold=pass_threshold
        )
        for entry in result["criteria"]:
            entry["explanation"] = why.get(entry["id"], "")
        lines = [
            f"[{'?' if e['met'] is None else 'x' if e.get('calibrated_met', e['met']) else ' '}] "
            f"{e['id']}: {e['explanation']}"
            for e in result["criteria"]
        ]
        value = result["score"]
        return Score(
            value=value if not math.isnan(value) else 0.0,
            answer=response,
            explanation="\n".join(lines),
            metadata={
                "prompt_version": PROMPT_VERSION,
                "raw_score": None if math.isnan(result["raw_score"]) else result["raw_score"],
                "score": None if math.isnan(value) else value,
                "passed": result["passed"],
                "rule": result["rule"],
                "complete": result["unanswered"] == 0,
                "unanswered": result["unanswered"],
                "criteria": result["criteria"],
                "adaptations": [ADAPTATIONS[f] for f in ADAPTATIONS if f in _REFUSED],
                "without_confidence": sum(
                    1 for _c, m, p, _w in replies if m is not None and p is None
                ),
                "samples": _SAMPLES,
            },
        )

    return score


@task
def gradercal_grading(samples: str = "samples.jsonl", judge: str | None = None) -> Task:
    """Grade the stored responses of ``samples`` (written by ``gradercal export-prompt
    --samples``) with this judge: ``inspect eval THIS_FILE@gradercal_grading --model
    openai/JUDGE_MODEL -T samples=samples.jsonl``."""
    return Task(
        dataset=json_dataset(
            samples,
            FieldSpec(input="input", target="target", id="id"),  # metadata: the record's
        ),
        solver=replay_response(),
        scorer=gradercal_judge(judge),
    )
