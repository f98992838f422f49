"""``gradercal report`` keeps the database layer and scikit-learn off its critical path (#33).

The command forks a child that reads the database while the parent imports the engines,
and computes the calibration section in a second forked child while the parent computes
the others. Everything the parent imports before it can start computing delays the
report: the SQLAlchemy layer (≈ 0.25 s, the reading child's business) used to come in with
the ``--version`` option's parser, and scikit-learn with the scipy.stats it loads (≈ 0.8 s)
with the parent's preload, though only the calibration child uses them. These tests run
the real command in a fresh interpreter and look at what its parent process loaded, and
check that a child which imports the calibration itself gives the same numbers.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradercal._util.forked import fork_available
from gradercal.cli import main
from gradercal.dashboard import compute_dashboard
from gradercal.formats import read_path
from gradercal.frames import frames_from_data
from tests.conftest import DEMO, ROOT

pytestmark = pytest.mark.skipif(not fork_available(), reason="fork is used on Linux only")


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reportimports") / "demo.sqlite"
    res = CliRunner().invoke(main, ["import", str(DEMO), "--db", str(path)])
    assert res.exit_code == 0, res.output
    return path


_PARENT = """
import atexit, json, os, sys
parent = os.getpid()

def loaded():
    if os.getpid() == parent:  # not the forked children, which leave with os._exit
        heavy = ("sqlalchemy", "gradercal.db", "sklearn", "scipy.stats")
        print("LOADED " + json.dumps([m for m in heavy if m in sys.modules]))

atexit.register(loaded)
from gradercal.cli import main
main(sys.argv[1:])
"""


def test_the_report_process_leaves_the_database_layer_and_sklearn_to_its_children(
    demo_db: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r.html"
    args = [
        "report",
        "--db",
        str(demo_db),
        "-o",
        str(out),
        "--bootstrap",
        "20",
        "--version",
        "current",
    ]
    res = subprocess.run(
        [sys.executable, "-c", _PARENT, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert out.stat().st_size > 10_000  # the report was written
    line = next(x for x in res.stdout.splitlines() if x.startswith("LOADED "))
    assert json.loads(line[len("LOADED ") :]) == []


_CHILD_IMPORTS = """
import json, sys
from gradercal.dashboard.compute import compute_dashboard, preload
from gradercal.formats import read_path
from gradercal.frames import frames_from_data
preload(late=False)
frames = frames_from_data(read_path(sys.argv[1]))
d = compute_dashboard(frames, n_boot=20, seed=3, processes=2)
print(json.dumps({"sklearn": "sklearn" in sys.modules, "dash": d.to_json()}))
"""


def test_a_child_that_imports_the_calibration_itself_gives_the_same_dashboard() -> None:
    res = subprocess.run(
        [sys.executable, "-c", _CHILD_IMPORTS, str(DEMO)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout.strip().splitlines()[-1])
    # the calibration ran in the child: this process never imported scikit-learn
    assert got["sklearn"] is False
    one = compute_dashboard(frames_from_data(read_path(DEMO)), n_boot=20, seed=3, processes=1)
    want = json.loads(json.dumps(one.to_json()))
    assert got["dash"] == want
