"""gradercal.dashboard.tables: the table sections, declared once, reach the JSON, the report
and (tests/ui) the window; the task review section equals the survey engine and a worked
example, follows the filters, and says so when there is nothing to show."""

from __future__ import annotations

import html as html_lib
import json
import math

import numpy as np
import pandas as pd
import pytest

from gradercal.analysis.surveys import REVIEW_DIMENSIONS, survey_summary
from gradercal.dashboard import Dashboard, DashboardFilters, compute_dashboard
from gradercal.dashboard.report import REPORT_SECTIONS, render_html
from gradercal.dashboard.tables import (
    REVIEW_COLUMNS,
    TABLE_SECTIONS,
    computed_sections,
    fmt_ci,
    section,
)
from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from tests.conftest import DEMO

N_BOOT = 80
SEED = 11
KEYS = [d.key for d in REVIEW_DIMENSIONS]


@pytest.fixture(scope="module")
def demo() -> Frames:
    return frames_from_data(read_path(DEMO))


@pytest.fixture(scope="module")
def reviews(demo: Frames) -> pd.DataFrame:
    """Three reviewers answering the survey on every demo task (two statements each),
    plus a fourth reviewer on a few tasks; answers drawn once from a fixed seed."""
    rng = np.random.default_rng(5)
    rows = []
    tasks = demo.tasks["task_id"].tolist()
    for reviewer in ("expert-ana", "expert-ben", "expert-caro"):
        for t in tasks:
            for dim in KEYS[:2]:
                rows.append((t, reviewer, dim, int(rng.integers(2, 6))))
    for t in tasks[:3]:
        rows.append((t, "expert-dov", KEYS[3], 5))
    return pd.DataFrame(rows, columns=["task_id", "reviewer", "dimension", "answer"])


@pytest.fixture(scope="module")
def dash(demo: Frames, reviews: pd.DataFrame) -> Dashboard:
    return compute_dashboard(demo, n_boot=N_BOOT, seed=SEED, reviews=reviews)


def test_every_section_reaches_the_json_and_the_report_in_its_order(dash: Dashboard) -> None:
    keys = [s.key for s in TABLE_SECTIONS if not s.optional]
    out = dash.to_json()
    listed = list(out)
    # In the JSON: each section under its key, in registry order, after the fixed fields.
    at = [listed.index(k) for k in keys]
    assert at == sorted(at) and listed[at[0] - 1] == "alt_test"
    assert listed[at[-1] + 1] == "calibration"
    # In the report: one section per entry, same order, between the alt-test and the notes.
    ids = [sid for sid, _ in REPORT_SECTIONS]
    assert ids[ids.index("alt-test") + 1 : ids.index("notes")] == [s.key for s in TABLE_SECTIONS]
    # Every computed section is stored, but an optional one with nothing to show (no
    # criterion revised: no criterion versions) is absent from the tables and the JSON.
    absent = {s.key for s in TABLE_SECTIONS if s.optional and not dash.has_section(s.key)}
    assert "criterion_versions" in absent
    assert set(dash.tables) == {s.key for s in computed_sections()} - absent
    assert not absent & set(out)
    for s in TABLE_SECTIONS:
        assert section(s.key) is s
        assert isinstance(dash.table(s.key), pd.DataFrame)
    with pytest.raises(KeyError):
        dash.table("no such section")
    json.dumps(out, allow_nan=False)  # strict JSON


