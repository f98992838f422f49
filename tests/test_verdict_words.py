"""The verdict words have one public home (``gradercal.model``): what is written and read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradercal.cli import main
from gradercal.model import (
    MET_WORDS,
    NOT_MET_WORDS,
    read_verdict_word,
    verdict_word,
)
from tests.conftest import DATA


def test_words_written() -> None:
    assert (verdict_word(True), verdict_word(False), verdict_word(None)) == ("met", "not met", "—")
    assert verdict_word(None, missing="no verdict") == "no verdict"
    assert read_verdict_word(verdict_word(True)) is True
    assert read_verdict_word(verdict_word(False)) is False


def test_words_read() -> None:
    assert not MET_WORDS & NOT_MET_WORDS
    for word in MET_WORDS:
        assert read_verdict_word(f"  {word.upper()} ") is True, word
    for word in NOT_MET_WORDS:
        assert read_verdict_word(word.title()) is False, word
    for other in ("", "maybe", "partial", "metx"):
        assert read_verdict_word(other) is None, other


def _run(*args: str) -> str:
    res = CliRunner().invoke(main, list(args))
    assert res.exit_code == 0, res.output
    return res.stdout


@pytest.mark.parametrize("said", [True, False])
def test_a_table_reads_every_verdict_word(tmp_path: Path, said: bool) -> None:
    """Each word of the public lists, in any case, is the verdict a table cell gives."""
    words = sorted(MET_WORDS if said else NOT_MET_WORDS)
    db = str(tmp_path / "w.sqlite")
    _run("import", str(DATA / "formats" / "v1"), "--db", db)
    rows = [f"T1-a,c2,g{i},human,{w.upper() if i % 2 else w}" for i, w in enumerate(words)]
    table = tmp_path / "words.csv"
    table.write_text("response_id,criterion_id,grader,grader_kind,met\n" + "\n".join(rows) + "\n")
    _run("import", str(table), "--db", db)
    got = [
        json.loads(line) for line in _run("export", "judgments", "--db", db, "-o", "-").splitlines()
    ]
    read = {r["grader"]: r["met"] for r in got if r["criterion_id"] == "c2"}
    assert read == {f"g{i}": said for i in range(len(words))}
