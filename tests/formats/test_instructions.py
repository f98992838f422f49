"""benchmark.json's optional ``instructions``: validated, read, stored on import (both
backends), replaced by a re-import that gives others, written back by ``export benchmark``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradercal.cli import main
from gradercal.db.clarifications import benchmark_instructions
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.errors import ValidationError
from gradercal.formats import read_folder
from tests.support.gui import write_gui_benchmark

TEXT = "Grade against the response text only.\nPartial credit needs a stated reason."


def _with(folder: Path, **fields: object) -> Path:
    path = folder / "benchmark.json"
    meta = json.loads(path.read_text("utf-8"))
    meta.update(fields)
    path.write_text(json.dumps(meta), encoding="utf-8")
    return folder


def test_the_reader_takes_instructions_and_checks_their_type(tmp_path: Path) -> None:
    folder = _with(write_gui_benchmark(tmp_path / "b"), instructions=f"  {TEXT}  ")
    assert read_folder(folder).benchmark.instructions == TEXT
    assert read_folder(_with(folder, instructions="   ")).benchmark.instructions is None
    del_meta = json.loads((folder / "benchmark.json").read_text("utf-8"))
    del del_meta["instructions"]
    (folder / "benchmark.json").write_text(json.dumps(del_meta))
    assert read_folder(folder).benchmark.instructions is None
    with pytest.raises(ValidationError, match="instructions"):
        read_folder(_with(folder, instructions=["not", "a", "string"]))


def test_stored_on_import_replaced_on_reimport_and_exported(db_url: str, tmp_path: Path) -> None:
    folder = _with(write_gui_benchmark(tmp_path / "b"), instructions=TEXT)
    db = open_database(db_url, create=True)
    try:
        repo = Repository(db)
        report = repo.import_data(read_folder(folder))
        bench = repo.benchmark("gui-bench")
        assert bench.instructions == TEXT
        assert benchmark_instructions(db, bench.id) == TEXT
        assert report.instructions_changed is False  # a new benchmark: nothing replaced
        # the same file again changes nothing
        again = repo.import_data(read_folder(folder))
        assert again.instructions_changed is False and not again.changed
        # other instructions replace them; a file without any leaves them
        report = repo.import_data(read_folder(_with(folder, instructions="Be strict.")))
        assert report.instructions_changed is True and report.changed
        assert benchmark_instructions(db, bench.id) == "Be strict."
        meta = json.loads((folder / "benchmark.json").read_text("utf-8"))
        del meta["instructions"]
        (folder / "benchmark.json").write_text(json.dumps(meta))
        assert repo.import_data(read_folder(folder)).instructions_changed is False
        assert benchmark_instructions(db, bench.id) == "Be strict."
    finally:
        db.dispose()
    out = tmp_path / "exported"
    res = CliRunner().invoke(main, ["export", "benchmark", "--db", db_url, "-o", str(out)])
    assert res.exit_code == 0, res.output
    exported = json.loads((out / "benchmark.json").read_text("utf-8"))
    assert exported["instructions"] == "Be strict."
    assert read_folder(out).benchmark.instructions == "Be strict."


def test_an_offline_packet_carries_the_instructions(db_url: str, tmp_path: Path) -> None:
    from gradercal.db.grading import GradingStore
    from gradercal.db.packets import export_packet, open_packet

    folder = _with(write_gui_benchmark(tmp_path / "b"), instructions=TEXT)
    db = open_database(db_url, create=True)
    try:
        Repository(db).import_data(read_folder(folder))
        store = GradingStore(db)
        store.create_grader("ana")
        store.ensure_queue("ana", "gui-bench")
        export_packet(db, "ana", tmp_path / "ana.gcpkg")
    finally:
        db.dispose()
    with open_packet(tmp_path / "ana.gcpkg", workdir=tmp_path / "work") as session:
        offline = GradingStore(session.db)
        item = offline.queue("ana", "gui-bench")[0]
        shown = offline.guidelines("gui-bench", item.task_id, "c1")
        assert shown.instructions == TEXT and shown.answers == ()
