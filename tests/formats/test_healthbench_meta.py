"""HealthBench meta-evaluation files: physicians' labels become human judgments.

The fixture ``tests/data/healthbench_meta/meta_eval_sample.jsonl`` is written in the
meta-evaluation's shape (one line per completion × rubric criterion), its second line
with the stringified Python literals some distributed copies carry.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradercal.cli import main
from gradercal.errors import ValidationError
from gradercal.formats import FORMATS, read_path, recognise
from gradercal.formats.healthbench_meta import FORMAT_NAME, read_healthbench_meta
from tests.conftest import DATA

SAMPLE = DATA / "healthbench_meta" / "meta_eval_sample.jsonl"


def test_recognised_as_meta_evaluation_not_as_tasks() -> None:
    found = recognise(SAMPLE)
    assert found.format == FORMAT_NAME and found.benchmark == "meta_eval_sample"


def test_labels_become_one_judgment_per_physician() -> None:
    data = read_path(SAMPLE)
    (task,) = data.tasks
    assert task.id == "q1" and task.prompt.startswith("My child has a fever")
    assert [(c.id, c.text, c.tags) for c in task.criteria] == [
        ("c1", "Advises weight-based dosing of an antipyretic", ("category:cluster:dosing",)),
        ("c2", "Lists red flags that need urgent care", ("category:cluster:safety",)),
    ]
    assert {r.id for r in data.responses} == {"q1-a", "q1-b"}
    got = {(j.response_id, j.criterion_id, j.grader): j.met for j in data.judgments}
    assert got == {
        ("q1-a", "c1", "physician:p1"): True,
        ("q1-a", "c1", "physician:p2"): True,
        ("q1-a", "c1", "physician:p3"): False,
        ("q1-a", "c2", "physician:p1"): False,  # from "[False, True]" with "['p1', 'p3']"
        ("q1-a", "c2", "physician:p3"): True,
        ("q1-b", "c1", "physician:p2"): False,
        ("q1-b", "c1", "physician:p3"): False,
    }
    assert all(j.grader_kind == "human" for j in data.judgments)


def test_bad_lines_are_named_and_nothing_is_imported(tmp_path: Path) -> None:
    lines = [json.loads(x) for x in SAMPLE.read_text("utf-8").splitlines()]
    lines[0]["binary_labels"] = ["yes", True, False]
    lines[2]["anonymized_physician_ids"] = ["p2"]
    bad = tmp_path / "meta_bad.jsonl"
    bad.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    with pytest.raises(ValidationError) as err:
        read_healthbench_meta(bad)
    text = str(err.value)
    assert "meta_bad.jsonl:1: binary_labels: must be a list of booleans" in text
    assert "meta_bad.jsonl:3: anonymized_physician_ids: has 1 ids for 2 binary_labels" in text
    db = tmp_path / "db.sqlite"
    res = CliRunner().invoke(main, ["import", str(bad), "--db", str(db)])
    assert res.exit_code == 1 and "binary_labels" in res.output
    res = CliRunner().invoke(main, ["import", str(SAMPLE), "--db", str(db), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert (report["tasks_added"], report["responses_added"], report["judgments_added"]) == (
        1,
        2,
        7,
    )
    out = CliRunner().invoke(main, ["agreement", "--db", str(db), "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["humans"] == ["physician:p1", "physician:p2", "physician:p3"]


def test_an_unrecognised_file_names_the_formats_tried(tmp_path: Path) -> None:
    junk = tmp_path / "notes.jsonl"
    junk.write_text('{"foo": 1}\n', "utf-8")
    db = tmp_path / "db.sqlite"
    res = CliRunner().invoke(main, ["import", str(junk), "--db", str(db)])
    assert res.exit_code == 1
    for fmt in FORMATS:
        assert f"{fmt.name} needs" in res.output, fmt.name
    assert not db.exists()
