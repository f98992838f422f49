"""The analysis commands through click's CliRunner on a SQLite database holding
samples/demo (imported with `gradercal import`), and gradercal/db/calibrations.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from gradercal._util.jsonsafe import json_safe
from gradercal.cli import analysis as acli
from gradercal.cli import main
from tests.conftest import DATA, DEMO

COMMANDS = ("agreement", "alttest", "calibrate", "estimate", "health", "impact", "surveys")


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("clidb") / "demo.sqlite"
    res = CliRunner().invoke(main, ["import", str(DEMO), "--db", str(path)])
    assert res.exit_code == 0, res.output
    return path


@pytest.fixture
def db(demo_db: Path, tmp_path: Path) -> Path:
    """A private copy of the demo database (for commands that write)."""
    dst = tmp_path / "demo.sqlite"
    for suffix in ("", "-wal", "-shm"):  # SQLite in WAL mode keeps recent pages aside
        src = demo_db.with_name(demo_db.name + suffix)
        if src.exists():
            shutil.copy(src, dst.with_name(dst.name + suffix))
    return dst


def run(command: str, *args: Any) -> Result:
    cmd: click.Command = getattr(acli, command)
    return CliRunner().invoke(cmd, [str(a) for a in args])


def run_json(command: str, *args: Any) -> Any:
    res = run(command, *args, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


@pytest.mark.parametrize("command", COMMANDS)
def test_help(command: str) -> None:
    res = run(command, "--help")
    assert res.exit_code == 0
    for option in ("--db", "--benchmark", "--json"):
        assert option in res.output


def test_agreement_json_equals_the_library(demo_db: Path) -> None:
    from gradercal.analysis.agreement import agreement_report
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database

    out = run_json(
        "agreement",
        "--db",
        demo_db,
        "--judge",
        "judge-gpt",
        "--by",
        "tag",
        "--bootstrap",
        100,
        "--seed",
        3,
    )
    repo = Repository(open_database(str(demo_db)))
    frames = repo.load_frames()
    lib = agreement_report(
        frames, judge="judge-gpt", by="tag", n_boot=100, seed=3, benchmark=out["benchmark"]
    )
    assert out == json.loads(json.dumps(json_safe(lib)))
    # the reference is the experts' majority, replaced by the final verdict where the
    # demo's adjudications.jsonl has one (counted by hand from the demo's files: one
    # adjudication turns a majority "not met" the judge shared into "met")
    assert out["human_judge"]["confusion"] == {"tp": 174, "fp": 45, "fn": 18, "tn": 147}
    assert set(out) >= {
        "benchmark",
        "humans",
        "judge",
        "bootstrap",
        "human_human",
        "human_judge",
        "groups",
    }
    m = out["human_judge"]["metrics"]["balanced_f1"]
    assert set(m) == {"value", "ci", "note"} and len(m["ci"]) == 2
    repo.db.dispose()


def test_agreement_tables(demo_db: Path) -> None:
    res = run("agreement", "--db", demo_db, "--judge", "judge-gpt", "--bootstrap", 50)
    assert res.exit_code == 0, res.output
    for text in (
        "Fleiss' kappa",
        "Krippendorff's alpha",
        "balanced F1",
        "leniency bias",
        "expert-ana",
    ):
        assert text in res.output
    humans_only = run("agreement", "--db", demo_db, "--bootstrap", 0, "--by", "criterion")
    assert humans_only.exit_code == 0 and "By criterion" in humans_only.output


def test_unknown_judge_is_refused(demo_db: Path) -> None:
    res = run("agreement", "--db", demo_db, "--judge", "nobody")
    assert res.exit_code == 1
    assert "no grader 'nobody'" in res.output
    res = run("alttest", "--db", demo_db, "--judge", "judge-gpt", "--humans", "expert-ana")
    assert res.exit_code == 1
    assert "at least two human graders" in res.output
    bad = run("agreement", "--db", demo_db, "--by", "colour")
    assert bad.exit_code == 2


def test_alttest(demo_db: Path) -> None:
    out = run_json("alttest", "--db", demo_db, "--judge", "judge-gpt", "--epsilon", 0.1)
    assert out["epsilon"] == 0.1 and out["n_items"] == 384 and out["n_humans"] == 3
    assert set(out["annotators"][0]) >= {
        "human",
        "rho_judge",
        "rho_human",
        "p_value",
        "p_adjusted",
        "rejected",
    }
    text = run("alttest", "--db", demo_db, "--judge", "judge-gpt")
    assert "winning rate" in text.output and "PASSES" in text.output


def test_calibrate_saves_versions_and_impact_uses_the_active_one(db: Path) -> None:
    from gradercal.db.calibrations import list_calibrations, load_calibration
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database

    first = run_json(
        "calibrate", "--db", db, "--judge", "judge-gpt", "--method", "leniency", "--bootstrap", 50
    )
    assert first["saved"]["version"] == 1 and first["saved"]["active"] is True
    assert (
        first["metrics"]["criterion"]["after"]["cohen_kappa"]["value"]
        > first["metrics"]["criterion"]["before"]["cohen_kappa"]["value"]
    )
    again = run_json(
        "calibrate", "--db", db, "--judge", "judge-gpt", "--method", "leniency", "--bootstrap", 0
    )
    assert again["saved"]["version"] == 2
    iso = run_json(
        "calibrate", "--db", db, "--judge", "judge-gpt", "--method", "isotonic", "--bootstrap", 0
    )
    assert iso["saved"]["version"] == 1 and iso["level"] == "response"
    dry = run_json("calibrate", "--db", db, "--judge", "judge-gpt", "--no-save", "--bootstrap", 0)
    assert dry["saved"] is None
    repo = Repository(open_database(str(db)))
    rows = list_calibrations(repo, judge="judge-gpt")
    assert [(r.method, r.version, r.active) for r in rows] == [
        ("isotonic", 1, True),
        ("leniency", 2, False),
        ("leniency", 1, False),
    ]
    active = load_calibration(repo, None, "judge-gpt")
    assert active is not None and active.method == "isotonic"
    assert load_calibration(repo, None, "judge-gpt", method="leniency").version == 2  # type: ignore[union-attr]
    assert active.split["scheme"] == "GroupKFold" and active.metrics["level"] == "response"
    assert active.params["method"] == "isotonic"
    imp = run_json("impact", "--db", db, "--judge", "judge-gpt", "--bootstrap", 100)
    assert imp["calibration"]["method"] == "isotonic" and imp["calibration"]["version"] == 1
    assert imp["graders"] == ["consensus", "judge", "calibrated"]
    from gradercal.db.calibrations import activate_calibration

    activate_calibration(repo, rows[1].id)
    assert load_calibration(repo, None, "judge-gpt").method == "leniency"  # type: ignore[union-attr]
    repo.db.dispose()


def test_impact_without_calibration(demo_db: Path) -> None:
    out = run_json(
        "impact",
        "--db",
        demo_db,
        "--judge",
        "judge-gpt",
        "--calibration",
        "none",
        "--by",
        "workflow",
        "--bootstrap",
        100,
    )
    assert out["graders"] == ["consensus", "judge"] and out["calibration"] is None
    assert set(out["breakdowns"]) == {"workflow"}
    assert out["n_paired"] == 30 and out["n_flips"]["judge"] == len(out["flips"])
    text = run(
        "impact",
        "--db",
        demo_db,
        "--judge",
        "judge-gpt",
        "--calibration",
        "threshold",
        "--bootstrap",
        50,
    )
    assert (
        text.exit_code == 0
        and "calibrated judge" in text.output
        and "Pass ↔ fail flips" in text.output
    )
    bad = run("impact", "--db", demo_db, "--judge", "judge-gpt", "--by", "colour")
    assert bad.exit_code == 2


def test_estimate(demo_db: Path) -> None:
    out = run_json("estimate", "--db", demo_db, "--judge", "judge-gpt")
    assert out["stratify"] is None and len(out["models"]) == 3
    row = out["models"][0]
    assert set(row) >= {"model", "mean_score", "pass_rate", "pass_rate_rogan_gladen"}
    # every demo response is expert-graded: PPI reduces to the experts' mean
    assert row["mean_score"]["estimate"] == pytest.approx(row["mean_score"]["classical"])
    assert row["mean_score"]["lambda"] == 0.0
    strat = run_json("estimate", "--db", demo_db, "--judge", "judge-gpt", "--stratify", "workflow")
    # ten responses per model over seven workflows: no two strata of 10 labels, so
    # stratification is refused and the figures are plain PPI++ (here the experts' mean)
    ms = strat["models"][0]["mean_score"]
    assert ms["strata"] == {} and "stratification refused" in ms["note"]
    assert ms["estimate"] == pytest.approx(row["mean_score"]["estimate"])
    text = run("estimate", "--db", demo_db, "--judge", "judge-gpt")
    assert text.exit_code == 0 and "Rogan–Gladen" in text.output
    # the interval methods are named; ten labels per model give no zero-width interval
    assert "agresti-coull" in " ".join(text.output.split())
    assert row["pass_rate"]["method"] == "ppi++ agresti-coull (t, n-1 df)"
    assert all(m["pass_rate"]["ci"][1] > m["pass_rate"]["ci"][0] for m in out["models"])


def test_health(demo_db: Path) -> None:
    out = run_json("health", "--db", demo_db, "--judge", "judge-gpt", "--limit", 3)
    assert out["n_criteria"] == 128 and len(out["criteria"]) == 3
    assert out["criteria"][0]["disagreements"]
    impacts = [c["impact"] for c in out["criteria"]]
    assert impacts == sorted(impacts, reverse=True)
    text = run("health", "--db", demo_db, "--bar", 0.8, "--limit", 5)
    assert text.exit_code == 0 and "Criterion health (bar 80%)" in text.output


def test_surveys_and_task_reviews(db: Path) -> None:
    from sqlalchemy import select

    from gradercal.db import models as m
    from gradercal.db.calibrations import load_task_reviews
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database

    repo = Repository(open_database(str(db)))
    with repo.db.write() as s:
        tasks = s.execute(select(m.Task.id).order_by(m.Task.position)).scalars().all()[:4]
        graders = {g.name: g.id for g in s.execute(select(m.Grader)).scalars()}
        answers = {
            "expert-ana": [
                {"real_research": 5, "grounded": 4},
                {"real_research": 4},
                {"real_research": 5},
                {},
            ],
            "expert-ben": [
                {"real_research": 5, "grounded": 2},
                {"real_research": 3},
                {"real_research": 5},
                {"strong_task": 4},
            ],
        }
        for name, per_task in answers.items():
            for tid, ans in zip(tasks, per_task, strict=True):
                s.add(
                    m.TaskReview(
                        task_id=tid,
                        grader_id=graders[name],
                        answers=ans,
                        created_at=m.utcnow(),
                        updated_at=m.utcnow(),
                    )
                )
    df = load_task_reviews(repo)
    assert len(df) == 9 and set(df.columns) == {"task_id", "reviewer", "dimension", "answer"}
    assert df["answer"].dtype == "int64"
    repo.db.dispose()
    out = run_json("surveys", "--db", db)
    dims = {d["dimension"]: d for d in out["dimensions"]}
    rr = dims["real_research"]
    # answers 5, 4, 5, 5, 3, 5 → strongly agree 4/6, agree or strongly agree 5/6
    assert rr["n_answers"] == 6
    assert rr["share_strongly_agree"]["value"] == pytest.approx(4 / 6)
    assert rr["share_agree_or_strongly_agree"]["value"] == pytest.approx(5 / 6)
    assert rr["krippendorff_alpha"]["value"] is not None
    assert dims["reasoning_skill"]["n_answers"] == 0
    text = run("surveys", "--db", db)
    assert text.exit_code == 0 and "real_research" in text.output


def test_mini_benchmark_commands(tmp_path: Path) -> None:
    path = tmp_path / "mini.sqlite"
    assert (
        CliRunner().invoke(main, ["import", str(DATA / "mini"), "--db", str(path)]).exit_code == 0
    )
    # two tasks: the task-clustered default cannot test anyone and says why
    refused = run("alttest", "--db", path, "--judge", "judge-x")
    assert refused.exit_code == 1 and "only 2 tasks" in refused.output
    out = run_json("alttest", "--db", path, "--judge", "judge-x", "--cluster", "none")
    assert out["test"] == "exact score" and out["n_tested"] == 2
    assert any("only two human graders" in w for w in out["warnings"])
    assert not any("--seed" in w for w in out["warnings"])
    seeded = run_json(
        "alttest", "--db", path, "--judge", "judge-x", "--cluster", "none", "--seed", 3
    )
    assert any("--seed only affects the task-clustered test" in w for w in seeded["warnings"])
    agr = run_json("agreement", "--db", path, "--judge", "judge-x", "--bootstrap", 0)
    assert agr["human_judge"]["confusion"] == {"tp": 3, "fp": 2, "fn": 1, "tn": 2}
    assert agr["bootstrap"] is None
    cal = run("calibrate", "--db", path, "--judge", "judge-x", "--bootstrap", 0, "--no-save")
    assert cal.exit_code == 0, cal.output


def test_calibrate_holds_tasks_out_and_saves_the_split(db: Path) -> None:
    from gradercal.db.calibrations import load_calibration
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database

    out = run_json("calibrate", "--db", db, "--judge", "judge-gpt", "--bootstrap", 40, "--seed", 2)
    held = out["split"]["held_out"]
    # default --holdout 0.25: ceil(2.5) = 3 of the demo's 10 tasks, outside the folds
    assert len(held) == 3 and not set(held) & set(out["split"]["folds"])
    assert out["split"]["holdout"] == 0.25 and out["warnings"] == []
    test = out["metrics"]["test"]
    assert test["n_tasks"] == 3 and test["criterion"]["after"]["cohen_kappa"]["ci"] is not None
    assert set(test["criterion"]["before"]) == set(out["metrics"]["criterion"]["before"])
    repo = Repository(open_database(str(db)))
    try:
        saved = load_calibration(repo, None, "judge-gpt")
        assert saved is not None and saved.split["held_out"] == held
        assert saved.metrics["test"] == test
    finally:
        repo.db.dispose()
    text = run("calibrate", "--db", db, "--judge", "judge-gpt", "--bootstrap", 0, "--seed", 2)
    assert text.exit_code == 0, text.output
    assert f"3 tasks ({', '.join(held)};" in text.output
    assert "held-out tasks (test)" in text.output
    none = run_json(
        "calibrate", "--db", db, "--judge", "judge-gpt", "--holdout", 0, "--bootstrap", 0,
        "--no-save",
    )  # fmt: skip
    assert none["split"]["held_out"] == [] and none["metrics"]["test"] is None
    assert len(none["split"]["folds"]) == 10


def test_calibrate_with_too_few_tasks_to_hold_out(tmp_path: Path) -> None:
    path = tmp_path / "mini.sqlite"
    assert (
        CliRunner().invoke(main, ["import", str(DATA / "mini"), "--db", str(path)]).exit_code == 0
    )
    # the default share falls back to no held-out task, with a warning
    res = run("calibrate", "--db", path, "--judge", "judge-x", "--bootstrap", 0, "--no-save")
    assert res.exit_code == 0, res.output
    assert "warning: nothing held out" in res.output and "at least 4 tasks; found 2" in res.output
    out = run_json("calibrate", "--db", path, "--judge", "judge-x", "--bootstrap", 0, "--no-save")
    assert out["split"]["held_out"] == [] and "nothing held out" in out["warnings"][0]
    # an explicit share is refused
    res = run("calibrate", "--db", path, "--judge", "judge-x", "--holdout", 0.5, "--no-save")
    assert res.exit_code == 1 and "error: a held-out split needs" in res.output
    res = run("calibrate", "--db", path, "--judge", "judge-x", "--holdout", 1)
    assert res.exit_code == 2 and "--holdout" in res.output


def test_estimate_stratified_refused_when_rates_differ(db: Path) -> None:
    """One workflow's responses keep expert verdicts on a single response per model (the
    others on all): its labelling rate is far from the others', so it is not pooled with
    them and the stratified estimate is refused, in the JSON note and the printed text."""
    import sqlite3

    with sqlite3.connect(db) as conn:
        (workflow,) = conn.execute(
            "SELECT t.workflow FROM task t JOIN response r ON r.task_id = t.id "
            "GROUP BY t.workflow ORDER BY count(*) DESC, t.workflow LIMIT 1"
        ).fetchone()
        conn.execute(
            "DELETE FROM judgment WHERE grader_id IN (SELECT id FROM grader WHERE kind = 'human') "
            "AND response_id IN (SELECT r.id FROM response r JOIN task t ON t.id = r.task_id "
            "WHERE t.workflow = ?) AND response_id NOT IN (SELECT min(r.id) FROM response r "
            "JOIN task t ON t.id = r.task_id WHERE t.workflow = ? GROUP BY r.model)",
            (workflow, workflow),
        )
    out = run_json("estimate", "--db", db, "--judge", "judge-gpt", "--stratify", "workflow")
    refused = [
        m["mean_score"]
        for m in out["models"]
        if (m["mean_score"]["note"] or "").startswith("stratification refused: ")
    ]
    assert refused, [m["mean_score"]["note"] for m in out["models"]]
    for ms in refused:
        assert ms["estimate"] is None and ms["ci"] is None and ms["strata"] == {}
        assert f"{workflow} 1 of " in ms["note"] and "within 2x" in ms["note"]
    text = run("estimate", "--db", db, "--judge", "judge-gpt", "--stratify", "workflow")
    flat = " ".join(text.output.split())
    assert text.exit_code == 0 and "stratification refused: " in flat and "within 2x" in flat
    # without --stratify: plain PPI++, as before
    plain = run_json("estimate", "--db", db, "--judge", "judge-gpt")
    assert all(m["mean_score"]["estimate"] is not None for m in plain["models"])
