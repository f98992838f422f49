"""A judge recorded without a model (the demo's judge-gpt: imported judgments name no
model) exported to promptfoo or Inspect AI (#32): promptfoo is refused unless --model gives
one, naming the option; the Inspect AI export warns that `inspect eval --model` chooses it."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from gradercal.cli import main
from gradercal.db.judging import JudgeStore
from gradercal.db.session import open_database
from tests.conftest import DatabaseTemplates, import_demo

JUDGE = "judge-gpt"


def _demo(db_url: str, db_templates: DatabaseTemplates) -> str:
    db_templates.fill(db_url, "demo imported", import_demo)
    db = open_database(db_url, create=False)
    try:
        assert JudgeStore(db).judge(JUDGE).model is None  # imported without a model
    finally:
        db.dispose()
    return db_url


def _export(db: str, out: Path, *extra: str) -> tuple[int, str]:
    res = CliRunner().invoke(
        main,
        ["export-prompt", "--db", db, "--judge", JUDGE, "-o", str(out), "--n-boot", "0", *extra],
    )
    return res.exit_code, res.output


def test_promptfoo_without_a_model_is_refused_and_model_sets_it(
    db_url: str, db_templates: DatabaseTemplates, tmp_path: Path
) -> None:
    db = _demo(db_url, db_templates)
    code, out = _export(db, tmp_path / "pf.yaml", "--format", "promptfoo")
    assert code == 1, out
    assert "no model recorded" in out and "--model M" in out, out
    assert not (tmp_path / "pf.yaml").exists()
    code, out = _export(db, tmp_path / "pf.yaml", "--format", "promptfoo", "--model", "qwen3-8b")
    assert code == 0, out
    config = yaml.safe_load((tmp_path / "pf.yaml").read_text("utf-8"))
    assert config["defaultTest"]["assert"][0]["config"]["model"] == "qwen3-8b"


def test_inspect_without_a_model_warns_which_option_chooses_it(
    db_url: str, db_templates: DatabaseTemplates, tmp_path: Path
) -> None:
    db = _demo(db_url, db_templates)
    code, out = _export(db, tmp_path / "judge.py", "--format", "inspect")
    assert code == 0, out
    assert "no model recorded" in out and "inspect eval --model openai/M" in out, out
    assert (tmp_path / "judge.py").is_file()
    code, out = _export(db, tmp_path / "judge2.py", "--format", "inspect", "--model", "m")
    assert code == 1 and "inspect eval --model" in out, out


def test_a_judge_with_a_model_exports_without_the_warning(
    db_url: str, db_templates: DatabaseTemplates, tmp_path: Path
) -> None:
    db = _demo(db_url, db_templates)
    store = open_database(db, create=False)
    try:
        from sqlalchemy import update

        from gradercal.db import models as m

        with store.write() as s:
            s.execute(update(m.Grader).where(m.Grader.name == JUDGE).values(model="gpt-x"))
    finally:
        store.dispose()
    code, out = _export(db, tmp_path / "pf.yaml", "--format", "promptfoo")
    assert code == 0 and "no model recorded" not in out, out
    config = yaml.safe_load((tmp_path / "pf.yaml").read_text("utf-8"))
    assert config["defaultTest"]["assert"][0]["config"]["model"] == "gpt-x"
