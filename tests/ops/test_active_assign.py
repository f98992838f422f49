"""Active assignment: the pure draw (gradercal.ops.active) and, end to end through the CLI on
both backends, ``assign --strategy active`` storing probabilities that ``estimate`` then uses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from gradercal.analysis.estimate import active_ppi_mean, estimate_table
from gradercal.cli import main
from gradercal.errors import ValidationError
from gradercal.ops.active import (
    Pilot,
    active_probabilities,
    draw_active,
    fit_error_model,
    poisson_uniforms,
    response_uncertainty,
)


# -- the pure decision ------------------------------------------------------------------------
def test_probabilities_sum_to_the_budget_and_keep_the_floor() -> None:
    rng = np.random.default_rng(1)
    s = np.sqrt(rng.uniform(0, 0.25, 500))
    p, floor = active_probabilities(s, 60, floor=0.05)
    assert floor == 0.05
    assert p.sum() == pytest.approx(60, abs=1e-9)
    assert p.min() >= 0.05 - 1e-12
    assert p.max() <= 1.0
    # larger uncertainty, larger probability (monotone)
    order = np.argsort(s)
    assert np.all(np.diff(p[order]) >= -1e-12)
    # default floor: a quarter of the uniform rate
    _p, default = active_probabilities(s, 60)
    assert default == pytest.approx(0.25 * 60 / 500)


def test_equal_uncertainty_gives_the_uniform_rate_and_caps_at_one() -> None:
    p, _ = active_probabilities(np.ones(200), 50)
    assert np.allclose(p, 0.25)
    s = np.r_[np.full(5, 100.0), np.ones(95)]
    p, _ = active_probabilities(s, 20, floor=0.0)
    assert np.all(p[:5] == 1.0)
    assert p.sum() == pytest.approx(20)


def test_cli_refuses_active_without_budget_and_floor_without_active(tmp_path: Path) -> None:
    db = str(tmp_path / "x.sqlite")
    base = ["assign", "--db", db, "--graders", "a", "--overlap", "1", "--seed", "1"]
    res = CliRunner().invoke(main, [*base, "--strategy", "active"])
    assert res.exit_code == 2 and "needs --budget" in res.output
    for more in (["--floor", "0.1"], ["--budget", "3", "--floor", "0.1"]):
        res = CliRunner().invoke(main, [*base, *more])
        assert res.exit_code == 2 and "--strategy active only" in res.output
        assert "Traceback" not in res.output


def test_a_uniform_batch_from_the_command_is_the_windows(db_url: str, tmp_path: Path) -> None:
    """``assign --budget N`` (strategy uniform) draws a uniform batch of N among the
    unassigned responses, every one with probability N/n: the same draw as the window's
    Where to grade next (``assign_active(uniform=True)``) with the same seed, on a second
    database of the same benchmark."""
    from gradercal.db.assignments import assignment_records
    from gradercal.db.session import open_database
    from gradercal.ui.grade_next import assign_batch

    bench = tmp_path / "bench"
    _run(
        [
            "samples", "generate", "-o", str(bench), "--tasks", "40", "--criteria-per-task", "4",
            "--responses-per-task", "2", "--human-graders", "0", "--artifacts-per-task", "0",
            "--seed", "3",
        ]
    )  # fmt: skip
    window_db = f"sqlite:///{tmp_path / 'window.sqlite'}"
    for url in (db_url, window_db):
        _run(["import", str(bench), "--db", url])
    args = [
        "assign", "--db", db_url, "--budget", "20", "--graders", "ana,ben",
        "--overlap", "1", "--seed", "7", "--json",
    ]  # fmt: skip
    out = json.loads(_run(args))
    assert out["strategy"] == "uniform" and out["n_candidates"] == 80
    assert {a["probability"] for a in out["assigned"]} == {20 / 80}
    db = open_database(window_db)
    try:
        assign_batch(
            db, None, graders=["ana", "ben"], overlap=1, strategy="uniform", budget=20, seed="7"
        )
        window = assignment_records(db)
    finally:
        db.dispose()
    db = open_database(db_url)
    try:
        command = assignment_records(db)
    finally:
        db.dispose()
    assert command == window
    assert {r["inclusion_probability"] for r in command} == {0.25}
    assert len({r["response_id"] for r in command}) == out["n_assigned"]


def test_bad_budget_or_floor_is_refused_with_the_field() -> None:
    with pytest.raises(ValidationError, match="budget"):
        active_probabilities(np.ones(10), 11)
    with pytest.raises(ValidationError, match="floor"):
        active_probabilities(np.ones(10), 2, floor=0.5)


def test_poisson_draw_has_the_stated_inclusion_probabilities() -> None:
    """Over many seeds every response is drawn at its probability (Poisson sampling)."""
    ids = [f"r{i}" for i in range(40)]
    rng = np.random.default_rng(2)
    unc = {r: float(u) for r, u in zip(ids, rng.uniform(0, 0.25, 40), strict=True)}
    first = draw_active(unc, 10, seed="s0")
    seeds = 3000
    hits = np.zeros(40)
    for k in range(seeds):
        hits += draw_active(unc, 10, seed=f"s{k}").selected
    freq = hits / seeds
    se = np.sqrt(first.probabilities * (1 - first.probabilities) / seeds)
    assert np.all(np.abs(freq - first.probabilities) <= 4.5 * se + 1e-9)
    # reproducible and independent of the order of the responses
    again = draw_active(dict(reversed(list(unc.items()))), 10, seed="s0")
    assert again.chosen() == first.chosen()
    assert np.all((poisson_uniforms(ids, 1) >= 0) & (poisson_uniforms(ids, 1) < 1))


def test_uncertainty_from_confidences_or_run_disagreement() -> None:
    assert response_uncertainty([0.9, 0.5]) == pytest.approx((0.09 + 0.25) / 2)
    # a missing confidence falls back on the share of runs saying met
    assert response_uncertainty([None, 1.0], [0.5, None]) == pytest.approx(0.125)
    assert response_uncertainty([None], [None]) is None


def test_pilot_fit_turns_uniform_when_confidence_does_not_rank_errors() -> None:
    rng = np.random.default_rng(3)
    u = rng.uniform(0, 0.25, 200)
    a, b, src = fit_error_model(Pilot(u, rng.uniform(0, 0.1, 200)))
    assert src == "pilot" and b == 0.0 and a > 0
    a, b, src = fit_error_model(Pilot(u, 2 * u + rng.normal(0, 0.01, 200)))
    assert b == pytest.approx(2, rel=0.1)
    assert fit_error_model(None) == (0.0, 1.0, "confidence")


def test_active_estimate_with_uniform_probabilities_is_the_uniform_mean() -> None:
    """With every π equal and no pilot the weighted estimate's λ=0 form is the sample mean."""
    rng = np.random.default_rng(4)
    y = rng.random(50)
    f_all = rng.random(400)
    res = active_ppi_mean(y, f_all[:50], np.full(50, 50 / 400), f_all)
    assert res.classical == pytest.approx(float(y.mean()))
    assert res.n_labelled == 50 and res.n_unlabelled == 350


