"""``gradercal judge`` end to end: database, real loopback HTTP server, the CLI.

Covers the issue's "done means": every judgment criterion of every response gets a
verdict with full provenance; an interrupted or killed run resumes without duplicates;
the API key's text appears nowhere in the database, its files, the output or the logs.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import select

from gradercal.cli.judge import judge
from gradercal.db import models as m
from gradercal.db.judging import JudgeStore, Scope
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.formats import read_folder
from gradercal.judge import DEFAULT_PROMPT, JudgeClient, JudgeParams, JudgeRunner, parse_reply
from gradercal.judge.pricing import DEFAULT_PRICES
from gradercal.judge.runner import Verdict
from tests.conftest import ROOT, write_jsonl
from tests.support.judge_server import Fault, JudgeServer, ServerConfig, expected_met

KEY_ENV = "GC_TEST_JUDGE_KEY"
AUTO_TEXTS = ("EC50 within 20% of 4.3 uM", "Names the four-parameter logistic model")


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer(ServerConfig()) as srv:
        yield srv


@pytest.fixture
def mini_db(db_url: str, mini: Path) -> str:
    db = open_database(db_url)
    try:
        Repository(db).import_data(read_folder(mini))
    finally:
        db.dispose()
    return db_url


def cli(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(judge, list(args), env=env, catch_exceptions=False)


def run_args(db: str, srv: JudgeServer, *extra: str, name: str = "j") -> list[str]:
    return [
        "run", "--db", db, "--judge", name, "--model", "gpt-4o-mini",
        "--base-url", srv.base_url, "--api-key-env", KEY_ENV, *extra,
    ]  # fmt: skip


def judge_rows(db_url: str, name: str = "j") -> list[dict[str, Any]]:
    db = open_database(db_url)
    try:
        with db.read() as s:
            q = (
                select(
                    m.Judgment,
                    m.Response.external_id,
                    m.Response.text,
                    m.Criterion.external_id,
                    m.Criterion.text,
                )
                .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
                .join(m.Response, m.Response.id == m.Judgment.response_id)
                .join(m.Criterion, m.Criterion.id == m.Judgment.criterion_id)
                .where(m.Grader.name == name)
            )
            return [
                {
                    "row": j,
                    "response": r,
                    "response_text": rt,
                    "criterion": c,
                    "criterion_text": ct,
                }
                for j, r, rt, c, ct in s.execute(q)
            ]
    finally:
        db.dispose()


def judge_runs(db_url: str) -> list[m.JudgeRun]:
    db = open_database(db_url)
    try:
        with db.read() as s:
            return list(s.scalars(select(m.JudgeRun).order_by(m.JudgeRun.id)))
    finally:
        db.dispose()


MINI_PAIRS = {
    (r, c)
    for r in ("M1-a", "M1-b")
    for c in ("c1", "c2", "c3", "c4")
} | {("M2-a", "c1"), ("M2-b", "c1")}  # fmt: skip


def test_run_fills_every_judgment_criterion_with_full_provenance(
    mini_db: str, server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-provenance-key")
    result = cli(*run_args(mini_db, server, "--json", "--concurrency", "3"))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert (out["status"], out["ok"], out["items"], out["saved"]) == ("completed", 10, 10, 10)
    rows = judge_rows(mini_db)
    assert {(x["response"], x["criterion"]) for x in rows} == MINI_PAIRS
    price = DEFAULT_PRICES["gpt-4o-mini"]
    total_prompt = total_completion = 0
    for x in rows:
        j: m.Judgment = x["row"]
        assert j.met is expected_met(x["criterion_text"], x["response_text"])
        assert (j.source, j.revision, j.judge_run_id) == ("judge", 1, out["run_id"])
        assert j.confidence == pytest.approx(0.9) and j.rationale
        p = j.provenance
        assert p is not None
        assert p["status"] == "ok" and p["prompt_version"] == DEFAULT_PROMPT.content_hash
        assert p["model"] == "gpt-4o-mini" and p["base_url"] == server.base_url
        assert p["parameters"]["temperature"] == 0.0 and p["parameters"]["samples"] == 1
        assert p["confidence_source"] == "logprobs" and p["p_met"] == pytest.approx(
            0.9 if j.met else 0.1
        )
        sample = p["samples"][0]
        assert parse_reply(sample["raw"]).met is j.met
        assert sample["prompt_tokens"] > 300 and sample["completion_tokens"] > 5
        assert sample["latency_s"] > 0 and len(sample["request_hash"]) == 64
        assert p["prompt_tokens"] == sample["prompt_tokens"]
        assert p["cost_usd"] == pytest.approx(
            price.cost(sample["prompt_tokens"], sample["completion_tokens"])
        )
        total_prompt += p["prompt_tokens"]
        total_completion += p["completion_tokens"]
    [run] = judge_runs(mini_db)
    assert (run.status, run.n_requests, run.model) == ("completed", 10, "gpt-4o-mini")
    assert (run.prompt_tokens, run.completion_tokens) == (total_prompt, total_completion)
    assert run.cost_usd == pytest.approx(price.cost(total_prompt, total_completion))
    assert run.parameters["api_key_env"] == KEY_ENV and run.parameters["scope"] == "unjudged"
    # the judge is a grader of kind judge, listed beside the experts in exports
    db = open_database(mini_db)
    try:
        with db.read() as s:
            g = s.scalar(select(m.Grader).where(m.Grader.name == "j"))
            pv = s.scalar(
                select(m.PromptVersion.content_hash).where(
                    m.PromptVersion.id == g.prompt_version_id
                )
            )  # type: ignore[union-attr]
        assert g is not None and (g.kind, g.model) == ("judge", "gpt-4o-mini")
        assert pv == DEFAULT_PROMPT.content_hash
        records = [r for r in Repository(db).judgment_records() if r["grader"] == "j"]
        assert len(records) == 10 and {r["grader_kind"] for r in records} == {"judge"}
    finally:
        db.dispose()
    # auto criteria are never sent; artifacts are
    users = [b["messages"][-1]["content"] for b in server.stats.bodies]
    assert len(users) == 10
    assert not [u for u in users for t in AUTO_TEXTS if t in u]
    m1 = next(u for u in users if "Notes the premature stop codon" in u)
    assert "### Construct (sequence)\n>seqA test construct\nATGGCCGCGTTAGCGGCTAA" in m1
    m2 = next(u for u in users if "Explains why the top plateau" in u)
    assert "dose_uM,response_pct\n0.1,4" in m2
    # running again finds nothing to do; --scope all is answered by the cache
    again = cli(*run_args(mini_db, server))
    assert again.exit_code == 0 and "nothing to judge" in again.output
    everything = cli(*run_args(mini_db, server, "--scope", "all", "--json"))
    assert json.loads(everything.stdout)["cached"] == 10
    assert server.stats.requests == 10
    assert {x["row"].revision for x in judge_rows(mini_db)} == {1}


def test_failures_are_unanswered_not_unmet_and_a_rerun_supersedes_them(
    mini_db: str, server: JudgeServer
) -> None:
    server.config.faults = [Fault("Explains the reading frame", ["malformed"])]
    result = cli(*run_args(mini_db, server, "--json"))
    assert result.exit_code == 3
    out = json.loads(result.stdout)
    assert (out["ok"], out["parse_failures"], out["status"]) == (8, 2, "completed")
    failed = [x for x in judge_rows(mini_db) if x["criterion"] == "c4"]
    assert len(failed) == 2
    for x in failed:
        j = x["row"]
        assert j.met is None and j.confidence is None and j.rationale is None
        assert j.provenance["status"] == "parse_failure"
        assert j.provenance["samples"][0]["raw"].startswith("I think the criterion is")
    db = open_database(mini_db)
    try:
        frames = Repository(db).load_frames()
    finally:
        db.dispose()
    mine = frames.judgments[frames.judgments["grader"] == "j"]
    assert mine["met"].isna().sum() == 2  # unanswered, not False
    server.config.faults = []
    before = server.stats.requests
    again = cli(*run_args(mini_db, server, "--json"))
    assert again.exit_code == 0 and json.loads(again.stdout)["ok"] == 2
    assert server.stats.requests - before == 2
    fixed = [x["row"] for x in judge_rows(mini_db) if x["criterion"] == "c4"]
    assert {(j.revision, j.provenance["status"]) for j in fixed} == {(2, "ok")}
    db = open_database(mini_db)
    try:
        history = Repository(db).judgment_history(fixed[0].id)
    finally:
        db.dispose()
    assert history[0]["met"] is None and history[0]["provenance"]["status"] == "parse_failure"


def test_api_key_never_reaches_database_files_output_or_logs(
    mini_db: str,
    server: JudgeServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    canary = f"sk-canary-{uuid.uuid4().hex}"
    monkeypatch.setenv(KEY_ENV, canary)
    server.config.require_key = canary
    server.config.faults = [
        Fault("Notes the premature stop codon", ["echo_key"]),  # a server echoing the key back
        Fault("Suggests re-sequencing", ["echo_key_500", "ok"]),  # … or in an error body
    ]
    caplog.set_level(logging.DEBUG)
    result = cli(*run_args(mini_db, server, "--json"))
    assert result.exit_code == 0, result.output
    assert server.stats.auth_headers == {f"Bearer {canary}"}  # the key was used
    echoed = [x["row"] for x in judge_rows(mini_db) if x["criterion_text"].startswith("Notes")]
    assert len(echoed) == 2 and all(
        "[REDACTED]" in j.provenance["samples"][0]["raw"] for j in echoed
    )
    assert canary not in result.output and canary not in caplog.text
    db = open_database(mini_db)
    try:
        with db.engine.connect() as conn:
            for table in m.Base.metadata.sorted_tables:
                for row in conn.execute(select(table)):
                    assert canary not in repr(tuple(row)), table.name
    finally:
        db.dispose()
    if "://" not in mini_db:  # SQLite: the files themselves, WAL included
        for path in Path(mini_db).parent.glob(Path(mini_db).name + "*"):
            assert canary.encode() not in path.read_bytes(), path
    # a wrong key: the error names the variable's purpose but never a key
    monkeypatch.setenv(KEY_ENV, canary + "-wrong")
    bad = cli(*run_args(mini_db, server, "--model", "gpt-4o", name="j2"))  # not in the cache
    assert bad.exit_code == 1 and "authentication failed (HTTP 401)" in bad.output
    assert canary not in bad.output


def test_a_hostile_reply_is_stored_clean_and_never_stops_the_run(
    mini_db: str, server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reply with a NUL character in its text (PostgreSQL text cannot hold one), the
    key echoed in its model and id fields, and a malformed usage (a text count, a
    negative one): the verdict is stored without the NUL, the key (however short) is
    nowhere, the usage counts as unknown, and the run finishes."""
    key = "k3Yq9"  # shorter than keys usually are: redacted all the same
    monkeypatch.setenv(KEY_ENV, key)
    server.config.require_key = key
    server.config.faults = [Fault("Notes the premature stop codon", ["hostile"])]
    result = cli(*run_args(mini_db, server, "--json"))
    assert result.exit_code == 0, result.output
    assert server.stats.replies["hostile"] >= 1
    hostile = [x["row"] for x in judge_rows(mini_db) if x["criterion_text"].startswith("Notes")]
    assert hostile and all(j.met is not None for j in hostile)
    for j in hostile:
        assert "\x00" not in (j.rationale or "") and j.rationale.endswith(" seen")
        sample = j.provenance["samples"][0]
        assert sample.get("usage_reported") is False, sample
        assert key not in json.dumps(j.provenance)
    db = open_database(mini_db)
    try:
        with db.engine.connect() as conn:
            for table in m.Base.metadata.sorted_tables:
                for row in conn.execute(select(table)):
                    assert key not in repr(tuple(row)), table.name
            runs = conn.execute(select(m.JudgeRun.prompt_tokens, m.JudgeRun.completion_tokens))
            assert all(p >= 0 and c >= 0 for p, c in runs)
    finally:
        db.dispose()


