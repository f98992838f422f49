"""The bare baseline of ``bench_import_process.py``: a plain Python process that imports a
v1 benchmark folder into an empty gradercal SQLite database with nothing but the standard
library — parse the JSONL with ``json``, read and hash each artifact file, ``executemany``
every row in one transaction with the same pragmas as gradercal (WAL, synchronous=FULL,
foreign keys). No validation, no content hashes of tasks (a sha256 of the line stands in),
no checks: the floor a real import is measured against. Usage::

    python benchmarks/bare_import.py FOLDER DB
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
from pathlib import Path


def main(folder: Path, db_path: Path) -> None:
    now = "2026-01-01 00:00:00"
    bench = json.loads((folder / "benchmark.json").read_text("utf-8"))
    con = sqlite3.connect(db_path, isolation_level=None)
    con.execute("PRAGMA foreign_keys = ON")
    con.execute("PRAGMA synchronous = FULL")
    con.execute("BEGIN IMMEDIATE")
    con.execute(
        "INSERT INTO benchmark (id, name, pass_threshold, format_version, created_at) "
        "VALUES (1, ?, ?, 1, ?)",
        (bench["name"], bench.get("pass_threshold", 0.7), now),
    )
    tasks, crits, arts, blobs = [], [], [], {}
    crit_id: dict[tuple[int, str], int] = {}
    task_num: dict[str, int] = {}
    with (folder / "tasks.jsonl").open(encoding="utf-8") as fh:
        for tid, line in enumerate(fh, start=1):
            t = json.loads(line)
            task_num[t["id"]] = tid
            tasks.append(
                (tid, 1, t["id"], tid, t["prompt"], t.get("workflow"), t.get("domain"),
                 t.get("answer_format"), json.dumps(t.get("tags", [])),
                 json.dumps(t.get("metadata", {})), hashlib.sha256(line.encode()).hexdigest(),
                 now)
            )  # fmt: skip
            for pos, c in enumerate(t["rubric"]):
                crit_id[(tid, c["id"])] = len(crits) + 1
                auto = c.get("auto")
                crits.append(
                    (len(crits) + 1, tid, c["id"], pos, c["criterion"], c["points"],
                     json.dumps(c.get("tags", [])), "auto" if auto else "judgment",
                     c.get("levels", 2), auto and auto.get("key"),
                     json.dumps(auto["target"]) if auto else None, None, None)
                )  # fmt: skip
            for pos, a in enumerate(t.get("artifacts", [])):
                digest = size = None
                if a.get("path"):
                    raw = (folder / a["path"]).read_bytes()
                    digest, size = hashlib.sha256(raw).hexdigest(), len(raw)
                    blobs[digest] = (digest, size, raw, now)
                arts.append(
                    (tid, pos, "file" if a.get("path") else "url", a.get("title", ""),
                     a.get("path"), a.get("path"), a.get("url"), a.get("media_type"), digest,
                     size)
                )  # fmt: skip
    con.executemany("INSERT INTO blob VALUES (?, ?, ?, ?)", list(blobs.values()))
    con.executemany("INSERT INTO task VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", tasks)
    con.executemany(
        "INSERT INTO criterion (id, task_id, external_id, position, text, points, tags, kind, "
        "levels, auto_key, auto_target, auto_abs_tol, auto_rel_tol) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        crits,
    )
    con.executemany(
        "INSERT INTO artifact (task_id, position, kind, title, original_name, path, url, "
        "media_type, sha256, size) VALUES (?,?,?,?,?,?,?,?,?,?)",
        arts,
    )
    resp: dict[str, tuple[int, int]] = {}
    rows = []
    with (folder / "responses.jsonl").open(encoding="utf-8") as fh:
        for rid, line in enumerate(fh, start=1):
            r = json.loads(line)
            tid = task_num[r["task_id"]]
            resp[r["id"]] = (rid, tid)
            answer = r.get("answer")
            rows.append(
                (rid, 1, tid, r["id"], r["model"], r["text"],
                 json.dumps(answer) if answer is not None else None,
                 hashlib.sha256(line.encode()).hexdigest(), now)
            )  # fmt: skip
    con.executemany(
        "INSERT INTO response (id, benchmark_id, task_id, external_id, model, text, answer, "
        "content_hash, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
        rows,
    )
    graders: dict[str, int] = {}
    rows = []
    with (folder / "judgments.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            j = json.loads(line)
            name = j["grader"]
            if name not in graders:
                graders[name] = len(graders) + 1
                con.execute(
                    "INSERT INTO grader (id, name, kind, parameters, created_at) "
                    "VALUES (?, ?, ?, '{}', ?)",
                    (graders[name], name, j.get("grader_kind", "human"), now),
                )
            rid, tid = resp[j["response_id"]]
            rows.append(
                (graders[name], rid, crit_id[(tid, j["criterion_id"])], j.get("met"),
                 j.get("level"), j.get("confidence"), j.get("rationale"),
                 bool(j.get("unclear", False)), j.get("unclear_note"), "import", 1, now, now)
            )  # fmt: skip
    con.executemany(
        "INSERT INTO judgment (grader_id, response_id, criterion_id, met, level, confidence, "
        "rationale, unclear, unclear_note, source, revision, created_at, updated_at) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        rows,
    )
    con.execute("COMMIT")
    con.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
