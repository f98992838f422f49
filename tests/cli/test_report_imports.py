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
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
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


_FETCH_CHILD = """
import pickle, sys
from gradercal.cli.report import _fetch_request
parts = []
send = parts.append if sys.argv[3] == "ahead" else None
fetched = _fetch_request(sys.argv[1], None, sys.argv[2], "active", True, send)
heavy = sorted(
    m for m in sys.modules
    if m.split(".")[0] in ("pandas", "pyarrow", "scipy", "sklearn", "matplotlib")
)
sys.stdout.buffer.write(pickle.dumps((heavy, fetched, parts)))
"""


def _fetched_in_a_fresh_process(db: str, version: str, ahead: bool = False) -> Any:
    """What the report's reading child returns, made into the dashboard's data (with
    ``ahead``: everything but the judgments sent ahead and made first)."""
    from gradercal.dashboard.inputs import dashboard_data_from_rows

    out = subprocess.run(
        [sys.executable, "-c", _FETCH_CHILD, db, version, "ahead" if ahead else "whole"],
        capture_output=True, cwd=ROOT, timeout=300, check=True,
    )  # fmt: skip
    heavy, fetched, parts = pickle.loads(out.stdout)
    assert heavy == []  # the reading child imports SQLAlchemy and numpy, not pandas
    assert fetched is not None
    if not ahead:
        assert parts == [] and not fetched.ahead
        return fetched, dashboard_data_from_rows(fetched.rows)
    # one part ahead; the result holds the judgments alone
    (part,) = parts
    assert fetched.ahead and part.frames.judgments == []
    assert fetched.rows.frames.criteria == [] and fetched.rows.fields == {}
    return fetched, dashboard_data_from_rows(fetched.rows, dashboard_data_from_rows(part))


def _frames_equal(a: Any, b: Any) -> None:
    for name in ("tasks", "criteria", "responses", "judgments", "adjudications"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))
    assert a.pass_threshold == b.pass_threshold


@pytest.mark.parametrize("ahead", [False, True], ids=["whole", "ahead"])
@pytest.mark.parametrize("version", ["current", "all", "1"])
def test_the_reading_child_imports_no_pandas_and_reads_the_loaders_data(
    imported_mini: str, mini: Path, version: str, ahead: bool
) -> None:
    """``gradercal report`` reads in a child forked before it imports anything heavy: the
    child imports no pandas (nor the engines) and hands back rows and numpy columns; the
    frames made of them equal the plain rows path's (``load_frames_by_rows``), the other
    fields the one loader's — on a benchmark with a criterion revised after grading (its
    verdict eras read too), of each backend. The same when everything but the judgments
    is sent ahead (the report makes those frames while the child reads the judgments)."""
    from gradercal.analysis.verdict_eras import VerdictEras
    from gradercal.db.dashboard_data import load_dashboard_data
    from gradercal.db.eras import load_eras
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database

    fetched, data = _fetched_in_a_fresh_process(imported_mini, version, ahead)
    assert fetched.version_used == version  # named: the benchmark has a revision
    db = open_database(imported_mini)
    try:
        repo = Repository(db)
        parsed: Any = int(version) if version.isdigit() else version
        _frames_equal(data.frames, repo.load_frames_by_rows(None, parsed))
        assert data.versions is not None  # the revision changed a verdict's meaning
        frames_all, eras = data.versions
        _frames_equal(frames_all, repo.load_frames_by_rows(None, "all"))
        expected: VerdictEras = load_eras(repo)
        assert eras.revised == expected.revised
        pd.testing.assert_frame_equal(eras.judgments, expected.judgments)
        pd.testing.assert_frame_equal(eras.adjudications, expected.adjudications)
        loaded = load_dashboard_data(repo, None, parsed)
        for name in ("reviews", "rounds"):
            pd.testing.assert_frame_equal(getattr(data, name), getattr(loaded, name))
        assert data.design == loaded.design
    finally:
        db.dispose()


@pytest.fixture
def imported_mini(db_url: str, mini: Path) -> str:
    """The mini benchmark on each backend, a criterion reworded after grading (version 2)
    and graded again under it."""
    from gradercal.db.repo import Repository
    from gradercal.db.revisions import RevisionStore
    from gradercal.db.session import open_database
    from gradercal.formats import read_path
    from gradercal.model import GraderKind, Judgment

    res = CliRunner().invoke(main, ["import", str(mini), "--db", db_url])
    assert res.exit_code == 0, res.output
    db = open_database(db_url)
    try:
        report = RevisionStore(db).revise_criterion(
            None, "M1", "c1", text="Names the premature stop codon", reason="split", actor="c"
        )
        assert report.version == 2
        data = read_path(mini)
        data.tasks, data.responses, data.adjudications = [], [], []
        data.judgments = [
            Judgment("M1-a", "c1", "cy", GraderKind.HUMAN, met=True),
            Judgment("M1-b", "c1", "cy", GraderKind.HUMAN, met=False),
            Judgment("M1-b", "c1", "judge-x", GraderKind.JUDGE, met=False, confidence=0.9),
        ]
        Repository(db).import_data(data)
    finally:
        db.dispose()
    return db_url