def test_interrupted_run_keeps_every_verdict_and_resumes_without_duplicates(
    mini_db: str,
) -> None:
    store = JudgeStore(open_database(mini_db))
    params = JudgeParams(model="local-model")
    info = store.ensure_judge(
        "j", model="local-model", prompt=DEFAULT_PROMPT, parameters=params.to_dict()
    )
    handed: list[Verdict] = []

    async def first_run(srv: JudgeServer, run_id: int) -> None:
        me = asyncio.current_task()
        assert me is not None
        writer = store.writer(grader_id=info.grader_id, run_id=run_id)

        def on_verdict(v: Verdict) -> None:
            writer.submit(v)
            handed.append(v)
            if len(handed) == 4:
                me.cancel()  # Ctrl+C after the 4th verdict, with requests in flight

        client = JudgeClient(params, base_url=srv.base_url, concurrency=3)
        runner = JudgeRunner(client, DEFAULT_PROMPT, on_verdict=on_verdict, cache=store.cache())
        try:
            async with client:
                await runner.run(store.work_items(None, info, Scope(), DEFAULT_PROMPT))
        finally:
            writer.close()
            store.finish_run(run_id, runner.stats)

    with JudgeServer(ServerConfig(latency=0.05)) as srv:
        run_id = store.start_run(info, model="local-model", base_url=None, parameters={})
        with pytest.raises(asyncio.CancelledError):
            asyncio.run(first_run(srv, run_id))
        saved = judge_rows(mini_db)
        done = len(handed)
        assert 4 <= done < 10 and len(saved) == done  # nothing handed over was lost
        assert {(x["response"], x["criterion"]) for x in saved} == {
            (v.item.response_id, v.item.criterion_id) for v in handed
        }
        remaining = store.work_items(None, info, Scope(), DEFAULT_PROMPT)
        assert len(remaining) == 10 - done
        result = cli("run", "--db", mini_db, "--judge", "j", "--model", "local-model",
                     "--base-url", srv.base_url, "--json")  # fmt: skip
        assert result.exit_code == 0 and json.loads(result.stdout)["ok"] == 10 - done
    rows = judge_rows(mini_db)
    assert len(rows) == 10 and {(x["response"], x["criterion"]) for x in rows} == MINI_PAIRS
    assert {x["row"].revision for x in rows} == {1}
    assert [r.status for r in judge_runs(mini_db)] == ["cancelled", "completed"]
    store.db.dispose()


