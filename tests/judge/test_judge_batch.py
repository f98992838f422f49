"""``gradercal judge run --batch``: the OpenAI Batch API against the real loopback server.

Covers issue #32 item 4: the batch's verdicts equal the online runner's on the same
items (same requests, provenance, cache, confidences); an expired batch keeps its done
lines and resends only the rest; failed lines are errors with the server's message and
are retried in a following batch; costs at the batch price and ``--max-cost``; and a
``judge run --batch`` process SIGKILLed at many points (upload, create, poll, download,
store) resumes with no batch submitted twice and every verdict stored once.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import select

import gradercal.db.judge_batch
import gradercal.judge.batch  # noqa: F401  (loaded before forking)
from gradercal.cli.judge import judge
from gradercal.db import models as m
from gradercal.db.judging import JudgeStore, Scope
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.errors import GradercalError
from gradercal.formats import read_folder
from gradercal.judge import DEFAULT_PROMPT
from gradercal.judge.pricing import Price, load_prices
from gradercal.synth import SynthConfig, generate
from tests.conftest import ROOT
from tests.support.judge_server import Fault, JudgeServer, ServerConfig

KEY_ENV = "GC_TEST_BATCH_KEY"


def cli(*args: str) -> Result:
    return CliRunner().invoke(judge, list(args), catch_exceptions=False)


def run_args(db: str, srv: JudgeServer, *extra: str, name: str = "j") -> list[str]:
    return [
        "run", "--db", db, "--judge", name, "--model", "gpt-4o-mini",
        "--base-url", srv.base_url, "--api-key-env", KEY_ENV, *extra,
    ]  # fmt: skip


def batch_args(db: str, srv: JudgeServer, *extra: str, name: str = "j") -> list[str]:
    return run_args(db, srv, "--batch", "--poll-interval", "0.02", *extra, name=name)


@pytest.fixture
def mini_db(db_url: str, mini: Path) -> str:
    db = open_database(db_url)
    try:
        Repository(db).import_data(read_folder(mini))
    finally:
        db.dispose()
    return db_url


def verdicts(db_url: str, name: str) -> dict[tuple[str, str], dict[str, Any]]:
    """(response, criterion) → the stored judgment's fields a batch must reproduce."""
    db = open_database(db_url)
    try:
        with db.read() as s:
            q = (
                select(m.Judgment, m.Response.external_id, m.Criterion.external_id)
                .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
                .join(m.Response, m.Response.id == m.Judgment.response_id)
                .join(m.Criterion, m.Criterion.id == m.Judgment.criterion_id)
                .where(m.Grader.name == name)
            )
            out = {}
            for j, r, c in s.execute(q):
                assert (r, c) not in out
                p = j.provenance
                out[(r, c)] = {
                    "met": j.met,
                    "confidence": j.confidence,
                    "rationale": j.rationale,
                    "revision": j.revision,
                    "status": p["status"],
                    "p_met": p["p_met"],
                    "confidence_source": p["confidence_source"],
                    "prompt_version": p["prompt_version"],
                    "parameters": p["parameters"],
                    "tokens": (p["prompt_tokens"], p["completion_tokens"]),
                    "hashes": [x["request_hash"] for x in p["samples"]],
                    "raw": [x["raw"] for x in p["samples"]],
                    "batch": p.get("batch"),
                    "errors": [e for x in p["samples"] for e in x.get("errors", [])],
                    "run": j.judge_run_id,
                }
            return out
    finally:
        db.dispose()


def runs(db_url: str) -> list[m.JudgeRun]:
    db = open_database(db_url)
    try:
        with db.read() as s:
            return list(s.scalars(select(m.JudgeRun).order_by(m.JudgeRun.id)))
    finally:
        db.dispose()


def _empty_cache(db_url: str) -> None:
    from sqlalchemy import delete

    from gradercal.db import judge_models as jm

    db = open_database(db_url)
    try:
        with db.write() as s:
            s.execute(delete(jm.JudgeCache))
    finally:
        db.dispose()


SAME = ("met", "confidence", "rationale", "status", "p_met", "confidence_source",
        "prompt_version", "parameters", "tokens", "hashes", "raw")  # fmt: skip


