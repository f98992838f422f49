"""A verdict counts under the wording the grader saw (issue #30, 1): a regrade imported
after ``import --revise``, in which most verdicts are given again unchanged under the new
version, makes every one of them current — on SQLite and PostgreSQL.

mini's criterion M1/c1 holds 6 verdicts (ana, ben, judge-x on M1-a and M1-b). It is
reworded by ``import --revise``; the regrade gives all 6 again with ``"version": 2``,
2 of them changed (ana on M1-a: met → not met; judge-x on M1-b: met → not met) and 4
confirmed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import select

from gradercal.cli import main
from gradercal.db import models as m
from gradercal.db.repo import Repository
from gradercal.db.revisions import RevisionStore
from gradercal.db.session import open_database
from tests.conftest import read_jsonl, write_jsonl

CHANGED = {("M1-a", "ana"), ("M1-b", "judge-x")}


def cli(db: str, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--db", db])


def on_c1(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["response_id"].startswith("M1") and r["criterion_id"] == "c1"]


@pytest.fixture
def revised(db_url: str, mini: Path, tmp_path: Path) -> str:
    """mini imported, then M1/c1 reworded through ``import --revise``."""
    assert cli(db_url, "import", str(mini)).exit_code == 0
    reworded = tmp_path / "reworded"
    shutil.copytree(mini, reworded)
    tasks = read_jsonl(reworded / "tasks.jsonl")
    tasks[0]["rubric"][0]["criterion"] = "Names the premature stop codon"
    write_jsonl(reworded / "tasks.jsonl", tasks)
    res = cli(db_url, "import", str(reworded), "--revise", "--reason", "reworded")
    assert res.exit_code == 0, res.output
    assert "6 verdicts on c1 now stale" in res.output
    return db_url


def regrade(mini: Path, folder: Path, version: int | None = 2) -> Path:
    """Every verdict on M1/c1 given again (under ``version``), the CHANGED ones flipped."""
    out = []
    for r in on_c1(read_jsonl(mini / "judgments.jsonl")):
        r = dict(r)
        if version is not None:
            r["version"] = version
        if (r["response_id"], r["grader"]) in CHANGED:
            r["met"] = not r["met"]
        out.append(r)
    path = folder / "regrade.jsonl"
    write_jsonl(path, out)
    return path


def stale_total(url: str) -> int:
    db = open_database(url)
    try:
        return sum(RevisionStore(db).stale_counts(None).values())
    finally:
        db.dispose()


def test_a_regrade_after_a_revision_confirms_the_unchanged_verdicts(
    revised: str, mini: Path, tmp_path: Path
) -> None:
    assert stale_total(revised) == 6
    res = cli(revised, "import", str(regrade(mini, tmp_path)))
    assert res.exit_code == 0, res.output
    assert "updated 2, confirmed 4 under version 2" in res.output
    assert stale_total(revised) == 0

    db = open_database(revised)
    try:
        frames = Repository(db).load_frames()
        current = frames.judgments[
            (frames.judgments.criterion_id == "c1")
            & frames.judgments.response_id.str.startswith("M1")
        ]
        assert len(current) == 6  # every verdict given again counts
        with db.read() as s:
            rows = s.execute(
                select(m.Judgment.id, m.Judgment.task_version, m.Judgment.revision)
                .join(m.Criterion, m.Criterion.id == m.Judgment.criterion_id)
                .join(m.Response, m.Response.id == m.Judgment.response_id)
                .where(m.Criterion.external_id == "c1", m.Response.external_id.like("M1%"))
            ).all()
            assert {(v, rev) for _id, v, rev in rows} == {(2, 2)}
            # each keeps, in its history, the value and version it was first given under
            kept = s.execute(
                select(m.Revision.data, m.Revision.source).where(
                    m.Revision.entity == "judgment",
                    m.Revision.entity_id.in_([i for i, _v, _r in rows]),
                )
            ).all()
            assert len(kept) == 6
            assert all(d["task_version"] == 1 and src == "import" for d, src in kept)
    finally:
        db.dispose()

    # the by-version table counts every expert verdict of version 2: ana and ben on
    # M1-a (not met / met: disagree) and M1-b (not met / not met: agree)
    res = cli(revised, "agreement", "--by-version", "--bootstrap", "0", "--json")
    assert res.exit_code == 0, res.output
    _v1, v2 = json.loads(res.stdout)["criteria"]
    assert (v2["version"], v2["current"], v2["raters"]) == (2, True, ["ana", "ben"])
    assert v2["n_ratings"] == 4 and v2["n_units_paired"] == 2
    assert v2["percent_agreement"]["value"] == pytest.approx(0.5)
    # and every expert's scores are complete again (a stale verdict leaves a hole)
    for grader in ("ana", "ben"):
        res = cli(revised, "scores", "--grader", grader, "--json")
        assert res.exit_code == 0, res.output
        models = json.loads(res.stdout)["models"]
        assert sum(r["n_incomplete"] for r in models) == 0
        assert sum(r["n_scored"] for r in models) == sum(r["n_responses"] for r in models)

    # the same file again: nothing new
    again = cli(revised, "import", str(regrade(mini, tmp_path)))
    assert again.exit_code == 0 and "nothing new" in again.output


def test_json_counts_the_confirmations(revised: str, mini: Path, tmp_path: Path) -> None:
    res = cli(revised, "import", str(regrade(mini, tmp_path)), "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["judgments_updated"] == 2 and report["judgments_confirmed"] == 4
    assert report["confirmed_versions"] == [2] and report["changed"] is True


def test_an_old_file_neither_refreshes_a_stale_verdict_nor_stales_a_current_one(
    revised: str, mini: Path, tmp_path: Path
) -> None:
    # without a version, the unchanged verdicts keep the version they were given under
    res = cli(revised, "import", str(mini / "judgments.jsonl"))
    assert res.exit_code == 0 and "nothing new" in res.output, res.output
    assert stale_total(revised) == 6
    assert cli(revised, "import", str(regrade(mini, tmp_path))).exit_code == 0
    assert stale_total(revised) == 0
    # the values now stored, said to be given under version 1: not made stale
    first = tmp_path / "first"
    first.mkdir()
    back = regrade(mini, first, version=1)
    res = cli(revised, "import", str(back))
    assert res.exit_code == 0 and "nothing new" in res.output, res.output
    assert stale_total(revised) == 0


def test_a_version_newer_than_the_task_is_refused(revised: str, mini: Path, tmp_path: Path) -> None:
    path = regrade(mini, tmp_path, version=3)
    res = cli(revised, "import", str(path))
    assert res.exit_code == 1
    assert "version: M1-a / c1 by ana: given under version 3, but task M1 is at version 2" in (
        res.output
    )
    assert "Traceback" not in res.output
    assert stale_total(revised) == 6  # nothing was written


def test_the_store_rule() -> None:
    """What each writer decides, in one place (gradercal.db.versions.verdict_write)."""
    from gradercal.db.versions import verdict_write

    def w(stored: int | None, same: bool, given: int, vv: int, answered: bool = True) -> str:
        return verdict_write(
            stored_version=stored,
            same=same,
            given_under=given,
            verdict_version=vv,
            answered=answered,
        )

    assert w(None, False, 2, 2) == "new"
    assert w(1, False, 1, 2) == "changed"  # a change is written, stale or not
    assert w(1, True, 2, 2) == "confirmed"  # stale, given again under the new wording
    assert w(1, True, 3, 2) == "confirmed"
    assert w(1, True, 1, 2) == "unchanged"  # an old file: still stale
    assert w(2, True, 1, 2) == "unchanged"  # never made stale by an old file
    assert w(1, True, 2, 1) == "unchanged"  # not stale (a points-only revision)
    assert w(1, True, 2, 2, answered=False) == "unchanged"  # no verdict to confirm
