"""Wall-clock time of ``gradercal plan`` at 750 tasks (issue #35: ≤ 30 s on this machine).

Generates (once, into ``--out``) a synthetic benchmark of 750 tasks × 25 criteria × 3
responses whose first 60 tasks are graded by 3 experts (a pilot) and every response by the
judge, then times the pilot fit and the default plan (10 task counts × experts 1, 3, 5,
200 simulations per design) in this process, reporting wall time, CPU time and the
machine's load, and the ratio to the 30 s goal. Not a test: run it by hand.

    .venv/bin/python benchmarks/bench_plan.py [--out DIR] [--sims 200]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from gradercal.analysis.planning import fit_pilot, plan
from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from gradercal.synth import SynthConfig, generate

GOAL_S = 30.0


def _pilot(out: Path, tasks: int) -> Frames:
    if not (out / "truth.json").exists():
        generate(
            out,
            SynthConfig(
                tasks=tasks,
                criteria_per_task=25,
                responses_per_task=3,
                artifacts_per_task=0,
                seed=7,
            ),
        )
    full = frames_from_data(read_path(out))
    keep = set(full.tasks["task_id"].to_numpy(object)[:60])
    task_of = dict(zip(full.responses["response_id"], full.responses["task_id"], strict=True))
    j = full.judgments
    kept = j.loc[(j["grader_kind"] != "human") | j["response_id"].map(task_of).isin(keep)]
    return Frames(
        full.pass_threshold,
        full.tasks,
        full.criteria,
        full.responses,
        kept.reset_index(drop=True),
        full.adjudications,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="benchmark folder (default: a temporary one)")
    parser.add_argument("--tasks", type=int, default=750)
    parser.add_argument("--sims", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    frames = _pilot(args.out or Path(tempfile.mkdtemp()) / "bench", args.tasks)
    for _ in range(args.repeat):
        load = os.getloadavg()[0]
        w0, c0 = time.perf_counter(), time.process_time()
        model = fit_pilot(frames, "judge")
        w1, c1 = time.perf_counter(), time.process_time()
        result = plan(model, n_sims=args.sims)
        w2, c2 = time.perf_counter(), time.process_time()
        wall = w2 - w0
        print(
            f"fit {w1 - w0:5.2f} s (cpu {c1 - c0:5.2f}); plan {len(result.designs)} designs × "
            f"{args.sims} sims {w2 - w1:6.2f} s (cpu {c2 - c1:6.2f}); total {wall:6.2f} s = "
            f"{wall / GOAL_S:.2f}× the {GOAL_S:g} s goal (load {load:.1f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
