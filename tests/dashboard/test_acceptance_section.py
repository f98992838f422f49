"""The report's task acceptance section: tasks per status in all, per workflow and per
domain, and agreement per round, with hand-counted expected values."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from gradercal.cli import main
from gradercal.db.acceptance import act, load_round_table, save_settings
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.formats import read_path
from tests.support.acceptance import AGREE, BENCH, survey, write_acceptance_benchmark


def _database(tmp_path: Path) -> str:
    """T1 accepted in round 1 (agreement 28/30); T2 sent back after round 1 (0.8) and in
    round 2 (open); T3 a draft."""
    path = str(tmp_path / "acc.sqlite")
    db = open_database(path)
    try:
        Repository(db).import_data(read_path(write_acceptance_benchmark(tmp_path / "bench")))
        save_settings(db, BENCH, n_boot=0)
        survey(db, "T1", ("ana", "ben", "cleo"), AGREE)
        survey(db, "T2", ("ana", "ben"), AGREE)
        act(db, BENCH, "T1", "open", actor="d")
        act(db, BENCH, "T1", "accept", actor="d")
        act(db, BENCH, "T2", "open", actor="d")
        act(db, BENCH, "T2", "reopen", note="c9 is ambiguous", actor="d")
        act(db, BENCH, "T2", "open", actor="d")
        table = load_round_table(db, BENCH)
    finally:
        db.dispose()
    # the loader: one row per (task, round), a draft one row without a round
    assert list(zip(table["task_id"], table["round"], table["round_state"], strict=True)) == [
        ("T1", 1, "accepted"),
        ("T2", 1, "needs_revision"),
        ("T2", 2, "open"),
        ("T3", None, None),
    ]
    assert list(table["status"]) == ["accepted", "in review", "in review", "draft"]
    return path


def _rows(out: str) -> dict[tuple[str, str], dict[str, object]]:
    data = json.loads(out)
    return {(r["breakdown"], r["group"]): r for r in data["dashboard"]["acceptance"]}


def test_acceptance_section_counts_and_agreement_per_round(tmp_path: Path) -> None:
    path = _database(tmp_path)
    res = CliRunner().invoke(main, ["report", "--db", path, "--json", "--bootstrap", "0"])
    assert res.exit_code == 0, res.output
    rows = _rows(res.stdout)
    assert list(rows) == [
        ("all", "all tasks"),
        ("workflow", "analysis"),
        ("workflow", "design"),
        ("domain", "genomics"),
        ("domain", "pharmacology"),
        ("round", "round 1"),
        ("round", "round 2"),
    ]
    everything = rows[("all", "all tasks")]
    assert (everything["tasks"], everything["draft"], everything["in_review"]) == (3, 1, 1)
    assert (everything["accepted"], everything["needs_revision"]) == (1, 0)
    # latest measured rounds: T1 28/30, T2's round 1 0.8 → mean (0.9333 + 0.8) / 2 = 0.8667
    assert everything["n_measured"] == 2
    assert abs(float(everything["agreement_mean"]) - (28 / 30 + 0.8) / 2) < 1e-12  # type: ignore[arg-type]
    assert everything["agreement_min"] == 0.8 and everything["statistic"] == "percent_agreement"
    genomics = rows[("domain", "genomics")]  # T1 accepted, T3 draft
    assert (genomics["tasks"], genomics["accepted"], genomics["draft"]) == (2, 1, 1)
    round1 = rows[("round", "round 1")]  # T1 accepted, T2 sent back
    assert (round1["tasks"], round1["accepted"], round1["needs_revision"]) == (2, 1, 1)
    round2 = rows[("round", "round 2")]  # T2 open, not measured yet
    assert (round2["tasks"], round2["in_review"], round2["n_measured"]) == (1, 1, 0)
    assert round2["agreement_mean"] is None

    # the dashboard's filters apply: genomics is T1 and T3
    res = CliRunner().invoke(
        main,
        ["report", "--db", path, "--json", "--bootstrap", "0", "--domains", "genomics"],
    )
    assert res.exit_code == 0, res.output
    rows = _rows(res.stdout)
    assert rows[("all", "all tasks")]["tasks"] == 2
    assert ("domain", "pharmacology") not in rows and ("round", "round 2") not in rows

    html = tmp_path / "r.html"
    res = CliRunner().invoke(main, ["report", "--db", path, "-o", str(html), "--bootstrap", "0"])
    assert res.exit_code == 0, res.output
    text = html.read_text("utf-8")
    assert '<h2 id="acceptance">Task acceptance</h2>' in text
    assert "<td>round</td><td>round 1</td>" in text
    assert "0.867 (0.800–0.933)" in text
