"""Command-line conventions: typed tabular exports, '-' for standard output and input,
``python -m gradercal``."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from gradercal.cli import main
from gradercal.formats import FORMATS
from tests.conftest import DATA, DEMO, fingerprint
from tests.support.files import immutable


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    db = str(tmp_path_factory.mktemp("conv") / "demo.sqlite")
    res = CliRunner().invoke(main, ["import", str(DEMO), "--db", db, "--json"])
    assert res.exit_code == 0, res.output
    return db


def _writable_descriptors(path: Path) -> list[str]:
    """This process's file descriptors open for writing on ``path`` (Linux: /proc/self)."""
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        return []
    found = []
    for fd in fds.iterdir():
        try:
            if Path(os.readlink(fd)) != path.resolve():
                continue
            flags = int(
                (Path("/proc/self/fdinfo") / fd.name).read_text().split("flags:")[1].split()[0], 8
            )
        except (OSError, IndexError, ValueError):
            continue  # closed meanwhile
        if flags & (os.O_WRONLY | os.O_RDWR):
            found.append(fd.name)
    return found


def _run(*args: str, stdin: str | None = None) -> str:
    res = CliRunner().invoke(main, list(args), input=stdin, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.stdout


def test_responses_csv_writes_answers_as_json(demo_db: str, tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    _run("export", "responses", "--db", demo_db, "-o", str(out))
    csv = pd.read_csv(out)
    jsonl = [
        json.loads(x) for x in _run("export", "responses", "--db", demo_db, "-o", "-").splitlines()
    ]
    by_id = {r["id"]: r for r in jsonl}
    answered = csv.loc[csv["answer"].notna()]
    assert len(answered) > 0
    for rid, text in zip(answered["id"], answered["answer"], strict=True):
        assert json.loads(text) == by_id[rid]["answer"]  # JSON, not a Python repr


def test_parquet_judgments_have_real_types(demo_db: str, tmp_path: Path) -> None:
    out = tmp_path / "j.parquet"
    _run("export", "judgments", "--db", demo_db, "-o", str(out))
    j = pd.read_parquet(out)
    assert isinstance(j["updated_at"].dtype, pd.DatetimeTZDtype)
    assert str(j["updated_at"].dt.tz) == "UTC"
    assert str(j["level"].dtype) == "Int64" and j["level"].notna().any()
    assert j["unclear"].dtype == bool and not j["unclear"].isna().any()
    assert str(j["met"].dtype) == "boolean"
    assert str(j["revision"].dtype) == "Int64"


def test_dash_writes_standard_output(demo_db: str, tmp_path: Path) -> None:
    out = tmp_path / "j.jsonl"
    _run("export", "judgments", "--db", demo_db, "-o", str(out))
    assert (
        _run("export", "judgments", "--db", demo_db, "-o", "-").splitlines()
        == out.read_text("utf-8").splitlines()
    )
    text = _run("export", "scores", "--db", demo_db, "-o", "-", "--format", "csv")
    assert text.splitlines()[0].startswith("response_id,task_id,model,grader,score")
    res = CliRunner().invoke(
        main, ["export", "judgments", "--db", demo_db, "-o", "-", "--format", "parquet"]
    )
    assert res.exit_code == 1 and "Parquet cannot go to standard output" in res.output


def test_stats_reads_standard_input() -> None:
    path = DATA / "golden" / "ratings.csv"
    from_file = json.loads(_run("stats", str(path), "--json"))
    from_stdin = json.loads(_run("stats", "-", "--json", stdin=path.read_text("utf-8")))
    for key in ("file", "path", "source"):
        from_file.pop(key, None), from_stdin.pop(key, None)
    assert from_stdin == from_file and from_file["n_ratings"] == 103
    res = CliRunner().invoke(main, ["stats", "-"], input="unit,rater,value\nu1,a,1\nu1,a,2\n")
    assert res.exit_code == 1 and "<stdin>:3: rater" in res.output


def test_python_m_gradercal() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gradercal", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith("gradercal, version")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # nothing listens there once the socket is closed


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (None, "connection refused by 127.0.0.1:"),
        ("localhost:8000", "is not an http:// or https:// URL"),
        ("http://no-such-host.invalid/v1", "does not resolve"),
    ],
)
def test_an_unreachable_judge_server_fails_at_once_with_the_cause(
    demo_db: str, url: str | None, message: str
) -> None:
    base = url or f"http://127.0.0.1:{_free_port()}/v1"
    res = CliRunner(env={"OPENAI_API_KEY": "k"}).invoke(
        main,
        ["judge", "run", "--db", demo_db, "--judge", "j-down", "--model", "m", "--base-url", base],
    )
    assert res.exit_code == 1, res.output
    assert message in res.output and "Traceback" not in res.output
    runs = json.loads(_run("judge", "runs", "--db", demo_db, "--json") or "[]")
    assert not [r for r in runs if r.get("judge") == "j-down"]  # no run was started
    import sqlite3

    with sqlite3.connect(demo_db) as conn:
        names = {n for (n,) in conn.execute("SELECT name FROM grader")}
    assert "judge-gpt" in names and "j-down" not in names  # nor a judge grader created


