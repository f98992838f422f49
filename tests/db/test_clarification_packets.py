"""Clarification threads travel in offline packets: answers out (without who asked what),
unclear notes back as questions when the packet is merged; both backends."""

from __future__ import annotations

from pathlib import Path

from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.formats import read_folder
from tests.support.gui import write_gui_benchmark


def test_an_offline_packet_carries_the_answers_without_the_questions(
    db_url: str, tmp_path: Path
) -> None:
    from sqlalchemy import select

    from gradercal.db import models as m
    from gradercal.db.clarifications import answer, ask
    from gradercal.db.grading import GradingStore
    from gradercal.db.packets import export_packet, open_packet

    db = open_database(db_url, create=True)
    try:
        Repository(db).import_data(read_folder(write_gui_benchmark(tmp_path / "b")))
        store = GradingStore(db)
        store.create_grader("ana")
        store.ensure_queue("ana", "gui-bench")
        thread = ask(db, "gui-bench", "P1", "c1", "BOB-ASKS: do trends count?", actor="bob")
        answer(db, thread.id, "Trends do not count.", actor="chair")
        ask(db, "gui-bench", "P1", "c2", "unanswered", actor="bob")
        export_packet(db, "ana", tmp_path / "ana.gcpkg")
    finally:
        db.dispose()
    with open_packet(tmp_path / "ana.gcpkg", workdir=tmp_path / "work") as session:
        offline = GradingStore(session.db)
        assert offline.guidelines("gui-bench", "P1", "c1").answers == ("Trends do not count.",)
        assert offline.guidelines("gui-bench", "P1", "c2").answers == ()
        with session.db.read() as s:
            rows = s.execute(select(m.Clarification.question, m.Clarification.asked_by)).all()
        assert [tuple(r) for r in rows] == [("", "")]  # one thread, nobody's question


def test_unclear_notes_in_a_merged_packet_come_back_as_questions(
    db_url: str, tmp_path: Path
) -> None:
    from gradercal.db.clarifications import list_clarifications
    from gradercal.db.grading import GradingStore, JudgmentValue
    from gradercal.db.packets import export_packet, merge_packet, open_packet

    path = tmp_path / "ana.gcpkg"
    db = open_database(db_url, create=True)
    try:
        Repository(db).import_data(read_folder(write_gui_benchmark(tmp_path / "b")))
        store = GradingStore(db)
        store.create_grader("ana")
        queue = store.ensure_queue("ana", "gui-bench")
        first = next(i for i in queue if i.task_id == "P1").assignment_id
        # online, before the export: a note already asked (it must not be asked twice)
        store.save_judgment(
            first, "c2", JudgmentValue(met=True, unclear=True, unclear_note="Online note")
        )
        export_packet(db, "ana", path)
        with open_packet(path, workdir=tmp_path / "work") as session:
            offline = GradingStore(session.db)
            for typed in ("Does a tr", "Does a trend count?"):
                offline.save_judgment(
                    first, "c1", JudgmentValue(met=False, unclear=True, unclear_note=typed)
                )
            offline.save_judgment(
                first, "c2", JudgmentValue(met=False, unclear=True, unclear_note="Online note")
            )
        assert [t.question for t in list_clarifications(db, "gui-bench")] == ["Online note"]
        report = merge_packet(db, path)
        assert report.judgments_updated + report.judgments_added == 2
        threads = {t.criterion: t for t in list_clarifications(db, "gui-bench")}
        assert set(threads) == {"c1", "c2"}
        assert (threads["c1"].question, threads["c1"].asked_by) == ("Does a trend count?", "ana")
        assert [x.text for x in threads["c2"].messages] == ["Online note"]  # not asked again
        merge_packet(db, path)  # merging again asks nothing more
        again = {t.criterion: t for t in list_clarifications(db, "gui-bench")}
        assert [len(t.messages) for t in again.values()] == [1, 1]
    finally:
        db.dispose()