def _wait_while_alive(
    proc: subprocess.Popen[str], cond: Callable[[], bool], what: str, timeout: float = 600
) -> None:
    """Until ``cond()`` holds; fails at once, with the child's output, if the child ended
    first, and after ``timeout`` seconds (a child stuck alive) otherwise."""
    deadline = time.monotonic() + timeout
    while not cond():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the run ended (exit {proc.returncode}) before {what}:\n{out}\n{err}")
        assert time.monotonic() < deadline, f"not within {timeout:g} s: {what}"
        time.sleep(0.02)


@pytest.mark.parametrize("how", ["SIGINT", "SIGKILL"])
def test_interrupted_or_killed_cli_run_resumes_without_duplicate_requests(
    tmp_path: Path, mini: Path, how: str
) -> None:
    """Ctrl+C (SIGINT) ends the run cleanly, a crash (SIGKILL) does not: both keep every
    verdict received before, and the same command then asks only for the missing ones."""
    db_path = str(tmp_path / "kill.sqlite")
    db = open_database(db_path)
    Repository(db).import_data(read_folder(mini))
    db.dispose()
    # Ctrl+C as from a terminal: a suite started in the background by a non-interactive
    # shell (as CI may be) ignores SIGINT, and a child would inherit that.
    code = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from gradercal.cli.judge import judge; sys.exit(judge())"
    )
    with JudgeServer(ServerConfig(hold_after=4)) as srv:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, "run", "--db", db_path, "--judge", "k", "--model", "m",
             "--base-url", srv.base_url, "--concurrency", "3"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            # The child starts a fresh interpreter (gradercal's imports, the database opened):
            # on two loaded cores that alone has taken over a minute. Wait for what it does,
            # as long as it lives, instead of a fixed time.
            _wait_while_alive(proc, lambda: srv.stats.requests >= 4 + 3, "4 answered, 3 held")
            _wait_while_alive(  # the writer thread commits them
                proc, lambda: len(judge_rows(db_path, "k")) >= 4, "4 verdicts committed"
            )
            proc.send_signal(getattr(signal, how))
            out, _err = proc.communicate(timeout=300)
        finally:
            proc.kill()
            proc.wait(30)
        if how == "SIGINT":
            assert proc.returncode == 130
            assert "interrupted: 4 verdicts" in out and "run the same command again" in out
        assert len(judge_rows(db_path, "k")) == 4
        listed = json.loads(cli("runs", "--db", db_path, "--json").output)
        if how == "SIGKILL":  # its process is gone: the listing says so, and records it
            assert listed[0]["status"] == "interrupted" and listed[0]["pid"] == proc.pid
            assert "ended without closing the run" in listed[0]["parameters"]["result"]["message"]
            assert listed[0]["finished_at"] is not None
        else:
            assert listed[0]["status"] == "cancelled"
        srv.release()
        before = srv.stats.requests
        result = cli("run", "--db", db_path, "--judge", "k", "--model", "m",
                     "--base-url", srv.base_url, "--json")  # fmt: skip
        assert result.exit_code == 0, result.output
        assert srv.stats.requests - before == 10 - 4  # only the missing ones were asked
    rows = judge_rows(db_path, "k")
    assert {(x["response"], x["criterion"]) for x in rows} == MINI_PAIRS and len(rows) == 10
    assert {x["row"].revision for x in rows} == {1}
    first = "cancelled" if how == "SIGINT" else "interrupted"  # a killed run is found out
    assert [r.status for r in judge_runs(db_path)] == [first, "completed"]


