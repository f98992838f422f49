"""gradercal.analysis.impact: a hand-worked benchmark, agreement with gradercal.analysis.scoring, and the
coverage of the task-clustered intervals of score differences in repeated simulations."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gradercal.analysis.impact import impact_report, paired_scores, summarize_paired
from gradercal.analysis.scoring import model_summary, response_scores
from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from tests.conftest import DEMO, write_jsonl

# Consensus (three experts, unanimous) and judge verdicts, per response and criterion.
# T1: c1 5 pts, c2 3, c3 2; T2: c1 6, c2 4; T3: c1 10 (every task 10 positive points).
CONSENSUS = {
    "T1-A": {"c1": True, "c2": True, "c3": False},  # 8/10 = 0.8 pass
    "T1-B": {"c1": True, "c2": False, "c3": False},  # 0.5 fail, partial credit
    "T2-A": {"c1": True, "c2": True},  # 1.0 pass
    "T2-B": {"c1": False, "c2": True},  # 0.4 fail
    "T3-A": {"c1": True},  # 1.0 pass
    "T3-B": {"c1": False},  # 0.0 fail
}
JUDGE = {
    "T1-A": {"c1": True, "c2": True, "c3": True},  # 1.0 pass
    "T1-B": {"c1": True, "c2": True, "c3": False},  # 0.8 pass: flip fail→pass
    "T2-A": {"c1": True, "c2": False},  # 0.6 fail: flip pass→fail, partial credit
    "T2-B": {"c1": False, "c2": True},  # 0.4 fail
    "T3-A": {"c1": True},  # 1.0 pass
    "T3-B": {"c1": False},  # 0.0 fail
}
POINTS = {"T1": {"c1": 5, "c2": 3, "c3": 2}, "T2": {"c1": 6, "c2": 4}, "T3": {"c1": 10}}
WORKFLOW = {"T1": "analysis", "T2": "design", "T3": "analysis"}


def build(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "benchmark.json").write_text(
        json.dumps({"name": "impact", "pass_threshold": 0.7, "format_version": 1}), "utf-8"
    )
    write_jsonl(
        folder / "tasks.jsonl",
        [
            {
                "id": t,
                "prompt": f"Task {t}",
                "workflow": WORKFLOW[t],
                "domain": "chemistry" if t != "T1" else "biology",
                "rubric": [
                    {"id": c, "criterion": f"{t} {c}", "points": p} for c, p in crit.items()
                ],
            }
            for t, crit in POINTS.items()
        ],
    )
    write_jsonl(
        folder / "responses.jsonl",
        [{"id": r, "task_id": r[:2], "model": r[3:], "text": "…"} for r in CONSENSUS],
    )
    rows = []
    for r, crit in CONSENSUS.items():
        for c, met in crit.items():
            for h in ("h1", "h2", "h3"):
                rows.append(
                    {
                        "response_id": r,
                        "criterion_id": c,
                        "grader": h,
                        "grader_kind": "human",
                        "met": met,
                    }
                )
            rows.append(
                {
                    "response_id": r,
                    "criterion_id": c,
                    "grader": "judge",
                    "grader_kind": "judge",
                    "met": JUDGE[r][c],
                    "confidence": 0.9,
                }
            )
    write_jsonl(folder / "judgments.jsonl", rows)
    return folder


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Frames:
    return frames_from_data(read_path(build(tmp_path_factory.mktemp("impact") / "bench")))


def _v(fig: dict) -> float:
    return fig["value"]


def test_hand_worked(bench: Frames) -> None:
    rep = impact_report(bench, "judge", n_boot=0)
    assert rep["n_paired"] == 6 and rep["n_unpaired"] == 0
    a, b = rep["models"]
    assert a["model"] == "A" and b["model"] == "B"
    # model A: experts (0.8 + 1 + 1)/3, judge (1 + 0.6 + 1)/3
    assert _v(a["consensus"]["mean_score"]) == pytest.approx(2.8 / 3)
    assert _v(a["judge"]["mean_score"]) == pytest.approx(2.6 / 3)
    assert _v(a["judge_minus_consensus"]["mean_score"]) == pytest.approx(-0.2 / 3)
    assert _v(a["consensus"]["pass_rate"]) == 1.0
    assert _v(a["judge"]["pass_rate"]) == pytest.approx(2 / 3)
    assert _v(a["judge"]["partial_credit_rate"]) == pytest.approx(1 / 3)  # T2-A: 0.6
    # model B: experts (0.5 + 0.4 + 0)/3 = 0.3, judge (0.8 + 0.4 + 0)/3 = 0.4
    assert _v(b["consensus"]["mean_score"]) == pytest.approx(0.3)
    assert _v(b["judge"]["mean_score"]) == pytest.approx(0.4)
    assert _v(b["judge_minus_consensus"]["pass_rate"]) == pytest.approx(1 / 3)
    assert _v(b["consensus"]["partial_credit_rate"]) == pytest.approx(1 / 3)  # T1-B: exactly 0.5
    # all six: judge (2.6 + 1.2)/6, experts (2.8 + 0.9)/6 → difference 0.1/6
    assert _v(rep["overall"]["judge_minus_consensus"]["mean_score"]) == pytest.approx(0.1 / 6)
    assert [(f["response_id"], f["direction"]) for f in rep["flips"]] == [
        ("T2-A", "pass→fail"),
        ("T1-B", "fail→pass"),
    ]
    assert rep["n_flips"] == {"judge": 1 + 1}
    wf = {(r["model"], r["group"]): r for r in rep["breakdowns"]["workflow"]}
    # analysis = T1 and T3: model A experts (0.8 + 1)/2, judge (1 + 1)/2
    assert _v(wf[("A", "analysis")]["consensus"]["mean_score"]) == pytest.approx(0.9)
    assert _v(wf[("A", "analysis")]["judge"]["mean_score"]) == pytest.approx(1.0)
    assert wf[("B", "design")]["n_responses"] == 1
    arts = {r["group"] for r in rep["breakdowns"]["artifacts"]}
    assert arts == {"text-only"}
    assert {r["group"] for r in rep["breakdowns"]["answer_format"]} == {"(none)"}


def test_calibrated_column_and_unpaired(bench: Frames) -> None:
    cal = pd.DataFrame({"response_id": list(CONSENSUS), "score": [0.8, 0.5, 1.0, 0.4, 1.0, np.nan]})
    rep = impact_report(bench, "judge", calibrated=cal, n_boot=0, breakdowns=())
    assert rep["graders"] == ["consensus", "judge", "calibrated"]
    assert rep["n_paired"] == 5 and rep["n_unpaired"] == 1  # T3-B has no calibrated score
    b = rep["models"][1]
    assert _v(b["calibrated_minus_consensus"]["mean_score"]) == pytest.approx(0.0)
    assert rep["n_flips"]["calibrated"] == 0


def test_matches_scoring_on_the_demo() -> None:
    demo = frames_from_data(read_path(DEMO))
    rep = impact_report(demo, "judge-gpt", n_boot=300, seed=3)
    t, _ = paired_scores(demo, "judge-gpt")
    for grader, col in (("consensus", "consensus"), ("judge-gpt", "judge")):
        summ = model_summary(response_scores(demo, grader), demo).set_index("model")
        for row in rep["models"]:
            assert _v(row[col]["mean_score"]) == pytest.approx(
                summ.loc[row["model"], "mean_score"], abs=1e-15
            )
            assert _v(row[col]["pass_rate"]) == pytest.approx(
                summ.loc[row["model"], "pass_rate"], abs=1e-15
            )
    assert len(t) == 30
    overall = rep["overall"]["judge_minus_consensus"]["mean_score"]
    assert overall["ci"][0] < overall["value"] < overall["ci"][1]
    assert "clusters" not in (overall["note"] or "")  # 10 tasks: no warning (FEW_CLUSTERS)


def test_difference_intervals_cover_in_repeated_simulations() -> None:
    """95% intervals of the judge-minus-experts mean score difference cover the true bias
    in 93–97% of 1500 simulated studies of 150 tasks (task effects shared by the experts
    and the judge; the judge adds a bias of +0.05, a per-task error and noise).

    Studies are simulated 100 at a time as 100 "models" of one table: the tasks are
    resampled jointly, which leaves each model's bootstrap distribution — and so each
    interval — exactly what it would be alone; 15 tables use 15 different seeds."""
    rng = np.random.default_rng(8)
    bias, per, n_tasks = 0.05, 100, 150
    hits = total = 0
    for k in range(15):
        study = np.repeat(np.arange(per), n_tasks)
        task_effect = rng.normal(0, 0.15, per * n_tasks)
        cons = 0.5 + task_effect + rng.normal(0, 0.1, per * n_tasks)
        judge = (
            cons + bias + rng.normal(0, 0.05, per * n_tasks) + rng.normal(0, 0.05, per * n_tasks)
        )
        table = pd.DataFrame(
            {
                "task_id": np.tile(np.arange(n_tasks), per),
                "model": [f"study-{x:03d}" for x in study],
                "consensus": cons,
                "judge": judge,
            }
        )
        for row in summarize_paired(table, n_boot=1000, seed=k):
            d = row["judge_minus_consensus"]["mean_score"]
            assert row["n_tasks"] == n_tasks
            hits += d["ci"][0] <= bias <= d["ci"][1]
            total += 1
    assert total == 1500
    assert 0.93 <= hits / total <= 0.97, hits / total


def test_summarize_paired_names_the_reference() -> None:
    t = pd.DataFrame(
        {"task_id": [1, 2], "model": ["m", "m"], "human": [0.5, 0.9], "llm": [0.6, 0.7]}
    )
    (row,) = summarize_paired(t, ("human", "llm"), n_boot=0)
    assert row["llm_minus_human"]["mean_score"]["value"] == pytest.approx(-0.05)
    assert row["human"]["pass_rate"]["value"] == 0.5
