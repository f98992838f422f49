"""``export-prompt`` carries the judge's alignment certificate in every format (#34).

On the demo, a responsive loopback judge is run and aligned (``gradercal judge align``,
certificate stored); ``export-prompt`` must then carry that stored certificate, equal to
what ``JudgeStore.certificates`` reads, in the JSON package (valid against the schema,
re-importable), the Markdown card (every text escaped), the Inspect AI module and the
promptfoo configuration and assertion. The exported judges must grade exactly as without
it: the embedded package differs only by its ``certificate`` key, and the rest of the
file is byte for byte the export without a certificate.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from sqlalchemy import delete

from gradercal.cli import main
from gradercal.db import models as m
from gradercal.db.judging import JudgeStore
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.formats import read_folder
from gradercal.prompt_package import package_from_dict, to_markdown
from tests.cli.test_judge_align import KEY_ENV, _answers, _cli
from tests.conftest import ROOT, DatabaseTemplates
from tests.support.align_judge import AlignJudgeServer

pytestmark = pytest.mark.slow

_LITERAL = re.compile(r"^PACKAGE_JSON = (\(\n.*?\n\))$", re.MULTILINE | re.DOTALL)


def _align_demo(url: str) -> None:
    """The demo imported into ``url``, judge ``j`` run and aligned (certificate stored)."""
    db = open_database(url)
    try:
        Repository(db).import_data(read_folder(ROOT / "samples" / "demo"))
    finally:
        db.dispose()
    with AlignJudgeServer(_answers(url)) as srv:
        conn = ["--model", "m", "--base-url", srv.base_url, "--api-key-env", KEY_ENV]
        _cli("run", "--db", url, "--judge", "j", *conn, "--no-logprobs")
        _cli("align", "--db", url, "--judge", "j", *conn, "--json", "--n-boot", "200")


@pytest.fixture
def aligned(db_url: str, db_templates: DatabaseTemplates) -> tuple[str, dict[str, Any]]:
    """The demo with judge ``j`` run and aligned; its stored certificate row. Built once per
    session and backend (the judge run and the alignment are most of these tests' time)
    and copied into the test's own database: every test may change its copy."""
    demo_db = db_templates.fill(db_url, "demo, judge j run and aligned", _align_demo)
    db = open_database(demo_db)
    try:
        rows = JudgeStore(db).certificates("j")
    finally:
        db.dispose()
    assert len(rows) == 1
    return demo_db, rows[0]


def _export(db: str, fmt: str, out: Path, *more: str) -> dict[str, str]:
    res = CliRunner().invoke(
        main,
        [
            "export-prompt",
            "--db",
            db,
            "--judge",
            "j",
            "--format",
            fmt,
            "-o",
            str(out),
            "--json",
            *more,
        ],
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    return {Path(f).name: Path(f).read_text("utf-8") for f in summary["files"]}


def _embedded(module: str) -> tuple[dict[str, Any], str]:
    """The package embedded in an exported judge, and the module with it cut out."""
    found = _LITERAL.search(module)
    assert found is not None
    pkg: dict[str, Any] = json.loads(ast.literal_eval(found.group(1)))
    return pkg, module[: found.start(1)] + module[found.end(1) :]


def _drop_certificates(db_url: str) -> None:
    db = open_database(db_url)
    try:
        with db.write() as s:
            s.execute(delete(m.JudgeCertificate))
    finally:
        db.dispose()


def test_every_format_carries_the_stored_certificate(
    aligned: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    db, stored = aligned
    files: dict[str, dict[str, str]] = {}
    for fmt, name in (
        ("json", "judge.json"),
        ("markdown", "judge.md"),
        ("inspect", "judge_scorer.py"),
        ("promptfoo", "judge.yaml"),
    ):
        (tmp_path / fmt).mkdir()
        files[fmt] = _export(db, fmt, tmp_path / fmt / name)
    # JSON: the stored record, valid against the schema, read back whole
    pkg = json.loads(files["json"]["judge.json"])
    assert pkg["certificate"] == stored
    assert package_from_dict(pkg).certificate == stored
    # Markdown: the certificate's section with its figures
    md = files["markdown"]["judge.md"]
    assert "## Alignment certificate" in md
    base = stored["certificate"]["baseline"]["prompt_version"]
    assert f"` {base} `" in md
    assert f"seed {stored['certificate']['split']['seed']}" in md
    for t in stored["certificate"]["split"]["held_out"]:
        assert t.replace("_", "\\_") in md
    # Inspect AI and the promptfoo assertion embed it beside the prompt
    inspect_pkg, _ = _embedded(files["inspect"]["judge_scorer.py"])
    assert inspect_pkg["certificate"] == stored
    assertion_pkg, _ = _embedded(files["promptfoo"]["judge_assert.py"])
    assert assertion_pkg["certificate"] == stored
    config = yaml.safe_load(files["promptfoo"]["judge.yaml"])
    assert config["metadata"]["gradercal_certificate"] == stored


def test_the_exported_judges_grade_as_without_a_certificate(
    aligned: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    db, _ = aligned
    (tmp_path / "with").mkdir()
    (tmp_path / "without").mkdir()
    with_cert = {
        "inspect": _export(db, "inspect", tmp_path / "with" / "judge_scorer.py"),
        "promptfoo": _export(db, "promptfoo", tmp_path / "with" / "judge.yaml"),
        "json": _export(db, "json", tmp_path / "with" / "judge.json"),
    }
    _drop_certificates(db)
    without = {
        "inspect": _export(db, "inspect", tmp_path / "without" / "judge_scorer.py"),
        "promptfoo": _export(db, "promptfoo", tmp_path / "without" / "judge.yaml"),
        "json": _export(db, "json", tmp_path / "without" / "judge.json"),
    }
    for fmt, module in (("inspect", "judge_scorer.py"), ("promptfoo", "judge_assert.py")):
        pkg_with, rest_with = _embedded(with_cert[fmt][module])
        pkg_without, rest_without = _embedded(without[fmt][module])
        assert "certificate" not in pkg_without
        assert {k: v for k, v in pkg_with.items() if k != "certificate"} == pkg_without
        assert rest_with == rest_without  # the kernel and glue are the same code
    assert with_cert["promptfoo"]["judge_tests.json"] == without["promptfoo"]["judge_tests.json"]
    cfg_with = yaml.safe_load(with_cert["promptfoo"]["judge.yaml"])
    cfg_with.pop("metadata")
    assert cfg_with == yaml.safe_load(without["promptfoo"]["judge.yaml"])
    a = json.loads(with_cert["json"]["judge.json"])
    b = json.loads(without["json"]["judge.json"])
    assert "certificate" not in b
    assert a["prompt"] == b["prompt"] and a["decision"] == b["decision"]
    assert a["prompt_version"] == b["prompt_version"]


def test_the_markdown_certificate_escapes_every_text(
    aligned: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    db, stored = aligned
    _export(db, "json", tmp_path / "judge.json")
    pkg = package_from_dict(json.loads((tmp_path / "judge.json").read_text("utf-8")))
    hostile = "<script>x</script> *bold* [l](http://e) | `c`\nnew line"
    row = json.loads(json.dumps(stored))
    row["judge"] = hostile
    row["certificate"]["note"] = hostile
    row["certificate"]["split"]["held_out"] = [hostile]
    from dataclasses import replace

    md = to_markdown(replace(pkg, certificate=row))
    section = md.split("## Alignment certificate", 1)[1].split("## System template", 1)[0]
    assert "<script>" not in section and "&lt;script&gt;" in section
    assert "\\*bold\\*" in section and "\\[l\\](http://e)" in section and "\\|" in section
    assert "\nnew line" not in section


def test_the_window_exports_the_same_package_as_the_command(
    aligned: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    """The calibrate dialog's export (``ui.judge_ops.export_prompt``) and ``export-prompt``
    build through one function: the window's JSON package is the command's, certificate
    included (the window's own copy of the steps left the certificate out)."""
    from gradercal.ui.judge_ops import export_prompt

    db_url, row = aligned
    cli_files = _export(db_url, "json", tmp_path / "cli.json", "--n-boot", "200")
    db = open_database(db_url)
    try:
        export_prompt(db, None, "j", "json", tmp_path / "window.json", n_boot=200)
    finally:
        db.dispose()
    window = json.loads((tmp_path / "window.json").read_text("utf-8"))
    assert window["certificate"] == json.loads(json.dumps(row, default=str))
    command = json.loads(cli_files["cli.json"])
    for stamped in ("created_at", "integrity"):  # the time of writing, and the hash over it
        window.pop(stamped), command.pop(stamped)
    assert window == command