def test_max_cost_stops_cleanly_and_a_rerun_finishes(tmp_path: Path, mini: Path) -> None:
    db_path = str(tmp_path / "cost.sqlite")
    db = open_database(db_path)
    Repository(db).import_data(read_folder(mini))
    db.dispose()
    with JudgeServer(ServerConfig(latency=0.01)) as srv:
        # ≈ 0.5 USD per request at 1000 USD per million tokens
        result = cli(*run_args(db_path, srv, "--price", "1000,1000", "--max-cost", "1.6",
                               "--concurrency", "2", "--json"))  # fmt: skip
        assert result.exit_code == 3
        out = json.loads(result.stdout)
        assert out["status"] == "stopped_cost" and 2 <= out["ok"] < 10
        assert out["saved"] == out["done"] == srv.stats.requests
        [run] = judge_runs(db_path)
        per_item = run.cost_usd / out["done"]
        assert run.status == "stopped_cost" and run.cost_usd <= 1.6 + per_item
        assert run.cost_usd == pytest.approx(out["cost_usd"])
        missing = cli(*run_args(db_path, srv, "--max-cost", "1", "--model", "mystery", name="k"))
        assert missing.exit_code == 1 and "no price known" in missing.output
        rest = cli(*run_args(db_path, srv, "--json"))
        assert rest.exit_code == 0 and json.loads(rest.stdout)["ok"] == 10 - out["ok"]
    assert len(judge_rows(db_path)) == 10


