"""``--version all|current|N`` on the analysis commands and ``gradercal agreement
--by-version`` (issue #16), on tests/data/mini with criterion M1/c1 revised
(``RevisionStore.revise_criterion``) and regraded in part — SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gradercal.cli import main
from gradercal.db.repo import Repository
from gradercal.db.revisions import RevisionStore
from gradercal.db.session import open_database
from gradercal.formats import read_path
from gradercal.model import GraderKind, Judgment

HUMAN, JUDGE = GraderKind.HUMAN, GraderKind.JUDGE
#: every command with --version, and the arguments it needs on mini
COMMANDS: dict[str, list[str]] = {
    "scores": [],
    "agreement": ["--bootstrap", "0"],
    "health": [],
    "estimate": ["--judge", "judge-x"],
    "impact": ["--judge", "judge-x", "--bootstrap", "0", "--calibration", "none"],
    "alttest": ["--judge", "judge-x"],
    "calibrate": ["--judge", "judge-x", "--no-save", "--bootstrap", "0"],
    "report": ["--bootstrap", "0"],
}


def cli(db: str, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--db", db])


def cli_json(db: str, *args: str) -> Any:
    res = cli(db, *args, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.fixture
def imported(db_url: str, mini: Path) -> str:
    res = CliRunner().invoke(main, ["import", str(mini), "--db", db_url])
    assert res.exit_code == 0, res.output
    return db_url


@pytest.fixture
def revised(imported: str, mini: Path) -> str:
    """M1/c1 reworded (version 2). Before: ana and ben (M1-a met/met, M1-b not/not), the
    judge met on both. Then cy, dee and eve grade it under version 2 — M1-a: cy met, dee
    met; M1-b: cy not, dee met, eve not — and the judge gives M1-b again (not met)."""
    db = open_database(imported)
    report = RevisionStore(db).revise_criterion(
        None, "M1", "c1", text="Names the premature stop codon", reason="split", actor="coord"
    )
    assert report.version == 2 and report.stale_criteria == ("c1",)
    data = read_path(mini)
    data.tasks, data.responses, data.adjudications = [], [], []
    data.judgments = [
        Judgment("M1-a", "c1", "cy", HUMAN, met=True),
        Judgment("M1-a", "c1", "dee", HUMAN, met=True),
        Judgment("M1-b", "c1", "cy", HUMAN, met=False),
        Judgment("M1-b", "c1", "dee", HUMAN, met=True),
        Judgment("M1-b", "c1", "eve", HUMAN, met=False),
        Judgment("M1-b", "c1", "judge-x", JUDGE, met=False, confidence=0.9),
    ]
    Repository(db).import_data(data)
    db.dispose()
    return imported


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_documents_version(command: str) -> None:
    res = CliRunner().invoke(main, [command, "--help"])
    assert res.exit_code == 0
    assert "--version" in res.output and "all|current|N" in res.output


@pytest.mark.parametrize("bad", ["0", "latest", "-1", "1.5"])
def test_a_bad_version_is_a_usage_error_naming_the_option(imported: str, bad: str) -> None:
    res = cli(imported, "scores", "--version", bad)
    assert res.exit_code == 2
    assert "--version" in res.output and "use all, current or a version number" in res.output


def test_unrevised_json_is_as_before_unless_asked(imported: str) -> None:
    plain = cli_json(imported, "scores")
    assert "version" not in plain
    assert "version" not in cli_json(imported, "agreement", "--bootstrap", "0")
    asked = cli_json(imported, "scores", "--version", "current")
    assert next(iter(asked)) == "version" and asked["version"] == "current"
    assert {k: v for k, v in asked.items() if k != "version"} == plain
    assert cli_json(imported, "scores", "--version", "all")["models"] == plain["models"]


def test_scores_follow_the_version(revised: str) -> None:
    current = cli_json(revised, "scores", "--grader", "all")
    assert [r["version"] for r in current] == ["current"] * len(current)
    graders = {r["grader"]: r for r in current}
    assert {"cy", "dee", "eve"} <= set(graders)
    # ana's only verdict on M1/c1 is stale: with current verdicts her M1 responses lack it
    ana_current = cli_json(revised, "scores", "--grader", "ana")
    ana_all = cli_json(revised, "scores", "--grader", "ana", "--version", "all")
    ana_v1 = cli_json(revised, "scores", "--grader", "ana", "--version", "1")
    assert ana_all["version"] == "all" and ana_v1["version"] == 1
    assert ana_all["models"] == ana_v1["models"]  # version 1: everything she gave
    assert ana_current["models"] != ana_all["models"]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_names_the_version_it_used(revised: str, command: str) -> None:
    args = [command, *COMMANDS[command]]
    for version, expected in (("all", "all"), ("2", 2)):
        res = cli(revised, *args, "--version", version, "--json")
        if res.exit_code == 1:  # a refusal of the statistics on so small a benchmark
            assert "error:" in res.output, res.output
            continue
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout)["version"] == expected
    # the default, named because the benchmark was revised
    res = cli(revised, *args, "--json")
    if res.exit_code == 0:
        assert json.loads(res.stdout)["version"] == "current"


def test_agreement_follows_the_version(revised: str) -> None:
    def paired(*args: str) -> int:
        rep = cli_json(revised, "agreement", "--bootstrap", "0", "--humans", "ana,ben", *args)
        return int(rep["human_human"]["overall"]["n_units_paired"])

    # ana and ben rated M1/c1 under version 1 only: it counts with all and 1, not current
    assert paired("--version", "all") == paired("--version", "1") == paired() + 2


def test_by_version_by_hand(revised: str) -> None:
    """Version 1 (ana, ben): M1-a met/met, M1-b not/not → agreement 1, alpha 1; the judge's
    version-1 verdicts (met on both; on M1-b from the history, since it judged M1-b again
    under version 2) against the consensus (met, not met) → 1 of 2.

    Version 2 (cy, dee, eve): M1-a met/met → 1; M1-b not/met/not → (0 + 2·1)/(3·2) = 1/3;
    agreement (1 + 1/3)/2 = 2/3. Alpha: coincidences o₁₁ = 2 (M1-a), and from M1-b
    (m = 3, weight 1/2) o₀₁ = o₁₀ = 1, o₀₀ = 1; n₁ = 3, n₀ = 2, n = 5;
    D_o = 2/5, D_e = 2·2·3/(5·4) = 3/5, α = 1 − (2/5)/(3/5) = 1/3. The judge (M1-b: not
    met) against the consensus (2 of 3 not met) → 1 of 1.
    """
    rep = cli_json(revised, "agreement", "--by-version", "--judge", "judge-x", "--bootstrap", "0")
    assert rep["version"] == "all" and rep["n_revised"] == 1
    assert rep["humans"] == ["ana", "ben", "cy", "dee", "eve"]
    v1, v2 = rep["criteria"]
    assert (v1["task_id"], v1["criterion_id"], v1["version"], v1["current"]) == (
        "M1",
        "c1",
        1,
        False,
    )
    assert v1["raters"] == ["ana", "ben"] and v1["n_units_paired"] == 2
    assert v1["percent_agreement"]["value"] == pytest.approx(1.0)
    assert v1["krippendorff_alpha"]["value"] == pytest.approx(1.0)
    assert v1["human_judge"]["n_units"] == 2
    assert v1["human_judge"]["percent_agreement"]["value"] == pytest.approx(0.5)
    assert (v2["version"], v2["current"], v2["raters"]) == (2, True, ["cy", "dee", "eve"])
    assert v2["n_ratings"] == 5 and v2["n_units_paired"] == 2
    assert v2["percent_agreement"]["value"] == pytest.approx(2 / 3)
    assert v2["krippendorff_alpha"]["value"] == pytest.approx(1 / 3)
    assert v2["human_judge"]["n_units"] == 1
    assert v2["human_judge"]["percent_agreement"]["value"] == pytest.approx(1.0)
    # with resamples: an interval around each value (two responses: few clusters noted)
    boot = cli_json(revised, "agreement", "--by-version", "--bootstrap", "200")
    pa = boot["criteria"][1]["percent_agreement"]
    assert pa["ci"] is not None and pa["ci"][0] <= pa["value"] <= pa["ci"][1]
    assert "clusters" in (pa["note"] or "")
    assert boot["bootstrap"]["cluster"] == "response"


def test_by_version_table(revised: str) -> None:
    res = cli(revised, "agreement", "--by-version", "--judge", "judge-x", "--bootstrap", "0")
    assert res.exit_code == 0, res.output
    out = res.output
    assert "Agreement per criterion version" in out
    assert "v1" in out and "v2 (current)" in out
    assert "0.667" in out and "0.333" in out  # agreement and alpha of version 2
    assert "judge-x vs experts" in out


def test_by_version_refusals(revised: str) -> None:
    res = cli(revised, "agreement", "--by-version", "--version", "2")
    assert res.exit_code == 2 and "--by-version counts every verdict" in res.output
    res = cli(revised, "agreement", "--by-version", "--by", "tag")
    assert res.exit_code == 2


def test_by_version_without_a_revision(imported: str) -> None:
    res = cli(imported, "agreement", "--by-version")
    assert res.exit_code == 0 and "no criterion was revised" in res.output
    rep = cli_json(imported, "agreement", "--by-version")
    assert rep["criteria"] == [] and rep["n_revised"] == 0


def test_report_has_the_section_only_after_a_revision(imported: str, mini: Path) -> None:
    before = cli_json(imported, "report", "--bootstrap", "0")
    assert "criterion_versions" not in before["dashboard"] and "version" not in before
    db = open_database(imported)
    RevisionStore(db).revise_criterion(None, "M1", "c2", text="Reworded", reason=None, actor=None)
    db.dispose()
    after = cli_json(imported, "report", "--bootstrap", "0")
    assert after["version"] == "current"
    rows = after["dashboard"]["criterion_versions"]
    assert [(r["task_id"], r["criterion_id"], r["version"]) for r in rows] == [
        ("M1", "c2", 1),
        ("M1", "c2", 2),
    ]
    assert rows[0]["n_units"] == 2 and rows[1]["n_units"] == 0


def test_alttest_names_the_version_on_the_demo(tmp_path: Path) -> None:
    """mini has too few experts for the alt-test: the demo has enough (never revised, so
    the version is named only when asked)."""
    from tests.conftest import DEMO

    db = str(tmp_path / "demo.sqlite")
    res = CliRunner().invoke(main, ["import", str(DEMO), "--db", db])
    assert res.exit_code == 0, res.output
    asked = cli_json(db, "alttest", "--judge", "judge-gpt", "--version", "all")
    assert list(asked)[:2] == ["benchmark", "version"] and asked["version"] == "all"
    plain = cli_json(db, "alttest", "--judge", "judge-gpt")
    assert "version" not in plain
    assert {k: v for k, v in asked.items() if k != "version"} == plain
