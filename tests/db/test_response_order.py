"""Response row ids tell nothing of the model (#30): a grader reads the ids of the
responses they grade, and the input file usually lists each task's responses model by
model. Ids are given in an order keyed by the whole import (reproducible, unknown to a
grader); every output still lists responses in the file's order (``response.position``).
Measured on both backends with a benchmark of 60 tasks by 4 models."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import select

from gradercal.db import models as m
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.formats import read_path
from tests.conftest import write_jsonl
from tests.db.test_team_hardening import _same_rank_same_model

MODELS = ("alpha", "beta", "gamma", "delta")
TASKS = 60


def _benchmark(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "benchmark.json").write_text(json.dumps({"name": name, "format_version": 1}))
    tasks = [
        {
            "id": f"T{t:02d}",
            "prompt": f"Task {t}",
            "rubric": [{"id": "c1", "criterion": "ok", "points": 1}],
        }
        for t in range(TASKS)
    ]
    write_jsonl(folder / "tasks.jsonl", tasks)
    responses = [
        {"id": f"T{t:02d}-{model}", "task_id": f"T{t:02d}", "model": model, "text": f"{t} {model}"}
        for t in range(TASKS)
        for model in MODELS
    ]
    write_jsonl(folder / "responses.jsonl", responses)
    return folder


def _import(
    db_url: str, folder: Path
) -> tuple[dict[int, list[int]], dict[int, str], list[str], dict[str, int]]:
    db = open_database(db_url)
    try:
        Repository(db).import_data(read_path(folder))
        with db.read() as s:
            rows = s.execute(
                select(
                    m.Response.id, m.Response.task_id, m.Response.model, m.Response.external_id
                ).order_by(m.Response.id)
            ).all()
        exported = [r.id for r in Repository(db).load_responses()]
    finally:
        db.dispose()
    by_task: dict[int, list[int]] = {}
    for rid, tid, _model, _ext in rows:
        by_task.setdefault(tid, []).append(rid)
    return by_task, {r[0]: r[2] for r in rows}, exported, {r[3]: r[0] for r in rows}


def test_ids_do_not_follow_the_models_and_outputs_keep_the_file_order(
    db_url: str, tmp_path: Path
) -> None:
    folder = _benchmark(tmp_path / "b", "blind")
    by_task, model, exported, ids = _import(db_url, folder)
    share = _same_rank_same_model(by_task, model)
    # 1.0 when ids follow the file; by chance 1/4 (95 % of orders within ±0.03 here)
    assert abs(share - 1 / len(MODELS)) < 0.05, share
    # nor does id modulo the number of models give them away
    by_residue = {(rid % len(MODELS), model[rid]) for rid in model}
    assert len(by_residue) > 2 * len(MODELS)
    # exports list the responses as the file does
    assert exported == [f"T{t:02d}-{mo}" for t in range(TASKS) for mo in MODELS]
    # the same file gives the same ids again (imports stay reproducible)
    *_, again = _import(str(tmp_path / "again.sqlite"), folder)
    assert again == ids
