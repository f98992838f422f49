"""The house keeps its layers: import-linter contracts that name packages, proven able to fail.

pyproject.toml declares the layers (front ends over the database over the engines over the
kernel), forbids Qt, SQL, click and rich below the front ends and Qt in the database layer,
keeps Qt out of every UI module not named ``qt_*``, allows no import cycle among the
modules of any package and keeps command modules apart. Each
kind of rule has a probe here: a copy of the package with one bad module added must break
exactly that contract.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import click
import pytest

from tests.conftest import ROOT

FRONT_ENDS = ("__main__", "cli", "ui", "db")  # __main__: `python -m gradercal`, on cli


def _config() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["importlinter"]


def _contract(name_part: str) -> dict[str, object]:
    for contract in _config()["contracts"]:  # type: ignore[attr-defined]
        if name_part in contract["name"]:
            return dict(contract)
    raise AssertionError(f"no import-linter contract mentioning {name_part!r}")


def _layer_members() -> list[list[str]]:
    layers = _contract("Layers")["layers"]
    return [[m.strip() for m in layer.split("|")] for layer in layers]  # type: ignore[attr-defined]


def _lint_imports(tree: Path, config: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    return subprocess.run(
        [exe, "--no-cache", "--config", str(config)],
        cwd=tree,
        # the package under test first, then the repository (for tests.support's contract type)
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT)])},
        capture_output=True,
        text=True,
        check=False,
    )


def test_import_linter_contracts_hold() -> None:
    result = _lint_imports(ROOT, ROOT / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 6 kept, 0 broken" in result.stdout


def test_contracts_name_packages_not_module_lists() -> None:
    """The forbidden contract's sources are exactly the layers below the front ends, and
    the layers contract is exhaustive, so a new top-level module must be placed in a layer."""
    layers = _layer_members()
    assert [layer[0] for layer in layers[: len(FRONT_ENDS)]] == list(FRONT_ENDS)
    below = {f"gradercal.{m}" for layer in layers[len(FRONT_ENDS) :] for m in layer}
    assert set(_contract("Below the front ends")["source_modules"]) == below  # type: ignore[arg-type]
    assert _contract("Layers")["exhaustive"] is True
    for contract in _config()["contracts"]:  # type: ignore[attr-defined]
        for key in ("source_modules", "modules"):
            for module in contract.get(key, ()):
                assert module.count(".") <= 1 or module.endswith(".*"), (contract["name"], module)


def _assert_broken(stdout: str, name_part: str) -> None:
    """The contract named ``name_part`` is reported broken (others may break with it: an
    upward import between packages is also a cycle among them)."""
    status = [
        line
        for line in stdout.splitlines()
        if name_part in line and re.search(r" (KEPT|BROKEN)( \(.*\))?$", line)
    ]
    assert status and " BROKEN" in status[0], stdout


def _probe(tmp_path: Path, relpath: str, code: str) -> subprocess.CompletedProcess[str]:
    """lint-imports on a copy of the package with one extra module at ``relpath``."""
    tree = tmp_path / "tree"
    shutil.copytree(
        ROOT / "gradercal", tree / "gradercal", ignore=shutil.ignore_patterns("__pycache__")
    )
    (tree / relpath).write_text(code)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return _lint_imports(tree, tmp_path / "pyproject.toml")


@pytest.mark.parametrize(
    ("relpath", "code", "broken", "expected"),
    [
        # an engine importing SQLAlchemy
        (
            "gradercal/analysis/bad_probe.py",
            "import sqlalchemy\n",
            "Below the front ends",
            "gradercal.analysis.bad_probe -> sqlalchemy",
        ),
        # the kernel importing an engine: the layers run downwards only
        (
            "gradercal/bad_probe.py",
            "import gradercal.analysis.scoring\n",
            "Layers",
            "gradercal.bad_probe",
        ),
        # a new top-level module that no layer names (the layers contract is exhaustive)
        (
            "gradercal/bad_probe.py",
            "import gradercal.errors\n",
            "Layers",
            "gradercal.bad_probe",
        ),
        # the statistics importing the analysis engines above them
        (
            "gradercal/stats/bad_probe.py",
            "import gradercal.analysis.agreement\n",
            "Layers",
            "gradercal.stats.bad_probe -> gradercal.analysis.agreement",
        ),
        # a Qt-free UI module (not named qt_*) that loads Qt through a Qt module
        (
            "gradercal/ui/dashboard/bad_probe.py",
            "import gradercal.ui.qt_theme\n",
            "In the UI only qt_* modules load Qt",
            "gradercal.ui.dashboard.bad_probe is not named qt_* but imports Qt",
        ),
        # one command module importing another
        (
            "gradercal/cli/bad_probe.py",
            "import gradercal.cli.analysis\n",
            "Command modules",
            "gradercal.cli.bad_probe -> gradercal.cli.analysis",
        ),
        # the database layer importing Qt
        (
            "gradercal/db/bad_probe.py",
            "import PySide6.QtCore\n",
            "The database layer never imports Qt",
            "gradercal.db.bad_probe -> PySide6",
        ),
    ],
)
def test_each_contract_catches_a_violation(
    tmp_path: Path, relpath: str, code: str, broken: str, expected: str
) -> None:
    result = _probe(tmp_path, relpath, code)
    assert result.returncode == 1, result.stdout + result.stderr
    _assert_broken(result.stdout, broken)
    assert expected in result.stdout


def test_an_import_cycle_inside_a_package_breaks_the_acyclic_contract(tmp_path: Path) -> None:
    """Two sibling modules importing each other (here in the engines) are a cycle."""
    tree = tmp_path / "tree"
    shutil.copytree(
        ROOT / "gradercal", tree / "gradercal", ignore=shutil.ignore_patterns("__pycache__")
    )
    (tree / "gradercal/analysis/bad_a.py").write_text("import gradercal.analysis.bad_b\n")
    (tree / "gradercal/analysis/bad_b.py").write_text("import gradercal.analysis.bad_a\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    result = _lint_imports(tree, tmp_path / "pyproject.toml")
    assert result.returncode == 1, result.stdout + result.stderr
    _assert_broken(result.stdout, "No import cycle")
    assert "No cycles are allowed in gradercal.analysis" in result.stdout


def test_the_core_imports_without_qt_sql_click_or_rich() -> None:
    code = (
        "import sys, gradercal, gradercal.formats, gradercal.analysis.scoring, "
        "gradercal.analysis.agreement, gradercal.analysis.calibration, gradercal.dashboard, "
        "gradercal.prompt_package, gradercal.frames, gradercal.synth\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('PySide6', 'sqlalchemy', 'alembic', 'click', 'rich')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_db_and_ui_live_inside_the_package_folder() -> None:
    import gradercal.db
    import gradercal.db.models
    import gradercal.ui

    assert Path(gradercal.db.__file__).parent == ROOT / "gradercal" / "db"
    assert Path(gradercal.ui.__file__).parent == ROOT / "gradercal" / "ui"
    assert gradercal.db.models.__name__ == "gradercal.db.models"
    assert "package-dir" not in (ROOT / "pyproject.toml").read_text("utf-8")


def test_every_lazily_loaded_command_imports_and_is_a_click_command() -> None:
    from gradercal.cli import LazyGroup, main

    ctx = click.Context(main)
    assert LazyGroup.lazy, "no lazily loaded commands"
    for name, (target, short_help) in LazyGroup.lazy.items():
        module, attr = target.split(":")
        assert module.startswith("gradercal.cli."), (name, module)
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command), name
        assert main.get_command(ctx, name) is command
        assert short_help and short_help[0].isupper(), name
    assert main.list_commands(ctx) == sorted(LazyGroup.lazy)