def test_import_reads_json_lines_from_standard_input(tmp_path: Path) -> None:
    """`import -` takes tasks (artifact paths relative to the current folder), then
    responses and judgments piped in; the result equals importing the files."""
    import os

    db = str(tmp_path / "stdin.sqlite")
    here = os.getcwd()
    tasks = (DEMO / "tasks.jsonl").read_text("utf-8")
    res = CliRunner().invoke(main, ["import", "-", "--db", db], input=tasks)
    assert res.exit_code != 0 and "give --benchmark NAME" in res.output
    name = json.loads((DEMO / "benchmark.json").read_text("utf-8"))["name"]
    os.chdir(DEMO)  # tasks.jsonl names artifacts/… relative to the demo folder
    try:
        said = _run("import", "-", "--db", db, "--benchmark", name, stdin=tasks)
    finally:
        os.chdir(here)
    assert "10 tasks, 9 artifacts" in said
    for name in ("responses.jsonl", "judgments.jsonl", "adjudications.jsonl"):
        _run("import", "-", "--db", db, stdin=(DEMO / name).read_text("utf-8"))
    folder_db = str(tmp_path / "folder.sqlite")
    _run("import", str(DEMO), "--db", folder_db)
    for what in ("tasks", "responses", "judgments", "adjudications"):
        a = _run("export", what, "--db", db, "-o", "-")
        b = _run("export", what, "--db", folder_db, "-o", "-")
        if what in ("judgments",):  # import times differ; everything else is equal
            strip = ("created_at", "updated_at")
            a, b = (
                [{k: v for k, v in json.loads(x).items() if k not in strip} for x in t.splitlines()]
                for t in (a, b)
            )
        assert a == b, what
    # problems are reported against <stdin>, and an empty input is refused
    res = CliRunner().invoke(main, ["import", "-", "--db", db], input='{"id": "r"}\n')
    assert res.exit_code != 0 and "<stdin>" in res.output
    res = CliRunner().invoke(main, ["import", "-", "--db", db], input="")
    assert res.exit_code != 0 and "standard input is empty" in res.output


def test_a_file_read_as_the_wrong_format_says_which_format_read_it(tmp_path: Path) -> None:
    """A HealthBench-like file with a typo'd field is taken for a tasks file (it has a
    rubric); the problems end by saying so and naming the other formats."""
    path = tmp_path / "eval.jsonl"
    path.write_text(json.dumps({"prompt_id": "p1", "rubric": "Mentions dose"}) + "\n", "utf-8")
    res = CliRunner().invoke(main, ["import", str(path), "--db", str(tmp_path / "w.sqlite")])
    assert res.exit_code != 0
    last = res.output.strip().splitlines()[-1]
    assert last.startswith("(read as v1: gradercal benchmark folder v1"), res.output
    others = ", ".join(f.name for f in FORMATS if f.name != "v1")
    assert f"gradercal also reads {others}" in last


