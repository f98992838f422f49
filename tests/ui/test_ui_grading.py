"""The grading window driven like a grader would (pytest-qt, offscreen): keyboard only,
blinded, saved as it goes, undoable, and back where it stopped."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QAbstractItemModel, QModelIndex, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QApplication,
    QComboBox,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QTabWidget,
    QTextEdit,
    QWidget,
)
from sqlalchemy import select

from gradercal.db import models as m
from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.session import open_database
from gradercal.ui import qt_workers
from gradercal.ui.grading_state import IDLE_LIMIT_S, TimeTracker
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_settings import QtAppSettings
from gradercal.ui.qt_shortcuts_dialog import QtShortcutsDialog
from gradercal.ui.qt_skip_dialog import QtSkipDialog
from gradercal.ui.shortcuts import SHORTCUTS, window_shortcuts
from gradercal.ui.viewers.qt_pdf_viewer import QtPdfViewer
from tests.support.gui import (
    GRADER,
    JUDGE,
    JUDGE_RATIONALE,
    MODELS,
    OTHER_GRADER,
    OTHER_RATIONALE,
    import_folder,
    write_gui_benchmark,
)

pytestmark = pytest.mark.gui

BENCH = "gui-bench"
SECRETS = (*MODELS, JUDGE, OTHER_GRADER, JUDGE_RATIONALE, OTHER_RATIONALE)

Opener = Callable[..., QtMainWindow]


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    path = str(tmp_path / "gui.sqlite")
    import_folder(path, write_gui_benchmark(tmp_path / "bench"))
    return path


@pytest.fixture
def open_window(qtbot: Any, db_path: str, tmp_path: Path) -> Iterator[Opener]:
    """Open a main window as GRADER (settings in a temporary INI file)."""
    databases = []

    def make(grader: str = GRADER, mode: str = "grading") -> QtMainWindow:
        db = open_database(db_path)
        databases.append(db)
        settings = QtAppSettings(tmp_path / "settings.ini")
        window = QtMainWindow(GradingStore(db), settings, db.display, track_time=True)
        qtbot.addWidget(window)
        window.resize(1500, 950)
        window.show()
        qtbot.waitExposed(window)
        window.activateWindow()
        qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
        window.start_session(grader, BENCH, mode, load=False)
        if mode == "review":
            assert window.review is not None
            window.review.load()
        else:
            assert window.grading is not None
            with qtbot.waitSignal(window.grading.item_ready, timeout=20_000):
                window.grading.load_queue_now()
        return window

    yield make
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
    for db in databases:
        db.dispose()


def press(qtbot: Any, window: QWidget, key: str) -> None:
    """Type a key sequence ("M", "Ctrl+Return", …) into whatever has the focus."""
    seq = QKeySequence(key)[0]
    target = QApplication.focusWidget() or window
    qtbot.keyClick(target, seq.key(), seq.keyboardModifiers())


def judgments(db_path: str, grader: str = GRADER) -> dict[tuple[str, str], m.Judgment]:
    db = open_database(db_path)
    try:
        with db.read() as s:
            rows = s.execute(
                select(m.Response.external_id, m.Criterion.external_id, m.Judgment)
                .join(m.Response, m.Response.id == m.Judgment.response_id)
                .join(m.Criterion, m.Criterion.id == m.Judgment.criterion_id)
                .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
                .where(m.Grader.name == grader)
            ).all()
            return {(r, c): j for r, c, j in rows}
    finally:
        db.dispose()


def response_of(db_path: str, assignment_id: int) -> str:
    """The external id of the response behind an assignment (the test may unblind)."""
    db = open_database(db_path)
    try:
        with db.read() as s:
            return str(
                s.scalar(
                    select(m.Response.external_id)
                    .join(m.Assignment, m.Assignment.response_id == m.Response.id)
                    .where(m.Assignment.id == assignment_id)
                )
            )
    finally:
        db.dispose()


def go_to_task(qtbot: Any, window: QtMainWindow, task: str) -> int:
    """Press ] until an item of ``task`` is shown (keyboard only); returns its index."""
    g = window.grading
    assert g is not None
    for _ in range(len(g.queue)):
        if g.current is not None and g.current.item.task_id == task:
            return g.index
        with qtbot.waitSignal(g.item_ready, timeout=20_000):
            press(qtbot, window, "]")
    raise AssertionError(f"no item of {task}")


def test_a_response_is_graded_with_the_keyboard_only(
    qtbot: Any, open_window: Opener, db_path: str
) -> None:
    window = open_window()
    g = window.grading
    assert g is not None
    index = go_to_task(qtbot, window, "P1")
    aid = g.queue[index].assignment_id
    assert g.current_row() == 0
    press(qtbot, window, "M")  # c1 met → moves on to c2
    press(qtbot, window, "N")  # c2 not met
    press(qtbot, window, "N")  # c3 (penalty) not met
    press(qtbot, window, "P")  # c4 partial (3-level criterion)
    press(qtbot, window, "R")
    assert QApplication.focusWidget() is g.rubric.rationale
    qtbot.keyClicks(g.rubric.rationale, "explains the t-test only")
    press(qtbot, window, "Escape")
    assert QApplication.focusWidget() is g.rubric.table
    press(qtbot, window, "K")
    press(qtbot, window, "U")  # c3 flagged unclear, focus to the note
    qtbot.keyClicks(g.rubric.note, "penalty wording is vague")
    press(qtbot, window, "Escape")
    # c1 6 + c2 0 + c3 (penalty, not met) 0 + c4 partial 2·1/2 = 7 of 12 positive points
    assert g.rubric.score_label.text().startswith("Score 0.58 · FAIL")
    with qtbot.waitSignal(g.item_ready, timeout=20_000):
        press(qtbot, window, "Ctrl+Return")
    assert g.index != index  # moved on to the next open response

    rid = response_of(db_path, aid)
    rows = judgments(db_path)
    got = {
        c: (j.met, j.level, j.rationale, j.unclear, j.unclear_note, j.source)
        for (r, c), j in rows.items()
        if r == rid
    }
    assert got == {
        "c1": (True, None, None, False, None, "ui"),
        "c2": (False, None, None, False, None, "ui"),
        "c3": (False, None, None, True, "penalty wording is vague", "ui"),
        "c4": (False, 1, "explains the t-test only", False, None, "ui"),
    }
    store = GradingStore(open_database(db_path))
    try:
        assert store.queue_item(aid).status == "submitted"
    finally:
        store.db.dispose()


def test_score_follows_the_verdicts(qtbot: Any, open_window: Opener) -> None:
    window = open_window()
    g = window.grading
    assert g is not None
    go_to_task(qtbot, window, "P1")
    for key in ("M", "M", "N", "M"):  # c1 6, c2 4, c3 -3 not met, c4 2 met
        press(qtbot, window, key)
    # (6 + 4 + 0 + 2) / (6 + 4 + 2) = 1.0
    assert g.rubric.score_label.text().startswith("Score 1.00 · PASS")
    assert g.current_row() == 3  # the last criterion: nowhere to move on to
    press(qtbot, window, "K")
    press(qtbot, window, "M")  # the -3 penalty is met: (12 - 3) / 12 = 0.75
    assert g.rubric.score_label.text().startswith("Score 0.75 · PASS")
    assert g.current_row() == 3
    press(qtbot, window, "Backspace")  # clear c4: the score is provisional again
    assert g.rubric.score_label.text().startswith("So far 0.58 · 3 / 4 answered")


def _texts_of_model(model: QAbstractItemModel, parent: QModelIndex | None = None) -> list[str]:
    parent = parent or QModelIndex()
    out: list[str] = []
    for r in range(model.rowCount(parent)):
        for c in range(model.columnCount(parent)):
            idx = model.index(r, c, parent)
            for role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
                v = model.data(idx, role)
                if v is not None:
                    out.append(str(v))
            if c == 0 and model.rowCount(idx) > 0:
                out.extend(_texts_of_model(model, idx))
    for c in range(model.columnCount(parent)):
        v = model.headerData(c, Qt.Orientation.Horizontal)
        if v is not None:
            out.append(str(v))
    return out


def all_texts(window: QWidget) -> list[str]:
    """Every text a person could see or hover in the window's widget tree."""
    out = [window.windowTitle()]
    for w in [window, *window.findChildren(QWidget)]:
        out += [w.windowTitle(), w.toolTip(), w.statusTip(), w.whatsThis(), w.accessibleName()]
        if isinstance(w, QLabel | QAbstractButton | QLineEdit):
            out.append(w.text())
        if isinstance(w, QLineEdit):
            out.append(w.placeholderText())
        if isinstance(w, QTextEdit):
            out += [w.toPlainText(), w.toHtml()]
        if isinstance(w, QPlainTextEdit):
            out.append(w.toPlainText())
        if isinstance(w, QComboBox):
            out += [w.itemText(i) for i in range(w.count())]
        if isinstance(w, QTabWidget):
            for i in range(w.count()):
                out += [w.tabText(i), w.tabToolTip(i)]
        if isinstance(w, QAbstractItemView) and w.model() is not None:
            out += _texts_of_model(w.model())
    for a in window.findChildren(QAction):
        out += [a.text(), a.toolTip(), a.statusTip()]
    return [t for t in out if t]


