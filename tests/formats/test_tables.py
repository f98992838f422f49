"""Judgments and adjudications from plain tables (CSV, TSV, Excel, Parquet) and JSONL:
column maps, gradercal's own exports read back, and problems named by file, row and field
with the database unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner, Result

from gradercal.cli import main
from gradercal.errors import ValidationError
from gradercal.formats import read_path
from gradercal.formats.tables import parse_column_map
from tests.conftest import DEMO, fingerprint


def gc(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], input=stdin)


def ok(*args: str, stdin: str | None = None) -> str:
    res = gc(*args, stdin=stdin)
    assert res.exit_code == 0, res.output
    return res.stdout


def demo_without_verdicts(db: str) -> None:
    """The demo's tasks and responses only: verdicts come from the tables under test."""
    ok("import", str(DEMO / "tasks.jsonl"), "--db", db)
    ok("import", str(DEMO / "responses.jsonl"), "--db", db)


def export_jsonl(db: str, what: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in ok("export", what, "--db", db, "-o", "-").splitlines()]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    db = str(tmp_path_factory.mktemp("tables") / "demo.sqlite")
    ok("import", str(DEMO), "--db", db)
    return db


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_own_judgment_exports_import_back_unchanged(
    demo_db: str, tmp_path: Path, suffix: str
) -> None:
    """`export judgments` as CSV, Parquet or JSONL imports into a database holding only
    the tasks and responses and exports again identically: verdicts, levels,
    confidences, rationales, flags and both timestamps."""
    out = tmp_path / f"judgments{suffix}"
    ok("export", "judgments", "--db", demo_db, "-o", str(out))
    fresh = str(tmp_path / "fresh.sqlite")
    demo_without_verdicts(fresh)
    said = ok("import", str(out), "--db", fresh)
    assert "1536 judgments" in said
    assert export_jsonl(fresh, "judgments") == export_jsonl(demo_db, "judgments")
    assert "nothing new" in ok("import", str(out), "--db", fresh)


def test_a_judges_model_and_times_survive_export_and_import(tmp_path: Path) -> None:
    """A judge's model (stored on its grader) and each verdict's created/updated times,
    whatever offset the file gives them, come back from an export."""
    db = str(tmp_path / "a.sqlite")
    demo_without_verdicts(db)
    rows = [
        json.loads(x)
        for x in (DEMO / "judgments.jsonl").read_text("utf-8").splitlines()
        if '"judge-gpt"' in x
    ][:40]
    for i, r in enumerate(rows):
        r["model"] = "gpt-4.1-mini-2025-04-14"
        r["created_at"] = f"2025-03-0{1 + i % 9}T10:00:00+02:00"
        r["updated_at"] = f"2025-03-0{1 + i % 9}T11:30:00+02:00"
    src = tmp_path / "judge.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    ok("import", str(src), "--db", db)
    first = export_jsonl(db, "judgments")
    assert {r["model"] for r in first} == {"gpt-4.1-mini-2025-04-14"}
    assert first[0]["created_at"] == "2025-03-01T08:00:00+00:00"  # kept, in UTC
    assert first[0]["updated_at"] == "2025-03-01T09:30:00+00:00"
    for suffix in (".csv", ".parquet", ".jsonl"):
        out = tmp_path / f"j{suffix}"
        ok("export", "judgments", "--db", db, "-o", str(out))
        other = str(tmp_path / f"b{suffix}.sqlite")
        demo_without_verdicts(other)
        assert "judgments" in ok("import", str(out), "--db", other)
        assert export_jsonl(other, "judgments") == first, suffix


def test_a_table_with_its_own_column_names_imports_with_a_map(tmp_path: Path) -> None:
    """A rater spreadsheet (item, criterion, rater, verdict as yes/no) imports with
    --map; the verdicts equal the same judgments given as JSONL."""
    db = str(tmp_path / "m.sqlite")
    demo_without_verdicts(db)
    lines = (DEMO / "judgments.jsonl").read_text("utf-8").splitlines()
    human = [json.loads(x) for x in lines if '"human"' in x][:60]
    sheet = pd.DataFrame(
        {
            "item": [r["response_id"] for r in human],
            "criterion": [r["criterion_id"] for r in human],
            "rater": [r["grader"] for r in human],
            "verdict": ["yes" if r["met"] else "no" for r in human],
            "comment": [r.get("rationale", "") for r in human],
        }
    )
    for suffix, write in (
        (".xlsx", lambda p: sheet.to_excel(p, index=False)),
        (".tsv", lambda p: sheet.to_csv(p, index=False, sep="\t")),
    ):
        path = tmp_path / f"raters{suffix}"
        write(path)
        target = str(tmp_path / f"m{suffix}.sqlite")
        demo_without_verdicts(target)
        ok(
            "import", str(path), "--db", target,
            "--map", "response_id=item,criterion_id=criterion",
            "--map", "grader=rater", "--map", "met=verdict", "--map", "rationale=comment",
        )  # fmt: skip
        got = {
            (r["response_id"], r["criterion_id"], r["grader"]): (r["met"], r.get("rationale"))
            for r in export_jsonl(target, "judgments")
        }
        want = {
            (r["response_id"], r["criterion_id"], r["grader"]): (r["met"], r.get("rationale"))
            for r in human
        }
        assert got == want, suffix


