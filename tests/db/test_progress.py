"""``gradercal progress`` on both backends: queue items, offline packets (exported with a
due date, graded, merged back) and tasks, from the CLI (tables, --json, --csv) and the API."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradercal.cli import main
from gradercal.db.assignments import assign
from gradercal.db.grading import GradingStore
from gradercal.db.packets import export_packet, merge_packet, open_packet
from gradercal.db.progress import load_progress
from gradercal.db.repo import Repository
from gradercal.db.session import Database, open_database
from gradercal.formats import read_path
from tests.conftest import DEMO, DatabaseTemplates, fingerprint
from tests.db.test_packets import grade_everything

GRADERS = ("q-ana", "q-ben")


def _build(url: str) -> None:
    db = open_database(url)
    try:
        Repository(db).import_data(read_path(DEMO))
        assign(db, list(GRADERS), 2, calibration_fraction=0.0, seed="progress")
    finally:
        db.dispose()


@pytest.fixture
def team(db_url: str, db_templates: DatabaseTemplates) -> Iterator[tuple[str, Database]]:
    url = db_templates.fill(db_url, "progress team", _build)
    db = open_database(url)
    try:
        yield url, db
    finally:
        db.dispose()


def test_progress_follows_packets_out_and_back(team: tuple[str, Database], tmp_path: Path) -> None:
    url, db = team
    past = datetime.now(UTC) - timedelta(days=1)
    ana = export_packet(db, "q-ana", tmp_path / "ana.gcpkg", due_at=past)
    runner = CliRunner()
    res = runner.invoke(
        main,
        [
            "packet",
            "export",
            "--db",
            url,
            "-g",
            "q-ben",
            "-o",
            str(tmp_path / "ben.gcpkg"),
            "--due",
            "+5",
        ],
    )
    assert res.exit_code == 0, res.output
    before = load_progress(db)
    status = {p.grader: p for p in before.packets}
    assert status["q-ana"].status == "overdue" and status["q-ana"].open_items == 30
    assert status["q-ben"].status == "out" and status["q-ben"].merges == 0
    assert status["q-ben"].due_at is not None
    assert status["q-ben"].due_at - datetime.now(UTC) > timedelta(days=4, hours=23)

    # ana grades 5 responses offline (with recorded time), the coordinator merges
    session = open_packet(tmp_path / "ana.gcpkg", workdir=tmp_path / "work")
    try:
        store = GradingStore(session.db)
        first = store.queue(session.grader, session.benchmark)[:5]
        for item in first:
            store.add_time(item.assignment_id, 90.0)
        grade_everything(session, limit=5)
        session.save()
    finally:
        session.close()
    merge_packet(db, ana.path)
    merge_packet(db, ana.path)  # the same copy again: no new merge
    after = load_progress(db)
    (row,) = [g for g in after.graders if g.grader == "q-ana"]
    assert (row.assigned, row.submitted, row.pending) == (30, 5, 25)
    assert row.active_s == pytest.approx(5 * 90)
    assert row.per_hour == pytest.approx(3600 / 90)
    assert row.active_left_s == pytest.approx(25 * 90)
    assert row.forecast is not None and row.forecast > datetime.now(UTC)
    packet = next(p for p in after.packets if p.grader == "q-ana")
    assert (packet.status, packet.open_items, packet.merges) == ("overdue", 25, 1)
    assert packet.last_merged_at is not None
    graded = {t.task: t for t in after.tasks}
    assert sum(t.done for t in graded.values()) == 5
    assert all(t.assigned == 6 for t in graded.values())  # 3 responses × 2 graders

    # the CLI: tables, JSON (the same figures) and CSV files
    res = runner.invoke(main, ["progress", "--db", url, "--tasks"])
    assert res.exit_code == 0, res.output
    assert "q-ana" in res.output and "overdue" in res.output and "5 / 30" in res.output
    assert "T01" in res.output
    res = runner.invoke(main, ["progress", "--db", url, "--json", "--csv", str(tmp_path / "csv")])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    ana_json = next(g for g in data["graders"] if g["grader"] == "q-ana")
    assert ana_json["submitted"] == 5 and ana_json["per_hour"] == pytest.approx(40.0)
    assert data["total"]["assigned"] == 60
    assert {p["status"] for p in data["packets"]} == {"overdue", "out"}
    with open(tmp_path / "csv" / "graders.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["grader"] for r in rows] == ["q-ana", "q-ben", "all graders"]
    assert float(rows[0]["active_s"]) == pytest.approx(450.0)
    with open(tmp_path / "csv" / "tasks.csv", encoding="utf-8") as fh:
        assert len(list(csv.DictReader(fh))) == 10


def test_bad_due_date_is_refused_and_nothing_changes(
    team: tuple[str, Database], tmp_path: Path
) -> None:
    url, _db = team
    before = fingerprint(url)
    res = CliRunner().invoke(
        main,
        [
            "packet",
            "export",
            "--db",
            url,
            "-g",
            "q-ana",
            "-o",
            str(tmp_path / "a.gcpkg"),
            "--due",
            "next week",
        ],
    )
    assert res.exit_code == 2
    assert "--due" in res.output and "YYYY-MM-DD" in res.output
    assert not (tmp_path / "a.gcpkg").exists()
    assert fingerprint(url) == before


def test_progress_on_a_benchmark_without_assignments(tmp_path: Path) -> None:
    url = str(tmp_path / "d.sqlite")
    db = open_database(url)
    try:
        Repository(db).import_data(read_path(DEMO))
    finally:
        db.dispose()
    res = CliRunner().invoke(main, ["progress", "--db", url])
    assert res.exit_code == 0, res.output
    assert "run `gradercal assign` first" in res.output
    assert "10 not assigned" in res.output
