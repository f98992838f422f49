"""Dashboards kept on disk between sessions (:mod:`gradercal.ui.dashboard.disk_cache`).

A new worker asked what an earlier one computed on the same data answers from the disk,
part for part the bytes the earlier one sent, and computes nothing; any change of the
data (a judgment, an adjudication), of the request or of the code is a different key, so
it computes — and what it computes equals what a worker without any cache computes. A
damaged file counts as absent. The real worker process answers its first request from
the disk before its heavy imports, then loads the frames for the next one.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text, update

from gradercal.dashboard import DashboardFilters
from gradercal.db import models as m
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.formats import read_folder
from gradercal.ui.dashboard import disk_cache
from gradercal.ui.dashboard.data import Request
from gradercal.ui.dashboard.disk_cache import DiskCache, data_key, disk_key
from gradercal.ui.dashboard.protocol import Part
from gradercal.ui.dashboard.results import PickledRequest, StoredResult
from gradercal.ui.dashboard.worker import encode, read_message
from tests.conftest import DEMO, PG_ADMIN_URL, _pg_admin, _pg_disconnect
from tests.ui.test_dashboard_results import (  # noqa: F401  (fixtures)
    TIMED,
    Session,
    a_unit,
    adjudicate,
    db_file,
    demo,
    flip_a_judgment,
    fresh,
    same_parts,
)


@pytest.fixture(autouse=True)
def key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The secret key's file: the test's own (never the user's)."""
    where = tmp_path / "data" / "dashboard-cache.key"
    monkeypatch.setenv("GRADERCAL_DASHBOARD_KEY", str(where))
    return where


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv(disk_cache.ENV, str(where))
    return where


def test_a_new_worker_answers_from_the_disk(db_file: str, cache: Path) -> None:  # noqa: F811
    first = Session(db_file)
    done = first.compute()
    assert not done["disk"] and first.worker.computations == 1
    assert not list(cache.glob("*.dash"))  # written when idle, or before exiting
    first.worker.flush_disk()
    files = list(cache.glob("*.dash"))
    assert len(files) == 1
    second = Session(db_file)  # another session: nothing in memory
    again = second.compute()
    assert again["disk"] and again["cached"] and not again["loaded"]
    assert second.worker.computations == 0
    assert again["parts"] == done["parts"]  # the same bytes, timings included
    assert again["keys"] == done["keys"]
    assert "compute" not in again["phases"] and "disk" in again["phases"]
    # what it shows is what a worker without a cache computes now
    same_parts(again["parts"], fresh(db_file))


def written(url: str, **kw: Any) -> dict[str, Any]:
    """A worker's ``done`` for a request, its result written to disk."""
    s = Session(url)
    done = s.compute(**kw)
    s.worker.flush_disk()
    return done


def test_another_request_is_computed(db_file: str, cache: Path) -> None:  # noqa: F811
    written(db_file)
    s = Session(db_file)
    model = Repository(open_database(db_file)).load_frames().responses["model"].iloc[0]
    other = s.compute(filters=DashboardFilters(models=(model,)))
    assert not other["disk"] and s.worker.computations == 1
    other_size = s.compute(chart_size=(400, 300))
    assert not other_size["disk"] and s.worker.computations == 2
    s.worker.flush_disk()
    # only what a window opens with (no filter) is kept, the newest of them
    assert len(list(cache.glob("*.dash"))) == 2
    again = Session(db_file)
    assert again.compute(chart_size=(400, 300))["disk"]
    assert not again.compute(filters=DashboardFilters(models=(model,)))["disk"]


def test_an_adjudication_or_a_judgment_changes_the_key(db_file: str, cache: Path) -> None:  # noqa: F811
    written(db_file)
    adjudicate(db_file, a_unit(db_file), met=False)
    s = Session(db_file)
    after = s.compute()
    assert not after["disk"] and s.worker.computations == 1
    same_parts(after["parts"], fresh(db_file))
    flip_a_judgment(db_file)
    s2 = Session(db_file)
    changed = s2.compute()
    assert not changed["disk"] and s2.worker.computations == 1
    same_parts(changed["parts"], fresh(db_file))
    # and that result is on disk in turn
    s2.worker.flush_disk()
    s3 = Session(db_file)
    assert s3.compute()["disk"] and s3.worker.computations == 0


