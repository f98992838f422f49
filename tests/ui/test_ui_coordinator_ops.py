"""The coordinator's operations in the window (issue #33): import, assign, packets, the
report, calibration and the prompt package, removing a judge — each a dialog opened from
the coordinator window's File menu by its key, shown in front of the window, run in a
worker thread with progress, refusing in words. Real widgets offscreen (pytest-qt), real
databases on SQLite and PostgreSQL; each test checks that the database or the files
changed as the command would have changed them (the command run on a second database).
The last test runs a whole round through the window without the command line.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton, QApplication, QLabel, QMenu, QMessageBox
from sqlalchemy import func, select

from gradercal.cli import main
from gradercal.db import models as m
from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.packets import open_packet
from gradercal.db.session import open_database
from gradercal.ui import qt_ops_actions, qt_workers
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_ops_dialog import QtOpsDialog
from gradercal.ui.qt_settings import QtAppSettings
from tests.conftest import DEMO

TIMEOUT = 120_000
GRADERS = ("u-ana", "u-ben", "u-chloe")
BENCH = json.loads((DEMO / "benchmark.json").read_text(encoding="utf-8"))["name"]


def cli(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def windows(qtbot: Any) -> Iterator[list[QtMainWindow]]:
    opened: list[QtMainWindow] = []
    yield opened
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=TIMEOUT)
    for w in opened:
        with contextlib.suppress(RuntimeError):  # qtbot may have deleted it already
            w.close()
            w.store.db.dispose()


@pytest.fixture(autouse=True)
def _no_dashboard_compute(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first import opens the dashboard without computing it (not under test here)."""
    monkeypatch.setattr(qt_ops_actions, "compute_first", False)


def coordinator(qtbot: Any, db: str, tmp_path: Path, opened: list[QtMainWindow]) -> QtMainWindow:
    """``gradercal gui --db DB --view dashboard``, without computing, at 1280×720."""
    from gradercal.ui.qt_app import build_coordinator_window

    window = build_coordinator_window(
        db, "lead", None, settings=QtAppSettings(tmp_path / "c.ini"), compute=False
    )
    opened.append(window)
    window.resize(1280, 720)
    qtbot.waitExposed(window)
    return window


def open_by_key(qtbot: Any, window: QtMainWindow, shortcut_id: str) -> Any:
    """Press the action's key in the window (its first listed key) and return the dialog."""
    action = window.actions_by_id[shortcut_id]
    assert action.isEnabled() and action.isVisible()
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5_000)
    combo = action.shortcuts()[0][0]  # type: ignore[index]
    handle = window.windowHandle()
    assert handle is not None
    qtbot.keyClick(handle, combo.key(), combo.keyboardModifiers())
    dialog = getattr(window, "operation_dialog", None)
    assert dialog is not None
    assert_in_front(qtbot, window, dialog)
    return dialog


def assert_in_front(qtbot: Any, window: QtMainWindow, dialog: Any) -> None:
    """Parented to the window, window-modal and shown: it cannot open behind it."""
    assert dialog.parentWidget() is window
    assert dialog.windowModality() == Qt.WindowModality.WindowModal
    assert dialog.isVisible()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is dialog, timeout=5_000)


def press(qtbot: Any, dialog: Any, key: Qt.Key, modifier: Qt.KeyboardModifier) -> None:
    """A key press as the user makes it: to the dialog's window, where shortcuts and
    mnemonics (Alt+letter) are dispatched."""
    qtbot.waitUntil(lambda: QApplication.activeWindow() is dialog, timeout=5_000)
    handle = dialog.windowHandle()
    assert handle is not None
    if modifier != Qt.KeyboardModifier.AltModifier:
        qtbot.keyClick(handle, key, modifier)
        return
    # A mnemonic clicks its button after a short animation (a timer): wait for the click
    # itself, not for a fixed time a loaded machine may overrun.
    button = mnemonic_button(dialog, key)
    with qtbot.waitSignal(button.clicked, timeout=TIMEOUT):
        qtbot.keyClick(handle, key, modifier)


def mnemonic_button(dialog: Any, key: Qt.Key) -> QAbstractButton:
    """The one visible, enabled button of ``dialog`` whose mnemonic is ``key``'s letter."""
    mark = "&" + chr(key.value).lower()
    found = [
        b
        for b in dialog.findChildren(QAbstractButton)
        if b.isVisible() and b.isEnabled() and mark in b.text().replace("&&", "").lower()
    ]
    assert len(found) == 1, [b.text() for b in found]
    return found[0]


