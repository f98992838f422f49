"""The review cycle of issue #16 end to end, on both backends, as a coordinator runs it
from the command line while graders work in the app's store: open rounds, a grader's
unclear flag answered and seen, a flagged criterion revised, the stale verdicts requeued
and re-graded, agreement rising on the revised criteria, every task decided."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gradercal.cli import main
from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.formats import read_path
from tests.conftest import read_jsonl
from tests.support.acceptance import AGREE, BENCH, survey, write_acceptance_benchmark


def gc(*args: str) -> Any:
    res = CliRunner().invoke(main, list(args))
    assert res.exit_code == 0, res.output
    return res.output


def gj(*args: str) -> Any:
    return json.loads(gc(*args, "--json"))


def _finish_queue(store: GradingStore, grader: str, regrade: dict[str, bool]) -> None:
    """The grader's pass over their queue: T2's stale criteria given again, every item
    with all answers submitted, the ungraded T3 skipped."""
    for item in store.ensure_queue(grader, BENCH):
        loaded = store.load_item(grader, item.assignment_id)
        if item.task_id == "T2":
            assert set(loaded.stale) == set(regrade)  # shown as changed since the verdict
            for cid, met in regrade.items():
                store.save_judgment(item.assignment_id, cid, JudgmentValue(met=met))
        if store.missing_criteria(item.assignment_id):
            store.skip(item.assignment_id, "not one of mine")
        else:
            store.submit(item.assignment_id)


def _agreement_on(url: str, version: str, criteria: set[str]) -> float:
    """Percent agreement of ana and ben on T2's ``criteria`` (pairs both graded)."""
    db = open_database(url)
    try:
        j = Repository(db).load_frames(BENCH, version=version).judgments
    finally:
        db.dispose()
    j = j[(j.response_id == "T2-a") & j.criterion_id.isin(criteria)]
    table = j.pivot_table(index="criterion_id", columns="grader", values="met", aggfunc="first")
    table = table[["ana", "ben"]].dropna()
    return float((table.ana == table.ben).mean())