@pytest.mark.parametrize("samples", ["1", "3"])
def test_batch_verdicts_equal_the_online_runners(
    mini_db: str, samples: str, tmp_path: Path
) -> None:
    """The same items judged online (judge ``on``) and through a batch (judge ``b``, the
    request cache emptied in between so every request is sent) give the same verdicts,
    confidences, requests and replies; the batch costs half."""
    with JudgeServer(ServerConfig()) as srv:
        extra = ("--samples", samples, "--temperature", "0.7" if samples == "3" else "0",
                 "--price", "1000,2000", "--json")  # fmt: skip
        online = cli(*run_args(mini_db, srv, *extra, name="on"))
        assert online.exit_code == 0, online.output
        chat_requests = srv.stats.requests
        _empty_cache(mini_db)
        batch = cli(*batch_args(mini_db, srv, *extra, name="b"))
        assert batch.exit_code == 0, batch.output
        out = json.loads(batch.stdout)
        assert srv.stats.requests == chat_requests  # the batch sent nothing online
        assert srv.stats.batches_created == 1 and srv.stats.uploads == 1
        assert out["status"] == "completed" and out["ok"] == 10 and out["left"] == 0
    on, b = verdicts(mini_db, "on"), verdicts(mini_db, "b")
    assert set(on) == set(b) and len(b) == 10
    n = int(samples)
    for pair in on:
        for f in SAME:
            if f == "hashes":  # the same request bodies (cache keys), sample by sample
                assert len(b[pair][f]) == n
            assert b[pair][f] == on[pair][f], (pair, f)
        assert b[pair]["batch"]["round"] == 1 and b[pair]["batch"]["batch_id"]
        assert on[pair]["batch"] is None
    [r_on, r_b] = runs(mini_db)
    assert r_b.parameters["kind"] == "batch" and r_b.status == "completed"
    assert r_b.prompt_tokens == r_on.prompt_tokens and r_b.n_requests == r_on.n_requests
    assert r_b.cost_usd == pytest.approx(r_on.cost_usd / 2)  # the batch price: half
    assert r_b.parameters["batch"]["state"] == "stored"
    # every batch line was submitted once
    assert set(srv.stats.batch_lines.values()) == {1}
    assert sum(srv.stats.batch_lines.values()) == 10 * n


def test_batch_reuses_the_cache_and_resubmits_nothing_answered(mini_db: str) -> None:
    with JudgeServer(ServerConfig()) as srv:
        first = cli(*batch_args(mini_db, srv, "--json"))
        assert first.exit_code == 0
        again = cli(*batch_args(mini_db, srv, "--json"))  # nothing left to judge
        assert again.exit_code == 0 and json.loads(again.stdout)["items"] == 0
        # scope all: every request is in the cache, so no batch at all
        cached = cli(*batch_args(mini_db, srv, "--scope", "all", "--json"))
        out = json.loads(cached.stdout)
        assert cached.exit_code == 0, cached.output
        assert out["cached"] == 10 and out["requests"] == 0 and out["batches"] == []
        assert srv.stats.batches_created == 1 and srv.stats.uploads == 1
    assert len(verdicts(mini_db, "j")) == 10


def test_expired_batch_keeps_done_lines_and_resends_only_the_rest(mini_db: str) -> None:
    with JudgeServer(ServerConfig(batch_expire_after=4)) as srv:
        # one round only: the run ends with 6 items left
        first = cli(*batch_args(mini_db, srv, "--batch-rounds", "1", "--json"))
        out = json.loads(first.stdout)
        assert first.exit_code == 3 and out["ok"] == 4 and out["left"] == 6
        assert len(verdicts(mini_db, "j")) == 4
        srv.config.batch_expire_after = None
        rest = cli(*batch_args(mini_db, srv, "--json"))
        assert rest.exit_code == 0, rest.output
        assert json.loads(rest.stdout)["ok"] == 6
        # the 4 done lines were never sent again; the 6 others twice (expired, then done)
        assert sorted(srv.stats.batch_submitted.values()) == [1] * 4 + [2] * 6
        assert set(srv.stats.batch_lines.values()) == {1}  # every line answered once
    # within one run: an expired round is followed by a round of what is left
    with JudgeServer(ServerConfig(batch_expire_after=3)) as srv:
        whole = cli(*batch_args(mini_db, srv, "--json", name="k"))
        out = json.loads(whole.stdout)
        assert whole.exit_code == 3  # 3 + 3 + 3 of 10 after three rounds
        assert out["ok"] == 9 and out["left"] == 1 and len(out["batches"]) == 3
        assert srv.stats.batches_created == 3
    rows = verdicts(mini_db, "k")
    assert len(rows) == 9 and {r["batch"]["round"] for r in rows.values()} == {1, 2, 3}


