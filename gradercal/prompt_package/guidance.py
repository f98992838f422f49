"""Rubric guidance distilled from the experts, and its slot in the user template.

Deterministically (no LLM): the coordinators' answers to clarification questions, the
notes of "criterion unclear" flags and of adjudications, whitespace-normalised,
deduplicated case-insensitively, grouped per criterion with counts and authors (the
answers first: they settle what the raw notes ask); per criterion tag, the counts of adjudicated items where the judge said
met / not met against the final verdict and, when one direction dominates, one rule
(:func:`distill_guidance`). :func:`guidance_option` turns it into the prompt's
``guidance`` option (rendered per request into ``{{guidance}}``);
:func:`with_guidance_slot` adds a ``{{guidance}}`` block to a user template without one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from gradercal.judge.prompts import normalize_text, placeholders
from gradercal.prompt_package.inputs import AdjudicatedItem, ExpertNote

__all__ = [
    "GUIDANCE_BLOCK",
    "MIN_DIRECTION",
    "distill_guidance",
    "guidance_option",
    "with_guidance_slot",
]

#: Fewest adjudicated judge errors in one direction before a tag gets a rule.
MIN_DIRECTION = 2
#: The block inserted into a user template that lacks ``{{guidance}}``.
GUIDANCE_BLOCK = (
    "<guidance>\n"
    "Rubric guidance from the expert graders (follow it where it applies):\n"
    "{{guidance}}\n"
    "</guidance>"
)
#: The prefix of a clarification answer in the prompt's guidance.
CLARIFIED = "Clarified: "
#: Per criterion, the counter each note source moves on.
_COUNTERS = {
    "unclear": "n_unclear",
    "adjudication": "n_adjudication_notes",
    "clarification": "n_clarifications",
}
_LENIENT_RULE = (
    "Answer true only when the response clearly does what the criterion describes: "
    "the experts overruled a 'met' verdict of the judge on {k} of {n} adjudicated items."
)
_STRICT_RULE = (
    "Do not ask for more than the criterion says: give it when the substance is there, "
    "even in other words; the experts overruled a 'not met' verdict of the judge on {k} "
    "of {n} adjudicated items."
)


def _criterion_key(task_id: str, criterion_id: str) -> str:
    return f"{task_id}/{criterion_id}"


def distill_guidance(
    notes: Iterable[ExpertNote], adjudicated: Iterable[AdjudicatedItem] = ()
) -> dict[str, Any]:
    """Group, deduplicate and count the experts' notes; derive per-tag rules.

    Per criterion (``task_id/criterion_id``): the distinct notes (compared
    case-insensitively after whitespace normalisation; the first spelling is kept) with
    how often each was written, by whom and from which sources, the answered
    clarifications first, then the rest by count; how many unclear flags, adjudication
    notes and clarification answers the criterion has.

    Per tag: over the adjudicated items whose criterion has the tag and that the judge
    rated, ``judge_overruled_met`` (judge met, final not met) and
    ``judge_overruled_not_met`` (the reverse). When one direction has at least
    :data:`MIN_DIRECTION` items and at least twice the other, the tag gets one rule
    (answer true only when clearly met / do not ask for more than the criterion says).
    The same test over all adjudicated items gives the general rule.

    Returns:
        ``{"criteria": [...], "tags": [...], "general": [...]}`` in a stable order
        (criteria by task and criterion id, tags by name).
    """
    per_criterion: dict[str, dict[str, Any]] = {}
    for n in sorted(notes, key=lambda x: (x.task_id, x.criterion_id, x.source, x.author)):
        text = normalize_text(n.text)
        if not text:
            continue
        key = _criterion_key(n.task_id, n.criterion_id)
        entry = per_criterion.setdefault(
            key,
            {
                "task_id": n.task_id,
                "criterion_id": n.criterion_id,
                "criterion": normalize_text(n.criterion),
                "tags": list(dict.fromkeys(n.tags)),
                "n_unclear": 0,
                "n_adjudication_notes": 0,
                "n_clarifications": 0,
                "_notes": {},
            },
        )
        entry[_COUNTERS[n.source]] += 1
        slot = entry["_notes"].setdefault(
            text.casefold(),
            {"text": text, "count": 0, "authors": set(), "sources": set(), "responses": set()},
        )
        slot["count"] += 1
        slot["authors"].add(n.author)
        slot["sources"].add(n.source)
        if n.response_id:
            slot["responses"].add(n.response_id)
    criteria = []
    for key in sorted(per_criterion):
        entry = per_criterion[key]
        raw = entry.pop("_notes")
        entry["notes"] = [
            {
                "text": s["text"],
                "count": s["count"],
                "authors": sorted(s["authors"]),
                "sources": sorted(s["sources"]),
                "n_responses": len(s["responses"]),
            }
            for s in sorted(
                raw.values(),
                key=lambda s: (
                    "clarification" not in s["sources"],
                    -s["count"],
                    s["text"].casefold(),
                ),
            )
        ]
        criteria.append(entry)
    items = [a for a in adjudicated if a.judge_met is not None]
    tag_counts: dict[str, Counter[str]] = {}
    for a in items:
        for tag in dict.fromkeys(a.tags):
            c = tag_counts.setdefault(tag, Counter())
            c["n"] += 1
            if a.judge_met and not a.met:
                c["lenient"] += 1
            elif a.met and not a.judge_met:
                c["strict"] += 1
    tags = []
    for tag in sorted(tag_counts):
        c = tag_counts[tag]
        tags.append(
            {
                "tag": tag,
                "n_adjudicated": c["n"],
                "judge_overruled_met": c["lenient"],
                "judge_overruled_not_met": c["strict"],
                "rules": _rules(c["lenient"], c["strict"], c["n"]),
            }
        )
    total = Counter(
        "lenient" if a.judge_met and not a.met else "strict" if a.met and not a.judge_met else "ok"
        for a in items
    )
    general = _rules(total["lenient"], total["strict"], len(items))
    return {"criteria": criteria, "tags": tags, "general": general}


def _rules(lenient: int, strict: int, n: int) -> list[str]:
    if lenient >= MIN_DIRECTION and lenient >= 2 * strict:
        return [_LENIENT_RULE.format(k=lenient, n=n)]
    if strict >= MIN_DIRECTION and strict >= 2 * lenient:
        return [_STRICT_RULE.format(k=strict, n=n)]
    return []


def guidance_option(guidance: Mapping[str, Any]) -> dict[str, Any]:
    """The ``guidance`` prompt option (what the judge is sent) from distilled guidance.

    Criterion notes are keyed by criterion text, clarification answers first (marked
    ``Clarified:``); a note written more than once says so.
    Empty parts are left out; no guidance at all gives ``{}``.
    """
    crit: dict[str, list[str]] = {}
    for c in guidance.get("criteria", []):
        lines = crit.setdefault(c["criterion"], [])
        for note in c["notes"]:
            if "clarification" in note["sources"]:
                line = CLARIFIED + note["text"]
            else:
                suffix = f" (noted {note['count']}×)" if note["count"] > 1 else ""
                line = note["text"] + suffix
            if line not in lines:
                lines.append(line)
    tags = {t["tag"]: list(t["rules"]) for t in guidance.get("tags", []) if t["rules"]}
    out: dict[str, Any] = {}
    if guidance.get("general"):
        out["general"] = list(guidance["general"])
    if tags:
        out["tags"] = tags
    if crit:
        out["criteria"] = crit
    return out


def with_guidance_slot(user: str) -> str:
    """``user`` with a ``{{guidance}}`` block after its criterion (if it has none)."""
    if "guidance" in placeholders(user):
        return user
    closing = user.rfind("</criterion>")
    if closing >= 0:
        end = closing + len("</criterion>")
        return user[:end] + "\n\n" + GUIDANCE_BLOCK + user[end:]
    marker = user.find("# Instructions")
    if marker >= 0:
        return user[:marker] + GUIDANCE_BLOCK + "\n\n" + user[marker:]
    return user.rstrip("\n") + "\n\n" + GUIDANCE_BLOCK
