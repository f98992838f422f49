"""The exported judge's kernel: what the Inspect AI scorer and the promptfoo assertion run.

The exported judges must grade exactly as gradercal does. This module is the one place
where that is written, as plain functions over JSON-like data:

* :func:`build_messages` — the chat messages of one (response, criterion) request,
  exactly :meth:`gradercal.judge.prompts.PromptTemplate.render`'s (system, few-shot
  pairs, user; ``{{name}}`` placeholders substituted in one pass, guidance per criterion);
* :func:`request_body` — the chat-completions body gradercal's client sends (JSON mode
  and log-probabilities as the judge's parameters say); :func:`refused_feature` and
  :func:`drop_feature` — what to leave out when a server refuses a feature with HTTP
  400, as the client does (:mod:`gradercal.judge.request`);
* :func:`read_reply` — the verdict and P(met) of one reply, with
  :func:`gradercal.judge.parse.parse_reply` and
  :func:`~gradercal.judge.parse.p_met_from_logprobs` (one reply format:
  ``{"explanation": str, "criteria_met": bool}``; anything else is no verdict, never
  "not met");
* :func:`decide` — the rubric score of the judge's verdicts
  (:func:`gradercal.rubric.rubric_score`: penalties, clipping, auto criteria evaluated
  from the response's structured answer, levels), the calibrated score under the
  package's decision rule (a threshold on P(met), per tag, as
  :mod:`gradercal.analysis.calibration` applies it; or the fitted isotonic / Platt map of
  the response score) and pass/fail at the benchmark's threshold.

Its only gradercal imports are :mod:`gradercal.model`, :mod:`gradercal.rubric`,
:mod:`gradercal.judge.parse`, :mod:`gradercal.judge.request` and the message rendering of :mod:`gradercal.judge.prompts`
(``PromptContext``, ``render_messages`` with ``substitute`` and ``guidance_text``), all
standard-library code: :func:`gradercal.prompt_package.standalone.kernel_source` writes
those sources and this module's into the exported file in place of the imports, so
the exported judge runs the very code gradercal runs, without gradercal installed.
Nothing here may import anything else of gradercal or any third-party package.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from gradercal.judge.parse import (
    ReplyParseError,
    TokenLogprob,
    answer_offset,
    p_met_from_logprobs,
    parse_reply,
    tokens_from,
)
from gradercal.judge.prompts import PromptContext, render_messages
from gradercal.judge.request import (
    ADAPTATIONS,
    chat_request_body,
    combine_samples,
    drop_feature,
    refused_feature,
)
from gradercal.model import AutoRule, Criterion, stable_hash
from gradercal.rubric import PASS_EPSILON, evaluate_auto, rubric_score

__all__ = [
    "ADAPTATIONS",
    "UNTAGGED_GROUP",
    "build_messages",
    "check_prompt",
    "combine_samples",
    "criteria_of",
    "decide",
    "drop_feature",
    "judge_probability",
    "read_reply",
    "refused_feature",
    "request_body",
]

#: The group of a criterion without a (matching) tag, as in the calibration tables.
UNTAGGED_GROUP = "(untagged)"


def check_prompt(prompt: Mapping[str, Any], version: str) -> None:
    """Refuse a prompt that no longer hashes to its version (an edited export).

    Raises:
        RuntimeError: The sha256 of the canonical ``{system, user, few_shot, options}``
            differs from ``version``.
    """
    digest = stable_hash({k: prompt[k] for k in ("system", "user", "few_shot", "options")})
    if digest != version:
        raise RuntimeError(f"the embedded prompt was edited: {digest} != {version}")


def build_messages(
    prompt: Mapping[str, Any],
    *,
    response: str,
    criterion: str,
    points: int = 0,
    task_prompt: str = "",
    tags: Sequence[str] = (),
    artifacts: str = "",
) -> list[dict[str, str]]:
    """The chat messages of one request (:func:`gradercal.judge.prompts.render_messages`).

    ``prompt`` is the package's prompt (``system``, ``user``, ``few_shot``, ``options``).
    """
    guidance = (prompt.get("options") or {}).get("guidance")
    ctx = PromptContext(
        response=response,
        criterion=criterion,
        points=int(points),
        task_prompt=task_prompt,
        criterion_tags=tuple(str(t) for t in tags),
        artifacts=artifacts,
    )
    return render_messages(
        str(prompt["system"]),
        str(prompt["user"]),
        list(prompt.get("few_shot") or ()),
        guidance if isinstance(guidance, Mapping) else {},
        ctx,
    )


def request_body(
    model: str,
    messages: Sequence[Mapping[str, str]],
    parameters: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The chat-completions body for ``messages``: exactly the body gradercal's client
    sends for the judge's ``parameters`` (``temperature``, ``max_tokens``,
    ``response_format``, ``logprobs``/``top_logprobs``, ``seed``:
    :func:`gradercal.judge.request.chat_request_body`). A server that refuses one of the
    optional features gets the body of :func:`drop_feature` instead, as the client
    adapts."""
    return chat_request_body(model, messages, parameters)