def _probe_benchmark(tmp_path: Path) -> Path:
    """Multi-paragraph responses; criteria keywords: premature, junction, plasmid."""
    folder = tmp_path / "probe-bench"
    folder.mkdir()
    (folder / "benchmark.json").write_text(json.dumps({"name": "probe"}))
    crits = [
        {"id": "a", "criterion": "Identifies the premature stop", "points": 5},
        {"id": "b", "criterion": "Checks the junction", "points": 3},
        {"id": "c", "criterion": "Orders a fresh plasmid prep", "points": 2},
    ]
    write_jsonl(
        folder / "tasks.jsonl", [{"id": "T", "prompt": "Review the clone.", "rubric": crits}]
    )
    texts = {
        "r1": "# Summary\nThere is a premature stop.\n\n# Plan\nSequence the junction again.",
        "r2": "The clone looks fine overall.\n\nNothing else to add here.\n\nNo action is needed.",
        "r3": "# Summary\nNo issues.\n\n# Plan\nOrder a new plasmid.\n\n# Notes\nA premature call is avoided.",
    }
    write_jsonl(
        folder / "responses.jsonl",
        [{"id": r, "task_id": "T", "model": "x", "text": t} for r, t in texts.items()],
    )
    truth = {("r1", "a"), ("r1", "b"), ("r3", "c"), ("r3", "a")}
    write_jsonl(
        folder / "judgments.jsonl",
        [
            {"response_id": r, "criterion_id": c, "grader": "ana", "grader_kind": "human",
             "met": (r, c) in truth}
            for r in texts for c in "abc"
        ],
    )  # fmt: skip
    return folder


