"""Grading packets at the scale of a large benchmark: export, re-pack, merge.

Generates the 750-task benchmark (``gradercal samples generate --tasks 750
--criteria-per-task 25.36``: 19,020 criteria, ~1,000 artifact files, 2,250 responses
with three experts and a judge on each), imports it into a SQLite database, assigns
the responses to twelve new graders (one grader each, stratified by workflow and
model: about 190 responses per grader), then times, for one grader's share:

* **export**: ``export_packet`` — read the share, build the packet database, write the
  ``.gcpkg`` file (fsynced, renamed into place);
* **open**: ``open_packet`` — check and unpack it into a working folder;
* **save**: ``PacketSession.save`` after the whole share was graded (every judgment
  criterion of every response answered, one in ten changed twice, every item submitted);
* **merge**: ``merge_packet`` of the graded packet into the coordinator database (the
  first merge writes everything; the database is restored before each repeat);
* **merge again**: the second, idempotent merge (nothing to write).

Goal: export ≤ 5 s and merge ≤ 5 s on a 2-core machine. Usage::

    python benchmarks/bench_packets.py [--tasks 750] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gradercal.db.assignments import assign
from gradercal.db.packets import export_packet, merge_packet, open_packet
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.formats import read_path
from gradercal.synth import SynthConfig, generate

GRADERS = [f"g{i:02d}" for i in range(1, 13)]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def grade_everything(work_db: Path) -> int:
    """Answer every judgment criterion of the share in the working database, as the app would.

    Written with plain SQL in one transaction (the app's per-judgment path is measured
    elsewhere); one judgment in ten is changed twice, so its history travels too.
    """
    con = sqlite3.connect(work_db)
    try:
        now = "2026-01-02 10:00:00.000000"
        con.execute("BEGIN")
        con.execute(
            "INSERT INTO judgment (grader_id, response_id, criterion_id, met, level, confidence,"
            " rationale, unclear, unclear_note, source, revision, created_at, updated_at) "
            "SELECT a.grader_id, a.response_id, c.id, (c.id + a.id) % 2, "
            "CASE WHEN c.levels > 2 THEN ((c.id + a.id) % 2) * (c.levels - 1) END, NULL, "
            "'graded offline', 0, NULL, 'ui', 1, ?, ? "
            "FROM assignment a JOIN response r ON r.id = a.response_id "
            "JOIN criterion c ON c.task_id = r.task_id WHERE c.kind = 'judgment'",
            (now, now),
        )
        rows = con.execute("SELECT id, met, level FROM judgment WHERE id % 10 = 0").fetchall()
        con.executemany(
            "INSERT INTO revision (entity, entity_id, revision, data, actor, source, changed_at)"
            " VALUES ('judgment', ?, 1, ?, 'bench', 'ui', ?)",
            [
                (
                    jid,
                    json.dumps(
                        {
                            "met": bool(met),
                            "level": level,
                            "confidence": None,
                            "rationale": "first thought",
                            "unclear": False,
                            "unclear_note": None,
                            "source": "ui",
                            "updated_at": now,
                        }
                    ),
                    now,
                )
                for jid, met, level in rows
            ],
        )
        con.execute(
            "UPDATE judgment SET revision = 2, rationale = 'second thought' WHERE id % 10 = 0"
        )
        con.execute(
            "UPDATE assignment SET status = 'submitted', submitted_at = ?, time_spent_s = 300",
            (now,),
        )
        con.execute("COMMIT")
        return int(con.execute("SELECT count(*) FROM judgment").fetchone()[0])
    finally:
        con.close()


def run(tasks: int, repeat: int, root: Path) -> dict[str, Any]:
    bench = root / "bench"
    t_gen, _ = timed(
        lambda: generate(bench, SynthConfig(tasks=tasks, criteria_per_task=25.36, seed=0))
    )
    coord = root / "coordinator.sqlite"
    db = open_database(coord)
    try:
        t_import, _ = timed(lambda: Repository(db).import_data(read_path(bench)))
        t_assign, report = timed(
            lambda: assign(db, GRADERS, 1, stratify=["workflow", "model"], seed="bench")
        )
        share = report.design["graders_detail"][0]
        packet = root / "g01.gcpkg"
        exports = []
        for _ in range(repeat):
            seconds, exported = timed(lambda: export_packet(db, "g01", packet))
            exports.append(seconds)
    finally:
        db.dispose()
    opens, saves = [], []
    n_judgments = 0
    for i in range(repeat):
        work = root / f"work{i}"
        seconds, session = timed(lambda w=work: open_packet(packet, workdir=w))  # type: ignore[misc]
        opens.append(seconds)
        if i == 0:
            n_judgments = grade_everything(work / "packet.sqlite")
            seconds, _ = timed(session.save)
            saves.append(seconds)
            graded = root / "graded.gcpkg"
            shutil.copyfile(packet, graded)
        session.close(save=False)
    pristine = root / "pristine.sqlite"
    shutil.copyfile(coord, pristine)
    merges, again = [], []
    merged: dict[str, Any] = {}
    for _ in range(repeat):
        shutil.copyfile(pristine, coord)
        for suffix in ("-wal", "-shm"):
            Path(str(coord) + suffix).unlink(missing_ok=True)
        db = open_database(coord)
        try:
            seconds, rep = timed(lambda: merge_packet(db, graded))  # noqa: B023
            merges.append(seconds)
            merged = rep.to_dict()
            seconds, rep2 = timed(lambda: merge_packet(db, graded))  # noqa: B023
            again.append(seconds)
            assert not rep2.changed
        finally:
            db.dispose()
    return {
        "scale": {
            "tasks": tasks,
            "responses_in_share": share["responses"],
            "packet": {
                k: exported.to_dict()[k]
                for k in ("assignments", "tasks", "criteria", "artifacts", "blobs", "bytes")
            },
            "judgments_graded": n_judgments,
        },
        "setup_s": {"generate": t_gen, "import": t_import, "assign": t_assign},
        "export_s": exports,
        "open_s": opens,
        "save_s": saves,
        "merge_s": merges,
        "merge_again_s": again,
        "merge_report": {
            k: merged[k]
            for k in ("judgments_added", "history_added", "assignments_updated", "changed")
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=750)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gradercal-bench-") as tmp:
        result = run(args.tasks, args.repeat, Path(tmp))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    scale = result["scale"]
    p = scale["packet"]
    print(
        f"share of g01: {p['assignments']} responses, {p['tasks']} tasks, {p['criteria']} "
        f"criteria, {p['artifacts']} artifacts ({p['blobs']} files), packet "
        f"{p['bytes'] / 1e6:.1f} MB; {scale['judgments_graded']} judgments graded"
    )
    for key, label in [
        ("export_s", "export"),
        ("open_s", "open (unpack)"),
        ("save_s", "save (re-pack)"),
        ("merge_s", "merge"),
        ("merge_again_s", "merge again"),
    ]:
        runs = result[key]
        print(
            f"{label:>15}: median {statistics.median(runs):6.2f} s "
            f"(runs: {', '.join(f'{x:.2f}' for x in runs)})"
        )
    print(f"merge report: {result['merge_report']}")


if __name__ == "__main__":
    main()