def assert_blind(window: QWidget) -> None:
    texts = "\n".join(all_texts(window))
    for secret in SECRETS:
        assert secret not in texts, f"{secret!r} is visible"


def test_grading_views_never_show_models_judges_or_other_graders(
    qtbot: Any, open_window: Opener
) -> None:
    window = open_window()
    g = window.grading
    assert g is not None
    window.queue_dock.show()
    seen_tasks = set()
    for i in range(len(g.queue)):
        if i:
            with qtbot.waitSignal(g.item_ready, timeout=20_000):
                g.open_index(i)
        for tab in range(g.artifacts.tabs.count()):  # open every artifact viewer
            g.artifacts.tabs.setCurrentIndex(tab)
            viewer = g.artifacts.viewer(tab)
            qtbot.waitUntil(lambda v=viewer: v.is_ready, timeout=20_000)
        seen_tasks.add(g.current.item.task_id if g.current else None)
        assert g.current is not None and g.current.judgments == {}
        assert_blind(window)
    assert seen_tasks == {"P1", "P2", "P3"}
    assert "Response A" in "\n".join(all_texts(window))
    window.set_mode("review")
    assert_blind(window)


def test_closing_without_submitting_keeps_every_answer(
    qtbot: Any, open_window: Opener, db_path: str
) -> None:
    window = open_window()
    g = window.grading
    assert g is not None
    index = go_to_task(qtbot, window, "P1")
    aid = g.queue[index].assignment_id
    press(qtbot, window, "M")
    press(qtbot, window, "N")
    press(qtbot, window, "R")
    qtbot.keyClicks(g.rubric.rationale, "typed just before closing")
    window.close()  # no pause, no submit: the text is saved on close
    rid = response_of(db_path, aid)
    rows = {c: j for (r, c), j in judgments(db_path).items() if r == rid}
    assert rows["c1"].met is True
    # R after N explains that verdict: the rationale is c2's (issue #33), not the next one's
    assert rows["c2"].met is False and rows["c2"].rationale == "typed just before closing"
    assert "c3" not in rows

    again = open_window()
    g2 = again.grading
    assert g2 is not None
    assert g2.current is not None and g2.current.item.assignment_id == aid
    assert g2.state is not None
    assert g2.state.value("c1").met is True and g2.state.value("c2").met is False
    assert g2.current.item.status == "in_progress"


