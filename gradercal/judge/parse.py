"""Reading the judge's reply: the JSON verdict, and P(met) from token log-probabilities.

A reply is accepted only when it holds a JSON object whose ``criteria_met`` is a JSON
boolean, outside any reasoning block (see :func:`parse_reply`). Anything else (prose, truncated JSON, ``"criteria_met": "yes"``) raises
:class:`ReplyParseError`; the runner retries and finally records a parse failure,
never a "not met".
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: A reasoning block as reasoning models write it before their answer (closed, or left
#: open at the end of a truncated reply).
_THINK = re.compile(r"<(think|thinking|reasoning)>.*?(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE)
_DECODER = json.JSONDecoder()


class ReplyParseError(ValueError):
    """The judge's reply holds no usable verdict."""


@dataclass(frozen=True)
class ParsedReply:
    """A verdict read from a reply; ``start`` is where its JSON object begins in the reply
    (the log-probabilities of the verdict are read from the tokens from there on)."""

    met: bool
    explanation: str
    start: int = 0


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token with its log-probability and the top alternatives."""

    token: str
    logprob: float
    top: Sequence[tuple[str, float]] = field(default_factory=tuple)


def parse_reply(content: str | None) -> ParsedReply:
    """The verdict in a judge's reply, read as reasoning models deliver their final answer.

    Reasoning blocks (``<think>…</think>``, ``<thinking>``, ``<reasoning>``; an unclosed
    one runs to the end of the reply) are not the answer and are skipped, whatever
    braces or drafts of a verdict they hold. In what remains, the verdict is the *last*
    JSON object whose ``criteria_met`` is a JSON boolean, wherever it stands: alone, in
    a Markdown code fence, or between prose (an object nested in another counts as part
    of it). The caller passes the message's ``content``, never a separate
    ``reasoning_content`` field.

    Raises:
        ReplyParseError: No JSON object outside the reasoning, or none with
            ``criteria_met``, or ``criteria_met`` not a boolean.
    """
    if content is None or not content.strip():
        raise ReplyParseError("empty reply")
    objects = _json_objects(content)
    if not objects:
        raise ReplyParseError("no JSON object in the reply")
    with_key = [(pos, obj) for pos, obj in objects if "criteria_met" in obj]
    if not with_key:
        raise ReplyParseError("reply lacks criteria_met")
    usable = [(pos, obj) for pos, obj in with_key if isinstance(obj["criteria_met"], bool)]
    if not usable:
        met = with_key[-1][1]["criteria_met"]
        raise ReplyParseError(f"criteria_met is {type(met).__name__}, not a boolean")
    start, obj = usable[-1]
    explanation = obj.get("explanation", "")
    if not isinstance(explanation, str):
        explanation = json.dumps(explanation, ensure_ascii=False)
    # a JSON-escaped NUL (\u0000) decodes to one; databases' text cannot hold it
    return ParsedReply(
        met=obj["criteria_met"], explanation=explanation.replace("\x00", ""), start=start
    )


def _json_objects(content: str) -> list[tuple[int, dict[str, Any]]]:
    """The top-level JSON objects of ``content`` outside reasoning blocks, in order, with
    the offset in ``content`` where each begins."""
    blanked = _THINK.sub(lambda m: " " * len(m.group(0)), content)
    out: list[tuple[int, dict[str, Any]]] = []
    pos = blanked.find("{")
    while pos >= 0:
        try:
            value, end = _DECODER.raw_decode(blanked, pos)
        except ValueError:
            pos = blanked.find("{", pos + 1)
            continue
        if isinstance(value, dict):
            out.append((pos, value))
        pos = blanked.find("{", end)
    return out


def answer_offset(content: str | None) -> int:
    """Where the final answer of ``content`` begins: after its last reasoning block (see
    :func:`parse_reply`), 0 without one. The verdict's log-probabilities are read from
    the tokens from there on, never from a draft verdict in the reasoning."""
    if not content or "<" not in content:
        return 0
    end = 0
    for m in _THINK.finditer(content):
        end = m.end()
    return end


def tokens_from(tokens: Sequence[TokenLogprob], offset: int) -> Sequence[TokenLogprob]:
    """The tokens from the one holding character ``offset`` of their joined text on."""
    if offset <= 0:
        return tokens
    seen = 0
    for i, tok in enumerate(tokens):
        seen += len(tok.token)
        if seen > offset:
            return tokens[i:]
    return ()


_KEY = re.compile(r'criteria_met"?\s*:\s*')


def _verdict_in(before: str, token: str) -> bool | None:
    """The verdict when the value of ``criteria_met`` starts inside ``token``, else None."""
    combined = before + token
    last = None
    for m in _KEY.finditer(combined):
        last = m
    if last is None or last.end() < len(before) or last.end() >= len(combined):
        return None
    word = combined[last.end() :].strip().strip("\"'").lower()
    if word.startswith("true"):
        return True
    if word.startswith("false"):
        return False
    return None


def p_met_from_logprobs(tokens: Iterable[TokenLogprob]) -> float | None:
    """P(criteria_met is true) from the log-probabilities of the verdict token.

    The verdict token is the one in which the value of ``criteria_met`` begins.
    Probability mass of the alternatives at that position that begin ``true`` or
    ``false`` (the chosen token included) is renormalised over the two; without
    alternatives, the chosen token's probability is set against its complement.
    Returns None when there is no such token or no usable probability.
    """
    text = ""
    key_seen = False
    for tok in tokens:
        if not key_seen:
            key_seen = "criteria_met" in text[-16:] + tok.token
            if not key_seen:
                text = (text + tok.token)[-64:]
                continue
        before = text[-64:]
        chosen = _verdict_in(before, tok.token)
        if chosen is not None:
            mass = {True: 0.0, False: 0.0}
            seen: set[str] = set()
            for alt, lp in [(tok.token, tok.logprob), *tok.top]:
                verdict = _verdict_in(before, alt)
                if verdict is None or alt in seen or not math.isfinite(lp):
                    continue
                seen.add(alt)
                mass[verdict] += math.exp(lp)
            if not tok.top:
                mass[not chosen] = max(0.0, 1.0 - mass[chosen])
            total = mass[True] + mass[False]
            return None if total <= 0 else mass[True] / total
        text = (text + tok.token)[-64:]
    return None