def test_export_benchmark_writes_a_folder_that_imports_back_the_same(
    demo_db: str, tmp_path: Path
) -> None:
    """`export benchmark -o DIR` writes a v1 folder (artifact bytes included) that imports
    into an empty database as the same benchmark: every export of it is identical."""
    out = tmp_path / "copy"
    _run("export", "benchmark", "--db", demo_db, "-o", str(out))
    for name in ("benchmark.json", "tasks.jsonl", "responses.jsonl", "judgments.jsonl"):
        assert (out / name).is_file(), name
    for art in (DEMO / "artifacts").rglob("*"):
        if art.is_file():
            copy = out / art.relative_to(DEMO)
            assert copy.read_bytes() == art.read_bytes(), art
    db = str(tmp_path / "copy.sqlite")
    _run("import", str(out), "--db", db)
    assert _run("benchmarks", "--db", db, "--json") == _run("benchmarks", "--db", demo_db, "--json")
    for what in ("tasks", "responses", "judgments", "adjudications"):
        a = _run("export", what, "--db", db, "-o", "-")
        assert a == _run("export", what, "--db", demo_db, "-o", "-"), what
    # an existing folder is never overwritten, and nothing is left half written
    res = CliRunner().invoke(main, ["export", "benchmark", "--db", demo_db, "-o", str(out)])
    assert res.exit_code == 1 and "already exists" in res.output
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".copy")]
    res = CliRunner().invoke(main, ["export", "judgments", "--db", demo_db, "-o", str(out)])
    assert res.exit_code == 1 and "is a folder" in res.output


def test_an_interrupted_benchmark_export_leaves_nothing(
    demo_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gradercal.db.repo import Repository

    calls = []

    def failing(self: Repository, sha256: str) -> bytes:
        calls.append(sha256)
        if len(calls) > 2:
            raise KeyboardInterrupt
        return b"x"

    monkeypatch.setattr(Repository, "read_blob", failing)
    out = tmp_path / "copy"
    res = CliRunner().invoke(main, ["export", "benchmark", "--db", demo_db, "-o", str(out)])
    assert res.exit_code != 0 and len(calls) == 3
    assert list(tmp_path.iterdir()) == []  # neither the folder nor its temporary twin


def test_absurd_nesting_is_one_clear_line_and_a_new_database_is_not_made(tmp_path: Path) -> None:
    """Metadata nested 600 deep, or a prompt package nested 100,000 deep, is refused in
    one line naming the file; a failed import into a new path leaves no database."""
    deep: dict[str, object] = {}
    cur = deep
    for _ in range(600):
        cur["a"] = {}
        cur = cur["a"]  # type: ignore[assignment]
    folder = tmp_path / "deep"
    folder.mkdir()
    task = {"id": "t", "prompt": "p", "rubric": [{"id": "c1", "criterion": "x", "points": 1}]}
    (folder / "tasks.jsonl").write_text(json.dumps({**task, "metadata": deep}) + "\n", "utf-8")
    db = tmp_path / "new.sqlite"
    res = CliRunner().invoke(main, ["import", str(folder), "--db", str(db)])
    assert res.exit_code == 1, res.output
    assert "tasks.jsonl:1: nested more than 64 levels deep" in res.output
    assert "Traceback" not in res.output and not db.exists()
    package = tmp_path / "deep.json"
    package.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "utf-8")
    _run("import", str(DEMO), "--db", str(db))
    res = CliRunner().invoke(main, ["import-prompt", str(package), "--db", str(db)])
    assert res.exit_code == 1 and res.output.startswith(f"error: {package}:1: invalid JSON")
    assert len(res.output.strip().splitlines()) == 1
    shallow = tmp_path / "shallow"
    shallow.mkdir()
    (shallow / "tasks.jsonl").write_text(json.dumps(task) + "\n", "utf-8")
    _run("import", str(shallow), "--db", str(tmp_path / "ok.sqlite"))  # 4 levels are fine