def test_undo_and_redo_change_the_saved_judgment(
    qtbot: Any, open_window: Opener, db_path: str
) -> None:
    window = open_window()
    g = window.grading
    assert g is not None
    index = go_to_task(qtbot, window, "P1")
    rid = response_of(db_path, g.queue[index].assignment_id)
    press(qtbot, window, "M")  # c1 met
    press(qtbot, window, "K")
    press(qtbot, window, "N")  # c1 not met
    assert judgments(db_path)[(rid, "c1")].met is False
    undo = window.actions_by_id["edit.undo"]
    assert undo.isEnabled() and undo.text() == "Undo Not met · 1. Says the claim is not supported"
    press(qtbot, window, "Ctrl+Z")
    assert judgments(db_path)[(rid, "c1")].met is True
    press(qtbot, window, "Ctrl+Z")
    assert judgments(db_path)[(rid, "c1")].met is None
    assert g.state is not None and not g.state.value("c1").answered
    press(qtbot, window, "Ctrl+Shift+Z")
    row = judgments(db_path)[(rid, "c1")]
    assert row.met is True
    assert row.revision == 5  # met, not met, met (undo), none (undo), met (redo)
    assert g.state.value("c1").met is True


def test_undo_merges_typing_into_one_step(qtbot: Any, open_window: Opener, db_path: str) -> None:
    window = open_window()
    g = window.grading
    assert g is not None
    go_to_task(qtbot, window, "P1")
    press(qtbot, window, "R")
    qtbot.keyClicks(g.rubric.rationale, "first")
    g.flush_text()
    qtbot.keyClicks(g.rubric.rationale, " second")
    g.flush_text()
    assert g.undo_stack.count() == 1
    press(qtbot, window, "Escape")
    press(qtbot, window, "Ctrl+Z")
    assert g.state is not None and g.state.value("c1").rationale is None
    assert g.rubric.rationale.toPlainText() == ""


def test_the_window_resumes_where_the_grader_stopped(qtbot: Any, open_window: Opener) -> None:
    window = open_window()
    g = window.grading
    assert g is not None
    for _ in range(4):
        with qtbot.waitSignal(g.item_ready, timeout=20_000):
            press(qtbot, window, "]")
    press(qtbot, window, "J")
    press(qtbot, window, "J")
    where = (g.index, g.current_row())
    assert where[0] == 4 and where[1] == min(2, len(g.state or []) - 1)
    window.close()
    again = open_window()
    assert again.grading is not None
    assert (again.grading.index, again.grading.current_row()) == where


def test_resume_without_settings_uses_the_database(
    qtbot: Any, open_window: Opener, db_path: str, tmp_path: Path
) -> None:
    store = GradingStore(open_database(db_path))
    try:
        store.create_grader(GRADER)
        queue = store.ensure_queue(GRADER, BENCH)
        store.save_judgment(queue[5].assignment_id, "c1", JudgmentValue(met=True))
    finally:
        store.db.dispose()
    window = open_window()
    assert window.grading is not None and window.grading.index == 5


def test_submit_needs_every_criterion_and_skip_needs_a_reason(
    qtbot: Any, open_window: Opener
) -> None:
    window = open_window()
    g = window.grading
    assert g is not None
    index = go_to_task(qtbot, window, "P1")
    press(qtbot, window, "M")
    press(qtbot, window, "Ctrl+Return")
    assert g.index == index and g.queue[index].status != "submitted"
    assert g.rubric.message.text() == (  # named as the rubric shows them, not c2, c3, c4
        "Not submitted: 3 criteria not answered yet: 2. Notes the missing viability dye; "
        "3. Endorses the claim; 4. Explains the statistics."
    )
    assert g.rubric.model.data(g.rubric.model.index(1, 2)) == "2. Notes the missing viability dye"
    assert g.rubric.criterion_label.text() == "2. Notes the missing viability dye"
    assert g.current_row() == 1  # sent to the first unanswered criterion
    dialog = QtSkipDialog("P1 · Response A")
    qtbot.addWidget(dialog)
    ok = dialog.buttons.button(dialog.buttons.StandardButton.Ok)
    assert not ok.isEnabled()
    dialog.choice.setCurrentIndex(1)
    assert ok.isEnabled() and dialog.reason() == "Outside my expertise"
    with qtbot.waitSignal(g.item_ready, timeout=20_000):
        g.skip("Outside my expertise")
    assert g.queue[index].status == "skipped"
    assert g.queue[index].skip_reason == "Outside my expertise"


