"""The "Run judge…" dialog against the real loopback chat-completions server.

Real widgets offscreen (pytest-qt), a real SQLite database, tests/support/judge_server.py over
HTTP on 127.0.0.1: verdicts are stored, Cancel stops a run cleanly, a server error is
shown in the dialog, and only a coordinator window offers the dialog at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction
from sqlalchemy import func, select

from gradercal.db import models as m
from gradercal.db.grading import GradingStore
from gradercal.db.repo import Repository
from gradercal.db.session import Database, open_database
from gradercal.formats import read_folder
from gradercal.ui import qt_workers
from gradercal.ui.qt_judge_dialog import QtJudgeDialog
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_settings import QtAppSettings
from tests.support.judge_server import JudgeServer, ServerConfig, expected_met

TIMEOUT = 30_000
KEY_ENV = "GC_TEST_DIALOG_KEY"


@pytest.fixture
def db(tmp_path: Path, mini: Path) -> Iterator[Database]:
    database = open_database(tmp_path / "dialog.sqlite")
    Repository(database).import_data(read_folder(mini))
    yield database
    database.dispose()


def verdicts(db: Database, name: str = "dlg") -> list[tuple[Any, ...]]:
    with db.read() as s:
        return list(
            s.execute(
                select(m.Judgment.met, m.Response.text, m.Criterion.text, m.Judgment.judge_run_id)
                .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
                .join(m.Response, m.Response.id == m.Judgment.response_id)
                .join(m.Criterion, m.Criterion.id == m.Judgment.criterion_id)
                .where(m.Grader.name == name)
            ).all()
        )


def run_status(db: Database, run_id: int) -> str:
    with db.read() as s:
        return str(s.scalar(select(m.JudgeRun.status).where(m.JudgeRun.id == run_id)))


def dialog_for(
    qtbot: Any, db: Database, srv: JudgeServer, *, concurrency: int = 4
) -> QtJudgeDialog:
    dialog = QtJudgeDialog(db)
    qtbot.addWidget(dialog)
    dialog.base_url.setText(srv.base_url)
    dialog.model.setText("gpt-4o-mini")
    dialog.judge.setText("dlg")
    dialog.key_env.setText(KEY_ENV)
    dialog.concurrency.setValue(concurrency)
    dialog.show()
    return dialog


def test_the_dialog_estimates_then_runs_and_stores_every_verdict(
    qtbot: Any, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-dialog-secret-0123456789")
    with JudgeServer(ServerConfig(latency=0.02)) as srv:
        dialog = dialog_for(qtbot, db, srv)
        assert "found in the environment" in dialog.key_state.text()
        assert "sk-dialog-secret" not in dialog.key_state.text()
        qtbot.mouseClick(dialog.estimate_button, Qt.MouseButton.LeftButton)
        assert "10 pairs, 10 requests" in dialog.estimate_label.text()
        assert srv.stats.requests == 0  # an estimate sends nothing
        with qtbot.waitSignal(dialog.run_finished, timeout=TIMEOUT) as finished:
            qtbot.mouseClick(dialog.start_button, Qt.MouseButton.LeftButton)
            assert not dialog.start_button.isEnabled()  # one run at a time
        assert dialog.wait()
        stats = finished.args[0]
        assert (stats["status"], stats["ok"], stats["saved"]) == ("completed", 10, 10)
        assert srv.stats.auth_headers == {"Bearer sk-dialog-secret-0123456789"}
    rows = verdicts(db)
    assert len(rows) == 10 and {r[3] for r in rows} == {dialog.run_id}
    for met, response, criterion, _run in rows:
        assert met == expected_met(criterion, response)
    assert run_status(db, stats["run_id"]) == "completed"
    assert dialog.progress_bar.value() == dialog.progress_bar.maximum() == 10
    assert "done: 10 verdicts" in dialog.status.text() and dialog.error.text() == ""
    assert dialog.start_button.isEnabled()
    # the key reached the server only: not the database file
    raw = Path(db.url.database or "").read_bytes()
    assert b"sk-dialog-secret" not in raw


def test_cancel_stops_the_run_and_keeps_what_arrived(qtbot: Any, db: Database) -> None:
    with JudgeServer(ServerConfig(hold_after=3)) as srv:
        dialog = dialog_for(qtbot, db, srv, concurrency=2)
        qtbot.mouseClick(dialog.start_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: srv.stats.requests >= 3 + 2, timeout=TIMEOUT)  # 2 held
        qtbot.waitUntil(lambda: dialog.status.text().startswith("run "), timeout=TIMEOUT)
        assert dialog.running and dialog.cancel_button.isEnabled()
        # the UI thread keeps serving events while the run waits on the server
        ticks: list[int] = []
        QTimer.singleShot(10, lambda: ticks.append(1))
        qtbot.waitUntil(lambda: bool(ticks), timeout=2000)
        assert not dialog.judge.isEnabled()  # the form is locked while a run is on
        with qtbot.waitSignal(dialog.run_finished, timeout=TIMEOUT) as finished:
            qtbot.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
            assert "cancelling" in dialog.status.text()
            srv.release()  # the requests in flight finish; no new one starts
        assert dialog.wait()
        stats = finished.args[0]
        asked = srv.stats.requests
    assert stats["status"] == "cancelled" and 3 <= stats["ok"] < 10
    assert asked == stats["ok"]
    assert len(verdicts(db)) == stats["ok"]
    assert run_status(db, stats["run_id"]) == "cancelled"
    assert "cancelled" in dialog.status.text()


def test_a_server_error_is_shown_in_the_dialog(qtbot: Any, db: Database) -> None:
    with JudgeServer(ServerConfig(require_key="sk-the-right-key-000")) as srv:
        dialog = dialog_for(qtbot, db, srv)
        with qtbot.waitSignal(dialog.run_finished, timeout=TIMEOUT) as finished:
            qtbot.mouseClick(dialog.start_button, Qt.MouseButton.LeftButton)
        assert dialog.wait()
    assert finished.args[0]["status"] == "failed"
    assert "authentication failed (HTTP 401)" in dialog.error.text()
    assert "Incorrect API key" in dialog.error.text()
    assert dialog.isVisible() and dialog.start_button.isEnabled()
    assert verdicts(db) == []
    # bad input is refused in the dialog too, before any thread starts
    dialog.model.setText("")
    qtbot.mouseClick(dialog.start_button, Qt.MouseButton.LeftButton)
    assert "enter the model name" in dialog.error.text() and not dialog.running
    dialog.model.setText("gpt-4o-mini")
    dialog.scope.setEditText("tasks:NOPE")
    qtbot.mouseClick(dialog.estimate_button, Qt.MouseButton.LeftButton)
    assert "no task(s) 'NOPE'" in dialog.error.text()


def test_only_a_coordinator_window_offers_the_dialog(
    qtbot: Any, db: Database, tmp_path: Path
) -> None:
    store = GradingStore(db)
    grader = QtMainWindow(store, QtAppSettings(tmp_path / "g.ini"), db.display)
    qtbot.addWidget(grader)
    assert "judge.run" not in grader.actions_by_id
    assert all(a.objectName() != "judge.run" for a in grader.findChildren(QAction))
    assert grader.show_judge_dialog() is None
    assert not grader.findChildren(QtJudgeDialog)
    coord = QtMainWindow(store, QtAppSettings(tmp_path / "c.ini"), db.display, coordinator=True)
    qtbot.addWidget(coord)
    action = coord.actions_by_id["judge.run"]
    assert action.isEnabled() and action.shortcut().toString() == "Ctrl+Shift+J"
    action.trigger()
    qtbot.waitUntil(lambda: bool(coord.findChildren(QtJudgeDialog)), timeout=TIMEOUT)
    dialog = coord.findChildren(QtJudgeDialog)[0]
    assert dialog.isVisible()
    dialog.close()
    grader.close()
    coord.close()
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=TIMEOUT)


def test_a_run_from_the_dialog_keeps_the_headline_judge_and_offers_a_refresh(
    qtbot: Any, tmp_path: Path
) -> None:
    """The demo's headline judge is judge-gpt (the most verdicts). A test judge run from
    the dialog on every pair ties with it and sorts first by name, so "most verdicts"
    made it the headline at the next recomputation. Now the first result's judge is the
    explicit choice, remembered per database; the run recomputes nothing, a bar offers
    the refresh, and after it the headline is still judge-gpt; choosing the other judge
    in the selector is remembered for the next window."""
    from gradercal.ui.dashboard.qt_process import process_alive
    from tests.conftest import DEMO

    path = tmp_path / "demo.sqlite"
    database = open_database(path)
    Repository(database).import_data(read_folder(DEMO))
    settings_file = tmp_path / "coord.ini"
    windows: list[QtMainWindow] = []

    def coordinator() -> QtMainWindow:
        window = QtMainWindow(
            GradingStore(database),
            QtAppSettings(settings_file),
            database.display,
            track_time=False,
            coordinator=True,
        )
        qtbot.addWidget(window)
        windows.append(window)
        window.resize(1366, 768)
        window.show()
        view = window.open_dashboard(GradingStore(database).benchmark_names()[0], compute=False)
        view.dashboard.n_boot = 10
        with qtbot.waitSignal(view.dashboard.computed, timeout=120_000):
            view.dashboard.recompute()
        return window

    try:
        window = coordinator()
        assert window.coordination is not None
        board = window.coordination.dashboard
        assert board.result is not None and board.result.dashboard.primary_judge == "judge-gpt"
        assert board.headline == "judge-gpt" and board.judge.currentText() == "judge-gpt"
        with JudgeServer(ServerConfig()) as srv:
            dialog = window.show_judge_dialog()
            assert dialog is not None
            dialog.base_url.setText(srv.base_url)
            dialog.model.setText("gpt-4o-mini")
            dialog.judge.setText("a-test-judge")  # sorts before judge-gpt
            dialog.scope.setCurrentText("all")
            dialog.concurrency.setValue(8)
            generation = board.generation
            with qtbot.waitSignal(dialog.run_finished, timeout=120_000) as finished:
                dialog.start()
            assert dialog.wait()
        assert finished.args[0]["status"] == "completed"
        with database.read() as s:
            counts = dict(
                s.execute(
                    select(m.Grader.name, func.count(m.Judgment.id))
                    .join(m.Judgment, m.Judgment.grader_id == m.Grader.id)
                    .where(m.Grader.kind == "judge")
                    .group_by(m.Grader.name)
                ).all()
            )
        assert counts["a-test-judge"] == counts["judge-gpt"]  # a tie on verdicts
        # nothing recomputed behind the coordinator's back; a bar offers it
        assert board.generation == generation and not board.busy
        assert board.refresh_bar.isVisible()
        assert f"stored {counts['a-test-judge']} verdicts" in board.refresh_text.text()
        with qtbot.waitSignal(board.computed, timeout=120_000):
            qtbot.mouseClick(board.refresh_now, Qt.MouseButton.LeftButton)
        assert not board.refresh_bar.isVisible()
        assert board.result.dashboard.primary_judge == "judge-gpt"  # the choice held
        assert "a-test-judge" in [board.judge.itemText(i) for i in range(board.judge.count())]
        assert board.judge.currentText() == "judge-gpt"
        # choosing the test judge is remembered for the next window on this database
        index = board.judge.findData("a-test-judge")
        with qtbot.waitSignal(board.computed, timeout=120_000):
            board.judge.setCurrentIndex(index)
            board.judge.activated.emit(index)
        assert board.result.dashboard.primary_judge == "a-test-judge"
        window.coordination.shutdown()
        window.close()
        again = coordinator()
        assert again.coordination is not None
        second = again.coordination.dashboard
        assert second.result is not None
        assert second.result.dashboard.primary_judge == "a-test-judge"
        assert second.judge.currentText() == "a-test-judge"
    finally:
        pids = []
        for w in windows:
            if w.coordination is not None:
                pids.append(w.coordination.dashboard.worker.pid)
                w.coordination.shutdown()
            w.close()
        qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=TIMEOUT)
        database.dispose()
        assert not any(process_alive(pid) for pid in pids if pid)
