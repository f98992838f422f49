"""Tests for gradercal.analysis.scoring: worked examples, consensus, auto rules, summaries.

Arithmetic is spelled out in comments so that every expected value can be checked by
hand. A plain-Python reference implementation at the end cross-checks the vectorised
code on random benchmarks.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradercal.analysis.scoring import (
    CONSENSUS,
    SCORE_COLUMNS,
    all_grader_scores,
    auto_verdicts,
    consensus,
    criterion_credit,
    evaluate_auto,
    model_summary,
    passes,
    response_scores,
    rubric_score,
    score_report,
)
from gradercal.frames import Frames, frames_from_data
from gradercal.model import (
    Adjudication,
    Artifact,
    ArtifactKind,
    AutoRule,
    Benchmark,
    BenchmarkData,
    Criterion,
    GraderKind,
    Judgment,
    Response,
    Task,
)

# ----------------------------------------------------------------------- helpers


def crit(cid: str, points: int, *, levels: int = 2, auto: AutoRule | None = None) -> Criterion:
    return Criterion(id=cid, text=f"criterion {cid}", points=points, levels=levels, auto=auto)


def task(tid: str, *criteria: Criterion, **kw: Any) -> Task:
    numbered = tuple(
        Criterion(c.id, c.text, c.points, i, c.tags, c.auto, c.levels)
        for i, c in enumerate(criteria)
    )
    return Task(id=tid, prompt=f"prompt {tid}", criteria=numbered, **kw)


def hj(
    rid: str, cid: str, grader: str, met: bool | None = None, level: int | None = None
) -> Judgment:
    return Judgment(rid, cid, grader, GraderKind.HUMAN, met=met, level=level)


def jj(rid: str, cid: str, grader: str, met: bool | None = None) -> Judgment:
    return Judgment(rid, cid, grader, GraderKind.JUDGE, met=met)


def make(
    tasks: Sequence[Task],
    responses: Sequence[Response],
    judgments: Sequence[Judgment] = (),
    adjudications: Sequence[Adjudication] = (),
    threshold: float = 0.7,
) -> Frames:
    data = BenchmarkData(
        benchmark=Benchmark(name="t", pass_threshold=threshold),
        tasks=list(tasks),
        responses=list(responses),
        judgments=list(judgments),
    )
    return frames_from_data(data, adjudications)


def row(scores: pd.DataFrame, rid: str, grader: str | None = None) -> pd.Series:
    sel = scores["response_id"] == rid
    if grader is not None:
        sel &= scores["grader"] == grader
    matched = scores.loc[sel]
    assert len(matched) == 1, matched
    return matched.iloc[0]


def resp(rid: str, tid: str, model: str = "m", answer: Any = None) -> Response:
    return Response(rid, tid, model, "text", answer)


# The worked example of the brief: criteria +24, +10, +5 (auto), -8.
KD = AutoRule(key="answer.kd_nM", target=42, rel_tol=0.1)
T_EX = task("T1", crit("c1", 24), crit("c2", 10), crit("c3", 5, auto=KD), crit("c4", -8))


# ---------------------------------------------------------------- worked examples


def test_worked_example_with_penalty() -> None:
    # met {c1 (+24), c4 (-8)}; c3 auto: kd 50 is outside 42 ± 4.2 → not met.
    # positive points 24 + 10 + 5 = 39 → (24 - 8) / 39 = 16/39 = 0.410256…
    frames = make(
        [T_EX],
        [resp("r1", "T1", answer={"kd_nM": 50})],
        [hj("r1", "c1", "e", True), hj("r1", "c2", "e", False), hj("r1", "c4", "e", True)],
    )
    r = row(response_scores(frames, "e"), "r1")
    assert r["score"] == pytest.approx(16 / 39)
    assert r["score"] == pytest.approx(0.41026, abs=5e-6)
    assert bool(r["passed"]) is False
    assert bool(r["complete"]) is True
    assert r["n_missing"] == 0
    assert r["n_ties"] == 0
    assert bool(r["undefined"]) is False
    assert r["grader"] == "e"
    assert r["model"] == "m"
    assert r["task_id"] == "T1"
    # The scalar reference agrees.
    met = {"c1": True, "c2": False, "c4": True}
    assert rubric_score(T_EX.criteria, met, answer={"kd_nM": 50}) == pytest.approx(16 / 39)
    # Auto met (kd 40.5 within 4.2 of 42): (24 + 5 - 8) / 39 = 21/39 = 0.53846
    assert rubric_score(T_EX.criteria, met, answer={"kd_nM": 40.5}) == pytest.approx(21 / 39)


def test_score_clipped_at_zero_and_one() -> None:
    # Only c4 (-8) met: -8/39 < 0 → clipped to 0.0.
    met = {"c1": False, "c2": False, "c4": True}
    assert rubric_score(T_EX.criteria, met, answer=None) == 0.0
    # Everything positive met, penalty not: (24 + 10 + 5)/39 = 1.0 exactly.
    met = {"c1": True, "c2": True, "c4": False}
    assert rubric_score(T_EX.criteria, met, answer={"kd_nM": 42}) == 1.0
    # An out-of-range level is clipped to the top level: 10·2/2 = 10 of 10 → 1.0, not 1.5.
    t = task("T", crit("a", 10, levels=3))
    frames = make([t], [resp("r", "T")], [hj("r", "a", "e", level=3)])
    assert row(response_scores(frames, "e"), "r")["score"] == 1.0
    frames = make(
        [T_EX],
        [resp("r", "T1")],
        [hj("r", "c1", "e", False), hj("r", "c2", "e", False), hj("r", "c4", "e", True)],
    )
    r = row(response_scores(frames, "e"), "r")
    assert r["score"] == 0.0
    assert bool(r["passed"]) is False


def test_seven_of_ten_passes_at_point_seven() -> None:
    # 7 of 10 points met → 7/10 must pass at 0.7.
    t = task("T", crit("a", 7), crit("b", 3))
    frames = make([t], [resp("r", "T")], [hj("r", "a", "e", True), hj("r", "b", "e", False)])
    r = row(response_scores(frames, "e"), "r")
    assert r["score"] == pytest.approx(0.7)
    assert bool(r["passed"]) is True
    assert passes(7 / 10, 0.7)
    # 69/100 does not.
    t2 = task("T2", crit("a", 69), crit("b", 31))
    frames = make([t2], [resp("r", "T2")], [hj("r", "a", "e", True), hj("r", "b", "e", False)])
    assert bool(row(response_scores(frames, "e"), "r")["passed"]) is False


def test_exact_threshold_with_float_rounding_in_levels() -> None:
    # Points 11 (4 levels, level 1), 5 (4 levels, level 3), 9 (met), 5 (4 levels, level 2):
    # 11/3 + 5 + 9 + 10/3 = 21 of 30 = 0.7 exactly, but summing those floats gives
    # 0.6999999999999998 — the score must still pass at 0.7.
    t = task("T", crit("a", 11, levels=4), crit("b", 5, levels=4), crit("c", 9),
             crit("d", 5, levels=4))  # fmt: skip
    assert (11 * 1 / 3 + 5 * 3 / 3 + 9 + 5 * 2 / 3) / 30 < 0.7  # the trap is real
    frames = make(
        [t],
        [resp("r", "T")],
        [hj("r", "a", "e", level=1), hj("r", "b", "e", level=3), hj("r", "c", "e", True),
         hj("r", "d", "e", level=2)],
    )  # fmt: skip
    r = row(response_scores(frames, "e"), "r")
    assert r["score"] == pytest.approx(0.7, abs=1e-12)
    assert bool(r["passed"]) is True


def test_partial_levels() -> None:
    # 10 points on a 3-level scale at level 1 → 10·1/2 = 5; plus 4 points met → 9 of 14.
    t = task("T", crit("a", 10, levels=3), crit("b", 4))
    frames = make([t], [resp("r", "T")], [hj("r", "a", "e", level=1), hj("r", "b", "e", True)])
    assert row(response_scores(frames, "e"), "r")["score"] == pytest.approx(9 / 14)
    # 20 points on a 4-level scale at level 2 → 20·2/3 = 13.33; 13.33/20 = 2/3.
    t4 = task("T4", crit("a", 20, levels=4))
    frames = make([t4], [resp("r", "T4")], [hj("r", "a", "e", level=2)])
    assert row(response_scores(frames, "e"), "r")["score"] == pytest.approx(2 / 3)
    # The level wins over met: level 0 with met=True earns nothing.
    frames = make([t4], [resp("r", "T4")], [hj("r", "a", "e", met=True, level=0)])
    assert row(response_scores(frames, "e"), "r")["score"] == 0.0
    # Without a level, met on an ordinal criterion is full credit.
    frames = make([t4], [resp("r", "T4")], [hj("r", "a", "e", met=True)])
    assert row(response_scores(frames, "e"), "r")["score"] == 1.0
    # A partial penalty: -6 on 3 levels at level 1 → -3; with +10 met → 7/10.
    tp = task("TP", crit("a", 10), crit("p", -6, levels=3))
    frames = make([tp], [resp("r", "TP")], [hj("r", "a", "e", True), hj("r", "p", "e", level=1)])
    assert row(response_scores(frames, "e"), "r")["score"] == pytest.approx(0.7)
    assert criterion_credit(10, 3, level=1) == 5.0
    assert criterion_credit(-8, met=True) == -8.0
    assert criterion_credit(-8, met=False) == 0.0
    assert criterion_credit(5) is None
    assert criterion_credit(12, 4, met=True, level=1) == 4.0


def test_incomplete_responses_are_not_scored() -> None:
    # c2 never answered (met None), c4 has no row at all → 2 missing.
    frames = make(
        [T_EX],
        [resp("r1", "T1", answer={"kd_nM": 42})],
        [hj("r1", "c1", "e", True), hj("r1", "c2", "e", None)],
    )
    r = row(response_scores(frames, "e"), "r1")
    assert math.isnan(r["score"])
    assert pd.isna(r["passed"])
    assert bool(r["complete"]) is False
    assert r["n_missing"] == 2
    assert math.isnan(rubric_score(T_EX.criteria, {"c1": True, "c2": None}))


def test_named_grader_only_lists_responses_it_judged() -> None:
    t = task("T", crit("a", 1), crit("b", 1))
    frames = make(
        [t],
        [resp("r1", "T"), resp("r2", "T")],
        [hj("r1", "a", "e", True), hj("r1", "b", "e", True)],
    )
    scores = response_scores(frames, "e")
    assert scores["response_id"].tolist() == ["r1"]
    everything = response_scores(frames, "e", include_ungraded=True)
    assert everything["response_id"].tolist() == ["r1", "r2"]
    r2 = row(everything, "r2")
    assert bool(r2["complete"]) is False
    assert r2["n_missing"] == 2
    assert response_scores(frames, "nobody").empty
    assert tuple(response_scores(frames, "nobody").columns) == SCORE_COLUMNS
    # The consensus lists every response by default.
    assert response_scores(frames)["response_id"].tolist() == ["r1", "r2"]
    assert response_scores(frames, include_ungraded=False)["response_id"].tolist() == ["r1"]


def test_undefined_when_no_positive_points() -> None:
    t = task("T", crit("p", -5))
    frames = make([t], [resp("r", "T")], [hj("r", "p", "e", False)])
    r = row(response_scores(frames, "e"), "r")
    assert math.isnan(r["score"])
    assert bool(r["undefined"]) is True
    assert bool(r["complete"]) is True
    assert pd.isna(r["passed"])
    assert math.isnan(rubric_score(t.criteria, {"p": False}))
    summary = model_summary(response_scores(frames, "e"), frames)
    assert summary.loc[0, "n_undefined"] == 1
    assert summary.loc[0, "n_scored"] == 0
    assert summary.loc[0, "n_incomplete"] == 0


def test_criterion_ids_are_per_task() -> None:
    # "c1" is worth 24 in T1 but 1 in T2 (out of 4): each response uses its own task.
    t2 = task("T2", crit("c1", 1), crit("c2", 3))
    frames = make(
        [T_EX, t2],
        [resp("a", "T1", answer={"kd_nM": 0}), resp("b", "T2")],
        [hj("a", "c1", "e", True), hj("a", "c2", "e", False), hj("a", "c4", "e", False),
         hj("b", "c1", "e", True), hj("b", "c2", "e", False)],
    )  # fmt: skip
    scores = response_scores(frames, "e")
    assert row(scores, "a")["score"] == pytest.approx(24 / 39)
    assert row(scores, "b")["score"] == pytest.approx(1 / 4)


# ------------------------------------------------------------------------ auto


def test_auto_criteria_come_from_the_answer_for_every_grader() -> None:
    # A human says the auto criterion c3 is met, but kd 60 is outside 42 ± 4.2:
    # the auto verdict wins → (24 + 10) / 39 for everyone.
    frames = make(
        [T_EX],
        [resp("r", "T1", answer={"kd_nM": 60})],
        [hj("r", "c1", "e", True), hj("r", "c2", "e", True), hj("r", "c3", "e", True),
         hj("r", "c4", "e", False),
         jj("r", "c1", "judge", True), jj("r", "c2", "judge", True), jj("r", "c4", "judge", False)],
    )  # fmt: skip
    scores = all_grader_scores(frames)
    for grader in (CONSENSUS, "e", "judge"):
        assert row(scores, "r", grader)["score"] == pytest.approx(34 / 39), grader
    verdicts = auto_verdicts(frames)
    assert verdicts.to_dict("records") == [{"response_id": "r", "criterion_id": "c3", "met": False}]


def test_auto_only_task_scores_without_any_judgment() -> None:
    t = task("T", crit("x", 2, auto=AutoRule("x", 1)), crit("y", 2, auto=AutoRule("y", "b")))
    frames = make([t], [resp("r1", "T", answer={"x": 1.0, "y": " b "}),
                        resp("r2", "T", answer={"x": 1, "y": "B"})])  # fmt: skip
    scores = response_scores(frames)
    # r1: both met → 4/4; r2: y "B" ≠ "b" → 2/4.
    assert row(scores, "r1")["score"] == 1.0
    assert row(scores, "r2")["score"] == 0.5
    assert scores["complete"].tolist() == [True, True]
    assert auto_verdicts(frames)["met"].tolist() == [True, True, True, False]


NESTED = {"kd_nM": 40.5, "results": [{"kd": 10}, {"kd": 12.5, "ok": True}], "name": " IL-6 "}


@pytest.mark.parametrize(
    ("rule", "answer", "expected"),
    [
        # --- key paths
        (AutoRule("answer.kd_nM", 40.5), NESTED, True),
        (AutoRule("kd_nM", 40.5), NESTED, True),  # leading "answer." optional
        (AutoRule("answer.results.1.kd", 12.5), NESTED, True),  # list index
        (AutoRule("results.0.kd", 10), NESTED, True),
        (AutoRule("results.2.kd", 10), NESTED, False),  # index out of range
        (AutoRule("results.-1.kd", 12.5), NESTED, False),  # no negative indices
        (AutoRule("results.x.kd", 10), NESTED, False),  # non-integer segment on a list
        (AutoRule("answer.missing", 1), NESTED, False),  # missing key
        (AutoRule("kd_nM.deeper", 1), NESTED, False),  # path through a number
        (AutoRule("answer", 42), 42, True),  # the whole answer
        (AutoRule("answer.kd", 1), {"answer": {"kd": 1}}, True),  # literal-path fallback
        (AutoRule("kd", 1), None, False),  # no answer
        (AutoRule("kd", 1), "not json", False),
        (AutoRule("kd", 1), [1, 2], False),
        # --- exact matches
        (AutoRule("v", 1), {"v": 1.0}, True),  # 1 == 1.0
        (AutoRule("v", 1.0), {"v": 1}, True),
        (AutoRule("v", 1), {"v": True}, False),  # bools are not numbers
        (AutoRule("v", True), {"v": 1}, False),
        (AutoRule("v", True), {"v": True}, True),
        (AutoRule("v", False), {"v": 0}, False),
        (AutoRule("name", "IL-6"), NESTED, True),  # strings trimmed
        (AutoRule("name", "il-6"), NESTED, False),  # case-sensitive
        (AutoRule("v", 42), {"v": "42"}, False),  # numeric strings are strings
        (AutoRule("v", "42"), {"v": 42}, False),
        (AutoRule("v", 0.3), {"v": 0.1 + 0.2}, False),  # exact means exact
        (AutoRule("v", [1, "a"]), {"v": [1.0, " a "]}, True),
        (AutoRule("v", [1, 2]), {"v": [1, 2, 3]}, False),
        (AutoRule("v", {"a": 1}), {"v": {"a": 1.0}}, True),
        (AutoRule("v", {"a": 1}), {"v": {"a": 1, "b": 2}}, False),
        (AutoRule("v", None), {"v": None}, False),  # null is never met
        (AutoRule("v", 1), {"v": None}, False),
        (AutoRule("v", math.nan), {"v": math.nan}, False),  # NaN never met
        (AutoRule("v", 10**400), {"v": 10**400}, True),  # huge ints are exact
        # --- absolute tolerance: |v - 42| <= 1.5
        (AutoRule("v", 42, abs_tol=1.5), {"v": 40.5}, True),  # on the boundary
        (AutoRule("v", 42, abs_tol=1.5), {"v": 43.5}, True),
        (AutoRule("v", 42, abs_tol=1.5), {"v": 40.49}, False),
        (AutoRule("v", 42, abs_tol=0.0), {"v": 42}, True),
        (AutoRule("v", 42, abs_tol=-1.0), {"v": 42.001}, False),  # negative → 0
        # --- relative tolerance: 10% of 42 = 4.2
        (AutoRule("v", 42, rel_tol=0.1), {"v": 46.2}, True),  # boundary, 4.2 ≤ 4.2
        (AutoRule("v", 42, rel_tol=0.1), {"v": 37.8}, True),
        (AutoRule("v", 42, rel_tol=0.1), {"v": 46.21}, False),
        (AutoRule("v", -42, rel_tol=0.1), {"v": -46.2}, True),  # |target|
        (AutoRule("v", 0, rel_tol=0.5), {"v": 0.001}, False),  # rel of 0 is 0
        # --- both: max(1, 0.1·42 = 4.2) = 4.2; max(5, 0.01·42 = 0.42) = 5
        (AutoRule("v", 42, abs_tol=1, rel_tol=0.1), {"v": 46}, True),
        (AutoRule("v", 42, abs_tol=5, rel_tol=0.01), {"v": 47}, True),
        (AutoRule("v", 42, abs_tol=5, rel_tol=0.01), {"v": 47.01}, False),
        # --- tolerance needs finite numbers on both sides
        (AutoRule("v", 42, abs_tol=1), {"v": "42"}, False),
        (AutoRule("v", 42, abs_tol=1), {"v": True}, False),
        (AutoRule("v", 1, abs_tol=1), {"v": True}, False),
        (AutoRule("v", 42, abs_tol=1), {"v": math.nan}, False),
        (AutoRule("v", 42, abs_tol=1), {"v": math.inf}, False),
        (AutoRule("v", math.inf, abs_tol=1), {"v": math.inf}, False),
        (AutoRule("v", "abc", abs_tol=1), {"v": "abc"}, False),
        (AutoRule("v", 42, abs_tol=1), {"v": [42]}, False),
        (AutoRule("v", 42, abs_tol=1), {"v": 10**400}, False),  # no OverflowError
        (AutoRule("v", 42, abs_tol=math.nan), {"v": 42}, True),  # NaN tolerance = absent
        (AutoRule("v", 42, abs_tol=math.nan), {"v": 42.5}, False),
    ],
)
def test_evaluate_auto(rule: AutoRule, answer: Any, expected: bool) -> None:
    assert evaluate_auto(rule, answer) is expected


def test_evaluate_auto_never_raises_on_weird_answers() -> None:
    deep: Any = 1
    for _ in range(5000):
        deep = [deep]
    weird: list[Any] = [
        object(),
        {1, 2},
        b"bytes",
        {"v": object()},
        {"v": {"a": {1, 2}}},
        deep,
        {"v": complex(1, 2)},
    ]
    rules = [AutoRule("v", 1), AutoRule("v", 1, abs_tol=1), AutoRule("v.a", {"x": 1}),
             AutoRule("0.0.0", 1)]  # fmt: skip
    for answer in weird:
        for rule in rules:
            assert evaluate_auto(rule, answer) is False


# ------------------------------------------------------------------- consensus


def _cons_row(frames: Frames, rid: str, cid: str) -> pd.Series:
    c = consensus(frames)
    matched = c.loc[(c["response_id"] == rid) & (c["criterion_id"] == cid)]
    assert len(matched) == 1
    return matched.iloc[0]


def test_consensus_majority_tie_none_and_ignored_nulls() -> None:
    t = task("T", crit("a", 6), crit("b", 4), crit("c", 5), crit("d", 1))
    judgments = [
        # a: 2 met vs 1 not → majority met
        hj("r", "a", "e1", True), hj("r", "a", "e2", True), hj("r", "a", "e3", False),
        # b: 1 vs 1 (e3 has not answered: None is ignored) → tie
        hj("r", "b", "e1", True), hj("r", "b", "e2", False), hj("r", "b", "e3", None),
        # c: 0 met of 3 → majority not met; the judge's "met" does not count
        hj("r", "c", "e1", False), hj("r", "c", "e2", False), hj("r", "c", "e3", False),
        jj("r", "c", "judge", True),
        # d: only the judge → no human data
        jj("r", "d", "judge", True),
    ]  # fmt: skip
    frames = make([t], [resp("r", "T")], judgments)
    c = consensus(frames)
    assert c.columns.tolist() == [
        "response_id", "criterion_id", "met", "level", "source", "n_met", "n_raters"
    ]  # fmt: skip
    assert c["criterion_id"].tolist() == ["a", "b", "c", "d"]
    assert c["source"].tolist() == ["majority", "tie", "majority", "none"]
    assert c["n_met"].tolist() == [2, 1, 0, 0]
    assert c["n_raters"].tolist() == [3, 2, 3, 0]
    assert bool(c["met"].iloc[0]) is True
    assert pd.isna(c["met"].iloc[1])
    assert bool(c["met"].iloc[2]) is False
    assert pd.isna(c["met"].iloc[3])
    assert str(c["met"].dtype) == "boolean"

    # Default policy: the tie on b (and no human data on d) → incomplete.
    r = row(response_scores(frames), "r")
    assert math.isnan(r["score"])
    assert bool(r["complete"]) is False
    assert r["n_ties"] == 1
    assert r["n_missing"] == 1  # d


def test_consensus_tie_policies() -> None:
    t = task("T", crit("a", 6), crit("b", 4))
    frames = make(
        [t],
        [resp("r", "T")],
        [hj("r", "a", "e1", True), hj("r", "a", "e2", True),
         hj("r", "b", "e1", True), hj("r", "b", "e2", False)],
    )  # fmt: skip
    inc = row(response_scores(frames), "r")
    assert math.isnan(inc["score"])
    assert (inc["n_ties"], bool(inc["complete"])) == (1, False)
    # "met": tie on b counts as met → (6 + 4)/10 = 1.0
    met = row(response_scores(frames, tie_policy="met"), "r")
    assert met["score"] == 1.0
    assert (met["n_ties"], bool(met["complete"])) == (1, True)
    # "not_met": → 6/10 = 0.6, fails at 0.7
    nm = row(response_scores(frames, tie_policy="not_met"), "r")
    assert nm["score"] == pytest.approx(0.6)
    assert bool(nm["passed"]) is False
    with pytest.raises(ValueError, match="tie_policy"):
        response_scores(frames, tie_policy="coin flip")  # type: ignore[arg-type]


def test_adjudication_overrides_majority_and_resolves_ties() -> None:
    t = task("T", crit("a", 6), crit("b", 4))
    judgments = [
        hj("r", "a", "e1", True), hj("r", "a", "e2", True), hj("r", "a", "e3", True),
        hj("r", "b", "e1", True), hj("r", "b", "e2", False),
    ]  # fmt: skip
    adjudications = [
        Adjudication("r", "a", met=False, adjudicator="lead"),  # overrides 3 × met
        Adjudication("r", "b", met=True, adjudicator="lead"),  # resolves the tie
    ]
    frames = make([t], [resp("r", "T")], judgments, adjudications)
    a = _cons_row(frames, "r", "a")
    assert (a["source"], bool(a["met"]), a["n_met"], a["n_raters"]) == ("adjudication", False, 3, 3)
    b = _cons_row(frames, "r", "b")
    assert (b["source"], bool(b["met"])) == ("adjudication", True)
    # Score: a not met, b met → 4/10.
    r = row(response_scores(frames), "r")
    assert r["score"] == pytest.approx(0.4)
    assert r["n_ties"] == 0
    # An adjudication alone (no human verdicts) also decides.
    frames = make([t], [resp("r", "T")], [], [Adjudication("r", "a", True, "lead"),
                                               Adjudication("r", "b", False, "lead")])  # fmt: skip
    assert row(response_scores(frames), "r")["score"] == pytest.approx(0.6)


def test_consensus_on_ordinal_levels_is_the_median() -> None:
    t = task("T", crit("a", 10, levels=3), crit("b", 10, levels=3))
    judgments = [
        # a: levels 2, 1, 1 → median 1 (partial) → credit 5
        hj("r", "a", "e1", level=2), hj("r", "a", "e2", level=1), hj("r", "a", "e3", level=1),
        # b: levels 2, 2, 1, 0 → middle levels 1 and 2 differ → tie
        hj("r", "b", "e1", level=2), hj("r", "b", "e2", level=2), hj("r", "b", "e3", level=1),
        hj("r", "b", "e4", level=0),
    ]  # fmt: skip
    frames = make([t], [resp("r", "T")], judgments)
    a = _cons_row(frames, "r", "a")
    assert (a["source"], a["level"], bool(a["met"]), a["n_met"], a["n_raters"]) == (
        "majority", 1, False, 1, 3
    )  # fmt: skip
    b = _cons_row(frames, "r", "b")
    assert b["source"] == "tie"
    assert pd.isna(b["level"])
    # "met" → upper middle level 2 → 5 + 10 = 15 of 20; "not_met" → level 1 → 10 of 20.
    assert row(response_scores(frames, tie_policy="met"), "r")["score"] == pytest.approx(0.75)
    assert row(response_scores(frames, tie_policy="not_met"), "r")["score"] == pytest.approx(0.5)


def test_a_level_tie_below_the_top_is_a_decided_not_met() -> None:
    """The worked example of docs/agreement.md ("Verdicts, units and the consensus").

    A 3-level criterion (0 not met, 1 partial, 2 met) graded by four experts:

    * a: 0, 0, 1, 2 → median level tied between 0 and 1 (the score is a tie), but 3 of 4
      verdicts are not met: the met / not-met consensus is *not met*, a decided unit;
    * b: 0, 1, 2, 2 → tied between 1 and 2, and 2 of 4 are met: undecided;
    * c: 1, 1 → level 1 (partial), not met.

    Before, a was dropped from every judge–consensus comparison.
    """
    from gradercal.analysis.agreement import judge_agreement
    from gradercal.analysis.verdicts import consensus_verdicts

    t = task("T", crit("a", 10, levels=3), crit("b", 10, levels=3), crit("c", 10, levels=3))
    judgments = [
        hj("r", "a", "e1", level=0), hj("r", "a", "e2", level=0), hj("r", "a", "e3", level=1),
        hj("r", "a", "e4", level=2),
        hj("r", "b", "e1", level=0), hj("r", "b", "e2", level=1), hj("r", "b", "e3", level=2),
        hj("r", "b", "e4", level=2),
        hj("r", "c", "e1", level=1), hj("r", "c", "e2", level=1),
        jj("r", "a", "judge", met=False), jj("r", "b", "judge", met=True),
        jj("r", "c", "judge", met=False),
    ]  # fmt: skip
    frames = make([t], [resp("r", "T")], judgments)
    a = _cons_row(frames, "r", "a")
    assert a["source"] == "tie" and pd.isna(a["level"])
    assert not pd.isna(a["met"]) and not bool(a["met"])
    b = _cons_row(frames, "r", "b")
    assert b["source"] == "tie" and pd.isna(b["met"])
    c = _cons_row(frames, "r", "c")
    assert (c["source"], c["level"], bool(c["met"])) == ("majority", 1, False)
    cv = consensus_verdicts(frames)
    assert cv["criterion_id"].tolist() == ["a", "c"]
    assert cv["met"].tolist() == [False, False]
    assert cv["source"].tolist() == ["majority", "majority"]
    # the judge is compared on a and c (b undecided)
    cmp = judge_agreement(frames, "judge", n_boot=0).headline
    assert cmp.n_units == 2 and cmp.n_undecided == 1
    assert cmp.confusion == {"tp": 0, "fp": 0, "fn": 0, "tn": 2}
    # the score still sees a's level tie: incomplete by default, two readings by policy
    r = row(response_scores(frames), "r")
    assert (r["n_ties"], bool(r["complete"])) == (2, False)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    levels=st.integers(2, 5),
    votes=st.lists(st.integers(0, 4), min_size=1, max_size=7),
)
def test_consensus_met_is_the_strict_majority_of_met_votes(levels: int, votes: list[int]) -> None:
    votes = [min(v, levels - 1) for v in votes]
    t = task("T", crit("a", 1, levels=levels))
    frames = make(
        [t], [resp("r", "T")], [hj("r", "a", f"e{k}", level=v) for k, v in enumerate(votes)]
    )
    c = _cons_row(frames, "r", "a")
    n_top = sum(v == levels - 1 for v in votes)
    if 2 * n_top > len(votes):
        assert not pd.isna(c["met"]) and bool(c["met"])
    elif 2 * n_top < len(votes):
        assert not pd.isna(c["met"]) and not bool(c["met"])
    else:
        assert pd.isna(c["met"])
    ordered = sorted(votes)
    lo, hi = ordered[(len(votes) - 1) // 2], ordered[len(votes) // 2]
    if lo == hi:
        assert c["source"] == "majority" and c["level"] == lo
    else:
        assert c["source"] == "tie" and pd.isna(c["level"])


def test_consensus_with_explicit_humans() -> None:
    t = task("T", crit("a", 1))
    frames = make(
        [t],
        [resp("r", "T")],
        [hj("r", "a", "e1", True), hj("r", "a", "e2", False), jj("r", "a", "judge", True)],
    )
    assert _cons_row(frames, "r", "a")["source"] == "tie"
    only_e1 = consensus(frames, humans=["e1"])
    assert (only_e1["source"].iloc[0], bool(only_e1["met"].iloc[0])) == ("majority", True)
    # Names pick graders of any kind: e2 + judge → 1 vs 1 → tie.
    assert consensus(frames, humans=["e2", "judge"])["source"].iloc[0] == "tie"
    assert row(response_scores(frames, humans=["e2"]), "r")["score"] == 0.0


# -------------------------------------------------------------- summaries/report


def summary_frames() -> Frames:
    t1 = task(
        "T1",
        crit("a", 6),
        crit("b", 4),
        workflow="w1",
        domain="bio",
        answer_format="json",
        artifacts=(Artifact(kind=ArtifactKind.PDF, title="blot", path="artifacts/b.pdf"),),
    )
    t2 = task("T2", crit("a", 5), crit("b", 5), crit("p", -5), workflow="w2")
    judgments = [
        # A1: 6 of 10 = 0.6 (fails)       A2: 10 of 10 = 1.0 (passes)
        hj("A1", "a", "e1", True), hj("A1", "b", "e1", False),
        hj("A2", "a", "e1", True), hj("A2", "b", "e1", True), hj("A2", "p", "e1", False),
        # B1: 10 of 10 = 1.0 (passes)      B2: b unanswered → incomplete
        hj("B1", "a", "e1", True), hj("B1", "b", "e1", True),
        hj("B2", "a", "e1", True), hj("B2", "p", "e1", False),
        # The judge only graded A1: both met → 1.0
        jj("A1", "a", "judge", True), jj("A1", "b", "judge", True),
    ]  # fmt: skip
    return make(
        [t1, t2],
        [resp("A1", "T1", "A"), resp("A2", "T2", "A"), resp("B1", "T1", "B"),
         resp("B2", "T2", "B")],
        judgments,
    )  # fmt: skip


def test_model_summary_per_model() -> None:
    frames = summary_frames()
    s = model_summary(response_scores(frames), frames)
    assert s.columns.tolist() == [
        "grader", "model", "n_responses", "n_scored", "mean_score", "pass_rate",
        "n_incomplete", "n_undefined",
    ]  # fmt: skip
    a, b = s.iloc[0], s.iloc[1]
    # A: (0.6 + 1.0)/2 = 0.8, 1 of 2 passes
    assert (a["grader"], a["model"], a["n_responses"], a["n_scored"]) == ("consensus", "A", 2, 2)
    assert a["mean_score"] == pytest.approx(0.8)
    assert a["pass_rate"] == pytest.approx(0.5)
    assert a["n_incomplete"] == 0
    # B: only B1 scored (1.0), B2 incomplete
    assert (b["model"], b["n_responses"], b["n_scored"], b["n_incomplete"]) == ("B", 2, 1, 1)
    assert b["mean_score"] == pytest.approx(1.0)
    assert b["pass_rate"] == pytest.approx(1.0)


def test_model_summary_breakdowns() -> None:
    frames = summary_frames()
    scores = response_scores(frames)

    def table(by: str) -> list[tuple[Any, ...]]:
        s = model_summary(scores, frames, by=by)
        return [
            (r["model"], r["group"], r["n_responses"], r["n_scored"],
             None if math.isnan(r["mean_score"]) else round(r["mean_score"], 6),
             r["n_incomplete"])
            for r in s.to_dict("records")
        ]  # fmt: skip

    assert table("workflow") == [
        ("A", "w1", 1, 1, 0.6, 0),
        ("A", "w2", 1, 1, 1.0, 0),
        ("B", "w1", 1, 1, 1.0, 0),
        ("B", "w2", 1, 0, None, 1),
    ]
    assert table("artifacts") == [
        ("A", "text-only", 1, 1, 1.0, 0),
        ("A", "with artifacts", 1, 1, 0.6, 0),
        ("B", "text-only", 1, 0, None, 1),
        ("B", "with artifacts", 1, 1, 1.0, 0),
    ]
    # T2 has no domain / answer format → group None, sorted last.
    assert table("domain") == [
        ("A", "bio", 1, 1, 0.6, 0),
        ("A", None, 1, 1, 1.0, 0),
        ("B", "bio", 1, 1, 1.0, 0),
        ("B", None, 1, 0, None, 1),
    ]
    assert [r[:2] for r in table("answer_format")] == [
        ("A", "json"), ("A", None), ("B", "json"), ("B", None)
    ]  # fmt: skip
    with pytest.raises(ValueError, match="by must be"):
        model_summary(scores, frames, by="colour")


def test_all_grader_scores_and_summary_per_grader() -> None:
    frames = summary_frames()
    scores = all_grader_scores(frames)
    assert scores["grader"].tolist() == ["consensus"] * 4 + ["e1"] * 4 + ["judge"]
    assert row(scores, "A1", "judge")["score"] == 1.0
    assert row(scores, "A1", "e1")["score"] == pytest.approx(0.6)
    s = model_summary(scores, frames)
    assert list(zip(s["grader"], s["model"], strict=True)) == [
        ("consensus", "A"), ("consensus", "B"), ("e1", "A"), ("e1", "B"), ("judge", "A")
    ]  # fmt: skip
    judge = s.iloc[-1]
    assert (judge["n_responses"], judge["mean_score"], judge["pass_rate"]) == (1, 1.0, 1.0)


def test_score_report_shape_and_json() -> None:
    frames = summary_frames()
    report = score_report(frames)
    text = json.dumps(report, allow_nan=False)  # raises on NaN/inf
    assert json.loads(text) == report
    assert report["grader"] == "consensus"
    assert report["pass_threshold"] == 0.7
    assert report["incomplete"] == 1
    assert report["ties"] == 0
    assert report["undefined"] == 0
    assert report["n_responses"] == 4
    assert report["models"] == [
        {"model": "A", "n_responses": 2, "n_scored": 2, "mean_score": pytest.approx(0.8),
         "pass_rate": 0.5, "n_incomplete": 0, "n_undefined": 0},
        {"model": "B", "n_responses": 2, "n_scored": 1, "mean_score": 1.0,
         "pass_rate": 1.0, "n_incomplete": 1, "n_undefined": 0},
    ]  # fmt: skip
    assert set(report["breakdowns"]) == {"workflow", "domain", "artifacts", "answer_format"}
    b_w2 = report["breakdowns"]["workflow"][3]
    assert b_w2 == {"model": "B", "group": "w2", "n_responses": 1, "n_scored": 0,
                    "mean_score": None, "pass_rate": None, "n_incomplete": 1,
                    "n_undefined": 0}  # fmt: skip
    for value in (report["models"][0]["mean_score"], report["models"][0]["n_scored"]):
        assert type(value) in (int, float)
    judge = score_report(frames, "judge")
    assert judge["grader"] == "judge"
    assert [m["model"] for m in judge["models"]] == ["A"]
    json.dumps(judge, allow_nan=False)


def test_score_report_counts_ties_and_handles_empty() -> None:
    t = task("T", crit("a", 1), crit("b", 1))
    frames = make(
        [t],
        [resp("r", "T")],
        [hj("r", "a", "e1", True), hj("r", "a", "e2", False),
         hj("r", "b", "e1", True), hj("r", "b", "e2", False)],
    )  # fmt: skip
    report = score_report(frames)
    assert (report["ties"], report["incomplete"]) == (2, 1)
    assert report["models"][0]["mean_score"] is None
    json.dumps(report, allow_nan=False)
    resolved = score_report(frames, tie_policy="met")
    assert (resolved["ties"], resolved["incomplete"]) == (2, 0)
    assert resolved["models"][0]["mean_score"] == 1.0
    empty = score_report(make([], []))
    assert empty["models"] == []
    assert empty["breakdowns"]["workflow"] == []
    assert (empty["incomplete"], empty["ties"]) == (0, 0)
    json.dumps(empty, allow_nan=False)


# ------------------------------------------- reference implementation + properties


def _ref_level(met: bool | None, level: int | None, top: int) -> int | None:
    if level is not None:
        return min(max(level, 0), top)
    if met is not None:
        return top if met else 0
    return None


def _ref_auto(rule: AutoRule, answer: Any) -> bool:
    """Tiny auto evaluator for the generated rules (key "x", int values only)."""
    if not isinstance(answer, dict) or answer.get("x") is None:
        return False
    v = answer["x"]
    if rule.abs_tol is None:
        return bool(v == rule.target)
    return bool(abs(v - rule.target) <= rule.abs_tol)


def reference_scores(
    data: BenchmarkData,
    adjudications: Sequence[Adjudication],
    grader: str,
    tie_policy: str = "incomplete",
) -> dict[str, dict[str, Any]]:
    """Plain-Python scoring straight from the definitions, with exact fractions."""
    tasks = {t.id: t for t in data.tasks}
    threshold = Fraction(repr(data.benchmark.pass_threshold))
    verdicts: dict[tuple[str, str, str], Judgment] = {}
    for j in data.judgments:
        verdicts[(j.response_id, j.criterion_id, j.grader)] = j
    adj = {(a.response_id, a.criterion_id): a for a in adjudications}
    humans = sorted({j.grader for j in data.judgments if j.grader_kind == GraderKind.HUMAN})
    touched = {j.response_id for j in data.judgments if j.grader == grader}
    out: dict[str, dict[str, Any]] = {}
    for r in data.responses:
        t = tasks[r.task_id]
        if grader != CONSENSUS and r.id not in touched:
            continue
        positive = sum(c.points for c in t.criteria if c.points > 0)
        earned = Fraction(0)
        n_missing = n_ties = 0
        for c in t.criteria:
            top = c.levels - 1
            if c.auto is not None:
                earned += c.points if _ref_auto(c.auto, r.answer) else 0
                continue
            k: int | None
            if grader == CONSENSUS:
                a = adj.get((r.id, c.id))
                if a is not None:
                    k = _ref_level(a.met, a.level, top)
                else:
                    levels = []
                    for h in humans:
                        hv = verdicts.get((r.id, c.id, h))
                        if hv is not None:
                            lv = _ref_level(hv.met, hv.level, top)
                            if lv is not None:
                                levels.append(lv)
                    levels.sort()
                    n = len(levels)
                    if n == 0:
                        k = None
                    elif levels[(n - 1) // 2] == levels[n // 2]:
                        k = levels[n // 2]
                    else:
                        n_ties += 1
                        k = {"met": levels[n // 2], "not_met": levels[(n - 1) // 2]}.get(
                            tie_policy, -1
                        )
                        if k == -1:
                            continue
                if k is None:
                    n_missing += 1
                    continue
            else:
                gv = verdicts.get((r.id, c.id, grader))
                k = None if gv is None else _ref_level(gv.met, gv.level, top)
                if k is None:
                    n_missing += 1
                    continue
            earned += Fraction(c.points * k, top)
        complete = n_missing == 0 and (n_ties == 0 or tie_policy != "incomplete")
        score: Fraction | None = None
        if complete and positive > 0:
            score = min(max(earned / positive, Fraction(0)), Fraction(1))
        out[r.id] = {
            "score": score,
            "passed": None if score is None else score >= threshold,
            "complete": complete,
            "n_missing": n_missing,
            "n_ties": n_ties,
            "undefined": positive <= 0,
        }
    return out


@st.composite
def benchmarks(draw: st.DrawFn) -> tuple[BenchmarkData, list[Adjudication]]:
    graders = ["h1", "h2", "h3", "h4"][: draw(st.integers(1, 4))]
    tasks: list[Task] = []
    responses: list[Response] = []
    judgments: list[Judgment] = []
    adjudications: list[Adjudication] = []
    for ti in range(draw(st.integers(1, 3))):
        criteria = []
        for ci in range(draw(st.integers(1, 5))):
            points = draw(st.integers(-10, 10))
            if draw(st.integers(0, 4)) == 0:
                rule = AutoRule(
                    "answer.x",
                    draw(st.integers(0, 5)),
                    abs_tol=draw(st.none() | st.integers(0, 2).map(float)),
                )
                criteria.append(crit(f"c{ci}", points, auto=rule))
            else:
                criteria.append(crit(f"c{ci}", points, levels=draw(st.sampled_from([2, 2, 3, 4]))))
        t = task(f"T{ti}", *criteria)
        tasks.append(t)
        for ri in range(draw(st.integers(1, 3))):
            rid = f"T{ti}-r{ri}"
            answer = draw(st.none() | st.fixed_dictionaries({"x": st.none() | st.integers(0, 5)}))
            responses.append(Response(rid, t.id, draw(st.sampled_from(["ma", "mb"])), "", answer))
            for c in criteria:
                for g in [*graders, "judge"]:
                    if draw(st.integers(0, 5)) == 0:
                        continue  # no row at all
                    met = draw(st.none() | st.booleans())
                    level = None
                    if c.levels > 2 and draw(st.booleans()):
                        level = draw(st.integers(0, c.levels - 1))
                    kind = GraderKind.JUDGE if g == "judge" else GraderKind.HUMAN
                    judgments.append(Judgment(rid, c.id, g, kind, met=met, level=level))
                if c.auto is None and draw(st.integers(0, 6)) == 0:
                    level = draw(st.none() | st.integers(0, c.levels - 1))
                    adjudications.append(Adjudication(rid, c.id, draw(st.booleans()), "lead",
                                                      level=level))  # fmt: skip
    threshold = draw(st.sampled_from([0.1, 0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 1.0]))
    data = BenchmarkData(Benchmark("random", pass_threshold=threshold), tasks, responses, judgments)
    return data, adjudications


def _compare(actual: pd.DataFrame, expected: dict[str, dict[str, Any]]) -> None:
    assert actual["response_id"].tolist() == list(expected)
    for r in actual.to_dict("records"):
        exp = expected[r["response_id"]]
        if exp["score"] is None:
            assert math.isnan(r["score"])
            assert pd.isna(r["passed"])
        else:
            assert r["score"] == pytest.approx(float(exp["score"]), abs=1e-12)
            assert 0.0 <= r["score"] <= 1.0
            assert bool(r["passed"]) is exp["passed"]
        assert bool(r["complete"]) is exp["complete"]
        assert r["n_missing"] == exp["n_missing"]
        assert r["n_ties"] == exp["n_ties"]
        assert bool(r["undefined"]) is exp["undefined"]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(benchmarks(), st.sampled_from(["incomplete", "met", "not_met"]))
def test_response_scores_match_plain_python_reference(
    bench: tuple[BenchmarkData, list[Adjudication]], tie_policy: str
) -> None:
    data, adjudications = bench
    frames = frames_from_data(data, adjudications)
    stacked = all_grader_scores(frames, tie_policy=tie_policy)  # type: ignore[arg-type]
    graders = sorted({j.grader for j in data.judgments})
    assert stacked["grader"].unique().tolist() == [
        g for g in [CONSENSUS, *graders] if (stacked["grader"] == g).any()
    ]
    for grader in [CONSENSUS, *graders]:
        actual = stacked.loc[stacked["grader"] == grader]
        _compare(actual, reference_scores(data, adjudications, grader, tie_policy))
    # The single-grader entry point agrees with the stacked one.
    single = response_scores(frames, tie_policy=tie_policy)  # type: ignore[arg-type]
    _compare(single, reference_scores(data, adjudications, CONSENSUS, tie_policy))


@st.composite
def rubrics(draw: st.DrawFn) -> tuple[list[Criterion], dict[str, bool]]:
    n = draw(st.integers(1, 8))
    criteria = [crit(f"c{i}", draw(st.integers(-20, 20))) for i in range(n)]
    met = {c.id: draw(st.booleans()) for c in criteria}
    return criteria, met


@settings(max_examples=200, deadline=None)
@given(rubrics())
def test_score_in_unit_interval_and_monotone(
    rubric: tuple[list[Criterion], dict[str, bool]],
) -> None:
    criteria, met = rubric
    score = rubric_score(criteria, met)
    if not any(c.points > 0 for c in criteria):
        assert math.isnan(score)
        return
    assert 0.0 <= score <= 1.0
    for c in criteria:
        flipped = rubric_score(criteria, {**met, c.id: True})
        if c.points > 0 and not met[c.id]:
            assert flipped >= score  # meeting a positive criterion never lowers the score
        if c.points < 0 and not met[c.id]:
            assert flipped <= score  # meeting a penalty never raises it


@settings(max_examples=40, deadline=None)
@given(rubrics(), st.data())
def test_frame_scores_monotone(
    rubric: tuple[list[Criterion], dict[str, bool]], data: st.DataObject
) -> None:
    criteria, met = rubric
    positives = [c for c in criteria if c.points > 0 and not met[c.id]]
    if not positives:
        return
    target = data.draw(st.sampled_from(positives))
    t = task("T", *criteria)

    def score_with(verdicts: dict[str, bool]) -> float:
        frames = make([t], [resp("r", "T")], [hj("r", cid, "e", m) for cid, m in verdicts.items()])
        value = row(response_scores(frames, "e"), "r")["score"]
        assert 0.0 <= value <= 1.0
        assert value == pytest.approx(rubric_score(t.criteria, verdicts))
        return float(value)

    assert score_with({**met, target.id: True}) >= score_with(met)
