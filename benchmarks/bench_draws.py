"""Benchmark: the bootstrap's resampling weights against numpy's multinomial sampler.

:func:`gradercal.stats.bootstrap.resampling_weights` counts ``n`` uniform cluster draws per
resample; the baseline, in the same run, is ``Generator.multinomial(n, [1/n] * n,
size=n_boot)`` (what it called before), which draws one binomial per cell. Both give
multinomial(n, 1/n) rows (``tests/stats/test_stats_bootstrap.py`` checks the distribution).
The sizes are those of a dashboard at 750 tasks: every task, and groups of tasks.

Run: ``.venv/bin/python benchmarks/bench_draws.py [--boot 1000] [--repeat 20]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from gradercal.stats.bootstrap import _draw

SIZES = (750, 400, 150, 60, 20)


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    gen = np.random.default_rng(0)
    total_new = total_old = 0.0
    print(f"{'clusters':>8} {'counted draws':>14} {'multinomial':>12} {'ratio':>7}")
    for n in SIZES:
        p = np.full(n, 1.0 / n)
        new = _best(lambda n=n: _draw(gen, n, args.boot), args.repeat)
        old = _best(lambda n=n, p=p: gen.multinomial(n, p, size=args.boot), args.repeat)
        total_new += new
        total_old += old
        print(f"{n:8d} {new * 1e3:11.2f} ms {old * 1e3:9.2f} ms {new / old:6.2f}×")
    print(
        f"{'all':>8} {total_new * 1e3:11.2f} ms {total_old * 1e3:9.2f} ms "
        f"{total_new / total_old:6.2f}×"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
