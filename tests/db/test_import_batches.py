"""A long import on SQLite commits in batches yet stays all or nothing.

What is checked here, against a real SQLite file: an import that fails part-way leaves the
database exactly as it was; one killed with SIGKILL is reported by ``gradercal check`` and
undone (by ``check --undo-import`` or by the next import); a second import waits its turn;
a grader's save that lands between two batches, on a judgment the import was about to add,
is kept in the history. The timing under a real concurrent import, in another process, is
in ``test_import_concurrency.py``.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from gradercal.cli import main
from gradercal.db import import_journal, write_turns
from gradercal.db import importing as repo_module
from gradercal.db import models as m
from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.repo import Repository, benchmark_of
from gradercal.db.session import open_database
from gradercal.formats import read_path
from gradercal.synth import SynthConfig, generate
from tests.conftest import DEMO, DatabaseTemplates, fingerprint, import_demo

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A benchmark big enough for several batches: 40 tasks × 25 criteria × 3 responses,
    3 experts and the judge (about 12,000 judgments, 3 batches of 5,000), with files."""
    out = tmp_path_factory.mktemp("synth") / "bench"
    generate(out, SynthConfig(tasks=40, seed=11, artifacts_per_task=1.0))
    return out


@pytest.fixture
def sqlite_db(tmp_path: Path, db_templates: DatabaseTemplates) -> str:
    """The demo imported into a SQLite file of this test's own (a copy of one import)."""
    return db_templates.fill(str(tmp_path / "g.sqlite"), "demo imported", import_demo)


def _journal_keys(path: str) -> list[str]:
    db = open_database(path)
    try:
        with db.read() as s:
            return list(
                s.scalars(select(m.DatabaseInfo.key).where(m.DatabaseInfo.key.like("import:%")))
            )
    finally:
        db.dispose()


