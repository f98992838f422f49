"""``gradercal plan`` through click's CliRunner: the --json shape of docs/cli.md, the
table, the chart, and refusals of bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradercal.cli import main
from gradercal.synth import SynthConfig, generate


@pytest.fixture
def pilot_db(db_url: str, tmp_path: Path) -> str:
    """A small synthetic benchmark graded by 3 experts and a judge (SQLite and PostgreSQL)."""
    generate(
        tmp_path / "b", SynthConfig(tasks=30, criteria_per_task=8, artifacts_per_task=0, seed=3)
    )
    res = CliRunner().invoke(main, ["import", str(tmp_path / "b"), "--db", db_url])
    assert res.exit_code == 0, res.output
    return db_url


def test_json_shape_from_assumptions() -> None:
    res = CliRunner().invoke(
        main,
        [
            "plan",
            "--assume",
            "kappa=0.6,icc=0.2,pass_rate=0.5,tasks=200",
            "--target",
            "pass_rate_half_width=0.2",
            "--target",
            "alttest_power=0.8",
            "--tasks",
            "20,100,200",
            "--experts",
            "1,3",
            "--sims",
            "20",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["targets"] == {"pass_rate_half_width": 0.2, "alttest_power": 0.8}
    assert [(d["tasks"], d["experts_per_item"]) for d in out["designs"]] == [
        (20, 1),
        (20, 3),
        (100, 1),
        (100, 3),
        (200, 1),
        (200, 3),
    ]
    for d in out["designs"]:
        assert set(d["expected_half_width"]) == {
            "pass_rate_half_width",
            "mean_score_half_width",
            "kappa_half_width",
        }
        assert set(d["power"]) == {"alttest_power", "acceptance_error"}
        # one expert per item: no alt-test, so the power target cannot be met
        assert d["meets_targets"] is (d["experts_per_item"] == 3 and d["meets_targets"])
    rec = out["recommended"]
    assert rec is not None and rec["experts_per_item"] == 3
    chosen = next(
        d
        for d in out["designs"]
        if (d["tasks"], d["experts_per_item"]) == (rec["tasks"], rec["experts_per_item"])
    )
    assert chosen["expected_half_width"]["pass_rate_half_width"] <= 0.2
    assert chosen["power"]["alttest_power"] >= 0.8


def test_pilot_table_and_chart(pilot_db: str, tmp_path: Path) -> None:
    chart = tmp_path / "plan.png"
    args = [
        "plan",
        "--db",
        pilot_db,
        "--judge",
        "judge",
        "--tasks",
        "10,30",
        "--experts",
        "1,3",
        "--sims",
        "20",
        "--target",
        "mean_score_half_width=0.5",
    ]
    res = CliRunner().invoke(main, [*args, "--chart", str(chart)])
    assert res.exit_code == 0, res.output
    assert "cheapest design meeting mean_score_half_width ≤ 0.5: 10 tasks × 1" in res.output
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = json.loads(CliRunner().invoke(main, [*args, "--json"]).output)
    assert out["model"]["source"] == "pilot"
    assert out["model"]["pilot"]["experts_per_item"] == 3
    assert out["model"]["n_tasks"] == 30


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--assume", "kapa=0.6"], 1, "unknown assumption 'kapa'"),
        (["--assume", "kappa=high"], 2, "'high' is not a number"),
        (["--assume", "kappa=0.6", "--target", "speed=1"], 2, "unknown target 'speed'"),
        (["--assume", "kappa=0.6", "--tasks", "1,2"], 1, "tasks graded must be between 2"),
        ([], 1, "give --judge NAME"),
    ],
)
def test_bad_input_is_refused_without_traceback(args: list[str], code: int, message: str) -> None:
    res = CliRunner().invoke(main, ["plan", *args, "--sims", "10"])
    assert res.exit_code == code, res.output
    assert message in res.output
    assert "Traceback" not in res.output
