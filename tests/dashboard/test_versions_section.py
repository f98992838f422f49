"""The dashboard's agreement per criterion version (issue #16): absent until a criterion
is revised (the dashboard, its JSON and its report exactly as before), then one row per
revised criterion and version, the numbers of gradercal.analysis.versions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gradercal._util.jsonsafe import json_safe
from gradercal.analysis.versions import agreement_by_version
from gradercal.dashboard import DashboardFilters, compute_dashboard
from gradercal.dashboard.report import render_html
from gradercal.dashboard.tables import VERSION_COLUMNS
from gradercal.db.eras import load_eras
from gradercal.db.revisions import RevisionStore
from gradercal.formats import read_path
from gradercal.model import GraderKind, Judgment

KEY = "criterion_versions"
TITLE = "Agreement per criterion version"


@pytest.fixture
def stored(repo: Any, mini: Path) -> Any:
    repo.import_data(read_path(mini))
    return repo


def _dashboard(repo: Any, **kwargs: Any) -> Any:
    eras = load_eras(repo)
    return compute_dashboard(
        repo.load_frames(),
        n_boot=0,
        versions=(repo.load_frames(version="all"), eras),
        **kwargs,
    )


def _json(d: Any) -> str:
    return json.dumps(json_safe(d.to_json()), sort_keys=False)


def test_absent_before_a_revision(stored: Any) -> None:
    d = _dashboard(stored)
    assert KEY not in d.tables and not d.has_section(KEY)
    assert KEY not in d.to_json()
    # the same dashboard as one computed without the version data at all
    plain = compute_dashboard(stored.load_frames(), n_boot=0)
    assert _json(d) == _json(plain)
    assert list(d.table(KEY).columns) == list(VERSION_COLUMNS) and d.table(KEY).empty
    html = render_html(d, image_format="svg", max_rows=10)
    assert TITLE not in html and f'id="{KEY}"' not in html


def test_present_after_a_revision(stored: Any, mini: Path) -> None:
    before = compute_dashboard(stored.load_frames(), n_boot=0)
    RevisionStore(stored.db).revise_criterion(
        None, "M1", "c1", text="Names the premature stop codon", reason=None, actor=None
    )
    data = read_path(mini)
    data.tasks, data.responses, data.adjudications = [], [], []
    data.judgments = [
        Judgment("M1-a", "c1", "cy", GraderKind.HUMAN, met=True),
        Judgment("M1-a", "c1", "dee", GraderKind.HUMAN, met=False),
        Judgment("M1-b", "c1", "cy", GraderKind.HUMAN, met=False),
        Judgment("M1-b", "c1", "dee", GraderKind.HUMAN, met=False),
    ]
    stored.import_data(data)
    d = _dashboard(stored)
    assert d.has_section(KEY)
    t = d.tables[KEY]
    assert list(t.columns) == list(VERSION_COLUMNS)
    assert list(zip(t["task_id"], t["criterion_id"], t["version"], t["current"], strict=True)) == [
        ("M1", "c1", 1, False),
        ("M1", "c1", 2, True),
    ]
    # the numbers of agreement_by_version, with the primary judge
    rows = agreement_by_version(
        stored.load_frames(version="all"), load_eras(stored), judge="judge-x", n_boot=0
    )
    for rec, row in zip(t.to_dict("records"), rows, strict=True):
        assert rec["n_units_paired"] == row.n_units_paired
        assert rec["percent_agreement"] == pytest.approx(row.statistics["percent_agreement"].value)
        assert rec["judge"] == "judge-x"
    # version 1: ana / ben agree on both; version 2: cy / dee on M1-b only
    assert list(t["percent_agreement"]) == pytest.approx([1.0, 0.5])
    # in the JSON after the other tables, in the report with its heading
    js = d.to_json()
    assert list(js).index(KEY) > list(js).index("disagreements")
    assert [r["version"] for r in js[KEY]] == [1, 2]
    html = render_html(d, image_format="svg", max_rows=10)
    assert TITLE in html and "v2 (current)" in html
    # every other section still uses the current verdicts: the stale ones left out
    assert before.overview["n_units"] == d.overview["n_units"]
    # (criterion health of M1/c1: cy / dee only, 1/2; with ana / ben too it would be 3/4)
    h = d.health
    c1 = h.loc[(h["task_id"] == "M1") & (h["criterion_id"] == "c1")].iloc[0]
    assert c1["human_agreement"] == pytest.approx(0.5)


def test_filters_apply_to_the_version_data(stored: Any) -> None:
    RevisionStore(stored.db).revise_criterion(
        None, "M1", "c1", text="Reworded", reason=None, actor=None
    )
    d = _dashboard(stored, filters=DashboardFilters(models=("alpha",)))
    t = d.tables[KEY]
    assert t.iloc[0]["n_units"] == 1  # M1-a only (model alpha)
    e = _dashboard(stored, filters=DashboardFilters(graders=("ana",)))
    row = e.tables[KEY].iloc[0]  # ana's two verdicts: nobody to agree with
    assert (row["n_ratings"], row["n_units_paired"]) == (2, 0)
    assert d.tables[KEY].iloc[0]["n_ratings"] == 2  # ana and ben on M1-a
