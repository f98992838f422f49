"""``gradercal import`` against a bare-Python import, both as processes (issue #18).

Generates a benchmark (750 tasks by default: ~19,000 criteria, 2,250 responses, ~222,000
judgments, ~1,000 artifact files), makes one empty database at gradercal's current schema,
then times, alternately and ``--repeat`` times each, on a fresh copy of that empty file:

* ``gradercal import FOLDER --db COPY`` — a new process: interpreter start, imports,
  parsing, validation against the JSON Schemas, content hashes, checks, the write;
* ``python benchmarks/bare_import.py FOLDER COPY`` — a new process: the standard
  library's ``json`` and ``sqlite3``, the same rows, no validation.

Prints the medians of the wall times, their ratio (goal ≤ 2), the same for CPU time (user +
system, steadier when other work loads the machine) and the load average. Usage::

    python benchmarks/bench_import_process.py [--tasks 750] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gradercal.db.session import open_database
from gradercal.synth import SynthConfig, generate

HERE = Path(__file__).resolve().parent


def timed(cmd: list[str], cpu: list[float]) -> float:
    """Wall seconds of ``cmd``; its CPU seconds (user + system) are appended to ``cpu``
    (less sensitive to other work on the machine than the wall time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{cmd[:3]} failed:\n{done.stderr}")
    cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=750)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, help="Keep the generated benchmark here.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        folder = work / f"synth{args.tasks}-a"
        if not folder.exists():
            generate(folder, SynthConfig(tasks=args.tasks, seed=2, artifacts_per_task=1.33))
        empty = Path(tmp) / "empty.sqlite"
        open_database(empty).dispose()
        ours: list[float] = []
        bare: list[float] = []
        ours_cpu: list[float] = []
        bare_cpu: list[float] = []
        for n in range(args.repeat):
            for label, runs, cpu, cmd in (
                ("gradercal", ours, ours_cpu,
                 [sys.executable, "-m", "gradercal", "import", str(folder), "--db"]),
                ("bare", bare, bare_cpu, [sys.executable, str(HERE / "bare_import.py"), str(folder)]),
            ):  # fmt: skip
                copy = Path(tmp) / f"{label}{n}.sqlite"
                shutil.copyfile(empty, copy)
                runs.append(timed([*cmd, str(copy)], cpu))
                for suffix in ("", "-wal", "-shm", "-writers"):
                    Path(str(copy) + suffix).unlink(missing_ok=True)
    result = {
        "tasks": args.tasks,
        "gradercal_s": round(statistics.median(ours), 2),
        "bare_s": round(statistics.median(bare), 2),
        "ratio": round(statistics.median(ours) / statistics.median(bare), 2),
        "gradercal_cpu_s": round(statistics.median(ours_cpu), 2),
        "bare_cpu_s": round(statistics.median(bare_cpu), 2),
        "cpu_ratio": round(statistics.median(ours_cpu) / statistics.median(bare_cpu), 2),
        "runs": {"gradercal": [round(x, 2) for x in ours], "bare": [round(x, 2) for x in bare]},
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>12}: {value}")


if __name__ == "__main__":
    main()
