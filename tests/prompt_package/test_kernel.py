"""The exported judge's kernel grades as gradercal does.

* its messages are ``PromptTemplate.render``'s, for any texts (hypothesis), guidance and
  few-shot examples included;
* on the demo, its raw score of the judge's verdicts equals ``response_scores`` and its
  calibrated score equals ``apply_calibration`` for every calibration method, to 1e-12;
* the generated standalone source defines the same functions and gives the same
  results without importing gradercal.
"""

from __future__ import annotations

import ast
import math
import subprocess
import sys
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradercal.analysis.calibration import apply_calibration, fit_calibration
from gradercal.analysis.scoring import response_scores
from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from gradercal.judge.prompts import DEFAULT_PROMPT, PromptContext
from gradercal.prompt_package import kernel
from gradercal.prompt_package.card import decision_from_calibration
from gradercal.prompt_package.samples import rubric_items
from gradercal.prompt_package.standalone import kernel_source
from tests.conftest import DEMO

JUDGE = "judge-gpt"
GUIDED = DEFAULT_PROMPT.derive(
    user=DEFAULT_PROMPT.user + "\n\nGuidance:\n{{guidance}}\nTags: {{criterion_tags}}",
    options={
        **DEFAULT_PROMPT.options,
        "guidance": {
            "general": ["Judge the science, not the prose."],
            "tags": {"axis:accuracy": ["Numbers must match to two digits."]},
            "criteria": {"Names  the gene": ["A symbol alone counts."]},
        },
    },
    few_shot=(
        {
            "response": "It is TP53 {{criterion}}.",
            "criterion": "Names the gene",
            "points": 5,
            "criterion_tags": ["axis:accuracy"],
            "explanation": "Named.",
            "criteria_met": True,
        },
        {
            "response": "No idea.",
            "criterion": "Gives a dose",
            "points": -3,
            "task_prompt": "Dose?",
            "artifacts": "table: dose",
            "explanation": "None given.",
            "criteria_met": False,
        },
    ),
)


@pytest.fixture(scope="module")
def demo() -> Frames:
    return frames_from_data(read_path(DEMO))


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=60, deadline=None)
@given(
    response=_text | st.just("see {{criterion}} and {{ points }}"),
    criterion=_text.filter(lambda s: s.strip() != "") | st.just("Names the gene"),
    points=st.integers(-20, 20),
    task=_text,
    tags=st.lists(st.sampled_from(["axis:accuracy", "axis:safety", "x"]), max_size=3),
    artifacts=_text,
)
def test_messages_are_the_templates(
    response: str, criterion: str, points: int, task: str, tags: list[str], artifacts: str
) -> None:
    for prompt in (DEFAULT_PROMPT, GUIDED):
        ctx = PromptContext(response, criterion, points, task, tuple(tags), artifacts)
        expected = prompt.render(ctx)
        got = kernel.build_messages(
            prompt.to_dict(),
            response=response,
            criterion=criterion,
            points=points,
            task_prompt=task,
            tags=tags,
            artifacts=artifacts,
        )
        assert got == expected


def _verdicts(frames: Frames, judge: str) -> dict[str, dict[str, tuple[Any, ...]]]:
    j = frames.judgments.loc[frames.judgments["grader"] == judge]
    out: dict[str, dict[str, tuple[Any, ...]]] = {}
    for r in j.to_dict("records"):
        met = None if pd.isna(r["met"]) else bool(r["met"])
        conf = None if pd.isna(r["confidence"]) else float(r["confidence"])
        p_met = None if conf is None or met is None else (conf if met else 1.0 - conf)
        level = None if pd.isna(r["level"]) else int(r["level"])
        out.setdefault(str(r["response_id"]), {})[str(r["criterion_id"])] = (met, p_met, level)
    return out


def _scores(frames: Frames, decision: dict[str, Any]) -> dict[str, dict[str, Any]]:
    verdicts = _verdicts(frames, JUDGE)
    rubrics = {
        t: kernel.criteria_of(rubric_items(g)) for t, g in frames.criteria.groupby("task_id")
    }
    out = {}
    for r in frames.responses.itertuples(index=False):
        if str(r.response_id) not in verdicts:
            continue
        out[str(r.response_id)] = kernel.decide(
            decision, rubrics[r.task_id], verdicts[str(r.response_id)], answer=r.answer
        )
    return out


