"""The optimizer's call and reply, and the candidate prompts (gradercal.judge.align)."""

from __future__ import annotations

import pytest

from gradercal.judge import DEFAULT_PROMPT
from gradercal.judge.align import (
    OPTIMIZER_PROMPT,
    examples_prompt,
    guidance_prompt,
    optimizer_messages,
    parse_guidance,
)
from gradercal.judge.parse import ReplyParseError
from gradercal.judge.prompts import PromptContext


def _rec(key: str, text: str, judge: bool, cons: bool) -> dict[str, object]:
    return {
        "criterion_key": key, "criterion_text": text, "points": -5, "judge_met": judge,
        "consensus_met": cons, "response_text": "resp " + key, "rationales": ["why"],
        "notes": ["note"],
    }  # fmt: skip


def test_parse_guidance_tolerates_prose_and_drops_unknown_criteria() -> None:
    reply = (
        "Thinking...\n```json\n"
        '{"guidance": [{"criterion": "T1/c1", "text": " Be strict. "},'
        ' {"criterion": "T9/c9", "text": "leak"}, {"criterion": "T1/c1", "text": ""}],'
        ' "general": "Read carefully."}\n```\nThat is all.'
    )
    g = parse_guidance(reply, ["T1/c1", "T1/c2"])
    assert g.criteria == {"T1/c1": "Be strict."}
    assert g.general == "Read carefully." and g.dropped == 2


@pytest.mark.parametrize(
    "reply",
    ["", "no json here", '{"guidance": "x"}', '{"guidance": [1]}', '{"general": 3}', "[1, 2]"],
)
def test_parse_guidance_refuses_malformed_replies(reply: str) -> None:
    with pytest.raises(ReplyParseError):
        parse_guidance(reply, ["a"])


def test_optimizer_messages_list_the_evidence_and_the_allowed_criteria() -> None:
    recs = [_rec("T1/c1", "Names X", True, False), _rec("T2/c3", "Avoids Y", False, True)]
    msgs, keys = optimizer_messages(recs)
    assert keys == ["T1/c1", "T2/c3"]
    assert msgs[0]["content"] == OPTIMIZER_PROMPT.system
    assert "## criterion T1/c1 (points -5): Names X" in msgs[-1]["content"]
    assert "expert note: note" in msgs[-1]["content"]
    assert len(optimizer_messages(recs, max_evidence=1)[1]) == 1


def test_guidance_and_examples_candidates_derive_from_the_baseline() -> None:
    g = parse_guidance(
        '{"guidance": [{"criterion": "T1/c1", "text": "Strict."}], "general": "G."}', ["T1/c1"]
    )
    cand = guidance_prompt(DEFAULT_PROMPT, g, {"T1/c1": "Names X"})
    assert cand.parent_hash == DEFAULT_PROMPT.content_hash
    assert cand.content_hash != DEFAULT_PROMPT.content_hash
    text = cand.render(PromptContext(response="r", criterion="Names X"))[-1]["content"]
    assert "Strict." in text and "G." in text
    other = cand.render(PromptContext(response="r", criterion="Other"))[-1]["content"]
    assert "Strict." not in other and "G." in other
    pair = [_rec("T1/c1", "Names X", True, False), _rec("T1/c1", "Names X", False, True)]
    both = examples_prompt(cand, [pair])
    assert len(both.few_shot) == 2 and both.guidance == cand.guidance
    assert [s["criteria_met"] for s in both.few_shot] == [False, True]


def test_optimizer_token_cap_keeps_the_call_within_the_budget() -> None:
    from gradercal.judge.align import PROMPT_TOKEN_MARGIN, optimizer_token_cap

    msgs = [{"role": "system", "content": "x" * 400}, {"role": "user", "content": "y" * 3600}]
    prompt_tokens = 1000 * PROMPT_TOKEN_MARGIN  # 4,000 characters
    assert optimizer_token_cap(msgs, 1.0, 10.0, None) == 2048  # no budget: the default
    assert optimizer_token_cap(msgs, 1.0, 10.0, 1.0) == 2048  # ample
    budget = (prompt_tokens * 1.0 + 1000 * 10.0) / 1e6
    cap = optimizer_token_cap(msgs, 1.0, 10.0, budget)
    assert cap is not None and 999 <= cap <= 1000
    # the worst case of the capped call fits the budget
    assert (prompt_tokens * 1.0 + cap * 10.0) / 1e6 <= budget + 1e-12
    # not even the minimum fits: the call must not be made
    assert optimizer_token_cap(msgs, 1.0, 10.0, (prompt_tokens + 2550) / 1e6) is None
    assert optimizer_token_cap(msgs, 1.0, 10.0, 0.0) is None
