"""Time one candidate's held-out evaluation in ``judge align`` (#34, "Speed").

40 held-out tasks × 25 criteria × 3 responses (3,000 judge calls) of a synthetic benchmark
in a fresh SQLite file, judged by one candidate prompt through the very path ``judge
align`` takes (``gradercal.cli.judge._launch``: a recorded run, the reply cache looked up,
verdicts collected, not stored as judgments) against the loopback server
(tests/support/judge_server.py, in its own process so that it does not compete with the
client for the GIL) answering every request after ``--latency`` seconds (0.2). The goal:
wall time ≤ 1.3 × the concurrency-bound ideal ``calls × latency / concurrency``. Then the
statistics on top (``evaluate_held_out``: paired kappa and balanced accuracy with 2,000
task-clustered resamples, Holm; and the alt-test is not included), goal ≤ 2 s.

    PYTHONPATH=. python benchmarks/bench_align_eval.py [--latency 0.2] [--concurrency 32]
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    import numpy as np

    from gradercal.analysis.alignment import HeldOutUnits, consensus_units, evaluate_held_out
    from gradercal.cli.judge import _Connection, _launch
    from gradercal.db.judging import JudgeStore, Scope
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database
    from gradercal.formats import read_folder
    from gradercal.judge import DEFAULT_PROMPT, JudgeParams
    from gradercal.synth import SynthConfig, generate

    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/support/judge_server.py"), "--latency",
         str(args.latency)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    out: dict[str, Any] = {"latency": args.latency, "concurrency": args.concurrency}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "bench"
            generate(
                folder,
                SynthConfig(
                    tasks=40, criteria_per_task=25, responses_per_task=3, human_graders=2,
                    judge=False, artifacts_per_task=0,
                ),
            )  # fmt: skip
            db = open_database(Path(tmp) / "bench.sqlite")
            try:
                Repository(db).import_data(read_folder(folder))
                store = JudgeStore(db)
                params = JudgeParams(model="bench-model", logprobs=False)
                info = store.ensure_judge(
                    "bench", model="bench-model", prompt=DEFAULT_PROMPT,
                    parameters=params.to_dict(),
                )  # fmt: skip
                candidate = DEFAULT_PROMPT.derive(
                    name="bench-candidate",
                    user=DEFAULT_PROMPT.user + "\n\nGuidance: answer as the experts would.",
                )
                store.save_prompt(candidate)
                items = store.work_items(None, None, Scope.parse("all"), candidate)
                frames = store.repo.load_frames(None)
                got: dict[tuple[str, str], bool] = {}

                def keep(v: Any) -> None:
                    if v.met is not None:
                        got[(v.item.response_id, v.item.criterion_id)] = bool(v.met)

                conn = _Connection(
                    base_url=url, api_key_env="GC_BENCH_KEY", concurrency=args.concurrency,
                    timeout=30.0, max_retries=3, max_cost=None, price=None, http="auto",
                )  # fmt: skip
                os.environ.setdefault("GC_BENCH_KEY", "bench")
                t0 = time.perf_counter()
                done = _launch(
                    store, info, candidate, params, items, conn, model_price=None,
                    record={"kind": "align"}, judgments=False, collect=keep,
                    show_progress=False, label="bench",
                )  # fmt: skip
                wall = time.perf_counter() - t0
                ideal = len(items) * args.latency / args.concurrency
                out.update(
                    calls=len(items), ok=done.stats.ok, wall_s=round(wall, 2),
                    ideal_s=round(ideal, 2), ratio=round(wall / ideal, 3),
                )  # fmt: skip
                # the statistics on top: one candidate against the baseline
                t1 = time.perf_counter()
                held = consensus_units(frames)
                units = HeldOutUnits.from_frame(held)
                keys = zip(held["response_id"], held["criterion_id"], strict=True)
                cand = np.array([float(got[k]) if k in got else np.nan for k in keys])
                rng = np.random.default_rng(0)
                cons = held["met"].to_numpy(dtype=bool)
                base = np.where(rng.random(cons.size) < 0.2, ~cons, cons).astype(float)
                evaluate_held_out(units, base, {"candidate": cand}, n_boot=2000, seed=0)
                out.update(stats_s=round(time.perf_counter() - t1, 3), units=units.n)
            finally:
                db.dispose()
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(10)
    out["load_average"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(out))
    else:
        print(
            f"{out['calls']} calls at {args.latency} s, concurrency {args.concurrency}: "
            f"{out['wall_s']} s (ideal {out['ideal_s']} s, ratio {out['ratio']}); "
            f"statistics on {out['units']} units: {out['stats_s']} s; "
            f"load average {out['load_average']:.1f}"
        )


if __name__ == "__main__":
    main()
