"""How long a grader's save waits while a large import runs (issue #14, SQLite).

Builds a SQLite database with the demo benchmark and a queue for one grader, then starts
``gradercal import`` of a generated benchmark (750 tasks by default, about 220,000
judgments) as its own process and, in this process, saves a verdict every 50 ms through
the grading app's store until the import ends. Prints the import's wall time, how many
saves were made, and the saves' waits (median, 99th percentile, longest), plus the
failures (``database is locked``) if any. Run it on two checkouts to compare::

    python benchmarks/bench_save_during_import.py [--tasks 750] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.formats import read_path
from gradercal.synth import SynthConfig, generate

ROOT = Path(__file__).resolve().parents[1]


def run(tasks: int, work: Path) -> dict[str, object]:
    folder = work / f"synth{tasks}"
    if not folder.exists():
        generate(folder, SynthConfig(tasks=tasks, seed=3, artifacts_per_task=1.3))
    db_path = work / "bench.sqlite"
    db = open_database(db_path)
    try:
        Repository(db).import_data(read_path(ROOT / "samples" / "demo"))
        store = GradingStore(db)
        items = store.ensure_queue("expert-ana")[:5]
        started = time.perf_counter()
        importer = subprocess.Popen(
            [sys.executable, "-m", "gradercal", "import", str(folder), "--db", str(db_path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        waits: list[float] = []
        failures: list[str] = []
        i = 0
        while importer.poll() is None:
            item = items[i % len(items)]
            t0 = time.perf_counter()
            try:
                store.save_judgment(
                    item.assignment_id, "c1", JudgmentValue(met=bool(i % 2), rationale=f"s{i}")
                )
            except Exception as exc:  # what the app would show: counted, not fatal here
                failures.append(str(exc).splitlines()[0][:120])
            waits.append(time.perf_counter() - t0)
            i += 1
            time.sleep(0.05)
        wall = time.perf_counter() - started
        _out, err = importer.communicate()
    finally:
        db.dispose()
    waits.sort()
    return {
        "tasks": tasks,
        "import_exit": importer.returncode,
        "import_error": err.strip().splitlines()[-1] if importer.returncode else None,
        "import_wall_s": round(wall, 2),
        "saves": len(waits),
        "wait_median_s": round(statistics.median(waits), 3) if waits else None,
        "wait_p99_s": round(waits[int(0.99 * (len(waits) - 1))], 3) if waits else None,
        "wait_max_s": round(waits[-1], 3) if waits else None,
        "failures": len(failures),
        "first_failure": failures[0] if failures else None,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=750)
    parser.add_argument("--work", type=Path, help="Folder for the generated benchmark (kept).")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        (work / "bench.sqlite").unlink(missing_ok=True)
        result = run(args.tasks, work)
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key:>16}: {value}")


if __name__ == "__main__":
    main()
