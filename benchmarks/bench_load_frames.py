"""``Repository.load_frames`` against a bare ``sqlite3`` fetchall of the same rows (issue #18).

Goal: ``load_frames`` ≤ 1.5× a bare fetchall of the judgment rows it returns. The
baseline is plain ``sqlite3`` in this process (no SQLAlchemy, no pandas): one
``SELECT`` of the judgments with the columns the frame holds (response, criterion and
grader names through their joins, met, level, confidence, rationale, unclear), ordered as
``load_frames`` orders them, and ``fetchall()``. A second baseline reads every table the
dashboard needs (tasks with their artifact counts, criteria, responses, judgments,
adjudications, task reviews) the same way: the "bare read" of the dashboard's goals.

Each repeat times the three back to back (alternating their order), so a busy machine
slows both sides alike; the medians and their ratios are printed with the load average.

    .venv/bin/python benchmarks/bench_load_frames.py --db FILE [--repeat 5] [--json]
    .venv/bin/python benchmarks/bench_load_frames.py --tasks 750   # generates and imports first
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

#: The judgment rows with the columns of ``frames.judgments``, as ``load_frames`` orders them.
JUDGMENTS_SQL = """
SELECT r.external_id, c.external_id, g.name, g.kind, j.met, j.level, j.confidence,
       j.rationale, j.unclear
FROM judgment j
JOIN response r ON r.id = j.response_id
JOIN criterion c ON c.id = j.criterion_id
JOIN grader g ON g.id = j.grader_id
WHERE r.benchmark_id = ?
ORDER BY j.id
"""

#: Everything else the dashboard reads (frames and task reviews).
OTHER_SQL = (
    """SELECT t.external_id, t.workflow, t.domain, t.answer_format,
              (SELECT count(*) FROM artifact a WHERE a.task_id = t.id)
       FROM task t WHERE t.benchmark_id = ? ORDER BY t.position""",
    """SELECT t.external_id, c.external_id, c.position, c.text, c.points, c.kind, c.tags,
              c.levels, c.auto_key, c.auto_target, c.auto_abs_tol, c.auto_rel_tol
       FROM criterion c JOIN task t ON t.id = c.task_id
       WHERE t.benchmark_id = ? ORDER BY t.position, c.position""",
    """SELECT r.external_id, t.external_id, r.model, r.answer
       FROM response r JOIN task t ON t.id = r.task_id
       WHERE r.benchmark_id = ? ORDER BY t.position, r.id""",
    """SELECT r.external_id, c.external_id, a.met, a.level, a.adjudicator, a.note
       FROM adjudication a JOIN response r ON r.id = a.response_id
       JOIN criterion c ON c.id = a.criterion_id WHERE r.benchmark_id = ?""",
    """SELECT t.external_id, g.name, v.answers, v.comment
       FROM task_review v JOIN task t ON t.id = v.task_id JOIN grader g ON g.id = v.grader_id
       WHERE t.benchmark_id = ?""",
)


def bare_judgments(path: str, bench_id: int) -> tuple[float, int]:
    """Seconds to fetch the judgment rows with plain sqlite3 (connect included)."""
    t0 = time.perf_counter()
    con = sqlite3.connect(path)
    rows = con.execute(JUDGMENTS_SQL, (bench_id,)).fetchall()
    con.close()
    return time.perf_counter() - t0, len(rows)


def bare_all(path: str, bench_id: int) -> float:
    """Seconds to fetch every table the dashboard reads with plain sqlite3."""
    t0 = time.perf_counter()
    con = sqlite3.connect(path)
    con.execute(JUDGMENTS_SQL, (bench_id,)).fetchall()
    for sql in OTHER_SQL:
        con.execute(sql, (bench_id,)).fetchall()
    con.close()
    return time.perf_counter() - t0


def gradercal_load(repo: Any, name: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    frames = repo.load_frames(name)
    return time.perf_counter() - t0, len(frames.judgments)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", help="an imported benchmark (SQLite file)")
    ap.add_argument("--tasks", type=int, default=750, help="generate this many tasks (no --db)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.db:
        db = Path(args.db)
    else:
        work = Path(tempfile.mkdtemp(prefix="gc-load-"))
        db = work / "bench.sqlite"
        exe = str(Path(sys.executable).parent / "gradercal")
        subprocess.run(
            [exe, "samples", "generate", "-o", str(work / "bench"), "--tasks", str(args.tasks),
             "--criteria-per-task", "25", "--responses-per-task", "3", "--human-graders", "3",
             "--artifacts-per-task", "0"],
            check=True, capture_output=True,
        )  # fmt: skip
        subprocess.run(
            [exe, "import", str(work / "bench"), "--db", str(db)], check=True, capture_output=True
        )
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database

    database = open_database(str(db), migrate=False)
    repo = Repository(database)
    bench = repo.benchmark(None)
    repo.load_frames(bench.name)  # imports and the page cache, once
    runs: list[dict[str, float]] = []
    for i in range(args.repeat):
        load = os.getloadavg()[0]
        steps = [
            ("load_frames", lambda: gradercal_load(repo, bench.name)[0]),
            ("bare_judgments", lambda: bare_judgments(str(db), bench.id)[0]),
            ("bare_all", lambda: bare_all(str(db), bench.id)),
        ]
        if i % 2:
            steps.reverse()
        run = {"load": load}
        for name, fn in steps:
            run[name] = fn()
        runs.append(run)
        print(
            f"run {i + 1}: load_frames {run['load_frames']:.3f} s, bare judgments "
            f"{run['bare_judgments']:.3f} s, bare all tables {run['bare_all']:.3f} s "
            f"(load average {load:.2f})"
        )
    n = bare_judgments(str(db), bench.id)[1]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print(
        f"\n{n:,} judgments; medians of {len(runs)}: load_frames {med['load_frames']:.3f} s, "
        f"bare judgment fetchall {med['bare_judgments']:.3f} s, bare read of every table "
        f"{med['bare_all']:.3f} s"
    )
    print(
        f"ratio load_frames / bare judgments: {med['load_frames'] / med['bare_judgments']:.2f}× "
        f"(goal ≤ 1.5×); / bare all tables: {med['load_frames'] / med['bare_all']:.2f}×; "
        f"load average {min(r['load'] for r in runs):.2f}–{max(r['load'] for r in runs):.2f}"
    )
    if args.json:
        print(json.dumps(runs, indent=2))
    database.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
