"""Estimates with inverse-probability weights against today's, and ``assign --strategy active``,
at the scale of a 750-task benchmark (issue #35: weights ≤ 1.2× today's time; assign ≤ 5 s).

Generates (once, into ``--out``) a synthetic benchmark of 750 tasks × 10 criteria × 3
responses, one expert per response (overlap 1) and a judge with confidences, loads it with
``frames_from_data`` and times ``estimate_report`` as ``gradercal estimate`` runs it:
uniform (today's path) and active (every expert-graded response given an inclusion
probability, in two rounds). Median of ``--repeat`` runs each, and their ratio. Then imports
the benchmark into a fresh SQLite database without its expert grades and times
``assign_active`` (budget 150, two graders) — the whole command's work but the process
start — once with the judge's verdicts only (confidences at face value) and once with
every expert grade present (the error model fitted on them: the frames are loaded). Not a test: run it by hand and report the numbers.

    .venv/bin/python benchmarks/bench_estimate_weights.py [--out DIR] [--tasks 750]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from gradercal.analysis.estimate import estimate_report
from gradercal.formats import read_path
from gradercal.frames import frames_from_data
from gradercal.synth import SynthConfig, generate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="benchmark folder (default: a temporary one)")
    parser.add_argument("--tasks", type=int, default=750)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    out: Path = args.out or Path(tempfile.mkdtemp()) / "bench"
    if not (out / "truth.json").exists():
        generate(
            out,
            SynthConfig(
                tasks=args.tasks,
                criteria_per_task=10,
                responses_per_task=3,
                human_graders=3,
                overlap=1,
                artifacts_per_task=0,
                seed=4,
            ),
        )
    frames = frames_from_data(read_path(out))
    judge = "judge"
    ids = sorted(set(frames.responses["response_id"]))
    rng = np.random.default_rng(0)
    inclusion = {r: float(p) for r, p in zip(ids, rng.uniform(0.05, 1.0, len(ids)), strict=True)}
    rounds = {r: int(k) for r, k in zip(ids, rng.integers(1, 3, len(ids)), strict=True)}

    def timed(**kw: object) -> float:
        runs = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            rep = estimate_report(frames, judge, **kw)  # type: ignore[arg-type]
            runs.append(time.perf_counter() - start)
        assert rep["design"] == ("active" if kw else "uniform")
        return statistics.median(runs)

    timed()  # warm the imports
    uniform = timed()
    active = timed(inclusion=inclusion, rounds=rounds)
    print(f"estimate_report uniform (today)   {uniform:7.3f} s")
    print(f"estimate_report active (weights)  {active:7.3f} s")
    print(f"ratio                             {active / uniform:7.3f}")

    import dataclasses

    from gradercal.db.assignments import assign_active
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database

    full = read_path(out)
    for label, data in (
        (
            "judge only",
            dataclasses.replace(full, judgments=[j for j in full.judgments if j.grader == judge]),
        ),
        ("with every expert grade: the error model fitted on them", full),
    ):
        db_path = Path(tempfile.mkdtemp()) / "b.sqlite"
        db = open_database(str(db_path))
        try:
            Repository(db).import_data(data)
            if data is full:  # the grades count as a pilot once something was assigned
                assign_active(db, ["ana", "ben"], 1, 10, seed=0)
            start = time.perf_counter()
            _report, summary = assign_active(db, ["ana", "ben"], 1, 150, seed=1)
            took = time.perf_counter() - start
        finally:
            db.dispose()
        print(
            f"assign_active at {args.tasks} tasks, {label} ({summary['n_candidates']} "
            f"candidates, drew {summary['n_assigned']}, model from "
            f"{summary['error_model_source']})  {took:7.3f} s"
        )


if __name__ == "__main__":
    main()
