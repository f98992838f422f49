"""Refusals in the coordinator window name the window's actions, never a command (#33)."""

from __future__ import annotations

import pytest

from gradercal.ops.acceptance import RoundFact, check_action
from gradercal.ui.coordinator_words import forceable, refusal_text


def _fact(state: str | None) -> RoundFact | None:
    if state is None:
        return None
    return RoundFact(number=1, state=state, passed=None)


@pytest.mark.parametrize("action", ["open", "close", "accept", "reject", "reopen"])
@pytest.mark.parametrize(
    "state", [None, "open", "closed", "accepted", "rejected", "needs_revision"]
)
def test_no_refusal_of_the_rules_asks_for_a_command(action: str, state: str | None) -> None:
    refused = check_action(action, _fact(state), ready=False, force=False)
    if refused is None:
        return
    words = refusal_text(refused)
    assert "--" not in words and "`" not in words and "tasks " not in words, words
    assert words.strip()
    # a refusal force lifts says so in words the window offers
    assert forceable(refused) == (
        check_action(action, _fact(state), ready=False, force=True) is None
    )


def test_flags_in_parentheses_go() -> None:
    assert refusal_text("say who decides (--actor NAME)") == "say who decides"
    assert refusal_text("the answer must not be empty (--text TEXT)") == (
        "the answer must not be empty"
    )


def test_the_database_layer_hints_are_worded_for_the_window() -> None:
    assert refusal_text("no review round yet (tasks open ID starts round 1)") == (
        "no review round yet (Open round starts round 1)"
    )
    assert refusal_text("reject needs a note: say what must change (--note TEXT)") == (
        "reject needs a note: say what must change"
    )
