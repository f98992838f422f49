"""Import speed at the scale of a large expert-written benchmark.

Generates 750 tasks / 19,020 criteria / ~1,000 artifacts / 3 responses per task (with
3 human graders and a judge on every response) with ``gradercal samples generate``,
then in the same run:

* **gradercal**: ``gradercal import`` end to end (parse, validate every line against the
  schemas, hash artifacts, write in one transaction) into a fresh SQLite database;
* **baseline**: the same rows written with bare ``sqlite3`` ``executemany`` into a fresh
  database with the same schema and pragmas (WAL, synchronous=FULL), from data already
  parsed in memory.

Prints the times and their ratio (goal: ≤ 3×). Usage::

    python benchmarks/bench_import.py [--tasks 750] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.formats import read_path
from gradercal.model import BenchmarkData
from gradercal.synth import SynthConfig, generate


def gradercal_import(folder: Path, db_path: Path) -> tuple[float, float, dict[str, Any]]:
    """Returns (end-to-end seconds, write-phase seconds, import report)."""
    db = open_database(db_path)  # schema creation is not timed (the baseline gets it free too)
    try:
        start = time.perf_counter()
        data = read_path(folder)
        mid = time.perf_counter()
        report = Repository(db).import_data(data)
        end = time.perf_counter()
    finally:
        db.dispose()
    return end - start, end - mid, report.to_dict()


def baseline_import(data: BenchmarkData, db_path: Path) -> float:
    """Write the same rows with plain sqlite3 executemany (schema made by gradercal first)."""
    open_database(db_path).dispose()
    con = sqlite3.connect(db_path, isolation_level=None)
    con.execute("PRAGMA foreign_keys = ON")
    con.execute("PRAGMA synchronous = FULL")
    now = "2026-01-01 00:00:00"
    start = time.perf_counter()
    con.execute("BEGIN")
    con.execute(
        "INSERT INTO benchmark (id, name, pass_threshold, format_version, created_at) "
        "VALUES (1, ?, ?, 1, ?)",
        (data.benchmark.name, data.benchmark.pass_threshold, now),
    )
    blobs = []
    for digest, path in data.blobs.items():
        raw = Path(path).read_bytes()
        blobs.append((digest, len(raw), raw, now))
    con.executemany("INSERT INTO blob (sha256, size, data, created_at) VALUES (?, ?, ?, ?)", blobs)
    task_rows, crit_rows, art_rows = [], [], []
    crit_id: dict[tuple[int, str], int] = {}
    for tid, t in enumerate(data.tasks, start=1):
        task_rows.append(
            (
                tid,
                1,
                t.id,
                tid,
                t.prompt,
                t.workflow,
                t.domain,
                t.answer_format,
                json.dumps(list(t.tags)),
                json.dumps(t.metadata),
                t.content_hash(),
                now,
            )
        )
        for c in t.criteria:
            cid = len(crit_rows) + 1
            crit_id[(tid, c.id)] = cid
            crit_rows.append(
                (
                    cid,
                    tid,
                    c.id,
                    c.position,
                    c.text,
                    c.points,
                    json.dumps(list(c.tags)),
                    c.kind.value,
                    c.levels,
                    c.auto.key if c.auto else None,
                    json.dumps(c.auto.target) if c.auto else None,
                    c.auto.abs_tol if c.auto else None,
                    c.auto.rel_tol if c.auto else None,
                )
            )
        for a in t.artifacts:
            art_rows.append(
                (
                    tid,
                    a.position,
                    a.kind.value,
                    a.title,
                    a.original_name,
                    a.path,
                    a.url,
                    a.media_type,
                    a.sha256,
                    a.size,
                )
            )
    con.executemany("INSERT INTO task VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", task_rows)
    con.executemany(
        "INSERT INTO criterion (id, task_id, external_id, position, text, points, tags, kind, "
        "levels, auto_key, auto_target, auto_abs_tol, auto_rel_tol) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        crit_rows,
    )
    con.executemany(
        "INSERT INTO artifact (task_id, position, kind, title, original_name, path, url, "
        "media_type, sha256, size) VALUES (?,?,?,?,?,?,?,?,?,?)",
        art_rows,
    )
    task_num = {t.id: i for i, t in enumerate(data.tasks, start=1)}
    resp_rows, resp_num = [], {}
    for rid, r in enumerate(data.responses, start=1):
        resp_num[r.id] = (rid, task_num[r.task_id])
        resp_rows.append(
            (
                rid,
                1,
                task_num[r.task_id],
                r.id,
                r.model,
                r.text,
                json.dumps(r.answer) if r.answer is not None else None,
                r.content_hash(),
                now,
            )
        )
    con.executemany(
        "INSERT INTO response (id, benchmark_id, task_id, external_id, model, text, answer, "
        "content_hash, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
        resp_rows,
    )
    graders = {}
    for j in data.judgments:
        if j.grader not in graders:
            graders[j.grader] = len(graders) + 1
            con.execute(
                "INSERT INTO grader (id, name, kind, parameters, created_at) VALUES (?,?,?,'{}',?)",
                (graders[j.grader], j.grader, j.grader_kind.value, now),
            )
    j_rows = []
    for j in data.judgments:
        rid, tid = resp_num[j.response_id]
        j_rows.append(
            (
                graders[j.grader],
                rid,
                crit_id[(tid, j.criterion_id)],
                j.met,
                j.level,
                j.confidence,
                j.rationale,
                j.unclear,
                j.unclear_note,
                "import",
                "{}",
                1,
                now,
                now,
            )
        )
    con.executemany(
        "INSERT INTO judgment (grader_id, response_id, criterion_id, met, level, confidence, "
        "rationale, unclear, unclear_note, source, provenance, revision, created_at, updated_at) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        j_rows,
    )
    con.execute("COMMIT")
    elapsed = time.perf_counter() - start
    con.close()
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=750)
    parser.add_argument("--criteria-per-task", type=float, default=25.36)
    parser.add_argument("--artifacts-per-task", type=float, default=1.33)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gc-bench-") as tmp:
        root = Path(tmp)
        folder = root / "bench"
        summary = generate(
            folder,
            SynthConfig(
                tasks=args.tasks,
                criteria_per_task=args.criteria_per_task,
                artifacts_per_task=args.artifacts_per_task,
                responses_per_task=3,
            ),
        )
        data = read_path(folder)
        ours, writes, base = [], [], []
        for i in range(args.repeat):
            t, w, report = gradercal_import(folder, root / f"g{i}.sqlite")
            ours.append(t)
            writes.append(w)
            base.append(baseline_import(data, root / f"b{i}.sqlite"))
        sizes = {
            "tasks": summary.tasks,
            "criteria": summary.criteria,
            "artifact_files": summary.artifacts,
            "responses": summary.responses,
            "judgments": summary.judgments,
            "artifact_bytes": sum(Path(p).stat().st_size for p in data.blobs.values()),
        }
        result = {
            "scale": sizes,
            "gradercal_import_s": statistics.median(ours),
            "gradercal_write_phase_s": statistics.median(writes),
            "bare_sqlite3_executemany_s": statistics.median(base),
            "ratio": statistics.median(ours) / statistics.median(base),
            "write_phase_ratio": statistics.median(writes) / statistics.median(base),
            "runs": {"gradercal": ours, "gradercal_write_phase": writes, "baseline": base},
            "imported": {
                k: report[k] for k in ("tasks_added", "responses_added", "judgments_added")
            },
            "checksum": hashlib.sha256(json.dumps(sizes).encode()).hexdigest()[:12],
        }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"scale: {sizes}")
        print(
            f"gradercal import (parse + validate + hash + write): {result['gradercal_import_s']:.2f} s"
        )
        print(
            f"bare sqlite3 executemany of the same rows:        {result['bare_sqlite3_executemany_s']:.2f} s"
        )
        print(
            f"  of which the write phase (one transaction):    {result['gradercal_write_phase_s']:.2f} s"
        )
        print(f"ratio, end to end: {result['ratio']:.2f}x (goal <= 3x)")
        print(f"ratio, write phase only: {result['write_phase_ratio']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
