"""The exported judge is the calibrated judge, in the real tools.

On the demo, a loopback chat-completions server judges as the experts' majority with
confidences from its verdict token's log-probabilities, and answers "met" with low
confidence on a quarter of the items the experts call not met (a lenient judge that a
threshold calibration can correct). gradercal's own runner grades every response with it
(``gradercal judge run``), ``gradercal calibrate`` fits and saves a threshold, and
``gradercal export-prompt`` writes the judge for the tools. Run by the real
``inspect eval`` (and ``promptfoo eval``, see that test) against the same server, the
exported judge must give, per response, gradercal's raw rubric score and calibrated
score to 1e-9 and the same pass/fail, and per model the calibrated figures of
``gradercal scores --grader J --calibrated``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from gradercal.analysis.calibration import apply_calibration
from gradercal.analysis.scoring import response_scores
from gradercal.cli import main
from gradercal.db.calibrations import list_calibrations
from gradercal.db.judging import JudgeStore, Scope
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.judge.prompts import DEFAULT_PROMPT, PromptContext, prompt_from_dict
from tests.conftest import DEMO
from tests.support.judge_server import JudgeServer, ServerConfig

pytestmark = pytest.mark.slow

JUDGE = "judge-loop"
MODEL = "loop-model"
KEY = "test-key-not-secret"


@dataclass
class Judged:
    db: str
    server: JudgeServer
    raw: pd.DataFrame  # response_scores of the judge, by response id
    calibrated: pd.DataFrame  # apply_calibration under the saved calibration
    scores_cli: dict[str, Any]  # gradercal scores --grader J --calibrated --json
    threshold: float


def _cli(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    res = CliRunner(env=env).invoke(main, [*args, "--json"])
    assert res.exit_code == 0, res.output
    out: dict[str, Any] = json.loads(res.stdout) if res.stdout.strip() else {}
    return out


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Judged]:
    db = str(tmp_path_factory.mktemp("parity") / "demo.sqlite")
    _cli("import", str(DEMO), "--db", db)
    database = open_database(db)
    frames = Repository(database).load_frames()
    items = JudgeStore(database).work_items(None, None, Scope("all"), DEFAULT_PROMPT)
    database.dispose()
    human = frames.judgments.loc[frames.judgments["grader_kind"] == "human"]
    majority = human.groupby(["response_id", "criterion_id"])["met"].agg(
        lambda s: bool(s.astype(bool).mean() > 0.5)
    )
    book = {
        (it.response_text, it.criterion_text): bool(
            majority.get((it.response_id, it.criterion_id), False)
        )
        for it in items
    }
    server = JudgeServer(ServerConfig(answers=book, lenient_every=4), keep_bodies=True)
    base = server.start()
    try:
        run = CliRunner(env={"OPENAI_API_KEY": KEY}).invoke(
            main,
            ["judge", "run", "--db", db, "--judge", JUDGE, "--model", MODEL, "--base-url", base],
        )
        assert run.exit_code == 0, run.output
        _cli("calibrate", "--db", db, "--judge", JUDGE, "--bootstrap", "0")
        scores = _cli("scores", "--db", db, "--grader", JUDGE, "--calibrated")
        database = open_database(db)
        repo = Repository(database)
        frames = repo.load_frames()
        saved = next(c for c in list_calibrations(repo, None, JUDGE) if c.active)
        raw = response_scores(frames, JUDGE).set_index("response_id")
        calibrated = apply_calibration(frames, JUDGE, dict(saved.params)).set_index("response_id")
        database.dispose()
        server.stats.bodies.clear()
        yield Judged(db, server, raw, calibrated, scores, float(saved.params["threshold"]))
    finally:
        server.stop()


def _check_parity(judged: Judged, tool: dict[str, dict[str, Any]]) -> None:
    """Per response: raw score, calibrated score, pass/fail; per model: the CLI's figures."""
    assert set(tool) == set(judged.raw.index)
    changed = 0
    for rid, got in tool.items():
        raw = float(judged.raw.loc[rid, "score"])
        cal = float(judged.calibrated.loc[rid, "score"])
        assert got["raw_score"] == pytest.approx(raw, abs=1e-9), rid
        assert got["score"] == pytest.approx(cal, abs=1e-9), rid
        assert got["passed"] is (cal >= 0.7 - 1e-9), rid
        changed += abs(cal - raw) > 1e-9
    assert changed >= 5  # the calibration changes real scores
    models = judged.raw.assign(tool=pd.Series({r: t["score"] for r, t in tool.items()}))
    passed = pd.Series({r: t["passed"] for r, t in tool.items()})
    for m in judged.scores_cli["calibrated"]["models"]:
        sel = models.loc[models["model"] == m["model"]]
        assert sel["tool"].mean() == pytest.approx(m["mean_score"], abs=1e-9)
        assert passed.loc[sel.index].mean() == pytest.approx(m["pass_rate"], abs=1e-12)


