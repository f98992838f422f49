"""``gradercal clarify`` on both backends: ask, list (text and --json), show, answer with
a re-check, close, --help, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gradercal.cli import main
from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.session import open_database
from tests.support.gui import import_folder, write_gui_benchmark

BENCH = "gui-bench"


@pytest.fixture
def url(db_url: str, tmp_path: Path) -> str:
    import_folder(db_url, write_gui_benchmark(tmp_path / "bench"))
    db = open_database(db_url)
    try:  # ana graded P1's c1 on one response and submitted it
        store = GradingStore(db)
        store.create_grader("ana")
        item = next(i for i in store.ensure_queue("ana", BENCH) if i.task_id == "P1")
        for cid in ("c1", "c2", "c3"):
            store.save_judgment(item.assignment_id, cid, JudgmentValue(met=True))
        store.save_judgment(item.assignment_id, "c4", JudgmentValue(level=2))
        store.submit(item.assignment_id)
    finally:
        db.dispose()
    return db_url


def gc(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def test_ask_list_show_answer_recheck_close(url: str) -> None:
    res = gc("clarify", "list", "--db", url)
    assert res.exit_code == 0, res.output
    assert res.output.strip() == "No clarification threads."
    res = gc(
        "clarify", "ask", "P1", "c1", "--db", url, "--text", "Do trends count?", "--actor", "bob"
    )
    assert res.exit_code == 0, res.output
    assert res.output.strip() == "#1 open: P1 c1"
    res = gc("clarify", "ask", "P1", "c1", "--db", url, "--text", "And p = 0.06?", "--actor", "cy")
    assert res.output.strip() == "#1 open: P1 c1 (joins the open thread: 2 questions)"

    res = gc("clarify", "list", "--db", url, "--status", "open")
    assert res.exit_code == 0, res.output
    assert res.output.strip() == "#1 open     P1 c1  Do trends count? (2 questions)"
    data = json.loads(gc("clarify", "list", "--db", url, "--json").output)
    assert [(d["id"], d["status"], d["asked_by"]) for d in data] == [(1, "open", "bob")]
    assert [msg["author"] for msg in data[0]["messages"]] == ["bob", "cy"]

    res = gc(
        "clarify", "answer", "1", "--db", url, "--text", "No: p < 0.05 only.",
        "--recheck", "--actor", "chair", "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    done = json.loads(res.output)
    assert done["status"] == "answered" and done["answer"] == "No: p < 0.05 only."
    assert done["answered_by"] == "chair"
    assert done["recheck_graders"] == ["ana"] and len(done["reopened_assignments"]) == 1
    db = open_database(url)
    try:
        reopened = GradingStore(db).queue_item(done["reopened_assignments"][0])
        assert reopened.status == "in_progress" and reopened.task_id == "P1"
    finally:
        db.dispose()

    res = gc("clarify", "show", "1", "--db", url)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == "#1 answered: gui-bench / P1 / c1"
    assert lines[1] == "criterion: Says the claim is not supported"
    assert [ln.split("]")[0].strip() + "]" for ln in lines[2:]] == [
        "[question]",
        "[question]",
        "[answer]",
    ]
    assert lines[4].endswith(": No: p < 0.05 only.")
    assert json.loads(gc("clarify", "show", "1", "--db", url, "--json").output)["id"] == 1
    assert gc("clarify", "list", "--db", url, "--status", "open").output.strip() == (
        "No clarification threads with status open."
    )
    res = gc("clarify", "close", "1", "--db", url, "--actor", "chair")
    assert res.exit_code == 0 and res.output.strip() == "#1 closed"


def test_one_line_errors_and_help(url: str) -> None:
    for args, message in (
        (("clarify", "show", "9"), "error: no clarification 9"),
        (("clarify", "answer", "9", "--text", "x"), "error: no clarification 9"),
        (("clarify", "ask", "P1", "c9", "--text", "x"), "error: no criterion 'c9' in task 'P1'"),
        (("clarify", "ask", "P1", "c1", "--text", "  "), "error: the question must not be empty"),
    ):
        res = gc(*args, "--db", url)
        assert res.exit_code == 1, res.output
        assert len(res.output.strip().splitlines()) == 1
        assert res.output.startswith(message), res.output
    res = gc("clarify", "answer", "1", "--db", url)
    assert res.exit_code == 2 and "--text" in res.output  # a required option
    for sub in ("list", "show", "answer", "ask", "close"):
        res = gc("clarify", sub, "--help")
        assert res.exit_code == 0 and "--json" in res.output and "--db" in res.output
    res = gc("clarify", "--help")
    assert res.exit_code == 0 and "--recheck" in res.output
    assert "clarify" in gc("--help").output
