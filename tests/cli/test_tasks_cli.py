"""``gradercal tasks`` on both backends: the listing (table and --json), the decisions,
the settings, one-line errors, and ``export --accepted-only``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gradercal.cli import main
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.formats import read_path
from gradercal.ops.acceptance import STATISTICS
from tests.conftest import read_jsonl
from tests.support.acceptance import AGREE, survey, write_acceptance_benchmark


@pytest.fixture
def url(db_url: str, tmp_path: Path) -> str:
    db = open_database(db_url, create=True)
    try:
        Repository(db).import_data(read_path(write_acceptance_benchmark(tmp_path / "bench")))
        survey(db, "T1", ("ana", "ben", "cleo"), AGREE)
        survey(db, "T2", ("ana", "ben"), AGREE)
    finally:
        db.dispose()
    return db_url


def gc(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def test_listing_decisions_and_json(url: str) -> None:
    res = gc("tasks", "settings", "--db", url, "--n-boot", "0")
    assert res.exit_code == 0, res.output
    assert "bar: 0.9 (percent agreement" in res.output
    for task in ("T1", "T2"):
        res = gc("tasks", "open", task, "--db", url, "--actor", "dana")
        assert res.exit_code == 0, res.output
    assert "T1: in review (round 1, open)" in res.output.replace("T2", "T1")
    res = gc("tasks", "--db", url)
    assert res.exit_code == 0, res.output
    lines = {ln.split("│")[1].strip(): ln for ln in res.output.splitlines() if "│ T" in ln}
    # T1: (9 + 1/3) / 10 = 0.933 (see tests/db/test_acceptance.py), proposed
    assert "0.933" in lines["T1"] and "proposed" in lines["T1"]
    assert "5.0 4.0 4.0 5.0" in lines["T1"]
    assert "percent agreement 0.8 below the bar 0.9" in lines["T2"]
    assert "no review round yet" in lines["T3"]

    res = gc("tasks", "--db", url, "--json")
    data = json.loads(res.output)
    assert data["counts"] == {
        "draft": 1,
        "in review": 2,
        "needs revision": 0,
        "accepted": 0,
        "rejected": 0,
    }
    t1 = data["tasks"][0]
    assert t1["task"] == "T1" and t1["proposed"] is True and t1["round"] == 1
    assert t1["agreement"]["statistic"] == "percent_agreement"
    assert t1["agreement"]["value"] == pytest.approx(28 / 30)
    assert t1["agreement"]["n_units"] == 10
    assert data["settings"]["bar"] == 0.9

    res = gc("tasks", "accept", "T1", "--db", url, "--note", "clear", "--actor", "dana")
    assert res.exit_code == 0, res.output
    assert res.output.strip() == "T1: accepted (round 1, accepted)"
    res = gc("tasks", "reopen", "T2", "--db", url, "--note", "c9 is ambiguous", "--json")
    assert res.exit_code == 0, res.output
    back = json.loads(res.output)
    assert back["status"] == "needs revision" and back["note"] == "c9 is ambiguous"
    assert back["rounds"][0]["agreement"]["value"] == pytest.approx(0.8)

    res = gc("tasks", "--db", url, "--status", "accepted", "--json")
    assert [t["task"] for t in json.loads(res.output)["tasks"]] == ["T1"]
    res = gc("tasks", "--db", url, "--status", "needs-revision", "--json")
    assert [t["task"] for t in json.loads(res.output)["tasks"]] == ["T2"]


def test_errors_are_one_line(url: str) -> None:
    res = gc("tasks", "accept", "T3", "--db", url)
    assert res.exit_code == 1
    assert res.stderr.strip().splitlines() == [
        "error: T3: the task has no closed review round; --force decides without one"
    ]
    res = gc("tasks", "reject", "T9", "--db", url, "--note", "x")
    assert res.exit_code == 1 and "error: no task 'T9'" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    res = gc("tasks", "settings", "--db", url, "--survey-min", "nonsense=4")
    assert res.exit_code == 1
    assert res.stderr.startswith("error: survey_min: unknown statement 'nonsense'")
    res = gc("tasks", "settings", "--db", url, "--survey-min", "grounded")
    assert res.exit_code == 1 and "STATEMENT=NUMBER" in res.stderr
    res = gc("tasks", "reopen", "T1", "--db", url)  # --note is required
    assert res.exit_code == 2 and "--note" in res.output


def test_settings_round_trip(url: str) -> None:
    res = gc(
        "tasks",
        "settings",
        "--db",
        url,
        "--bar",
        "0.8",
        "--statistic",
        "gwet_ac1",
        "--min-rounds",
        "2",
        "--survey-min",
        "grounded=4.5",
        "--json",
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["bar"] == 0.8 and data["statistic"] == "gwet_ac1" and data["min_rounds"] == 2
    assert data["survey_min"]["grounded"] == 4.5 and data["survey_min"]["strong_task"] == 4.0
    again = json.loads(gc("tasks", "settings", "--db", url, "--json").output)
    assert again == data


def test_help_everywhere_and_the_statistics_match_the_rules() -> None:
    from gradercal.cli.tasks import _ACCEPT_STATISTICS

    assert tuple(_ACCEPT_STATISTICS) == STATISTICS
    for sub in ((), ("accept",), ("reject",), ("reopen",), ("open",), ("close",), ("settings",)):
        res = gc("tasks", *sub, "--help")
        assert res.exit_code == 0 and "Usage: " in res.output, sub


def test_export_accepted_only(url: str, tmp_path: Path) -> None:
    res = gc("export", "judgments", "-o", str(tmp_path / "none.jsonl"), "--db", url)
    assert res.exit_code == 0
    res = gc("export", "judgments", "--accepted-only", "-o", str(tmp_path / "j.jsonl"), "--db", url)
    assert res.exit_code == 1 and "no task is accepted yet" in res.stderr
    gc("tasks", "open", "T1", "--db", url, "--actor", "dana")
    assert gc("tasks", "accept", "T1", "--db", url, "--actor", "dana").exit_code == 0
    res = gc("export", "judgments", "--accepted-only", "-o", str(tmp_path / "j.jsonl"), "--db", url)
    assert res.exit_code == 0, res.output
    rows = read_jsonl(tmp_path / "j.jsonl")
    # T1: 3 reviewers × 10 criteria + the judge's one verdict
    assert len(rows) == 31 and {r["task_id"] for r in rows} == {"T1"}
    res = gc("export", "tasks", "--accepted-only", "-o", str(tmp_path / "t.jsonl"), "--db", url)
    assert [t["id"] for t in read_jsonl(tmp_path / "t.jsonl")] == ["T1"]
    res = gc("export", "scores", "--accepted-only", "-o", str(tmp_path / "s.csv"), "--db", url)
    assert res.exit_code == 0, res.output
    scores = (tmp_path / "s.csv").read_text().splitlines()
    assert scores[0].startswith("response_id,task_id,")
    # consensus, ana, ben, cleo and the judge on T1's one response
    assert [ln.split(",")[1] for ln in scores[1:]] == ["T1"] * 5
    out = tmp_path / "released"
    res = gc("export", "benchmark", "--accepted-only", "-o", str(out), "--db", url)
    assert res.exit_code == 0, res.output
    assert [t["id"] for t in read_jsonl(out / "tasks.jsonl")] == ["T1"]
    assert [r["id"] for r in read_jsonl(out / "responses.jsonl")] == ["T1-a"]
    assert {j["response_id"] for j in read_jsonl(out / "judgments.jsonl")} == {"T1-a"}
    # the released folder imports as a benchmark of its own
    assert gc("import", str(out), "--db", str(tmp_path / "rel.sqlite")).exit_code == 0


def test_rule_setting_and_the_figure_at_the_bar(url: str) -> None:
    res = gc("tasks", "settings", "--db", url)
    assert res.exit_code == 0, res.output
    assert "rule: point (the point estimate must reach the bar)" in res.output
    assert "clustered Wilson interval over criteria" in res.output
    for task in ("T1", "T2"):
        assert gc("tasks", "open", task, "--db", url, "--actor", "dana").exit_code == 0
    res = gc("tasks", "--db", url, "--json")
    t2 = json.loads(res.output)["tasks"][1]
    assert t2["task"] == "T2" and t2["agreement"]["method"] == "clustered_wilson"
    assert t2["at_bar"]["rule"] == "point" and t2["at_bar"]["passed"] is False
    # T2: one response, two reviewers, 10 criteria: at 0.9 a task fails with P(X ≤ 8)
    assert t2["at_bar"]["probability"] == pytest.approx(0.264, abs=0.025)
    res = gc("tasks", "--db", url)
    line = next(ln for ln in res.output.splitlines() if "│ T2" in ln)
    assert "percent agreement 0.8 below the bar 0.9" in line
    flat = " ".join(res.output.replace("│", " ").split())  # the table wraps its cells
    share = f"{100 * t2['at_bar']['probability']:.0f}"
    assert f"at the bar: {share}% would fail too (point rule, 10 units)" in flat
    res = gc("tasks", "settings", "--db", url, "--rule", "interval", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["rule"] == "interval"
    res = gc("tasks", "--db", url)
    assert "interval's lower end ≥ 0.9" in res.output
    res = gc("tasks", "settings", "--db", url, "--rule", "lower")
    assert res.exit_code == 2 and "lower" in res.output