def test_an_item_cut_by_an_expiry_keeps_its_done_samples(mini_db: str) -> None:
    """Three samples an item: the batch expires after 4 lines (one item whole, one sample
    of the second). That sample's reply goes to the cache, so the next batch sends only
    the second item's two other samples (and the rest), never the done one again."""
    with JudgeServer(ServerConfig(batch_expire_after=4)) as srv:
        args = ("--samples", "3", "--temperature", "0.7", "--batch-rounds", "1", "--json")
        first = cli(*batch_args(mini_db, srv, *args))
        assert first.exit_code == 3 and json.loads(first.stdout)["ok"] == 1
        done = [k for k, v in srv.stats.batch_lines.items() if v]
        assert len(done) == 4
        srv.config.batch_expire_after = None
        rest = cli(*batch_args(mini_db, srv, *args))
        assert rest.exit_code == 0, rest.output
        assert all(srv.stats.batch_submitted[k] == 1 for k in done)  # never resent
        assert sum(srv.stats.batch_lines.values()) == 30  # every sample answered once
    rows = verdicts(mini_db, "j")
    assert len(rows) == 10
    by_run = sorted(r["run"] for r in rows.values())
    assert by_run == [by_run[0]] + [by_run[0] + 1] * 9  # 1 item by the first command
    assert {len(r["hashes"]) for r in rows.values()} == {3}
    db = open_database(mini_db)
    try:
        with db.read() as s:
            flags = sorted(
                tuple(x["cached"] for x in j.provenance["samples"])
                for j in s.scalars(select(m.Judgment).where(m.Judgment.source == "judge"))
            )
    finally:
        db.dispose()
    assert flags.count((True, False, False)) == 1  # the second item: its first sample cached
    assert flags.count((False, False, False)) == 9


def test_failed_lines_are_errors_with_the_servers_message_and_retried(mini_db: str) -> None:
    # M1-a's four requests fail once with HTTP 500; M1-b's fail as lines every time
    faults = [Fault("premature TAG", ["500", "ok"]), Fault("looks ready", ["line_error"])]
    with JudgeServer(ServerConfig(faults=faults)) as srv:
        one = cli(*batch_args(mini_db, srv, "--batch-rounds", "1", "--json"))
        assert one.exit_code == 3
        rows = verdicts(mini_db, "j")
        failed = {k: v for k, v in rows.items() if v["status"] == "error"}
        assert failed and all(v["met"] is None and v["confidence"] is None
                              for v in failed.values())  # fmt: skip
        messages = {e for v in failed.values() for e in v["errors"]}
        assert any("HTTP 500" in e and "injected 500" in e for e in messages), messages
        assert any("server_error" in e and "could not be processed" in e for e in messages)
        # the next command resends only the failed lines: M1-a's succeed, M2-a's fail again
        two = cli(*batch_args(mini_db, srv, "--batch-rounds", "1", "--json"))
        assert two.exit_code == 3
        resent = {k for k, v in srv.stats.batch_submitted.items() if v == 2}
        assert len(resent) == len(failed)
    rows = verdicts(mini_db, "j")
    still = {k for k, v in rows.items() if v["status"] == "error"}
    assert still == {k for k in failed if k[0] == "M1-b"} and len(still) == 4
    assert len(failed) == 8 and len(rows) == 10


def test_a_rejected_parameter_is_dropped_for_the_next_round(mini_db: str) -> None:
    """Lines refused with HTTP 400 naming ``logprobs``: the client adapts as online and
    the next round sends the requests without it; with one sample no confidence is measured
    then, and none is made up (stored as none, as online)."""
    with JudgeServer(ServerConfig(reject_params={"logprobs"})) as srv:
        result = cli(*batch_args(mini_db, srv, "--json"))
        out = json.loads(result.stdout)
        assert result.exit_code == 0, result.output
        assert out["ok"] == 10 and len(out["batches"]) == 2
        assert out["adaptations"] == ["logprobs dropped (server rejected them)"]
    rows = verdicts(mini_db, "j")
    assert {r["batch"]["round"] for r in rows.values()} == {2}
    assert {r["confidence_source"] for r in rows.values()} == {None}
    assert {r["confidence"] for r in rows.values()} == {None}


def test_failed_batch_reports_the_servers_message(mini_db: str) -> None:
    with JudgeServer(ServerConfig(batch_fail="line 1: model not available for batch")) as srv:
        result = cli(*batch_args(mini_db, srv))
        assert result.exit_code == 1
        assert "model not available for batch" in result.output
    assert verdicts(mini_db, "j") == {}
    [run] = runs(mini_db)
    assert run.status == "failed"


