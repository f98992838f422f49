"""``gradercal report`` against its goals of issue #18, measured side by side in one run.

Goals: the report's time ≤ 1.5× the dashboard's compute time for the same request, and its
peak memory ≤ 2× the frames' size. Each repeat runs, as separate processes:

* ``baseline``: what the goals are measured against. A child reads the same request as
  the report (frames, eras, primary judge, the active calibration, reviews, rounds),
  imports the engines and the chart modules, then times ``compute_dashboard`` with the
  report's ``n_boot`` and ``processes=2`` (wall, and CPU of itself and its forked child).
  It also prints the frames' deep size (``DataFrame.memory_usage(deep=True)`` summed over
  the frames) and its resident memory after the imports and before any data (the
  interpreter's own floor for a process that computes and draws).
* ``report``: ``gradercal report --db DB -o FILE.html --bootstrap N`` end to end,
  measured by ``os.wait4``: wall, user+sys CPU (its forked children included) and peak
  resident memory (``ru_maxrss``: the largest of the process and its children).
* ``pss`` (once per code, after the repeats; ``--no-pss`` skips it): the report again,
  untimed, while a sampler reads every 20 ms the proportional set size (PSS: shared
  pages split between the processes that map them) of its whole process tree and keeps
  the peak: the memory the report really occupies while a forked child runs beside it.
  (Reading ``smaps_rollup`` that often slows the report down, hence a run of its own.)

With ``--before DIR`` (a checkout of other code, e.g. ``git worktree add --detach
/tmp/main main``) every repeat also runs both steps with ``PYTHONPATH=DIR``,
alternating with this checkout so that both see the same machine load, and the HTML of
the two is compared byte for byte (matplotlib's SVG ids are salted by
``svg.hashsalt`` through a private ``MPLCONFIGDIR``, the "Generated …" line is left
out). The load average is recorded before every process.

    .venv/bin/python benchmarks/bench_report.py [--db FILE.sqlite | --out DIR --tasks 750]
        [--bootstrap 1000] [--repeat 3] [--before DIR] [--json]

Not a test: run it by hand, on a quiet machine if possible (2 cores shared by others make
wall times noisy; the CPU columns are steadier).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

#: The baseline child: the report's request, then compute_dashboard alone, timed.
_BASELINE_CHILD = r"""
import json, resource, sys, time

def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")

def cpu():
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

n_boot = int(sys.argv[2])
from gradercal.cli.common import open_repo
from gradercal.dashboard import compute_dashboard, primary_judge
from gradercal.dashboard.compute import preload
preload()
import matplotlib.figure, matplotlib.backends.backend_svg  # what the report draws with
import gradercal.dashboard.charts, gradercal.stats.registry
floor = rss_mib()
from gradercal.db.acceptance import load_round_table
from gradercal.db.calibrations import load_calibration, load_task_reviews
from gradercal.db.eras import load_eras
repo = open_repo(sys.argv[1])
bench = repo.benchmark(None)
frames = repo.load_frames(bench.name)
eras = load_eras(repo, bench.name)
versions = (repo.load_frames(bench.name, "all"), eras) if eras else None
primary = primary_judge(frames, None)
saved = load_calibration(repo, bench.name, primary) if primary is not None else None
params = None if saved is None else dict(saved.params)
reviews = load_task_reviews(repo, bench.name)
rounds = load_round_table(repo.db, bench.name)
size = 0
for name in ("tasks", "criteria", "responses", "judgments", "adjudications"):
    table = getattr(frames, name, None)
    if table is not None:
        size += int(table.memory_usage(deep=True).sum())
