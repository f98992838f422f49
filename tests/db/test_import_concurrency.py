"""A re-import while a grader saves: no save is lost, revisions never repeat (both
backends). The import and the grader run at the same time, in two threads with their
own connections, against the real database."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

from sqlalchemy import select

from gradercal.db import models as m
from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.repo import Repository, benchmark_of
from gradercal.db.session import open_database
from gradercal.formats import read_path
from tests.conftest import DEMO

GRADER = "expert-ana"
ROUNDS = 6


def test_a_reimport_during_saves_loses_nothing(db_url: str, tmp_path: Path) -> None:
    setup = open_database(db_url)
    try:
        repo = Repository(setup)
        repo.import_data(read_path(DEMO))
        store = GradingStore(setup)
        items = store.ensure_queue(GRADER)[:8]
        with setup.read() as sess:
            external = dict(
                sess.execute(
                    select(m.Assignment.id, m.Response.external_id)
                    .join(m.Response, m.Response.id == m.Assignment.response_id)
                    .where(m.Assignment.id.in_([i.assignment_id for i in items]))
                ).all()
            )
        judged = {
            (j["response_id"], j["criterion_id"]) for j in repo.judgment_records()
            if j["grader"] == GRADER
        }  # fmt: skip
        targets = []
        for item in items:
            rid = external[item.assignment_id]
            crit = sorted(c for r, c in judged if r == rid)[0]
            targets.append((item.assignment_id, rid, crit))
    finally:
        setup.dispose()

    errors: list[BaseException] = []

    def grade() -> None:
        db = open_database(db_url)
        try:
            st = GradingStore(db)
            for i in range(ROUNDS * 10):
                for aid, _rid, crit in targets:
                    st.save_judgment(aid, crit, JudgmentValue(met=bool(i % 2), rationale=f"s{i}"))
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            db.dispose()

    def reimport() -> None:
        db = open_database(db_url)
        try:
            r = Repository(db)
            for n in range(ROUNDS):
                path = tmp_path / f"round{n}.jsonl"
                path.write_text(
                    "".join(
                        json.dumps(
                            {"response_id": rid, "criterion_id": crit, "grader": GRADER,
                             "met": n % 2 == 0, "rationale": f"import {n}"}
                        ) + "\n"
                        for _aid, rid, crit in targets
                    ),
                    "utf-8",
                )  # fmt: skip
                name = r.benchmark(None).name
                r.import_data(benchmark_of(read_path(path, r.catalog(name)), name))
        except BaseException as exc:
            errors.append(exc)
        finally:
            db.dispose()

    threads = [threading.Thread(target=grade), threading.Thread(target=reimport)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors

    db = open_database(db_url)
    try:
        with db.read() as s:
            rows = s.execute(
                select(m.Judgment.id, m.Judgment.revision, m.Judgment.rationale)
                .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
                .join(m.Response, m.Response.id == m.Judgment.response_id)
                .where(m.Grader.name == GRADER)
            ).all()
            history = Counter()
            seen: dict[int, list[int]] = {}
            for entity_id, rev in s.execute(
                select(m.Revision.entity_id, m.Revision.revision).where(
                    m.Revision.entity == "judgment"
                )
            ):
                history[(entity_id, rev)] += 1
                seen.setdefault(entity_id, []).append(rev)
        touched = [r for r in rows if r.revision > 1]
        assert len(touched) >= len(targets)
        # every change kept its predecessor: revisions 1 … current-1 each once in history
        assert not [k for k, n in history.items() if n > 1], "a revision number repeats"
        for jid, revision, _why in touched:
            assert sorted(seen.get(jid, [])) == list(range(1, revision)), jid
    finally:
        db.dispose()
