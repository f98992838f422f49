"""The grading app starts without pandas, numpy and Alembic (about 1.5 s of imports on
2 cores): they load on first use. These tests keep it so, and keep the Alembic-free
schema check honest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gradercal.db.repo import Repository
from gradercal.db.session import head_revision, open_database, packaged_head
from gradercal.formats import read_path
from tests.conftest import DATA

HEAVY = ("pandas", "numpy", "alembic", "pyarrow", "jsonschema_rs")


def _loaded_after(code: str, tmp_path: Path) -> list[str]:
    script = (
        code + f"\nimport json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", HOME=str(tmp_path))
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    loaded: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


def test_the_packaged_head_read_from_the_files_is_alembics_head() -> None:
    assert packaged_head() == head_revision()


def test_opening_a_current_database_does_not_import_alembic(tmp_path: Path) -> None:
    path = tmp_path / "g.sqlite"
    db = open_database(path)
    Repository(db).import_data(read_path(DATA / "mini"))
    db.dispose()
    code = (
        "from gradercal.db.session import open_database\n"
        f"db = open_database({str(path)!r})\n"
        "from gradercal.db.grading import GradingStore\n"
        "GradingStore(db).graders()\n"
    )
    assert "alembic" not in _loaded_after(code, tmp_path)


def test_the_app_and_its_scoring_load_without_pandas_numpy_or_alembic(tmp_path: Path) -> None:
    code = (
        "from gradercal.ui.qt_app import application, build_window\n"
        "from gradercal.ui.grading_state import describe_auto\n"
        "import gradercal.rubric\n"
    )
    assert _loaded_after(code, tmp_path) == []


def test_rubric_scoring_still_understands_numpy_scalars() -> None:
    import numpy as np

    from gradercal.model import AutoRule
    from gradercal.rubric import evaluate_auto

    assert evaluate_auto(AutoRule(key="x", target=3), {"x": np.int64(3)})
    assert evaluate_auto(AutoRule(key="x", target=True), {"x": np.bool_(True)})
    assert not evaluate_auto(AutoRule(key="x", target=1), {"x": np.bool_(True)})
