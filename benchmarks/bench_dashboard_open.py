"""Dashboard first open, reopen, filter change and adjudication return against a bare read
of the rows (issue #18).

Goals: a first open ≤ 4× a bare read of every table the dashboard needs, a filter change
≤ 2× that read, the return from an adjudication ≤ 0.3 s. Each repeat, back to back on a
copy of the SQLite file (adjudications are written into it):

* *bare read*: a fresh ``python`` process that reads every table the dashboard needs
  with plain ``sqlite3`` and ``fetchall()`` (``bench_load_frames.bare_all``); its wall
  time from start to exit (so it pays a process start, as the dashboard does);
* *first open*: a fresh dashboard worker (``python -m gradercal.ui.dashboard.worker``, what
  the window starts; no Qt) with an empty cache on disk, asked at once for the default
  dashboard: from the process start to its ``done`` (imports, load, compute, parts,
  tables, charts at 1200 × 700);
* *filter change*: the same worker asked next for one model (frames kept, not computed
  before);
* *read ahead*: what the window does once a result is shown — the filter sets one click
  away (each model alone, then each workflow alone, six at most) computed ahead in a
  niced child — then a filter change to one of them;
* *adjudication return*: the verdicts a case could get computed ahead (as while the
  coordinator reads it), one saved, the dashboard asked again (with ``expect``); and
  another adjudication that nobody read ahead;
* *reopen*: a new worker (the next session) on the same data and cache directory;
* *window*: ``gradercal gui --view dashboard`` as a process (offscreen), from its start to
  the window's ``computed`` (every table and chart on screen), with an empty cache, then
  again on the same data (the result on disk).

Medians, their ratios to the bare read and the load average are printed.

    .venv/bin/python benchmarks/bench_dashboard_open.py --db FILE [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

_BARE_CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
from bench_load_frames import bare_all
bare_all(sys.argv[2], int(sys.argv[3]))
"""


def bare_read(db: str, bench_id: int) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", _BARE_CHILD, str(HERE), db, str(bench_id)], check=True)
    return time.perf_counter() - t0


def _wait(
    proc: subprocess.Popen[bytes],
    read_message: Any,
    kind: str,
    parts: dict[str, bytes] | None = None,
) -> dict[str, Any]:
    """The worker's next message of ``kind`` (``done``, ``prefetched``); the digests of the
    parts received meanwhile go into ``parts``."""
    assert proc.stdout is not None
    while True:
        message = read_message(proc.stdout)
        if message is None:
            raise SystemExit("the worker ended early")
        if message.get("type") == "part" and parts is not None:
            parts[message["key"]] = message["digest"]
        if message.get("type") == kind:
            return dict(message)
        if message.get("type") == "error":
            raise SystemExit(f"worker error: {message.get('message')}\n{message.get('traceback')}")


