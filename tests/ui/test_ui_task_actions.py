"""Task acceptance in the Tasks view without a terminal (#33): close a review round,
force-accept a task, the acceptance settings dialog, every refusal in words. Driven in a
real coordinator window (pytest-qt, offscreen) with keys and clicks; the database must
hold what ``gradercal tasks close|accept --force|settings`` would have written, on SQLite
and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QDialogButtonBox, QInputDialog, QMessageBox
from sqlalchemy import select

from gradercal.db import models as m
from gradercal.db.acceptance import act, load_acceptance, load_settings, save_settings
from gradercal.db.grading import GradingStore
from gradercal.db.repo import Repository
from gradercal.db.session import Database, open_database
from gradercal.formats import read_path
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_settings import QtAppSettings
from gradercal.ui.qt_tasks import QtTasksView
from gradercal.ui.window_fit import FRAME
from tests.support.acceptance import AGREE, BENCH, survey, write_acceptance_benchmark

pytestmark = pytest.mark.gui


@pytest.fixture
def acc_db(db_url: str, tmp_path: Path) -> Iterator[Database]:
    db = open_database(db_url)
    Repository(db).import_data(read_path(write_acceptance_benchmark(tmp_path / "bench")))
    save_settings(db, BENCH, n_boot=0)
    survey(db, "T1", ("ana", "ben", "cleo"), AGREE)
    survey(db, "T2", ("ana", "ben"), AGREE)
    act(db, BENCH, "T1", "open", actor="dana")
    act(db, BENCH, "T2", "open", actor="dana")
    try:
        yield db
    finally:
        db.dispose()


def _tasks_window(qtbot: Any, db: Database, tmp_path: Path) -> tuple[QtMainWindow, QtTasksView]:
    window = QtMainWindow(
        GradingStore(db), QtAppSettings(tmp_path / "s.ini"), db.display,
        track_time=False, coordinator=True,
    )  # fmt: skip
    qtbot.addWidget(window)
    window._restore_window((0, 0, 1280, 720))
    window.show()
    qtbot.waitExposed(window)
    window.open_dashboard(BENCH, compute=False)
    handle = window.windowHandle()
    assert handle is not None
    qtbot.keyClick(handle, Qt.Key.Key_5, Qt.KeyboardModifier.ControlModifier)
    view = window.tasks_view
    assert view is not None and window.stack.currentWidget() is view
    return window, view


def _when_modal(kind: type, act_on: Callable[[Any], None]) -> None:
    """Act on the next modal dialog of ``kind`` as soon as it is up."""

    def poll() -> None:
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, kind):
            QTimer.singleShot(20, poll)
            return
        act_on(dialog)

    QTimer.singleShot(0, poll)


def _confirm(seen: list[str]) -> Callable[[Any], None]:
    def click(box: QMessageBox) -> None:
        seen.append(box.text())
        yes = box.findChild(object, "tasks.confirm.yes")
        assert yes is not None
        yes.click()  # type: ignore[attr-defined]

    return click


def _note(text: str) -> Callable[[Any], None]:
    def fill(dialog: QInputDialog) -> None:
        dialog.setTextValue(text)
        dialog.accept()

    return fill


def _key(qtbot: Any, view: QtTasksView, key: Qt.Key) -> None:
    view.window().activateWindow()
    qtbot.waitUntil(view.window().isActiveWindow)
    view.table.setFocus()
    mods = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    qtbot.keyClick(view.table, key, mods)


def _rounds(db: Database, task: str) -> list[tuple[int, bool, str | None]]:
    with db.read() as s:
        rows = s.execute(
            select(m.TaskRound.number, m.TaskRound.closed_at, m.TaskRound.decision)
            .join(m.Task, m.Task.id == m.TaskRound.task_id)
            .where(m.Task.external_id == task)
            .order_by(m.TaskRound.number)
        ).all()
    return [(int(n), c is not None, d) for n, c, d in rows]


def test_close_force_accept_and_refusals_in_words(
    qtbot: Any, acc_db: Database, tmp_path: Path
) -> None:
    window, view = _tasks_window(qtbot, acc_db, tmp_path)
    # a draft cannot be accepted: said in words, with the window's way out, no command
    assert view.select("T3")
    _when_modal(QInputDialog, _note(""))
    qtbot.mouseClick(view.buttons["accept"], Qt.MouseButton.LeftButton)
    said = view.status.text()
    assert "no closed review round" in said and "Force accept… (Ctrl+Shift+F)" in said
    assert "--" not in said and "tasks " not in said
    assert not view.acceptance_actions.buttons["close"].isEnabled()
    # Ctrl+Shift+C on a task without an open round: refused in words, nothing written
    _key(qtbot, view, Qt.Key.Key_C)
    assert view.status.text() == "T3: no open round to close"
    assert _rounds(acc_db, "T3") == []

    # T2's round is ready (graded and surveyed): Ctrl+Shift+C closes it as `tasks close`
    assert view.select("T2")
    assert view.acceptance_actions.buttons["close"].isEnabled()
    _key(qtbot, view, Qt.Key.Key_C)
    assert _rounds(acc_db, "T2") == [(1, True, None)]
    assert view.status.text() == "T2: round closed"
    qtbot.waitUntil(lambda: not view.acceptance_actions.buttons["close"].isEnabled())
    # T2 is below the bar: Ctrl+Shift+F asks, says why, takes a note, accepts it anyway
    seen: list[str] = []
    _when_modal(QMessageBox, _confirm(seen))
    QTimer.singleShot(0, lambda: _when_modal(QInputDialog, _note("accepted despite c9")))
    _key(qtbot, view, Qt.Key.Key_F)
    assert "below the bar 0.9" in seen[0]
    assert _rounds(acc_db, "T2") == [(1, True, "accepted")]
    with acc_db.read() as s:
        revisions = s.execute(
            select(m.Revision.data, m.Revision.source).where(m.Revision.entity == "task_round")
        ).all()
    assert [(d["action"], src) for d, src in revisions][-2:] == [("close", "ui"), ("accept", "ui")]
    assert revisions[-1][0]["note"] == "accepted despite c9"
    assert {t.task: t.status for t in load_acceptance(acc_db, BENCH).tasks}["T2"] == "accepted"

    # a round not ready: Close round asks first ("Close anyway"), Cancel leaves it open
    act(acc_db, BENCH, "T3", "open", actor="dana")
    view.refresh()
    assert view.select("T3")

    def cancel(box: QMessageBox) -> None:
        seen.append(box.text())
        box.reject()

    _when_modal(QMessageBox, cancel)
    qtbot.mouseClick(view.acceptance_actions.buttons["close"], Qt.MouseButton.LeftButton)
    assert "not ready to close" in seen[-1] and "--" not in seen[-1]
    assert _rounds(acc_db, "T3") == [(1, False, None)]
    _when_modal(QMessageBox, _confirm(seen))
    qtbot.mouseClick(view.acceptance_actions.buttons["close"], Qt.MouseButton.LeftButton)
    assert _rounds(acc_db, "T3") == [(1, True, None)]
    assert window.stack.currentWidget() is view


def test_acceptance_settings_dialog(qtbot: Any, acc_db: Database, tmp_path: Path) -> None:
    window, view = _tasks_window(qtbot, acc_db, tmp_path)
    # the Tasks view with its added row of buttons needs no more than a laptop screen
    need = window.minimumSizeHint()
    for width, height in ((1280, 720), (1024, 700)):
        assert need.width() + FRAME[0] <= width and need.height() + FRAME[1] <= height, need
    _key(qtbot, view, Qt.Key.Key_S)
    dialog = view.acceptance_actions.settings_dialog
    assert dialog is not None and dialog.isVisible()
    # it fits a 1280×720 laptop screen
    need = dialog.sizeHint()
    assert need.width() + FRAME[0] <= 1280 and need.height() + FRAME[1] <= 720, need
    # as `gradercal tasks settings --statistic gwet_ac1 --bar 0.85 --rule interval
    #  --survey-min grounded=4.5`
    dialog.statistic.setFocus()
    dialog.statistic.setCurrentIndex(dialog.statistic.findData("gwet_ac1"))
    dialog.bar.lineEdit().selectAll()
    qtbot.keyClicks(dialog.bar, "0.85")
    dialog.rule.setCurrentIndex(dialog.rule.findData("interval"))
    dialog.survey["grounded"].setValue(4.5)
    buttons = dialog.findChild(QDialogButtonBox)
    assert buttons is not None
    save = buttons.button(QDialogButtonBox.StandardButton.Save)
    qtbot.mouseClick(save, Qt.MouseButton.LeftButton)
    assert not dialog.isVisible()
    s = load_settings(acc_db, BENCH)
    assert (s.statistic, s.bar, s.rule) == ("gwet_ac1", 0.85, "interval")
    assert s.survey_min["grounded"] == 4.5 and s.survey_min["real_research"] == 4.0
    assert s.n_boot == 0 and s.min_rounds == 1  # the others stay
    assert "Gwet" in view.summary.text() and "≥ 0.85" in view.summary.text()
    assert view.status.text() == "Acceptance settings saved."
