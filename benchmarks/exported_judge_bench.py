"""How long the exported Inspect AI judge takes to grade one response against a slow judge.

Issue #15 measured 12 s for one 22-criterion sample against a 0.5 s judge: the scorer of
the time asked the criteria one after another. This script grades the demo's T01-atlas
response (22 judgment criteria) with a loopback judge that takes ``--latency`` seconds
per reply, with the exported module of ``--before`` (a git revision; default 61b1ea5, the
old scorer) and with today's, in the same process, and prints the scoring time of each:
from the first request's arrival to the last reply, as the server logs them (Inspect's
own start-up is left out), and their ratio.

    .venv/bin/python benchmarks/exported_judge_bench.py [--latency 0.5] [--before REV]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from click.testing import CliRunner  # noqa: E402

from gradercal.cli import main  # noqa: E402
from tests.support.judge_server import JudgeServer, ServerConfig  # noqa: E402

SAMPLE = "T01-atlas"


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _old_module(rev: str, package: Any, out: Path) -> ModuleType:
    """The Inspect module the exporter of revision ``rev`` writes for ``package``."""
    source = subprocess.run(
        ["git", "show", f"{rev}:gradercal/prompt_package/render_inspect.py"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    namespace: dict[str, Any] = {"__name__": "old_render_inspect"}
    exec(compile(source, "old_render_inspect.py", "exec"), namespace)
    out.write_text(namespace["to_inspect"](package), "utf-8")
    return _load(out, "old_gc_judge")


def _span(server: JudgeServer, start: int) -> float:
    log = server.stats.log[start:]
    return max(r for _a, r, _t in log) - min(a for a, _r, _t in log)


def main_() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--before", default="61b1ea5")
    args = parser.parse_args()
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample

    from gradercal.prompt_package.package import package_from_dict

    with tempfile.TemporaryDirectory() as tmp_:
        tmp = Path(tmp_)
        db = str(tmp / "demo.sqlite")
        CliRunner().invoke(main, ["import", str(ROOT / "samples" / "demo"), "--db", db])
        for fmt, name in (("json", "judge.json"), ("inspect", "gc_judge.py")):
            res = CliRunner().invoke(
                main,
                ["export-prompt", "--db", db, "--judge", "judge-gpt", "--format", fmt,
                 "-o", str(tmp / name), "--samples", str(tmp / "samples.jsonl"), "--n-boot", "0"],
            )  # fmt: skip
            assert res.exit_code == 0, res.output
        package = package_from_dict(json.loads((tmp / "judge.json").read_text("utf-8")))
        rows = [json.loads(x) for x in (tmp / "samples.jsonl").read_text("utf-8").splitlines()]
        (row,) = [r for r in rows if r["id"] == SAMPLE]
        n_judged = sum(1 for c in row["metadata"]["rubric"] if not c["auto"])
        new = _load(tmp / "gc_judge.py", "new_gc_judge")
        old = _old_module(args.before, package, tmp / "old_gc_judge.py")
        server = JudgeServer(ServerConfig(latency=args.latency), keep_bodies=False)
        base = server.start()
        os.environ.update(LOOP_BASE_URL=base, LOOP_API_KEY="k")
        results = {}
        try:
            for label, module in (("before", old), ("after", new)):
                sample = Sample(input=row["input"], id=SAMPLE, metadata=row["metadata"])
                task = Task(
                    dataset=[sample],
                    solver=new.replay_response(),
                    scorer=module.gradercal_judge("openai-api/loop/judge"),
                )
                start = len(server.stats.log)
                t0 = time.perf_counter()
                logs = inspect_eval(
                    task, model="mockllm/model", log_dir=str(tmp / label), display="none"
                )
                wall = time.perf_counter() - t0
                assert logs[0].status == "success", logs[0].error
                results[label] = (_span(server, start), wall, len(server.stats.log) - start)
        finally:
            server.stop()
    b, a = results["before"], results["after"]
    print(f"one response, {n_judged} judgment criteria, judge latency {args.latency} s")
    print(f"before ({args.before}): scoring {b[0]:.2f} s ({b[2]} requests), eval {b[1]:.2f} s")
    print(f"after: scoring {a[0]:.2f} s ({a[2]} requests), eval {a[1]:.2f} s")
    print(f"ratio after/before (scoring): {a[0] / b[0]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main_())