def test_auto_criteria_are_read_only(qtbot: Any, open_window: Opener, db_path: str) -> None:
    window = open_window()
    g = window.grading
    assert g is not None
    index = go_to_task(qtbot, window, "P2")
    assert g.state is not None and g.state.rows[0].is_auto
    assert "answer answer.ic50 = " in g.rubric.auto_label.text()
    press(qtbot, window, "M")
    assert "graded automatically" in g.rubric.message.text()
    rid = response_of(db_path, g.queue[index].assignment_id)
    assert (rid, "auto1") not in judgments(db_path)


def test_time_on_task_is_recorded(qtbot: Any, open_window: Opener) -> None:
    clock = [1000.0]
    window = open_window()
    g = window.grading
    assert g is not None
    g.tracker = TimeTracker(idle_limit=300, clock=lambda: clock[0])
    clock[0] += 42
    # real input reaches the window's QWindow first, where the activity filter listens
    handle = window.windowHandle()
    assert handle is not None
    qtbot.keyClick(handle, Qt.Key.Key_J)
    assert g.tracker._last_input == 1042.0
    assert g.current_row() == 1  # and the key still did its job
    aid = g.queue[g.index].assignment_id
    g.flush_time(final=True)
    assert g.store.queue_item(aid).time_spent_s == pytest.approx(42.0)
    assert "0 min on task" in g.progress_text()


def test_a_minute_without_input_stops_the_clock(qtbot: Any, open_window: Opener) -> None:
    """Issue #16: idle time is not time on task (the window used to count 5 idle minutes)."""
    window = open_window()
    g = window.grading
    assert g is not None
    assert g.tracker.idle_limit == IDLE_LIMIT_S == 60
    clock = [5000.0]
    g.tracker.clock = lambda: clock[0]
    g.tracker.reset()
    g.flush_time()  # whatever the loading took, before the fake clock
    g._unsaved_time = 0.0
    aid = g.queue[g.index].assignment_id
    before = g.store.queue_item(aid).time_spent_s
    handle = window.windowHandle()
    assert handle is not None
    clock[0] += 20
    qtbot.keyClick(handle, Qt.Key.Key_J)  # 20 s of work, then a key
    clock[0] += 600  # ten minutes away: one more minute counts, not ten
    g.flush_time(final=True)
    assert g.store.queue_item(aid).time_spent_s - before == pytest.approx(20 + 60)


def test_time_tracker_leaves_idle_time_out() -> None:
    now = [0.0]
    t = TimeTracker(idle_limit=60, clock=lambda: now[0])
    now[0] = 30
    t.touch()
    now[0] = 500  # away from 90 s to 500 s
    t.touch()
    now[0] = 510
    assert t.take() == pytest.approx(90 + 10)
    now[0] = 1000  # no input since 500: only 60 s count
    assert t.take() == pytest.approx(50)


def test_f1_lists_every_shortcut(qtbot: Any, open_window: Opener) -> None:
    window = open_window()
    press(qtbot, window, "F1")
    dialog = window.findChild(QtShortcutsDialog)
    assert dialog is not None and dialog.isVisible()
    listed = "\n".join(_texts_of_model(dialog.tree.model()))
    for s in window_shortcuts(coordinator=False):  # every key of a grader's window
        assert s.label in listed
    for sid, action in window.actions_by_id.items():
        assert action.shortcuts(), f"{sid} has no key"


def test_font_size_and_layout_are_remembered(qtbot: Any, open_window: Opener) -> None:
    window = open_window()
    before = window.settings.font_pt
    press(qtbot, window, "Ctrl+=")
    assert window.settings.font_pt == before + 1
    assert window.stack.font().pointSize() == before + 1
    assert window.grading is not None
    window.grading.splitter.setSizes([300, 700, 500])
    sizes = window.grading.splitter.sizes()
    window.close()
    again = open_window()
    assert again.settings.font_pt == before + 1
    assert again.grading is not None and again.grading.splitter.sizes() == sizes


def test_task_review_with_the_keyboard(qtbot: Any, open_window: Opener) -> None:
    window = open_window(mode="review")
    r = window.review
    assert r is not None and r.current is not None
    assert r.current.task.id == "P1"
    for key in ("4", "5", "2", "3"):
        press(qtbot, window, key)

    press(qtbot, window, "C")
    qtbot.keyClicks(r.comment, "rubric c3 is vague")
    press(qtbot, window, "Escape")
    review = r.store.load_review(GRADER, BENCH, "P1").review
    assert dict(review.answers) == {
        "real_research": 4,
        "reasoning_skill": 5,
        "grounded": 2,
        "strong_task": 3,
    }
    assert review.comment == "rubric c3 is vague"
    press(qtbot, window, "]")
    assert r.current.task.id == "P2"
    assert r.progress_text() == "1 / 3 tasks reviewed"
    assert_blind(window)


