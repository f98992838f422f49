"""``ForkedCall.result()`` against a bare fork whose parent waits for the child's exit (#33).

The report and the dashboard's worker fork children that each hold a copy-on-write view
of a large process. A child that leaves has that copy unmapped, which takes time in
proportion to the pages it wrote. The baseline here is the plain pattern — fork, the child
writes its pickled result and exits, the parent reads until the pipe closes (which it does
only as the child's exit ends) and reaps it. ``ForkedCall`` closes the pipe once the
result is written and reaps the child in a thread, so the parent goes on while the child
exits.

The parent holds ``--mb`` MiB of touched memory and the child writes one element per
page of it (the worst case: every page copied), as a section child writes part of what it
inherits. Each repeat times both, in alternating order; medians and their ratio are
printed with the load average.

    .venv/bin/python benchmarks/bench_forked_exit.py [--mb 800] [--repeat 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from gradercal._util.forked import ForkedCall


def bare_fork(fn: Callable[[], Any]) -> Any:
    """Fork, send ``fn()`` pickled, exit; read until the pipe closes, reap."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        data = memoryview(pickle.dumps(fn()))
        while data:
            data = data[os.write(write_fd, data) :]
        os._exit(0)
    os.close(write_fd)
    chunks = []
    with os.fdopen(read_fd, "rb", buffering=0) as stream:
        while chunk := stream.read(1 << 20):
            chunks.append(chunk)
    os.waitpid(pid, 0)
    return pickle.loads(b"".join(chunks))


def forked_call(fn: Callable[[], Any]) -> Any:
    call = ForkedCall(fn)
    try:
        return call.result()
    finally:
        call.kill()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=800, help="the parent's touched memory (MiB)")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--json", action="store_true", help="print the medians as JSON")
    args = ap.parse_args()
    big = np.ones(args.mb * 2**20 // 8)

    def child() -> int:
        big[::512] += 1.0  # one float64 per 4 KiB page: every page copied
        return 1

    times: dict[str, list[float]] = {"bare fork": [], "ForkedCall": []}
    runs = [("bare fork", bare_fork), ("ForkedCall", forked_call)]
    for i in range(args.repeat):
        for name, run in runs if i % 2 == 0 else runs[::-1]:
            t0 = time.perf_counter()
            assert run(child) == 1
            times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["ForkedCall"] / med["bare fork"]
    if args.json:
        print(json.dumps({"mb": args.mb, "median_s": med, "ratio": ratio}))
        return 0
    print(f"parent {args.mb} MiB, {args.repeat} repeats, load {os.getloadavg()[0]:.2f}")
    for name, value in med.items():
        print(f"  {name:11s} median {1000 * value:7.1f} ms")
    print(f"  ForkedCall / bare fork: {ratio:.2f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
