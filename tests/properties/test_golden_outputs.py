"""Every analysis command's ``--json`` on the demo, as recorded.

The files in tests/data/golden/ were written by the commands themselves (before the
restructure of issue #13, by the code of commit 44e8ab0) on ``samples/demo``; a refactoring
must leave every one of them unchanged — the keys, their order, the text of every note, every
integer exactly and every float within a relative 1e-9 (``tests/support/golden.py``: the last
digit of a sum moves with numpy's and pandas' summation order from one release to the next,
which turned this test red on an untouched checkout). Only the calibration's ``fitted_at`` time
is masked. A change that is meant to
alter an output regenerates the files with ``GRADERCAL_UPDATE_GOLDEN=1`` and says why in its
commit.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradercal.cli import main
from tests.conftest import DATA, DEMO
from tests.support.golden import assert_json_matches, json_differences

GOLDEN = DATA / "golden"
JUDGE = "judge-gpt"
COMMANDS: dict[str, list[str]] = {
    "scores": ["scores"],
    "scores-all": ["scores", "--grader", "all"],
    "agreement": ["agreement"],
    "agreement-tag": ["agreement", "--by", "tag"],
    "alttest": ["alttest", "--judge", JUDGE],
    "alttest-none": ["alttest", "--judge", JUDGE, "--cluster", "none"],
    "impact": ["impact", "--judge", JUDGE],
    "estimate": ["estimate", "--judge", JUDGE],
    "health": ["health"],
    "surveys": ["surveys"],
    "calibrate": ["calibrate", "--judge", JUDGE, "--no-save"],
    "report": ["report"],
    "stats": [
        "stats",
        str(GOLDEN / "ratings.csv"),
        "--weights",
        "quadratic",
        "--level",
        "interval",
    ],
}


def _masked(text: str) -> str:
    return re.sub(r'"fitted_at": "[^"]*"', '"fitted_at": "<time>"', text)


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("golden") / "demo.sqlite"
    res = CliRunner().invoke(main, ["import", str(DEMO), "--db", str(path), "--json"])
    assert res.exit_code == 0, res.output
    _check("import", res.stdout)
    return path


def _check(name: str, out: str) -> None:
    path = GOLDEN / f"{name}.json"
    if os.environ.get("GRADERCAL_UPDATE_GOLDEN"):
        path.write_text(_masked(out), "utf-8")
    assert_json_matches(_masked(out), path.read_text("utf-8"), f"{name} --json")


def test_the_comparison_fails_on_any_visible_change() -> None:
    """The tolerance forgives the last digits of a float and nothing else."""
    assert json_differences({"a": [0.4534412955465586, 1]}, {"a": [0.4534412955465585, 1]}) == []
    changed = [
        ({"a": 0.4535}, {"a": 0.4534}),  # a figure a user sees
        ({"a": 1}, {"a": 1.0}),  # an integer became a float
        ({"b": 1, "a": 2}, {"a": 2, "b": 1}),  # key order
        ({"a": [1, 2]}, {"a": [1]}),  # a list's length
        ({"a": "0.45"}, {"a": "0.46"}),  # a note's text
        ({"a": None}, {"a": 0.0}),
        ({"a": 1e-11}, {"a": 0.0}),  # near zero, beyond the absolute tolerance
    ]
    for actual, expected in changed:
        assert json_differences(actual, expected), (actual, expected)


def test_a_figure_added_to_the_catalogue_needs_no_new_golden(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Keys and rows of a figure the golden file never mentions are left out; nothing else."""
    from tests.support import golden

    monkeypatch.setattr(golden, "FIGURES", {**golden.FIGURES, "added_b": None})
    expected = {
        "n": 3,
        "percent_agreement": {"value": 0.5},
        "rows": [{"statistic": "percent_agreement", "value": 0.5}],
        "order": ["percent_agreement"],
    }
    row = {"statistic": "percent_agreement", "value": 0.5}
    forgiven = {
        "n": 3,
        "percent_agreement": {"value": 0.5},
        "added_b": {"value": 0.1},
        "rows": [row, {"statistic": "added_b", "value": 0.1}],
        "order": ["percent_agreement", "added_b"],
    }
    assert json_differences(forgiven, expected) == []
    still_caught = [
        {**expected, "other": 1},  # a key that is no figure
        {**expected, "rows": [row, {"statistic": "other", "value": 0.1}]},
        {**expected, "rows": [row, row]},  # a figure the golden records, twice
        {**expected, "order": ["percent_agreement", "other"]},
        {k: v for k, v in expected.items() if k != "percent_agreement"},  # a recorded figure gone
        {**expected, "percent_agreement": {"value": 0.6}},
        {"percent_agreement": {"value": 0.5}, **expected},  # key order
    ]
    for actual in still_caught:
        assert json_differences(actual, expected), actual
    # once the golden file mentions it, the added figure is pinned like any other
    recorded = {**expected, "added_b": {"value": 0.1}}
    assert json_differences({**expected, "added_b": {"value": 0.2}}, recorded)


def test_a_table_section_added_to_the_dashboard_needs_no_new_golden(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A table section's key the golden file never mentions is a new section (left out);
    a key that is no section, or a recorded section changed, is still caught."""
    from gradercal.dashboard.tables import TableSection
    from tests.support import golden

    added = TableSection(
        key="drift_by_week", title="", filter_hint="", empty_text="", report=lambda *a: None
    )
    monkeypatch.setattr(golden, "TABLE_SECTIONS", (*golden.TABLE_SECTIONS, added))
    expected = {"format": "gradercal.dashboard", "flips": [{"response_id": "R1"}]}
    grown = {**expected, "drift_by_week": [{"week": "2026-W01", "kappa": 0.5}]}
    assert json_differences(grown, expected) == []
    assert json_differences({**expected, "other": []}, expected)
    assert json_differences({**grown, "flips": []}, expected)
    # once recorded, the new section is pinned like any other
    assert json_differences({**expected, "drift_by_week": []}, grown)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(COMMANDS))
def test_json_output_is_unchanged(demo_db: Path, name: str) -> None:
    args = COMMANDS[name]
    db = [] if args[0] == "stats" else ["--db", str(demo_db)]
    res = CliRunner().invoke(main, [*args, *db, "--json"])
    assert res.exit_code == 0, res.output
    _check(name, res.stdout)
