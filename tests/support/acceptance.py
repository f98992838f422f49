"""A small benchmark for acceptance rounds, with hand-countable agreement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gradercal.db.grading import GradingStore
from gradercal.db.session import Database
from tests.conftest import write_jsonl

BENCH = "acc"
AGREE = {"real_research": 5, "reasoning_skill": 4, "grounded": 4, "strong_task": 5}


def write_acceptance_benchmark(folder: Path) -> Path:
    """Three tasks, ten two-level criteria each, one response each.

    * T1: ana, ben and cleo agree on c1…c9 (all met); on c10 ana and ben say met, cleo
      not met.
    * T2: ana and ben; ben says not met on c9 and c10 (agree on 8 of 10).
    * T3: nobody has graded it.
    """
    folder.mkdir(parents=True)
    (folder / "benchmark.json").write_text(f'{{"name": "{BENCH}", "pass_threshold": 0.7}}')
    tasks, responses, judgments = [], [], []
    for t, (workflow, domain) in {
        "T1": ("analysis", "genomics"),
        "T2": ("analysis", "pharmacology"),
        "T3": ("design", "genomics"),
    }.items():
        tasks.append(
            {
                "id": t,
                "prompt": f"Task {t}",
                "workflow": workflow,
                "domain": domain,
                "rubric": [
                    {"id": f"c{i}", "criterion": f"criterion {i}", "points": 1}
                    for i in range(1, 11)
                ],
            }
        )
        responses.append({"id": f"{t}-a", "task_id": t, "model": "alpha", "text": "answer"})
    for i in range(1, 11):
        for grader in ("ana", "ben", "cleo"):
            met = not (grader == "cleo" and i == 10)
            judgments.append(_j("T1-a", i, grader, met))
        for grader in ("ana", "ben"):
            met = not (grader == "ben" and i >= 9)
            judgments.append(_j("T2-a", i, grader, met))
    judgments.append(
        {"response_id": "T1-a", "criterion_id": "c10", "grader": "judge-x", "met": False}
        | {"grader_kind": "judge"}
    )
    write_jsonl(folder / "tasks.jsonl", tasks)
    write_jsonl(folder / "responses.jsonl", responses)
    write_jsonl(folder / "judgments.jsonl", judgments)
    return folder


def _j(response: str, i: int, grader: str, met: bool) -> dict[str, Any]:
    return {
        "response_id": response,
        "criterion_id": f"c{i}",
        "grader": grader,
        "grader_kind": "human",
        "met": met,
    }


def survey(db: Database, task: str, graders: tuple[str, ...], answers: dict[str, int]) -> None:
    store = GradingStore(db)
    for g in graders:
        store.save_task_review(g, BENCH, task, answers, None)
