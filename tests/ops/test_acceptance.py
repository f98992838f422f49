"""Acceptance rounds' pure rules: hand-worked agreement and interval, proposal, transitions."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
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
from gradercal.stats.bootstrap import bootstrap_replicates, interval_levels, resampling_weights

FULL = {"real_research": 5, "reasoning_skill": 4, "grounded": 4, "strong_task": 5}


def _ratings(agree: list[bool]) -> list[Rating]:
    """Two reviewers, one response, one criterion per entry; agree or not on each."""
    out = []
    for i, same in enumerate(agree):
        out.append(Rating("ana", "r1", f"c{i}", 1.0))
        out.append(Rating("ben", "r1", f"c{i}", 1.0 if same else 0.0))
    return out


def test_percent_agreement_and_clustered_wilson_interval_by_hand() -> None:
    # 4 criteria, one unit each, the reviewers agree on 3: pa = 3/4. Per criterion the
    # unit's agreement T_c is 1, 1, 1, 0; v0 = Σ(T_c − 0.75)²/4² = 0.75/16, so
    # n_eff = 0.75·0.25/v0 = 4 (= the units), n_w = 4·3/4 = 3, q = t_3(0.975) = 3.18245.
    agree = [True, True, True, False]
    m = measure(_ratings(agree), Settings(n_boot=500, seed=7))
    assert m.value == pytest.approx(0.75)
    assert m.n_units == 4 and m.n_criteria == 4
    assert m.method == "clustered_wilson" and m.n_effective == pytest.approx(4.0)
    q, n = 3.182446305284263, 3.0
    centre = (0.75 + q * q / (2 * n)) / (1 + q * q / n)
    half = q * math.sqrt(0.75 * 0.25 / n + q * q / (4 * n * n)) / (1 + q * q / n)
    assert m.low == pytest.approx(centre - half) and m.high == pytest.approx(centre + half)
    assert m.note is not None and "only 4 criteria" in m.note
    # all agree: an interval below 1 all the same (n_eff = the 4 units, n_w = 3)
    perfect = measure(_ratings([True] * 4), Settings())
    a = q * q / n
    assert perfect.high == 1.0 and perfect.low == pytest.approx(1 / (1 + a))
    # Bennett's S = 2·pa − 1 with two categories: the same interval, mapped
    s = measure(_ratings(agree), Settings(statistic="bennett_s"))
    assert s.value == pytest.approx(0.5)
    assert m.low is not None and m.high is not None
    assert (s.low, s.high) == pytest.approx((2 * m.low - 1, 2 * m.high - 1))


def test_other_statistics_use_the_expanded_percentile_bootstrap() -> None:
    # Gwet's AC1 over criteria: the (Φ(−z), Φ(z)) quantiles of the statistic on the
    # shared resamples, z = √(K/(K−1))·t_{K−1} (the bootstrap's default interval)
    agree = [True] * 6 + [False, True, False, True]
    s = Settings(statistic="gwet_ac1", n_boot=500, seed=7)
    m = measure(_ratings(agree), s)
    rows = _ratings(agree)
    df = pd.DataFrame(
        {
            "unit": [r.criterion for r in rows],
            "rater": [r.reviewer for r in rows],
            "value": [r.value for r in rows],
        }
    )
    w = resampling_weights(10, 500, 7)
    reps = bootstrap_replicates(df, ["gwet_ac1"], w, categories=[0.0, 1.0])["gwet_ac1"]
    lo_q, hi_q = interval_levels(10, 0.95, "expanded_percentile")
    lo, hi = np.quantile(reps[np.isfinite(reps)], [lo_q, hi_q])
    assert m.method == "expanded_percentile" and m.n_effective is None
    assert m.low == pytest.approx(lo) and m.high == pytest.approx(hi)


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


def test_rule_point_is_the_default_and_interval_needs_the_lower_end() -> None:
    r = _reviewers()
    ok = _ratings([True] * 9 + [False])  # pa 0.9: at the bar
    point = assess(r, ok, Settings(), number=1)
    assert Settings().rule == "point" and point.proposed and point.passed
    interval = assess(r, ok, Settings(rule="interval"), number=1)
    assert not interval.proposed and not interval.passed
    low = interval.measure.low
    assert low is not None and low < 0.9
    assert interval.reasons == (
        f"percent agreement 0.9: the interval's lower end {low:.3f} is below the bar 0.9",
    )
    # an interval above the bar passes: 25 criteria all agreed, lower end 1/(1 + q²/24)
    many = assess(r, _ratings([True] * 25), Settings(rule="interval", bar=0.8), number=1)
    assert many.measure.low is not None and many.measure.low > 0.8 and many.proposed
    # no interval (n_boot 0): the interval rule cannot pass
    none = assess(r, ok, Settings(rule="interval", n_boot=0), number=1)
    assert not none.proposed and "needs its lower end" in none.reasons[0]
    with pytest.raises(ValueError, match="rule"):
        Settings(rule="lower")
    assert Settings.from_dict({"rule": "interval"}).rule == "interval"
    assert "rule" in Settings().to_dict()


def test_at_bar_beside_the_decision() -> None:
    # one response, two reviewers, 10 criteria: the estimate is X/10 with
    # X ~ Binomial(10, 0.9) at the bar, so a task at the bar passes the point rule
    # with P(X ≥ 9) = 0.7361 (Monte-Carlo se 0.007)
    r = _reviewers()
    a = assess(r, _ratings([True] * 9 + [False]), Settings(), number=1)
    assert a.at_bar is not None and a.at_bar.passed and a.at_bar.rule == "point"
    assert a.at_bar.probability == pytest.approx(0.7361, abs=0.025)
    assert a.at_bar.n_units == 10
    assert a.to_dict()["at_bar"]["probability"] == a.at_bar.probability
    assert a.at_bar.text().startswith("at the bar: ") and "would pass too" in a.at_bar.text()
    b = assess(r, _ratings([True] * 8 + [False] * 2), Settings(), number=1)
    assert b.at_bar is not None and not b.at_bar.passed
    assert b.at_bar.probability == pytest.approx(1 - 0.7361, abs=0.025)
    # the interval rule: a task at the bar almost never passes, so failing is ~certain
    c = assess(r, _ratings([True] * 9 + [False]), Settings(rule="interval"), number=1)
    assert c.at_bar is not None and not c.at_bar.passed
    assert c.at_bar.probability is not None and c.at_bar.probability > 0.97
    # other statistics: not computed, with why
    d = assess(r, _ratings([True] * 9 + [False]), Settings(statistic="gwet_ac1"), number=1)
    assert d.at_bar is not None and d.at_bar.probability is None and d.at_bar.why