def test_a_corrupt_artifact_leaves_the_window_working(
    qtbot: Any, tmp_path: Path, open_window: Opener
) -> None:
    broken = str(tmp_path / "broken.sqlite")
    import_folder(broken, write_gui_benchmark(tmp_path / "broken", corrupt_pdf=True))
    db = open_database(broken)
    try:
        window = QtMainWindow(
            GradingStore(db), QtAppSettings(tmp_path / "b.ini"), db.display, track_time=False
        )
        qtbot.addWidget(window)
        window.show()
        window.start_session(GRADER, BENCH, load=False)
        g = window.grading
        assert g is not None
        with qtbot.waitSignal(g.item_ready, timeout=20_000):
            g.load_queue_now()
        index = next(i for i, q in enumerate(g.queue) if q.task_id == "P1")
        with qtbot.waitSignal(g.item_ready, timeout=20_000):
            g.open_index(index)
        viewer = g.artifacts.current_viewer()
        assert viewer is not None and viewer.error is not None
        g.artifacts.step(1)  # the notes next to it still open
        notes = g.artifacts.current_viewer()
        assert notes is not None
        qtbot.waitUntil(lambda: notes.is_ready, timeout=20_000)
        assert notes.error is None
        press(qtbot, window, "M")
        assert g.state is not None and g.state.value("c1").met is True
        qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
        window.close()
    finally:
        db.dispose()


def test_screenshot_mode_writes_the_whole_window(db_path: str, tmp_path: Path, qapp: Any) -> None:
    from click.testing import CliRunner
    from PySide6.QtGui import QImage

    from gradercal.cli.gui import gui

    out = tmp_path / "shot.png"
    result = CliRunner().invoke(
        gui, ["--db", db_path, "--grader", GRADER, "--screenshot", str(out), "--size", "1200x800"]
    )
    assert result.exit_code == 0, result.output
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1200, 800)


def test_the_blinding_check_finds_a_leak(qtbot: Any, open_window: Opener) -> None:
    window = open_window()
    assert window.grading is not None
    assert_blind(window)
    window.grading.response_title.setToolTip(f"by {MODELS[1]}")
    with pytest.raises(AssertionError, match=MODELS[1]):
        assert_blind(window)


def test_the_start_page_lists_people_and_creates_a_new_grader(
    qtbot: Any, db_path: str, tmp_path: Path
) -> None:
    db = open_database(db_path)
    try:
        settings = QtAppSettings(tmp_path / "start.ini")
        window = QtMainWindow(GradingStore(db), settings, db.display, track_time=False)
        qtbot.addWidget(window)
        window.show()
        page = window.show_start()
        listed = [page.graders.item(i).text() for i in range(page.graders.count())]
        assert len(listed) == 1 and listed[0].startswith(OTHER_GRADER)  # people only, no judge
        qtbot.keyClicks(page.new_name, "dr-new")
        with qtbot.waitSignal(window.session_started, timeout=10_000):
            qtbot.keyClick(page.new_name, Qt.Key.Key_Return)
        g = window.grading
        assert g is not None and g.grader == "dr-new"
        qtbot.waitUntil(lambda: g.current is not None, timeout=20_000)
        assert window.windowTitle() == "gradercal — gui-bench — dr-new"
        assert settings.last_grader(db.display) == "dr-new"
        qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
        window.close()
    finally:
        db.dispose()


def test_switching_grader_saves_and_returns_to_the_start_page(
    qtbot: Any, open_window: Opener, db_path: str
) -> None:
    window = open_window()
    g = window.grading
    assert g is not None and g.state is not None
    window.activateWindow()
    g.rubric.table.setFocus()
    press(qtbot, window, "M")
    qtbot.waitUntil(lambda: len(judgments(db_path)) == 1, timeout=10_000)
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
    press(qtbot, window, "Ctrl+Shift+G")
    page = window.start_page
    assert window.grading is None and window.stack.currentWidget() is page
    assert GRADER not in window.windowTitle()
    assert not window.actions_by_id["verdict.met"].isEnabled()
    # the other grader takes over; the first grader's verdict stays theirs alone
    qtbot.keyClicks(page.new_name, "dr-second")
    with qtbot.waitSignal(window.session_started, timeout=10_000):
        qtbot.keyClick(page.new_name, Qt.Key.Key_Return)
    assert window.grading is not None and window.grading.grader == "dr-second"
    qtbot.waitUntil(lambda: window.grading.current is not None, timeout=20_000)
    assert len(judgments(db_path)) == 1 and judgments(db_path, "dr-second") == {}
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
    window.close()


