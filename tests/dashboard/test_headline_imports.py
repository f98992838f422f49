"""The dashboard's headline waits for no heavy import it does not use (#33).

The window's first numbers (the overview tiles, the expert α, the judge–consensus κ, the
alt-test) come from ``compute_dashboard``'s ``headline`` callback; on a quiet 2-core
machine scikit-learn costs ≈ 1.3 s to import, scipy.stats ≈ 0.5 s more than scipy's
special functions and matplotlib ≈ 0.7 s. The calibration (scikit-learn), the correlation
coefficients (scipy.stats) and the charts (matplotlib) come later, so a fresh process that
computes the headline must not have imported them by then — the worker imports them
after it has sent the headline (:data:`gradercal.ui.dashboard.worker.HEADLINE_MODULES`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.formats import read_path
from tests.conftest import DEMO, ROOT

_CHILD = """
import json, sys
from gradercal.ui.dashboard.worker import preload_first
preload_first()  # what the worker imports before computing the headline
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.dashboard.compute import compute_dashboard

class Headline(Exception):
    pass

def stop(h):
    raise Headline(sorted(h))

frames = Repository(open_database(sys.argv[1])).load_frames()
try:
    compute_dashboard(frames, n_boot=20, headline=stop)
except Headline as h:
    heavy = ("sklearn", "scipy.stats", "matplotlib")
    print(json.dumps({"fields": h.args[0], "loaded": [m for m in heavy if m in sys.modules]}))
"""


def test_the_headline_imports_no_calibration_statistics_or_charts(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'demo.sqlite'}"
    db = open_database(url)
    try:
        Repository(db).import_data(read_path(DEMO))
    finally:
        db.dispose()
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, url],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert "alt_test" in got["fields"] and "agreement" in got["fields"]
    assert got["loaded"] == [], f"imported before the headline: {got['loaded']}"
