"""Never lose a judgment: SIGKILL at random moments, concurrent writers, backups, checks.

The grading process is a headless driver of the app's own write path
(:meth:`GradingStore.save_judgment`), run as ``python -m tests.properties.test_durability drive …``.
It prints one JSON line per judgment *after* ``save_judgment`` returned (the commit is
acknowledged), so every printed line is a promise: that value must be in the database,
at that revision, whatever happens to the process afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


# -- the headless grading process ---------------------------------------------------------------
def drive(argv: list[str]) -> int:
    """Save judgments in a loop as one grader; print each acknowledged one as a JSON line."""
    parser = argparse.ArgumentParser(prog="drive")
    parser.add_argument("--db", required=True)
    parser.add_argument("--grader", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--tag", required=True)
    parser.add_argument("--start", type=int, default=0, help="offset into the work list")
    args = parser.parse_args(argv)

    from sqlalchemy import select

    from gradercal.db import models as m
    from gradercal.db.grading import GradingStore, JudgmentValue
    from gradercal.db.session import open_database

    db = open_database(args.db)
    store = GradingStore(db)
    with db.read() as s:
        work = s.execute(
            select(m.Assignment.id, m.Criterion.external_id)
            .join(m.Grader, m.Grader.id == m.Assignment.grader_id)
            .join(m.Response, m.Response.id == m.Assignment.response_id)
            .join(m.Criterion, m.Criterion.task_id == m.Response.task_id)
            .where(m.Grader.name == args.grader, m.Criterion.kind == "judgment")
            .order_by(m.Assignment.position, m.Criterion.position)
        ).all()
    print("READY", flush=True)
    out = sys.stdout
    for i in range(args.count):
        aid, crit = work[(args.start + i) % len(work)]
        rationale = f"{args.tag}-{i}"
        met = (i // len(work)) % 2 == 0
        saved = store.save_judgment(aid, crit, JudgmentValue(met=met, rationale=rationale))
        out.write(
            json.dumps(
                {
                    "aid": aid,
                    "crit": crit,
                    "met": met,
                    "rationale": rationale,
                    "rev": saved.revision,
                }
            )
            + "\n"
        )
        out.flush()
    db.dispose()
    return 0


def zygote_main() -> int:
    """Import everything once, then fork one grading process per request (fast to start).

    Reads JSON commands on stdin, one per line, and answers each with one JSON line:
    ``{"op": "spawn", "args": [...drive args...], "out": path, "err": path}`` forks a
    child that runs :func:`drive` with its stdout and stderr going to those files and
    answers ``{"pid": …}``; ``{"op": "wait", "pid": …}`` reaps it and answers
    ``{"pid": …, "code": exit status or -signal}``. The children are real processes with
    their own database connections, opened after the fork.
    """
    import traceback

    import gradercal.db.grading
    import gradercal.db.session  # noqa: F401

    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "spawn":
            pid = os.fork()
            if pid == 0:  # the grading process
                code = 3
                try:
                    out = os.open(cmd["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                    err = os.open(cmd["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                    os.dup2(out, 1)
                    os.dup2(err, 2)
                    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
                    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
                    code = drive(cmd["args"])
                except BaseException:
                    traceback.print_exc()
                finally:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os._exit(code)
            print(json.dumps({"pid": pid}), flush=True)
        elif cmd["op"] == "wait":
            _pid, status = os.waitpid(cmd["pid"], 0)
            code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            print(json.dumps({"pid": cmd["pid"], "code": code}), flush=True)
    return 0


class Zygote:
    """The test's handle on a :func:`zygote` process."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.properties.test_durability", "zygote"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.n = 0

    def _ask(self, cmd: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return answer

    def spawn(self, db: str, grader: str, count: int, tag: str, start: int = 0) -> Driver:
        self.n += 1
        out, err = self.folder / f"drive{self.n}.out", self.folder / f"drive{self.n}.err"
        args = ["--db", db, "--grader", grader, "--count", str(count), "--tag", tag]
        args += ["--start", str(start)]
        pid = self._ask({"op": "spawn", "args": args, "out": str(out), "err": str(err)})["pid"]
        return Driver(self, int(pid), out, err)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


@dataclass
class Driver:
    """One forked grading process."""

    zygote: Zygote
    pid: int
    out: Path
    err: Path

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.out.exists() and self.out.read_bytes().startswith(b"READY\n"):
                return
            time.sleep(0.005)
        raise AssertionError(f"driver {self.pid} never became ready: {self.err.read_text()}")

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)

    def wait(self) -> int:
        return int(self.zygote._ask({"op": "wait", "pid": self.pid})["code"])

    def acks(self) -> list[Ack]:
        if not self.out.exists():  # killed before it opened its output: it acknowledged nothing
            return []
        return acks_of(self.out.read_bytes())

    def stderr(self) -> str:
        return self.err.read_text("utf-8", errors="replace")


