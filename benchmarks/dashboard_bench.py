"""Wall-clock time of the coordinator's dashboard on a large generated benchmark.

Issue #6 goal: the dashboard fully computed for 750 tasks × 25 criteria × 3 responses
with 4 raters on every criterion (3 experts and a judge) in ≤ 5 s on a 2-core machine.
Generates the benchmark once (``--out``), loads it with ``frames_from_data`` (the
database load is not timed), then times :func:`gradercal.dashboard.compute_dashboard`
for each ``--bootstrap`` size (``--repeat`` times), with its per-section times, the
process CPU time of the call (this process only: a forked child's is not counted) and
the load average. With ``--processes 2`` (the default, as in the app) the calibration,
models, health and domain sections run in a forked child on Linux. Not a test.

    .venv/bin/python benchmarks/dashboard_bench.py [--out DIR] [--tasks 750] [--bootstrap 0 200]
        [--repeat N] [--processes 1|2]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from gradercal.dashboard import DEFAULT_N_BOOT, compute_dashboard
from gradercal.formats import read_path
from gradercal.frames import frames_from_data
from gradercal.synth import SynthConfig, generate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="benchmark folder (default: a temporary one)")
    parser.add_argument("--tasks", type=int, default=750)
    parser.add_argument("--bootstrap", type=int, nargs="+", default=[0, DEFAULT_N_BOOT])
    parser.add_argument("--repeat", type=int, default=1, help="runs per bootstrap size")
    parser.add_argument(
        "--processes",
        type=int,
        default=2,
        help="2 (what the app's worker and `report` use): a forked child takes some "
        "sections on Linux; 1: one process",
    )
    parser.add_argument("--json", action="store_true", help="print the raw runs as JSON")
    args = parser.parse_args()
    out: Path = args.out or Path(tempfile.mkdtemp()) / "bench"
    if not (out / "truth.json").exists():
        generate(
            out,
            SynthConfig(
                tasks=args.tasks,
                criteria_per_task=25,
                responses_per_task=3,
                human_graders=3,
                artifacts_per_task=0,
                seed=2,
            ),
        )
    start = time.perf_counter()
    frames = frames_from_data(read_path(out))
    print(f"loaded {len(frames.judgments):,} judgments in {time.perf_counter() - start:.2f} s")
    runs = []
    for n_boot in args.bootstrap:
        for _ in range(args.repeat):
            load = os.getloadavg()[0]
            start, cpu = time.perf_counter(), time.process_time()
            d = compute_dashboard(frames, n_boot=n_boot, processes=args.processes)
            total, cpu = time.perf_counter() - start, time.process_time() - cpu
            runs.append(
                {
                    "n_boot": n_boot,
                    "seconds": total,
                    "cpu_seconds": cpu,
                    "load": load,
                    "sections": d.elapsed,
                }
            )
            print(
                f"\ncompute_dashboard(n_boot={n_boot}): {total:.2f} s wall, {cpu:.2f} s CPU "
                f"(load average {load:.2f})"
            )
            for label, sec in d.elapsed.items():
                print(f"  {label:<24} {sec:6.2f} s")
    if args.json:
        print(json.dumps(runs, indent=2))


if __name__ == "__main__":
    main()
