"""Client CPU of ``judge run --batch`` against the online runner, on the same 3,000 items.

Both paths run end to end in this process against the loopback server
(tests/support/judge_server.py, in its own process so its work is not counted): a synthetic
benchmark in a fresh SQLite file each, the work list, the request cache lookup, every
verdict committed with its provenance.

* **online**: :class:`~gradercal.judge.runner.JudgeRunner` at ``--concurrency`` (16), the
  writer thread committing verdicts as they come;
* **batch**: :class:`~gradercal.judge.batch.BatchJudge` with the database store: the
  JSONL built and uploaded, the batch created and polled (every ``--poll`` seconds), the
  output downloaded and its verdicts committed a chunk at a time.

The figure is the process's CPU time (user + system, every thread) of each path; the
goal of issue #32 is batch ≤ 1.2 × online. Wall time is reported too (the batch's is
mostly the server's, plus the polling interval).

Usage::

    python benchmarks/bench_judge_batch.py [--items 3000] [--latency 0.002] [--json]
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gradercal.db.judge_batch import DbBatchStore  # noqa: E402
from gradercal.db.judging import JudgeStore, Scope  # noqa: E402
from gradercal.db.repo import Repository  # noqa: E402
from gradercal.db.session import open_database  # noqa: E402
from gradercal.formats import read_folder  # noqa: E402
from gradercal.judge import DEFAULT_PROMPT, JudgeClient, JudgeParams, RetryPolicy  # noqa: E402
from gradercal.judge.batch import BatchJudge, OpenAIBatchAPI  # noqa: E402
from gradercal.judge.pricing import Price  # noqa: E402
from gradercal.synth import SynthConfig, generate  # noqa: E402

PRICE = Price(0.15, 0.60)


class Server:
    """tests/support/judge_server.py in a child process."""

    def __init__(self, latency: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "support" / "judge_server.py"),
             "--latency", str(latency)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


def make_db(folder: Path, path: Path) -> str:
    db = open_database(path)
    try:
        Repository(db).import_data(read_folder(folder))
    finally:
        db.dispose()
    return str(path)


def cpu() -> float:
    t = os.times()
    return t.user + t.system


def online(db_path: str, url: str, concurrency: int) -> dict[str, Any]:
    store = JudgeStore(open_database(db_path))
    try:
        params = JudgeParams(model="bench-model")
        info = store.ensure_judge(
            "bench", model="bench-model", prompt=DEFAULT_PROMPT, parameters=params.to_dict()
        )
        c0, w0 = cpu(), time.perf_counter()
        items = store.work_items(None, info, Scope(), DEFAULT_PROMPT)
        client = JudgeClient(
            params, base_url=url, concurrency=concurrency, retry=RetryPolicy(timeout=60)
        )
        run = store.open_run(info, DEFAULT_PROMPT, client, record={"kind": "run"}, price=PRICE)

        async def main() -> Any:
            async with client:
                return await run.runner.run(items, total=len(items))

        asyncio.run(main())
        stats = run.finish()
        used, wall = cpu() - c0, time.perf_counter() - w0
        assert stats.ok == len(items) == run.writer.saved, stats
        return {"items": len(items), "cpu_s": round(used, 3), "wall_s": round(wall, 3),
                "cost_usd": round(stats.cost_usd, 6)}  # fmt: skip
    finally:
        store.db.dispose()


def batch(db_path: str, url: str, poll: float) -> dict[str, Any]:
    store = JudgeStore(open_database(db_path))
    try:
        params = JudgeParams(model="bench-model")
        info = store.ensure_judge(
            "bench", model="bench-model", prompt=DEFAULT_PROMPT, parameters=params.to_dict()
        )
        c0, w0 = cpu(), time.perf_counter()
        total = len(store.work_items(None, info, Scope(), DEFAULT_PROMPT))
        client = JudgeClient(params, base_url=url)
        run_id = store.start_run(info, model="bench-model", base_url=url,
                                 parameters={"kind": "batch"})  # fmt: skip
        bstore = DbBatchStore(store, info, run_id, benchmark=None, scope=Scope(),
                              prompt=DEFAULT_PROMPT, model="bench-model")  # fmt: skip
        api = OpenAIBatchAPI(base_url=url, api_key=None, timeout=120)
        polls = 0

        def progress(_p: Any) -> None:
            nonlocal polls
            polls += 1

        judge = BatchJudge(client, DEFAULT_PROMPT, api, bstore, price=PRICE,
                           poll_interval=poll, progress=progress, run_id=run_id)  # fmt: skip
        stats = judge.run()
        api.close()
        store.finish_run(run_id, stats)
        used, wall = cpu() - c0, time.perf_counter() - w0
        assert stats.ok == total, stats
        return {"items": total, "cpu_s": round(used, 3), "wall_s": round(wall, 3),
                "polls": polls, "cost_usd": round(stats.cost_usd, 6)}  # fmt: skip
    finally:
        store.db.dispose()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=3000, help="About this many (whole tasks).")
    ap.add_argument("--latency", type=float, default=0.002)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--poll", type=float, default=0.5, help="Seconds between batch polls.")
    ap.add_argument("--repeats", type=int, default=2, help="Alternating runs of each path.")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    report: dict[str, Any] = {
        "items": args.items,
        "cpus": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "online": [],
        "batch": [],
    }
    server = Server(args.latency)
    # what each path loads on first use (aiohttp for the online client, the SDK's sync
    # client for the Batch API) is loaded before anything is timed
    import aiohttp  # noqa: F401

    OpenAIBatchAPI(base_url=server.url, api_key=None).close()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "bench"
            # 25 criteria x 3 responses per task, a few criteria auto: ≈ 74.3 items a task
            tasks = round(args.items / 74.3)
            generate(folder, SynthConfig(tasks=tasks, criteria_per_task=25, responses_per_task=3,
                                         human_graders=1, judge=False, artifacts_per_task=0))  # fmt: skip
            for r in range(args.repeats):
                a = make_db(folder, Path(tmp) / f"online{r}.sqlite")
                b = make_db(folder, Path(tmp) / f"batch{r}.sqlite")
                report["online"].append(online(a, server.url, args.concurrency))
                report["batch"].append(batch(b, server.url, args.poll))
    finally:
        server.close()
    best_on = min(x["cpu_s"] for x in report["online"])
    best_b = min(x["cpu_s"] for x in report["batch"])
    report["ratio_batch_over_online_cpu"] = round(best_b / best_on, 3)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{report['items']} items, {report['cpus']} CPUs, load {report['load_average_at_start']}")
    for key in ("online", "batch"):
        for x in report[key]:
            print(f"  {key:6} {x['items']} items: CPU {x['cpu_s']:.2f} s, wall {x['wall_s']:.2f} s")
    print(f"client CPU, batch / online (best of {args.repeats}): "
          f"{report['ratio_batch_over_online_cpu']:.2f}x (goal ≤ 1.2x)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
