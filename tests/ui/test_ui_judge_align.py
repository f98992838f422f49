"""The Judges view and `judge align` from the coordinator's window (#34), offscreen.

Real widgets (pytest-qt), a real SQLite database with the demo, the responsive loopback
judge (tests/support/align_judge.py) over HTTP: the window's action opens the view,
Align runs the command in a worker thread with progress and the view then shows the
stored certificate (figures with intervals, proven better, split); Cancel ends it with
no certificate stored; a grader's window has no such action.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction

from gradercal.cli.judge import judge
from gradercal.db.grading import GradingStore
from gradercal.db.judging import JudgeStore
from gradercal.db.repo import Repository
from gradercal.db.session import Database, open_database
from gradercal.formats import read_folder
from gradercal.ui.qt_judge_align import COLUMNS, QtJudgeAlignDialog
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_settings import QtAppSettings
from tests.cli.test_judge_align import _answers
from tests.conftest import ROOT
from tests.support.align_judge import AlignJudgeServer
from tests.support.judge_server import ServerConfig

pytestmark = pytest.mark.slow

TIMEOUT = 240_000
KEY_ENV = "GC_TEST_ALIGN_DIALOG_KEY"


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Database]:
    monkeypatch.setenv(KEY_ENV, "sk-align-dialog")
    path = tmp_path / "align.sqlite"
    database = open_database(path)
    Repository(database).import_data(read_folder(ROOT / "samples" / "demo"))
    yield database
    database.dispose()


def _run_judge(db: Database, srv: AlignJudgeServer) -> None:
    res = CliRunner().invoke(
        judge,
        ["run", "--db", str(db.url.database), "--judge", "j", "--model", "m", "--base-url",
         srv.base_url, "--api-key-env", KEY_ENV, "--no-logprobs"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output


def _dialog(qtbot: Any, db: Database, srv: AlignJudgeServer) -> QtJudgeAlignDialog:
    window = QtMainWindow(
        GradingStore(db), QtAppSettings(qtbot_tmp(db) / "c.ini"), db.display, coordinator=True
    )
    qtbot.addWidget(window)
    (action,) = [a for a in window.findChildren(QAction) if a.objectName() == "file.judge_align"]
    action.trigger()
    dialog: QtJudgeAlignDialog = window.judge_align_dialog
    assert dialog.judge.currentText() == "j"
    assert "No certificate yet" in dialog.summary.text()
    dialog.model.setText("m")
    dialog.base_url.setText(srv.base_url)
    dialog.key_env.setText(KEY_ENV)
    dialog.n_boot.setValue(300)
    dialog.max_candidates.setValue(2)
    assert "--db" not in dialog.argv()  # the database goes by $GRADERCAL_DB, not argv
    return dialog


def qtbot_tmp(db: Database) -> Path:
    return Path(str(db.url.database)).parent


def test_align_from_the_window_shows_the_certificate(qtbot: Any, db: Database) -> None:
    with AlignJudgeServer(_answers(str(db.url.database))) as srv:
        _run_judge(db, srv)
        dialog = _dialog(qtbot, db, srv)
        seen: list[tuple[str, int, int]] = []
        dialog.progress.valueChanged.connect(
            lambda v: seen.append((dialog.status.text(), v, dialog.progress.maximum()))
        )
        with qtbot.waitSignal(dialog.certificate_stored, timeout=TIMEOUT) as got:
            qtbot.mouseClick(dialog.align_button, Qt.MouseButton.LeftButton)
            assert dialog.running()
    cert = got.args[0]
    stored = JudgeStore(db).certificates("j")
    assert [r["id"] for r in stored] == [cert["certificate_id"]]
    # progress came from the child, stage by stage (development, then held-out)
    stages = {s.split(":")[0] for s, _, _ in seen if ":" in s}
    assert any(s.startswith("dev ") for s in stages)
    assert any(s.startswith("held-out ") for s in stages)
    assert max(m for _, _, m in seen) > 1
    # the view reads the stored certificate back: one row per evaluated prompt version
    finalists = [c for c in cert["candidates"] if c["evaluated_on_held_out"]]
    assert dialog.table.rowCount() == 1 + len(finalists) == len(cert["heldout"])
    assert dialog.table.columnCount() == len(COLUMNS)
    cells = {
        dialog.table.item(i, 0).text(): [
            dialog.table.item(i, j).text() for j in range(len(COLUMNS))
        ]
        for i in range(dialog.table.rowCount())
    }
    base = cert["baseline"]["prompt_version"]
    assert cells[base[:12]][1] == "baseline"
    assert cells[base[:12]][2] == f"{cert['heldout'][base]['kappa']:.3f}"
    for c in finalists:
        h = cert["heldout"][c["prompt_version"]]
        row = cells[c["prompt_version"][:12]]
        k = h["paired"]["kappa"]
        assert row[4] == f"{k['estimate']:.3f}"
        assert row[5] == f"[{k['ci'][0]:.3f}, {k['ci'][1]:.3f}]"
        assert row[6] == f"[{k['ci_corrected'][0]:.3f}, {k['ci_corrected'][1]:.3f}]"
        assert row[7] == ("yes" if h["proven_better"] else "no")
    split = cert["split"]
    assert (
        f"{len(split['development'])} development, {len(split['held_out'])} held-out tasks "
        f"(seed {split['seed']})" in dialog.summary.text()
    )
    assert "Done: certificate" in dialog.status.text()
    assert not dialog.running() and dialog.align_button.isEnabled()


def test_cancel_stops_align_and_stores_no_certificate(qtbot: Any, db: Database) -> None:
    with AlignJudgeServer(_answers(str(db.url.database)), config=ServerConfig()) as srv:
        _run_judge(db, srv)
        srv.config.latency = 0.05  # slow enough to cancel in the middle
        dialog = _dialog(qtbot, db, srv)
        dialog.concurrency.setValue(2)
        qtbot.mouseClick(dialog.align_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: dialog.progress.value() > 3, timeout=TIMEOUT)
        qtbot.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: not dialog.running(), timeout=TIMEOUT)
    assert "Cancelled: no certificate stored" in dialog.status.text()
    assert JudgeStore(db).certificates("j") == []
    assert dialog.align_button.isEnabled()


def test_a_grader_window_has_no_judges_view(qtbot: Any, db: Database, tmp_path: Path) -> None:
    grader = QtMainWindow(GradingStore(db), QtAppSettings(tmp_path / "g.ini"), db.display)
    qtbot.addWidget(grader)
    assert all(a.objectName() != "file.judge_align" for a in grader.findChildren(QAction))
