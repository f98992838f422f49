"""The Inspect AI form of the calibrated judge prompt: the module loads and scores.

The generated module is imported from a file and run by ``inspect_ai.eval`` on a tiny
task; the model under test and the grader are inspect_ai's ``mockllm/model`` with
deterministic replies (the grader applies the keyword rule of ``tests/support/judge_server.py``),
so the expected rubric scores are computed here independently.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gradercal.judge.prompts import DEFAULT_PROMPT
from gradercal.prompt_package import (
    AdjudicatedItem,
    ExpertNote,
    PromptPackage,
    build_package,
    to_inspect,
)
from tests.support.judge_server import expected_met, split_prompt

inspect_ai = pytest.importorskip("inspect_ai")

RUBRIC = [
    {"id": "c1", "criterion": "Names the tumour suppressor gene", "points": 5,
     "tags": ["axis:accuracy"]},
    {"id": "c2", "criterion": "Mentions haploinsufficiency", "points": 3,
     "tags": ["axis:completeness"]},
    {"id": "c3", "criterion": "Recommends an untested supplement", "points": -4,
     "tags": ["axis:safety"]},
]  # fmt: skip
RESPONSES = {
    "Q1": "The suppressor gene is TP53; haploinsufficiency explains the phenotype.",
    "Q2": "Everyone recommends a daily supplement; the mechanism is unclear.",
}
GUIDED = "Names the tumour suppressor gene"
NOTE = "A gene symbol alone (e.g. TP53) is enough."


def _package(threshold: float) -> PromptPackage:
    notes = [
        ExpertNote("unclear", "T1", "c1", "r1", GUIDED, ("axis:accuracy",), "ana", NOTE),
    ]
    adjudicated = [
        AdjudicatedItem(
            task_id=f"T{i}", response_id=f"r{i}", criterion_id="c1", criterion=f"Criterion {i}",
            points=2, tags=(f"axis:t{i}",), task_prompt="Explain.", response=f"Answer {i}",
            met=i % 2 == 0, experts={"ana": True, "ben": False}, judge_met=i % 2 == 1,
        )
        for i in range(6)
    ]  # fmt: skip
    calibration = {
        "id": 1,
        "method": "threshold",
        "version": 1,
        "active": True,
        "created_at": "2026-01-01T00:00:00",
        "params": {"method": "threshold", "threshold": threshold, "group_thresholds": {}},
        "split": {"folds": {f"T{i}": i % 2 for i in range(6)}},
        "metrics": {"level": "criterion"},
    }
    return build_package(
        judge={"name": "j", "model": "mock"},
        base_prompt=DEFAULT_PROMPT,
        benchmark="tiny",
        notes=notes,
        adjudicated=adjudicated,
        calibration=calibration,
        card={"notes": []},
        pass_threshold=0.6,
        n_examples=2,
    )


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _offline(output: Any) -> Any:
    """Give the reply its token usage, so mockllm need not fetch a tokenizer from the web."""
    from inspect_ai.model import ModelUsage

    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output


def _expected(response: str) -> float:
    """Rubric score by hand: met points over positive points, clipped to [0, 1]."""
    earned = sum(c["points"] for c in RUBRIC if expected_met(str(c["criterion"]), response))
    positive = sum(int(c["points"]) for c in RUBRIC if int(c["points"]) > 0)  # type: ignore[call-overload]
    return min(1.0, max(0.0, earned / positive))


def test_inspect_module_loads_and_scores_on_mockllm(tmp_path: Path) -> None:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, get_model
    from inspect_ai.solver import generate

    package = _package(threshold=0.5)
    path = tmp_path / "gc_judge_scorer.py"
    path.write_text(to_inspect(package), "utf-8")
    module = _load(path, "gc_judge_scorer")
    assert package.prompt_version == module.PROMPT_VERSION

    calls: list[list[Any]] = []

    def grade(messages: list[Any], *_args: Any) -> Any:
        calls.append(messages)
        response, criterion = split_prompt(messages[-1].text)
        met = expected_met(criterion, response)
        reply = json.dumps({"explanation": "keyword rule", "criteria_met": met})
        return _offline(ModelOutput.from_content(model="mockllm/model", content=reply))

    def answer(messages: list[Any], *_args: Any) -> Any:
        text = RESPONSES[messages[-1].text]
        return _offline(ModelOutput.from_content(model="mockllm/model", content=text))

    grader = get_model("mockllm/model", custom_outputs=grade, memoize=False)
    subject = get_model("mockllm/model", custom_outputs=answer, memoize=False)
    task = Task(
        dataset=[Sample(input=q, target="", metadata={"rubric": RUBRIC}, id=q) for q in RESPONSES],
        solver=generate(),
        scorer=module.gradercal_judge(model=grader),
    )
    logs = inspect_eval(task, model=subject, log_dir=str(tmp_path / "logs"), display="none")
    assert logs[0].status == "success", logs[0].error
    samples = {s.id: s for s in logs[0].samples or []}
    assert set(samples) == set(RESPONSES)
    for q, response in RESPONSES.items():
        score = next(iter(samples[q].scores.values()))  # type: ignore[union-attr]
        assert score.value == pytest.approx(_expected(response))
        assert score.metadata["prompt_version"] == package.prompt_version
        assert score.metadata["passed"] is (_expected(response) >= 0.6)
    # Q1 meets both positive criteria (score 1); Q2 only the penalty (score 0)
    assert [_expected(RESPONSES[q]) for q in ("Q1", "Q2")] == [1.0, 0.0]
    # each grading request: system, 2 few-shot pairs, the question; guidance where it applies
    assert len(calls) == len(RESPONSES) * len(RUBRIC)
    assert all(len(c) == 1 + 2 * 2 + 1 for c in calls)
    guided = [c for c in calls if split_prompt(c[-1].text)[1] == GUIDED]
    assert len(guided) == 2 and all(NOTE in c[-1].text for c in guided)
    assert not any(NOTE in c[-1].text for c in calls if c not in guided)


def test_inspect_module_applies_the_threshold_and_refuses_edits(tmp_path: Path) -> None:
    # A threshold above 1 turns every "met" into "not met": only the penalty stays out.
    strict = _load_text(tmp_path, to_inspect(_package(threshold=1.5)), "gc_strict")
    crit = strict.criteria_of(RUBRIC)
    all_met = {c["id"]: (True, 0.99) for c in RUBRIC}
    assert strict.decide(strict._DECISION, crit, all_met)["score"] == 0.0
    normal = _load_text(tmp_path, to_inspect(_package(threshold=0.5)), "gc_normal")
    res = normal.decide(normal._DECISION, crit, all_met)
    assert res["raw_score"] == pytest.approx(4 / 8) and res["score"] == pytest.approx(4 / 8)
    low = {"c1": (True, 0.4), "c2": (True, 0.9), "c3": (False, 0.1)}
    assert normal.decide(normal._DECISION, crit, low)["score"] == pytest.approx(3 / 8)
    assert normal.read_reply('noise {"criteria_met": false, "explanation": "x"}')[0] is False
    assert normal.read_reply("no json")[0] is None
    package = _package(threshold=0.5)
    text = to_inspect(package)
    at = text.index("PACKAGE_JSON = (")
    edited = text[:at] + text[at:].replace("grader", "Grader", 1)  # inside the prompt
    assert edited != text
    with pytest.raises(RuntimeError, match="the embedded prompt was edited"):
        _load_text(tmp_path, edited, "gc_edited")


def _load_text(tmp_path: Path, text: str, name: str) -> ModuleType:
    path = tmp_path / f"{name}.py"
    path.write_text(text, "utf-8")
    return _load(path, name)


def test_gradercal_core_does_not_import_inspect_ai() -> None:
    import subprocess

    code = (
        "import sys, gradercal.prompt_package, gradercal.cli.prompt; "
        "print('inspect_ai' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