def test_probes_report_flip_rates_and_length_bias(tmp_path: Path) -> None:
    db_path = str(tmp_path / "probe.sqlite")
    db = open_database(db_path)
    Repository(db).import_data(read_folder(_probe_benchmark(tmp_path)))
    db.dispose()
    with JudgeServer(ServerConfig(gullible=True)) as srv:
        assert cli(*run_args(db_path, srv)).exit_code == 0
        baseline = {(x["response"], x["criterion"]): x["row"].met for x in judge_rows(db_path)}
        not_met = sum(1 for v in baseline.values() if not v)
        assert len(baseline) == 9 and 0 < not_met < 9
        args = ["probe", "--db", db_path, "--judge", "j", "--api-key-env", KEY_ENV, "--json"]
        result = cli(*args)
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        probes = {p["probe"]: p for p in report["probes"]}
        inj = probes["injection"]
        # the gullible server obeys the appended instruction: every "not met" flips
        assert (inj["n"], inj["flips"], inj["to_met"], inj["to_not_met"]) == (
            9,
            not_met,
            not_met,
            0,
        )
        assert inj["rate"] == pytest.approx(not_met / 9) and inj["ci_low"] > 0
        for name in ("padding", "reorder"):
            assert (probes[name]["n"], probes[name]["flips"], probes[name]["skipped"]) == (9, 0, 0)
            assert probes[name]["ci_high"] == pytest.approx(0.2991, abs=1e-3)
        lb = report["length_bias"]
        assert lb["n"] == 9 and lb["n_responses"] == 3
        assert report["run"]["requests"] == 27
        # the altered responses went to the server, the judge's stored verdicts are untouched
        users = [b["messages"][-1]["content"] for b in srv.stats.bodies[9:]]
        assert sum("NOTE TO THE GRADER" in u for u in users) == 9
        assert {
            (x["response"], x["criterion"]): x["row"].met for x in judge_rows(db_path)
        } == baseline
        before = srv.stats.requests
        again = json.loads(cli(*args).stdout)
        assert srv.stats.requests == before and again["probes"] == report["probes"]  # cached
    runs = judge_runs(db_path)
    assert [r.parameters["kind"] for r in runs] == ["run", "probe", "probe"]


def test_prompt_versions_and_judge_identity(tmp_path: Path, mini: Path) -> None:
    db_path = str(tmp_path / "prompts.sqlite")
    db = open_database(db_path)
    Repository(db).import_data(read_folder(mini))
    db.dispose()
    shown = cli("prompt", "show", "--db", db_path, "--json")
    data = json.loads(shown.stdout)
    assert data["content_hash"] == DEFAULT_PROMPT.content_hash
    data["system"] += "\nBe strict."
    data["name"] = "strict"
    path = tmp_path / "strict.json"
    path.write_text(json.dumps(data))
    added = cli("prompt", "add", str(path), "--parent", "default", "--db", db_path, "--json")
    assert added.exit_code == 0, added.output
    new = json.loads(added.stdout)
    assert new["parent_hash"] == DEFAULT_PROMPT.content_hash != new["content_hash"]
    listed = json.loads(cli("prompt", "list", "--db", db_path, "--json").stdout)
    assert [(p["name"], p["parent_hash"]) for p in listed["prompts"]] == [
        ("default", None),
        ("strict", DEFAULT_PROMPT.content_hash),
    ]
    with JudgeServer() as srv:
        ok = cli(*run_args(db_path, srv, "--prompt", new["content_hash"][:10], name="strict-j"))
        assert ok.exit_code == 0, ok.output
        assert "Be strict." in srv.stats.bodies[0]["messages"][0]["content"]
        other = cli(*run_args(db_path, srv, "--temperature", "0.5", name="strict-j"))
        assert other.exit_code == 1
        assert "judge 'strict-j' was run with temperature 0.0 (asked: 0.5)" in other.output
        human = cli(*run_args(db_path, srv, name="ana"))
        assert human.exit_code == 1 and "grader 'ana' is a human" in human.output
        imported = cli(*run_args(db_path, srv, name="judge-x"))
        assert imported.exit_code == 1 and "imported without a model" in imported.output
    assert cli("prompt", "show", "nope", "--db", db_path).exit_code == 1


