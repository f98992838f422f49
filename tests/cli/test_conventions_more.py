"""More command-line conventions (#32): suggestions for mistyped commands, `-o -` for the
report, a clear refusal of databases gradercal does not store in, shell completion, and every
environment variable the code reads documented in docs/cli.md."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradercal.cli import main
from tests.conftest import DEMO

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    db = str(tmp_path_factory.mktemp("conv2") / "demo.sqlite")
    res = CliRunner().invoke(main, ["import", str(DEMO), "--db", db, "--json"])
    assert res.exit_code == 0, res.output
    return db


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [(["jdge"], "'judge'"), (["imprt"], "'import'"), (["judge", "prmpt"], "'prompt'")],
)
def test_a_mistyped_command_gets_a_suggestion(typed: list[str], suggested: str) -> None:
    res = CliRunner().invoke(main, typed)
    assert res.exit_code == 2
    assert "Did you mean" in res.output and suggested in res.output, res.output


def test_report_dash_writes_the_html_to_standard_output(
    demo_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["report", "--db", demo_db, "-o", "-", "--bootstrap", "0"])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("<!DOCTYPE html>") and res.stdout.rstrip().endswith("</html>")
    assert "wrote HTML report: standard output" in res.stderr
    assert not (tmp_path / "-").exists()
    both = CliRunner().invoke(main, ["report", "--db", demo_db, "-o", "-", "--json"])
    assert both.exit_code == 2 and "standard output" in both.output


@pytest.mark.parametrize("url", ["mysql://u@h/x", "oracle://u@h/x", "mssql+pyodbc://h/x"])
def test_a_database_gradercal_does_not_store_in_is_one_line(url: str) -> None:
    res = CliRunner().invoke(main, ["scores", "--db", url])
    assert res.exit_code != 0
    assert "Traceback" not in res.output
    assert "SQLite or PostgreSQL" in res.output
    assert len(res.output.strip().splitlines()) == 1, res.output


def test_shell_completion_completes_lazy_commands_and_subcommands() -> None:
    def complete(words: str, cword: int) -> list[str]:
        env = {**os.environ, "COMP_WORDS": words, "COMP_CWORD": str(cword),
               "_GRADERCAL_COMPLETE": "bash_complete"}  # fmt: skip
        out = subprocess.run(
            [sys.executable, "-m", "gradercal"], env=env, capture_output=True, text=True
        )
        return [line.split(",", 1)[1] for line in out.stdout.splitlines()]

    assert {"import", "impact", "import-prompt"} <= set(complete("gradercal im", 1))
    assert {"run", "runs"} <= set(complete("gradercal judge r", 2))


def test_every_environment_variable_the_code_reads_is_documented() -> None:
    used = set()
    for path in (ROOT / "gradercal").rglob("*.py"):
        used |= set(re.findall(r"\bGRADERCAL_[A-Z_]+\b", path.read_text("utf-8")))
    documented = set(re.findall(r"`(GRADERCAL_[A-Z_]+)`", (ROOT / "docs/cli.md").read_text()))
    assert used, "the scan found nothing"
    assert used <= documented, f"not in docs/cli.md's table: {sorted(used - documented)}"


def _leaf_commands() -> list[tuple[str, ...]]:
    """Every runnable command, found by walking the click tree (lazy groups included)."""
    import click

    found: list[tuple[str, ...]] = []

    def walk(cmd: click.Command, path: tuple[str, ...], parent: click.Context | None) -> None:
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd, info_name=path[-1] if path else "gradercal", parent=parent)
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                assert sub is not None, (*path, name)
                walk(sub, (*path, name), ctx)
        else:
            found.append(path)

    walk(main, (), None)
    return found


def test_every_command_takes_db_and_help() -> None:
    """The README's promise: every command takes `--db PATH|URL` and `--help`. The list of
    commands is derived from the click tree, so a new command is checked too."""
    commands = _leaf_commands()
    assert len(commands) > 40 and ("judge", "prices") in commands
    missing = []
    for path in commands:
        res = CliRunner().invoke(main, [*path, "--help"])
        assert res.exit_code == 0, (path, res.output)
        if not re.search(r"^\s+--db PATH\|URL\b", res.output, re.M):
            missing.append(" ".join(path))
    assert missing == [], f"no --db in the --help of: {missing}"


def test_commands_without_a_database_accept_db_and_run(tmp_path: Path) -> None:
    db = str(tmp_path / "unused.sqlite")
    res = CliRunner().invoke(main, ["judge", "prices", "--db", db, "--json"])
    assert res.exit_code == 0, res.output
    assert "prices" in res.output
    out = tmp_path / "demo"
    res = CliRunner().invoke(main, ["samples", "demo", "-o", str(out), "--db", db])
    assert res.exit_code == 0, res.output
    assert (out / "tasks.jsonl").is_file()
    assert not Path(db).exists()  # accepted, not created: these commands use no database
