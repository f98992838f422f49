"""The first numbers on screen, a filter change and ``gradercal report`` against a bare
read of the rows (issue #33).

Goals, on a quiet 2-core machine at 750 tasks: the overview tiles and the headline
(judge–consensus κ, expert α, alt-test verdict) on screen ≤ 2 s after the window shows,
on new data; a filter change's first figures ≤ 1 s and the whole of it ≤ 3 s; ``gradercal
report`` ≤ 6× the bare read of every table. Each repeat, for each code tree given
(alternating, so that both see the same machine):

* *bare read*: a fresh ``python`` process reading every table the dashboard needs with
  plain ``sqlite3`` ``fetchall()`` (``bench_load_frames.bare_all``), start to exit;
* *window*: ``build_coordinator_window`` in a fresh process (offscreen) with an empty
  cache on disk; from the moment it returns (the window is shown) the tiles are polled
  every 5 ms: *headline* = the κ and α tiles and the alt-test line hold figures,
  *complete* = the view's ``computed`` (every table and chart on screen); then a filter
  change nobody computed ahead (the first two models; reading ahead is off): *first
  figures* = the responses tile shows the filtered count, *complete* = ``computed``;
* *report*: ``gradercal report --db DB -o FILE.html`` as a process, start to exit.

Polling the tiles measures what is on screen with any version of the code (an older tree
has no headline message: its tiles fill with everything else).

    .venv/bin/python benchmarks/bench_first_numbers.py --db FILE [--repeat 3]
        [--tree DIR ...] [--no-report | --report-only] [--json]
"""

from __future__ import annotations

import argparse
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

_WINDOW_CHILD = """
import sys, tempfile, time
try:  # what ``gradercal gui --view dashboard`` does first (an older tree has no such step)
    from gradercal.ui.dashboard.qt_process import launch_early
except ImportError:
    pass
else:
    launch_early()
from gradercal.ui.qt_app import build_coordinator_window
from gradercal.ui.qt_settings import QtAppSettings
from PySide6.QtCore import QEventLoop, QTimer
settings = QtAppSettings(tempfile.mktemp(suffix=".ini"))
window = build_coordinator_window(sys.argv[1], settings=settings)
shown = time.perf_counter()
board = window.coordination.dashboard
board.prefetching = False  # a filter change nobody computed ahead
marks = {}
state = {"done": False}
board.computed.connect(lambda: state.__setitem__("done", True))

def figures():
    c = board.cards
    return (c["kappa"].value.text() not in ("", "\\u2014")
            and c["alpha"].value.text() not in ("", "\\u2014") and bool(board.verdict.text()))

def wait(until, name, limit=600):
    loop = QEventLoop()
    timer = QTimer()
    timer.setInterval(5)
    def tick():
        if until():
            marks[name] = time.perf_counter()
            loop.quit()
    timer.timeout.connect(tick)
    timer.start()
    tick()
    if name not in marks:
        QTimer.singleShot(limit * 1000, loop.quit)
        loop.exec()
    timer.stop()

wait(figures, "headline")
wait(lambda: state["done"], "complete")
first = (marks["headline"] - shown, marks["complete"] - shown)
responses = board.cards["responses"].value.text()
models = board.result.options["models"][:2]
state["done"] = False
board.models.set_selected(models)
t0 = time.perf_counter()
board.recompute()
wait(lambda: board.cards["responses"].value.text() != responses, "filter_first")
wait(lambda: state["done"], "filter_complete")
print(repr((*first, marks["filter_first"] - t0, marks["filter_complete"] - t0)))
board.shutdown()
"""


def bare_read(db: str, bench_id: int) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", _BARE_CHILD, str(HERE), db, str(bench_id)], check=True)
    return time.perf_counter() - t0


def _env(tree: Path, cache: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(tree),
        "QT_QPA_PLATFORM": "offscreen",
        "GRADERCAL_DASHBOARD_CACHE": cache,
    }


