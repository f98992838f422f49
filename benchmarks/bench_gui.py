"""Responsiveness of the grading app (offscreen Qt), measured the way a grader feels it.

* **next response**: from "next response" (the ``]`` key) to the response fully shown —
  texts, rubric, and the first page of its PDF on screen — median and p95, split into
  moving to another task (new PDF: bytes read from the database, opened, first page
  rendered) and moving within a task (the artifact panel stays as it is);
* **judgment commit**: from a key press on a criterion (``M``/``N``) to the judgment row
  committed in SQLite (WAL, ``synchronous=FULL``), p95; checked by reading the row back
  through a separate connection; plus ``GradingStore.save_judgment`` alone;
* **cold start**: a new Python process from launch to an interactive window showing the
  first response (all imports, database open, queue, first item), median.

Goals (2 cores): next ≤ 100 ms median, commit ≤ 10 ms p95, start ≤ 2 s.

Usage::

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_gui.py [--tasks 24] [--pages 40] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

GRADER = "bench-grader"
MODELS = ("model-a", "model-b", "model-c")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q * (len(ordered) - 1))))
    return ordered[k]


def _summary(ms: list[float]) -> dict[str, float]:
    return {
        "n": len(ms),
        "median_ms": round(statistics.median(ms), 2),
        "p95_ms": round(_pct(ms, 0.95), 2),
        "max_ms": round(max(ms), 2),
    }


def write_benchmark(folder: Path, n_tasks: int, pages: int) -> None:
    """Tasks with a distinct multi-page PDF each, 15 criteria, three responses."""
    from gradercal.ui.viewers.qt_pdf_viewer import import_pymupdf

    pymupdf = import_pymupdf()
    art = folder / "artifacts"
    art.mkdir(parents=True)
    tasks, responses = [], []
    body = (
        "Donors D1–D3 were processed in batch 1 and D4–D6 in batch 2; the viability dye "
        "was omitted in batch 2. CD25+FOXP3+ cells rose from 6.1% to 9.8%. "
    ) * 6
    for t in range(n_tasks):
        doc = pymupdf.open()
        for p in range(pages):
            page = doc.new_page(width=595, height=842)
            page.insert_text((60, 80), f"Report {t} — page {p + 1}", fontsize=16)
            page.insert_textbox(pymupdf.Rect(60, 110, 535, 800), body, fontsize=10)
        (art / f"report{t}.pdf").write_bytes(doc.tobytes())
        doc.close()
        tid = f"T{t:03d}"
        tasks.append(
            {
                "id": tid,
                "prompt": f"## Task {t}\n\nRead the attached report and judge the claim.\n\n"
                + "- point\n" * 5,
                "artifacts": [{"path": f"artifacts/report{t}.pdf", "title": f"Report {t}"}],
                "rubric": [
                    {
                        "id": f"c{k}",
                        "criterion": f"Criterion {k}: " + "mentions a detail " * 4,
                        "points": 1 + k % 5,
                    }
                    for k in range(15)
                ],
            }
        )
        for mname in MODELS:
            responses.append(
                {
                    "id": f"{tid}-{mname}",
                    "task_id": tid,
                    "model": mname,
                    "text": "## Answer\n\n" + ("The claim is not supported. " * 30 + "\n\n") * 4,
                }
            )
    (folder / "benchmark.json").write_text(json.dumps({"name": "bench-gui", "format_version": 1}))
    (folder / "tasks.jsonl").write_text("".join(json.dumps(x) + "\n" for x in tasks))
    (folder / "responses.jsonl").write_text("".join(json.dumps(x) + "\n" for x in responses))


def import_into(folder: Path, db_path: Path) -> None:
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database
    from gradercal.formats import read_folder

    db = open_database(db_path)
    try:
        Repository(db).import_data(read_folder(folder))
    finally:
        db.dispose()


def measure_window(
    db_path: Path, settings_path: Path, n_commits: int, pause_ms: int
) -> dict[str, Any]:
    from PySide6.QtCore import QEventLoop, Qt, QTimer
    from PySide6.QtTest import QTest

    from gradercal.db.grading import GradingStore, JudgmentValue
    from gradercal.db.session import open_database
    from gradercal.ui.qt_app import application
    from gradercal.ui.qt_main_window import QtMainWindow
    from gradercal.ui.qt_settings import QtAppSettings

    app = application()
    db = open_database(db_path)
    store = GradingStore(db)
    settings = QtAppSettings(settings_path)
    settings.auto_advance = False
    window = QtMainWindow(store, settings, db.display, track_time=False)
    window.resize(1600, 1000)
    window.show()
    window.activateWindow()
    window.start_session(GRADER, "bench-gui", load=False)
    g = window.grading
    assert g is not None

    def wait_ready(action: Any) -> float:
        loop = QEventLoop()
        seen = {"t": 0.0}

        def done() -> None:
            seen["t"] = time.perf_counter()
            loop.quit()

        g.item_ready.connect(done)
        QTimer.singleShot(30_000, loop.quit)
        start = time.perf_counter()
        action()
        if not seen["t"]:
            loop.exec()
        g.item_ready.disconnect(done)
        if not seen["t"]:
            raise RuntimeError("item never became ready")
        return (seen["t"] - start) * 1000

    first_ms = wait_ready(g.load_queue_now)
    for _ in range(10):
        app.processEvents()

    def walk(pause_ms: int) -> tuple[list[float], list[float]]:
        """Press ] through the queue; ``pause_ms`` of "reading" after each response."""
        new_task: list[float] = []
        same_task: list[float] = []
        for _ in range(len(g.queue) - 1):
            if pause_ms:
                QTest.qWait(pause_ms)
            assert g.current is not None
            before = g.current.item.task_id
            target = g.rubric.table
            ms = wait_ready(lambda t=target: QTest.keyClick(t, Qt.Key.Key_BracketRight))
            assert g.current is not None
            (new_task if g.current.item.task_id != before else same_task).append(ms)
            viewer = g.artifacts.current_viewer()
            assert viewer is not None and viewer.error is None and viewer.is_ready
        return new_task, same_task

    # 1. back to back, nothing prepared: every PDF read from the database, opened, rendered
    from gradercal.ui.viewers import qt_pdf_viewer

    qt_pdf_viewer.clear_cache()
    qt_pdf_viewer._INFOS.clear()
    cold_new, cold_same = walk(0)
    # 2. as a grader works: a pause to read each response, during which the next task's
    #    PDF is prepared in the background; start again from the top with empty caches
    qt_pdf_viewer.clear_cache()
    qt_pdf_viewer._INFOS.clear()
    wait_ready(lambda: g.open_index(0))
    new_task, same_task = walk(pause_ms)

    # key press → committed row
    assert g.state is not None and g.current is not None
    aid = g.current.item.assignment_id
    raw = sqlite3.connect(str(db_path))
    commit_ms: list[float] = []
    target = g.rubric.table
    for i in range(n_commits):
        g.rubric.set_current_row(i % len(g.state))
        target.setFocus()
        key = Qt.Key.Key_M if (i // len(g.state)) % 2 == 0 else Qt.Key.Key_N
        start = time.perf_counter()
        QTest.keyClick(target, key)
        commit_ms.append((time.perf_counter() - start) * 1000)
    # the last verdicts are in the database, read by another connection
    cid = g.state.rows[(n_commits - 1) % len(g.state)].criterion.id
    expected = g.state.value(cid).met
    row = raw.execute(
        "SELECT j.met FROM judgment j JOIN criterion c ON c.id = j.criterion_id "
        "JOIN assignment a ON a.response_id = j.response_id AND a.grader_id = j.grader_id "
        "WHERE a.id = ? AND c.external_id = ?",
        (aid, cid),
    ).fetchone()
    assert row is not None and bool(row[0]) == expected
    raw.close()
    store_ms: list[float] = []
    for i in range(n_commits):
        start = time.perf_counter()
        store.save_judgment(aid, "c0", JudgmentValue(met=bool(i % 2)))
        store_ms.append((time.perf_counter() - start) * 1000)
    window.close()
    db.dispose()
    return {
        "queue_and_first_item_ms": round(first_ms, 1),
        "next_response_new_task": _summary(new_task),
        "next_response_same_task": _summary(same_task),
        "next_response_all": _summary(new_task + same_task),
        "next_response_back_to_back_new_task": _summary(cold_new),
        "next_response_back_to_back_all": _summary(cold_new + cold_same),
        "keypress_to_commit": _summary(commit_ms),
        "save_judgment_only": _summary(store_ms),
    }


START_SCRIPT = r"""
import sys, time
t0 = time.perf_counter()
from gradercal.ui.qt_app import application, build_window  # every import the app needs
from gradercal.ui.qt_settings import QtAppSettings
t_imports = time.perf_counter()
window = build_window(sys.argv[1], sys.argv[3], "bench-gui", settings=QtAppSettings(sys.argv[2]))
t_window = time.perf_counter()
def ready():
    t = time.perf_counter()
    print("READY", round((t_imports - t0) * 1000), round((t_window - t0) * 1000),
          round((t - t0) * 1000), flush=True)
    application().quit()
