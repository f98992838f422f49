"""``gradercal judge align`` end to end on the demo against a loopback judge (#34).

The responsive loopback judge (tests/support/align_judge.py) errs on every negative-point
criterion until its prompt addresses that confusion, which only the development tasks'
evidence can make the optimizer write. The command must print the certificate (shape of
docs/cli.md), never let a held-out task reach a candidate, and improve kappa on the
held-out tasks; the null judge (ignoring its prompt) must not be proven better.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gradercal.analysis.alignment import consensus_units
from gradercal.cli.judge import judge
from gradercal.db.judging import JudgeStore, Scope
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.formats import read_folder
from gradercal.judge import DEFAULT_PROMPT
from tests.conftest import ROOT
from tests.support.align_judge import AlignJudgeServer

KEY_ENV = "GC_TEST_ALIGN_KEY"


def _answers(db_url: str) -> dict[tuple[str, str], bool]:
    """The experts' consensus of every unit, keyed by (response text, criterion text)."""
    db = open_database(db_url)
    try:
        store = JudgeStore(db)
        frames = store.repo.load_frames(None)
        cons = consensus_units(frames)
        keys = zip(cons["response_id"], cons["criterion_id"], strict=True)
        met = dict(zip(keys, cons["met"], strict=True))
        items = store.work_items(None, None, Scope.parse("all"), DEFAULT_PROMPT)
        return {
            (it.response_text, it.criterion_text): bool(met[(it.response_id, it.criterion_id)])
            for it in items
            if (it.response_id, it.criterion_id) in met
        }
    finally:
        db.dispose()


@pytest.fixture
def demo_db(db_url: str) -> str:
    db = open_database(db_url)
    try:
        Repository(db).import_data(read_folder(ROOT / "samples" / "demo"))
    finally:
        db.dispose()
    return db_url