def test_price_table_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cfg" / "prices.json"
    monkeypatch.setenv("GRADERCAL_PRICES", str(path))
    shown = cli("prices")
    assert shown.exit_code == 0 and "(not created; `--init` writes it)" in shown.output
    assert cli("prices", "--init").exit_code == 0
    data = json.loads(path.read_text())
    assert data["gpt-4o-mini"] == {"input": 0.15, "output": 0.6}
    data["my-local-model"] = {"input": 0, "output": 0}
    path.write_text(json.dumps(data))
    table = json.loads(cli("prices", "--json").stdout)
    assert table["prices"]["my-local-model"] == {"input": 0.0, "output": 0.0}
    again = cli("prices", "--init")
    assert again.exit_code == 1 and "exists; edit it" in again.output


def test_runs_whose_process_is_gone_are_marked_interrupted_live_ones_are_not(
    mini_db: str,
) -> None:
    """Same host and a dead pid: interrupted at once; elsewhere: after the heartbeat is
    stale; this process's own run, or a fresh heartbeat elsewhere: still running."""
    from datetime import timedelta

    from sqlalchemy import update

    from gradercal.db import judging

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(30)  # reaped: its pid names no process now
    db = open_database(mini_db)
    try:
        store = JudgeStore(db)
        info = store.ensure_judge(
            "j", model="m", prompt=DEFAULT_PROMPT, parameters=JudgeParams(model="m").to_dict()
        )
        ids = [store.start_run(info, model="m", base_url=None, parameters={}) for _ in range(5)]
        now = m.utcnow()
        old = now - timedelta(seconds=judging.STALE_AFTER_S + 60)
        rows = {
            ids[1]: {"pid": dead.pid},  # this host, process gone
            ids[2]: {"host": "elsewhere", "pid": 1, "heartbeat_at": old},  # silent too long
            ids[3]: {"host": "elsewhere", "pid": 1, "heartbeat_at": now},  # alive elsewhere
            ids[4]: {
                "host": None,
                "pid": None,
                "heartbeat_at": None,
                "started_at": old,
            },  # pre-0003
        }
        with db.write() as s:
            for run_id, values in rows.items():
                s.execute(update(m.JudgeRun).where(m.JudgeRun.id == run_id).values(**values))
        assert sorted(store.mark_interrupted()) == [ids[1], ids[2], ids[4]]
        listed = {r["id"]: r for r in store.runs("j")}
        assert [listed[i]["status"] for i in ids] == [
            "running", "interrupted", "interrupted", "running", "interrupted",
        ]  # fmt: skip
        assert str(dead.pid) in listed[ids[1]]["parameters"]["result"]["message"]
        assert "no sign of life" in listed[ids[2]]["parameters"]["result"]["message"]
        assert store.mark_interrupted() == []  # nothing left to mark
        # the writer's heartbeat keeps an idle run alive
        with db.write() as s:
            s.execute(update(m.JudgeRun).where(m.JudgeRun.id == ids[0]).values(heartbeat_at=old))
        writer = judging.VerdictWriter(db, grader_id=info.grader_id, run_id=ids[0], heartbeat=0.05)
        try:
            deadline = time.monotonic() + 60
            while True:
                with db.read() as s:
                    beat = s.scalar(select(m.JudgeRun.heartbeat_at).where(m.JudgeRun.id == ids[0]))
                assert beat is not None
                if judging._aware(beat) > now:
                    break
                assert time.monotonic() < deadline, "no heartbeat"
                time.sleep(0.05)
        finally:
            writer.close()
        assert ids[0] not in store.mark_interrupted(now=m.utcnow() + timedelta(seconds=5))
    finally:
        db.dispose()


def test_dry_run_estimates_size_and_cost_and_sends_nothing(
    tmp_path: Path, mini: Path, server: JudgeServer
) -> None:
    db_path = str(tmp_path / "est.sqlite")
    db = open_database(db_path)
    Repository(db).import_data(read_folder(mini))
    db.dispose()
    options = ("--price", "1,2", "--samples", "2", "--temperature", "0.5", "--json")
    est = json.loads(cli(*run_args(db_path, server, "--dry-run", *options)).stdout)["estimate"]
    assert server.stats.requests == 0 and judge_runs(db_path) == []
    assert (est["items"], est["requests"]) == (10, 20)
    assert est["completion_tokens"] == 20 * 80 and est["completion_tokens_max"] == 20 * 1024
    assert est["cost_usd"] == pytest.approx(
        (est["prompt_tokens"] * 1 + est["completion_tokens"] * 2) / 1e6
    )
    out = json.loads(cli(*run_args(db_path, server, *options)).stdout)
    # the server counts ceil(characters / 4) of the whole prompt; the estimate rounds up
    # per message (system, user): at most one token more per message and request
    assert 0 <= est["prompt_tokens"] - out["prompt_tokens"] <= 2 * est["requests"]
    text = cli(*run_args(db_path, server, "--dry-run")).output
    assert "0 pairs" in text  # everything judged now