def test_batch_price_in_table_dry_run_and_max_cost(
    mini_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"cheap": {"input": 4.0, "output": 8.0, "batch_input": 1.0,
                                            "batch_output": 2.0}}))  # fmt: skip
    monkeypatch.setenv("GRADERCAL_PRICES", str(prices))
    table = load_prices()
    assert table["cheap"].batch() == Price(1.0, 2.0, 1.0, 2.0)
    assert table["gpt-4o-mini"].batch().input == pytest.approx(0.075)  # half by default
    for bad in ({"input": 1, "output": 2, "batch_input": -1}, {"input": 1, "output": 2,
                                                              "batch_output": "half"}):  # fmt: skip
        wrong = tmp_path / "wrong.json"
        wrong.write_text(json.dumps({"m": bad}))
        with pytest.raises(GradercalError, match=r"wrong\.json: m: .*batch_input"):
            load_prices(wrong)
    online = json.loads(cli("run", "--db", mini_db, "--judge", "x", "--model", "cheap",
                            "--dry-run", "--json").stdout)  # fmt: skip
    batch = json.loads(cli("run", "--db", mini_db, "--judge", "x", "--model", "cheap",
                           "--dry-run", "--batch", "--json").stdout)  # fmt: skip
    assert online["pricing"] == "online" and batch["pricing"] == "batch"
    assert batch["price"] == {"input": 1.0, "output": 2.0}
    e_on, e_b = online["estimate"], batch["estimate"]
    assert e_b["prompt_tokens"] == e_on["prompt_tokens"]
    assert e_b["cost_usd"] == pytest.approx(e_on["cost_usd"] / 4)
    text = cli("run", "--db", mini_db, "--judge", "x", "--model", "gpt-4o", "--dry-run",
               "--batch").output  # fmt: skip
    assert "at the batch price ($1.25 in, $5 out per million tokens)" in text
    with JudgeServer(ServerConfig()) as srv:
        # ≈ 0.25 USD per item at 1000/1000 online, 500/500 batch: 1.1 USD admits 4 items
        result = cli(*batch_args(mini_db, srv, "--price", "1000,1000", "--max-cost", "1.1",
                                 "--json"))  # fmt: skip
        out = json.loads(result.stdout)
        assert result.exit_code == 3 and out["status"] == "stopped_cost"
        [run] = runs(mini_db)
        assert run.cost_usd <= 1.1 and 0 < out["ok"] < 10
        assert sum(srv.stats.batch_lines.values()) == out["ok"]


# -- kills ------------------------------------------------------------------------------
def _kill_benchmark(tmp_path: Path, db_url: str, tasks: int = 6) -> str:
    folder = tmp_path / "bench"
    generate(folder, SynthConfig(tasks=tasks, criteria_per_task=10, responses_per_task=3,
                                 human_graders=1, judge=False, artifacts_per_task=0))  # fmt: skip
    db = open_database(db_url)
    try:
        Repository(db).import_data(read_folder(folder))
    finally:
        db.dispose()
    return db_url


def _pairs(db_url: str) -> int:
    store = JudgeStore(open_database(db_url))
    try:
        return len(store.work_items(None, None, Scope(), DEFAULT_PROMPT))
    finally:
        store.db.dispose()


