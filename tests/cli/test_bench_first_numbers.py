"""``benchmarks/bench_first_numbers.py`` measures each tree's own code (#33).

``python -c`` and ``python -m`` put the working folder first on ``sys.path``, before
``PYTHONPATH``: run from one checkout with ``--tree`` naming another, every tree's window
and report imported the caller's gradercal (an A/B of identical code). Each child now
runs from the tree it measures.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

_ROOT = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    path = _ROOT / "benchmarks" / "bench_first_numbers.py"
    spec = importlib.util.spec_from_file_location("bench_first_numbers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_tree_runs_from_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = _bench()
    seen: list[dict[str, Any]] = []

    def run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        seen.append(kwargs)
        return subprocess.CompletedProcess(args, 0, stdout="(1.0, 2.0, 0.5, 1.5)\n")

    monkeypatch.setattr(bench.subprocess, "run", run)
    tree = tmp_path / "other-checkout"
    assert bench.window(tree, "db.sqlite") == (1.0, 2.0, 0.5, 1.5)
    bench.report(tree, "db.sqlite")
    assert len(seen) == 2
    for kwargs in seen:
        assert Path(kwargs["cwd"]) == tree
        assert kwargs["env"]["PYTHONPATH"] == str(tree)


def test_the_working_folder_comes_first_on_sys_path(tmp_path: Path) -> None:
    """Why: a package in the working folder shadows the same package on PYTHONPATH."""
    for where in ("here", "there"):
        (tmp_path / where / "pkg_33").mkdir(parents=True)
        (tmp_path / where / "pkg_33" / "__init__.py").write_text(f"WHERE = {where!r}\n")
    out = subprocess.run(
        [sys.executable, "-c", "import pkg_33; print(pkg_33.WHERE)"],
        cwd=tmp_path / "here",
        env={"PYTHONPATH": str(tmp_path / "there")},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "here"
