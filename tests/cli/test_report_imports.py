"""``gradercal report`` imports neither scikit-learn nor scipy.stats for its default
calibration (#33).

The report's default calibration (``threshold``, cross-fitted out of fold) is computed
without the estimators (:mod:`gradercal.analysis.calibration.thresholds`); scikit-learn
with scipy.stats costs ≈ 1 s of the report's ≈ 4 s at 750 tasks on a 2-core machine, and
scipy.stats alone ≈ 0.35 s of CPU: the estimates' t and normal quantiles come from
scipy.special (what scipy.stats computes them with). A report is run as a process (on the demo, HTML and JSON), and the modules loaded at its
exit are checked (on SQLite and PostgreSQL) — with fork off too, so that the reading, the calibration and the
charts all run in the one process checked (with fork they run partly in children).
An ``isotonic`` report still imports it (the estimators are needed there).

The reading itself (every table the dashboard needs: rounds, eras, reviews) imports no
scipy at all: the report reads in a forked child while it imports the engines, so
whatever the reading imports lengthens the report (≈ 0.3 s of a 0.8 s read at 750 tasks
when the rounds and eras brought in the bootstrap).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradercal.cli import main
from tests.conftest import DEMO, ROOT

_CHILD = """
import atexit, json, sys
import gradercal._util.forked as forked
if sys.argv[1] == "nofork":
    forked.fork_available = lambda: False
heavy = ("sklearn", "scipy.stats")
atexit.register(lambda: sys.stderr.write(
    "LOADED " + json.dumps([m for m in heavy if m in sys.modules]) + "\\n"))
from gradercal.cli import main
sys.argv = ["gradercal", "report", *sys.argv[2:]]
main()
"""


@pytest.fixture
def demo_db(db_url: str) -> str:
    """The demo in a fresh database of each backend (SQLite, PostgreSQL)."""
    res = CliRunner().invoke(main, ["import", str(DEMO), "--db", db_url])
    assert res.exit_code == 0, res.output
    return db_url


_READ_CHILD = """
import json, sys
from gradercal.cli.common import open_repo
from gradercal.db.dashboard_data import load_dashboard_data
repo = open_repo(sys.argv[1])
data = load_dashboard_data(repo, None, "current")
assert len(data.frames.judgments) > 0 and data.rounds is not None
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("scipy", "sklearn"))))
"""


def test_reading_the_dashboards_tables_imports_no_scipy(demo_db: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _READ_CHILD, demo_db],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=True,
    )  # fmt: skip
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def _loaded(mode: str, db: str, *args: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, "--db", str(db), "--bootstrap", "20", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=True,
    )
    line = [x for x in out.stderr.splitlines() if x.startswith("LOADED ")][-1]
    loaded: list[str] = json.loads(line.removeprefix("LOADED "))
    return loaded


@pytest.mark.parametrize("mode", ["fork", "nofork"])
def test_a_default_report_imports_no_scikit_learn_nor_scipy_stats(
    demo_db: str, tmp_path: Path, mode: str
) -> None:
    html = tmp_path / "r.html"
    assert _loaded(mode, demo_db, "-o", str(html)) == []
    assert "threshold calibration cross-fitted out of fold" in html.read_text("utf-8")
    assert _loaded(mode, demo_db, "--json", "--calibration", "leniency") == []


def test_an_isotonic_report_still_imports_it(demo_db: str) -> None:
    assert "sklearn" in _loaded("nofork", demo_db, "--json", "--calibration", "isotonic")
