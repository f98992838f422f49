"""Judge runner throughput and memory against the loopback chat-completions server.

The server (tests/support/judge_server.py) runs in its own process so that it does not compete
with the client for the GIL; every reply waits ``--latency`` seconds.

* **throughput (client)**: ``--requests`` criterion requests (default 1,000) through
  :class:`~gradercal.judge.runner.JudgeRunner` at ``--concurrency`` (16), verdicts
  discarded. The concurrency-bound ideal is ``requests × latency / concurrency``
  seconds; the score is ideal / measured (goal: ≥ 80%).
* **throughput (end to end)**: the same through the database — a synthetic benchmark
  in a fresh SQLite file, the work list, the request cache lookup, and every verdict
  committed by the writer thread with its provenance.
* **memory**: ``--memory-requests`` requests (20,000) with items generated lazily; RSS
  and tracemalloc's traced size are sampled every 2,000 verdicts. Flat means the last
  samples do not grow with the number of requests.

Usage::

    python benchmarks/bench_judge.py [--requests 1000] [--latency 0.05] [--concurrency 16]
        [--memory-requests 20000] [--memory-latency 0.002] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gradercal.judge import (  # noqa: E402
    DEFAULT_PROMPT,
    JudgeClient,
    JudgeParams,
    JudgeRunner,
    RetryPolicy,
    Verdict,
    WorkItem,
)


def rss_mb() -> float:
    """Resident set size of this process in MB (Linux /proc, else psutil)."""
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 1e6
    except OSError:
        import psutil

        return float(psutil.Process().memory_info().rss / 1e6)


class Server:
    """tests/support/judge_server.py in a child process."""

    def __init__(self, latency: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "judge_server.py"), "--latency", str(latency)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()

    def cpu_seconds(self) -> float:
        """User + system CPU time the server process has used so far."""
        with open(f"/proc/{self.proc.pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


def make_items(n: int) -> Iterator[WorkItem]:
    for i in range(n):
        yield WorkItem(
            ref=i,
            task_id=f"T{i // 25}",
            response_id=f"R{i // 5}",
            criterion_id=f"c{i % 25}",
            response_text=f"Response {i // 5}: the construct has a premature stop codon; "
            "re-sequence the junction and order a fresh plasmid prep. " * 8,
            criterion_text=f"Criterion {i}: mentions the premature stop codon",
            points=5,
            task_prompt="Check the construct in the attached file. " * 10,
        )


def client_for(url: str, concurrency: int, backend: str = "auto") -> JudgeClient:
    return JudgeClient(
        JudgeParams(model="bench-model"),
        base_url=url,
        concurrency=concurrency,
        retry=RetryPolicy(timeout=30.0),
        http_backend=backend,  # type: ignore[arg-type]
    )


async def _run(
    url: str, n: int, concurrency: int, progress: Any = None, backend: str = "auto"
) -> tuple[float, Any]:
    client = client_for(url, concurrency, backend)
    count = 0

    def on_verdict(v: Verdict) -> None:
        nonlocal count
        count += v.status == "ok"

    runner = JudgeRunner(client, DEFAULT_PROMPT, on_verdict=on_verdict, progress=progress)
    async with client:
        # warm the connection pool so connection set-up is not timed
        await asyncio.gather(*(runner._judge(it, {}) for it in make_items(concurrency)))
        start = time.perf_counter()
        stats = await runner.run(make_items(n), total=n)
        elapsed = time.perf_counter() - start
    assert count == n == stats.ok, (count, stats)
    stats.message = client.http_backend
    return elapsed, stats


def throughput_client(
    server: Server, n: int, latency: float, concurrency: int, backend: str
) -> dict[str, Any]:
    cpu0, srv0 = time.process_time(), server.cpu_seconds()
    elapsed, stats = asyncio.run(_run(server.url, n, concurrency, backend=backend))
    cpu, srv = time.process_time() - cpu0, server.cpu_seconds() - srv0
    ideal = n * latency / concurrency
    return {
        "http_backend": stats.message,
        "requests": n,
        "seconds": round(elapsed, 3),
        "requests_per_s": round(n / elapsed, 1),
        "ideal_seconds": round(ideal, 3),
        "share_of_ideal": round(ideal / elapsed, 3),
        "client_cpu_ms_per_request": round(cpu / (n + concurrency) * 1000, 2),
        "server_cpu_ms_per_request": round(srv / (n + concurrency) * 1000, 2),
    }


def throughput_end_to_end(url: str, n: int, latency: float, concurrency: int) -> dict[str, Any]:
    from gradercal.db.judging import JudgeStore, Scope
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database
    from gradercal.formats import read_folder
    from gradercal.synth import SynthConfig, generate

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "bench"
        tasks = max(1, round(n / (25 * 3 * 0.9)))
        generate(
            folder,
            SynthConfig(
                tasks=tasks,
                criteria_per_task=25,
                responses_per_task=3,
                human_graders=1,
                judge=False,
                artifacts_per_task=0,
            ),
        )
        db = open_database(Path(tmp) / "bench.sqlite")
        try:
            Repository(db).import_data(read_folder(folder))
            store = JudgeStore(db)
            params = JudgeParams(model="bench-model")
            info = store.ensure_judge(
                "bench", model="bench-model", prompt=DEFAULT_PROMPT, parameters=params.to_dict()
            )
            start = time.perf_counter()
            items = store.work_items(None, info, Scope(), DEFAULT_PROMPT)[:n]
            run_id = store.start_run(info, model="bench-model", base_url=url, parameters={})
            writer = store.writer(grader_id=info.grader_id, run_id=run_id)
            client = client_for(url, concurrency)
            runner = JudgeRunner(
                client, DEFAULT_PROMPT, on_verdict=writer.submit, cache=store.cache()
            )

            async def main() -> Any:
                async with client:
                    return await runner.run(items, total=len(items))

            stats = asyncio.run(main())
            writer.close()
            elapsed = time.perf_counter() - start
            store.finish_run(run_id, stats)
            assert writer.saved == len(items) == stats.ok
        finally:
            db.dispose()
    ideal = len(items) * latency / concurrency
    return {
        "requests": len(items),
        "seconds": round(elapsed, 3),
        "requests_per_s": round(len(items) / elapsed, 1),
        "ideal_seconds": round(ideal, 3),
        "share_of_ideal": round(ideal / elapsed, 3),
        "commits": writer.batches,
    }


def memory(url: str, n: int, concurrency: int, trace: bool) -> dict[str, Any]:
    samples: list[dict[str, Any]] = []
    step = 2000

    def progress(stats: Any) -> None:
        if stats.done % step == 0:
            row = {"done": stats.done, "rss_mb": round(rss_mb(), 1)}
            if trace:
                row["traced_mb"] = round(tracemalloc.get_traced_memory()[0] / 1e6, 2)
            samples.append(row)

    if trace:
        tracemalloc.start()
    elapsed, _ = asyncio.run(_run(url, n, concurrency, progress))
    if trace:
        tracemalloc.stop()
    half = [s for s in samples if s["done"] >= n // 2]
    growth = half[-1]["rss_mb"] - half[0]["rss_mb"] if len(half) > 1 else 0.0
    out: dict[str, Any] = {
        "requests": n,
        "seconds": round(elapsed, 1),
        "samples": samples,
        "rss_growth_second_half_mb": round(growth, 1),
    }
    if trace and len(half) > 1:
        out["traced_growth_second_half_mb"] = round(half[-1]["traced_mb"] - half[0]["traced_mb"], 2)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--memory-requests", type=int, default=20000)
    ap.add_argument("--memory-latency", type=float, default=0.002)
    ap.add_argument("--no-tracemalloc", action="store_true")
    ap.add_argument(
        "--backends", default="direct,aiohttp,httpx", help="HTTP backends to time (client only)."
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    report: dict[str, Any] = {
        "latency_s": args.latency,
        "concurrency": args.concurrency,
        "cpus": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    server = Server(args.latency)
    try:
        for backend in args.backends.split(","):
            report[f"client_{backend}"] = throughput_client(
                server, args.requests, args.latency, args.concurrency, backend
            )
        report["end_to_end_sqlite"] = throughput_end_to_end(
            server.url, args.requests, args.latency, args.concurrency
        )
    finally:
        server.close()
    if args.memory_requests:
        server = Server(args.memory_latency)
        try:
            report["memory"] = memory(
                server.url, args.memory_requests, args.concurrency, not args.no_tracemalloc
            )
            report["memory"]["latency_s"] = args.memory_latency
        finally:
            server.close()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"loopback server latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}, "
        f"{report['cpus']} CPUs, load average {report['load_average_at_start']}"
    )
    for key in [k for k in report if k.startswith("client_")] + ["end_to_end_sqlite"]:
        r = report[key]
        cpu = ""
        if "client_cpu_ms_per_request" in r:
            cpu = (
                f"; CPU per request: client {r['client_cpu_ms_per_request']} ms, "
                f"server {r['server_cpu_ms_per_request']} ms"
            )
        print(
            f"{key:18} {r['requests']} requests in {r['seconds']:.2f} s "
            f"({r['requests_per_s']:.0f}/s); ideal {r['ideal_seconds']:.2f} s → "
            f"{r['share_of_ideal']:.0%} of the concurrency-bound ideal (goal ≥ 80%){cpu}"
        )
    if "memory" in report:
        mem = report["memory"]
        print(f"memory: {mem['requests']} requests in {mem['seconds']} s")
        for s in mem["samples"]:
            traced = f", traced {s['traced_mb']} MB" if "traced_mb" in s else ""
            print(f"  after {s['done']:>6}: RSS {s['rss_mb']} MB{traced}")
        print(f"  RSS growth over the second half: {mem['rss_growth_second_half_mb']} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