def run(qtbot: Any, dialog: QtOpsDialog, *, key: bool = True) -> str:
    """Ctrl+Return (or the main button), then wait for the outcome; its text."""
    if key:
        press(qtbot, dialog, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    else:
        dialog.run_button.click()
    qtbot.waitUntil(lambda: not dialog.busy, timeout=TIMEOUT)
    return dialog.output.toPlainText()


def counts(url: str) -> dict[str, int]:
    db = open_database(url)
    try:
        with db.read() as s:
            return {
                name: int(s.scalar(select(func.count()).select_from(model)) or 0)
                for name, model in (
                    ("tasks", m.Task),
                    ("criteria", m.Criterion),
                    ("responses", m.Response),
                    ("judgments", m.Judgment),
                    ("adjudications", m.Adjudication),
                    ("assignments", m.Assignment),
                    ("graders", m.Grader),
                )
            }
    finally:
        db.dispose()


def assignment_pairs(url: str) -> set[tuple[str, str, bool]]:
    db = open_database(url)
    try:
        with db.read() as s:
            rows = s.execute(
                select(m.Grader.name, m.Response.external_id, m.Assignment.calibration)
                .join(m.Grader, m.Grader.id == m.Assignment.grader_id)
                .join(m.Response, m.Response.id == m.Assignment.response_id)
            ).all()
        return {(g, r, bool(c)) for g, r, c in rows}
    finally:
        db.dispose()


def imported(url: str) -> str:
    cli("import", str(DEMO), "--db", url)
    return url


def empty_window(qtbot: Any, db_url: str, tmp_path: Path, opened: list[QtMainWindow]) -> Any:
    window = coordinator(qtbot, db_url, tmp_path, opened)
    assert window.coordination is None
    page = window.stack.currentWidget()
    assert isinstance(page, QLabel)
    assert "no benchmark yet" in page.text() and "Ctrl+Shift+I" in page.text()
    return window


# -- import -----------------------------------------------------------------------------------
def test_import_dialog_imports_as_the_command_with_progress(
    qtbot: Any, db_url: str, tmp_path: Path, windows: list[QtMainWindow]
) -> None:
    window = empty_window(qtbot, db_url, tmp_path, windows)
    dialog = open_by_key(qtbot, window, "ops.import")
    steps: list[tuple[str, int, int]] = []
    dialog._relay.step.connect(lambda *a: steps.append(a))
    assert run(qtbot, dialog).startswith("Not done: choose a benchmark folder")
    dialog.path.setText(str(DEMO))
    text = run(qtbot, dialog)
    assert text.startswith(f"Imported into benchmark {BENCH!r}"), text
    assert any(stage != "reading" and total > 1 for stage, _d, total in steps), steps
    reference = imported(str(tmp_path / "cli.sqlite"))
    assert counts(db_url) == counts(reference)
    # the dashboard replaced the empty page; importing again changes nothing
    assert window.coordination is not None and window.benchmark == BENCH
    assert "nothing new" in run(qtbot, dialog)
    assert counts(db_url) == counts(reference)


def test_import_dialog_lists_every_bad_line_and_writes_nothing(
    qtbot: Any, db_url: str, tmp_path: Path, windows: list[QtMainWindow]
) -> None:
    window = coordinator(qtbot, imported(db_url), tmp_path, windows)
    before = counts(db_url)
    bad = tmp_path / "bad"
    bad.mkdir()
    good = (DEMO / "tasks.jsonl").read_text(encoding="utf-8").splitlines()[0]
    (bad / "tasks.jsonl").write_text(
        good.replace('"T01"', '"T99"') + "\n{not json\n" + '{"task_id": "T98"}\n',
        encoding="utf-8",
    )
    dialog = open_by_key(qtbot, window, "ops.import")
    dialog.path.setText(str(bad / "tasks.jsonl"))
    dialog.benchmark.setCurrentText(BENCH)
    text = run(qtbot, dialog)
    assert text.startswith("Not done: "), text
    assert "tasks.jsonl:2:" in text and "tasks.jsonl:3:" in text
    assert "`gradercal" not in text and " --" not in text  # words, not a command
    assert counts(db_url) == before


# -- assign -----------------------------------------------------------------------------------
def test_assign_dialog_previews_then_assigns_as_the_command(
    qtbot: Any, db_url: str, tmp_path: Path, windows: list[QtMainWindow]
) -> None:
    window = coordinator(qtbot, imported(db_url), tmp_path, windows)
    dialog = open_by_key(qtbot, window, "ops.assign")
    dialog.graders.setText(", ".join(GRADERS))
    dialog.overlap.setValue(4)
    text = run(qtbot, dialog)
    assert text == "Not done: an overlap of 4 needs at least that many graders (3 named)."
    dialog.overlap.setValue(2)
    dialog.calibration.setValue(0.2)
    dialog.stratify["model"].setChecked(True)
    dialog.seed.setText("s33")
    press(qtbot, dialog, Qt.Key.Key_P, Qt.KeyboardModifier.AltModifier)  # Preview
    qtbot.waitUntil(lambda: not dialog.busy, timeout=TIMEOUT)
    preview = dialog.output.toPlainText()
    assert all(f"{g}: " in preview for g in GRADERS), preview
    assert counts(db_url)["assignments"] == 0  # a preview writes nothing
    text = run(qtbot, dialog)
    assert text.startswith("Created "), text
    reference = imported(str(tmp_path / "cli.sqlite"))
    cli(
        "assign", "--db", reference, "--graders", ",".join(GRADERS), "--overlap", "2",
        "--calibration-fraction", "0.2", "--stratify", "model", "--seed", "s33",
    )  # fmt: skip
    assert assignment_pairs(db_url) == assignment_pairs(reference)
    per_grader = {g: sum(1 for p in assignment_pairs(db_url) if p[0] == g) for g in GRADERS}
    assert all(f"{g}: {n} responses" in preview for g, n in per_grader.items()), preview
    assert run(qtbot, dialog).startswith("Already applied: the database is unchanged.")


# -- packets ----------------------------------------------------------------------------------
def assigned(url: str) -> str:
    imported(url)
    cli("assign", "--db", url, "--graders", ",".join(GRADERS), "--overlap", "2", "--seed", "p")
    return url


def grade_offline(path: Path, workdir: Path, rationale: str = "offline") -> int:
    """Grade the packet's first response as its grader would (every judgment criterion met)."""
    with open_packet(path, workdir=workdir) as session:
        store = GradingStore(session.db)
        grader = session.grader
        first = store.queue(grader)[0]
        n = 0
        for c in store.load_item(grader, first.assignment_id).task.criteria:
            if c.kind.value == "judgment":
                store.save_judgment(
                    first.assignment_id, c.id, JudgmentValue(met=True, rationale=rationale)
                )
                n += 1
    return n


def human_judgments(url: str, grader: str) -> int:
    db = open_database(url)
    try:
        with db.read() as s:
            return int(
                s.scalar(
                    select(func.count())
                    .select_from(m.Judgment)
                    .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
                    .where(m.Grader.name == grader)
                )
                or 0
            )
    finally:
        db.dispose()


def test_packet_export_and_merge_dialogs_round_trip_with_conflicts(
    qtbot: Any, db_url: str, tmp_path: Path, windows: list[QtMainWindow]
) -> None:
    window = coordinator(qtbot, assigned(db_url), tmp_path, windows)
    dialog = open_by_key(qtbot, window, "ops.packet_export")
    dialog.grader.setCurrentText("u-ana")
    path = tmp_path / "ana.gcpkg"
    dialog.file.setText(str(path))
    dialog.due.setValue(7)
    text = run(qtbot, dialog)
    assert text.startswith("Wrote ana.gcpkg: ") and "for 'u-ana'" in text, text
    assert path.is_file()
    dialog.grader.setCurrentText("nobody")
    dialog.file.setText(str(tmp_path / "nobody.gcpkg"))
    assert run(qtbot, dialog).startswith("Not done: ")
    dialog.close()

    n = grade_offline(path, tmp_path / "work")
    before = human_judgments(db_url, "u-ana")
    merge = open_by_key(qtbot, window, "ops.packet_merge")
    assert run(qtbot, merge).startswith("Not done: choose the returned packet")
    merge.file.setText(str(path))
    text = run(qtbot, merge)
    assert text.startswith(f"Merged ana.gcpkg: {n} judgments added"), text
    assert human_judgments(db_url, "u-ana") == before + n
    assert not merge.conflicts_button.isEnabled()
    assert "nothing new" in run(qtbot, merge)  # merging again changes nothing
    merge.close()

    # changed on both sides since a second export: a conflict, shown in its dialog
    export = open_by_key(qtbot, window, "ops.packet_export")
    export.grader.setCurrentText("u-ana")
    export.file.setText(str(path))
    run(qtbot, export)
    export.close()
    db = open_database(db_url)
    try:
        store = GradingStore(db)
        first = store.queue("u-ana")[0]
        crit = next(
            c.id
            for c in store.load_item("u-ana", first.assignment_id).task.criteria
            if c.kind.value == "judgment"
        )
        store.save_judgment(first.assignment_id, crit, JudgmentValue(met=False, rationale="db"))
    finally:
        db.dispose()
    grade_offline(path, tmp_path / "work2", rationale="packet")
    merge = open_by_key(qtbot, window, "ops.packet_merge")
    merge.file.setText(str(path))
    text = run(qtbot, merge)
    assert "1 conflicts kept beside the database's values." in text, text
    assert merge.conflicts_button.isEnabled()
    press(qtbot, merge, Qt.Key.Key_S, Qt.KeyboardModifier.AltModifier)
    conflicts = merge.conflicts_dialog
    assert conflicts is not None and conflicts.isVisible()
    assert conflicts.table.rowCount() == 1

    assert_in_front(qtbot, merge, conflicts)
    conflicts.close()
    damaged = tmp_path / "damaged.gcpkg"
    damaged.write_bytes(b"not a packet")
    merge.close()
    merge = open_by_key(qtbot, window, "ops.packet_merge")
    merge.file.setText(str(damaged))
    text = run(qtbot, merge)
    assert text.startswith("Not done: ") and "damaged.gcpkg" in text, text


# -- report -----------------------------------------------------------------------------------
def test_report_dialog_writes_html_and_pdf_with_progress_and_opens_it(
    qtbot: Any, tmp_path: Path, windows: list[QtMainWindow], monkeypatch: pytest.MonkeyPatch
) -> None:
    from PySide6.QtGui import QDesktopServices

    url = imported(str(tmp_path / "r.sqlite"))
    window = coordinator(qtbot, url, tmp_path, windows)
    dialog = open_by_key(qtbot, window, "ops.report")
    steps: list[str] = []
    dialog._relay.step.connect(lambda stage, *_: steps.append(stage))
    dialog.html.setText("")
    assert run(qtbot, dialog) == "Not done: choose an HTML or a PDF file to write."
    dialog.html.setText(str(tmp_path / "nowhere" / "r.html"))
    assert "does not exist" in run(qtbot, dialog)
    html, pdf = tmp_path / "report.html", tmp_path / "report.pdf"
    dialog.html.setText(str(html))
    dialog.pdf.setText(str(pdf))
    dialog.boot.setValue(50)
    assert not dialog.open_button.isEnabled()
    text = run(qtbot, dialog)
    assert text.startswith("Wrote the report: report.html, report.pdf."), text
    assert {"reading", "computing", "HTML charts", "PDF charts"} <= set(steps)
    assert "<html" in html.read_text(encoding="utf-8")[:500].lower()
    assert "demo" in html.read_text(encoding="utf-8")
    assert pdf.read_bytes()[:5] == b"%PDF-"
    opened: list[str] = []

    def open_url(url: Any) -> bool:
        opened.append(url.toLocalFile())
        return True

    monkeypatch.setattr(QDesktopServices, "openUrl", open_url)
    press(qtbot, dialog, Qt.Key.Key_O, Qt.KeyboardModifier.AltModifier)
    assert opened == [str(html.resolve())]
    # the command writes the same sections
    cli("report", "--db", url, "-o", str(tmp_path / "cli.html"), "--bootstrap", "50")
    ours = html.read_text(encoding="utf-8")
    theirs = (tmp_path / "cli.html").read_text(encoding="utf-8")
    for heading in ("Overview", "Agreement"):
        assert (heading in ours) == (heading in theirs)


# -- calibrate and the prompt package ---------------------------------------------------------
def test_calibrate_dialog_saves_the_calibration_shows_held_out_figures_and_exports(
    qtbot: Any, db_url: str, tmp_path: Path, windows: list[QtMainWindow]
) -> None:
    from gradercal.db.calibrations import load_calibration
    from gradercal.db.repo import Repository

    window = coordinator(qtbot, imported(db_url), tmp_path, windows)
    dialog = open_by_key(qtbot, window, "ops.calibrate")
    assert dialog.judge.currentText() == "judge-gpt"
    dialog.method.setCurrentText("threshold")
    dialog.boot.setValue(20)
    text = run(qtbot, dialog)
    assert text.startswith("Saved the threshold calibration of judge-gpt as version 1"), text
    assert "Held out (never fitted on): " in text and "held-out tasks:" in text
    assert "Cohen's kappa: raw " in text
    db = open_database(db_url)
    try:
        saved = load_calibration(Repository(db), BENCH, "judge-gpt")
        assert saved is not None and saved.method == "threshold"
        held = saved.split.get("held_out")
        assert held and all(t in text for t in held)
    finally:
        db.dispose()
    # the package: json, re-importable as the command's
    dialog.format.setCurrentIndex(dialog.format.findData("json"))
    target = tmp_path / "pkg.json"
    dialog.package_file.setText(str(target))
    press(qtbot, dialog, Qt.Key.Key_X, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(lambda: not dialog.busy, timeout=TIMEOUT)
    assert dialog.output.toPlainText().startswith("Wrote the prompt package of judge-gpt (json)")
    package = json.loads(target.read_text(encoding="utf-8"))
    cli(
        "export-prompt", "--db", db_url, "--judge", "judge-gpt", "--n-boot", "20",
        "-o", str(tmp_path / "cli.json"),
    )  # fmt: skip
    theirs = json.loads((tmp_path / "cli.json").read_text(encoding="utf-8"))
    assert package.keys() == theirs.keys()
    assert package["decision"] == theirs["decision"]


# -- remove a judge ---------------------------------------------------------------------------
def test_remove_judge_dialog_states_the_count_asks_and_removes(
    qtbot: Any, db_url: str, tmp_path: Path, windows: list[QtMainWindow]
) -> None:
    from gradercal.db.maintenance import check

    window = coordinator(qtbot, imported(db_url), tmp_path, windows)
    n = human_judgments(db_url, "judge-gpt")
    assert n > 0
    others = counts(db_url)["judgments"] - n
    dialog = open_by_key(qtbot, window, "ops.remove_judge")
    assert [dialog.judge.itemText(i) for i in range(dialog.judge.count())] == ["judge-gpt"]
    assert dialog.count_label.text() == f"Removing judge-gpt deletes its {n} verdicts."
    press(qtbot, dialog, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    box = dialog.confirmation
    assert box is not None and f"its {n} verdicts" in box.text()
    assert_in_front(qtbot, dialog, box)
    box.done(QMessageBox.StandardButton.Cancel)
    assert dialog.output.toPlainText() == "Nothing removed."
    assert human_judgments(db_url, "judge-gpt") == n
    dialog.start()
    assert dialog.confirmation is not None
    dialog.confirmation.done(QMessageBox.StandardButton.Yes)
    qtbot.waitUntil(lambda: not dialog.busy and dialog.outcome is not None, timeout=TIMEOUT)
    assert dialog.output.toPlainText().startswith(f"Removed judge-gpt and its {n} verdicts")
    assert human_judgments(db_url, "judge-gpt") == 0
    assert counts(db_url)["judgments"] == others
    db = open_database(db_url)
    try:
        report = check(db, blobs=False)
        assert report.ok, report
    finally:
        db.dispose()


# -- the Run-judge dialog and F1 --------------------------------------------------------------
def test_the_run_judge_dialog_opens_in_front_of_the_window(
    qtbot: Any, tmp_path: Path, windows: list[QtMainWindow]
) -> None:
    window = coordinator(qtbot, imported(str(tmp_path / "j.sqlite")), tmp_path, windows)
    window.activateWindow()
    window.actions_by_id["judge.run"].trigger()
    from gradercal.ui.qt_judge_dialog import QtJudgeDialog

    dialog = window.findChild(QtJudgeDialog)
    assert dialog is not None
    assert_in_front(qtbot, window, dialog)
    dialog.close()


def test_f1_lists_the_operation_keys_in_a_coordinator_window(
    qtbot: Any, tmp_path: Path, windows: list[QtMainWindow]
) -> None:
    window = coordinator(qtbot, imported(str(tmp_path / "f.sqlite")), tmp_path, windows)
    file_menu = window.menuBar().actions()[0].menu()
    assert isinstance(file_menu, QMenu)
    labels = {a.text() for a in file_menu.actions()}
    for sid, key in (
        ("ops.import", "Ctrl+Shift+I"),
        ("ops.assign", "Ctrl+Shift+A"),
        ("ops.packet_export", "Ctrl+Shift+E"),
        ("ops.packet_merge", "Ctrl+Shift+M"),
        ("ops.report", "Ctrl+Shift+P"),
        ("ops.calibrate", "Ctrl+Shift+K"),
        ("ops.remove_judge", "Ctrl+Shift+Del"),
    ):
        action = window.actions_by_id[sid]
        assert action.text() in labels
        assert action.shortcut().toString() == key
    dialog = window.show_shortcuts()
    from PySide6.QtWidgets import QTreeWidgetItemIterator

    rows = []
    it = QTreeWidgetItemIterator(dialog.tree)
    while it.value() is not None:
        rows.append((it.value().text(0), it.value().text(1)))
        it += 1
    assert any(a.startswith("Import a benchmark") and "I" in k for a, k in rows), rows
    assert any(a.startswith("Remove a judge") for a, _k in rows)


def test_a_graders_window_has_no_operations(qtbot: Any, tmp_path: Path) -> None:
    db = open_database(imported(str(tmp_path / "g.sqlite")))
    window = QtMainWindow(
        GradingStore(db), QtAppSettings(tmp_path / "g.ini"), db.display, track_time=False
    )
    qtbot.addWidget(window)
    try:
        assert not any(sid.startswith("ops.") for sid in window.actions_by_id)
        assert window.open_operation("ops.import") is None
    finally:
        window.close()
        db.dispose()


# -- a whole round, without the command line --------------------------------------------------
def test_a_whole_round_through_the_window(
    qtbot: Any, db_url: str, tmp_path: Path, windows: list[QtMainWindow]
) -> None:
    """Import → assign → a packet out → graded offline → merged back → the report."""
    window = empty_window(qtbot, db_url, tmp_path, windows)
    dialog = open_by_key(qtbot, window, "ops.import")
    dialog.path.setText(str(DEMO))
    assert run(qtbot, dialog).startswith(f"Imported into benchmark {BENCH!r}")
    dialog.close()

    dialog = open_by_key(qtbot, window, "ops.assign")
    dialog.graders.setText(", ".join(GRADERS))
    dialog.overlap.setValue(2)
    dialog.seed.setText("round")
    assert run(qtbot, dialog).startswith("Created ")
    dialog.close()
    assert counts(db_url)["assignments"] > 0

    path = tmp_path / "ben.gcpkg"
    dialog = open_by_key(qtbot, window, "ops.packet_export")
    dialog.grader.setCurrentText("u-ben")
    dialog.file.setText(str(path))
    assert run(qtbot, dialog).startswith("Wrote ben.gcpkg")
    dialog.close()

    n = grade_offline(path, tmp_path / "offline")
    before = human_judgments(db_url, "u-ben")
    dialog = open_by_key(qtbot, window, "ops.packet_merge")
    dialog.file.setText(str(path))
    assert run(qtbot, dialog).startswith(f"Merged ben.gcpkg: {n} judgments added")
    dialog.close()
    assert human_judgments(db_url, "u-ben") == before + n

    html = tmp_path / "round.html"
    dialog = open_by_key(qtbot, window, "ops.report")
    dialog.html.setText(str(html))
    dialog.boot.setValue(20)
    assert run(qtbot, dialog).startswith("Wrote the report: round.html.")
    assert "u-ben" in html.read_text(encoding="utf-8")
    # the dashboard was told the data changed (it offers a refresh, never recomputes itself)
    assert window.coordination is not None
    assert window.coordination.dashboard.refresh_bar.isVisibleTo(window.coordination.dashboard)


def test_removing_refuses_a_human_grader_and_an_unknown_judge(db_url: str) -> None:
    from gradercal.db.judge_removal import judge_verdict_count, remove_judge
    from gradercal.errors import GradercalError, NotFoundError

    imported(db_url)
    before = counts(db_url)
    db = open_database(db_url)
    try:
        with pytest.raises(GradercalError, match="human grader, not a judge"):
            remove_judge(db, None, "expert-ana")
        with pytest.raises(NotFoundError, match="no judge 'judge-none'"):
            judge_verdict_count(db, None, "judge-none")
    finally:
        db.dispose()
    assert counts(db_url) == before
