"""The judgment-with-names join has one home: ``gradercal.db.repo.judgments_with_names``."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from gradercal.db import models as m
from gradercal.db.repo import judgments_with_names
from gradercal.formats import read_folder
from tests.conftest import ROOT

#: A judgment joined to its response, criterion and grader, spelled out by hand.
_SPELLED = [
    re.compile(r"\.join\(\s*m\.Response,\s*m\.Response\.id == (m\.Judgment|j)\.response_id\)"),
    re.compile(r"\.join\(\s*m\.Criterion,\s*m\.Criterion\.id == (m\.Judgment|j)\.criterion_id\)"),
    re.compile(r"\.join\(\s*m\.Grader,\s*m\.Grader\.id == (m\.Judgment|j)\.grader_id\)"),
]
#: The one module that spells it: its home.
_ALLOWED = {"gradercal/db/repo.py"}


def test_the_join_is_written_once() -> None:
    spelled = []
    for path in sorted((ROOT / "gradercal").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text("utf-8")
        if rel not in _ALLOWED and sum(bool(p.search(text)) for p in _SPELLED) >= 2:
            spelled.append(rel)
    assert not spelled, f"use gradercal.db.repo.judgments_with_names in {spelled}"
    home = inspect.getsource(judgments_with_names)
    assert all(p.search(home) for p in _SPELLED)


def test_it_keeps_every_judgment_and_names_it(repo: Any, mini: Path) -> None:
    repo.import_data(read_folder(mini))
    with repo.db.read() as s:
        total = s.scalar(select(func.count()).select_from(m.Judgment))
        rows = s.execute(
            judgments_with_names(
                m.Response.external_id,
                m.Criterion.external_id,
                m.Grader.name,
                m.Task.external_id,
                task=True,
            ).order_by(m.Judgment.id)
        ).all()
        plain = s.execute(judgments_with_names(m.Judgment.id)).all()
    assert total and len(rows) == len(plain) == total
    named = sorted((r, c, g, t) for r, c, g, t in rows)
    exported = sorted(
        (x["response_id"], x["criterion_id"], x["grader"], x["task_id"])
        for x in repo.judgment_records()
    )
    assert named == exported