def _start(cache: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "GRADERCAL_DASHBOARD_CACHE": cache}
    return subprocess.Popen(
        [sys.executable, "-m", "gradercal.ui.dashboard.worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    from gradercal.ui.dashboard.worker import encode

    assert proc.stdin is not None
    proc.stdin.write(encode(message))
    proc.stdin.flush()


def _end(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()  # as when the window closes: the worker finishes writing, exits
    proc.wait(timeout=120)


def _unit(db: str, k: int) -> tuple[str, str]:
    """The ``k``-th (response, criterion) an expert graded."""
    con = sqlite3.connect(db)
    row = con.execute(
        "SELECT r.external_id, c.external_id FROM judgment j "
        "JOIN response r ON r.id = j.response_id JOIN criterion c ON c.id = j.criterion_id "
        "JOIN grader g ON g.id = j.grader_id WHERE g.kind = 'human' "
        "ORDER BY j.id LIMIT 1 OFFSET ?",
        (k * 97,),
    ).fetchone()
    con.close()
    return str(row[0]), str(row[1])


def worker_run(db: str, bench: str, model: str, k: int, neighbours: list[Any]) -> dict[str, Any]:
    """One fresh worker with an empty cache on disk: first open, filter change, return
    from an adjudication (prefetched, and not); then a second worker: reopen."""
    from gradercal.dashboard import DashboardFilters
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database
    from gradercal.ui.dashboard.data import Request
    from gradercal.ui.dashboard.results import PickledRequest
    from gradercal.ui.dashboard.worker import read_message

    url = f"sqlite:///{db}"
    size = (1200, 700)
    cache = tempfile.mkdtemp(prefix="gc-dash-cache-")
    gen = [0]

    shown: dict[str, bytes] = {}  # the parts the window holds: {key: digest}

    def ask(proc: subprocess.Popen[bytes], filters: Any, **extra: Any) -> dict[str, Any]:
        # As the window does: the digests of what it shows go with the request, and the
        # worker sends only the parts that differ.
        gen[0] += 1
        req = Request(gen[0], bench, filters, None, False, chart_size=size)
        message = {"op": "compute", "request": PickledRequest.of(req), "url": url}
        _send(proc, {**message, "have": dict(shown), **extra})
        received: dict[str, bytes] = {}
        done = _wait(proc, read_message, "done", received)
        kept = {k: shown[k] for k in done["keys"] if k in shown and k not in received}
        shown.clear()
        shown.update(kept, **received)
        return done

    def adjudicate(unit: tuple[str, str], met: bool) -> None:
        database = open_database(url)
        try:
            Repository(database).adjudicate(None, *unit, met=met, adjudicator="bench")
        finally:
            database.dispose()

    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    proc = _start(cache)
    done = ask(proc, DashboardFilters())
    out["first_open"], out["first_phases"] = time.perf_counter() - t0, done["phases"]
    t1 = time.perf_counter()
    done = ask(proc, DashboardFilters(models=(model,)))
    out["filter_change"], out["filter_phases"] = time.perf_counter() - t1, done["phases"]
    # what the window does once a result is shown: the filter sets one click away are
    # computed ahead (each model alone, each workflow alone: QtDashboardView.neighbours)
    base = Request(gen[0], bench, DashboardFilters(), None, False, chart_size=size)
    ask(proc, DashboardFilters())  # back to the whole benchmark (from memory)
    ahead = [dataclasses.replace(base, filters=f) for f in neighbours]
    t_ahead = time.perf_counter()
    _send(proc, {"op": "prefetch", "url": url, "requests": ahead})
    for _ in ahead:
        _wait(proc, read_message, "prefetched")
    out["read_ahead_all"] = time.perf_counter() - t_ahead
    t1 = time.perf_counter()
    done = ask(proc, neighbours[-1])
    out["filter_read_ahead"] = time.perf_counter() - t1
    out["filter_read_ahead_cached"] = bool(done.get("cached"))
    # an adjudication read ahead
    unit = _unit(db, 2 * k)
    request = Request(gen[0], bench, DashboardFilters(), None, False, chart_size=size)
    hypotheses = [(*unit, True, None), (*unit, False, None)]
    _send(proc, {"op": "prefetch", "request": request, "url": url, "hypotheses": hypotheses})
    for _ in hypotheses:
        _wait(proc, read_message, "prefetched")
    adjudicate(unit, False)
    t2 = time.perf_counter()
    done = ask(proc, DashboardFilters(), expect=(*unit, False, None))
    out["adjudication_return"] = time.perf_counter() - t2
    out["return_cached"] = bool(done.get("cached"))
    # an adjudication nobody read ahead: computed on return
    adjudicate(_unit(db, 2 * k + 1), True)
    t3 = time.perf_counter()
    done = ask(proc, DashboardFilters())
    out["return_not_prefetched"] = time.perf_counter() - t3
    _end(proc)
    # the next session, same data: the result written by the first worker is read
    t4 = time.perf_counter()
    shown.clear()  # a new window holds nothing
    proc = _start(cache)
    done = ask(proc, DashboardFilters())
    out["reopen"], out["reopen_phases"] = time.perf_counter() - t4, done["phases"]
    out["reopen_disk"] = bool(done.get("disk"))
    _end(proc)
    shutil.rmtree(cache, ignore_errors=True)
    return out


_WINDOW_CHILD = """
import sys, time, tempfile
t0 = float(sys.argv[2])
from gradercal.ui.qt_app import application, build_coordinator_window, _wait
from gradercal.ui.qt_settings import QtAppSettings
settings = QtAppSettings(tempfile.mktemp(suffix=".ini"))
window = build_coordinator_window(sys.argv[1], settings=settings)
board = window.coordination.dashboard
ok = _wait(board.result is not None and not board.busy, board.computed, 300_000)
shown = time.time() - t0
assert ok, board.error_text
print(repr((shown, board.result.phases, board.result.seconds)))
board.shutdown()
"""


def window_open(db: str, cache: str) -> tuple[float, dict[str, float]]:
    """``gradercal gui --view dashboard`` as a process (offscreen): from its start to the
    window's ``computed`` (every table and chart on screen)."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "GRADERCAL_DASHBOARD_CACHE": cache}
    out = subprocess.run(
        [sys.executable, "-c", _WINDOW_CHILD, db, repr(time.time())],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    shown, phases, _seconds = eval(out.strip().splitlines()[-1])  # our own repr
    return float(shown), dict(phases)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--db", required=True, help="an imported benchmark (SQLite file; a copy is used)"
    )
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gc-open-"))
    db = str(work / "bench.sqlite")  # adjudications are written: never into the original
    shutil.copyfile(Path(args.db).resolve(), db)
    con = sqlite3.connect(db)
    bench_id, bench = con.execute("SELECT id, name FROM benchmark ORDER BY id").fetchone()
    (model,) = con.execute(
        "SELECT model FROM response WHERE benchmark_id = ? ORDER BY model LIMIT 1", (bench_id,)
    ).fetchone()
    con.close()
    from gradercal.dashboard import DashboardFilters

    models = [
        r[0]
        for r in sqlite3.connect(db).execute(
            "SELECT DISTINCT model FROM response WHERE benchmark_id = ? ORDER BY model", (bench_id,)
        )
    ]
    workflows = [
        r[0]
        for r in sqlite3.connect(db).execute(
            "SELECT DISTINCT workflow FROM task WHERE benchmark_id = ? AND workflow IS NOT NULL "
            "ORDER BY workflow",
            (bench_id,),
        )
    ]
    # as QtDashboardView.neighbours from the whole benchmark: each model alone, then each
    # workflow alone, six at most (the first model's was computed by the filter change)
    neighbours = [
        *(DashboardFilters(models=(m,)) for m in models),
        *(DashboardFilters(workflows=(w,)) for w in workflows),
    ][:6]
    bare_read(db, bench_id)  # the page cache, once
    runs: list[dict[str, Any]] = []
    for i in range(args.repeat):
        load = os.getloadavg()[0]
        if i % 2:
            w = worker_run(db, bench, model, i, neighbours)
            bare = bare_read(db, bench_id)
        else:
            bare = bare_read(db, bench_id)
            w = worker_run(db, bench, model, i, neighbours)
        cache = tempfile.mkdtemp(prefix="gc-win-cache-")
        win_first, _ = window_open(db, cache)
        win_reopen, win_phases = window_open(db, cache)
        shutil.rmtree(cache, ignore_errors=True)
        w.update(window_first=win_first, window_reopen=win_reopen, window_phases=win_phases)
        run = {"load": load, "bare_read": bare, **w}
        runs.append(run)
        start = w["first_open"] - sum(w["first_phases"].values())
        fp = ", ".join(
            [
                f"start and imports {start:.2f}",
                *(f"{k} {v:.2f}" for k, v in w["first_phases"].items()),
            ]
        )
        cp = ", ".join(f"{k} {v:.2f}" for k, v in w["filter_phases"].items())
        rp = ", ".join(f"{k} {v:.3f}" for k, v in w["reopen_phases"].items())
        print(
            f"run {i + 1} (load {load:.2f}): bare read {bare:.3f} s; first open "
            f"{w['first_open']:.2f} s ({fp}); filter change {w['filter_change']:.2f} s ({cp}); "
            f"read ahead ({len(neighbours)} filter sets) {w['read_ahead_all']:.1f} s, then "
            f"a filter change {w['filter_read_ahead']:.3f} s "
            f"(from memory: {w['filter_read_ahead_cached']}); "
            f"adjudication return {w['adjudication_return']:.3f} s "
            f"(prefetched: {w['return_cached']}), not read ahead "
            f"{w['return_not_prefetched']:.2f} s; reopen {w['reopen']:.3f} s "
            f"(from disk: {w['reopen_disk']}; {rp}); window: first open "
            f"{win_first:.2f} s, reopen {win_reopen:.2f} s",
            flush=True,
        )
    keys = (
        "bare_read",
        "window_first",
        "window_reopen",
        "first_open",
        "reopen",
        "filter_change",
        "filter_read_ahead",
        "adjudication_return",
        "return_not_prefetched",
    )
    med = {k: statistics.median(r[k] for r in runs) for k in keys}
    loads = [r["load"] for r in runs]
    bare = med["bare_read"]
    print(
        f"\nmedians of {len(runs)} (load average {min(loads):.2f}–{max(loads):.2f}): "
        f"bare read {bare:.3f} s\n"
        f"  first open, nothing on disk  {med['first_open']:.2f} s = "
        f"{med['first_open'] / bare:.2f}× (goal ≤ 4)\n"
        f"  reopen, same data            {med['reopen']:.2f} s = "
        f"{med['reopen'] / bare:.2f}× (goal ≤ 4)\n"
        f"  window (gradercal gui --view dashboard, start to shown): first open "
        f"{med['window_first']:.2f} s = {med['window_first'] / bare:.2f}×, reopen "
        f"{med['window_reopen']:.2f} s = {med['window_reopen'] / bare:.2f}×\n"
        f"  filter change                {med['filter_change']:.2f} s = "
        f"{med['filter_change'] / bare:.2f}× (goal ≤ 2)\n"
        f"  filter change, read ahead    {med['filter_read_ahead']:.2f} s = "
        f"{med['filter_read_ahead'] / bare:.2f}× (goal ≤ 2)\n"
        f"  adjudication return          {med['adjudication_return']:.3f} s (goal ≤ 0.3 s); "
        f"not read ahead {med['return_not_prefetched']:.2f} s"
    )
    if args.json:
        print(json.dumps(runs, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