def test_raw_scores_equal_gradercal(demo: Frames) -> None:
    got = _scores(demo, decision_from_calibration(None, demo.pass_threshold))
    ref = response_scores(demo, JUDGE).set_index("response_id")
    assert set(got) == set(ref.index) and len(got) == 30
    for rid, res in got.items():
        want = float(ref.loc[rid, "score"])
        assert (math.isnan(want) and math.isnan(res["raw_score"])) or res[
            "raw_score"
        ] == pytest.approx(want, abs=1e-12)
        assert res["score"] == res["raw_score"]
        assert res["passed"] == bool(ref.loc[rid, "passed"])
    # The demo exercises penalties and auto criteria.
    assert (demo.criteria["points"] < 0).any() and (demo.criteria["kind"] == "auto").any()


@pytest.mark.parametrize("method", ["threshold", "leniency", "isotonic", "platt"])
def test_calibrated_scores_equal_apply_calibration(demo: Frames, method: str) -> None:
    fit = fit_calibration(demo, JUDGE, method, n_boot=0)  # type: ignore[arg-type]
    if method == "threshold":  # make the threshold bite: some verdicts change
        fit.params["threshold"] = 0.83
        fit.params["group_thresholds"] = {"axis:accuracy": 0.9}
        fit.params["groups"] = sorted({*fit.params.get("groups", []), "axis:accuracy"})
        fit.params["sklearn_params"]["per_group"] = True  # group thresholds only then
    saved = {"method": method, "params": fit.params, "id": 1, "version": 1}
    decision = decision_from_calibration(saved, demo.pass_threshold)
    got = _scores(demo, decision)
    ref = apply_calibration(demo, JUDGE, dict(fit.params)).set_index("response_id")
    changed = 0
    for rid, res in got.items():
        want = float(ref.loc[rid, "score"])
        if math.isnan(want):
            assert math.isnan(res["score"])
            continue
        assert res["score"] == pytest.approx(want, abs=1e-12), rid
        changed += res["score"] != res["raw_score"]
    assert changed > 0  # the calibration does something on the demo


def test_standalone_source_is_gradercal_code_without_gradercal(demo: Frames, tmp_path: Any) -> None:
    src = kernel_source()
    tree = ast.parse(src)
    imported = {
        (n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
    } | {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}
    defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    assert len(defined) == len(set(defined))  # no name defined twice by the concatenation
    # Run it in a fresh interpreter that cannot import gradercal.
    path = tmp_path / "kernel_alone.py"
    path.write_text(
        src
        + "\nimport json, sys\n"
        + "assert 'gradercal' not in sys.modules\n"
        + "crit = criteria_of(json.loads(sys.argv[1]))\n"
        + "res = decide({'rule': 'verdict', 'pass_threshold': 0.7}, crit, "
        + "{'a': (True, 0.9), 'b': (False, None)}, answer={'kd': 4.0})\n"
        + "print(json.dumps(res))\n",
        "utf-8",
    )
    rubric = [
        {"id": "a", "criterion": "A", "points": 6, "levels": 3},
        {"id": "b", "criterion": "B", "points": -2},
        {
            "id": "k",
            "criterion": "kd",
            "points": 4,
            "auto": {"key": "kd", "target": 4.1, "abs_tol": 0.2},
        },
    ]
    import json

    out = subprocess.run(
        [sys.executable, "-I", str(path), json.dumps(rubric)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    res = json.loads(out.stdout)
    assert res["raw_score"] == pytest.approx(1.0)  # (6 + 4) / 10, the penalty not met
    ref = kernel.decide(
        {"rule": "verdict", "pass_threshold": 0.7},
        kernel.criteria_of(rubric),
        {"a": (True, 0.9), "b": (False, None)},
        answer={"kd": 4.0},
    )
    assert res == ref