def test_a_submitted_response_is_read_only_until_reopened(
    qtbot: Any, open_window: Opener, db_path: str
) -> None:
    window = open_window()
    g = window.grading
    assert g is not None
    index = go_to_task(qtbot, window, "P1")
    aid = g.queue[index].assignment_id
    rid = response_of(db_path, aid)
    for key in ("M", "N", "N", "P"):
        press(qtbot, window, key)
    with qtbot.waitSignal(g.item_ready, timeout=20_000):
        press(qtbot, window, "Ctrl+Return")
    with qtbot.waitSignal(g.item_ready, timeout=20_000):
        press(qtbot, window, "[")  # back to the submitted response
    assert g.index == index and g.queue[index].status == "submitted"
    assert "read-only" in g.status_label.text()
    assert g.reopen_button.isVisible() and not g.submit_button.isEnabled()
    assert not g.rubric.buttons["met"].isEnabled() and not g.rubric.rationale.isEnabled()
    before = {
        c: (j.met, j.level, j.revision) for (r, c), j in judgments(db_path).items() if r == rid
    }
    press(qtbot, window, "M")  # c1 is met already; c2 would turn from not met to met
    press(qtbot, window, "J")
    press(qtbot, window, "M")
    press(qtbot, window, "Backspace")
    press(qtbot, window, "U")
    press(qtbot, window, "2")
    press(qtbot, window, "Ctrl+Z")
    after = {
        c: (j.met, j.level, j.revision) for (r, c), j in judgments(db_path).items() if r == rid
    }
    assert after == before  # nothing changed under the "submitted" label
    assert "reopen it (Ctrl+O)" in g.rubric.message.text()
    assert g.rubric.score_label.text().startswith("Score 0.58 · FAIL")
    assert g.store.queue_item(aid).status == "submitted"

    press(qtbot, window, "Ctrl+O")
    assert (
        g.queue[index].status == "in_progress" and g.store.queue_item(aid).status == "in_progress"
    )
    assert not g.reopen_button.isVisible() and g.submit_button.isEnabled()
    assert "read-only" not in g.status_label.text()
    history = g.store.reopen_history(aid)
    assert [(h["status"], h["actor"]) for h in history] == [("submitted", GRADER)]
    assert history[0]["submitted_at"] is not None
    press(qtbot, window, "M")  # c2, now open to changes
    assert judgments(db_path)[(rid, "c2")].met is True
    assert g.rubric.score_label.text().startswith("Score 0.92 · PASS")


def test_esc_leaves_any_text_box_for_the_rubric(qtbot: Any, open_window: Opener) -> None:
    window = open_window()
    g = window.grading
    assert g is not None
    go_to_task(qtbot, window, "P1")  # its first artifact is a PDF
    viewer = g.artifacts.current_viewer()
    qtbot.waitUntil(lambda: viewer is not None and viewer.is_ready, timeout=20_000)
    assert isinstance(viewer, QtPdfViewer)
    press(qtbot, window, "Ctrl+F")
    assert QApplication.focusWidget() is viewer.search_box
    qtbot.keyClicks(viewer.search_box, "dye")
    press(qtbot, window, "Escape")
    assert QApplication.focusWidget() is g.rubric.table
    row = g.current_row()
    press(qtbot, window, "J")  # a rubric key again, not a letter typed into the search
    assert viewer.search_box.text() == "dye" and g.current_row() == row + 1
    viewer.page_box.setFocus()  # the page number box too
    press(qtbot, window, "Escape")
    assert QApplication.focusWidget() is g.rubric.table
    press(qtbot, window, "R")
    qtbot.keyClicks(g.rubric.rationale, "kept")
    press(qtbot, window, "Escape")  # the rationale is saved on the way out
    assert QApplication.focusWidget() is g.rubric.table
    assert g.state is not None and g.state.rows[row + 1].value.rationale == "kept"


def test_every_listed_key_works_and_ctrl_y_redoes(
    qtbot: Any, open_window: Opener, db_path: str
) -> None:
    window = open_window()
    # Each action answers to the keys F1 lists for it, first (the menus show the first);
    # the platform's own undo/redo keys come after. An X11 desktop's redo was Ctrl+Shift+Z
    # only, so the Ctrl+Y that F1 listed did nothing.
    for s in SHORTCUTS:
        action = window.actions_by_id.get(s.id)
        if action is None:
            continue
        got = [k.toString(QKeySequence.SequenceFormat.PortableText) for k in action.shortcuts()]
        want = [QKeySequence(k).toString(QKeySequence.SequenceFormat.PortableText) for k in s.keys]
        assert got[: len(want)] == want, s.id
    g = window.grading
    assert g is not None
    index = go_to_task(qtbot, window, "P1")
    rid = response_of(db_path, g.queue[index].assignment_id)
    press(qtbot, window, "M")
    press(qtbot, window, "Ctrl+Z")
    assert judgments(db_path)[(rid, "c1")].met is None
    press(qtbot, window, "Ctrl+Y")
    assert judgments(db_path)[(rid, "c1")].met is True
    press(qtbot, window, "Ctrl+Z")
    press(qtbot, window, "Ctrl+Shift+Z")
    assert judgments(db_path)[(rid, "c1")].met is True


