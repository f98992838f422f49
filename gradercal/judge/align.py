"""Candidate judge prompts for ``gradercal judge align``: the optimizer's call and its reply.

The statistics (split, leakage guard, held-out proof) are in
:mod:`gradercal.analysis.alignment`; this module only turns *development* evidence, handed
to it as plain records, into candidate prompt versions:

* **The optimizer prompt** (:data:`OPTIMIZER_PROMPT`) is itself a versioned
  :class:`~gradercal.judge.prompts.PromptTemplate` (its content hash is its version, stored
  with the others): ``{{response}}`` receives the evidence and ``{{criterion}}`` the list of
  criterion ids it may write guidance for. It asks for, and :func:`parse_guidance` reads,
  ``{"guidance": [{"criterion": "<criterion id>", "text": "…"}], "general": "…"}``; prose or
  a code fence around the object is tolerated (the outermost ``{…}``), guidance for an
  unknown criterion id or with empty text is dropped (and counted), anything else is a
  :class:`~gradercal.judge.parse.ReplyParseError`.
* **Guidance candidate** (:func:`guidance_prompt`): the baseline derived with the
  ``guidance`` option (criterion notes keyed by criterion text, the general note) and a
  ``{{guidance}}`` block after the criterion when its user template has none.
* **Contrastive examples** (:func:`examples_prompt`): few-shot examples, each a met and a
  not-met case of the same criterion, answered as the expert consensus did.
* **Combination**: :func:`examples_prompt` applied to a guidance candidate.

Evidence records (mappings) carry ``criterion_key`` (``task/criterion``), ``criterion_text``,
``response_text``, ``judge_met``, ``consensus_met``, ``rationales`` (list of text),
``notes`` (adjudication notes) and ``clarifications`` (the coordinators' answers to
clarification questions on the criterion). Nothing here knows which tasks are
held out: the caller checks the provenance before and after (``assert_no_leakage``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gradercal.judge.parse import ReplyParseError
from gradercal.judge.prompts import PromptContext, PromptTemplate, placeholders
from gradercal.model import verdict_word

__all__ = [
    "GUIDANCE_BLOCK",
    "MAX_EVIDENCE",
    "OPTIMIZER_PROMPT",
    "OptimizerGuidance",
    "examples_prompt",
    "guidance_prompt",
    "optimizer_messages",
    "optimizer_token_cap",
    "parse_guidance",
]

#: Evidence records sent to the optimizer at most (the most frequent criteria first).
MAX_EVIDENCE = 40
#: The optimizer's completion limit, and the least worth asking for under a budget.
OPTIMIZER_MAX_TOKENS = 2048
OPTIMIZER_MIN_TOKENS = 256
#: Margin on the optimizer prompt's estimated tokens (characters / 4) under a budget.
PROMPT_TOKEN_MARGIN = 1.25
#: The block added to a user template without ``{{guidance}}``.
GUIDANCE_BLOCK = (
    "<guidance>\nGuidance from the expert graders (follow it where it applies):\n"
    "{{guidance}}\n</guidance>"
)

_OPTIMIZER_SYSTEM = """\
You improve the instructions of an LLM judge that grades AI responses against rubric \
criteria written by domain experts. You are shown cases where the judge's verdict \
disagreed with the experts' consensus, with the experts' rationales and notes. Write short, \
general guidance per criterion that would make the judge agree with the experts on cases \
like these without naming any specific response. Answer with a JSON object only."""

_OPTIMIZER_USER = """\
<evidence>
{{response}}
</evidence>

<criteria>
{{criterion}}
</criteria>

# Instructions
Return a JSON object {"guidance": [{"criterion": "<criterion id>", "text": "<guidance>"}], \
"general": "<guidance for every criterion, or empty>"}, using only criterion ids listed \
above."""

#: The optimizer's own prompt (versioned by its content hash like every prompt).
OPTIMIZER_PROMPT = PromptTemplate(
    _OPTIMIZER_SYSTEM, _OPTIMIZER_USER, name="gradercal-align-optimizer"
)