def window(tree: Path, db: str) -> tuple[float, float, float, float]:
    """(headline, complete, filter first figures, filter complete) in seconds."""
    cache = tempfile.mkdtemp(prefix="gc-first-cache-")
    try:
        out = subprocess.run(
            [sys.executable, "-c", _WINDOW_CHILD, db],
            env=_env(tree, cache),
            cwd=tree,  # (``-c`` and ``-m`` put the working folder first on sys.path)
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    values = eval(out.strip().splitlines()[-1])  # our own repr
    return tuple(float(v) for v in values)  # type: ignore[return-value]


def report(tree: Path, db: str) -> float:
    cache = tempfile.mkdtemp(prefix="gc-first-cache-")
    html = Path(cache) / "report.html"
    t0 = time.perf_counter()
    try:
        subprocess.run(
            [sys.executable, "-m", "gradercal", "report", "--db", db, "-o", str(html)],
            env=_env(tree, cache),
            cwd=tree,
            check=True,
            capture_output=True,
        )
        return time.perf_counter() - t0
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True, help="an imported benchmark (a copy is used)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--tree", action="append", type=Path, help="a checkout to measure (default: this one)"
    )
    ap.add_argument("--no-report", action="store_true")
    ap.add_argument(
        "--report-only",
        action="store_true",
        help="only the bare read and the report (no window): more pairs in the same time",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    trees = [t.resolve() for t in (args.tree or [HERE.parent])]
    work = Path(tempfile.mkdtemp(prefix="gc-first-"))
    db = str(work / "bench.sqlite")
    shutil.copyfile(Path(args.db).resolve(), db)
    con = sqlite3.connect(db)
    (bench_id,) = con.execute("SELECT id FROM benchmark ORDER BY id").fetchone()
    con.close()
    bare_read(db, bench_id)  # the page cache, once
    runs: list[dict[str, Any]] = []
    for i in range(args.repeat):
        for tree in trees if i % 2 == 0 else trees[::-1]:
            load = os.getloadavg()[0]
            bare = bare_read(db, bench_id)
            shown: tuple[float | None, ...] = (None,) * 4
            if not args.report_only:
                shown = window(tree, db)
            head, complete, f_first, f_complete = shown
            rep = None if args.no_report else report(tree, db)
            run = {
                "tree": str(tree),
                "load": load,
                "bare_read": bare,
                "headline": head,
                "complete": complete,
                "filter_first": f_first,
                "filter_complete": f_complete,
                "report": rep,
            }
            runs.append(run)
            seen = [f"bare {bare:.2f} s"]
            if head is not None:
                seen.append(
                    f"headline {head:.2f} s, complete {complete:.2f} s; filter first "
                    f"{f_first:.2f} s, complete {f_complete:.2f} s"
                )
            if rep is not None:
                seen.append(f"report {rep:.2f} s = {rep / bare:.1f}× bare")
            print(f"{tree.name} run {i + 1} (load {load:.2f}): " + "; ".join(seen), flush=True)
    print("\nmedians (seconds, and × the bare read of the same run):")
    for tree in trees:
        mine = [r for r in runs if r["tree"] == str(tree)]
        line = [f"{tree.name}:"]
        for key in (
            "bare_read",
            "headline",
            "complete",
            "filter_first",
            "filter_complete",
            "report",
        ):
            vals = [r[key] for r in mine if r[key] is not None]
            if not vals:
                continue
            med = statistics.median(vals)
            ratio = statistics.median(r[key] / r["bare_read"] for r in mine if r[key] is not None)
            line.append(f"{key} {med:.2f} s ({ratio:.1f}×)")
        print("  " + "; ".join(line))
        ratios = sorted(r["report"] / r["bare_read"] for r in mine if r["report"] is not None)
        if len(ratios) >= 4:  # the run-to-run spread of the goal's ratio
            q = statistics.quantiles(ratios, n=4)
            print(f"    report ÷ bare read, quartiles of the runs: {q[0]:.2f}–{q[2]:.2f}×")
    if args.json:
        print(json.dumps(runs, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
