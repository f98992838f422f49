"""Wall-clock time of the agreement and calibration engine at the scale of a large benchmark.

Generates (once, into ``--out``) a synthetic benchmark of 750 tasks × 25 criteria × 3
responses graded by 3 experts and a judge (about 222,000 judgments), loads it with
``frames_from_data`` and times each analysis the CLI runs, with the CLI's default
bootstrap sizes. Not a test: run it by hand and report the numbers.

    .venv/bin/python benchmarks/bench_agreement.py [--out DIR] [--tasks 750]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gradercal.analysis import agreement, alt_test, calibration, estimate, health, impact
from gradercal.formats import read_path
from gradercal.frames import frames_from_data
from gradercal.synth import SynthConfig, generate


def _time(label: str, fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - start
    print(f"{label:<44} {elapsed:7.2f} s", flush=True)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="benchmark folder (default: a temporary one)")
    parser.add_argument("--tasks", type=int, default=750)
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
    print(
        f"{'load ' + str(len(frames.judgments)) + ' judgments':<44} "
        f"{time.perf_counter() - start:7.2f} s"
    )
    j = "judge"
    _time(
        "agreement (humans + judge, 2000 resamples)",
        lambda: agreement.agreement_report(frames, judge=j, n_boot=2000),
    )
    _time(
        "agreement --by tag (2000 resamples)",
        lambda: agreement.group_agreement(frames, "tag", judge=j, n_boot=2000),
    )
    _time(
        "agreement --by criterion",
        lambda: agreement.group_agreement(frames, "criterion", judge=j, n_boot=0),
    )
    _time("alttest", lambda: alt_test.alt_test_frames(frames, j))
    for method in calibration.METHODS:
        _time(
            f"calibrate --method {method} (1000 resamples)",
            lambda m=method: calibration.fit_calibration(frames, j, m, n_boot=1000),
        )
    _time("impact (2000 resamples)", lambda: impact.impact_report(frames, j, n_boot=2000))
    _time("estimate", lambda: estimate.estimate_report(frames, j))
    _time("health --limit 50", lambda: health.health_report(frames, j, limit=50))


if __name__ == "__main__":
    main()
