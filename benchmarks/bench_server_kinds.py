"""One ``gradercal judge run`` per kind of OpenAI-compatible server (issue #32's goal: every
verdict in one run, 7+ of 7 kinds, exit 0, the user told what was lost).

Each kind of :data:`tests.support.judge_server.SERVER_KINDS` (log-probabilities returned,
ignored, refused; JSON mode refused; reasoning in ``<think>`` with braces, in
``reasoning_content``; fenced JSON; JSON followed by prose) gets a loopback server of its
own and a fresh copy of the demo benchmark (``gradercal import samples/demo`` into a SQLite
file, once), then the real command line, as a user runs it, in a child process::

    gradercal judge run --db COPY --judge judge-KIND --model gpt-4o-mini \\
        --base-url URL --api-key-env KEY --concurrency 8 --json

The table gives, per kind: the exit code, the run's status, items, verdicts, parse
failures, errors, requests the server answered (and of them HTTP 400 refusals), verdicts
with a measured confidence, what the runner adapted (``adaptations``) and wall time. A kind
passes when the exit code is 0, the status ``completed`` and every item has its verdict.

Usage::

    python benchmarks/bench_server_kinds.py [--latency 0.01] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.judge_server import SERVER_KINDS, JudgeServer, server_kind  # noqa: E402

KEY_ENV = "GC_BENCH_JUDGE_KEY"


def _gradercal(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, KEY_ENV: "sk-bench-kinds", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "gradercal", *args], env=env, capture_output=True, text=True
    )


def run_kind(kind: str, template: Path, work: Path, latency: float) -> dict[str, Any]:
    db = work / f"{kind}.sqlite"
    shutil.copyfile(template, db)
    with JudgeServer(server_kind(kind, latency=latency)) as srv:
        t0 = time.perf_counter()
        proc = _gradercal(
            "judge", "run", "--db", str(db), "--judge", f"judge-{kind}",
            "--model", "gpt-4o-mini", "--base-url", srv.base_url, "--api-key-env", KEY_ENV,
            "--concurrency", "8", "--json",
        )  # fmt: skip
        wall = time.perf_counter() - t0
        answered = srv.stats.requests
        refused = srv.stats.replies["400"]
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        out = {"status": "no JSON", "message": proc.stderr.strip()[-300:]}
    row = {
        "kind": kind,
        "exit": proc.returncode,
        "status": out.get("status"),
        "items": out.get("items"),
        "verdicts": out.get("ok"),
        "parse_failures": out.get("parse_failures"),
        "errors": out.get("errors"),
        "requests": answered,
        "refused_400": refused,
        "with_confidence": out.get("with_confidence"),
        "adaptations": out.get("adaptations"),
        "wall_s": round(wall, 2),
    }
    row["passed"] = (
        proc.returncode == 0 and row["status"] == "completed" and row["verdicts"] == row["items"]
    )
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--latency", type=float, default=0.01, help="server seconds per reply")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gc-kinds-") as tmp:
        work = Path(tmp)
        template = work / "demo.sqlite"
        imported = _gradercal("import", str(ROOT / "samples" / "demo"), "--db", str(template))
        if imported.returncode != 0:
            sys.exit(f"import failed: {imported.stderr}")
        rows = [run_kind(kind, template, work, args.latency) for kind in SERVER_KINDS]
    passed = sum(r["passed"] for r in rows)
    if args.json:
        print(json.dumps({"kinds": rows, "passed": passed, "of": len(rows)}, indent=1))
        return
    print(
        f"{'kind':18} exit {'status':10} items verdicts parse err requests 400s conf  "
        "wall_s  adaptations"
    )
    for r in rows:
        print(
            f"{r['kind']:18} {r['exit']:4} {r['status']!s:10} {r['items']!s:>5} "
            f"{r['verdicts']!s:>8} {r['parse_failures']!s:>5} {r['errors']!s:>3} "
            f"{r['requests']:8} {r['refused_400']:4} {r['with_confidence']!s:>4} "
            f"{r['wall_s']:7.2f}  {','.join(r['adaptations'] or []) or '-'}"
        )
    print(f"{passed} of {len(rows)} kinds: every verdict in one run, exit 0")


if __name__ == "__main__":
    main()