def _spawn(db: str, srv: JudgeServer, name: str = "k") -> subprocess.Popen[str]:
    """``gradercal judge run --batch`` in a fresh interpreter (a commit per 10 items)."""
    code = "import sys; from gradercal.cli.judge import judge; sys.exit(judge())"
    extra = ("--json", "--batch-store-chunk", "10")
    return subprocess.Popen(
        [sys.executable, "-c", code, *batch_args(db, srv, *extra, name=name)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


class _Forked:
    """The same command in a forked child of this process (modules already imported, so
    it starts at once): the child runs the CLI and leaves with its exit status."""

    def __init__(
        self, db: str, srv: JudgeServer, out: Path, name: str = "k", *, hold_store: bool = False
    ) -> None:
        """``hold_store``: the child stops for a minute after committing its first chunk of
        verdicts, so a kill during the store lands there however loaded the machine is."""
        args = batch_args(db, srv, "--json", "--batch-store-chunk", "10", name=name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # a forked threaded process
            pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 1
            try:
                fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                if hold_store:
                    _hold_after_first_store_chunk()
                judge.main(args, prog_name="gradercal judge", standalone_mode=True)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            finally:
                os._exit(code)
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
            _pid, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)


def _hold_after_first_store_chunk() -> None:  # pragma: no cover - runs in the child
    from gradercal.judge import batch as batch_module

    plain = batch_module._chunks

    def held(it: Any, size: int) -> Any:
        for i, chunk in enumerate(plain(it, size)):
            if i == 1 and size == 10:  # the store's second chunk: the first is committed
                time.sleep(60)
            yield chunk

    batch_module._chunks = held


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=120)


def _count(db_url: str, name: str = "k") -> int:
    return len(verdicts(db_url, name))


def _wait(cond: Any, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _finish(db: str, srv: JudgeServer, expected: int, *, expired: bool = False) -> None:
    srv.config.batch_line_delay = 0.0
    proc = _spawn(db, srv)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert json.loads(out)["left"] == 0
    rows = verdicts(db, "k")
    assert len(rows) == expected
    assert all(r["met"] is not None and r["revision"] == 1 for r in rows.values())
    # no line was ever answered twice; none was in two batches unless its batch expired
    assert set(srv.stats.batch_lines.values()) == {1}
    assert sum(srv.stats.batch_lines.values()) == expected
    if not expired:
        assert set(srv.stats.batch_submitted.values()) == {1}


def test_killed_at_every_stage_resumes_without_duplicates(db_url: str, tmp_path: Path) -> None:
    """SIGKILL while the server holds its answer to the upload, the batch creation, a
    poll and the download (each done at the server, its reply never read), then during
    the store: the next command finds the file and the batch again, submits nothing twice,
    and stores every verdict once (the last one a fresh interpreter)."""
    db = _kill_benchmark(tmp_path, db_url)
    expected = _pairs(db)
    log = tmp_path / "child.log"
    with JudgeServer(ServerConfig(batch_line_delay=0.002)) as srv:
        for stage in ("upload", "create", "retrieve", "content"):
            srv.config.hold_stage = stage
            proc = _Forked(db, srv, log)
            assert srv.stage_reached.wait(300), (stage, log.read_text())
            proc.kill()
            srv.release_stage()
            assert srv.stats.batches_created <= 1 and _count(db) == 0
        assert srv.stats.uploads == 1  # the file uploaded and not recorded was found again
        # kill while storing: the store commits the verdicts of 10 items at a time
        proc = _Forked(db, srv, log, hold_store=True)
        _wait(lambda: _count(db) > 0 or proc.poll() is not None)
        proc.kill()
        assert 0 < _count(db) < expected, log.read_text()
        _finish(db, srv, expected)
        assert srv.stats.batches_created == 1 and srv.stats.uploads == 1
    assert [r.status for r in runs(db)] == ["completed"]  # one run, resumed each time


@pytest.mark.slow
def test_killed_at_random_points_resumes_without_duplicates(db_url: str, tmp_path: Path) -> None:
    """Six SIGKILLs at random points (seeded) of a run whose every batch expires after a
    third of the items (so three rounds): after the k-th Batch API request of the process (k random: a lookup,
    the upload, the creation, a poll, a download), or once it has stored a first chunk,
    plus a random 0–30 ms. The last command completes the run with every verdict stored
    once, no line answered twice and one batch per round."""
    db = _kill_benchmark(tmp_path, db_url, tasks=10)
    expected = _pairs(db)
    rng = random.Random(20261206)
    log = tmp_path / "child.log"
    points: list[str] = []
    per_round = -(-expected // 3)  # every round expires after a third: three rounds
    with JudgeServer(ServerConfig(batch_line_delay=0.01, batch_expire_after=per_round)) as srv:

        def api_calls() -> int:
            return sum(srv.stats.routes.values())

        while len(points) < 6:
            calls, stored = api_calls(), _count(db)
            proc = _Forked(db, srv, log)
            if rng.random() < 0.25:
                target = "store"
                until = lambda: _count(db) > stored  # noqa: B023, E731
            else:
                k = rng.randint(1, 12)
                target = f"request {k}"
                until = lambda: api_calls() >= calls + k  # noqa: B023, E731
            _wait(lambda: until() or proc.poll() is not None)  # noqa: B023
            time.sleep(rng.uniform(0, 0.03))
            if proc.poll() is not None:
                break
            proc.kill()
            b = max(srv.batches.values(), key=lambda x: x["id"], default=None)
            points.append(f"{target}: {srv.stats.uploads} uploads, {srv.stats.batches_created} "
                          f"batches, {b['status'] if b else '-'}, {_count(db)} stored")  # fmt: skip
        assert len(points) == 6, points  # (the run did not finish before six kills)
        print("kill points:", points)  # shown with -s
        _finish(db, srv, expected, expired=True)
        batch_ids = {r["batch"]["batch_id"] for r in verdicts(db, "k").values()}
        assert srv.stats.batches_created == len(batch_ids) <= 3, points
    assert [r.status for r in runs(db)][-1] == "completed"
