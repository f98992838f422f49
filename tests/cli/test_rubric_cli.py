"""``gradercal rubric`` and ``import --revise`` on both backends (issue #16): revise a
criterion (dry run first), read the history, count stale verdicts, revise from files,
export versions in format v1 and import them back, judge scope ``stale``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gradercal.cli import main
from gradercal.db.judging import Scope
from gradercal.errors import GradercalError
from tests.conftest import read_jsonl, write_jsonl


def gc(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def url(db_url: str, mini: Path) -> str:
    res = gc("import", str(mini), "--db", db_url)
    assert res.exit_code == 0, res.output
    return db_url


def test_revise_a_criterion_then_read_history_and_stale(url: str) -> None:
    res = gc(
        "rubric", "revise", "M1", "c1", "--text", "Names the stop codon and where it is",
        "--reason", "graders split", "--dry-run", "--db", url, "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    dry = json.loads(res.output)
    assert dry["dry_run"] and dry["kind"] == "verdict" and dry["stale_judgments"] > 0
    assert json.loads(gc("rubric", "stale", "--db", url, "--json").output) == {}
    res = gc(
        "rubric", "revise", "M1", "c1", "--text", "Names the stop codon and where it is",
        "--reason", "graders split", "--actor", "coord", "--db", url,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "M1 v1 → v2: verdict change" in res.output
    assert f"{dry['stale_judgments']} verdicts on c1 now stale" in res.output
    stale = json.loads(gc("rubric", "stale", "--db", url, "--json").output)
    assert sum(stale.values()) == dry["stale_judgments"]
    hist = json.loads(gc("rubric", "history", "M1", "--db", url, "--json").output)
    assert [h["version"] for h in hist] == [1, 2]
    assert hist[1]["reason"] == "graders split" and hist[1]["actor"] == "coord"
    text = gc("rubric", "history", "--db", url).output
    assert "M1 v2 (verdict)" in text and "c1: text (verdict)" in text
    res = gc("rubric", "revise", "M1", "c2", "--points", "4", "--reason", "w", "--db", url)
    assert "score change" in res.output and "rescored" in res.output


def test_errors_are_one_line_and_write_nothing(url: str) -> None:
    res = gc("rubric", "revise", "M1", "c1", "--reason", "x", "--db", url)
    assert res.exit_code == 2 and "nothing to change" in res.output
    res = gc("rubric", "revise", "M1", "zz", "--text", "x", "--reason", "x", "--db", url)
    assert res.exit_code != 0 and "no criterion 'zz'" in res.output
    res = gc("rubric", "revise", "M1", "c1", "--points", "0", "--reason", "x", "--db", url)
    assert res.exit_code != 0 and "points" in res.output
    assert json.loads(gc("rubric", "history", "M1", "--db", url, "--json").output) == []
    res = gc("import", "x", "--reason", "why", "--db", url)
    assert res.exit_code == 2 and "--revise" in res.output


def test_import_revise_from_files_and_round_trip_of_versions(
    url: str, mini: Path, tmp_path: Path
) -> None:
    tasks = read_jsonl(mini / "tasks.jsonl")
    tasks[0]["rubric"][1]["criterion"] = "Suggests re-sequencing the cloning junction"
    tasks[0]["rubric"][0]["points"] = 7
    write_jsonl(mini / "tasks.jsonl", tasks)
    # without --revise: refused, as before
    res = gc("import", str(mini), "--db", url)
    assert res.exit_code != 0 and "differs from the one already stored" in res.output
    res = gc("import", str(mini), "--revise", "--dry-run", "--db", url, "--json")
    out = json.loads(res.output)
    assert out["dry_run"] and out["unchanged"] == 1 and len(out["revised"]) == 1
    assert json.loads(gc("rubric", "history", "M1", "--db", url, "--json").output) == []
    res = gc("import", str(mini), "--revise", "--reason", "clearer c2", "--db", url)
    assert res.exit_code == 0, res.output
    assert "revised 1 of 2 stored tasks" in res.output and "M1 v1 → v2" in res.output
    assert "points changed on c1 (rescored)" in res.output
    # importing the same files again changes nothing
    res = gc("import", str(mini), "--revise", "--db", url)
    assert "revised 0 of 2" in res.output
    # export: the revised task and the stale / current verdicts carry their versions
    out_dir = tmp_path / "exported"
    res = gc("export", "benchmark", "-o", str(out_dir), "--db", url)
    assert res.exit_code == 0, res.output
    exported = {t["id"]: t for t in read_jsonl(out_dir / "tasks.jsonl")}
    assert exported["M1"]["version"] == 2 and "version" not in exported["M2"]
    judged = read_jsonl(out_dir / "judgments.jsonl")
    on_m1 = [j for j in judged if j["response_id"].startswith("M1")]
    # on a revised task every verdict says its version (absent means "current")
    assert on_m1 and all(j["version"] == 1 for j in on_m1)
    assert all("version" not in j for j in judged if j not in on_m1)
    # into a new database: the task starts at version 2, the v1 verdicts on M1 are stale
    fresh = f"sqlite:///{tmp_path / 'fresh.sqlite'}"
    res = gc("import", str(out_dir), "--db", fresh)
    assert res.exit_code == 0, res.output
    stale = json.loads(gc("rubric", "stale", "--db", fresh, "--json").output)
    assert sum(stale.values()) == len(on_m1)


def test_judge_scope_stale_parses() -> None:
    assert str(Scope.parse("stale")) == "stale"
    with pytest.raises(GradercalError, match="stale"):
        Scope.parse("stael")


def test_rubric_help() -> None:
    for args in (["rubric", "--help"], ["rubric", "revise", "--help"], ["import", "--help"]):
        res = gc(*args)
        assert res.exit_code == 0 and "Usage" in res.output
    assert "--revise" in gc("import", "--help").output