@pytest.fixture
def zygote(tmp_path: Path) -> Iterator[Zygote]:
    z = Zygote(tmp_path)
    try:
        yield z
    finally:
        z.close()


@dataclass(frozen=True)
class Ack:
    aid: int
    crit: str
    met: bool
    rationale: str
    rev: int


def acks_of(stdout: bytes) -> list[Ack]:
    """Every complete acknowledgement line (a line cut by the kill is not one)."""
    out = []
    for line in stdout.split(b"\n")[:-1]:  # the last piece has no newline: not acknowledged
        if line.startswith(b"{"):
            out.append(Ack(**json.loads(line)))
    return out


def verify_acks(db_url: str, grader: str, acks: list[Ack]) -> None:
    """Every acknowledged value is in the database at its revision (current row or history)."""
    from sqlalchemy import select

    from gradercal.db import models as m
    from gradercal.db.session import open_database

    db = open_database(db_url)
    try:
        with db.read() as s:
            current = {
                (aid, crit): (jid, rev, met, rationale)
                for aid, crit, jid, rev, met, rationale in s.execute(
                    select(
                        m.Assignment.id,
                        m.Criterion.external_id,
                        m.Judgment.id,
                        m.Judgment.revision,
                        m.Judgment.met,
                        m.Judgment.rationale,
                    )
                    .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
                    .join(
                        m.Assignment,
                        (m.Assignment.grader_id == m.Judgment.grader_id)
                        & (m.Assignment.response_id == m.Judgment.response_id),
                    )
                    .join(m.Criterion, m.Criterion.id == m.Judgment.criterion_id)
                    .where(m.Grader.name == grader)
                )
            }
            history: dict[tuple[int, int], list[dict[str, Any]]] = {}
            ids = [v[0] for v in current.values()]
            for start in range(0, len(ids), 2000):
                for eid, rev, data in s.execute(
                    select(m.Revision.entity_id, m.Revision.revision, m.Revision.data).where(
                        m.Revision.entity == "judgment",
                        m.Revision.entity_id.in_(ids[start : start + 2000]),
                    )
                ):
                    history.setdefault((eid, rev), []).append(data)
    finally:
        db.dispose()
    lost = []
    for a in acks:
        have = current.get((a.aid, a.crit))
        if have is None:
            lost.append((a, "no judgment row"))
            continue
        jid, rev, met, rationale = have
        if rev == a.rev:
            if (met, rationale) != (a.met, a.rationale):
                lost.append((a, f"current row holds {rationale!r}"))
        elif rev > a.rev:
            olds = history.get((jid, a.rev), [])
            if [(o["met"], o["rationale"]) for o in olds] != [(a.met, a.rationale)]:
                lost.append((a, f"history at revision {a.rev}: {olds!r}"))
        else:
            lost.append((a, f"row is at revision {rev}, older than the acknowledged one"))
    assert not lost, f"{len(lost)} acknowledged judgments lost, e.g. {lost[:3]}"
    # revision numbers per judgment are 1..current with exactly one value each
    for jid, rev, _met, _rat in current.values():
        for r in range(1, rev):
            assert len(history.get((jid, r), [])) == 1, f"judgment {jid} revision {r} history"