def test_task_reviews_equal_the_survey_engine(dash: Dashboard, reviews: pd.DataFrame) -> None:
    t = dash.tables["task_reviews"]
    assert list(t.columns) == list(REVIEW_COLUMNS)
    # The survey's statements first (all of them, answered or not), in their order.
    assert t["dimension"].tolist() == KEYS
    assert t["statement"].tolist() == [d.statement for d in REVIEW_DIMENSIONS]
    ref = {
        d["dimension"]: d
        for d in survey_summary(reviews, KEYS, n_boot=N_BOOT, seed=SEED)["dimensions"]
    }
    for row in t.to_dict("records"):
        r = ref[row["dimension"]]
        assert row["n_answers"] == r["n_answers"] and row["n_tasks"] == r["n_tasks"]
        for fig in ("mean", "share_strongly_agree", "share_agree_or_strongly_agree"):
            value = r[fig]["value"]
            if value is None:
                assert math.isnan(row[fig])
                continue
            assert row[fig] == pytest.approx(value, abs=1e-12)
            lo, hi = r[fig]["ci"] or (math.nan, math.nan)
            assert row[f"{fig}_low"] == pytest.approx(lo, nan_ok=True)
            assert row[f"{fig}_high"] == pytest.approx(hi, nan_ok=True)
    # Unanswered statement: null figures and the reason.
    unanswered = t.loc[t["dimension"] == KEYS[2]].iloc[0]
    assert unanswered["n_answers"] == 0 and math.isnan(unanswered["mean"])
    assert "no answers" in unanswered["note"]
    # Independent arithmetic on the answers themselves.
    first = reviews.loc[reviews["dimension"] == KEYS[0], "answer"].to_numpy()
    row0 = t.iloc[0]
    assert row0["mean"] == pytest.approx(first.mean())
    assert row0["share_strongly_agree"] == pytest.approx((first == 5).mean())
    assert row0["share_agree_or_strongly_agree"] == pytest.approx((first >= 4).mean())
    assert row0["share_strongly_agree_low"] <= row0["share_strongly_agree"]
    assert row0["share_strongly_agree"] <= row0["share_strongly_agree_high"]
    # One reviewer on three tasks: alpha is undefined, and the row says why.
    lone = t.loc[t["dimension"] == KEYS[3]].iloc[0]
    assert lone["n_reviewers"] == 1 and math.isnan(lone["krippendorff_alpha"])
    assert "krippendorff alpha" in lone["note"]
    # The JSON carries the same numbers (NaN → null).
    records = dash.to_json()["task_reviews"]
    assert records[0]["mean"] == pytest.approx(row0["mean"])
    assert records[2]["mean"] is None


def test_task_reviews_follow_the_filters(demo: Frames, reviews: pd.DataFrame) -> None:
    domain = str(demo.tasks["domain"].iloc[0])
    kept = set(demo.tasks.loc[demo.tasks["domain"] == domain, "task_id"])
    d = compute_dashboard(
        demo, n_boot=0, reviews=reviews, filters=DashboardFilters(domains=(domain,))
    )
    t = d.tables["task_reviews"]
    sub = reviews.loc[reviews["task_id"].isin(kept) & (reviews["dimension"] == KEYS[0])]
    assert t.iloc[0]["n_tasks"] == len(kept) and t.iloc[0]["n_answers"] == len(sub)
    assert t.iloc[0]["mean"] == pytest.approx(sub["answer"].mean())
    experts = DashboardFilters(graders=("expert-ana", "expert-ben"))
    d = compute_dashboard(demo, n_boot=0, reviews=reviews, filters=experts)
    assert d.tables["task_reviews"].iloc[0]["n_reviewers"] == 2


def test_the_report_renders_sections_from_the_registry(
    dash: Dashboard, demo: Frames, reviews: pd.DataFrame
) -> None:
    page = render_html(dash)
    for s in TABLE_SECTIONS:
        heading = f'<h2 id="{s.key}">{html_lib.escape(s.title)}</h2>'
        assert (heading in page) == dash.has_section(s.key)
        assert dash.has_section(s.key) == (not s.optional)  # nothing revised in the demo
    body = page.split('<h2 id="task_reviews">', 1)[1].split("<h2", 1)[0]
    for d in REVIEW_DIMENSIONS:
        assert html_lib.escape(d.statement) in body
    row0 = dash.tables["task_reviews"].iloc[0]
    cell = fmt_ci(
        row0["share_agree_or_strongly_agree"],
        row0["share_agree_or_strongly_agree_low"],
        row0["share_agree_or_strongly_agree_high"],
    )
    assert f'<td class="num">{cell}</td>' in body and "[" in cell
    # Without answers the section says so instead of an empty table.
    bare = render_html(compute_dashboard(demo, n_boot=0))
    body = bare.split('<h2 id="task_reviews">', 1)[1].split("<h2", 1)[0]
    assert "No task review answers." in body and "<table>" not in body
    # A long table is cut at max_rows with the count of the rest.
    cut = render_html(dash, max_rows=2)
    body = cut.split('<h2 id="task_reviews">', 1)[1].split("<h2", 1)[0]
    assert body.count("<tr>") == 3 and "First 2 of 4 rows" in body
