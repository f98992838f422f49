"""The gradercal command line, driven as users and scripts drive it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click
import pandas as pd
import pytest
from click.testing import CliRunner, Result

from gradercal.cli import main
from tests.conftest import DEMO, fingerprint, read_jsonl, write_jsonl


def run(*args: str) -> Result:
    return CliRunner().invoke(
        main, [str(a) for a in args], prog_name="gradercal", catch_exceptions=False
    )


def _all_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        out.append((*prefix, name))
        if isinstance(cmd, click.Group):
            out.extend(_all_commands(cmd, (*prefix, name)))
    return out


@pytest.mark.parametrize("command", _all_commands(main), ids=" ".join)
def test_every_command_has_help(command: tuple[str, ...]) -> None:
    result = run(*command, "--help")
    assert result.exit_code == 0
    assert "Usage: gradercal " + " ".join(command) in result.output
    if command[0] not in ("samples", "stats") and command not in (
        ("judge",),
        ("judge", "prompt"),
        ("judge", "prices"),
        ("packet",),
        ("team",),
        ("clarify",),
        ("rubric",),
    ):
        assert "--db PATH|URL" in result.output


def test_init_creates_the_database(tmp_path: Path) -> None:
    db = tmp_path / "new" / "g.sqlite"
    result = run("init", "--db", db, "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["database"] == str(db)
    assert db.exists()


def test_import_then_scores_json(db_url: str, mini: Path) -> None:
    result = run("import", mini, "--db", db_url, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["tasks_added"] == 2 and report["judgments_added"] == 30 and report["changed"]
    again = json.loads(run("import", mini, "--db", db_url, "--json").output)
    assert not again["changed"]
    scores = json.loads(run("scores", "--db", db_url, "--grader", "ana", "--json").output)
    assert scores["grader"] == "ana"
    by_model = {r["model"]: r for r in scores["models"]}
    # alpha: M1-a 1.0 and M2-a 1.0 under ana → mean 1.0, both pass
    assert by_model["alpha"]["mean_score"] == pytest.approx(1.0)
    assert by_model["alpha"]["pass_rate"] == pytest.approx(1.0)
    # beta: both responses score 0 under ana
    assert by_model["beta"]["mean_score"] == 0.0
    assert set(scores["breakdowns"]) == {"workflow", "domain", "artifacts", "answer_format"}
    every = json.loads(run("scores", "--db", db_url, "--grader", "all", "--json").output)
    assert [r["grader"] for r in every] == ["consensus", "ana", "ben", "judge-x"]


def test_scores_table_for_people(tmp_path: Path, mini: Path) -> None:
    db = tmp_path / "g.sqlite"
    run("import", mini, "--db", db)
    result = run("scores", "--db", db, "--grader", "ben")
    assert result.exit_code == 0
    assert "Scores under grader ben" in result.output
    assert "by workflow" in result.output and "alpha" in result.output


def test_bad_input_exits_1_lists_problems_and_leaves_the_database_unchanged(
    db_url: str, mini: Path
) -> None:
    assert run("import", mini, "--db", db_url).exit_code == 0
    before = fingerprint(db_url)
    rows = read_jsonl(mini / "judgments.jsonl")
    rows.append({"response_id": "M1-a", "criterion_id": "zz", "grader": "new-grader", "met": True})
    rows.append({"response_id": "M1-a", "criterion_id": "c1", "grader": "new-grader", "met": "yes"})
    write_jsonl(mini / "judgments.jsonl", rows)
    result = CliRunner().invoke(main, ["import", str(mini), "--db", db_url])
    assert result.exit_code == 1
    assert "judgments.jsonl:31: criterion_id: unknown criterion_id 'zz'" in result.output
    assert 'judgments.jsonl:32: met: must be a boolean or null, got "yes"' in result.output
    assert fingerprint(db_url) == before


def test_unknown_grader_and_missing_benchmark_are_clear(tmp_path: Path, mini: Path) -> None:
    db = tmp_path / "g.sqlite"
    run("init", "--db", db)
    result = CliRunner().invoke(main, ["scores", "--db", str(db)])
    assert result.exit_code == 1 and "holds no benchmark yet" in result.output
    run("import", mini, "--db", db)
    result = CliRunner().invoke(main, ["scores", "--db", str(db), "--grader", "zoe"])
    assert result.exit_code == 1 and "no grader 'zoe'" in result.output


def test_export_judgments_round_trips(tmp_path: Path, mini: Path) -> None:
    db1, db2 = tmp_path / "one.sqlite", tmp_path / "two.sqlite"
    run("import", mini, "--db", db1)
    out = tmp_path / "export" / "judgments.jsonl"
    result = run("export", "judgments", "-o", out, "--db", db1)
    assert result.exit_code == 0 and "wrote 30 judgments rows" in result.output
    exported = read_jsonl(out)
    original = read_jsonl(mini / "judgments.jsonl")
    keys = (
        "response_id",
        "criterion_id",
        "grader",
        "grader_kind",
        "met",
        "confidence",
        "rationale",
    )
    assert sorted(tuple(r.get(k) for k in keys) for r in exported) == sorted(
        tuple(r.get(k) for k in keys) for r in original
    )
    # the exported file imports into a fresh copy of the benchmark exactly as the original
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("benchmark.json", "tasks.jsonl", "responses.jsonl"):
        (copy / name).write_bytes((mini / name).read_bytes())
    shutil.copytree(mini / "artifacts", copy / "artifacts")
    (copy / "judgments.jsonl").write_bytes(out.read_bytes())
    assert run("import", copy, "--db", db2).exit_code == 0
    frame_a = run("scores", "--db", db1, "--grader", "all", "--json").output
    frame_b = run("scores", "--db", db2, "--grader", "all", "--json").output
    assert json.loads(frame_a) == json.loads(frame_b)
    # and re-importing the export into the first database changes nothing
    before = fingerprint(str(db1))
    result = run("import", out, "--db", db1, "--json")
    assert json.loads(result.output)["changed"] is False
    assert fingerprint(str(db1)) == before


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_export_formats(tmp_path: Path, mini: Path, suffix: str) -> None:
    db = tmp_path / "g.sqlite"
    run("import", mini, "--db", db)
    for what, n in (("judgments", 30), ("scores", 16), ("tasks", None), ("responses", 4)):
        out = tmp_path / f"{what}{suffix}"
        result = run("export", what, "-o", out, "--db", db)
        assert result.exit_code == 0, result.output
        if suffix == ".csv":
            frame = pd.read_csv(out)
        elif suffix == ".parquet":
            frame = pd.read_parquet(out)
        else:
            frame = pd.DataFrame(read_jsonl(out))
        if what == "tasks":
            # JSONL: one line per task; tables: one row per criterion (4 + 3)
            assert len(frame) == (2 if suffix == ".jsonl" else 7)
        else:
            assert len(frame) == n, what


def test_export_tasks_jsonl_is_valid_format_v1(tmp_path: Path, mini: Path) -> None:
    db = tmp_path / "g.sqlite"
    run("import", mini, "--db", db)
    run("export", "tasks", "-o", tmp_path / "t.jsonl", "--db", db)
    assert read_jsonl(tmp_path / "t.jsonl")[0]["rubric"][3] == {
        "id": "c4",
        "criterion": "Explains the reading frame",
        "points": 1,
        "tags": ["axis:reasoning"],
        "levels": 3,
    }


def test_export_refuses_unknown_suffix(tmp_path: Path, mini: Path) -> None:
    db = tmp_path / "g.sqlite"
    run("import", mini, "--db", db)
    result = CliRunner().invoke(
        main, ["export", "judgments", "-o", str(tmp_path / "x.xlsx"), "--db", str(db)]
    )
    assert result.exit_code == 1 and "unknown suffix '.xlsx'" in result.output


def test_import_healthbench_file(tmp_path: Path) -> None:
    from tests.formats.test_formats import HB_LINE

    path = tmp_path / "healthbench_sample.jsonl"
    write_jsonl(path, [HB_LINE, {**HB_LINE, "prompt_id": "hb-2"}])
    db = tmp_path / "g.sqlite"
    result = run("import", path, "--db", db, "--json")
    report = json.loads(result.output)
    assert report["benchmark"] == "healthbench_sample"
    assert (report["tasks_added"], report["responses_added"]) == (2, 2)
    listing = json.loads(run("benchmarks", "--db", db, "--json").output)
    assert listing[0]["n_tasks"] == 2


def test_import_a_judge_file_into_an_existing_benchmark(tmp_path: Path, mini: Path) -> None:
    db = tmp_path / "g.sqlite"
    run("import", mini, "--db", db)
    judge = tmp_path / "judge-run.jsonl"
    write_jsonl(
        judge,
        [
            {
                "response_id": "M1-a",
                "criterion_id": c,
                "grader": "judge-y",
                "grader_kind": "judge",
                "met": True,
            }
            for c in ("c1", "c2", "c3", "c4")
        ],
    )
    report = json.loads(run("import", judge, "--db", db, "--json").output)
    assert report["judgments_added"] == 4 and report["graders_added"] == ["judge-y"]
    assert report["pass_threshold_changed"] is None


def test_samples_generate_then_import(tmp_path: Path) -> None:
    out = tmp_path / "syn"
    result = run(
        "samples",
        "generate",
        "-o",
        out,
        "--tasks",
        "6",
        "--criteria-per-task",
        "8",
        "--seed",
        "3",
        "--json",
    )
    summary = json.loads(result.output)
    assert summary["tasks"] == 6
    assert (out / "truth.jsonl").exists()
    db = tmp_path / "g.sqlite"
    report = json.loads(run("import", out, "--db", db, "--json").output)
    assert report["tasks_added"] == 6 and report["judgments_added"] == summary["judgments"]


@pytest.mark.skipif(not DEMO.exists(), reason="samples/demo not built")
def test_the_readme_main_job_on_the_demo(tmp_path: Path) -> None:
    db = tmp_path / "g.sqlite"
    assert run("import", DEMO, "--db", db).exit_code == 0
    result = run("scores", "--db", db)
    assert result.exit_code == 0
    assert "Scores under human consensus" in result.output
    report = json.loads(run("scores", "--db", db, "--json").output)
    assert len(report["models"]) == 3
    assert all(r["n_scored"] > 0 for r in report["models"])


def _break_missing_artifact(folder: Path) -> None:
    (folder / "artifacts" / "dose.csv").unlink()


def _break_utf8(folder: Path) -> None:
    with (folder / "responses.jsonl").open("ab") as fh:
        fh.write(b'{"id": "x", "task_id": "M1", "model": "m", "text": "\xff\xfe"}\n')


def _break_json(folder: Path) -> None:
    with (folder / "tasks.jsonl").open("a") as fh:
        fh.write('{"id": "M3", "prompt": "unterminated\n')


def _break_duplicate(folder: Path) -> None:
    rows = read_jsonl(folder / "responses.jsonl")
    rows.append({**rows[0], "text": "a second response with the same id"})
    write_jsonl(folder / "responses.jsonl", rows)


def _break_points(folder: Path) -> None:
    rows = read_jsonl(folder / "tasks.jsonl")
    rows[1]["rubric"][2]["points"] = "2 points"
    write_jsonl(folder / "tasks.jsonl", rows)


def _break_escape(folder: Path) -> None:
    rows = read_jsonl(folder / "tasks.jsonl")
    rows[0]["artifacts"][0]["path"] = "../../../../etc/passwd"
    write_jsonl(folder / "tasks.jsonl", rows)


def _break_unknown_criterion(folder: Path) -> None:
    rows = read_jsonl(folder / "judgments.jsonl")
    rows[4]["criterion_id"] = "c404"
    write_jsonl(folder / "judgments.jsonl", rows)


@pytest.mark.parametrize(
    ("breaker", "message"),
    [
        (
            _break_missing_artifact,
            "tasks.jsonl:2: artifacts[0].path: missing artifact file 'artifacts/dose.csv'",
        ),
        (_break_utf8, "responses.jsonl:5: invalid UTF-8 at byte 53"),
        (_break_json, "tasks.jsonl:3: invalid JSON:"),
        (_break_duplicate, "responses.jsonl:5: id: duplicate response id 'M1-a'"),
        (_break_points, 'tasks.jsonl:2: rubric[2].points: must be an integer, got "2 points"'),
        (
            _break_escape,
            "tasks.jsonl:1: artifacts[0].path: path '../../../../etc/passwd' leaves the benchmark folder",
        ),
        (
            _break_unknown_criterion,
            "judgments.jsonl:5: criterion_id: unknown criterion_id 'c404' for response 'M1-a'",
        ),
    ],
    ids=lambda v: v.__name__.removeprefix("_break_") if callable(v) else "",
)
def test_malformed_input_changes_nothing(
    db_url: str, mini: Path, tmp_path: Path, breaker: object, message: str
) -> None:
    # a database that already holds a benchmark, so "unchanged" means something
    other = tmp_path / "other"
    shutil.copytree(mini, other)
    (other / "benchmark.json").write_text('{"name": "other"}')
    assert run("import", other, "--db", db_url).exit_code == 0
    before = fingerprint(db_url)
    breaker(mini)  # type: ignore[operator]
    result = CliRunner().invoke(main, ["import", str(mini), "--db", db_url], prog_name="gradercal")
    assert result.exit_code == 1
    assert message in result.output
    assert "Traceback" not in result.output
    assert fingerprint(db_url) == before


def test_the_healthbench_style_sample_imports(tmp_path: Path) -> None:
    db = tmp_path / "g.sqlite"
    report = json.loads(
        run("import", DEMO.parent / "healthbench_style.jsonl", "--db", db, "--json").output
    )
    assert (report["tasks_added"], report["responses_added"]) == (3, 2)


READING_COMMANDS: list[list[str]] = [
    ["scores"],
    ["agreement"],
    ["health"],
    ["surveys"],
    ["report", "--json"],
    ["judge", "runs"],
    ["export-prompt", "--judge", "j", "-o", "out.json"],
    ["packet", "conflicts"],
    ["check"],
    ["assign", "--graders", "ana,ben", "--overlap", "1"],
]


@pytest.mark.parametrize("args", READING_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_a_mistyped_db_is_an_error_never_a_new_database(tmp_path: Path, args: list[str]) -> None:
    missing = tmp_path / "typo.sqlite"
    result = CliRunner().invoke(main, [*args, "--db", str(missing)], catch_exceptions=False)
    assert result.exit_code in (1, 2), result.output
    if result.exit_code == 1:
        assert f"no database at {missing}" in result.output
    assert not missing.exists()
    assert "Traceback" not in result.output


def test_unknown_url_scheme_and_bad_import_path_are_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["scores", "--db", "foo://host/db"], catch_exceptions=False)
    assert result.exit_code == 1
    assert "unknown database URL scheme 'foo'" in result.output
    assert len(result.output.strip().splitlines()) == 1
    db = tmp_path / "new.sqlite"
    result = CliRunner().invoke(main, ["import", str(tmp_path / "nowhere"), "--db", str(db)])
    assert result.exit_code == 1 and "no such file or folder" in result.output
    assert not db.exists()
    # The commands that make a database still do.
    run("init", "--db", db)
    assert db.exists()