loaded = rss_mib()
c0, t0 = cpu(), time.perf_counter()
d = compute_dashboard(
    frames, judge=primary, calibration=params, n_boot=n_boot, seed=0, ci=0.95,
    benchmark=bench.name, processes=2, reviews=reviews, rounds=rounds, versions=versions,
)
t1, c1 = time.perf_counter(), cpu()
print(json.dumps({
    "compute_s": t1 - t0, "compute_cpu_s": c1 - c0, "frames_mib": size / 2**20,
    "floor_mib": floor, "loaded_mib": loaded, "judgments": len(frames.judgments),
}))
"""


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux ``/proc``)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as f:
                    todo += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def _pss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _spawn(cmd: list[str], env: dict[str, str], *, sample: bool = False) -> dict[str, Any]:
    """One child process: wall, user+sys CPU (its children included), peak RSS, stdout,
    and with ``sample`` the peak PSS of its process tree (sampled every 20 ms)."""
    load = os.getloadavg()
    with tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f, env=env)
        peak = [0.0]
        stop = threading.Event()

        def sampler() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], sum(_pss_mib(p) for p in _tree(proc.pid)))
                stop.wait(0.02)

        thread = threading.Thread(target=sampler, daemon=True)
        if sample:
            thread.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        stop.set()
        if sample:
            thread.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out_f.seek(0)
        err_f.seek(0)
        out, err = out_f.read().decode(), err_f.read().decode()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mib": usage.ru_maxrss / 1024,
        "peak_tree_pss_mib": peak[0] if sample else None,
        "load": load[0],
        "stdout": out,
    }


def _html_digest(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r'<p class="meta">Generated [^<]*</p>', "", text, count=1)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _database(args: argparse.Namespace, env: dict[str, str]) -> Path:
    if args.db is not None:
        # a copy: the runs open it (and may upgrade its schema); the original is untouched
        copy = args.out / f"bench_report{args.db.suffix}"
        shutil.copyfile(args.db, copy)
        return copy
    folder, db = args.out / f"b{args.tasks}", args.out / f"b{args.tasks}.sqlite"
    py = sys.executable
    if not (folder / "truth.json").exists() and not (folder / "truth.jsonl").exists():
        _spawn(
            [py, "-m", "gradercal", "samples", "generate", "-o", str(folder),
             "--tasks", str(args.tasks), "--artifacts-per-task", "0", "--seed", "2"],
            env,
        )  # fmt: skip
    if not db.exists():
        _spawn([py, "-m", "gradercal", "import", str(folder), "--db", str(db)], env)
    return db


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main() -> None:
    doc = __doc__ or ""
    parser = argparse.ArgumentParser(
        description=doc.split("\n\n")[0],
        epilog="Prints a table of medians over the repeats; --json adds every run.",
    )
    parser.add_argument("--db", type=Path, help="an existing benchmark database (copied)")
    parser.add_argument("--out", type=Path, help="working folder (default: temporary)")
    parser.add_argument("--tasks", type=int, default=750, help="tasks when generating (750)")
    parser.add_argument(
        "--bootstrap", type=int, default=1000, help="resamples, as report's default (1000)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each step (3)")
    parser.add_argument("--before", type=Path, help="another checkout to compare, alternately")
    parser.add_argument("--no-pss", action="store_true", help="skip the sampled PSS run")
    parser.add_argument("--json", action="store_true", help="also print every run as JSON")
    args = parser.parse_args()
    args.out = args.out or Path(tempfile.mkdtemp(prefix="bench_report_"))
    args.out.mkdir(parents=True, exist_ok=True)
    here = Path(__file__).resolve().parent.parent
    trees = {"after": here}
    if args.before is not None:
        trees = {"before": args.before.resolve(), "after": here}
    mpl = args.out / "mplconfig"
    mpl.mkdir(exist_ok=True)
    # content-hashed SVG ids (else salted at random per run) for the byte comparison
    (mpl / "matplotlibrc").write_text("svg.hashsalt: bench-report\n")
    env = dict(os.environ, MPLCONFIGDIR=str(mpl))
    db = _database(args, env)
    py = sys.executable
    runs: list[dict[str, Any]] = []
    digests: dict[str, set[str]] = {name: set() for name in trees}
    for i in range(args.repeat):
        for name, tree in trees.items():
            tenv = dict(env, PYTHONPATH=str(tree))
            base = _spawn([py, "-c", _BASELINE_CHILD, str(db), str(args.bootstrap)], tenv)
            extra = json.loads(base.pop("stdout").strip().splitlines()[-1])
            runs.append({"code": name, "repeat": i, "step": "baseline", **base, **extra})
            html = args.out / f"report-{name}.html"
            rep = _spawn(
                [py, "-m", "gradercal", "report", "--db", str(db), "-o", str(html),
                 "--bootstrap", str(args.bootstrap)],
                tenv,
            )  # fmt: skip
            rep.pop("stdout")
            digests[name].add(_html_digest(html))
            runs.append({"code": name, "repeat": i, "step": "report", **rep})
            b, r = runs[-2], runs[-1]
            print(
                f"[{name} {i + 1}/{args.repeat}] compute {b['compute_s']:.2f} s "
                f"(cpu {b['compute_cpu_s']:.2f}, load {b['load']:.2f}) | report "
                f"{r['wall_s']:.2f} s (cpu {r['cpu_s']:.2f}, load {r['load']:.2f}), peak RSS "
                f"{r['peak_rss_mib']:.0f} MiB",
                file=sys.stderr,
                flush=True,
            )
    pss: dict[str, float | None] = dict.fromkeys(trees)
    for name, tree in [] if args.no_pss else trees.items():
        html = args.out / f"report-{name}-pss.html"
        cmd = [py, "-m", "gradercal", "report", "--db", str(db), "-o", str(html),
               "--bootstrap", str(args.bootstrap)]  # fmt: skip
        got = _spawn(cmd, dict(env, PYTHONPATH=str(tree)), sample=True)
        pss[name] = got["peak_tree_pss_mib"]
        print(f"[{name} pss] peak tree PSS {pss[name]:.0f} MiB (load {got['load']:.2f})",
              file=sys.stderr, flush=True)  # fmt: skip
    print(f"\nDatabase {db}: {runs[0]['judgments']:,} judgments; --bootstrap {args.bootstrap}; "
          f"medians of {args.repeat} run(s); load average (1 min) "
          f"{min(r['load'] for r in runs):.2f}–{max(r['load'] for r in runs):.2f}.\n")  # fmt: skip
    print(
        "| code | report wall | report CPU | compute wall (baseline) | compute CPU | "
        "× time (wall) | × time (CPU) | report peak RSS | frames (deep) | × frames | "
        "floor (engines imported) | (peak − floor) × frames | peak tree PSS |"
    )
    print("|---|" + "---:|" * 13)
    summary: dict[str, dict[str, float]] = {}
    for name in trees:
        rep = [r for r in runs if r["code"] == name and r["step"] == "report"]
        base = [r for r in runs if r["code"] == name and r["step"] == "baseline"]
        s = {
            "report_s": _median(rep, "wall_s"),
            "report_cpu_s": _median(rep, "cpu_s"),
            "compute_s": _median(base, "compute_s"),
            "compute_cpu_s": _median(base, "compute_cpu_s"),
            "peak_rss_mib": _median(rep, "peak_rss_mib"),
            "peak_tree_pss_mib": pss[name] or float("nan"),
            "frames_mib": _median(base, "frames_mib"),
            "floor_mib": _median(base, "floor_mib"),
        }
        s["time_ratio"] = s["report_s"] / s["compute_s"]
        s["cpu_ratio"] = s["report_cpu_s"] / s["compute_cpu_s"]
        s["memory_ratio"] = s["peak_rss_mib"] / s["frames_mib"]
        s["above_floor_ratio"] = (s["peak_rss_mib"] - s["floor_mib"]) / s["frames_mib"]
        summary[name] = s
        print(
            f"| {name} | {s['report_s']:.2f} s | {s['report_cpu_s']:.2f} s | "
            f"{s['compute_s']:.2f} s | {s['compute_cpu_s']:.2f} s | "
            f"**{s['time_ratio']:.2f}** | {s['cpu_ratio']:.2f} | {s['peak_rss_mib']:.0f} MiB | "
            f"{s['frames_mib']:.1f} MiB | **{s['memory_ratio']:.1f}** | "
            f"{s['floor_mib']:.0f} MiB | {s['above_floor_ratio']:.1f} | "
            f"{s['peak_tree_pss_mib']:.0f} MiB |"
        )
    print("\nGoals: × time (wall) ≤ 1.5, × frames ≤ 2.")
    if len(trees) == 2:
        # each repeat ran before and after back to back: their differences are steadier
        # than the medians when the load moves
        def paired(key: str) -> str:
            d = [
                a[key] - b[key]
                for a, b in zip(
                    (r for r in runs if r["code"] == "after" and r["step"] == "report"),
                    (r for r in runs if r["code"] == "before" and r["step"] == "report"),
                    strict=True,
                )
            ]
            return f"median {statistics.median(d):+.2f} s [{min(d):+.2f}, {max(d):+.2f}]"

        print(f"Report, after − before per repeat: wall {paired('wall_s')}; "
              f"CPU {paired('cpu_s')}.")  # fmt: skip
        same = digests["before"] == digests["after"] and len(digests["after"]) == 1
        print(f"HTML before and after byte-identical (timestamp line aside): {same}")
    elif len(digests["after"]) != 1:
        print("warning: the HTML differed between repeats")
    if args.json:
        print(json.dumps({"summary": summary, "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
