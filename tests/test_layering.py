"""The three rooms stay apart: the core imports neither Qt nor SQLAlchemy; db never imports Qt."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.conftest import ROOT

FRONT_ENDS = {"cli", "db", "ui", "judge_cli", "analysis_cli", "ops_cli", "prompt_cli", "report_cli"}


def _contract(name_part: str) -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    for contract in config["tool"]["importlinter"]["contracts"]:
        if name_part in contract["name"]:
            return dict(contract)
    raise AssertionError(f"no import-linter contract mentioning {name_part!r}")


def test_every_core_module_is_under_the_core_contract() -> None:
    contract = _contract("The core")
    listed = set(contract["source_modules"])  # type: ignore[arg-type]
    core = {
        f"gradercal.{p.stem}"
        for p in (ROOT / "gradercal").iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()
    } - {f"gradercal.{n}" for n in FRONT_ENDS}
    assert core <= listed, f"add to the core contract in pyproject.toml: {sorted(core - listed)}"
    forbidden = set(contract["forbidden_modules"])  # type: ignore[arg-type]
    assert {"PySide6", "sqlalchemy", "gradercal.db", "gradercal.ui"} <= forbidden


def _installed_layout() -> Path:
    """The symlink tree with the installed layout (gradercal/db, gradercal/ui) that
    scripts/typecheck.py builds: import-linter, like mypy, cannot follow package-dir."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "typecheck.py"), "--tree-only"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def _lint_imports(tree: Path, config: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    return subprocess.run(
        [exe, "--no-cache", "--config", str(config)],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=False,
    )


def test_import_linter_contracts_hold() -> None:
    result = _lint_imports(_installed_layout(), ROOT / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken" in result.stdout


def test_a_core_module_importing_sqlalchemy_breaks_the_contract(tmp_path: Path) -> None:
    """The contract has teeth: a probe module in the core that imports SQLAlchemy fails it."""
    tree = tmp_path / "tree"
    shutil.copytree(_installed_layout(), tree, symlinks=True)
    (tree / "gradercal" / "bad_probe.py").write_text("import sqlalchemy\n")
    config = (
        (ROOT / "pyproject.toml")
        .read_text("utf-8")
        .replace('"gradercal.errors",', '"gradercal.errors",\n    "gradercal.bad_probe",', 1)
    )
    (tmp_path / "pyproject.toml").write_text(config)
    result = _lint_imports(tree, tmp_path / "pyproject.toml")
    assert result.returncode == 1
    assert "gradercal.bad_probe -> sqlalchemy" in result.stdout


def test_the_core_imports_without_qt_or_sqlalchemy() -> None:
    code = (
        "import sys, gradercal, gradercal.formats, gradercal.scoring, gradercal.frames, "
        "gradercal.synth\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'sqlalchemy', 'alembic')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_db_and_ui_are_installed_inside_the_gradercal_namespace() -> None:
    import gradercal.db
    import gradercal.db.models

    assert Path(gradercal.db.__file__).parent == ROOT / "db"
    assert gradercal.db.models.__name__ == "gradercal.db.models"