def test_an_import_that_fails_part_way_leaves_the_database_as_it_was(
    sqlite_db: str, synth: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = fingerprint(sqlite_db)
    demo_judgments = _max_judgment_id(sqlite_db)
    real = repo_module._raw_insert
    calls = {"n": 0}
    committed: list[int] = []

    def failing(*args: object, **kwargs: object) -> None:
        calls["n"] += 1
        if calls["n"] == 3:  # two judgment batches are committed by now
            committed.append(_max_judgment_id(sqlite_db))  # seen from another connection
            raise OSError("disk full (simulated)")
        real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(repo_module, "_raw_insert", failing)
    db = open_database(sqlite_db)
    try:
        with pytest.raises(OSError, match="simulated"):
            Repository(db).import_data(read_path(synth))
    finally:
        db.dispose()
    # the batches really were committed (another connection saw them) …
    assert committed and committed[0] > demo_judgments + 5000
    # … and undone: every row of every table as before, no journal left
    assert fingerprint(sqlite_db) == before
    assert _journal_keys(sqlite_db) == []


def _newest_judgment(conn: sqlite3.Connection) -> int:
    """The largest judgment id committed now (a connection in autocommit mode reads the
    newest commit at every statement)."""
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM judgment").fetchone()[0])


def _max_judgment_id(path: str) -> int:
    db = open_database(path)
    try:
        with db.read() as s:
            return import_journal.max_id(s, m.Judgment)
    finally:
        db.dispose()


def test_a_failure_in_the_last_transaction_is_undone_too(
    sqlite_db: str, synth: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = fingerprint(sqlite_db)

    def boom(*_a: object, **_k: object) -> None:
        raise RuntimeError("adjudications failed")

    monkeypatch.setattr(Repository, "_import_adjudications", boom)
    db = open_database(sqlite_db)
    try:
        with pytest.raises(RuntimeError):
            Repository(db).import_data(read_path(synth))
    finally:
        db.dispose()
    assert fingerprint(sqlite_db) == before


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from gradercal.db import import_journal
    real = import_journal.checkpoint
    seen = {"n": 0}
    def checkpoint(s):
        real(s)
        seen["n"] += 1
        if seen["n"] == int(sys.argv[3]):
            os.kill(os.getpid(), signal.SIGKILL)
    import_journal.checkpoint = checkpoint
    from gradercal.cli import main
    main(["import", sys.argv[2], "--db", sys.argv[1]])
    """
)


def _kill_an_import(db_path: str, folder: Path, after: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", KILLER, db_path, str(folder), str(after)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr


def test_a_killed_import_is_reported_and_check_undo_import_removes_it(
    sqlite_db: str, synth: Path
) -> None:
    before = fingerprint(sqlite_db)
    _kill_an_import(sqlite_db, synth, after=8)
    assert _journal_keys(sqlite_db), "the killed import left its journal"
    assert fingerprint(sqlite_db) != before, "and part of its rows"

    runner = CliRunner()
    found = runner.invoke(main, ["check", "--db", sqlite_db, "--no-blobs", "--json"])
    assert found.exit_code == 1
    problems = json.loads(found.output)["problems"]
    assert [p["check"] for p in problems] == ["import.unfinished"]
    assert "process is gone" in problems[0]["message"]
    assert "--undo-import" in problems[0]["message"]

    undone = runner.invoke(main, ["check", "--db", sqlite_db, "--no-blobs", "--undo-import"])
    assert undone.exit_code == 0, undone.output
    assert "undid an import of 'Synthetic benchmark" in undone.output
    assert fingerprint(sqlite_db) == before
    assert _journal_keys(sqlite_db) == []


def test_the_next_import_undoes_a_killed_one_and_then_imports_it_whole(
    sqlite_db: str, synth: Path, tmp_path: Path
) -> None:
    _kill_an_import(sqlite_db, synth, after=8)
    db = open_database(sqlite_db)
    try:
        report = Repository(db).import_data(read_path(synth))
        assert report.benchmark_created and report.tasks_added == 40
        got = Repository(db).judgment_records(report.benchmark)
    finally:
        db.dispose()
    assert _journal_keys(sqlite_db) == []
    clean_path = str(tmp_path / "clean.sqlite")
    clean = open_database(clean_path)
    try:
        Repository(clean).import_data(read_path(DEMO))
        Repository(clean).import_data(read_path(synth))
        want = Repository(clean).judgment_records(report.benchmark)
    finally:
        clean.dispose()

    def key(rows: list[dict[str, object]]) -> list[tuple[object, ...]]:
        return sorted(
            (r["grader"], r["response_id"], r["criterion_id"], r["met"], r.get("level"))
            for r in rows
        )

    assert len(got) == len(want) > 10_000
    assert key(got) == key(want)
    assert fingerprint(sqlite_db) != ""  # and the database is healthy
    ok = CliRunner().invoke(main, ["check", "--db", sqlite_db, "--no-blobs"])
    assert ok.exit_code == 0, ok.output


def _plant_header(path: str, pid: int, host: str | None = None) -> None:
    import socket

    db = open_database(path)
    try:
        with db.write() as s:
            s.add(
                m.DatabaseInfo(
                    key="import:" + "0" * 32,
                    value=json.dumps(
                        {
                            "pid": pid,
                            "host": host or socket.gethostname(),
                            "started": "2026-12-02T10:00:00+00:00",
                            "benchmark": "other",
                        }
                    ),
                )
            )
    finally:
        db.dispose()


def test_a_second_import_is_refused_while_the_first_runs(sqlite_db: str, synth: Path) -> None:
    _plant_header(sqlite_db, os.getpid())  # a live process: this one
    before = fingerprint(sqlite_db)
    out = CliRunner().invoke(main, ["import", str(synth), "--db", sqlite_db])
    assert out.exit_code != 0
    assert "still running: wait until it finishes" in out.output
    assert fingerprint(sqlite_db) == before


def test_an_import_on_another_host_is_never_undone_behind_its_back(
    sqlite_db: str, synth: Path
) -> None:
    _plant_header(sqlite_db, 1, host="elsewhere.example")
    out = CliRunner().invoke(main, ["import", str(synth), "--db", sqlite_db])
    assert out.exit_code != 0
    assert "on elsewhere.example has not finished" in out.output
    assert "gradercal check --undo-import" in out.output


def test_a_dead_imports_header_with_nothing_written_is_cleared(sqlite_db: str, synth: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    _plant_header(sqlite_db, int(gone.stdout))
    db = open_database(sqlite_db)
    try:
        report = Repository(db).import_data(read_path(synth))
    finally:
        db.dispose()
    assert report.tasks_added == 40
    assert _journal_keys(sqlite_db) == []


def test_a_save_between_two_batches_on_a_judgment_the_import_adds_is_kept_in_history(
    sqlite_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The import reads what is stored, then writes; a grader's save of the same
    (grader, response, criterion) commits in between. The import's batch skips that row
    instead of failing, then supersedes it in its last transaction: the file's value is
    current and the save's value is the revision before it."""
    db = open_database(sqlite_db)
    try:
        repo = Repository(db)
        records = repo.judgment_records()
        bench = repo.benchmark(None).name
        catalog = repo.catalog(bench)
    finally:
        db.dispose()
    graded = {(r["response_id"], r["criterion_id"]) for r in records if r["grader"] == "judge-gpt"}
    target = sorted(graded)[0]
    newcomer = "expert-zed"
    path = tmp_path / "judgments.jsonl"
    path.write_text(
        json.dumps({"response_id": target[0], "criterion_id": target[1], "grader": newcomer,
                    "met": True, "rationale": "from the file"}) + "\n",
        "utf-8",
    )  # fmt: skip
    # the grader row exists already (as a grader who has started in the app)
    db = open_database(sqlite_db)
    try:
        with db.write() as s:
            s.add(m.Grader(name=newcomer, kind="human"))
    finally:
        db.dispose()

    real = import_journal.reading

    @contextmanager
    def reading_then_a_save(s):  # type: ignore[no-untyped-def]
        with real(s) as inner:
            yield inner
        other = open_database(sqlite_db)
        try:
            with other.write() as t:
                gid = t.scalar(select(m.Grader.id).where(m.Grader.name == newcomer))
                rid = t.scalar(select(m.Response.id).where(m.Response.external_id == target[0]))
                task = t.scalar(select(m.Response.task_id).where(m.Response.id == rid))
                cid = t.scalar(
                    select(m.Criterion.id).where(
                        m.Criterion.task_id == task, m.Criterion.external_id == target[1]
                    )
                )
                t.add(
                    m.Judgment(grader_id=gid, response_id=rid, criterion_id=cid, met=False,
                               rationale="saved in the app", source="app")
                )  # fmt: skip
        finally:
            other.dispose()

    monkeypatch.setattr(import_journal, "reading", reading_then_a_save)
    db = open_database(sqlite_db)
    try:
        repo = Repository(db)
        report = repo.import_data(benchmark_of(read_path(path, catalog), bench))
        assert (report.judgments_added, report.judgments_updated) == (0, 1)
        with db.read() as s:
            row = s.execute(
                select(m.Judgment.id, m.Judgment.met, m.Judgment.rationale, m.Judgment.revision)
                .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
                .where(m.Grader.name == newcomer)
            ).one()
            history = s.execute(
                select(m.Revision.revision, m.Revision.data).where(
                    m.Revision.entity == "judgment", m.Revision.entity_id == row.id
                )
            ).all()
    finally:
        db.dispose()
    assert (row.met, row.rationale, row.revision) == (True, "from the file", 2)
    assert [(r.revision, r.data["rationale"], r.data["met"]) for r in history] == [
        (1, "saved in the app", False)
    ]


@pytest.fixture(scope="module")
def big_synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """150 tasks × ~25 criteria × 3 responses × 4 graders: about 45,000 judgments, nine
    batches of them."""
    out = tmp_path_factory.mktemp("big") / "bench"
    generate(out, SynthConfig(tasks=150, seed=5, artifacts_per_task=1.0))
    return out


def test_a_save_during_a_long_import_waits_for_one_batch_at_most(
    tmp_path: Path, db_templates: DatabaseTemplates, big_synth: Path
) -> None:
    """The import runs as its own process (`gradercal import`) while this process saves
    as the grading app does. Each save notes how far the import's judgments had got just
    before it began and just after it committed: no save may wait behind more than one
    batch (two batch boundaries, for one that began just before a boundary). SQLite lets a
    writer that just committed take the lock straight back, so batches alone starve the
    saves (they waited for nearly the whole import); the turns of gradercal.db.write_turns
    let every waiting save in between two batches. On the old single-transaction import no
    save commits while the import's rows are only partly there.

    Every save is held to the bound, also one that began before the first batch or
    committed after the last: with the turns broken one save waits for most of the import
    (25,000–44,412 of its 44,412 judgments in 8 runs of 8; with them, 5,000 at most). A
    run in which fewer than 5 saves fell among the import's judgments observed too little
    and is run once more on a fresh database (the lean loop below puts 80–2,000 saves
    there in half a second)."""
    seen: list[str] = []
    for attempt in (1, 2):
        path = db_templates.fill(str(tmp_path / f"g{attempt}.sqlite"), "demo imported", import_demo)
        start, end, spans = _import_while_saving(path, big_synth)
        assert end - start > 8 * repo_module.BATCH_ROWS
        worst = max(b - a for a, b in spans)
        assert worst <= 2 * repo_module.BATCH_ROWS, f"a save waited behind {worst} judgments"
        during = [(a, b) for a, b in spans if start < a and b < end]
        if len(during) >= 5:
            return
        progress = sorted({b - start for _a, b in spans})  # the import's progress the saves saw
        seen.append(
            f"run {attempt}: {len(during)} of {len(spans)} saves committed during the "
            f"import's {end - start} judgments; they saw {progress[:20]}"
        )
    pytest.fail("; ".join(seen))


def _import_while_saving(path: str, bench: Path) -> tuple[int, int, list[tuple[int, int]]]:
    """``gradercal import bench`` into ``path`` as a process while this one saves
    verdicts: (the largest judgment id before, after, and each save's (id before it
    began, id after it committed)). Every save is checked to be stored."""
    db = open_database(path)
    try:
        store = GradingStore(db)
        items = store.ensure_queue("expert-ana")[:5]
        start = _max_judgment_id(path)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        importer = subprocess.Popen(
            [sys.executable, "-m", "gradercal", "import", str(bench), "--db", path],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        spans: list[tuple[int, int]] = []
        i = 0
        # The loop stays lean, so that saves keep arriving however loaded the machine is:
        # one read-only connection sees each commit (no database opened per save), and no
        # garbage collection of a long test run's heap pauses it in mid-import.
        watch = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
        gc.disable()
        try:
            while importer.poll() is None:
                item = items[i % len(items)]
                before = _newest_judgment(watch)
                store.save_judgment(
                    item.assignment_id, "c1", JudgmentValue(met=bool(i % 2), rationale=f"save {i}")
                )
                spans.append((before, _newest_judgment(watch)))
                i += 1
        finally:
            gc.enable()
            watch.close()
        _out, err = importer.communicate(timeout=300)
        assert importer.returncode == 0, err
        end = _max_judgment_id(path)
        # every save was stored: the last one's value is current
        last = items[(i - 1) % len(items)]
        with db.read() as s:
            rationale = s.scalar(
                select(m.Judgment.rationale)
                .join(m.Criterion, m.Criterion.id == m.Judgment.criterion_id)
                .join(m.Assignment, (m.Assignment.response_id == m.Judgment.response_id)
                      & (m.Assignment.grader_id == m.Judgment.grader_id))
                .where(m.Assignment.id == last.assignment_id, m.Criterion.external_id == "c1")
            )  # fmt: skip
        assert rationale == f"save {i - 1}"
    finally:
        db.dispose()
    return start, end, spans


def test_a_bulk_writer_waits_for_a_writer_holding_its_turn_but_never_past_the_cap(
    tmp_path: Path,
) -> None:
    turns = write_turns.path_of(str(tmp_path / "g.sqlite"))
    assert turns is not None and turns.endswith("g.sqlite-writers")
    assert write_turns.path_of(":memory:") is None
    saving: dict[str, object] = {}
    write_turns.take(saving, turns)  # a save is waiting for, or holding, the write lock
    assert write_turns.let_waiting_writers_in(turns, max_wait=0.3) >= 0.3
    write_turns.release(saving)  # it committed
    assert saving == {}
    assert write_turns.let_waiting_writers_in(turns, max_wait=30) < 5


def test_a_full_disk_that_refuses_the_undo_too_says_what_remains_and_how_to_remove_it(
    sqlite_db: str, synth: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real SQLITE_FULL part-way (the file's pages capped with ``PRAGMA max_page_count``
    once some batches are in), and the undo's writes refused as a full disk refuses them
    (a fault injected into its deletions): the import says in one line what it left and
    how to remove it — not "nothing was written" — ``check`` reports the unfinished
    import, and ``check --undo-import`` then leaves the database as it was."""
    import sqlite3

    from sqlalchemy import event
    from sqlalchemy.exc import OperationalError

    from gradercal.db import session

    before = fingerprint(sqlite_db)
    con = sqlite3.connect(sqlite_db)
    try:
        cap = con.execute("PRAGMA page_count").fetchone()[0] + 380  # a few batches fit
    finally:
        con.close()
    real_engine = session._make_engine

    def capped(url: object, **kwargs: object) -> object:
        engine = real_engine(url, **kwargs)  # type: ignore[arg-type]
        event.listen(
            engine, "connect", lambda conn, _r: conn.execute(f"PRAGMA max_page_count = {cap}")
        )
        return engine

    def refused(*_a: object, **_k: object) -> None:
        raise OperationalError(
            "DELETE FROM judgment", {}, sqlite3.OperationalError("database or disk is full")
        )

    monkeypatch.setattr(session, "_make_engine", capped)
    monkeypatch.setattr(import_journal, "_undo_range", refused)
    res = CliRunner().invoke(main, ["import", str(synth), "--db", sqlite_db])
    monkeypatch.undo()
    assert res.exit_code == 1, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1, res.output
    assert lines[0].startswith(
        "error: the import stopped (database or disk is full) after committing up to "
    )
    assert "judgment rows" in lines[0] and "undoing them failed too" in lines[0]
    assert "gradercal check --undo-import" in lines[0]
    assert "nothing was written" not in lines[0]
    assert _journal_keys(sqlite_db)  # the batches really are still there …
    assert fingerprint(sqlite_db) != before
    check = json.loads(CliRunner().invoke(main, ["check", "--db", sqlite_db, "--json"]).stdout)
    assert not check["ok"]
    assert any("import.unfinished" in json.dumps(p) for p in check["problems"])
    undo = CliRunner().invoke(main, ["check", "--undo-import", "--db", sqlite_db])
    assert undo.exit_code == 0, undo.output
    assert fingerprint(sqlite_db) == before  # … and the command said removes them all
    assert _journal_keys(sqlite_db) == []