def test_other_code_does_not_read_a_result(
    db_file: str,  # noqa: F811
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    written(db_file)
    monkeypatch.setattr(disk_cache, "code_fingerprint", lambda: "another version")
    s = Session(db_file)
    assert not s.compute()["disk"] and s.worker.computations == 1


def test_a_damaged_file_is_absent(db_file: str, cache: Path) -> None:  # noqa: F811
    written(db_file)
    (path,) = cache.glob("*.dash")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # cut short
    s = Session(db_file)
    done = s.compute()
    assert not done["disk"] and s.worker.computations == 1
    s.worker.flush_disk()
    assert path.is_file() and path.stat().st_size == len(data)  # written whole again
    path.write_bytes(b"something else entirely")
    assert DiskCache(cache).get("any key") is None
    s2 = Session(db_file)
    assert not s2.compute()["disk"]


def test_a_file_of_the_previous_format_is_absent_not_misread(tmp_path: Path) -> None:
    """Parts named by strings ("dash:overview", format 2) are never taken for parts named
    by :class:`Part`: such a file, signed with the user's own key, is absent and deleted,
    under the old header and under the new one alike."""
    kept = DiskCache(tmp_path / "c")
    assert kept.put("d/k", StoredResult(parts=[(Part.dash("overview"), b"1", b"2")]))
    assert kept.get("d/k") is not None
    old_body = pickle.dumps(
        {"keys": [disk_cache._digest("d/k")], "parts": [("dash:overview", b"1", b"2")]}
    )
    for magic in (b"gradercal dashboard 2\n", disk_cache._MAGIC):
        kept.path("d/k").write_bytes(magic + kept._mac(old_body) + old_body)
        assert kept.get("d/k") is None and not kept.path("d/k").exists()


#: The stamp every judgment of :func:`build` carries: two imports of it differ in nothing
#: but what they are given.
STAMP = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def build(url: str, flipped: int = 0) -> None:
    """Import the demo, every judgment stamped :data:`STAMP`, the first ``flipped``
    verdicts inverted (the same counts, revisions and timestamps)."""
    data = read_folder(DEMO)
    data.adjudications.clear()
    judgments = []
    for j in data.judgments:
        if flipped and j.met is not None:
            j = dataclasses.replace(j, met=not j.met)
            flipped -= 1
        judgments.append(dataclasses.replace(j, created_at=STAMP, updated_at=STAMP))
    data.judgments[:] = judgments
    db = open_database(url)
    try:
        Repository(db).import_data(data)
    finally:
        db.dispose()


def rebuild(url: str) -> None:
    """Delete the database at ``url`` and create an empty one in its place."""
    if "://" not in url:
        Path(url).unlink()
        return
    from sqlalchemy.engine import make_url

    assert PG_ADMIN_URL
    name = make_url(url).database
    admin = _pg_admin()
    try:
        with admin.connect() as conn:
            _pg_disconnect(conn, str(name))
            conn.execute(text(f'DROP DATABASE "{name}"'))
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        admin.dispose()


def revision_of(url: str, previous: dict[str, str] | None = None) -> dict[str, str]:
    db = open_database(url)
    try:
        repo = Repository(db)
        return repo.data_revision() if previous is None else repo.data_revision(None, previous)
    finally:
        db.dispose()


def test_a_database_rebuilt_in_place_is_not_read_from_disk(db_url: str, cache: Path) -> None:
    """#30: a database rebuilt at the same path from files that differ in 200 verdicts
    alone (the same counts, revisions and timestamps) showed the first one's figures."""
    build(db_url)
    first = written(db_url)
    assert not first["disk"]
    before = revision_of(db_url)
    rebuild(db_url)
    build(db_url, flipped=200)
    s = Session(db_url)
    done = s.compute()
    assert not done["disk"] and s.worker.computations == 1
    same_parts(done["parts"], fresh(db_url))
    assert done["parts"][Part.dash("agreement")] != first["parts"][Part.dash("agreement")]
    after = revision_of(db_url)
    assert after["database"] != before["database"]  # another database …
    assert after["judgments"] != before["judgments"]  # … holding other verdicts
    # The same files again: still another database, so computed again too.
    rebuild(db_url)
    build(db_url, flipped=200)
    again = revision_of(db_url)
    assert again["database"] != after["database"]
    assert {k: v for k, v in again.items() if k != "database"} == {
        k: v for k, v in after.items() if k != "database"
    }


def test_verdicts_changed_without_a_stamp_change_the_fingerprint(db_url: str) -> None:
    """Verdicts rewritten in place with the same counts, revisions and timestamps (half
    of them flipped one way, half the other) change the judgments' fingerprint, so does
    a level, a confidence or an adjudication's verdict; the database stays the same."""
    build(db_url)
    before = revision_of(db_url)
    db = open_database(db_url)
    try:
        with db.write() as s:
            ids = {
                met: s.scalars(
                    select(m.Judgment.id).where(m.Judgment.met.is_(met)).order_by(m.Judgment.id)
                ).all()[:100]
                for met in (True, False)
            }
            for met, chosen in ids.items():
                s.execute(update(m.Judgment).where(m.Judgment.id.in_(chosen)).values(met=not met))
        flipped = Repository(db).data_revision()
        changed = sorted(k for k in before if before[k] != flipped[k])
        assert changed == ["judgments"]
        for values in ({"confidence": 0.123457}, {"level": 2}, {"unclear": True}):
            with db.write() as s:
                s.execute(update(m.Judgment).where(m.Judgment.id == ids[True][0]).values(**values))
            now = Repository(db).data_revision()
            assert now["judgments"] != flipped["judgments"], values
            flipped = now
        unit = a_unit(db_url)
        Repository(db).adjudicate(None, *unit, met=True, adjudicator="lead")
        adjudicated = Repository(db).data_revision()
        with db.write() as s:
            s.execute(update(m.Adjudication).values(met=False))  # same revision, stamps
        assert Repository(db).data_revision()["adjudications"] != adjudicated["adjudications"]
    finally:
        db.dispose()


def test_a_fingerprint_read_earlier_keeps_the_digest_while_the_stamps_hold(
    db_url: str,
) -> None:
    """Within a process the judgments' digest is read again only when their stamps
    changed (a worker's every request would scan every verdict otherwise)."""
    build(db_url)
    first = revision_of(db_url)
    assert revision_of(db_url, first) == first
    flip_a_judgment(db_url)  # through gradercal: a new revision
    after = revision_of(db_url, first)
    assert after["judgments"] != first["judgments"]
    assert after == revision_of(db_url)  # what a fresh read says
    # another database is never taken for this one
    rebuild(db_url)
    build(db_url)
    assert revision_of(db_url, first)["judgments"] == revision_of(db_url)["judgments"]
    assert revision_of(db_url, first)["database"] != first["database"]


class Planted:
    """What a planted file holds: a pickle that creates ``marker`` when it is loaded (any
    other command would run the same way)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.marker), "w"))


def test_a_planted_file_is_never_unpickled(
    db_file: str,  # noqa: F811
    cache: Path,
    key: Path,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """#30: a file planted in the cache directory ran a command when the dashboard was
    opened. A file without this user's HMAC is never unpickled, and a directory others
    can write to is not read at all."""
    written(db_file)
    (path,) = cache.glob("*.dash")
    marker = tmp_path / "it ran"
    payload = pickle.dumps(Planted(marker))
    for planted in (
        b"gradercal dashboard 1\n" + payload,  # the format before the HMAC
        disk_cache._MAGIC + b"\0" * 32 + payload,  # a wrong HMAC
        disk_cache._MAGIC + path.read_bytes()[len(disk_cache._MAGIC) :][:32] + payload,
    ):
        path.write_bytes(planted)
        s = Session(db_file)
        done = s.compute()
        assert not marker.exists()
        assert not done["disk"] and s.worker.computations == 1
        assert not path.exists()  # deleted as damaged
        s.worker.flush_disk()  # written again, signed
        assert DiskCache(cache).get(s.worker._written.pop()) is not None

    assert key.is_file() and key.stat().st_mode & 0o777 == 0o600
    assert cache.stat().st_mode & 0o777 == 0o700

    # A directory others can write to: refused, whatever its files say.
    (path,) = cache.glob("*.dash")
    genuine = path.read_bytes()
    cache.chmod(0o777)
    s = Session(db_file)
    done = s.compute()
    assert not done["disk"] and s.worker.computations == 1
    assert path.read_bytes() == genuine  # not read, not deleted
    assert "dashboard cache not used" in capfd.readouterr().err
    kept = DiskCache(cache, key=key.read_bytes())
    signed = disk_cache._MAGIC + kept._mac(payload) + payload  # even a right HMAC
    kept.path("d/k").write_bytes(signed)
    assert kept.get("d/k") is None and not marker.exists()
    assert kept.put("d/other", StoredResult(parts=[(Part.dash("x"), b"1", b"2")])) is None
    assert not kept.path("d/other").exists() and kept.clear() == 0
    for mode in (0o1777, 0o770, 0o720):
        cache.chmod(mode)
        assert not kept.usable() and kept.get("d/k") is None
    assert not marker.exists()
    kept.path("d/k").unlink()
    cache.chmod(0o700)
    assert DiskCache(cache).usable()


def test_a_directory_or_key_not_the_users_alone_is_refused(
    cache: Path, key: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = DiskCache(cache)
    assert kept.put("d/k", StoredResult(parts=[(Part.dash("x"), b"1", b"2")])) is not None
    assert kept.get("d/k") is not None
    # a file of another user in the user's directory is absent (and left alone)
    real = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real + 4242)
    assert not DiskCache(cache).usable()  # the directory is another's now
    assert DiskCache(cache).get("d/k") is None and kept.path("d/k").exists()
    monkeypatch.setattr(os, "getuid", lambda: real)
    # a key others can read is refused (and not replaced)
    key.chmod(0o644)
    assert not DiskCache(cache).usable() and DiskCache(cache).get("d/k") is None
    key.chmod(0o600)
    assert DiskCache(cache).get("d/k") is not None
    # another user's key signs nothing here
    key.unlink()
    assert DiskCache(cache).get("d/k") is None  # a new key: the old file is unsigned
    assert key.stat().st_mode & 0o777 == 0o600 and len(key.read_bytes()) == 32
    assert disk_cache.ENV_KEY == "GRADERCAL_DASHBOARD_KEY"


def test_keys_bounds_and_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    req = Request(1, "b", DashboardFilters(), None, False, n_boot=20, chart_size=(480, 360))
    revision = {"judgments": "1", "adjudications": "2"}
    url = "postgresql+psycopg://lead:s3cret@db.example/bench"
    key = disk_key(req, url, revision)
    assert "s3cret" not in key and key.startswith(data_key(url, revision) + "/")
    # the password is not what the data is: another one names the same database
    assert disk_key(req, url.replace("s3cret", "other"), revision) == key
    # the generation and the reload flag are not what was asked
    again = Request(7, "b", DashboardFilters(), None, False, n_boot=20, chart_size=(480, 360))
    assert disk_key(again, url, revision) == key
    assert disk_key(req, url, {**revision, "adjudications": "3"}) != key
    assert disk_key(req, url.replace("bench", "other"), revision) != key

    kept = DiskCache(tmp_path / "k")
    kept.put(key, StoredResult(parts=[(Part.dash("x"), b"1", b"2")]))
    assert kept.has_data(data_key(url, revision))
    assert not kept.has_data(data_key(url, {**revision, "judgments": "9"}))

    cache = DiskCache(tmp_path / "c", max_files=2, max_bytes=10_000)
    for i, k in enumerate(("d/a", "d/b", "d/c")):
        assert cache.put(k, StoredResult(parts=[(Part.dash(k), b"x" * 100, b"d")])) is not None
        os.utime(cache.path(k), (time.time() + i, time.time() + i))
        cache.evict()
    assert "d/a" not in cache and "d/b" in cache and "d/c" in cache
    got = cache.get("d/b")
    assert got is not None and got.parts == [(Part.dash("d/b"), b"x" * 100, b"d")]
    big = DiskCache(tmp_path / "c", max_files=5, max_bytes=150)
    big.put("d", StoredResult(parts=[(Part.dash("d"), b"y" * 100, b"d")]))
    assert len(list((tmp_path / "c").glob("*.dash"))) == 1  # over the byte bound
    assert big.clear() == 1

    monkeypatch.setenv(disk_cache.ENV, "off")
    assert DiskCache.from_env() is None
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path / "d"))
    found = DiskCache.from_env()
    assert found is not None and found.directory == tmp_path / "d"


def _worker(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "gradercal.ui.dashboard.worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )


def _same_value(u: Any, v: Any) -> bool:
    """Equal as values, all the way down (frames exactly, NaN equal to NaN)."""
    import dataclasses
    import math

    import pandas as pd

    if type(u) is not type(v):
        return False
    if isinstance(u, pd.DataFrame | pd.Series):
        try:
            (
                pd.testing.assert_frame_equal
                if isinstance(u, pd.DataFrame)
                else pd.testing.assert_series_equal
            )(u, v, check_exact=True)  # type: ignore[operator]
        except AssertionError:
            return False
        return True
    if dataclasses.is_dataclass(u) and not isinstance(u, type):
        return all(
            _same_value(getattr(u, f.name), getattr(v, f.name)) for f in dataclasses.fields(u)
        )
    if isinstance(u, dict):
        return u.keys() == v.keys() and all(_same_value(u[k], v[k]) for k in u)
    if isinstance(u, list | tuple):
        return len(u) == len(v) and all(_same_value(a, b) for a, b in zip(u, v, strict=True))
    if isinstance(u, float) and math.isnan(u):
        return math.isnan(v)
    return bool(u == v)


def _ask(proc: subprocess.Popen[bytes], request: Request, url: str) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    message = {"op": "compute", "request": PickledRequest.of(request), "url": url}
    proc.stdin.write(encode(message))
    proc.stdin.flush()
    parts: dict[str, bytes] = {}
    payloads: dict[str, bytes] = {}
    while True:
        message = read_message(proc.stdout)
        assert message is not None, "the worker ended"
        if message["type"] == "error":
            raise AssertionError(message["traceback"])
        if message["type"] == "part":
            parts[message["key"]] = message["digest"]
            payloads[message["key"]] = message["payload"]
        if message["type"] == "done":
            message["parts"], message["payloads"] = parts, payloads
            return message


def test_the_worker_process_answers_from_the_disk_before_its_imports(
    db_file: str,  # noqa: F811
    cache: Path,
) -> None:
    url = f"sqlite:///{db_file}"
    bench = Repository(open_database(url)).benchmark(None).name
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", disk_cache.ENV: str(cache)}

    def request(gen: int, **kw: Any) -> Request:
        return Request(gen, bench, kw.pop("filters", DashboardFilters()), None, False, n_boot=20)

    first = _worker(env)
    try:
        done = _ask(first, request(1), url)
        assert not done["disk"] and "compute" in done["phases"]
    finally:
        assert first.stdin is not None
        first.stdin.close()  # the window went away: it exits once the file is written
        assert first.wait(timeout=60) == 0
    assert len(list(cache.glob("*.dash"))) == 1
    second = _worker(env)
    try:
        again = _ask(second, request(1), url)
        assert again["disk"] and "compute" not in again["phases"]
        assert not again["preloaded"]  # answered before the engines were imported
        assert set(again["keys"]) == set(done["keys"])
        # then it loads the frames while idle: a filter change computes from them
        model = Repository(open_database(url)).load_frames().responses["model"].iloc[0]
        other = _ask(second, request(2, filters=DashboardFilters(models=(model,))), url)
        assert not other["disk"] and "compute" in other["phases"]
        assert not other["loaded"]  # the frames were read before it was asked
    finally:
        second.kill()
        second.wait()
    # A window being built says a request comes ``soon``: on data with nothing on disk
    # the worker imports and loads at once instead of waiting for it.
    adjudicate(db_file, a_unit(db_file), met=False)
    third = _worker(env)
    try:
        assert third.stdin is not None
        third.stdin.write(encode({"op": "soon", "url": url, "benchmark": bench}))
        third.stdin.flush()
        time.sleep(0.5)
        cold = _ask(third, request(1), url)
        assert not cold["disk"] and not cold["loaded"] and "compute" in cold["phases"]
    finally:
        third.kill()
        third.wait()


def test_a_worker_started_before_the_window_knows_its_database(
    db_file: str,  # noqa: F811
    cache: Path,
) -> None:
    """#33: ``gradercal gui`` starts the worker before the window knows its database and
    tells it a request comes ``soon`` with no database: it imports what the headline
    needs while the window builds itself — not everything (a result on disk is still
    answered before the rest of the imports)."""
    url = f"sqlite:///{db_file}"
    bench = Repository(open_database(url)).benchmark(None).name
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", disk_cache.ENV: str(cache)}
    request = Request(1, bench, DashboardFilters(), None, False, n_boot=20)
    first = _worker(env)
    try:
        assert not _ask(first, request, url)["disk"]
    finally:
        assert first.stdin is not None
        first.stdin.close()  # it exits once the result is on disk
        assert first.wait(timeout=60) == 0
    early = _worker(env)
    try:
        assert early.stdin is not None
        early.stdin.write(encode({"op": "soon", "url": "", "benchmark": None}))
        early.stdin.flush()
        time.sleep(1.0)  # the window imports and builds itself (longer than FIRST_REQUEST_WAIT)
        done = _ask(early, request, url)
        assert done["disk"] and not done["preloaded"]  # not every import: from the disk
        assert done["imported"] == ["first"]  # the headline's, ahead of the request
    finally:
        early.kill()
        early.wait()


def test_threads_and_disk_off_keep_the_old_order(db_file: str) -> None:  # noqa: F811
    """With the cache off (as in every other test) the worker imports first, then serves."""
    s = Session(db_file)
    assert s.worker.disk is None
    order: list[str] = []
    s.worker.inbox.put(None)
    s.worker.serve(lambda: order.append("preload"))
    assert order == ["preload"]


def test_the_first_reopen_reads_what_the_first_open_computed(
    db_file: str,  # noqa: F811
    cache: Path,
) -> None:
    """#30: a window opens first without a judge (the one with the most verdicts), then
    remembers the judge it got and asks with it: the first reopen computed again (15.6 s
    at 750 tasks) instead of reading what the first open kept. The real worker process,
    as the window starts it."""
    from gradercal.dashboard import primary_judge

    url = f"sqlite:///{db_file}"
    db = open_database(url)
    try:
        repo = Repository(db)
        bench = repo.benchmark(None).name
        judge = primary_judge(repo.load_frames())
    finally:
        db.dispose()
    assert judge is not None
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", disk_cache.ENV: str(cache)}

    def request(gen: int, judge: str | None = None) -> Request:
        return Request(
            gen, bench, DashboardFilters(), judge, False, n_boot=20, chart_size=(480, 360)
        )

    first = _worker(env)
    try:
        done = _ask(first, request(1), url)  # the first open: no judge chosen yet
        assert not done["disk"] and "compute" in done["phases"]
    finally:
        assert first.stdin is not None
        first.stdin.close()
        assert first.wait(timeout=60) == 0
    assert len(list(cache.glob("*.dash"))) == 1  # one result kept (and one more name)
    for asked in (judge, None):  # the reopen, with the judge remembered; or without
        reopen = _worker(env)
        try:
            again = _ask(reopen, request(1, asked), url)
            assert again["disk"] and "compute" not in again["phases"], asked
            assert again["parts"] == done["parts"]
        finally:
            reopen.kill()
            reopen.wait()
    # what it shows is what that judge's dashboard is, computed from nothing: in a fresh
    # worker process with no cache on disk, as ``done`` was, and equal part by part as
    # values (a pickle's bytes, and so a digest, also depend on which equal strings the
    # process happened to share: the request's judge name or the frames' own)
    fresh_worker = _worker({**env, disk_cache.ENV: "off"})
    try:
        named = _ask(fresh_worker, request(1, judge), url)
    finally:
        fresh_worker.kill()
        fresh_worker.wait()
    assert not named["disk"] and "compute" in named["phases"]
    assert set(named["parts"]) == set(done["parts"])
    differ = [
        k
        for k in named["parts"]
        if k not in TIMED
        and named["parts"][k] != done["parts"][k]
        and not _same_value(pickle.loads(named["payloads"][k]), pickle.loads(done["payloads"][k]))
    ]
    assert differ == []
    # another judge is another dashboard: computed
    other = Session(db_file)
    db = open_database(url)
    try:
        judges = sorted(
            set(Repository(db).load_frames().judgments.query("grader_kind == 'judge'")["grader"])
        )
    finally:
        db.dispose()
    if len(judges) > 1:
        another = next(j for j in judges if j != judge)
        assert not other.compute(judge=another)["disk"]
