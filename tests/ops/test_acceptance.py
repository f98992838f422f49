"""Acceptance rounds' pure rules: hand-worked agreement and interval, proposal, transitions."""

from __future__ import annotations

import numpy as np
import pytest

from gradercal.ops.acceptance import (
    Rating,
    ReviewerFact,
    RoundFact,
    Settings,
    assess,
    check_action,
    measure,
    survey_means,
    task_status,
)
from gradercal.stats.bootstrap import resampling_weights

FULL = {"real_research": 5, "reasoning_skill": 4, "grounded": 4, "strong_task": 5}


def _ratings(agree: list[bool]) -> list[Rating]:
    """Two reviewers, one response, one criterion per entry; agree or not on each."""
    out = []
    for i, same in enumerate(agree):
        out.append(Rating("ana", "r1", f"c{i}", 1.0))
        out.append(Rating("ben", "r1", f"c{i}", 1.0 if same else 0.0))
    return out


def test_percent_agreement_and_percentile_interval_by_hand() -> None:
    # 4 criteria, the reviewers agree on 3: pa = 3/4. Bootstrap over criteria: resample
    # k of the 4 criteria; each resample's pa = (agreeing draws) / 4.
    agree = [True, True, True, False]
    s = Settings(n_boot=500, seed=7)
    m = measure(_ratings(agree), s)
    assert m.value == pytest.approx(0.75)
    assert m.n_units == 4 and m.n_criteria == 4
    w = resampling_weights(4, 500, 7).astype(float)  # columns: criteria in first-seen order
    reps = (w[:, :3].sum(axis=1)) / w.sum(axis=1)
    lo, hi = np.quantile(reps, [0.025, 0.975])
    assert m.low == pytest.approx(lo) and m.high == pytest.approx(hi)
    assert m.note is not None and "only 4 clusters" in m.note


def test_undefined_with_one_reviewer_and_no_interval_with_one_criterion() -> None:
    m = measure([Rating("ana", "r1", "c1", 1.0)], Settings())
    assert m.value is None and m.note
    one = measure(_ratings([True]), Settings())
    assert one.value == 1.0 and one.low is None and "two clusters" in (one.note or "")
    assert measure([], Settings()).note == "no judgments by the reviewers"


def test_survey_means_skip_unanswered() -> None:
    means = survey_means(
        [
            ReviewerFact("a", 0, {"real_research": 5, "grounded": None}),
            ReviewerFact("b", 0, {"real_research": 2}),
        ]
    )
    assert means["real_research"] == 3.5 and means["grounded"] is None


def _reviewers(survey: dict[str, int] = FULL, open_items: int = 0) -> list[ReviewerFact]:
    return [ReviewerFact("ana", open_items, survey), ReviewerFact("ben", 0, survey)]


def test_proposed_when_bar_and_survey_met() -> None:
    a = assess(_reviewers(), _ratings([True] * 10), Settings(n_boot=0), number=1)
    assert a.ready and a.passed and a.proposed and a.reasons == ()


def test_below_bar_and_low_survey_give_reasons() -> None:
    low = dict(FULL, strong_task=3)
    a = assess(_reviewers(low), _ratings([True] * 8 + [False] * 2), Settings(n_boot=0), number=1)
    assert not a.proposed and not a.passed
    assert a.reasons == (
        "percent agreement 0.8 below the bar 0.9",
        "survey strong_task: mean 3 below 4",
    )
    # the bar and thresholds are settings
    ok = assess(
        _reviewers(low),
        _ratings([True] * 8 + [False] * 2),
        Settings(n_boot=0, bar=0.8, survey_min={"strong_task": 3.0}),
        number=1,
    )
    assert ok.proposed


def test_not_ready_while_grading_or_survey_open() -> None:
    a = assess(_reviewers(open_items=2), _ratings([True] * 4), Settings(n_boot=0), number=1)
    assert not a.ready and not a.proposed
    assert a.waiting == ("ana: 2 response(s) not graded",)
    assert a.reasons[0] == "round not ready to close"
    b = assess([ReviewerFact("ana", 0, {})], [], Settings(n_boot=0), number=1)
    assert "ana: survey not answered" in b.waiting[0]


def test_min_rounds_needs_earlier_passing_rounds() -> None:
    s = Settings(n_boot=0, min_rounds=2)
    r, ok = _reviewers(), _ratings([True] * 5)
    first = assess(r, ok, s, number=1)
    assert first.passed and not first.proposed and first.reasons == ("round 1 of at least 2",)
    passed = RoundFact(1, "needs_revision", passed=True)
    failed = RoundFact(1, "needs_revision", passed=False)
    assert assess(r, ok, s, number=2, earlier=[passed]).proposed
    assert not assess(r, ok, s, number=2, earlier=[failed]).proposed


def test_status_and_transitions() -> None:
    assert task_status([]) == "draft"
    assert task_status([RoundFact(1, "open")]) == "in review"
    assert (
        task_status([RoundFact(1, "accepted"), RoundFact(2, "needs_revision")]) == "needs revision"
    )
    closed = RoundFact(1, "closed", passed=True)
    assert check_action("accept", None, ready=False, force=False) is not None
    assert check_action("accept", None, ready=False, force=True) is None
    assert check_action("accept", closed, ready=True, force=False) is None
    assert "not proposed" in (check_action("accept", closed, ready=False, force=False) or "")
    assert check_action("reopen", RoundFact(1, "open"), ready=True, force=True) is not None
    assert check_action("reopen", RoundFact(1, "accepted"), ready=True, force=False) is None
    assert "already accepted" in (
        check_action("reject", RoundFact(1, "accepted"), ready=True, force=True) or ""
    )
    assert (
        check_action("open", RoundFact(1, "open"), ready=True, force=False)
        == "round 1 is already open"
    )
    assert check_action("close", RoundFact(1, "open"), ready=False, force=False) is not None
    assert check_action("close", RoundFact(1, "open"), ready=False, force=True) is None


def test_settings_validate_and_round_trip() -> None:
    s = Settings(bar=0.8, statistic="gwet_ac1", min_rounds=2)
    assert Settings.from_dict(s.to_dict()) == s
    with pytest.raises(ValueError, match="statistic"):
        Settings(statistic="nope")
    with pytest.raises(ValueError, match="bogus"):
        Settings.from_dict({"bogus": 1})
    with pytest.raises(ValueError, match="survey_min"):
        Settings(survey_min={"x": 4.0})
