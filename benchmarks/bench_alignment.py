"""Time the statistics of one held-out evaluation of ``judge align`` (#34, "Speed").

40 held-out tasks × 25 criteria × 3 responses (3,000 units), one candidate against the
baseline, 2,000 task-clustered resamples (the command's default): the goal is ≤ 2 s for
the statistics on top of the judge calls. Also 20 candidates (the largest
``--max-candidates``). Prints the median of 5 runs of each.

    PYTHONPATH=. python benchmarks/bench_alignment.py
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import pandas as pd

from gradercal.analysis.alignment import HeldOutUnits, evaluate_held_out


def main() -> None:
    rng = np.random.default_rng(0)
    n_tasks, k, r = 40, 25, 3
    task = np.repeat(np.arange(n_tasks), k * r)
    resp = np.repeat(np.arange(n_tasks * r), k)
    cons = rng.random(task.size) < 0.5
    df = pd.DataFrame(
        {
            "task_id": [f"t{t}" for t in task],
            "response_id": [f"r{x}" for x in resp],
            "model": [f"m{x % r}" for x in resp],
            "points": rng.integers(-3, 8, task.size),
            "met": cons,
        }
    )
    units = HeldOutUnits.from_frame(df)
    base = np.where(rng.random(task.size) < 0.2, ~cons, cons).astype(float)
    for m in (1, 20):
        cands = {
            f"c{i}": np.where(rng.random(task.size) < 0.15, ~cons, cons).astype(float)
            for i in range(m)
        }
        times = []
        for seed in range(5):
            t = time.perf_counter()
            evaluate_held_out(units, base, cands, n_boot=2000, seed=seed)
            times.append(time.perf_counter() - t)
        print(f"{m:>2} candidate(s), {units.n} units, 2000 resamples: "
              f"median {statistics.median(times):.3f} s")  # fmt: skip


if __name__ == "__main__":
    main()