def test_keys_for_pdf_pages_zoom_sheets_and_links(
    qtbot: Any, open_window: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    from PySide6.QtGui import QDesktopServices

    opened: list[str] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toString()))
    window = open_window()
    g = window.grading
    assert g is not None
    go_to_task(qtbot, window, "P1")
    pdf = g.artifacts.current_viewer()
    assert isinstance(pdf, QtPdfViewer)
    qtbot.waitUntil(lambda: pdf.is_ready, timeout=20_000)
    press(qtbot, window, "Shift+PgDown")
    qtbot.waitUntil(lambda: pdf.current_page() == 1)
    press(qtbot, window, "Shift+PgUp")
    qtbot.waitUntil(lambda: pdf.current_page() == 0)
    fitted = pdf.zoom
    press(qtbot, window, "Alt+=")
    assert pdf.zoom > fitted and not pdf.fit_width
    press(qtbot, window, "Alt+-")
    press(qtbot, window, "Alt+-")
    assert pdf.zoom < fitted
    press(qtbot, window, "Alt+0")
    assert pdf.fit_width and pdf.zoom == pytest.approx(fitted)
    assert QApplication.focusWidget() is g.rubric.table  # the keys never took the focus
    press(qtbot, window, "Alt+PgDown")
    assert "not a workbook" in window.statusBar().currentMessage()
    with qtbot.waitSignal(g.item_ready, timeout=20_000):
        g.open_index(next(i for i, q in enumerate(g.queue) if q.task_id == "P2"))
    g.artifacts.tabs.setCurrentIndex(2)  # the workbook
    book = g.artifacts.current_viewer()
    assert book is not None
    qtbot.waitUntil(lambda: book.is_ready, timeout=20_000)
    assert QApplication.activeWindow() is window  # opening it took no focus away
    press(qtbot, window, "Alt+PgDown")
    assert book.sheet_box.currentText() == "lots"
    press(qtbot, window, "Alt+PgUp")
    assert book.sheet_box.currentText() == "runs"

    with qtbot.waitSignal(g.item_ready, timeout=20_000):  # P3 may come before P2
        g.open_index(next(i for i, q in enumerate(g.queue) if q.task_id == "P3"))
    g.artifacts.tabs.setCurrentIndex(6)  # the link
    link = g.artifacts.current_viewer()
    assert link is not None
    qtbot.waitUntil(lambda: link.is_ready, timeout=20_000)
    press(qtbot, window, "Ctrl+Shift+L")
    assert opened == ["https://example.org/vector-map"]
    listed = {s.id for s in SHORTCUTS}  # and F1 lists them all
    assert {"artifact.page_next", "artifact.zoom_in", "artifact.sheet_next"} <= listed
    assert "artifact.open_link" in listed


def test_criteria_are_named_by_number_and_text() -> None:
    from gradercal.ui.grading_state import shorten

    assert shorten("Notes   the\nmissing dye", 40) == "Notes the missing dye"
    long = "Identifies that the P. aeruginosa ATCC 27853 gentamicin results drift"
    assert shorten(long, 32) == "Identifies that the P…"  # cut at a word, within 32
    assert shorten(long, 200) == long


def test_inline_html_is_rendered_never_shown_as_tags(qtbot: Any) -> None:
    from PySide6.QtGui import QTextCharFormat

    from gradercal.ui.inline_html import to_plain
    from gradercal.ui.qt_markdown import QtMarkdownView

    view = QtMarkdownView()
    qtbot.addWidget(view)
    view.set_markdown(
        "- K<sub>D</sub> 2 nM, 10<sup>6</sup> copies, <b>bold <i>E. coli</i></b>, "
        '<span style="color:red">plain</span>, line<br>two\n'
        "- kept as written: a < b, <T>, the <s> token, `x<sub>1</sub>`\n\n"
        "```\n<sub>in a code block</sub>\n```\n"
    )
    text = view.toPlainText()
    assert "KD 2 nM, 106 copies, bold E. coli, plain, line\ntwo" in text  # a line break
    assert "a < b, <T>, the <s> token, x<sub>1</sub>" in text  # code keeps its tags
    assert "<sub>in a code block</sub>" in text
    assert "<b>" not in text and "<span" not in text and "<br>" not in text

    def format_at(word: str, k: int) -> QTextCharFormat:
        """The format of character ``k`` of the first ``word`` in the view."""
        cursor = view.document().find(word)
        assert not cursor.isNull(), word
        cursor.setPosition(cursor.selectionStart() + k + 1)
        return cursor.charFormat()

    sub = QTextCharFormat.VerticalAlignment.AlignSubScript
    sup = QTextCharFormat.VerticalAlignment.AlignSuperScript
    assert format_at("KD", 0).verticalAlignment() != sub  # "K" stays on the line,
    assert format_at("KD", 1).verticalAlignment() == sub  # "D" is a subscript
    assert format_at("106", 2).verticalAlignment() == sup
    assert format_at("106", 1).verticalAlignment() != sup
    coli = format_at("E. coli", 0)
    assert coli.fontItalic() and coli.fontWeight() >= 700
    # where only plain text fits (the rubric list, messages)
    assert to_plain("K<sub>D</sub> of 10<sup>6</sup>, H<sub>2</sub>O") == "K_D of 10⁶, H₂O"


def test_queue_search_finds_tasks_letters_positions_and_text() -> None:
    from gradercal.db.grading import QueueItem
    from gradercal.ui.grading_state import queue_matches

    def item(task: str, code: str, status: str = "pending") -> QueueItem:
        return QueueItem(0, 0, task, code, status, 0.0, None, 0, 4, 0)

    queue = [
        item("T07", "Response A"),
        item("T07", "Response B", "submitted"),
        item("T17", "Response A"),
    ]
    texts = {"T07": "K_D to the human receptor", "T17": "Flow cytometry gating"}
    assert queue_matches(queue, "") == [0, 1, 2]
    assert queue_matches(queue, "t07") == [0, 1]
    assert queue_matches(queue, "T07 b") == [1]
    assert queue_matches(queue, "2") == [1]  # a number alone: the queue position
    assert queue_matches(queue, "99") == []
    assert queue_matches(queue, "receptor", texts) == [0, 1]
    assert queue_matches(queue, "cytometry gating", texts) == [2]
    assert queue_matches(queue, "submitted") == [1]
    assert queue_matches(queue, "receptor") == []  # no texts given: ids and codes only


