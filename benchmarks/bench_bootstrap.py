"""Benchmark: task-clustered bootstrap on sufficient statistics vs naive recomputation.

Synthetic binary verdicts at benchmark scale (750 tasks × 25 criteria × 3 responses =
56,250 units, 4 raters: three experts and a judge, ~8 % of ratings missing). Computes a
2,000-resample task-clustered bootstrap of Krippendorff's alpha (nominal, all raters),
Cohen's kappa and balanced F1 (judge vs expert ``h1``) with
:func:`gradercal.stats.clustered_bootstrap`, then times a naive loop that rebuilds each
resample as a DataFrame and recomputes the three statistics with the public functions of
:mod:`gradercal.stats.coefficients` (50 resamples, extrapolated to 2,000). Prints both
times and their ratio (goal ≥ 20×), and checks that

* the bootstrap's point estimates equal the direct computation, and
* the naive per-resample values equal the fast ones for the same resampling weights.

Run: ``.venv/bin/python benchmarks/bench_bootstrap.py [--boot 2000] [--naive 50]``.
Exits 1 if a check fails.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd

from gradercal.stats import (
    balanced_f1,
    bootstrap_replicates,
    cluster_labels,
    clustered_bootstrap,
    cohen_kappa,
    krippendorff_alpha,
    resampling_weights,
)

N_TASKS = 750
N_CRITERIA = 25
N_RESPONSES = 3
RATERS = ("h1", "h2", "h3", "judge")
STATISTICS = ("krippendorff_alpha", "cohen_kappa", "balanced_f1")
CATEGORIES = [0, 1]
JUDGE, REFERENCE = "judge", "h1"


def synthetic_ratings(seed: int = 7) -> pd.DataFrame:
    """Correlated binary verdicts: a latent truth per unit, task-level difficulty."""
    rng = np.random.default_rng(seed)
    n_units = N_TASKS * N_CRITERIA * N_RESPONSES
    task = np.repeat(np.arange(N_TASKS), N_CRITERIA * N_RESPONSES)
    difficulty = rng.beta(1.5, 10.0, size=N_TASKS)[task]  # task-level error rate
    truth = rng.random(n_units) < rng.beta(4.0, 3.0, size=N_TASKS)[task]
    frames = []
    for r, name in enumerate(RATERS):
        error = difficulty * (1.3 if name == "judge" else 0.8 + 0.1 * r)
        flip = rng.random(n_units) < np.clip(error, 0.0, 0.9)
        value = (truth ^ flip).astype(np.int64)
        keep = rng.random(n_units) >= 0.08
        frames.append(
            pd.DataFrame(
                {
                    "unit": np.arange(n_units)[keep],
                    "rater": name,
                    "value": value[keep],
                    "task": task[keep],
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def naive_statistics(df: pd.DataFrame) -> dict[str, float | None]:
    """The three statistics recomputed from scratch with the public functions."""
    return {
        "krippendorff_alpha": krippendorff_alpha(df, level="nominal", categories=CATEGORIES).value,
        "cohen_kappa": cohen_kappa(df, raters=(JUDGE, REFERENCE), categories=CATEGORIES).value,
        "balanced_f1": balanced_f1(
            df, judge=JUDGE, reference=REFERENCE, positive=1, categories=CATEGORIES
        ).value,
    }


def naive_resample(df: pd.DataFrame, rows_of: list[np.ndarray], counts: np.ndarray) -> pd.DataFrame:
    """The resampled ratings: cluster ``c`` copied ``counts[c]`` times, units renamed per copy."""
    drawn = np.flatnonzero(counts)
    rows = np.concatenate([np.tile(rows_of[c], int(counts[c])) for c in drawn])
    copy = np.concatenate([np.repeat(np.arange(int(counts[c])), len(rows_of[c])) for c in drawn])
    out = df.iloc[rows].reset_index(drop=True)
    out["unit"] = out["unit"].to_numpy() * (int(counts.max()) + 1) + copy
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boot", type=int, default=2000, help="bootstrap resamples")
    parser.add_argument("--naive", type=int, default=50, help="naive resamples to time")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    t0 = time.perf_counter()
    df = synthetic_ratings()
    n_units = df["unit"].nunique()
    print(
        f"data: {N_TASKS} tasks, {n_units} units, {len(RATERS)} raters, {len(df)} ratings "
        f"(built in {time.perf_counter() - t0:.1f} s)"
    )

    t0 = time.perf_counter()
    fast = clustered_bootstrap(
        df,
        "task",
        STATISTICS,
        n_boot=args.boot,
        seed=args.seed,
        categories=CATEGORIES,
        judge=JUDGE,
        reference=REFERENCE,
        positive=1,
    )
    fast_time = time.perf_counter() - t0
    print(f"\nfast clustered bootstrap, {args.boot} resamples: {fast_time:.2f} s")
    for name, res in fast.items():
        print(
            f"  {name:<20} {res.value:.4f}  95% CI [{res.ci_low:.4f}, {res.ci_high:.4f}]"
            f"  ({res.n_valid} valid resamples)"
        )

    ok = True
    direct = naive_statistics(df)
    n_clusters = fast[STATISTICS[0]].n_clusters
    at_one = bootstrap_replicates(
        df,
        STATISTICS,
        np.ones((1, n_clusters)),
        cluster_col="task",
        categories=CATEGORIES,
        judge=JUDGE,
        reference=REFERENCE,
        positive=1,
    )
    for name in STATISTICS:
        own = float(at_one[name][0])
        ref = direct[name]
        assert ref is not None
        diff = abs(own - ref)
        same = diff <= 1e-12 * max(1.0, abs(ref))
        ok &= same
        print(
            f"  point estimate {name}: sufficient statistics {own!r}, direct {ref!r}, "
            f"|diff| = {diff:.1e} -> {'identical' if same else 'DIFFERENT'}"
        )

    # Naive loop on the same resampling weights (the first --naive rows).
    labels = cluster_labels(df, "task")
    position = {label: i for i, label in enumerate(labels)}
    codes = df["task"].map(position).to_numpy()
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(labels) + 1))
    rows_of = [order[bounds[i] : bounds[i + 1]] for i in range(len(labels))]
    weights = resampling_weights(len(labels), args.boot, args.seed)

    t0 = time.perf_counter()
    naive_values = {name: np.empty(args.naive) for name in STATISTICS}
    for b in range(args.naive):
        values = naive_statistics(naive_resample(df, rows_of, weights[b]))
        for name in STATISTICS:
            v = values[name]
            naive_values[name][b] = np.nan if v is None else v
    naive_time = time.perf_counter() - t0
    naive_total = naive_time / args.naive * args.boot
    print(
        f"\nnaive recomputation: {args.naive} resamples in {naive_time:.1f} s "
        f"({naive_time / args.naive:.3f} s each) -> {naive_total:.0f} s for {args.boot}"
    )

    fast_values = bootstrap_replicates(
        df,
        STATISTICS,
        weights[: args.naive],
        cluster_col="task",
        categories=CATEGORIES,
        judge=JUDGE,
        reference=REFERENCE,
        positive=1,
    )
    for name in STATISTICS:
        diff = float(np.max(np.abs(fast_values[name] - naive_values[name])))
        same = diff <= 1e-12
        ok &= same
        print(
            f"  per-resample {name}: max |fast - naive| = {diff:.2e} -> "
            f"{'identical' if same else 'DIFFERENT'}"
        )

    ratio = naive_total / fast_time
    print(f"\nspeed-up: {ratio:.0f}x (goal >= 20x) -> {'ok' if ratio >= 20 else 'BELOW GOAL'}")
    ok &= ratio >= 20
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