# -- end to end through the CLI, both backends --------------------------------------------------
def _run(args: list[str]) -> str:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    return res.stdout


@pytest.mark.slow
def test_active_assign_stores_probabilities_that_estimate_uses(db_url: str, tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    _run(
        [
            "samples", "generate", "-o", str(bench), "--tasks", "80", "--criteria-per-task", "6",
            "--responses-per-task", "2", "--human-graders", "0", "--artifacts-per-task", "0",
            "--seed", "5",
        ]
    )  # fmt: skip
    _run(["import", str(bench), "--db", db_url])
    args = [
        "assign", "--db", db_url, "--strategy", "active", "--budget", "50",
        "--graders", "ana,ben", "--overlap", "1", "--seed", "11", "--json",
    ]  # fmt: skip
    out = json.loads(_run(args))
    assert out["strategy"] == "active" and out["sampling"] == "poisson"
    assigned = {a["response_id"]: a for a in out["assigned"]}
    assert len(assigned) == out["n_assigned"] > 10
    assert all(out["floor"] <= a["probability"] <= 1 for a in assigned.values())
    # the experts grade what they were sent (the truth, as a v1 judgments file)
    judged = {
        (j["response_id"], j["criterion_id"])
        for j in map(json.loads, (bench / "judgments.jsonl").read_text("utf-8").splitlines())
    }
    rows = []
    for line in (bench / "truth.jsonl").read_text("utf-8").splitlines():
        t = json.loads(line)
        if t["response_id"] in assigned and (t["response_id"], t["criterion_id"]) in judged:
            grader = assigned[t["response_id"]]["graders"][0]
            rows.append(
                json.dumps(
                    {
                        "response_id": t["response_id"],
                        "criterion_id": t["criterion_id"],
                        "grader": grader,
                        "grader_kind": "human",
                        "met": t["met"],
                    }
                )
            )
    human = tmp_path / "human.jsonl"
    human.write_text("\n".join(rows) + "\n", "utf-8")
    _run(["import", str(human), "--db", db_url])
    # blinding: the grader's offline packet carries neither the probabilities nor the
    # draws (nor any judge verdict or confidence); the coordinator's export carries them
    pkt = tmp_path / "ana.gcpkg"
    _run(["packet", "export", "--db", db_url, "--grader", "ana", "-o", str(pkt)])
    import sqlite3
    import zipfile

    with zipfile.ZipFile(pkt) as z:
        (tmp_path / "pkt").mkdir()
        z.extractall(tmp_path / "pkt")
    con = sqlite3.connect(tmp_path / "pkt" / "packet.sqlite")
    try:
        carried = con.execute(
            "SELECT count(*), count(inclusion_probability), count(sampling_round) FROM assignment"
        ).fetchone()
        judges = con.execute("SELECT count(*) FROM grader WHERE kind != 'human'").fetchone()[0]
        confident = con.execute(
            "SELECT count(*) FROM judgment WHERE confidence IS NOT NULL"
        ).fetchone()[0]
    finally:
        con.close()
    mine = sorted(a["probability"] for a in assigned.values() if a["graders"] == ["ana"])
    assert carried == (len(mine), 0, 0) and mine
    assert judges == 0 and confident == 0
    for member in (tmp_path / "pkt").rglob("*"):
        if member.is_file() and member.suffix != ".sqlite":
            text = member.read_text("utf-8", errors="replace")
            assert "probability" not in text and "sampling_round" not in text, member.name
            # the grader's own verdicts have a confidence field, always empty here
            assert not re.search(r'"confidence":\s*[-0-9.]', text), member.name
    export = tmp_path / "assignments.jsonl"
    _run(["export", "assignments", "--db", db_url, "-o", str(export)])
    exported = [json.loads(x) for x in export.read_text("utf-8").splitlines()]
    assert sorted(
        r["inclusion_probability"] for r in exported if r["grader"] == "ana"
    ) == pytest.approx(mine, rel=1e-12)
    assert {r["sampling_round"] for r in exported} == {1}
    assert {r["response_id"] for r in exported} == set(assigned)
    # a second draw: the error model is now fitted on the experts' grades so far
    args2 = [*args[:-2], "12", "--json"]
    second = json.loads(_run(args2))
    assert second["round"] == 2 and out["round"] == 1
    assert second["error_model_source"] == "pilot"
    assert not set(second_ids := {a["response_id"] for a in second["assigned"]}) & set(assigned)
    assert second_ids
    est = json.loads(_run(["estimate", "--db", db_url, "--judge", "judge", "--json"]))
    assert est["design"] == "active"
    assert "active ppi++ hajek" in _run(["estimate", "--db", db_url, "--judge", "judge"])
    # the same figures from the probabilities the assign command printed
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database

    db = open_database(db_url)
    try:
        frames = Repository(db).load_frames()
    finally:
        db.dispose()
    t = estimate_table(frames, "judge")
    lab = t["human_score"].notna().to_numpy(bool)
    prob = t["response_id"].map({r: a["probability"] for r, a in assigned.items()})
    for row in est["models"]:
        sel = (t["model"] == row["model"]).to_numpy(bool)
        y = t["human_score"].to_numpy(np.float64)
        f = t["judge_score"].to_numpy(np.float64)
        res = active_ppi_mean(
            y[sel & lab], f[sel & lab], prob.to_numpy(np.float64)[sel & lab], f[sel]
        )
        assert row["mean_score"]["estimate"] == pytest.approx(res.estimate, rel=1e-12)
        assert row["mean_score"]["ci"] == pytest.approx([res.ci_low, res.ci_high], rel=1e-12)
        assert row["mean_score"]["method"].startswith("active")
        assert row["n_human_graded"] == int((sel & lab).sum()) > 2