def test_table_problems_name_file_row_and_field_and_change_nothing(tmp_path: Path) -> None:
    db = str(tmp_path / "p.sqlite")
    demo_without_verdicts(db)
    before = fingerprint(db)
    path = tmp_path / "bad.csv"
    path.write_text(
        "item,criterion,rater,verdict\n"
        "T01-atlas,c1,ann,yes\n"
        "T01-atlas,c1,bob,maybe\n"  # row 3: not a verdict
        "T01-atlas,c99,ann,no\n"  # row 4: no such criterion
        "T02-atlas,c1,ann,no\n",  # row 5: c1 of T02 is an auto criterion
        "utf-8",
    )
    mapped = ["--map", "response_id=item,criterion_id=criterion,grader=rater,met=verdict"]
    res = gc("import", str(path), "--db", db, *mapped)
    assert res.exit_code != 0
    assert "bad.csv:3: met: must be a boolean or null" in res.output, res.output
    assert "bad.csv:4: criterion_id: unknown criterion_id 'c99'" in res.output
    assert "bad.csv:5: criterion_id: 'c1' is an auto criterion" in res.output
    assert "(read as table: judgments or adjudications as a CSV" in res.output
    assert fingerprint(db) == before
    # a mapped column that is not there, and a table that is neither kind
    res = gc("import", str(path), "--db", db, "--map", "grader=reviewer")
    assert "bad.csv:1: grader: --map grader=reviewer: no column 'reviewer'" in res.output
    res = gc("import", str(path), "--db", db)
    assert "neither judgments" in res.output and "columns: item, criterion" in res.output
    assert fingerprint(db) == before


def test_a_column_map_is_checked_and_only_tables_take_one(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="'grader' is not FIELD=COLUMN"):
        parse_column_map(("grader",))
    with pytest.raises(ValidationError, match="rater: unknown field"):
        parse_column_map(("rater=grader",))
    with pytest.raises(ValidationError, match="met: mapped twice"):
        parse_column_map(("met=a", "met=b"))
    assert parse_column_map(("response_id=item, grader=rater", "met=v")) == {
        "response_id": "item",
        "grader": "rater",
        "met": "v",
    }
    with pytest.raises(ValidationError, match="--map applies to tables"):
        read_path(DEMO / "judgments.jsonl", None, {"grader": "rater"})


def test_adjudications_import_from_jsonl_and_tables_with_history(tmp_path: Path) -> None:
    """The demo's adjudications.jsonl is imported with the folder; exported as CSV and
    changed, it revises the final verdicts and keeps the old ones as revisions."""
    db = str(tmp_path / "a.sqlite")
    assert "27 adjudications" in ok("import", str(DEMO), "--db", db)
    exported = export_jsonl(db, "adjudications")
    source = [json.loads(x) for x in (DEMO / "adjudications.jsonl").read_text().splitlines()]
    strip = ("task_id", "revision")
    assert [{k: v for k, v in r.items() if k not in strip} for r in exported] == source
    table = tmp_path / "final.csv"
    ok("export", "adjudications", "--db", db, "-o", str(table))
    frame = pd.read_csv(table)
    frame.loc[0, "met"] = not bool(frame.loc[0, "met"])
    frame.loc[0, "note"] = "Re-read after the clarification: reversed."
    frame.loc[0, "updated_at"] = "2024-07-01T09:00:00+00:00"
    frame.to_csv(table, index=False)
    said = ok("import", str(table), "--db", db)
    assert "updated 1 adjudications" in said
    after = export_jsonl(db, "adjudications")
    assert after[0]["met"] is not exported[0]["met"] and after[0]["revision"] == 2
    assert after[0]["updated_at"] == "2024-07-01T09:00:00+00:00"
    assert after[1:] == exported[1:]
    from gradercal.db import models as m
    from gradercal.db.session import open_database

    with open_database(db).read() as s:
        old = s.query(m.Revision).filter_by(entity="adjudication").one()
        assert old.data["met"] is exported[0]["met"] and old.source == "import"


