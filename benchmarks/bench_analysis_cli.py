"""Each analysis command as a process against the dashboard's time for the same section (issue #18).

On one benchmark database (``--db``, e.g. made by ``bench_scale.py``), in one run:

* the dashboard's sections: one process that loads the frames and runs
  ``compute_dashboard(processes=1, n_boot=…)``, printing its start-up (interpreter,
  imports, ``load_frames``) and each section's time;
* every command (``agreement -j``, ``alttest``, ``impact``, ``estimate``, ``calibrate
  --no-save``, ``health``) with ``--json`` as a process, wall time by ``os.wait4``.

The ratio compares the command with what the dashboard spends to show the same figures
from a cold start: its start-up plus the overview (verdict table) plus the section(s).
Not a test.

    .venv/bin/python benchmarks/bench_analysis_cli.py --db FILE.sqlite [--judge judge] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

_DASHBOARD_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from gradercal.cli.common import open_repo
from gradercal.dashboard import compute_dashboard
repo = open_repo(sys.argv[1])
bench = repo.benchmark(None)
frames = repo.load_frames(bench.name)
t1 = time.perf_counter()
d = compute_dashboard(frames, n_boot=int(sys.argv[2]), processes=1, benchmark=bench.name)
print(json.dumps({"startup": t1 - t0, "sections": d.elapsed}))
"""

#: command → the dashboard sections that compute the same figures.
COMMANDS: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "agreement": (["agreement", "-j", "{judge}"], ("expert agreement", "judges", "pairwise")),
    "alttest": (["alttest", "-j", "{judge}"], ("judges",)),
    "impact": (["impact", "-j", "{judge}"], ("models",)),
    "estimate": (["estimate", "-j", "{judge}"], ("models",)),
    "calibrate": (["calibrate", "-j", "{judge}", "--no-save"], ("calibration",)),
    "health": (["health", "-j", "{judge}"], ("health",)),
}


def _wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)}: {proc.stderr.decode()}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--judge", default="judge")
    parser.add_argument("--bootstrap", type=int, default=1000, help="dashboard resamples")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each (median)")
    args = parser.parse_args()
    py = sys.executable
    dash = []
    for _ in range(args.repeat):
        out = subprocess.run(
            [py, "-c", _DASHBOARD_CHILD, args.db, str(args.bootstrap)],
            capture_output=True, check=True,
        ).stdout.decode()  # fmt: skip
        dash.append(json.loads(out.strip().splitlines()[-1]))
    startup = statistics.median(d["startup"] for d in dash)
    overview = statistics.median(d["sections"]["overview"] for d in dash)
    print(
        f"load average {os.getloadavg()[0]:.2f}; dashboard start-up (interpreter, imports, "
        f"load_frames) {startup:.2f} s, overview {overview:.2f} s"
    )
    print("| command | process | dashboard: start-up + overview + section(s) | ratio | goal |")
    print("|---|---:|---:|---:|---:|")
    for name, (argv, sections) in COMMANDS.items():
        cmd = [py, "-m", "gradercal", *(a.format(judge=args.judge) for a in argv),
               "--db", args.db, "--json"]  # fmt: skip
        wall = statistics.median(_wall(cmd) for _ in range(args.repeat))
        sec = statistics.median(sum(d["sections"].get(s, 0.0) for s in sections) for d in dash)
        base = startup + overview + sec
        print(
            f"| {name} | {wall:.2f} s | {base:.2f} s ({'+'.join(sections)} {sec:.2f} s) | "
            f"{wall / base:.2f} | ≤ 2 |",
            flush=True,
        )


if __name__ == "__main__":
    main()