def integrity(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()


# -- fixtures ----------------------------------------------------------------------------------
def prepared(db_url: str, graders: list[str]) -> None:
    """The demo benchmark with every grader assigned to every response."""
    from gradercal.db.assignments import assign
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database
    from gradercal.formats import read_path
    from tests.conftest import DEMO

    db = open_database(db_url)
    try:
        Repository(db).import_data(read_path(DEMO))
        assign(db, graders, len(graders), seed="durability")
    finally:
        db.dispose()


@pytest.fixture
def ram_dir(tmp_path: Path) -> Iterator[Path]:
    """A folder in RAM (``/dev/shm``) when there is one, else the test's tmp_path."""
    import shutil
    import tempfile

    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="gradercal-test-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def sqlite_db(tmp_path: Path) -> str:
    return str(tmp_path / "grading.sqlite")


# -- SIGKILL -------------------------------------------------------------------------------------
@pytest.mark.slow
def test_sigkill_at_random_moments_loses_no_acknowledged_judgment(
    sqlite_db: str, zygote: Zygote
) -> None:
    prepared(sqlite_db, ["durable"])
    rng = random.Random(int(os.environ.get("GRADERCAL_KILL_SEED", "20240607")))
    acks: list[Ack] = []
    budget_s, started, rounds, killed_mid = 10.0, time.monotonic(), 0, 0
    # At least 10 rounds and 100 acknowledged saves, then more rounds for the rest of the
    # budget: on a loaded machine it takes more rounds to reach 100, not a failure (it
    # once saw 51 in its 10 s); 180 s is the hard stop.
    while (
        rounds < 10
        or (len(acks) <= 100 and time.monotonic() - started < 180.0)
        or (time.monotonic() - started < budget_s and rounds < 200)
    ):
        rounds += 1
        drv = zygote.spawn(sqlite_db, "durable", 10**7, f"round{rounds}", rng.randrange(400))
        if rng.random() < 0.15:
            time.sleep(rng.uniform(0.0, 0.1))  # while it opens the database
        else:
            drv.wait_ready()
            time.sleep(rng.uniform(0.0, 0.3))  # while it saves judgments
        drv.kill()
        assert drv.wait() == -signal.SIGKILL, drv.stderr()
        got = drv.acks()
        killed_mid += bool(got)
        acks.extend(got)
    assert killed_mid >= 5, "the kills should land while judgments are being saved"
    assert len(acks) > 100
    assert integrity(Path(sqlite_db)) == ["ok"]
    verify_acks(sqlite_db, "durable", acks)
    from gradercal.db.maintenance import check
    from gradercal.db.session import open_database

    db = open_database(sqlite_db)
    try:
        report = check(db, quick=True)
    finally:
        db.dispose()
    assert report.ok, report.problems


# -- concurrent writers --------------------------------------------------------------------------
WRITERS = 8
PER_WRITER = 1000


@pytest.mark.slow
def test_eight_concurrent_writers_lose_nothing(db_url: str, zygote: Zygote, ram_dir: Path) -> None:
    """Eight grading processes at once, 1,000 judgments each: all acknowledged, none lost.

    The SQLite file lives in RAM when it can (``/dev/shm``): this test is about locking,
    busy timeouts and lost updates between processes, and 8,000 fsyncs on a slow disk
    would only make it slow (the SIGKILL test runs on the disk).
    """
    if "://" not in db_url:
        db_url = str(ram_dir / "writers.sqlite")
    graders = [f"w{i}" for i in range(WRITERS)]
    prepared(db_url, graders)
    drivers = [zygote.spawn(db_url, g, PER_WRITER, f"{g}-run") for g in graders]
    codes = [d.wait() for d in drivers]
    for g, d, code in zip(graders, drivers, codes, strict=True):
        assert code == 0, f"{g}: {d.stderr()[-3000:]}"
        assert d.stderr().strip() == "", f"{g} wrote to stderr: {d.stderr()[-3000:]}"
    for g, d in zip(graders, drivers, strict=True):
        acks = d.acks()
        assert len(acks) == PER_WRITER
        verify_acks(db_url, g, acks)
    if "://" not in db_url:
        assert integrity(Path(db_url)) == ["ok"]


@pytest.mark.slow
def test_concurrent_writers_on_the_same_judgments_keep_every_revision(
    db_url: str, zygote: Zygote
) -> None:
    """Two people (or two app windows) saving the very same judgments at the same time.

    Each acknowledged value must stay in the history at its own revision number. This is
    the lost-update case: on PostgreSQL (READ COMMITTED) two transactions that both read
    revision r before either commits would each write revision r+1.
    """
    prepared(db_url, ["shared"])
    drivers = [zygote.spawn(db_url, "shared", 120, f"same{i}") for i in range(4)]
    acks: list[Ack] = []
    for d in drivers:
        assert d.wait() == 0, d.stderr()[-3000:]
        acks.extend(d.acks())
    assert len(acks) == 480
    revs = [(a.aid, a.crit, a.rev) for a in acks]
    assert len(set(revs)) == len(revs), "two saves were acknowledged with the same revision"
    verify_acks(db_url, "shared", acks)


# -- backup and check ------------------------------------------------------------------------------
def test_backup_while_a_writer_is_busy_is_consistent(
    sqlite_db: str, tmp_path: Path, zygote: Zygote
) -> None:
    from gradercal.db.maintenance import backup, check
    from gradercal.db.session import open_database

    prepared(sqlite_db, ["busy"])
    drv = zygote.spawn(sqlite_db, "busy", 300, "during-backup")
    drv.wait_ready()
    db = open_database(sqlite_db)
    try:
        reports = [backup(db, tmp_path / f"copy{i}.sqlite") for i in range(3)]
    finally:
        db.dispose()
    assert drv.wait() == 0, drv.stderr()
    for rep in reports:
        assert rep.verified == "quick_check ok" and rep.method == "sqlite-online-backup"
        path = Path(rep.path)
        assert integrity(path) == ["ok"]
        copy = open_database(path)
        try:
            assert check(copy).ok
        finally:
            copy.dispose()
    assert not list(tmp_path.glob(".*.tmp"))
    verify_acks(sqlite_db, "busy", drv.acks())


def test_default_backup_name_and_refusals(sqlite_db: str) -> None:
    from gradercal.db.maintenance import MaintenanceError, backup
    from gradercal.db.session import open_database

    db = open_database(sqlite_db)
    try:
        rep = backup(db)
        assert Path(rep.path).parent == Path(sqlite_db).parent
        assert Path(rep.path).name.startswith("grading.sqlite.backup-")
        with pytest.raises(MaintenanceError, match="database itself"):
            backup(db, sqlite_db)
    finally:
        db.dispose()


@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_postgres_backup_with_pg_dump_or_a_clear_message(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from gradercal.db.maintenance import MaintenanceError, backup
    from gradercal.db.session import open_database

    db = open_database(db_url)
    try:
        if shutil.which("pg_dump"):
            rep = backup(db, tmp_path / "team.dump")
            assert rep.method == "pg_dump" and rep.bytes > 0
            assert (tmp_path / "team.dump").read_bytes()[:5] == b"PGDMP"
        monkeypatch.setattr(shutil, "which", lambda _name: None)
        with pytest.raises(MaintenanceError, match="pg_dump was not found"):
            backup(db, tmp_path / "none.dump")
        assert not (tmp_path / "none.dump").exists()
    finally:
        db.dispose()


def test_check_finds_orphans_bad_blobs_and_damage(sqlite_db: str, tmp_path: Path) -> None:
    from gradercal.db.maintenance import check
    from gradercal.db.session import open_database

    prepared(sqlite_db, ["x"])
    db = open_database(sqlite_db)
    try:
        clean = check(db)
        assert clean.ok and clean.blobs_checked > 0 and "integrity_check" in clean.checks
    finally:
        db.dispose()
    conn = sqlite3.connect(sqlite_db)
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute(
        "INSERT INTO judgment (grader_id, response_id, criterion_id, met, unclear, source, "
        "revision, created_at, updated_at) VALUES (999, 1, 1, 1, 0, 'ui', 1, "
        "'2024-01-01', '2024-01-01')"
    )
    # a judgment on a criterion of another task than its response's
    conn.execute(
        "INSERT INTO judgment (grader_id, response_id, criterion_id, met, unclear, source, "
        "revision, created_at, updated_at) SELECT 1, r.id, c.id, 1, 0, 'ui', 1, '2024-01-01', "
        "'2024-01-01' FROM response r JOIN criterion c ON c.task_id <> r.task_id LIMIT 1"
    )
    conn.execute("UPDATE blob SET data = X'00' WHERE rowid = (SELECT min(rowid) FROM blob)")
    conn.commit()
    conn.close()
    db = open_database(sqlite_db)
    try:
        report = check(db)
    finally:
        db.dispose()
    found = {p.check for p in report.problems}
    assert {"judgment.grader", "judgment.criterion", "blob.sha256", "foreign_key_check"} <= found
    assert not report.ok


def _damage(path: Path) -> None:
    """Overwrite a few pages of the judgment table with garbage (the schema stays readable)."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = [
        r[0]
        for r in conn.execute(
            "SELECT pageno FROM dbstat WHERE name = 'judgment' AND pagetype = 'leaf' "
            "ORDER BY pageno LIMIT 3"
        )
    ]
    conn.close()
    assert pages, "the judgment table should have leaf pages"
    data = bytearray(path.read_bytes())
    rng = random.Random(5)
    for n in pages:
        start = (n - 1) * page + 8
        data[start : start + 400] = bytes(rng.randrange(256) for _ in range(400))
    path.write_bytes(bytes(data))


def test_a_damaged_database_opens_read_only_with_a_clear_message(
    sqlite_db: str, tmp_path: Path
) -> None:
    from click.testing import CliRunner
    from sqlalchemy import text

    from gradercal.cli import LazyGroup, main
    from gradercal.db.maintenance import open_checked
    from gradercal.db.session import DatabaseError

    prepared(sqlite_db, ["x"])
    healthy = open_checked(sqlite_db)
    assert not healthy.read_only and healthy.message is None
    healthy.db.dispose()
    _damage(Path(sqlite_db))
    opened = open_checked(sqlite_db)
    try:
        assert opened.read_only
        assert opened.message is not None and "damaged" in opened.message
        assert "read-only" in opened.message and "backup" in opened.message
        with (
            pytest.raises(Exception, match=r"readonly|read-only|query_only"),
            opened.db.engine.begin() as conn,
        ):
            conn.execute(text("DELETE FROM database_info"))
    finally:
        opened.db.dispose()
    # gradercal check reports it (exit status 1) instead of crashing
    from tests.ops.test_assign import LAZY

    saved = dict(LazyGroup.lazy)
    LazyGroup.lazy.update(LAZY)
    try:
        res = CliRunner().invoke(main, ["check", "--db", sqlite_db, "--json", "--quick"])
    finally:
        LazyGroup.lazy.clear()
        LazyGroup.lazy.update(saved)
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output
    payload = json.loads(res.stdout)
    assert payload["opened_read_only"] is True and payload["ok"] is False
    # a file that is not a database at all: a clear error, not a crash
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(DatabaseError, match=r"damaged|not a database"):
        open_checked(junk)


if __name__ == "__main__":  # the headless grading process
    if sys.argv[1:2] == ["drive"]:
        raise SystemExit(drive(sys.argv[2:]))
    if sys.argv[1:2] == ["zygote"]:
        raise SystemExit(zygote_main())
    raise SystemExit("usage: python -m tests.properties.test_durability drive|zygote …")