def _cli(*args: str) -> str:
    res = CliRunner().invoke(judge, list(args), env={KEY_ENV: "k"}, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


def _align(db: str, srv: AlignJudgeServer, *extra: str) -> dict:
    conn = ["--model", "m", "--base-url", srv.base_url, "--api-key-env", KEY_ENV]
    _cli("run", "--db", db, "--judge", "j", *conn, "--no-logprobs")
    out = _cli("align", "--db", db, "--judge", "j", *conn, "--json", "--n-boot", "500", *extra)
    return json.loads(out)


def test_align_prints_the_certificate_and_improves_on_held_out(demo_db: str) -> None:
    with AlignJudgeServer(_answers(demo_db)) as srv:
        cert = _align(demo_db, srv, "--max-candidates", "2", "--seed", "3")
    assert {"split", "candidates", "chosen", "baseline", "heldout", "alt_test",
            "proven_better", "cost"} <= set(cert)  # fmt: skip
    split = cert["split"]
    assert split["seed"] == 3 and set(split["held_out"]).isdisjoint(split["development"])
    assert len(split["held_out"]) == 3 and len(split["development"]) == 7
    held = set(split["held_out"])
    assert len(cert["candidates"]) == 3  # guidance, examples, both
    assert {tuple(c["built_from"]) for c in cert["candidates"]} == {
        ("guidance",), ("examples",), ("guidance", "examples"),
    }  # fmt: skip
    for c in cert["candidates"]:
        assert held.isdisjoint(c["provenance"]["task_ids"])  # nothing held out leaked
        assert c["provenance"]["task_ids"]
    assert sum(c["evaluated_on_held_out"] for c in cert["candidates"]) == 2
    base = cert["baseline"]["prompt_version"]
    assert cert["heldout"][base]["role"] == "baseline"
    finalists = [c["prompt_version"] for c in cert["candidates"] if c["evaluated_on_held_out"]]
    for v in finalists:
        h = cert["heldout"][v]
        k = h["paired"]["kappa"]
        assert set(k) >= {"estimate", "ci", "ci_corrected"}
        assert k["estimate"] > 0.2  # the responsive judge truly improves out of sample
        assert h["kappa"] > cert["heldout"][base]["kappa"]
        assert k["ci_corrected"][0] <= k["ci"][0]  # corrected over the two finalists
        assert "balanced_accuracy" in h["paired"]
    assert cert["proven_better"] == any(cert["heldout"][v]["proven_better"] for v in finalists)
    assert cert["cost"]["requests"] > 0
    assert set(cert["alt_test"]) == {base, *finalists}
    # the certificate is stored, and read back whole
    stored = json.loads(_cli("certificates", "--db", demo_db, "--judge", "j", "--json"))
    assert [r["id"] for r in stored] == [cert["certificate_id"]]
    assert stored[0]["certificate"]["split"] == cert["split"]
    assert stored[0]["proven_better"] is False


def test_align_with_a_null_judge_keeps_the_baseline(demo_db: str) -> None:
    with AlignJudgeServer(_answers(demo_db), null=True) as srv:
        cert = _align(demo_db, srv)
    base = cert["baseline"]["prompt_version"]
    assert cert["proven_better"] is False
    assert cert["chosen"]["prompt_version"] == base
    assert "no candidate is proven better" in cert["note"]


def test_align_dry_run_sends_nothing(demo_db: str) -> None:
    with AlignJudgeServer(_answers(demo_db)) as srv:
        conn = ["--model", "m", "--base-url", srv.base_url, "--api-key-env", KEY_ENV]
        _cli("run", "--db", demo_db, "--judge", "j", *conn, "--no-logprobs")
        before = srv.stats.requests
        out = json.loads(
            _cli("align", "--db", demo_db, "--judge", "j", *conn, "--json", "--dry-run")
        )
        assert srv.stats.requests == before
    assert out["dry_run"] is True and out["estimate"]["requests"] > 0


def test_align_again_asks_the_server_nothing_new(demo_db: str) -> None:
    """A second run (e.g. after a kill) reuses every reply: the optimizer's and the
    candidates' come from the reply cache, and the certificate's figures are the same."""
    with AlignJudgeServer(_answers(demo_db)) as srv:
        first = _align(demo_db, srv)
        before = srv.stats.requests
        conn = ["--model", "m", "--base-url", srv.base_url, "--api-key-env", KEY_ENV]
        again = json.loads(
            _cli("align", "--db", demo_db, "--judge", "j", *conn, "--json", "--n-boot", "500")
        )
        assert srv.stats.requests == before
        assert srv.optimizer_calls == 1
    assert again["heldout"] == first["heldout"]
    assert [c["prompt_version"] for c in again["candidates"]] == [
        c["prompt_version"] for c in first["candidates"]
    ]


def test_align_reuses_the_calibration_held_out_tasks(demo_db: str) -> None:
    from gradercal.cli.analysis import calibrate

    with AlignJudgeServer(_answers(demo_db)) as srv:
        conn = ["--model", "m", "--base-url", srv.base_url, "--api-key-env", KEY_ENV]
        _cli("run", "--db", demo_db, "--judge", "j", *conn, "--no-logprobs")
        args = ["--db", demo_db, "--judge", "j", *conn, "--json", "--dry-run"]
        missing = CliRunner().invoke(judge, ["align", *args, "--holdout-from-calibration"])
        assert missing.exit_code == 1 and "no active calibration" in missing.output
        res = CliRunner().invoke(
            # a judge run without log-probabilities has no confidences: a threshold is refused
            # for it, the leniency correction is not (the split is what this test is about)
            calibrate,
            ["--db", demo_db, "--judge", "j", "--method", "leniency", "--holdout", "0.3",
             "--save", "--json"],
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        held = json.loads(res.output)["split"]["held_out"]
        out = json.loads(_cli("align", *args, "--holdout-from-calibration"))
    assert out["estimate"]["split"]["held_out"] == sorted(held)
    assert out["estimate"]["split"]["source"].startswith("calibration ")


def test_align_refuses_a_judge_never_run(demo_db: str) -> None:
    """Bad input: a clear error naming the option, exit status 1, no traceback."""
    conn = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--dry-run"]
    res = CliRunner().invoke(judge, ["align", "--db", demo_db, "--judge", "nobody", *conn])
    assert res.exit_code == 1 and "--judge: no judge 'nobody' has been run" in res.output
    assert "Traceback" not in res.output


def test_align_uses_answered_clarifications_of_development_tasks_only(demo_db: str) -> None:
    """Answered clarifications join the optimizer's evidence (#34) — those of development
    tasks only: a held-out task's answer never reaches the optimizer."""
    from gradercal.db.clarifications import answer, ask

    with AlignJudgeServer(_answers(demo_db)) as srv:
        conn = ["--model", "m", "--base-url", srv.base_url, "--api-key-env", KEY_ENV]
        _cli("run", "--db", demo_db, "--judge", "j", *conn, "--no-logprobs")
        plan = json.loads(
            _cli("align", "--db", demo_db, "--judge", "j", *conn, "--json", "--dry-run")
        )
        split = plan["estimate"]["split"]
        db = open_database(demo_db)
        try:
            crit = Repository(db).load_frames(None).criteria
            negative = crit.loc[crit["points"] < 0].drop_duplicates("task_id")
            for t, c in zip(negative["task_id"], negative["criterion_id"], strict=True):
                thread = ask(db, None, str(t), str(c), "does this count?", actor="ann")
                answer(db, thread.id, f"ANSWER-FOR-{t}", actor="coord")
        finally:
            db.dispose()
        asked = set(negative["task_id"].astype(str))
        assert asked & set(split["development"]) and asked & set(split["held_out"])
        out = _cli("align", "--db", demo_db, "--judge", "j", *conn, "--json", "--n-boot", "200")
    cert = json.loads(out)
    assert cert["split"] == split
    (prompt,) = srv.optimizer_prompts
    assert "coordinator's answer to a clarification question: ANSWER-FOR-" in prompt
    for t in split["held_out"]:
        assert f"ANSWER-FOR-{t}" not in prompt
    assert any(f"ANSWER-FOR-{t}" in prompt for t in split["development"])


def test_align_max_cost_caps_the_optimizer_call(demo_db: str) -> None:
    """--max-cost covers the optimizer's call: lowered to fit, or not made at all."""
    with AlignJudgeServer(_answers(demo_db)) as srv:
        conn = ["--model", "m", "--base-url", srv.base_url, "--api-key-env", KEY_ENV]
        _cli("run", "--db", demo_db, "--judge", "j", *conn, "--no-logprobs")
        # input free, output $100 per million tokens: $0.2 leaves 2,000 completion tokens
        priced = [*conn, "--price", "0,100", "--json", "--n-boot", "200"]
        res = CliRunner().invoke(
            judge, ["align", "--db", demo_db, "--judge", "j", *priced, "--max-cost", "0.2"],
            env={KEY_ENV: "k"},
        )  # fmt: skip
        assert srv.optimizer_limits == [2000], res.output
        # the candidate runs get what is left; each may overrun by one request ($0.0013)
        assert json.loads(res.stdout)["cost"]["usd"] <= 0.2 + 3 * 0.0015
        # output $1,000 per million: $0.1 leaves 100 tokens, below the least worth asking
        # for: no call, no guidance candidate
        priced = [*conn, "--price", "0,1000", "--json", "--n-boot", "200"]
        res = CliRunner().invoke(
            judge, ["align", "--db", demo_db, "--judge", "j", *priced, "--max-cost", "0.1"],
            env={KEY_ENV: "k"},
        )  # fmt: skip
        assert srv.optimizer_calls == 1, res.output
        assert "could exceed --max-cost" in res.stderr
        cert = json.loads(res.stdout)
        assert all("guidance" not in c["built_from"] for c in cert["candidates"])
