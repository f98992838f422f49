"""gradercal.analysis.health: criterion health by hand on tests/data/mini, the ranking rule and
a cross-check of the per-criterion agreement with gradercal.stats."""

from __future__ import annotations

import pandas as pd
import pytest

from gradercal.analysis.health import criterion_health, health_report
from gradercal.analysis.verdicts import human_graders, verdicts
from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from gradercal.stats import percent_agreement
from tests.conftest import DATA, DEMO


@pytest.fixture(scope="module")
def mini() -> Frames:
    return frames_from_data(read_path(DATA / "mini"))


def test_mini_by_hand(mini: Frames) -> None:
    """(ana, ben, judge) verdicts; consensus of two humans, ties undecided.

    M1 c1 (6 pts):  M1-a TTT, M1-b FFT → humans agree 2/2 = 1; judge vs consensus:
                    M1-a same, M1-b differs → 1/2
    M1 c2 (3):      M1-a TFT (tie), M1-b FFF → humans 1/2; judge: only M1-b decided, same → 0
    M1 c3 (−4):     M1-a FFF, M1-b TTF → humans 1; judge differs on M1-b → 1/2
    M1 c4 (1):      M1-a TTT, M1-b FFT → humans 1; judge 1/2
    M2 c1 (2):      M2-a TTT, M2-b FTT (tie) → humans 1/2; judge 0 of 1
    Impact = |points| × max(1 − human agreement, judge disagreement):
    c1 6·.5 = 3, c3 4·.5 = 2, c2 3·.5 = 1.5, M2 c1 2·.5 = 1, c4 1·.5 = .5.
    """
    rows = criterion_health(mini, "judge-x")
    assert [(r.task_id, r.criterion_id) for r in rows] == [
        ("M1", "c1"),
        ("M1", "c3"),
        ("M1", "c2"),
        ("M2", "c1"),
        ("M1", "c4"),
    ]
    assert [r.impact for r in rows] == pytest.approx([3.0, 2.0, 1.5, 1.0, 0.5])
    by = {(r.task_id, r.criterion_id): r for r in rows}
    c2 = by[("M1", "c2")]
    assert c2.human_agreement == 0.5 and c2.n_paired == 2
    assert c2.judge_disagreement == 0.0 and c2.n_judged == 1
    assert c2.flags == ["experts below bar"]
    c1 = by[("M1", "c1")]
    assert c1.human_agreement == 1.0 and c1.judge_disagreement == 0.5
    assert c1.flags == ["judge departs from consensus"]
    (detail,) = c1.disagreements
    assert (
        detail["response_id"] == "M1-b" and detail["judge_departs"] and not detail["humans_split"]
    )
    assert {v["grader"]: v["met"] for v in detail["verdicts"]} == {
        "ana": False,
        "ben": False,
        "judge-x": True,
    }
    assert {v["grader"]: v["rationale"] for v in detail["verdicts"]}["judge-x"] == "judge says so"
    c2_detail = c2.disagreements[0]
    assert c2_detail["response_id"] == "M1-a" and c2_detail["humans_split"]
    assert c2_detail["consensus"] is None  # a tie


def test_without_judge_and_with_a_lower_bar(mini: Frames) -> None:
    rows = criterion_health(mini, bar=0.5)
    assert all(r.judge_disagreement is None and r.n_judged == 0 for r in rows)
    # with bar 0.5 no criterion is below it (lowest agreement is exactly 0.5)
    assert not any(r.flagged for r in rows)
    rep = health_report(mini, "judge-x", include_all=True, limit=2)
    assert rep["n_criteria"] == 5 and rep["n_flagged"] == 5
    assert len(rep["criteria"]) == 2
    # experts below the bar: M1 c2, M2 c1; judge departs (> 10%): M1 c1, c3, c4
    assert rep["n_experts_below_bar"] == 2 and rep["n_judge_departs"] == 3
    with pytest.raises(ValueError):
        criterion_health(mini, bar=0)


def test_per_criterion_agreement_equals_gradercal_stats() -> None:
    demo = frames_from_data(read_path(DEMO))
    rows = criterion_health(demo, "judge-gpt")
    assert len(rows) == 128
    v = verdicts(demo, human_graders(demo))
    for r in rows[:25]:
        sub = v.loc[(v["task_id"] == r.task_id) & (v["criterion_id"] == r.criterion_id)]
        ratings = pd.DataFrame(
            {"unit": sub["response_id"], "rater": sub["grader"], "value": sub["met"].astype(float)}
        )
        assert r.human_agreement == pytest.approx(percent_agreement(ratings).value, abs=1e-15)
    impacts = [r.impact for r in rows]
    assert impacts == sorted(impacts, reverse=True)
