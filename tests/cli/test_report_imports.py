"""``gradercal report`` imports no scikit-learn for its default calibration (#33).

The report's default calibration (``threshold``, cross-fitted out of fold) is computed
without the estimators (:mod:`gradercal.analysis.calibration.thresholds`); scikit-learn
with scipy.stats costs ≈ 1 s of the report's ≈ 4 s at 750 tasks on a 2-core machine
(scipy.stats itself may still come: on the demo, the estimates' small-sample t quantile
imports it). A report is run as a process (on the demo, HTML and JSON), and the modules loaded at its
exit are checked (on SQLite and PostgreSQL) — with fork off too, so that the reading, the calibration and the
charts all run in the one process checked (with fork they run partly in children).
An ``isotonic`` report still imports it (the estimators are needed there).
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
heavy = ("sklearn",)
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
def test_a_default_report_imports_no_scikit_learn(demo_db: str, tmp_path: Path, mode: str) -> None:
    html = tmp_path / "r.html"
    assert _loaded(mode, demo_db, "-o", str(html)) == []
    assert "threshold calibration cross-fitted out of fold" in html.read_text("utf-8")
    assert _loaded(mode, demo_db, "--json", "--calibration", "leniency") == []


def test_an_isotonic_report_still_imports_it(demo_db: str) -> None:
    assert "sklearn" in _loaded("nofork", demo_db, "--json", "--calibration", "isotonic")
