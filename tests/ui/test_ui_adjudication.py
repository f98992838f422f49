"""The adjudication view and its store, on SQLite and PostgreSQL: everything about one
(response, criterion) shown, the decision stored as an adjudication with its history,
and the graders' judgments left exactly as they were."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QApplication, QTreeWidgetItemIterator

from gradercal.db.adjudication import AdjudicationStore, value_to_verdict
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.errors import NotFoundError, ValidationError
from gradercal.formats import read_folder
from gradercal.ui import qt_workers
from gradercal.ui.qt_adjudication import QtAdjudicationView
from gradercal.ui.shortcuts import BY_ID
from tests.conftest import DEMO, DatabaseTemplates, read_jsonl

pytestmark = pytest.mark.gui


def _build_unadjudicated(db_url: str) -> None:
    db = open_database(db_url)
    try:
        data = read_folder(DEMO)
        data.adjudications.clear()  # these tests start from a benchmark nobody has adjudicated
        Repository(db).import_data(data)
    finally:
        db.dispose()


@pytest.fixture
def store(db_url: str, db_templates: DatabaseTemplates) -> Iterator[AdjudicationStore]:
    """The demo without its adjudications (built once per backend, copied per test)."""
    db = open_database(db_templates.fill(db_url, "demo unadjudicated", _build_unadjudicated))
    try:
        yield AdjudicationStore(db)
    finally:
        db.dispose()


def demo_judgments(response_id: str, criterion_id: str) -> list[dict[str, Any]]:
    """The demo's judgments.jsonl lines on one pair (the independent reference)."""
    return [
        r
        for r in read_jsonl(DEMO / "judgments.jsonl")
        if r["response_id"] == response_id and r["criterion_id"] == criterion_id
    ]


def test_a_case_holds_every_verdict_and_rationale(store: AdjudicationStore) -> None:
    case = store.case(None, "T01-atlas", "c2")
    expected = demo_judgments("T01-atlas", "c2")
    assert {v.grader for v in case.verdicts} == {r["grader"] for r in expected}
    by_grader = {v.grader: v for v in case.verdicts}
    for r in expected:
        v = by_grader[r["grader"]]
        assert v.met == r["met"]
        assert v.rationale == r.get("rationale")
        assert v.is_judge == (r["grader_kind"] == "judge")
        assert v.confidence == r.get("confidence")
    assert [v.grader for v in case.judges] == ["judge-gpt"]
    assert case.model == "atlas-7b" and case.task.id == "T01"
    assert case.criterion.id == "c2" and case.current is None and case.history == ()
    with pytest.raises(NotFoundError, match="no response"):
        store.case(None, "T99-nobody", "c1")
    with pytest.raises(NotFoundError, match="no criterion"):
        store.case(None, "T01-atlas", "c999")


def test_recording_keeps_judgments_and_history(store: AdjudicationStore) -> None:
    repo = store.repo
    before = repo.judgment_records()
    case = store.case(None, "T01-atlas", "c2")
    after = store.record(case, "met", "  Mentions batch 2 explicitly.  ", "zoe")
    assert after.current is not None
    assert (after.current.met, after.current.adjudicator) == (True, "zoe")
    assert after.current.note == "Mentions batch 2 explicitly."
    again = store.record(after, "not_met", "On reflection: attributed to donors.", "yann")
    assert again.current is not None and again.current.revision == 2
    assert [(h.met, h.adjudicator) for h in again.history] == [(True, "zoe")]
    frames = repo.load_frames()
    adj = frames.adjudications
    assert len(adj) == 1 and not bool(adj.iloc[0]["met"])
    assert repo.judgment_records() == before  # nobody's judgment moved


def test_bad_decisions_are_refused_and_nothing_is_written(store: AdjudicationStore) -> None:
    case = store.case(None, "T01-atlas", "c2")
    for verdict, note, who, field in (
        ("met", "", "zoe", "note"),
        ("met", "ok", "  ", "adjudicator"),
        ("partial", "ok", "zoe", "verdict"),  # two-level criterion
        ("maybe", "ok", "zoe", "verdict"),
        ("met", "bad\x00note", "zoe", "note"),
        ("met", "x" * 20_001, "zoe", "note"),
    ):
        with pytest.raises(ValidationError) as info:
            store.record(case, verdict, note, who)
        assert field in {p.field for p in info.value.problems}
    assert store.repo.load_frames().adjudications.empty
    auto = next(c for t in store.repo.load_tasks() for c in t.criteria if c.auto is not None)
    task = next(t for t in store.repo.load_tasks() if auto in t.criteria)
    rid = next(r.id for r in store.repo.load_responses() if r.task_id == task.id)
    with pytest.raises(ValidationError, match="auto criteria"):
        store.record(store.case(None, rid, auto.id), "met", "computed", "zoe")


