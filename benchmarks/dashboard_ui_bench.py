"""Is the window responsive while the dashboard computes? (issue #6; not a timed test)

Generates a benchmark (default: 750 tasks × 25 criteria × 3 responses, 3 experts + a
judge = 4 raters on every criterion), imports it into a temporary SQLite database, opens
a coordinator window offscreen and computes the dashboard in its worker thread — loading
the frames included — while a QTimer firing every 10 ms records the gaps between its
ticks on the UI thread. A gap far above 10 ms is an event-loop stall.

    .venv/bin/python benchmarks/dashboard_ui_bench.py [--tasks 750] [--runs 2]

Prints the compute time (from the click to every table and chart shown) and the
largest and 99th-percentile tick gaps; the goal is no gap over 100 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parent.parent


def measure(run: int, board: Any, app: Any) -> bool:
    """One computation with the tick timer running; False when it failed."""
    import gc
    import threading

    from PySide6.QtCore import QElapsedTimer, QEventLoop, QTimer

    gaps: list[float] = []
    clock = QElapsedTimer()
    clock.start()
    last = [clock.nsecsElapsed()]

    def tick(
        gaps: list[float] = gaps, last: list[int] = last, clock: QElapsedTimer = clock
    ) -> None:
        now = clock.nsecsElapsed()
        gaps.append((now - last[0]) / 1e6)
        stamps.append((now / 1e6, gaps[-1]))
        last[0] = now

    marks: dict[str, float] = {}
    apply = board._apply

    def timed_apply(c: object, apply: object = apply, marks: dict[str, float] = marks) -> None:
        marks["apply"] = clock.nsecsElapsed() / 1e6
        apply(c)  # type: ignore[operator]
        marks["applied"] = clock.nsecsElapsed() / 1e6

    board._apply = timed_apply  # type: ignore[method-assign]
    stamps: list[tuple[float, float]] = []

    collections: list[tuple[int, float, bool]] = []
    started: dict[str, float] = {}
    ui_thread = threading.main_thread()

    def on_gc(phase: str, info: dict[str, int], started: dict[str, float] = started) -> None:
        if phase == "start":
            started["t"] = time.perf_counter()
        else:
            ms = (time.perf_counter() - started.get("t", time.perf_counter())) * 1e3
            on_ui = threading.current_thread() is ui_thread
            collections.append((info["generation"], ms, on_ui))

    gc.callbacks.append(on_gc)
    ticker = QTimer()
    ticker.setInterval(10)
    ticker.timeout.connect(tick)
    ticker.start()
    loop = QEventLoop()
    board.computed.connect(loop.quit)
    board.failed.connect(loop.quit)
    start = time.perf_counter()
    board.recompute(reload=True)
    loop.exec()
    # let the visible chart paint (part of "shown")
    for _ in range(3):
        app.processEvents()
    elapsed = time.perf_counter() - start
    ticker.stop()
    board.computed.disconnect(loop.quit)
    board.failed.disconnect(loop.quit)
    if board.error_text:
        print(f"run {run + 1}: failed: {board.error_text}")
        return 1
    board._apply = apply  # type: ignore[method-assign]
    a0, a1 = marks.get("apply", 0.0), marks.get("applied", 0.0)
    phases = {"worker": 0.0, "apply": 0.0, "charts": 0.0}
    for t, g in stamps:
        phase = "worker" if t < a0 else ("apply" if t <= a1 + g else "charts")
        phases[phase] = max(phases[phase], g)
    print("  largest gap by phase (ms): " + ", ".join(f"{k} {v:.0f}" for k, v in phases.items()))
    gc.callbacks.remove(on_gc)
    slow = sorted((c for c in collections if c[1] > 50), key=lambda c: -c[1])[:5]
    print(f"  garbage collections over 50 ms (generation, ms, on UI thread): {slow}")
    gaps.sort()
    p99 = gaps[int(0.99 * (len(gaps) - 1))]
    print(
        f"run {run + 1}: computed and shown in {elapsed:.2f} s; UI-thread tick gaps: "
        f"max {gaps[-1]:.0f} ms, p99 {p99:.0f} ms, median {statistics.median(gaps):.1f} ms "
        f"({len(gaps)} ticks)"
    )
    assert board.result is not None
    sections = ", ".join(f"{k} {v:.2f}" for k, v in board.result.dashboard.elapsed.items())
    print(f"  sections (s): {sections}")
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=750)
    ap.add_argument("--criteria", type=float, default=25.0)
    ap.add_argument("--responses", type=int, default=3)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gc-dash-ui-"))
    exe = str(Path(sys.executable).parent / "gradercal")
    folder, db = work / "bench", work / "bench.sqlite"
    t0 = time.perf_counter()
    subprocess.run(
        [
            exe, "samples", "generate", "-o", str(folder), "--tasks", str(args.tasks),
            "--criteria-per-task", str(args.criteria), "--responses-per-task",
            str(args.responses), "--human-graders", "3", "--artifacts-per-task", "0",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    subprocess.run([exe, "import", str(folder), "--db", str(db)], check=True, capture_output=True)
    print(f"generated and imported in {time.perf_counter() - t0:.1f} s ({work})")

    from gradercal.ui.app import application, build_coordinator_window
    from gradercal.ui.qt_settings import QtAppSettings

    app = application()
    window = build_coordinator_window(
        str(db), settings=QtAppSettings(work / "settings.ini"), compute=False
    )
    window.resize(1600, 1000)
    app.processEvents()
    assert window.coordination is not None
    board = window.coordination.dashboard
    for run in range(args.runs):
        if not measure(run, board, app):
            return 1
    window.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
