"""Every kind of OpenAI-compatible server a judge meets today (issue #32, items 1-3).

One loopback server (tests/support/judge_server.py) with one switch per behaviour:
log-probabilities returned, silently ignored or refused with HTTP 400; JSON mode refused;
reasoning models that think in ``<think>…</think>`` (braces and a draft verdict inside)
or in ``reasoning_content``, that fence their JSON or follow it with prose. Every kind
must give every verdict in one run, exit 0, and say what was lost.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gradercal.cli.judge import EXIT_NO_VERDICTS, judge
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.formats import read_folder
from gradercal.judge import JudgeParams
from tests.judge.test_judge_client import FAST, items, run
from tests.judge.test_judge_run import KEY_ENV, MINI_PAIRS, judge_rows, judge_runs, run_args
from tests.support.judge_server import (
    SERVER_KINDS,
    Fault,
    JudgeServer,
    ServerConfig,
    expected_met,
    server_kind,
)

#: kinds whose replies carry no log-probabilities (the verdicts have no confidence)
NO_LOGPROBS = {"logprobs_ignored", "logprobs_refused"}


@pytest.fixture
def mini_db(db_url: str, mini: Path) -> str:
    db = open_database(db_url)
    try:
        Repository(db).import_data(read_folder(mini))
    finally:
        db.dispose()
    return db_url


def cli(*args: str) -> Result:
    return CliRunner().invoke(judge, list(args), catch_exceptions=False)


@pytest.mark.parametrize("kind", sorted(SERVER_KINDS))
def test_every_server_kind_gives_every_verdict_in_one_run(
    kind: str, mini_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-kinds")
    # latency and 4 in flight: a refusal arrives while other requests are on their way
    with JudgeServer(server_kind(kind, latency=0.05)) as srv:
        result = cli(*run_args(mini_db, srv, "--concurrency", "4"))
        requests = srv.stats.requests
        refusals = srv.stats.replies["400"]
    assert result.exit_code == 0, result.output
    assert "10 verdicts, 0 parse failures, 0 errors" in result.output
    rows = judge_rows(mini_db)
    assert {(x["response"], x["criterion"]) for x in rows} == MINI_PAIRS
    for x in rows:
        j = x["row"]
        assert j.met is expected_met(x["criterion_text"], x["response_text"]), x
        p = j.provenance
        if kind in NO_LOGPROBS:
            # nothing measured: no confidence rather than a made-up 1.0
            assert j.confidence is None and p["confidence_source"] is None
        else:
            # the verdict token of the final answer, not the draft in the reasoning
            assert p["confidence_source"] == "logprobs"
            assert j.confidence == pytest.approx(0.9)
    [record] = judge_runs(mini_db)
    assert record.status == "completed"
    assert requests == 10 + refusals
    if kind in NO_LOGPROBS:
        assert "10 of 10 verdicts have no confidence" in result.output
        assert "--samples K" in result.output and "--method leniency" in result.output
    if kind == "logprobs_ignored":
        assert "returned no log-probabilities for 10 of 10 verdicts" in result.output
    if kind == "logprobs_refused":
        assert "refused log-probabilities" in result.output
        assert refusals >= 2  # several were in flight; each was sent again, not lost
    if kind == "json_mode_refused":
        assert "refused JSON mode" in result.output
        assert all("response_format" not in b for b in srv.stats.bodies[-10:])
    if kind not in ("logprobs_refused", "json_mode_refused"):
        assert refusals == 0
    if kind not in NO_LOGPROBS | {"json_mode_refused"}:
        assert "note:" not in result.output  # nothing lost, nothing said


def test_a_run_without_one_readable_verdict_is_not_recorded_completed(mini_db: str) -> None:
    cfg = ServerConfig(faults=[Fault("", ["malformed"])])
    with JudgeServer(cfg) as srv:
        result = cli(*run_args(mini_db, srv, "--json"))
    assert result.exit_code == EXIT_NO_VERDICTS, result.output
    out = json.loads(result.stdout)
    assert (out["status"], out["ok"], out["parse_failures"]) == ("no_verdicts", 0, 10)
    assert "0 verdicts in 10 items" in out["message"]
    assert "no JSON object in the reply" in out["message"]
    [record] = judge_runs(mini_db)
    assert record.status == "no_verdicts"
    assert record.parameters["result"]["message"] == out["message"]


def test_a_run_gives_up_when_its_first_items_all_fail() -> None:
    with JudgeServer(ServerConfig(faults=[Fault("", ["malformed"])])) as srv:
        out = run(srv, items(200), concurrency=2)
        sent = srv.stats.requests
    assert out.stats.status == "no_verdicts" and out.stats.ok == 0
    assert out.stats.message is not None and out.stats.message.startswith("gave up")
    # 20 items, plus those already in flight, each asked parse_attempts times
    assert 20 <= out.stats.done <= 22
    assert sent == out.stats.done * FAST.parse_attempts


def test_requests_in_flight_when_logprobs_are_refused_are_sent_again() -> None:
    with JudgeServer(ServerConfig(reject_params={"logprobs"}, latency=0.05)) as srv:
        out = run(srv, items(40), concurrency=8)
        refusals = srv.stats.replies["400"]
    assert refusals >= 2  # the requests in flight with the first one were refused too
    assert (out.stats.ok, out.stats.errors) == (40, 0)
    assert out.adaptations == ["logprobs dropped (server rejected them)"]
    assert all(v.provenance["samples"][0]["attempts"] == 1 for v in out.verdicts.values())


def test_k_samples_give_a_confidence_where_the_server_gives_no_logprobs() -> None:
    with JudgeServer(server_kind("logprobs_ignored", vote_flip_period=3)) as srv:
        params = JudgeParams(model="m", samples=3, temperature=0.7)
        out = run(srv, items(6), params=params)
    assert out.stats.with_confidence == 6 and out.stats.logprobs_missing == 6
    for ref, v in out.verdicts.items():
        assert v.met is bool(ref % 2) and v.provenance["confidence_source"] == "samples"
        assert v.confidence == pytest.approx(2 / 3)


@pytest.mark.parametrize("kind", ["logprobs_ignored", "logprobs"])
def test_calibrate_refuses_a_threshold_without_confidences_and_says_what_works(
    kind: str, mini_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gradercal.cli.analysis import calibrate

    monkeypatch.setenv(KEY_ENV, "sk-test-kinds")
    with JudgeServer(server_kind(kind)) as srv:
        assert cli(*run_args(mini_db, srv)).exit_code == 0
    args = ["--db", mini_db, "--judge", "j", "--folds", "2", "--holdout", "0", "--bootstrap", "0"]
    runner = CliRunner()
    threshold = runner.invoke(calibrate, [*args, "--method", "threshold"])
    if kind == "logprobs":  # measured confidences: the threshold is fitted as before
        assert threshold.exit_code == 0, threshold.output
        assert "saved as threshold version 1" in threshold.output
        return
    assert threshold.exit_code != 0
    assert "none of its verdicts has a confidence" in threshold.output
    assert "--method leniency" in threshold.output and "--samples K" in threshold.output
    assert "Traceback" not in threshold.output
    leniency = runner.invoke(calibrate, [*args, "--method", "leniency", "--no-save"])
    assert leniency.exit_code == 0, leniency.output


def test_dry_run_shows_what_k_samples_cost(mini_db: str) -> None:
    with JudgeServer() as srv:
        one = cli(*run_args(mini_db, srv, "--dry-run", "--price", "1,2"))
        three = cli(*run_args(mini_db, srv, "--dry-run", "--price", "1,2", "--samples", "3"))
        assert srv.stats.requests == 0
    assert "10 pairs, 10 requests" in one.output and "--samples" not in one.output
    assert "10 pairs, 30 requests" in three.output
    assert "--samples 3: 3 requests per pair, 3x the cost of one" in three.output