def read_reply(
    content: str | None, logprobs: Sequence[Mapping[str, Any]] | None = None
) -> tuple[bool | None, float | None, str]:
    """``(met, p_met, explanation)`` of one reply; ``met`` None when it holds no verdict.

    ``logprobs`` are the reply's tokens as the chat-completions API returns them
    (``{"token", "logprob", "top_logprobs": [{"token", "logprob"}]}``); ``p_met`` is
    None without them (the verdict then counts as certain, as in gradercal).
    """
    try:
        parsed = parse_reply(content)
    except ReplyParseError as exc:
        return None, None, f"no verdict: {exc}"
    p_met = None
    if logprobs:
        tokens = [
            TokenLogprob(
                str(t.get("token", "")),
                float(t.get("logprob", -math.inf)),
                tuple(
                    (str(a.get("token", "")), float(a.get("logprob", -math.inf)))
                    for a in t.get("top_logprobs") or ()
                ),
            )
            for t in logprobs
        ]
        p_met = p_met_from_logprobs(tokens_from(tokens, answer_offset(content)))
    return parsed.met, p_met, parsed.explanation


def judge_probability(met: bool, p_met: float | None) -> float:
    """The judge's probability ``s`` of "met" as gradercal stores and calibrates it: the
    confidence in the verdict given (``p_met`` or ``1 − p_met``, rounded to 6 decimals),
    turned back into P(met); 1 or 0 without a confidence."""
    if p_met is None:
        return 1.0 if met else 0.0
    confidence = round(p_met if met else 1.0 - p_met, 6)
    s = confidence if met else 1.0 - confidence
    return min(max(s, 0.0), 1.0)


def criteria_of(rubric: Sequence[Mapping[str, Any]]) -> list[Criterion]:
    """The rubric of a sample (``{"id", "criterion", "points", "tags", "levels",
    "auto": {"key", "target", "abs_tol", "rel_tol"} | None}``) as gradercal criteria."""
    out = []
    for i, c in enumerate(rubric):
        auto = c.get("auto")
        out.append(
            Criterion(
                id=str(c.get("id", f"c{i + 1}")),
                text=str(c["criterion"]),
                points=int(c.get("points", 1)),
                position=i,
                tags=tuple(str(t) for t in c.get("tags") or ()),
                auto=None
                if not auto
                else AutoRule(
                    key=str(auto["key"]),
                    target=auto.get("target"),
                    abs_tol=auto.get("abs_tol"),
                    rel_tol=auto.get("rel_tol"),
                ),
                levels=int(c.get("levels") or 2),
            )
        )
    return out


def _group(tags: Sequence[str], prefix: str | None) -> str:
    usable = [t for t in tags if prefix is None or str(t).startswith(prefix)]
    return str(usable[0]) if usable else UNTAGGED_GROUP


def _interp(x: float, xs: Sequence[float], ys: Sequence[float]) -> float:
    """Linear interpolation through ``(xs, ys)``, constant outside (``numpy.interp``)."""
    if len(xs) == 1 or x <= xs[0]:
        return float(ys[0])
    if x >= xs[-1]:
        return float(ys[-1])
    for i in range(1, len(xs)):
        if x <= xs[i]:
            x0, x1, y0, y1 = float(xs[i - 1]), float(xs[i]), float(ys[i - 1]), float(ys[i])
            return y0 if x1 == x0 else y0 + (x - x0) * (y1 - y0) / (x1 - x0)
    return float(ys[-1])  # pragma: no cover - x < xs[-1] ends the loop


def _verdict(v: Sequence[Any] | None) -> tuple[bool | None, float | None, int | None]:
    if v is None:
        return None, None, None
    level = v[2] if len(v) > 2 else None
    return v[0], v[1], None if level is None else int(level)