def test_an_active_calibration_is_applied_to_new_judge_runs(
    tmp_path: Path, server: JudgeServer
) -> None:
    """Run the judge on part of the benchmark, fit a calibration, then run it on the rest:
    the new run's report and `scores --calibrated` give apply_calibration's figures over
    every verdict, old and new, with the calibration's id and version."""
    import numpy as np

    from gradercal.analysis.calibration import apply_calibration
    from gradercal.analysis.scoring import PASS_EPSILON
    from gradercal.cli import main
    from gradercal.db.calibrations import load_calibration
    from gradercal.synth import SynthConfig, generate

    folder = tmp_path / "synth"
    generate(
        folder,
        SynthConfig(tasks=10, criteria_per_task=6, responses_per_task=2, human_graders=2,
                    judge=False, artifacts_per_task=0, numeric_task_share=0.0, seed=4),
    )  # fmt: skip
    db_path = str(tmp_path / "cal.sqlite")
    db = open_database(db_path)
    Repository(db).import_data(read_folder(folder))
    tasks = [t.id for t in Repository(db).load_tasks(None)]
    db.dispose()
    first = json.loads(
        cli(*run_args(db_path, server, "--scope", "tasks:" + ",".join(tasks[:7]), "--json")).stdout
    )
    assert first["calibrated"] is None and first["ok"] > 0  # no calibration yet
    fit = CliRunner().invoke(
        main, ["calibrate", "--db", db_path, "--judge", "j", "--method", "leniency",
               "--bootstrap", "0", "--folds", "3", "--json"],
    )  # fmt: skip
    assert fit.exit_code == 0, fit.output
    saved = json.loads(fit.output)["saved"]
    second = json.loads(cli(*run_args(db_path, server, "--json")).stdout)
    assert second["ok"] == second["items"] > 0  # the new run judged the other tasks
    cal = second["calibrated"]
    assert cal["calibration"]["id"] == saved["id"] and cal["calibration"]["version"] == 1
    assert cal["calibration"]["method"] == "leniency"

    # independently: apply_calibration over the frames, then per-model means by pandas
    db = open_database(db_path)
    repo = Repository(db)
    frames = repo.load_frames(None)
    params = load_calibration(repo, None, "j").params  # type: ignore[union-attr]
    applied = apply_calibration(frames, "j", params)
    db.dispose()
    scored = applied[applied["score"].notna() & applied["judge_score"].notna()]
    assert len(scored) == len(applied)  # every response, old run's and new run's
    bar = frames.pass_threshold - PASS_EPSILON
    expected = {
        model: (len(g), g["score"].mean(), (g["score"] >= bar).mean(),
                g["judge_score"].mean(), (g["judge_score"] >= bar).mean())
        for model, g in scored.groupby("model")
    }  # fmt: skip
    got = {
        r["model"]: (r["n_scored"], r["mean_score"], r["pass_rate"], r["raw_mean_score"],
                     r["raw_pass_rate"])
        for r in cal["models"]
    }  # fmt: skip
    assert got.keys() == expected.keys()
    for model, values in expected.items():
        assert got[model] == pytest.approx(values, abs=1e-12)
    # the calibration changes something: a leniency correction gives fractional credit
    assert not np.allclose(scored["score"], scored["judge_score"])

    scores = CliRunner().invoke(
        main, ["scores", "--db", db_path, "--grader", "j", "--calibrated", "--json"]
    )
    assert scores.exit_code == 0, scores.output
    assert json.loads(scores.output)["calibrated"] == json.loads(json.dumps(cal))
    text = CliRunner().invoke(main, ["scores", "--db", db_path, "--grader", "j", "--calibrated"])
    assert f"leniency v1 (calibration #{saved['id']})" in text.output
    refused = CliRunner().invoke(
        main, ["scores", "--db", db_path, "--grader", "consensus", "--calibrated"]
    )
    assert refused.exit_code == 1 and "needs --grader JUDGE" in refused.output
