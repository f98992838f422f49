"""A re-import while a grader saves: no save is lost, revisions never repeat (both
backends). The import runs in another process, as `gradercal import` would, while this
process saves as the grading app does, against the real database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

from sqlalchemy import select

from gradercal.db import models as m
from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.formats import read_path
from tests.conftest import DEMO

GRADER = "expert-ana"
ROUNDS = 6
ROOT = Path(__file__).resolve().parents[2]

#: The coordinator's side: ROUNDS re-imports of the targets' verdicts, flipped each round.
REIMPORT = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from gradercal.db.repo import Repository, benchmark_of
    from gradercal.db.session import open_database
    from gradercal.formats import read_path

    url, targets, folder, rounds = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
    pairs = json.loads(Path(targets).read_text("utf-8"))
    db = open_database(url)
    try:
        r = Repository(db)
        for n in range(rounds):
            path = folder / f"round{n}.jsonl"
            path.write_text(
                "".join(
                    json.dumps({"response_id": rid, "criterion_id": crit, "grader": sys.argv[5],
                                "met": n % 2 == 0, "rationale": f"import {n}"}) + "\\n"
                    for rid, crit in pairs
                ),
                "utf-8",
            )
            name = r.benchmark(None).name
            r.import_data(benchmark_of(read_path(path, r.catalog(name)), name))
            print("imported", flush=True)
    finally:
        db.dispose()
    """
)


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

    # the re-imports run in another process, as a coordinator's `gradercal import` would
    script = tmp_path / "reimport.py"
    script.write_text(REIMPORT, "utf-8")
    targets_file = tmp_path / "targets.json"
    targets_file.write_text(json.dumps([[rid, crit] for _aid, rid, crit in targets]), "utf-8")
    importer = subprocess.Popen(
        [
            sys.executable,
            str(script),
            db_url,
            str(targets_file),
            str(tmp_path),
            str(ROUNDS),
            GRADER,
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    # this process grades as the app does, before, during and after the other's imports
    db = open_database(db_url)
    try:
        st = GradingStore(db)
        i = 0
        while i < ROUNDS * 10 or importer.poll() is None:
            for aid, _rid, crit in targets:
                st.save_judgment(aid, crit, JudgmentValue(met=bool(i % 2), rationale=f"s{i}"))
            i += 1
    finally:
        db.dispose()
    out, err = importer.communicate(timeout=300)
    assert importer.returncode == 0, err
    assert out.split() == ["imported"] * ROUNDS

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