def test_the_view_shows_the_case_and_records_by_keyboard(
    qtbot: Any, store: AdjudicationStore
) -> None:
    view = QtAdjudicationView(store, "zoe")
    qtbot.addWidget(view)
    view.resize(1400, 900)
    view.show()
    qtbot.waitExposed(view)
    with qtbot.waitSignal(view.case_loaded, timeout=30_000):
        view.open_case(None, "T01-atlas", "c2")
    case = view.case
    assert case is not None
    texts = [
        view.verdicts.topLevelItem(i).text(0) for i in range(view.verdicts.topLevelItemCount())
    ]
    assert texts == ["expert-ana", "expert-ben", "expert-chloe", "judge-gpt (judge)"]
    assert "attributes it to donor variability" in view.verdicts.topLevelItem(1).text(3)
    view.verdicts.setCurrentItem(view.verdicts.topLevelItem(3))
    assert "Not met. Mentions a stronger batch-2" in view.rationale.toPlainText()
    assert "LLM judge" in view.rationale.toPlainText()
    assert case.criterion.text in view.criterion_label.text()
    first_words = " ".join(re.sub(r"[*_`#>]", "", case.task.prompt).split()[:3])
    assert first_words in " ".join(view.prompt_view.toPlainText().split())
    assert view.response_view.toPlainText().strip()
    assert view.history.topLevelItem(0).text(0) == "not adjudicated yet"
    assert not view.verdict_buttons["partial"].isVisibleTo(view)
    view.activateWindow()
    view.verdicts.setFocus()
    qtbot.keyClick(view.verdicts, Qt.Key.Key_M)
    assert view.verdict == "met" and view.verdict_buttons["met"].isChecked()
    view.note.setFocus()
    qtbot.keyClicks(view.note, "Mentions batch 2.")
    assert view.verdict == "met"  # letters typed in the note stay text
    with qtbot.waitSignal(view.saved, timeout=10_000) as blocker:
        qtbot.keyClick(view.note, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert blocker.args == ["T01-atlas", "c2"]
    stored = store.case(None, "T01-atlas", "c2").current
    assert stored is not None and stored.met and stored.note == "Mentions batch 2."
    assert view.history.topLevelItem(0).text(1) == "zoe"
    assert value_to_verdict(case.criterion, stored.met, stored.level) == "met"
    # Esc leaves the note first, then goes back.
    view.note.setFocus()
    qtbot.keyClick(view.note, Qt.Key.Key_Escape)
    assert not view.note.hasFocus()
    with qtbot.waitSignal(view.back_requested, timeout=2_000):
        qtbot.keyClick(view.verdicts, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=30_000)


def test_adjudication_keys_are_in_the_single_shortcut_table() -> None:
    for sid, key in (
        ("adjudication.met", "M"),
        ("adjudication.not_met", "N"),
        ("adjudication.save", "Ctrl+Return"),
        ("adjudication.save_next", "Ctrl+Shift+Return"),
        ("adjudication.back", "Esc"),
        ("view.dashboard", "Ctrl+3"),
    ):
        assert key in BY_ID[sid].keys


def test_save_and_next_is_listed_in_f1_and_on_its_button(
    qtbot: Any, store: AdjudicationStore
) -> None:
    """The F1 dialog lists "Save and next" with its keys (the registry is its source); the
    button says them; the key saves the case and asks for the next one."""
    from gradercal.ui.qt_shortcuts_dialog import QtShortcutsDialog

    dialog = QtShortcutsDialog(coordinator=True)  # adjudicating is the coordinator's
    qtbot.addWidget(dialog)
    rows = []
    it = QTreeWidgetItemIterator(dialog.tree)
    while it.value() is not None:
        rows.append((it.value().text(0), it.value().text(1)))
        it += 1
    listed = [keys for label, keys in rows if label.startswith("Save and open the next")]
    assert len(listed) == 1 and "Ctrl+Shift+Return" in listed[0]
    view = QtAdjudicationView(store, "zoe")
    qtbot.addWidget(view)
    view.resize(1400, 900)
    view.show()
    qtbot.waitExposed(view)
    assert "Ctrl+Shift+Return" in view.save_next_button.text()
    view.open_case_now(None, "T01-atlas", "c2")
    view.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is view)
    view.verdicts.setFocus()
    qtbot.keyClick(view.verdicts, Qt.Key.Key_N)
    assert view.verdict == "not_met"
    view.note.setFocus()
    qtbot.keyClicks(view.note, "No evidence given.")
    seq = QKeySequence("Ctrl+Shift+Return")[0]
    with qtbot.waitSignal(view.next_requested, timeout=10_000) as asked:
        qtbot.keyClick(view.note, seq.key(), seq.keyboardModifiers())
    assert asked.args == ["T01-atlas", "c2"]
    stored = store.case(None, "T01-atlas", "c2").current
    assert stored is not None and not stored.met and stored.adjudicator == "zoe"
    # a refused save asks for nothing
    view.note.setPlainText("")
    with qtbot.assertNotEmitted(view.next_requested):
        assert not view.save_and_next()
    assert "note" in view.error.text()


