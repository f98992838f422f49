"""Dashboard first open and filter change against a bare read of the rows (issue #18).

Goals: a first open ≤ 4× a bare read of every table the dashboard needs, a filter change
≤ 2× that read. Each repeat, back to back on the same SQLite file:

* *bare read*: a fresh ``python`` process that reads every table the dashboard needs
  with plain ``sqlite3`` and ``fetchall()`` (``bench_load_frames.bare_all``); its wall
  time from start to exit (so it pays a process start, as the dashboard does);
* *first open*: a fresh dashboard worker process (``python -m gradercal.ui.dashboard.worker``,
  what the window starts; no Qt), asked at once for the default dashboard, timed from the
  process start to its ``done`` (imports, opening and loading, computing, tables, charts);
* *filter change*: the same worker asked next for the dashboard of one model (frames
  cached, a request it has not computed), timed from the request to ``done``.

Medians, their ratios to the bare read and the load average are printed.

    .venv/bin/python benchmarks/bench_dashboard_open.py --db FILE [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
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


def _wait_done(proc: subprocess.Popen[bytes], reader: Any, read_message: Any) -> dict[str, Any]:
    assert proc.stdout is not None
    while True:
        message = read_message(proc.stdout)
        if message is None:
            raise SystemExit("the worker ended early")
        kind = message.get("type")
        if kind == "done":
            return dict(message)
        if kind == "error":
            raise SystemExit(f"worker error: {message.get('message')}\n{message.get('traceback')}")


def worker_run(db: str, bench: str, model: str) -> dict[str, Any]:
    from gradercal.dashboard import DashboardFilters
    from gradercal.ui.dashboard.data import Request
    from gradercal.ui.dashboard.worker import encode, read_message

    url = f"sqlite:///{db}"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gradercal.ui.dashboard.worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None
    size = (1200, 700)
    first = Request(1, bench, DashboardFilters(), None, False, chart_size=size)
    proc.stdin.write(encode({"op": "compute", "request": first, "url": url}))
    proc.stdin.flush()
    done1 = _wait_done(proc, None, read_message)
    t1 = time.perf_counter()
    second = Request(2, bench, DashboardFilters(models=(model,)), None, False, chart_size=size)
    proc.stdin.write(encode({"op": "compute", "request": second, "url": url}))
    proc.stdin.flush()
    done2 = _wait_done(proc, None, read_message)
    t2 = time.perf_counter()
    proc.stdin.write(encode({"op": "quit"}))
    proc.stdin.close()
    proc.wait(timeout=30)
    return {
        "first_open": t1 - t0,
        "filter_change": t2 - t1,
        "first_phases": done1.get("phases", {}),
        "filter_phases": done2.get("phases", {}),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True, help="an imported benchmark (SQLite file)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    db = str(Path(args.db).resolve())
    con = sqlite3.connect(db)
    bench_id, bench = con.execute("SELECT id, name FROM benchmark ORDER BY id").fetchone()
    (model,) = con.execute(
        "SELECT model FROM response WHERE benchmark_id = ? ORDER BY model LIMIT 1", (bench_id,)
    ).fetchone()
    con.close()
    bare_read(db, bench_id)  # the page cache, once
    runs: list[dict[str, Any]] = []
    for i in range(args.repeat):
        load = os.getloadavg()[0]
        if i % 2:
            w = worker_run(db, bench, model)
            bare = bare_read(db, bench_id)
        else:
            bare = bare_read(db, bench_id)
            w = worker_run(db, bench, model)
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
        print(
            f"run {i + 1} (load {load:.2f}): bare read {bare:.3f} s; first open "
            f"{w['first_open']:.2f} s ({fp}); filter change {w['filter_change']:.2f} s ({cp})",
            flush=True,
        )
    med = {
        k: statistics.median(r[k] for r in runs)
        for k in ("bare_read", "first_open", "filter_change")
    }
    loads = [r["load"] for r in runs]
    print(
        f"\nmedians of {len(runs)} (load average {min(loads):.2f}–{max(loads):.2f}): bare read "
        f"{med['bare_read']:.3f} s, first open {med['first_open']:.2f} s "
        f"= {med['first_open'] / med['bare_read']:.2f}× (goal ≤ 4), filter change "
        f"{med['filter_change']:.2f} s = {med['filter_change'] / med['bare_read']:.2f}× (goal ≤ 2)"
    )
    if args.json:
        print(json.dumps(runs, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