def test_ctrl_g_goes_to_a_task_or_response_from_the_queue(qtbot: Any, open_window: Opener) -> None:
    window = open_window()
    g = window.grading
    assert g is not None
    press(qtbot, window, "Ctrl+G")
    assert window.queue_dock.isVisible()
    assert QApplication.focusWidget() is window.queue_search

    def shown() -> list[str]:
        view, model = window.queue_view, window.queue_model
        return [
            f"{model.items[r].task_id} {model.items[r].code}"
            for r in range(model.rowCount())
            if not view.isRowHidden(r)
        ]

    qtbot.keyClicks(window.queue_search, "P3")
    assert sorted(shown()) == ["P3 Response A", "P3 Response B", "P3 Response C"]
    window.queue_search.clear()
    qtbot.keyClicks(window.queue_search, "stop codon")  # words of P3's rubric
    assert {s.split()[0] for s in shown()} == {"P3"}
    window.queue_search.clear()
    qtbot.keyClicks(window.queue_search, "P3 B")
    assert shown() == ["P3 Response B"]
    with qtbot.waitSignal(g.item_ready, timeout=20_000):
        press(qtbot, window, "Return")
    assert g.current is not None and g.current.item.label == "P3 · Response B"
    assert QApplication.focusWidget() is g.rubric.table
    press(qtbot, window, "Ctrl+G")
    window.queue_search.clear()
    qtbot.keyClicks(window.queue_search, "2")
    with qtbot.waitSignal(g.item_ready, timeout=20_000):
        press(qtbot, window, "Return")
    assert g.index == 1
    press(qtbot, window, "Ctrl+G")
    press(qtbot, window, "Escape")
    assert QApplication.focusWidget() is g.rubric.table


def test_the_queue_dock_colours_states_opens_on_one_click_and_survives_review(
    qtbot: Any, open_window: Opener, db_path: str
) -> None:
    from gradercal.ui.qt_rubric_model import verdict_color

    window = open_window()
    g = window.grading
    assert g is not None
    press(qtbot, window, "F9")
    assert window.queue_dock.isVisible()
    index = go_to_task(qtbot, window, "P1")
    for key in ("M", "N", "N", "P"):
        press(qtbot, window, key)
    with qtbot.waitSignal(g.item_ready, timeout=20_000):
        press(qtbot, window, "Ctrl+Return")
    press(qtbot, window, "M")  # the next one is in progress
    model = window.queue_model
    status = model.STATUS_COLUMN

    def looks(row: int) -> tuple[str, Any]:
        idx = model.index(row, status)
        return (
            model.data(idx, Qt.ItemDataRole.DisplayRole),
            model.data(idx, Qt.ItemDataRole.ForegroundRole),
        )

    assert looks(index) == ("submitted", verdict_color("met"))
    assert looks(g.index) == ("in progress", verdict_color("partial"))
    untouched = next(i for i, q in enumerate(g.queue) if q.status == "pending" and not q.n_answered)
    assert looks(untouched)[0] == "not started"
    # a verdict changed elsewhere, the grader keeps the screen: "changed elsewhere", in red
    other = GradingStore(open_database(db_path))
    try:
        aid = g.queue[g.index].assignment_id
        row = g.current_row()
        crit = g.state.rows[row].criterion.id if g.state else ""
        other.save_judgment(aid, crit, JudgmentValue(met=True, rationale="elsewhere"))
    finally:
        other.db.dispose()
    g.stale_prompt = lambda exc, mine: "cancel"
    g.set_verdict("not_met")
    assert looks(g.index) == ("changed elsewhere", verdict_color("not_met"))
    assert "changed elsewhere" in g.status_label.text()

    rect = window.queue_view.visualRect(model.index(index, 1))
    with qtbot.waitSignal(g.item_ready, timeout=20_000):  # one click opens
        qtbot.mouseClick(window.queue_view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert g.index == index
    press(qtbot, window, "Ctrl+2")  # task review: the queue steps aside …
    assert not window.queue_dock.isVisible()
    press(qtbot, window, "Ctrl+1")  # … and comes back
    assert window.queue_dock.isVisible()
    window.queue_dock.close()  # its own close button: closed for good
    press(qtbot, window, "Ctrl+2")
    press(qtbot, window, "Ctrl+1")
    assert not window.queue_dock.isVisible()


def test_the_last_submission_locks_the_editor_at_once(qtbot: Any, open_window: Opener) -> None:
    window = open_window()
    g = window.grading
    assert g is not None
    for i, q in enumerate(g.queue):  # every response but the last one is done already
        if i < len(g.queue) - 1:
            g.queue[i] = g.store.skip(q.assignment_id, "Outside my expertise")
    with qtbot.waitSignal(g.item_ready, timeout=20_000):
        g.open_index(len(g.queue) - 1)
    assert g.state is not None
    for k, row in enumerate(g.state.rows):
        if not row.is_auto:
            g.rubric.set_current_row(k)
            assert g.rubric.buttons["not_met"].isEnabled()
            g.set_verdict("not_met")
    g.submit()  # nothing left to open: the submitted response stays on screen, locked
    assert g.queue[g.index].status == "submitted"
    assert not g.rubric.buttons["not_met"].isEnabled() and not g.rubric.rationale.isEnabled()