@dataclass(frozen=True)
class OptimizerGuidance:
    """The optimizer's reply, checked.

    Attributes:
        criteria: criterion key → guidance text (known keys only).
        general: General guidance ("" when none).
        dropped: Entries left out (unknown criterion or empty text).
    """

    criteria: Mapping[str, str]
    general: str
    dropped: int = 0


def _evidence_text(rec: Mapping[str, Any]) -> str:
    lines = [
        f"## criterion {rec['criterion_key']} (points {int(rec.get('points', 0)):+d}): "
        f"{rec['criterion_text']}",
        f"judge said: {verdict_word(bool(rec['judge_met']))}; "
        f"experts: {verdict_word(bool(rec['consensus_met']))}",
    ]
    response = str(rec.get("response_text") or "")
    if response:
        lines.append("response (excerpt): " + response[:600])
    lines += [f"expert rationale: {r}" for r in rec.get("rationales", ()) if r]
    lines += [f"expert note: {n}" for n in rec.get("notes", ()) if n]
    lines += [
        f"coordinator's answer to a clarification question: {a}"
        for a in rec.get("clarifications", ())
        if a
    ]
    return "\n".join(lines)


def optimizer_messages(
    evidence: Sequence[Mapping[str, Any]], max_evidence: int = MAX_EVIDENCE
) -> tuple[list[dict[str, str]], list[str]]:
    """The optimizer's chat messages and the criterion keys it may write guidance for.

    The evidence is ordered by how often its criterion is disagreed on (then by key) and
    cut to ``max_evidence`` records.
    """
    counts: dict[str, int] = {}
    for rec in evidence:
        counts[str(rec["criterion_key"])] = counts.get(str(rec["criterion_key"]), 0) + 1
    ranked = sorted(
        evidence, key=lambda r: (-counts[str(r["criterion_key"])], str(r["criterion_key"]))
    )
    chosen = ranked[:max_evidence]
    keys = sorted({str(r["criterion_key"]) for r in chosen})
    texts = {str(r["criterion_key"]): str(r["criterion_text"]) for r in chosen}
    ctx = PromptContext(
        response="\n\n".join(_evidence_text(r) for r in chosen),
        criterion="\n".join(f"- {k}: {texts[k]}" for k in keys),
    )
    return OPTIMIZER_PROMPT.render(ctx), keys


def optimizer_token_cap(
    messages: Sequence[Mapping[str, Any]],
    input_usd_per_m: float,
    output_usd_per_m: float,
    budget_usd: float | None,
    max_tokens: int = OPTIMIZER_MAX_TOKENS,
    min_tokens: int = OPTIMIZER_MIN_TOKENS,
) -> int | None:
    """The optimizer call's completion limit under ``--max-cost``: None when not even
    ``min_tokens`` fit in what is left of the budget (then it must not be called).

    The call's worst case is its prompt (estimated at characters / 4, times
    :data:`PROMPT_TOKEN_MARGIN`, at the input price) plus the whole completion limit (at
    the output price); the limit is ``max_tokens`` or, when that would exceed
    ``budget_usd``, the largest that does not. Without a budget, ``max_tokens``.
    """
    if budget_usd is None:
        return max_tokens
    chars = sum(len(str(m.get("content") or "")) for m in messages)
    prompt_cost = math.ceil(chars / 4) * PROMPT_TOKEN_MARGIN * input_usd_per_m / 1e6
    room = budget_usd - prompt_cost
    if room <= 0:
        return None
    fits = max_tokens if output_usd_per_m <= 0 else int(room * 1e6 / output_usd_per_m)
    cap = min(max_tokens, fits)
    return cap if cap >= min_tokens else None