def test_bad_adjudications_are_refused_by_line(tmp_path: Path) -> None:
    db = str(tmp_path / "b.sqlite")
    demo_without_verdicts(db)
    before = fingerprint(db)
    rows = [
        {"response_id": "T01-atlas", "criterion_id": "c1", "met": True, "adjudicator": "x"},
        {"response_id": "T01-atlas", "criterion_id": "c1", "met": False, "adjudicator": "x"},
        {"response_id": "T01-atlas", "criterion_id": "c12", "met": True, "level": 0,
         "adjudicator": "x"},
        {"response_id": "nope", "criterion_id": "c1", "met": True, "adjudicator": "x"},
        {"response_id": "T01-atlas", "criterion_id": "c2", "met": True, "adjudicator": "x",
         "updated_at": "yesterday"},
    ]  # fmt: skip
    path = tmp_path / "adjudications.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    res = gc("import", str(path), "--db", db)
    assert res.exit_code != 0
    out = res.output
    assert "adjudications.jsonl:2: criterion_id: duplicate adjudication" in out, out
    assert "adjudications.jsonl:3: met: disagrees with level 0" in out
    assert "adjudications.jsonl:4: response_id: unknown response_id 'nope'" in out
    assert "adjudications.jsonl:5: updated_at: not an ISO 8601 date and time" in out
    assert fingerprint(db) == before


def test_the_demo_package_has_its_few_shot_examples(tmp_path: Path) -> None:
    """With the demo's adjudications, the exported judge carries the 6 examples it asks
    for, each from an adjudicated disagreement."""
    db = str(tmp_path / "d.sqlite")
    ok("import", str(DEMO), "--db", db)
    out = tmp_path / "judge.json"
    ok("export-prompt", "--db", db, "--judge", "judge-gpt", "-o", str(out))
    package = json.loads(out.read_text("utf-8"))
    assert len(package["prompt"]["few_shot"]) == 6
    final = {
        (a["response_id"], a["criterion_id"])
        for a in map(json.loads, (DEMO / "adjudications.jsonl").read_text().splitlines())
    }
    assert {(e["response_id"], e["criterion_id"]) for e in package["examples"]} <= final


def test_parquet_without_pyarrow_says_which_extra_to_install(
    demo_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pyarrow is the `parquet` extra: without it, a Parquet export or import fails in one
    line that says what to install, and writes nothing."""
    good = tmp_path / "j.parquet"
    ok("export", "judgments", "--db", demo_db, "-o", str(good))

    def missing(*_a: object, **_k: object) -> None:
        raise ImportError("Unable to find a usable engine; tried using: 'pyarrow'")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", missing)
    monkeypatch.setattr(pd, "read_parquet", missing)
    out = tmp_path / "new.parquet"
    res = gc("export", "judgments", "--db", demo_db, "-o", str(out))
    assert res.exit_code == 1 and not out.exists()
    assert res.output.strip().endswith("pip install 'gradercal[parquet]'"), res.output
    db = str(tmp_path / "p.sqlite")
    demo_without_verdicts(db)
    before = fingerprint(db)
    res = gc("import", str(good), "--db", db)
    assert res.exit_code == 1 and "pip install 'gradercal[parquet]'" in res.output
    assert fingerprint(db) == before


def test_csv_exports_never_carry_live_formulas_and_read_back_exactly(tmp_path: Path) -> None:
    """Text a spreadsheet would run (= + - @ tab CR at the start) is written behind a
    quote (OWASP's advice against CSV injection); importing the CSV gives every text
    back exactly, already-quoted ones included."""
    texts = [
        '=HYPERLINK("http://example.invalid","x")',
        "+1 for the control",
        "-0.5 log fold",
        "@reviewer see figure 2",
        "\tindented",
        "'=already quoted",
        "''+twice",
        "it's fine",
        "'plain quote",
    ]
    db = str(tmp_path / "f.sqlite")
    demo_without_verdicts(db)
    rows = [
        {"response_id": "T01-atlas", "criterion_id": f"c{i + 1}", "grader": "zed",
         "met": False, "rationale": t}
        for i, t in enumerate(texts)
    ]  # fmt: skip
    src = tmp_path / "judgments.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    ok("import", str(src), "--db", db)
    out = tmp_path / "j.csv"
    ok("export", "judgments", "--db", db, "-o", str(out))
    cells = pd.read_csv(out, dtype=str, keep_default_na=False)["rationale"].tolist()
    assert not [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))]
    assert cells[0] == "'" + texts[0] and cells[7] == "it's fine" and cells[8] == "'plain quote"
    other = str(tmp_path / "g.sqlite")
    demo_without_verdicts(other)
    ok("import", str(out), "--db", other)
    assert [r["rationale"] for r in export_jsonl(other, "judgments")] == texts