def test_a_damaged_database_file_is_one_line_and_left_as_it_was(
    demo_db: str, tmp_path: Path
) -> None:
    good = Path(demo_db).read_bytes()
    damaged = tmp_path / "damaged.sqlite"
    # the header kept, the schema page and everything after it overwritten
    damaged.write_bytes(
        good[:100] + (bytes(range(256)) * (len(good) // 256 + 1))[: len(good) - 100]
    )
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"these are my notes, not a database\n" * 200)
    for path, reason in ((damaged, "malformed"), (junk, "not a database")):
        before = path.read_bytes()
        for args in (["scores"], ["import", str(DEMO)]):
            res = CliRunner().invoke(main, [*args, "--db", str(path)])
            assert res.exit_code == 1, res.output
            lines = res.output.strip().splitlines()
            assert len(lines) == 1 and reason in lines[0] and "gradercal backup" in lines[0]
        assert path.read_bytes() == before


def test_a_damaged_page_in_the_middle_of_a_database_is_one_line(
    demo_db: str, tmp_path: Path
) -> None:
    """The header and schema whole, one leaf page of the judgments' table overwritten:
    the file opens, and ``scores`` (reading it) and ``import`` (reading it to compare)
    meet the page; each says so in one line, exits 1 and leaves the file as it was."""
    import sqlite3

    damaged = tmp_path / "page.sqlite"
    src, con = sqlite3.connect(demo_db), sqlite3.connect(damaged)
    try:
        src.backup(con)  # the whole database in one file (no write-ahead log beside it)
        con.execute("PRAGMA journal_mode = WAL")  # as gradercal keeps it
        size = con.execute("PRAGMA page_size").fetchone()[0]
        pages = [
            r[0]
            for r in con.execute(
                "SELECT pageno FROM dbstat WHERE name = 'judgment' AND pagetype = 'leaf' "
                "ORDER BY pageno"
            )
        ]
    finally:
        src.close()
        con.close()
    page = pages[len(pages) // 2]
    data = bytearray(damaged.read_bytes())
    assert 1 < page < len(data) // size  # in the middle of the file
    data[(page - 1) * size : page * size] = bytes(range(256)) * (size // 256)
    damaged.write_bytes(bytes(data))
    before = damaged.read_bytes()
    for args in (["scores"], ["import", str(DEMO)]):
        res = CliRunner().invoke(main, [*args, "--db", str(damaged)])
        assert res.exit_code == 1, res.output
        lines = res.output.strip().splitlines()
        assert len(lines) == 1, res.output
        assert "damaged (database disk image is malformed)" in lines[0]
        assert "gradercal backup" in lines[0]
    assert damaged.read_bytes() == before


def test_a_full_disk_during_import_is_one_line_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's own "database or disk is full", made real by capping the file's pages
    (PRAGMA max_page_count) once the empty database exists: the import says so in one
    line, exits 1, and the database holds what it held."""
    from sqlalchemy import event

    from gradercal.db import session

    db = tmp_path / "full.sqlite"
    _run("init", "--db", str(db))
    real = session._make_engine

    def capped(url: Any, **kwargs: Any) -> Any:
        engine = real(url, **kwargs)
        event.listen(
            engine, "connect", lambda conn, _rec: conn.execute("PRAGMA max_page_count = 60")
        )
        return engine

    monkeypatch.setattr(session, "_make_engine", capped)
    before = fingerprint(str(db))
    res = CliRunner().invoke(main, ["import", str(DEMO), "--db", str(db)])
    assert res.exit_code == 1, res.output
    assert res.output.startswith("error: the database's disk is full (database or disk is full)")
    assert len(res.output.strip().splitlines()) == 1
    monkeypatch.undo()
    assert fingerprint(str(db)) == before


def test_a_read_only_database_is_read_and_refuses_writes_in_one_line(tmp_path: Path) -> None:
    """A database file that cannot be written (immutable, so even as root): reporting
    commands and `check` work and call it healthy; a write says it is read-only in one
    line, exits 1, and the file is unchanged."""
    db = tmp_path / "ro.sqlite"
    _run("import", str(DEMO), "--db", str(db))
    # The import ran in this process: its engine's connections (file descriptors opened
    # read-write before the file was made immutable) live until the collector frees them,
    # and SQLite hands a closed connection's descriptor to the next connection that opens
    # the same file in the same process. `assign` would then write through the import's
    # descriptor into the -wal file and succeed, as a new process never could (the test
    # failed when run alone; in the full suite a collection had happened to run first).
    gc.collect()
    assert not _writable_descriptors(db), "the import left the file open for writing"
    if not immutable(db, True):
        pytest.skip("chattr +i is not available here (needs root on a filesystem that has it)")
    try:
        before = db.read_bytes()
        scores = CliRunner().invoke(main, ["scores", "--db", str(db), "--json"])
        assert scores.exit_code == 0, scores.output
        assert json.loads(scores.output)["models"]
        check = CliRunner().invoke(main, ["check", "--db", str(db)])
        assert check.exit_code == 0 and ": ok" in check.output, check.output
        res = CliRunner().invoke(
            main, ["assign", "--db", str(db), "--graders", "x,y", "--overlap", "2", "--seed", "1"]
        )
        assert res.exit_code == 1, res.output
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: the database is read-only"), lines
        assert db.read_bytes() == before
    finally:
        immutable(db, False)
