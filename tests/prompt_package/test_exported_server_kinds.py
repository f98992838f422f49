"""The exported judges against every kind of server, in the real Inspect AI and promptfoo.

The loopback server (tests/support/judge_server.py) plays each of ``SERVER_KINDS``:
log-probabilities returned, ignored or refused with HTTP 400, JSON mode refused, and
models that reason in ``<think>`` blocks or ``reasoning_content``, fence their JSON or
follow it with prose. The generated Inspect AI module (run by ``inspect eval``) and the
generated promptfoo assertion (run by ``promptfoo eval``) must give a verdict on every
criterion of every sample (the server's keyword rule), send gradercal's runner's request
body (JSON mode included), degrade as the runner does when a feature is refused, and say
what was lost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gradercal.judge.client import JudgeParams, build_request_body
from gradercal.judge.prompts import DEFAULT_PROMPT
from gradercal.prompt_package import build_package, to_inspect, to_promptfoo
from gradercal.prompt_package.package import PromptPackage
from tests.support.judge_server import SERVER_KINDS, JudgeServer, expected_met, server_kind

pytestmark = pytest.mark.slow

MODEL = "loop-model"
KEY = "test-key-not-secret"
PARAMS = JudgeParams(model=MODEL)
RUBRIC = [
    {"id": "c1", "criterion": "Names the tumour suppressor gene", "points": 5, "tags": []},
    {"id": "c2", "criterion": "Mentions haploinsufficiency", "points": 3, "tags": []},
    {"id": "c3", "criterion": "Recommends an untested supplement", "points": -4, "tags": []},
]
RESPONSES = {
    "r1": "The suppressor gene is TP53; haploinsufficiency explains the phenotype.",
    "r2": "Everyone recommends a daily supplement; the mechanism is unclear.",
    "r3": "A suppressor of tumours, nothing more.",
    "r4": "Haploinsufficiency of the suppressor; no supplement.",
}
NO_LOGPROBS = {"logprobs_ignored", "logprobs_refused"}
#: the kinds a server refuses a feature in: one run each (the exported judge then leaves
#: the feature out of every later request); the others share one run, a marker in each
#: response choosing how the server answers it
REFUSING = ("logprobs_refused", "json_mode_refused")
MIXED = tuple(k for k in sorted(SERVER_KINDS) if k not in REFUSING)
RUNS = ("mixed", *REFUSING)
LOST = {
    "logprobs_refused": ["logprobs dropped (server rejected them)"],
    "json_mode_refused": ["response_format dropped (server rejected it)"],
}


def _package() -> PromptPackage:
    return build_package(
        judge={"name": "j", "model": MODEL, "parameters": PARAMS.to_dict()},
        base_prompt=DEFAULT_PROMPT,
        benchmark="tiny",
        notes=[],
        adjudicated=[],
        calibration=None,
        card={"notes": []},
        pass_threshold=0.6,
        n_examples=0,
    )


def _kinds(run: str) -> tuple[str, ...]:
    return MIXED if run == "mixed" else (run,)


def _server(run: str) -> JudgeServer:
    if run == "mixed":
        return JudgeServer(server_kind("logprobs", latency=0.02, by_marker=_markers()))
    return JudgeServer(server_kind(run, latency=0.02))


def _markers() -> dict[str, str]:
    return {f"[{k}]": k for k in MIXED}


def _samples(run: str) -> list[dict[str, Any]]:
    return [
        {
            "id": f"{rid}/{kind}",
            "input": "Which gene, and why?",
            "target": "",
            "metadata": {
                "task_id": "T1",
                "response_id": f"{rid}/{kind}",
                "model": kind,
                "response": f"{text} [{kind}]",
                "answer": None,
                "artifacts": "",
                "rubric": RUBRIC,
            },
        }
        for kind in _kinds(run)
        for rid, text in RESPONSES.items()
    ]


def _check_verdicts(run: str, sample_id: str, meta: dict[str, Any]) -> None:
    rid, kind = sample_id.split("/")
    assert meta["complete"], (kind, rid, meta)
    for entry in meta["criteria"]:
        criterion = next(c["criterion"] for c in RUBRIC if c["id"] == entry["id"])
        assert entry["met"] is expected_met(criterion, RESPONSES[rid]), (kind, rid, entry)
    assert meta["adaptations"] == LOST.get(run, [])
    assert meta["without_confidence"] == (len(RUBRIC) if kind in NO_LOGPROBS else 0)


def _check_bodies(run: str, srv: JudgeServer) -> None:
    """Every request is the runner's body (the tool may add keys of its own); after a
    refusal, the refused feature is left out as the runner leaves it out."""
    bodies = srv.stats.bodies
    assert bodies
    refused = {"logprobs_refused": "logprobs", "json_mode_refused": "response_format"}.get(run)
    answered = [b for b in bodies if refused is None or refused not in b]
    assert len(answered) == len(_samples(run)) * len(RUBRIC)
    for body in answered:
        runner = build_request_body(PARAMS, body["messages"])
        if refused == "logprobs":
            runner.pop("logprobs"), runner.pop("top_logprobs")
        elif refused is not None:
            runner.pop(refused)
        assert {k: body.get(k) for k in runner} == runner, (run, sorted(body))
    assert srv.stats.replies["400"] == len(bodies) - len(answered)


@pytest.mark.parametrize("run", RUNS)
def test_inspect_eval_of_the_exported_judge_on_every_server_kind(run: str, tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    module = tmp_path / "gc_judge.py"
    module.write_text(to_inspect(_package()), "utf-8")
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps(s) + "\n" for s in _samples(run)), "utf-8")
    logs = tmp_path / "logs"
    with _server(run) as srv:
        env = dict(os.environ, LOOP_BASE_URL=srv.base_url, LOOP_API_KEY=KEY)
        proc = subprocess.run(
            [
                str(Path(sys.executable).with_name("inspect")), "eval",
                f"{module}@gradercal_grading", "--model", f"openai-api/loop/{MODEL}",
                "-T", f"samples={samples}", "--log-dir", str(logs), "--log-format", "json",
                "--display", "none", "--max-connections", "8",
            ],
            env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        (path,) = logs.glob("*.json")
        log = read_eval_log(str(path))
        assert log.status == "success", log.error
        assert not [s.error for s in log.samples or [] if s.error]
        got = {}
        for s in log.samples or []:
            (score,) = (s.scores or {}).values()
            got[str(s.id)] = dict(score.metadata or {})
        assert set(got) == {x["id"] for x in _samples(run)}
        for sample_id, meta in got.items():
            _check_verdicts(run, sample_id, meta)
        _check_bodies(run, srv)


def _promptfoo() -> str:
    exe = os.environ.get("GRADERCAL_PROMPTFOO")
    if exe and Path(exe).exists():
        return exe
    if os.environ.get("GRADERCAL_REQUIRE_PROMPTFOO"):
        pytest.fail("GRADERCAL_PROMPTFOO does not name promptfoo (scripts/promptfoo.sh)")
    pytest.skip("promptfoo not installed (set GRADERCAL_PROMPTFOO; scripts/test.sh does)")


def _promptfoo_eval(exe: str, tmp_path: Path, srv: JudgeServer, run: str) -> list[dict[str, Any]]:
    files = to_promptfoo(_package(), _samples(run), stem="gc_judge")
    for name, text in files.items():
        (tmp_path / name).write_text(text, "utf-8")
    state = tmp_path / "promptfoo-state"
    env = dict(
        os.environ,
        OPENAI_BASE_URL=srv.base_url,
        OPENAI_API_KEY=KEY,
        PROMPTFOO_PYTHON=sys.executable,
        PROMPTFOO_CONFIG_DIR=str(state),
        PROMPTFOO_LOG_DIR=str(state / "logs"),
        PROMPTFOO_CACHE_PATH=str(state / "cache"),
        PROMPTFOO_DISABLE_TELEMETRY="1",
        PROMPTFOO_DISABLE_UPDATE="1",
        TMPDIR=str(tmp_path),
        NO_PROXY="127.0.0.1,localhost",
    )
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [exe, "eval", "-c", str(tmp_path / "gc_judge.yaml"), "-o", str(out), "--no-cache",
         "--no-write", "-j", "4"],
        env=env, capture_output=True, text=True, timeout=900, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode in (0, 100), (proc.stdout[-2000:], proc.stderr[-3000:])
    results: list[dict[str, Any]] = json.loads(out.read_text("utf-8"))["results"]["results"]
    return results


@pytest.mark.parametrize("run", RUNS)
def test_promptfoo_eval_of_the_exported_judge_on_every_server_kind(
    run: str, tmp_path: Path
) -> None:
    exe = _promptfoo()
    with _server(run) as srv:
        results = _promptfoo_eval(exe, tmp_path, srv, run)
        got = {}
        for r in results:
            grading = r["gradingResult"]
            assert "Error" not in str(grading.get("reason", "")), grading
            sample_id = str(r["vars"]["sample"]["response_id"])
            # the assertion's own result is promptfoo's first component
            own = grading["componentResults"][0]
            got[sample_id] = own["metadata"]
            kind = sample_id.split("/")[1]
            lost = kind in LOST or kind in NO_LOGPROBS
            assert ("(the judge server: " in own["reason"]) is lost, own["reason"]
        assert set(got) == {x["id"] for x in _samples(run)}
        for sample_id, meta in got.items():
            _check_verdicts(run, sample_id, meta)
        _check_bodies(run, srv)


def test_promptfoo_errors_carry_the_servers_message(tmp_path: Path) -> None:
    exe = _promptfoo()
    cfg = server_kind("logprobs", require_key="another-key")
    with JudgeServer(cfg) as srv:
        results = _promptfoo_eval(exe, tmp_path, srv, "logprobs_refused")
    reasons = [str(r.get("error") or r["gradingResult"].get("reason")) for r in results]
    assert len(reasons) == len(RESPONSES)
    assert all("HTTP 401: Incorrect API key provided" in x for x in reasons), reasons
