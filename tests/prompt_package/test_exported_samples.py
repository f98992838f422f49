"""A judge run with ``--samples K``, exported: the Inspect AI and promptfoo judges ask K
times per criterion and combine the replies as gradercal's runner does (#32).

The loopback server gives no log-probabilities (``logprobs_ignored``) and, at temperature
> 0, flips every third repeat of the same request (``vote_flip_period=3``): with K = 3
every criterion gets two votes for the keyword rule's verdict and one against, so the known
truth is the rule's verdict with P(met) = 2/3 when met, 1/3 when not (self-consistency),
exactly what :func:`gradercal.judge.request.combine_samples` — the runner's own
aggregation (:func:`gradercal.judge.runner.aggregate`) — gives. With one sample, the same
server leaves every verdict without a confidence.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from gradercal.judge.client import JudgeParams
from gradercal.judge.prompts import DEFAULT_PROMPT
from gradercal.judge.request import combine_samples
from gradercal.prompt_package import build_package, to_inspect, to_promptfoo
from gradercal.prompt_package.package import PromptPackage
from tests.prompt_package.test_exported_server_kinds import (
    KEY,
    MODEL,
    RESPONSES,
    RUBRIC,
    _promptfoo,
)
from tests.support.judge_server import JudgeServer, expected_met, server_kind

K = 3


def _package(samples: int) -> PromptPackage:
    params = JudgeParams(model=MODEL, temperature=0.7, samples=samples)
    return build_package(
        judge={"name": "j", "model": MODEL, "parameters": params.to_dict()},
        base_prompt=DEFAULT_PROMPT,
        benchmark="tiny",
        notes=[],
        adjudicated=[],
        calibration=None,
        card={"notes": []},
        pass_threshold=0.6,
        n_examples=0,
    )


def _samples() -> list[dict[str, Any]]:
    return [
        {
            "id": rid,
            "input": "Which gene, and why?",
            "target": "",
            "metadata": {
                "task_id": "T1",
                "response_id": rid,
                "model": "m",
                "response": text,
                "answer": None,
                "artifacts": "",
                "rubric": RUBRIC,
            },
        }
        for rid, text in RESPONSES.items()
    ]


def _server() -> JudgeServer:
    return JudgeServer(server_kind("logprobs_ignored", latency=0.01, vote_flip_period=K))


def _check(got: dict[str, dict[str, Any]], srv: JudgeServer, samples: int) -> None:
    assert set(got) == set(RESPONSES)
    for rid, meta in got.items():
        assert meta["complete"] and meta["samples"] == samples, meta
        for entry in meta["criteria"]:
            criterion = next(c["criterion"] for c in RUBRIC if c["id"] == entry["id"])
            truth = expected_met(criterion, RESPONSES[rid])
            assert entry["met"] is truth, (rid, entry)
            if samples == 1:
                assert entry["p_met"] is None, (rid, entry)
            else:
                assert entry["p_met"] == pytest.approx(2 / 3 if truth else 1 / 3), (rid, entry)
        assert meta["without_confidence"] == (len(RUBRIC) if samples == 1 else 0)
    # K requests per criterion, each the same body (the server flips every K-th repeat)
    per_body = Counter(json.dumps(b["messages"], sort_keys=True) for b in srv.stats.bodies)
    assert len(per_body) == len(RESPONSES) * len(RUBRIC)
    assert set(per_body.values()) == {samples}


def test_combine_samples_is_the_runners_rule() -> None:
    assert combine_samples([(True, None), (True, None), (False, None)]) == (True, 2 / 3, "samples")
    assert combine_samples([(False, None), (True, None)]) == (False, 0.5, "samples")
    assert combine_samples([(True, 0.8), (False, 0.4)]) == (True, pytest.approx(0.6), "logprobs")
    assert combine_samples([(True, None)]) == (True, None, None)
    assert combine_samples([(None, None), (False, None)]) == (False, None, None)
    assert combine_samples([(None, None)]) == (None, None, None)


@pytest.mark.slow
@pytest.mark.parametrize("samples", [K, 1])
def test_inspect_eval_takes_k_samples_with_the_runners_confidence(
    samples: int, tmp_path: Path
) -> None:
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    module = tmp_path / "gc_judge.py"
    module.write_text(to_inspect(_package(samples)), "utf-8")
    data = tmp_path / "samples.jsonl"
    data.write_text("".join(json.dumps(s) + "\n" for s in _samples()), "utf-8")
    logs = tmp_path / "logs"
    with _server() as srv:
        env = dict(os.environ, LOOP_BASE_URL=srv.base_url, LOOP_API_KEY=KEY)
        proc = subprocess.run(
            [
                str(Path(sys.executable).with_name("inspect")), "eval",
                f"{module}@gradercal_grading", "--model", f"openai-api/loop/{MODEL}",
                "-T", f"samples={data}", "--log-dir", str(logs), "--log-format", "json",
                "--display", "none", "--max-connections", "8",
            ],
            env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        (path,) = logs.glob("*.json")
        log = read_eval_log(str(path))
        assert log.status == "success", log.error
        got = {}
        for s in log.samples or []:
            (score,) = (s.scores or {}).values()
            got[str(s.id)] = dict(score.metadata or {})
        _check(got, srv, samples)


@pytest.mark.slow
@pytest.mark.parametrize("samples", [K, 1])
def test_promptfoo_eval_takes_k_samples_with_the_runners_confidence(
    samples: int, tmp_path: Path
) -> None:
    exe = _promptfoo()
    files = to_promptfoo(_package(samples), _samples(), stem="gc_judge")
    for name, text in files.items():
        (tmp_path / name).write_text(text, "utf-8")
    state = tmp_path / "promptfoo-state"
    out = tmp_path / "out.json"
    with _server() as srv:
        env = dict(
            os.environ, OPENAI_BASE_URL=srv.base_url, OPENAI_API_KEY=KEY,
            PROMPTFOO_PYTHON=sys.executable, PROMPTFOO_CONFIG_DIR=str(state),
            PROMPTFOO_LOG_DIR=str(state / "logs"), PROMPTFOO_CACHE_PATH=str(state / "cache"),
            PROMPTFOO_DISABLE_TELEMETRY="1", PROMPTFOO_DISABLE_UPDATE="1",
            TMPDIR=str(tmp_path), NO_PROXY="127.0.0.1,localhost",
        )  # fmt: skip
        proc = subprocess.run(
            [exe, "eval", "-c", str(tmp_path / "gc_judge.yaml"), "-o", str(out), "--no-cache",
             "--no-write", "-j", "4"],
            env=env, capture_output=True, text=True, timeout=900, cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode in (0, 100), (proc.stdout[-2000:], proc.stderr[-3000:])
        results = json.loads(out.read_text("utf-8"))["results"]["results"]
        got = {
            str(r["vars"]["sample"]["response_id"]): r["gradingResult"]["componentResults"][0][
                "metadata"
            ]
            for r in results
        }
        _check(got, srv, samples)