def decide(
    decision: Mapping[str, Any],
    criteria: Sequence[Criterion],
    verdicts: Mapping[str, Sequence[Any]],
    *,
    answer: Any = None,
    pass_threshold: float | None = None,
) -> dict[str, Any]:
    """Score one response from the judge's verdicts, under the package's decision rule.

    Args:
        decision: The package's ``decision`` (``rule``: ``verdict`` | ``threshold`` |
            ``leniency`` | ``isotonic`` | ``platt``, ``params``, ``pass_threshold``).
        criteria: The response's rubric (:func:`criteria_of`).
        verdicts: Criterion id → ``(met, p_met)`` or ``(met, p_met, level)`` for the
            judgment criteria (``met`` None: no verdict; ``level`` the judge's level on
            a multi-level criterion, None without one).
        answer: The response's structured answer (for auto criteria).
        pass_threshold: Overrides the decision's pass threshold.

    Returns:
        ``raw_score`` (the rubric score of the judge's verdicts,
        :func:`~gradercal.rubric.rubric_score`), ``score`` (under the rule; the raw
        score for ``verdict``), ``passed`` (``score ≥ threshold − 1e-9``), ``criteria``
        (per judgment criterion: ``id``, ``met`` (raw), ``p_met``, and for the
        criterion rules ``calibrated_met``), ``unanswered``, ``rule``. Scores are NaN
        when a judgment criterion has no verdict or the rubric has no positive points;
        such a response does not pass.

    The criterion rules (``threshold``, ``leniency``: both "met iff P(met) ≥ the
    criterion's tag threshold") credit ``points · (p + (1 − p) f)`` with ``p`` the
    calibrated verdict and ``f`` the judge's own partial credit when it said "not met"
    at a level above the lowest (0 otherwise), as
    :func:`gradercal.analysis.calibration.calibrated_response_scores` does.
    """
    rule = str(decision.get("rule") or "verdict")
    params = dict(decision.get("params") or {})
    threshold = float(
        decision.get("pass_threshold", 0.7) if pass_threshold is None else pass_threshold
    )
    given = {cid: _verdict(v) for cid, v in verdicts.items()}
    raw = rubric_score(
        criteria,
        {cid: v[0] for cid, v in given.items()},
        levels={cid: v[2] for cid, v in given.items() if v[2] is not None},
        answer=answer,
    )
    per: list[dict[str, Any]] = []
    score = raw
    if rule in ("threshold", "leniency"):
        t_all = float(params["threshold"])
        by_group = {str(k): float(v) for k, v in (params.get("group_thresholds") or {}).items()}
        prefix = params.get("tag_prefix")
        positive = sum(c.points for c in criteria if c.points > 0)
        earned, complete = 0.0, True
        for c in criteria:
            if c.auto is not None:
                earned += c.points if evaluate_auto(c.auto, answer) else 0
                continue
            m, p, level = given.get(c.id, (None, None, None))
            if m is None:
                complete = False
                per.append({"id": c.id, "met": None, "p_met": p, "calibrated_met": None})
                continue
            t = by_group.get(_group(c.tags, prefix), t_all)
            pc = 1.0 if judge_probability(m, p) >= t else 0.0
            top = max(int(c.levels), 2) - 1
            f = min(max(level, 0), top) / top if (not m and level is not None) else 0.0
            earned += c.points * (pc + (1.0 - pc) * f)
            per.append({"id": c.id, "met": m, "p_met": p, "calibrated_met": pc == 1.0})
        score = min(max(earned / positive, 0.0), 1.0) if complete and positive > 0 else math.nan
    else:
        for c in criteria:
            if c.auto is None:
                m, p, _level = given.get(c.id, (None, None, None))
                per.append({"id": c.id, "met": m, "p_met": p})
        if rule == "isotonic" and params.get("x_thresholds") and not math.isnan(raw):
            score = _interp(raw, params["x_thresholds"], params["y_thresholds"])
        elif rule == "platt" and not math.isnan(raw):
            lo, hi = float(params.get("y_low", 0.0)), float(params.get("y_high", 1.0))
            if params.get("constant") is not None:
                z = float(params["constant"])
            else:
                z = 1.0 / (
                    1.0 + math.exp(-(float(params["coef"]) * raw + float(params["intercept"])))
                )
            score = lo + (hi - lo) * z
    return {
        "rule": rule,
        "raw_score": raw,
        "score": score,
        "passed": (not math.isnan(score)) and score >= threshold - PASS_EPSILON,
        "pass_threshold": threshold,
        "criteria": per,
        "unanswered": sum(1 for x in per if x["met"] is None),
    }