def _expected_messages(judged: Judged, prompt: dict[str, Any]) -> dict[tuple[str, str], Any]:
    """gradercal's runner's messages for every item under the exported prompt."""
    template = prompt_from_dict(prompt)
    database = open_database(judged.db)
    items = JudgeStore(database).work_items(None, None, Scope("all"), template)
    database.dispose()
    out = {}
    for it in items:
        ctx: PromptContext = it.context()
        out[(it.response_text, it.criterion_text)] = template.render(ctx)
    return out


def _check_requests(judged: Judged) -> None:
    """The tool's requests are gradercal's: the runner's messages under the exported
    prompt (attachment text included), log-probabilities asked for, the criteria of one
    response in flight together."""
    from tests.support.judge_server import split_prompt

    package = json.loads(
        CliRunner()
        .invoke(
            main, ["export-prompt", "--db", judged.db, "--judge", JUDGE, "-o", "-", "--n-boot", "0"]
        )
        .stdout
    )
    expected = _expected_messages(judged, package["prompt"])
    bodies = judged.server.stats.bodies
    assert len(bodies) == len(expected)
    for body in bodies:
        assert body["messages"] == expected[split_prompt(body["messages"][-1]["content"])]
        assert body["logprobs"] is True and body["top_logprobs"] >= 1
    assert any("<attachments>\n(none)" not in b["messages"][-1]["content"] for b in bodies)
    assert judged.server.stats.max_in_flight > 1


def _export(judged: Judged, tmp_path: Path, fmt: str, name: str) -> tuple[Path, Path]:
    out, samples = tmp_path / name, tmp_path / "samples.jsonl"
    _cli(
        "export-prompt", "--db", judged.db, "--judge", JUDGE, "--format", fmt,
        "-o", str(out), "--samples", str(samples), "--n-boot", "0",
    )  # fmt: skip
    return out, samples


