"""Rich markup in user text: every name, title, criterion text, note and id of the demo
carries ``[/]``, ``[bold]`` and an emoji code, and every command that prints it through
rich (tables and lines) shows it as written and exits cleanly — with markup on, ``[/]``
ended ``gradercal tasks`` with a ``MarkupError`` traceback. The commands print through
one console (:func:`gradercal.cli.common.text_console`, markup off); a structural test
keeps it the only one."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gradercal.cli import main
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.formats import read_folder
from tests.conftest import DEMO, ROOT

MARK = " [/] [bold]b :smile:"
#: Keys whose values are a vocabulary, a date or a file reference, not text.
NOT_TEXT = {"grader_kind", "created_at", "updated_at", "path", "url", "format_version", "key"}


def _hostile(obj: Any, key: str | None = None) -> Any:
    if isinstance(obj, dict):
        return {k: _hostile(v, k) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_hostile(v, key) for v in obj]
    if isinstance(obj, str) and key not in NOT_TEXT:
        return obj + MARK
    return obj


def hostile_demo(dest: Path) -> Path:
    """The demo with :data:`MARK` appended to every text of every file (ids, grader names,
    benchmark name, titles, criterion text, tags, rationales, notes, models...)."""
    shutil.copytree(DEMO, dest)
    for f in [*dest.glob("*.jsonl"), dest / "benchmark.json"]:
        if f.suffix == ".jsonl":
            rows = [_hostile(json.loads(x)) for x in f.read_text("utf-8").splitlines() if x]
            f.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
        else:
            f.write_text(json.dumps(_hostile(json.loads(f.read_text("utf-8")))), "utf-8")
    return dest


def gc(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def hostile_db(db_url: str, tmp_path: Path) -> str:
    db = open_database(db_url, create=True)
    try:
        Repository(db).import_data(read_folder(hostile_demo(tmp_path / "demo")))
    finally:
        db.dispose()
    return db_url


def test_markup_in_every_user_text_is_printed_as_written(hostile_db: str, tmp_path: Path) -> None:
    db = ("--db", hostile_db)
    judge = "judge-gpt" + MARK
    task = "T01" + MARK
    note = "[/] a note [bold] with markup [/bold] [red"
    # an acceptance decision with a hostile note (the case of the report)
    for args in (("open", task), ("accept", task, "--note", note, "--force")):
        res = gc("tasks", *args, *db, "--actor", "lead" + MARK)
        assert res.exit_code == 0, res.output
    csv = tmp_path / "ratings [bold]x[red :smile:.csv"
    csv.write_text(
        "unit,rater,value\n"
        + "".join(f"u{i}{MARK},r{j}{MARK},{(i + j) % 2}\n" for i in range(8) for j in range(3)),
        "utf-8",
    )
    commands: list[tuple[tuple[str, ...], tuple[str, ...]]] = [
        # (command, what its text output must show as written)
        (("tasks", *db), (task, note, "[/]")),
        (("scores", *db, "--grader", "all", "--by", "domain"), ("expert-ana" + MARK, MARK)),
        (("agreement", *db, "--judge", judge, "--bootstrap", "0"), (judge,)),
        (("agreement", *db, "--by", "workflow", "--bootstrap", "0"), (MARK,)),
        (("alttest", *db, "--judge", judge), ("expert-ana" + MARK,)),
        (("calibrate", *db, "--judge", judge, "--bootstrap", "0"), (judge,)),
        (("estimate", *db, "--judge", judge), ("atlas-7b" + MARK,)),
        (("health", *db, "--all"), (MARK,)),
        (("impact", *db, "--judge", judge, "--bootstrap", "0"), ("atlas-7b" + MARK,)),
        (("progress", *db), ()),
        (("stats", str(csv), "--bootstrap", "0"), (csv.name,)),
    ]
    for args, shown in commands:
        res = gc(*args)
        out = res.output
        assert res.exit_code == 0, (args, out, res.exception)
        assert "MarkupError" not in out and "Traceback" not in out, args
        flat = re.sub(r"[\s│┃|]+", " ", out)  # table cells wrap: compare without layout
        for text in shown:
            assert re.sub(r"\s+", " ", text) in flat, (args, text)
        assert "😄" not in out, args  # emoji codes are text too


def test_one_console_prints_the_commands_text() -> None:
    """Every rich console of the command line that prints text is ``text_console``
    (progress bars on stderr show only stage names)."""
    consoles = []
    for path in sorted((ROOT / "gradercal" / "cli").glob("*.py")):
        for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            if re.search(r"\bConsole\(", line) and "stderr=True" not in line:
                consoles.append(f"{path.name}:{n}")
    assert consoles == ["common.py:" + str(_text_console_line())]


def _text_console_line() -> int:
    lines = (ROOT / "gradercal" / "cli" / "common.py").read_text("utf-8").splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("def text_console("))
    return next(i for i in range(start, len(lines)) if "Console(" in lines[i]) + 1