def test_a_decision_stored_meanwhile_is_shown_not_replaced(
    qtbot: Any, store: AdjudicationStore
) -> None:
    """Two adjudicators on one unit: the second to save is refused, sees the first's
    decision (in the message and the history) with their own draft kept, and replaces it
    only by saving again."""
    view = QtAdjudicationView(store, "zoe")
    qtbot.addWidget(view)
    with qtbot.waitSignal(view.case_loaded, timeout=30_000):
        view.open_case(None, "T01-atlas", "c2")
    view.verdict_buttons["met"].click()
    view.note.setPlainText("Mentions batch 2.")
    # another adjudicator decides the unit in between
    other = store.case(None, "T01-atlas", "c2")
    store.record(other, "not_met", "Blames the donors.", "yann")
    assert view.save() is False
    message = view.error.text()
    assert "adjudicated by yann" in message and "Blames the donors." in message
    assert view.history.topLevelItem(0).text(1) == "yann"
    assert view.note.toPlainText() == "Mentions batch 2." and view.verdict == "met"
    stored = store.case(None, "T01-atlas", "c2").current
    assert stored is not None and stored.adjudicator == "yann"
    assert view.save() is True  # on purpose now
    stored = store.case(None, "T01-atlas", "c2").current
    assert stored is not None and (stored.adjudicator, stored.revision) == ("zoe", 2)
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=30_000)


def test_the_view_opens_at_the_top_without_an_empty_artifacts_column_and_nothing_pressed(
    qtbot: Any, store: AdjudicationStore
) -> None:
    """Issue #33: opened scrolled to the middle with an empty "no artifacts" column; after
    Save and next "Not met" looked pressed though nothing was chosen; the refusal wrapped
    one word per line. At 1280×720."""
    view = QtAdjudicationView(store, "zoe")
    qtbot.addWidget(view)
    view.resize(1280, 720)
    view.show()
    qtbot.waitExposed(view)
    view.open_case_now(None, "T01-atlas", "c2")  # T01 has an artifact
    assert view.artifacts_box.isVisible()
    view.set_verdict("not_met")
    assert view.verdict_buttons["not_met"].isChecked()
    view.note.setPlainText("No evidence given.")
    assert view.save()
    bar = view.response_view.verticalScrollBar()
    bar.setValue(bar.maximum() // 2)
    view.open_case_now(None, "T04-atlas", "c1")  # the next case: T04 has no artifacts
    assert view.verdict is None
    assert not any(b.isChecked() for b in view.verdict_buttons.values())
    assert not view.artifacts_box.isVisible()
    assert view.response_view.verticalScrollBar().value() == 0
    assert view.prompt_view.verticalScrollBar().value() == 0
    view.note.setPlainText("")
    assert not view.save()  # refused: no verdict, no note
    text = view.error.text()
    assert len(text.split()) >= 4
    lines = view.error.height() / view.error.fontMetrics().lineSpacing()
    assert view.error.width() >= 400 and lines <= 3, (view.error.width(), lines)