window.grading.item_ready.connect(ready)
application().exec()
"""


def measure_start(db_path: Path, settings_path: Path, runs: int) -> dict[str, Any]:
    """New processes to the first response shown; also where the time went (child clock)."""
    times: list[float] = []
    phases: list[list[int]] = []
    for i in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", START_SCRIPT, str(db_path), str(settings_path), f"s{i % 2}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("READY"):
                times.append((time.perf_counter() - start) * 1000)
                phases.append([int(x) for x in line.split()[1:]])
                break
        proc.wait(timeout=60)
    out: dict[str, Any] = _summary(times)
    med = [statistics.median(p[k] for p in phases) for k in range(3)]
    out["phases_median_ms"] = {
        "imports_done": med[0],
        "window_built": med[1],
        "first_response_shown": med[2],
    }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=24)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--pause-ms", type=int, default=600, help="reading time per response")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_benchmark(root / "bench", args.tasks, args.pages)
        db_path = root / "bench.sqlite"
        import_into(root / "bench", db_path)
        result: dict[str, Any] = {
            "machine": {
                "cpus": os.cpu_count(),
                "load_average_1min": round(os.getloadavg()[0], 2),
                "python": sys.version.split()[0],
            },
            "benchmark": {
                "tasks": args.tasks,
                "pages_per_pdf": args.pages,
                "responses": 3 * args.tasks,
            },
        }
        result.update(measure_window(db_path, root / "settings.ini", args.commits, args.pause_ms))
        result["cold_start_to_first_response"] = measure_start(
            db_path, root / "start.ini", args.starts
        )
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    nxt, same, new = (
        result["next_response_all"],
        result["next_response_same_task"],
        result["next_response_new_task"],
    )
    b2b, b2b_new = (
        result["next_response_back_to_back_all"],
        result["next_response_back_to_back_new_task"],
    )
    print(f"machine: {result['machine']}")
    print(
        f"next response (all)      median {nxt['median_ms']:7.1f} ms  p95 {nxt['p95_ms']:7.1f} ms"
        f"  (goal: median ≤ 100 ms)"
    )
    print(
        f"  … to another task/PDF  median {new['median_ms']:7.1f} ms  p95 {new['p95_ms']:7.1f} ms"
    )
    print(
        f"  … within a task        median {same['median_ms']:7.1f} ms  p95 {same['p95_ms']:7.1f} ms"
    )
    print(
        f"back to back, no prefetch: all median {b2b['median_ms']:.1f} ms p95 {b2b['p95_ms']:.1f} ms;"
        f" another task median {b2b_new['median_ms']:.1f} ms p95 {b2b_new['p95_ms']:.1f} ms"
    )
    commit, start = result["keypress_to_commit"], result["cold_start_to_first_response"]
    print(
        f"key press → commit       median {commit['median_ms']:7.1f} ms  p95 {commit['p95_ms']:7.1f} ms"
        f"  (goal: p95 ≤ 10 ms)"
    )
    s = result["save_judgment_only"]
    print(f"  save_judgment alone    median {s['median_ms']:7.1f} ms  p95 {s['p95_ms']:7.1f} ms")
    print(
        f"cold start → first item  median {start['median_ms']:7.0f} ms  max {start['max_ms']:7.0f} ms"
        f"  (goal: ≤ 2000 ms)"
    )
    print(f"  inside the new process (median ms): {start['phases_median_ms']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