@pytest.fixture(scope="module")
def inspect_log(judged: Judged, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The log of the real ``inspect eval`` of the exported judge against the server."""
    pytest.importorskip("inspect_ai")
    tmp_path = tmp_path_factory.mktemp("inspect")
    module, samples = _export(judged, tmp_path, "inspect", "gc_judge.py")
    exe = Path(sys.executable).with_name("inspect")
    logs = tmp_path / "logs"
    # An OpenAI-compatible server: Inspect's openai-api provider (chat completions,
    # system messages as sent), configured by LOOP_BASE_URL / LOOP_API_KEY.
    env = dict(
        os.environ,
        LOOP_BASE_URL=judged.server.base_url,
        LOOP_API_KEY=KEY,
        INSPECT_LOG_DIR=str(logs),
    )
    judged.server.stats.bodies.clear()
    judged.server.stats.max_in_flight = 0
    judged.server.config.latency = 0.02  # replies overlap only when they take time
    proc = subprocess.run(
        [
            str(exe), "eval", f"{module}@gradercal_grading",
            "--model", f"openai-api/loop/{MODEL}",
            "-T", f"samples={samples}", "--log-dir", str(logs), "--log-format", "json",
            "--display", "none", "--max-connections", "16",
        ],
        env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    judged.server.config.latency = 0.0
    assert proc.returncode == 0, proc.stderr[-3000:]
    (path,) = logs.glob("*.json")
    return path


def test_inspect_eval_grades_as_gradercal(judged: Judged, inspect_log: Path) -> None:
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(inspect_log))
    assert log.status == "success", log.error
    tool = {}
    for s in log.samples or []:
        (score,) = (s.scores or {}).values()
        meta = dict(score.metadata or {})
        assert meta["complete"] and meta["rule"] == "threshold"
        tool[str(s.id)] = meta
        assert score.value == pytest.approx(meta["score"])
    _check_parity(judged, tool)
    _check_requests(judged)


def test_the_inspect_log_imports_as_gradercals_own_verdicts(
    judged: Judged, inspect_log: Path, tmp_path: Path
) -> None:
    """``gradercal import`` of that log gives, per criterion of every response, the
    verdicts and confidences gradercal's own runner recorded from the same server."""
    import sqlite3

    db = str(tmp_path / "copy.sqlite")
    with sqlite3.connect(judged.db) as src, sqlite3.connect(db) as dst:
        src.backup(dst)
    imported = f"judge:openai-api/loop/{MODEL}"
    report = _cli("import", str(inspect_log), "--db", db)
    assert report["responses_added"] == 0 and report["graders_added"] == [imported]
    database = open_database(db)
    judgments = Repository(database).load_frames().judgments
    database.dispose()
    key = ["response_id", "criterion_id"]
    own = judgments.loc[judgments["grader"] == JUDGE].set_index(key).sort_index()
    got = judgments.loc[judgments["grader"] == imported].set_index(key).sort_index()
    assert report["judgments_added"] == len(own) == len(got) > 100
    assert list(got.index) == list(own.index)
    assert (got["met"] == own["met"]).all()
    assert got["confidence"].to_numpy() == pytest.approx(own["confidence"].to_numpy(), abs=1e-6)
    assert set(got["grader_kind"]) == {"judge"}


def _promptfoo() -> str:
    exe = os.environ.get("GRADERCAL_PROMPTFOO")
    if exe and Path(exe).exists():
        return exe
    if os.environ.get("GRADERCAL_REQUIRE_PROMPTFOO"):
        pytest.fail(
            "GRADERCAL_PROMPTFOO does not name promptfoo (scripts/promptfoo.sh installs it)"
        )
    pytest.skip("promptfoo not installed (set GRADERCAL_PROMPTFOO; scripts/test.sh does)")


def test_promptfoo_eval_grades_as_gradercal(judged: Judged, tmp_path: Path) -> None:
    exe = _promptfoo()
    config, _samples = _export(judged, tmp_path, "promptfoo", "gc_judge.yaml")
    assert {p.name for p in tmp_path.iterdir()} >= {
        "gc_judge.yaml", "gc_judge_assert.py", "gc_judge_tests.json",
    }  # fmt: skip
    state = tmp_path / "promptfoo-state"
    env = dict(
        os.environ,
        OPENAI_BASE_URL=judged.server.base_url,
        OPENAI_API_KEY=KEY,
        PROMPTFOO_PYTHON=sys.executable,
        PROMPTFOO_CONFIG_DIR=str(state),
        PROMPTFOO_LOG_DIR=str(state / "logs"),
        PROMPTFOO_CACHE_PATH=str(state / "cache"),
        TMPDIR=str(tmp_path),
        NO_PROXY="127.0.0.1,localhost",
    )
    out = tmp_path / "out.json"
    judged.server.stats.bodies.clear()
    judged.server.stats.max_in_flight = 0
    judged.server.config.latency = 0.02
    proc = subprocess.run(
        [exe, "eval", "-c", str(config), "-o", str(out), "--no-cache", "--no-write", "-j", "4"],
        env=env, capture_output=True, text=True, timeout=900, cwd=tmp_path,
    )  # fmt: skip
    judged.server.config.latency = 0.0
    # 100: some tests failed (responses that do not pass), as promptfoo reports them
    assert proc.returncode in (0, 100), (proc.stdout[-2000:], proc.stderr[-3000:])
    results = json.loads(out.read_text("utf-8"))["results"]["results"]
    tool = {}
    for r in results:
        sample = r["vars"]["sample"]
        grading = r["gradingResult"]
        assert "Error" not in str(grading.get("reason", "")), grading
        tool[str(sample["response_id"])] = {
            "score": r["score"],
            "raw_score": r["namedScores"]["raw_rubric_score"],
            "passed": r["success"],
        }
    _check_parity(judged, tool)
    _check_requests(judged)