def _outer_object(content: str) -> dict[str, Any]:
    start, end = content.find("{"), content.rfind("}")
    if start < 0 or end <= start:
        raise ReplyParseError("no JSON object in the optimizer's reply")
    try:
        obj = json.loads(content[start : end + 1])
    except ValueError as exc:
        raise ReplyParseError(f"the optimizer's JSON is invalid: {exc}") from None
    if not isinstance(obj, dict):
        raise ReplyParseError("the optimizer's reply is not a JSON object")
    return obj


def parse_guidance(content: str | None, known: Sequence[str]) -> OptimizerGuidance:
    """Read ``{"guidance": [{"criterion", "text"}], "general"}`` (see the module docstring).

    Raises:
        ReplyParseError: No JSON object, ``guidance`` not a list, an entry not an object,
            or ``general`` not text.
    """
    if content is None or not content.strip():
        raise ReplyParseError("empty reply from the optimizer")
    obj = _outer_object(content)
    entries = obj.get("guidance", [])
    if not isinstance(entries, list):
        raise ReplyParseError("guidance must be a list")
    general = obj.get("general") or ""
    if not isinstance(general, str):
        raise ReplyParseError("general must be text")
    allowed = set(known)
    out: dict[str, str] = {}
    dropped = 0
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise ReplyParseError(f"guidance[{i}] must be an object")
        key, text = e.get("criterion"), e.get("text")
        if (
            not isinstance(key, str)
            or key not in allowed
            or not isinstance(text, str)
            or not text.strip()
        ):
            dropped += 1
            continue
        out[key] = (out[key] + " " + text.strip()) if key in out else text.strip()
    return OptimizerGuidance(out, general.strip(), dropped)


def with_guidance_block(user: str) -> str:
    """``user`` with :data:`GUIDANCE_BLOCK` after its criterion, unless it has ``{{guidance}}``."""
    if "guidance" in placeholders(user):
        return user
    closing = user.rfind("</criterion>")
    if closing >= 0:
        end = closing + len("</criterion>")
        return user[:end] + "\n\n" + GUIDANCE_BLOCK + user[end:]
    return user.rstrip("\n") + "\n\n" + GUIDANCE_BLOCK


def guidance_prompt(
    base: PromptTemplate, guidance: OptimizerGuidance, criterion_texts: Mapping[str, str]
) -> PromptTemplate:
    """The baseline with the optimizer's guidance (merged into any guidance it has)."""
    old = dict(base.guidance)
    crit: dict[str, list[str]] = {k: list(v) for k, v in dict(old.get("criteria", {})).items()}
    for key, text in sorted(guidance.criteria.items()):
        lines = crit.setdefault(criterion_texts[key], [])
        if text not in lines:
            lines.append(text)
    option: dict[str, Any] = dict(old)
    if crit:
        option["criteria"] = crit
    if guidance.general:
        option["general"] = [*list(old.get("general", [])), guidance.general]
    return base.derive(
        user=with_guidance_block(base.user),
        options={**base.options, "guidance": option},
        name=f"{base.name or 'judge'}+align-guidance",
    )


def examples_prompt(
    base: PromptTemplate, pairs: Sequence[Sequence[Mapping[str, Any]]]
) -> PromptTemplate:
    """``base`` with contrastive few-shot examples appended.

    Args:
        base: The prompt to extend.
        pairs: Each a met and a not-met case of one criterion: mappings with
            ``response_text``, ``criterion_text``, ``points``, ``consensus_met`` and
            optionally ``rationales``.
    """
    shots: list[dict[str, Any]] = []
    for pair in pairs:
        for rec in pair:
            met = bool(rec["consensus_met"])
            why = next((r for r in rec.get("rationales", ()) if r), None)
            shots.append(
                {
                    "response": str(rec["response_text"]),
                    "criterion": str(rec["criterion_text"]),
                    "points": int(rec.get("points", 1)),
                    "criteria_met": met,
                    "explanation": why
                    or ("The experts judged it met." if met else "The experts judged it not met."),
                }
            )
    return base.derive(
        few_shot=(*base.few_shot, *shots), name=f"{base.name or 'judge'}+align-examples"
    )
