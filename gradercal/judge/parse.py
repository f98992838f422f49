"""Reading the judge's reply: the JSON verdict, and P(met) from token log-probabilities.

A reply is accepted only when it holds a JSON object whose ``criteria_met`` is a JSON
boolean. Anything else (prose, truncated JSON, ``"criteria_met": "yes"``) raises
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

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


class ReplyParseError(ValueError):
    """The judge's reply holds no usable verdict."""


@dataclass(frozen=True)
class ParsedReply:
    met: bool
    explanation: str


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token with its log-probability and the top alternatives."""

    token: str
    logprob: float
    top: Sequence[tuple[str, float]] = field(default_factory=tuple)


def parse_reply(content: str | None) -> ParsedReply:
    """The verdict in a judge's reply.

    Accepts a bare JSON object, one inside a Markdown code fence, or one surrounded by
    prose (the outermost ``{…}``).

    Raises:
        ReplyParseError: No JSON object, or ``criteria_met`` missing or not a boolean.
    """
    if content is None or not content.strip():
        raise ReplyParseError("empty reply")
    obj = _json_object(content)
    if "criteria_met" not in obj:
        raise ReplyParseError("reply lacks criteria_met")
    met = obj["criteria_met"]
    if not isinstance(met, bool):
        raise ReplyParseError(f"criteria_met is {type(met).__name__}, not a boolean")
    explanation = obj.get("explanation", "")
    if not isinstance(explanation, str):
        explanation = json.dumps(explanation, ensure_ascii=False)
    # a JSON-escaped NUL (\u0000) decodes to one; databases' text cannot hold it
    return ParsedReply(met=met, explanation=explanation.replace("\x00", ""))


def _json_object(content: str) -> dict[str, Any]:
    candidates = [content.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(content)]
    start, end = content.find("{"), content.rfind("}")
    if 0 <= start < end:
        candidates.append(content[start : end + 1])
    for text in candidates:
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise ReplyParseError("no JSON object in the reply")


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
