"""Coverage of the task-clustered bootstrap intervals by number of tasks (clusters).

The simulation design of ``tests/stats/test_bootstrap_coverage.py`` (tasks of 25 correlated
binary criteria, three experts and a judge; true values from a population of 200,000
tasks). For each number of tasks, ``--studies`` simulated studies; in each, ``--boot``
seeded task resamples (:func:`gradercal.stats.resampling_weights`) and, for each of eight
statistics, three 95 % intervals from the same resamples, all computed by gradercal:

* ``percentile`` — the plain percentile interval (the default before issue #12 §4),
* ``expanded_percentile`` — the default since (:func:`gradercal.stats.bootstrap.interval_levels`),
* ``bca`` — Efron's BCa with the leave-one-task-out jackknife.

The expert statistics (percent agreement, Fleiss' kappa, Gwet's AC1, Krippendorff's alpha)
go through the estimators of :func:`gradercal.stats.clustered_bootstrap`, the judge
statistics (Cohen's kappa, balanced F1, percent agreement, leniency bias against the
experts' majority) through :func:`gradercal.analysis.agreement.comparison_metrics` and
:func:`gradercal.analysis.agreement.percentile_interval`. Prints, per number of tasks and method,
the coverage of each statistic, their mean, the lowest, and the Monte-Carlo standard
error of one statistic's coverage.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bootstrap_coverage.py
[--studies 2000] [--boot 1000] [--tasks 10,15,20,30,40,80,150] [--judge-only]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gradercal.analysis.agreement import comparison_metrics
from gradercal.stats.bootstrap import (
    CiMethod,
    _bca_levels,
    _design,
    _estimator,
    _options,
    _SumEstimator,
    resampling_weights,
)
from gradercal.stats.coefficients import FloatArray
from gradercal.stats.intervals import percentile_interval
from tests.stats.test_bootstrap_coverage import (
    HUMAN_STATISTICS,
    JUDGE_STATISTICS,
    draw_tasks,
    expert_ratings,
    judge_counts,
    population_truth,
)

METHODS: tuple[CiMethod, ...] = ("percentile", "expanded_percentile", "bca")
CI = 0.95


def _metric(name: str, counts: FloatArray) -> FloatArray:
    return np.asarray(comparison_metrics(counts)[name], dtype=np.float64)


def _intervals(
    est: _SumEstimator, point: float, reps: FloatArray, n: int, n_boot: int
) -> dict[str, tuple[float, float] | None]:
    out: dict[str, tuple[float, float] | None] = {}
    for method in ("percentile", "expanded_percentile"):
        b = percentile_interval(
            point,
            reps,
            n_boot=n_boot,
            n_clusters=n,
            ci=CI,
            method=method,
        )
        out[method] = None if b.ci_low is None or b.ci_high is None else (b.ci_low, b.ci_high)
    valid = reps[np.isfinite(reps)]
    levels = _bca_levels(est, valid, point, n, CI)
    out["bca"] = None if isinstance(levels, str) else tuple(np.quantile(valid, levels))
    return out


def run(
    n_tasks: int, n_studies: int, n_boot: int, seed: int, judge_only: bool, truth: dict[str, float]
) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    opts = _options("nominal", None, None, None, True)
    hits: dict[tuple[str, str], int] = {}
    missing = 0
    for _ in range(n_studies):
        experts, judge = draw_tasks(rng, n_tasks)
        w = resampling_weights(n_tasks, n_boot, rng).astype(np.float64)
        series: list[tuple[str, _SumEstimator, float, FloatArray]] = []
        if not judge_only:
            d = _design(expert_ratings(experts), "task", [0.0, 1.0])
            for name in HUMAN_STATISTICS:
                est = _estimator(d, name, opts)
                assert isinstance(est, _SumEstimator)
                point = float(est.evaluate(np.ones((1, n_tasks)))[0])
                series.append((f"experts:{name}", est, point, est.evaluate(w)))
        counts = judge_counts(experts, judge)
        total = comparison_metrics(counts.sum(axis=0))
        reps = comparison_metrics(w @ counts)
        for name in JUDGE_STATISTICS:
            est = _SumEstimator(counts, functools.partial(_metric, name))
            series.append((f"judge:{name}", est, float(total[name]), reps[name]))
        for key, est, point, r in series:
            for method, bounds in _intervals(est, point, r, n_tasks, n_boot).items():
                if bounds is None:
                    missing += 1
                    continue
                hit = bounds[0] <= truth[key] <= bounds[1]
                hits[(key, method)] = hits.get((key, method), 0) + int(hit)
    keys = sorted({k for k, _ in hits}, key=lambda k: (not k.startswith("experts"), k))
    table = {method: {k: hits.get((k, method), 0) / n_studies for k in keys} for method in METHODS}
    return {
        "n_tasks": n_tasks,
        "n_studies": n_studies,
        "n_boot": n_boot,
        "coverage": table,
        "no_interval": missing,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--studies", type=int, default=2000)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--tasks", default="10,15,20,30,40,80,150")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--judge-only", action="store_true", help="only the judge statistics")
    ap.add_argument("--json", action="store_true", help="print the raw results as JSON")
    args = ap.parse_args()
    t0 = time.perf_counter()
    truth = population_truth()
    print(
        f"truth ({time.perf_counter() - t0:.0f} s): "
        + ", ".join(f"{k} {v:.4f}" for k, v in truth.items())
    )
    results = []
    for n in (int(x) for x in args.tasks.split(",")):
        t0 = time.perf_counter()
        res = run(n, args.studies, args.boot, args.seed * 1000 + n, args.judge_only, truth)
        results.append(res)
        se = math.sqrt(0.95 * 0.05 / args.studies) * 100
        print(
            f"\n{n} tasks, {args.studies} studies, {args.boot} resamples ({time.perf_counter() - t0:.0f} s; Monte-Carlo SE of one coverage ≈ {se:.1f} points)"
        )
        keys = list(res["coverage"]["percentile"])
        print("statistic".ljust(30) + "".join(m.rjust(21) for m in METHODS))
        for k in keys:
            print(k.ljust(30) + "".join(f"{res['coverage'][m][k] * 100:21.1f}" for m in METHODS))
        for label, fn in (("mean", np.mean), ("lowest", np.min)):
            print(
                label.ljust(30)
                + "".join(f"{fn(list(res['coverage'][m].values())) * 100:21.1f}" for m in METHODS)
            )
        if res["no_interval"]:
            print(f"(no interval in {res['no_interval']} cases)")
        sys.stdout.flush()
    if args.json:
        print(json.dumps({"truth": truth, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