def test_import_to_every_task_decided(db_url: str, tmp_path: Path) -> None:
    url = db_url
    db = open_database(url, create=True)
    try:
        Repository(db).import_data(read_path(write_acceptance_benchmark(tmp_path / "bench")))
        survey(db, "T1", ("ana", "ben", "cleo"), AGREE)
        survey(db, "T2", ("ana", "ben"), AGREE)
    finally:
        db.dispose()
    gc("tasks", "settings", "--db", url, "--n-boot", "0")
    for task in ("T1", "T2", "T3"):
        gc("tasks", "open", task, "--db", url, "--actor", "dana")

    # ben grades in the app: T2's c10 is unclear to him; his note asks the coordinators
    db = open_database(url)
    try:
        store = GradingStore(db)
        store.create_grader("ben")
        t2 = next(i for i in store.ensure_queue("ben", BENCH) if i.task_id == "T2")
        store.save_judgment(
            t2.assignment_id,
            "c10",
            JudgmentValue(met=False, unclear=True, unclear_note="Does a partial answer count?"),
        )
        _finish_queue(store, "ben", {})
    finally:
        db.dispose()
    threads = gj("clarify", "list", "--db", url)
    (thread,) = [t for t in threads if t["criterion"] == "c10"]
    assert thread["status"] == "open"
    gc(
        "clarify", "answer", str(thread["id"]), "--db", url, "--actor", "dana",
        "--text", "A partial answer does not count: the criterion is met only in full.",
    )  # fmt: skip
    db = open_database(url)
    try:  # ben sees the answer beside the rubric
        seen = GradingStore(db).guidelines(BENCH, "T2", "c10")
        assert seen.answers == (
            "A partial answer does not count: the criterion is met only in full.",
        )
    finally:
        db.dispose()

    status = {t["task"]: t for t in gj("tasks", "--db", url)["tasks"]}
    assert status["T1"]["proposed"] is True
    assert status["T2"]["proposed"] is False
    assert status["T2"]["agreement"]["value"] == pytest.approx(0.8)
    before = _agreement_on(url, "current", {"c9", "c10"})
    assert before == 0.0

    # the coordinator sends T2 back and fixes the two criteria it disagreed on
    gc("tasks", "reopen", "T2", "--db", url, "--note", "c9 and c10 are ambiguous")
    out = gc(
        "rubric", "revise", "T2", "c9", "--db", url, "--actor", "dana",
        "--text", "criterion 9, met only when stated in full", "--reason", "split 1:1",
    )  # fmt: skip
    assert "T2 v1 → v2: verdict change; 2 verdicts on c9 now stale" in out
    assert "back in the queues of ben" in out  # his submitted item; ana had no queue yet
    out = gc(
        "rubric", "revise", "T2", "c10", "--db", url, "--actor", "dana",
        "--text", "criterion 10, met only when stated in full", "--reason", "see thread",
    )  # fmt: skip
    assert "T2 v2 → v3: verdict change; 2 verdicts on c10 now stale" in out
    assert gj("rubric", "stale", "--db", url) == {"ana": 2, "ben": 2}
    assert _agreement_on(url, "all", {"c9", "c10"}) == 0.0  # kept, never deleted
    with pytest.raises(KeyError):  # no current verdict on them: nothing to compare
        _agreement_on(url, "current", {"c9", "c10"})

    # round 2 of T2 opens on the revised task: the reviewers' items are pending again
    gc("tasks", "open", "T2", "--db", url, "--actor", "dana")
    # the graders re-grade what changed (ana in the app too); the stale verdicts go
    db = open_database(url)
    try:
        store = GradingStore(db)
        store.create_grader("ana")
        _finish_queue(store, "ana", {"c9": True, "c10": True})
        _finish_queue(store, "ben", {"c9": True, "c10": True})
    finally:
        db.dispose()
    assert gj("rubric", "stale", "--db", url) == {}
    assert _agreement_on(url, "current", {"c9", "c10"}) == 1.0
    assert _agreement_on(url, "1", {"c9", "c10"}) == 0.0  # before the fix, still readable
    # agreement per criterion version: 0 before each fix, 1 after
    by_version = gj("agreement", "--by-version", "--bootstrap", "0", "--db", url)
    rows = {(r["criterion_id"], r["version"]): r for r in by_version["criteria"]}
    assert rows[("c9", 1)]["percent_agreement"]["value"] == 0.0
    assert rows[("c9", 2)]["percent_agreement"]["value"] == 1.0
    assert rows[("c10", 1)]["percent_agreement"]["value"] == 0.0
    assert rows[("c10", 3)]["percent_agreement"]["value"] == 1.0

    # the reviewers answer the survey of round 2 again; T2 reaches the bar
    db = open_database(url)
    try:
        # (an unchanged survey is not saved again, so round 2's answers differ a little)
        survey(db, "T2", ("ana", "ben"), {**AGREE, "reasoning_skill": 5})
    finally:
        db.dispose()
    status = {t["task"]: t for t in gj("tasks", "--db", url)["tasks"]}
    assert status["T2"]["proposed"] is True, json.dumps(status["T2"])
    assert status["T2"]["agreement"]["value"] == pytest.approx(1.0)

    gc("tasks", "accept", "T1", "--db", url, "--note", "clear")
    gc("tasks", "accept", "T2", "--db", url, "--note", "clear after the fix")
    gc("tasks", "reject", "T3", "--db", url, "--note", "nobody could grade it", "--force")
    counts = gj("tasks", "--db", url)["counts"]
    assert counts == {
        "draft": 0,
        "in review": 0,
        "needs revision": 0,
        "accepted": 2,
        "rejected": 1,
    }
    hist = gj("rubric", "history", "T2", "--db", url)
    assert [(h["version"], h["reason"]) for h in hist] == [
        (1, None),
        (2, "split 1:1"),
        (3, "see thread"),
    ]
    gc("export", "benchmark", "--accepted-only", "-o", str(tmp_path / "out"), "--db", url)
    released = {t["id"]: t for t in read_jsonl(tmp_path / "out" / "tasks.jsonl")}
    assert set(released) == {"T1", "T2"} and released["T2"]["version"] == 3
