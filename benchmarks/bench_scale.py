"""How import, the dashboard and ``gradercal report`` grow with the benchmark (issue #18).

For each scale (1× = 750 tasks × 25 criteria × 3 responses, 3 experts and a judge,
≈ 222k judgments) it generates the benchmark once into ``--out`` (``--artifacts-per-task
0``), then runs as separate processes, each measured by ``os.wait4`` (wall time and the
child's peak resident memory, ``ru_maxrss``; a forked grandchild counts if it is larger):

* ``import``: ``gradercal import`` into a fresh SQLite file (kept for the next steps);
* ``dashboard``: what the window's worker does, headless — preload, ``load_frames``,
  ``compute_dashboard(processes=2)`` at the report's 1,000 resamples; the child also
  prints its phases (load, compute) and the frames' size;
* ``report``: ``gradercal report -o FILE.html`` end to end.

It prints one table (seconds and peak MiB per step and scale, with the growth against
1×) and, with ``--json``, the raw runs. Not a test: run it by hand.

    .venv/bin/python benchmarks/bench_scale.py [--out DIR] [--scales 1 3 10] [--steps import dashboard report]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: The dashboard step's child: the worker's path without Qt.
_DASHBOARD_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from gradercal.cli.common import open_repo
from gradercal.dashboard import compute_dashboard
from gradercal.dashboard.compute import preload
preload()
t1 = time.perf_counter()
repo = open_repo(sys.argv[1])
bench = repo.benchmark(None)
frames = repo.load_frames(bench.name)
t2 = time.perf_counter()
size = 0
for name in ("tasks", "criteria", "responses", "judgments", "adjudications"):
    table = getattr(frames, name, None)
    if table is not None:
        size += int(table.memory_usage(deep=True).sum())
d = compute_dashboard(frames, n_boot=1000, processes=2, benchmark=bench.name)
t3 = time.perf_counter()
print(json.dumps({"imports": t1 - t0, "load": t2 - t1, "compute": t3 - t2,
                  "frames_mib": size / 2**20, "judgments": len(frames.judgments)}))
"""


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """``(seconds, peak MiB, stdout)`` of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read().decode()
    err = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err}")
    return seconds, usage.ru_maxrss / 1024, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="folder of the benchmarks (default: temporary)")
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 3, 10])
    parser.add_argument(
        "--steps", nargs="+", default=["import", "dashboard", "report"],
        choices=["import", "dashboard", "report"],
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the raw runs as JSON")
    args = parser.parse_args()
    out: Path = args.out or Path(tempfile.mkdtemp())
    out.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    env = dict(os.environ)
    runs: list[dict[str, Any]] = []
    for scale in args.scales:
        tasks = 750 * scale
        folder, db = out / f"b{tasks}", out / f"b{tasks}.sqlite"
        if not (folder / "truth.json").exists() and not (folder / "truth.jsonl").exists():
            _run(
                [py, "-m", "gradercal", "samples", "generate", "-o", str(folder),
                 "--tasks", str(tasks), "--artifacts-per-task", "0", "--seed", "2"],
                env,
            )  # fmt: skip
        for step in args.steps:
            load = os.getloadavg()[0]
            extra: dict[str, Any] = {}
            if step == "import":
                fresh = out / f"b{tasks}.import.sqlite"
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{fresh}{suffix}").unlink(missing_ok=True)
                sec, mib, _ = _run(
                    [py, "-m", "gradercal", "import", "--db", str(fresh), str(folder)], env
                )
                if not db.exists():
                    fresh.rename(db)
            elif step == "dashboard":
                sec, mib, text = _run([py, "-c", _DASHBOARD_CHILD, str(db)], env)
                extra = json.loads(text.strip().splitlines()[-1])
            else:
                html = out / f"b{tasks}.html"
                sec, mib, _ = _run(
                    [py, "-m", "gradercal", "report", "--db", str(db), "-o", str(html)], env
                )
            run = {"scale": scale, "step": step, "seconds": sec, "peak_mib": mib, "load": load}
            runs.append({**run, **extra})
            print(
                f"{scale:>3}× {step:<10} {sec:8.1f} s  peak {mib:7.0f} MiB  (load {load:.2f})"
                + "".join(f"  {k} {v:.2f}" for k, v in extra.items() if isinstance(v, float)),
                flush=True,
            )
    base = {r["step"]: r for r in runs if r["scale"] == args.scales[0]}
    print(f"\n| step | scale | time | × time of {args.scales[0]}× | peak memory | × memory |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in runs:
        b = base[r["step"]]
        print(
            f"| {r['step']} | {r['scale']}× | {r['seconds']:.1f} s | "
            f"{r['seconds'] / b['seconds']:.1f} | {r['peak_mib']:,.0f} MiB | "
            f"{r['peak_mib'] / b['peak_mib']:.1f} |"
        )
    # Issue #18's report goals, per scale: time ≤ 1.5× the dashboard's compute, peak
    # memory ≤ 2× the frames (pandas' deep size of the loaded tables).
    for scale in args.scales:
        got = {r["step"]: r for r in runs if r["scale"] == scale}
        if "dashboard" in got and "report" in got:
            d, rep = got["dashboard"], got["report"]
            print(
                f"{scale}×: report {rep['seconds']:.1f} s ÷ dashboard compute "
                f"{d['compute']:.1f} s = {rep['seconds'] / d['compute']:.2f} (goal ≤ 1.5); "
                f"report peak {rep['peak_mib']:.0f} MiB ÷ frames {d['frames_mib']:.0f} MiB = "
                f"{rep['peak_mib'] / d['frames_mib']:.1f} (goal ≤ 2)"
            )
    if args.json:
        print(json.dumps(runs, indent=2))


if __name__ == "__main__":
    main()
