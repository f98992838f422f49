"""The app on an offline packet, on a damaged database, and its conflict and stale-view dialogs.

The issue's round trip "from the app": ``gradercal assign`` and ``gradercal packet export``
(the CLI) make three packets from the demo; each is opened the way ``gradercal gui
FILE.gcpkg`` opens it and its calibration responses are graded **by keyboard**; the
windows close (the packet files are saved); ``gradercal packet merge`` brings them back,
twice (the second changes nothing); the verdicts are in the team database and
``gradercal agreement`` computes expert–expert agreement on them.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QApplication, QWidget
from sqlalchemy import select

from gradercal.cli import main
from gradercal.db import models as m
from gradercal.db.grading import GradingStore, JudgmentValue, StaleJudgmentError
from gradercal.db.packets import export_packet, list_conflicts, merge_packet, open_packet
from gradercal.db.session import open_database
from gradercal.ops.packet_format import DATABASE
from gradercal.ui import qt_workers
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_packet import banner_text
from gradercal.ui.qt_settings import QtAppSettings
from tests.conftest import DEMO, fingerprint
from tests.support.files import immutable

pytestmark = pytest.mark.gui

GRADERS = ("u-ana", "u-ben", "u-chloe")


def press(qtbot: Any, window: QWidget, key: str) -> None:
    seq = QKeySequence(key)[0]
    target = QApplication.focusWidget() or window
    qtbot.keyClick(target, seq.key(), seq.keyboardModifiers())


def cli(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result


def cli_json(*args: str) -> Any:
    return json.loads(cli(*args, "--json").stdout)


def verdict_key(grader: str, task: str, crit: str) -> str:
    """Which key a grader presses: a stable mix of met and not met that differs by grader."""
    digest = hashlib.sha256(f"{grader}|{task}|{crit}".encode()).digest()
    return "N" if digest[0] % 4 == 0 else "M"


@pytest.fixture
def windows(qtbot: Any, tmp_path: Path) -> Iterator[list[QtMainWindow]]:
    opened: list[QtMainWindow] = []
    yield opened
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
    for w in opened:
        w.close()


def open_packet_window(
    qtbot: Any, path: Path, tmp_path: Path, opened: list[QtMainWindow]
) -> QtMainWindow:
    """Open a packet as ``gradercal gui FILE.gcpkg`` does, shown and focused, queue loaded."""
    from gradercal.ui.qt_app import build_packet_window

    settings = QtAppSettings(tmp_path / f"{path.stem}-settings.ini")
    window = build_packet_window(path, settings=settings)
    opened.append(window)
    qtbot.addWidget(window)
    window.resize(1400, 900)
    qtbot.waitExposed(window)
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    g = window.grading
    assert g is not None
    qtbot.waitUntil(lambda: g.current is not None and not g._ready_pending, timeout=30_000)
    return window


def grade_current_by_keyboard(qtbot: Any, window: QtMainWindow) -> dict[str, bool]:
    """Answer every open criterion of the shown response with M/N, then Ctrl+Return."""
    g = window.grading
    assert g is not None and g.state is not None and g.current is not None
    task = g.current.task.id
    entered: dict[str, bool] = {}
    for _ in range(4 * len(g.state) + 4):
        if not g.state.missing():
            break
        row = g.state.rows[g.current_row()]
        if row.is_auto or row.answered:
            press(qtbot, window, "Shift+J")
            continue
        key = verdict_key(window.grader or "", task, row.criterion.id)
        press(qtbot, window, key)
        entered[row.criterion.id] = key == "M"
    assert not g.state.missing()
    before = g.index
    with qtbot.waitSignal(g.item_ready, timeout=20_000):
        press(qtbot, window, "Ctrl+Return")
    assert g.index != before
    return entered


# -- the round trip from the app ----------------------------------------------------------------
def test_round_trip_assign_export_grade_in_the_app_merge_twice_agreement(
    qtbot: Any, tmp_path: Path, windows: list[QtMainWindow]
) -> None:
    db = str(tmp_path / "team.sqlite")
    cli("import", str(DEMO), "--db", db)
    design = cli_json(
        "assign",
        "--db",
        db,
        "--graders",
        ",".join(GRADERS),
        "--overlap",
        "2",
        "--calibration-fraction",
        "0.2",
        "--seed",
        "app-round-trip",
    )
    n_cal = design["design"]["n_calibration_responses"]
    assert n_cal >= 2
    packets = {g: tmp_path / "out" / f"{g}.gcpkg" for g in GRADERS}
    for g, path in packets.items():
        report = cli_json("packet", "export", "--db", db, "--grader", g, "-o", str(path))
        assert report["grader"] == g and report["judgments"] == 0

    entered: dict[str, dict[tuple[int, str], bool]] = {}
    for g, path in packets.items():
        window = open_packet_window(qtbot, path, tmp_path, windows)
        # the grader is the packet's: no start page, no choice; the title names the packet
        assert window.grader == g and window.grading is not None
        assert f"packet {path.name}" in window.windowTitle()
        assert "Offline packet" in banner_text(window) and g in banner_text(window)
        grading = window.grading
        entered[g] = {}
        for _ in range(n_cal):  # the calibration responses come first in every queue
            q = grading.queue[grading.index]
            assert q.position < n_cal
            for crit, met in grade_current_by_keyboard(qtbot, window).items():
                entered[g][(q.assignment_id, crit)] = met
        generation_before = json.loads(cli("packet", "info", str(path), "--json").stdout)
        window.close()
        windows.remove(window)
        info = json.loads(cli("packet", "info", str(path), "--json").stdout)
        assert info["generation"] > generation_before["generation"] >= 0

    before = fingerprint(db)
    first = {g: cli_json("packet", "merge", str(p), "--db", db) for g, p in packets.items()}
    assert fingerprint(db) != before
    for g in GRADERS:
        assert first[g]["changed"] is True and first[g]["conflicts"] == []
        assert first[g]["judgments_added"] == len(entered[g])
        # the submitted ones, and the time spent on the one open when the window closed
        assert first[g]["assignments_updated"] in (n_cal, n_cal + 1)
        assert first[g]["warnings"] == []
    settled = fingerprint(db)
    for g, p in packets.items():
        again = cli_json("packet", "merge", str(p), "--db", db)
        assert again["changed"] is False and again["judgments_already"] == len(entered[g])
    assert fingerprint(db) == settled  # idempotent: not one row changed

    # the verdicts pressed in the app are in the team database, under each grader
    team = open_database(db)
    try:
        with team.read() as s:
            rows = s.execute(
                select(m.Grader.name, m.Assignment.id, m.Criterion.external_id, m.Judgment)
                .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
                .join(m.Criterion, m.Criterion.id == m.Judgment.criterion_id)
                .join(
                    m.Assignment,
                    (m.Assignment.grader_id == m.Judgment.grader_id)
                    & (m.Assignment.response_id == m.Judgment.response_id),
                )
                .where(m.Grader.name.in_(GRADERS))
            ).all()
    finally:
        team.dispose()
    stored: dict[str, dict[tuple[int, str], bool | None]] = {g: {} for g in GRADERS}
    for name, aid, crit, j in rows:
        assert j.source == "packet"
        stored[name][(aid, crit)] = j.met
    assert stored == entered

    # expert–expert agreement on what came back: every calibration response, three graders
    report = cli_json("agreement", "--db", db)
    text = json.dumps(report)
    for g in GRADERS:
        assert g in text
    assert cli("agreement", "--db", db).stdout.strip()


def test_gui_command_line_for_packets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`gradercal gui FILE.gcpkg` runs the app on the packet; a packet and --db exclude."""
    calls: list[dict[str, Any]] = []

    def fake_run(*args: Any, **kwargs: Any) -> int:
        calls.append({"args": args, **kwargs})
        return 0

    monkeypatch.setattr("gradercal.ui.qt_app.run", fake_run)
    pkg = tmp_path / "a.gcpkg"
    pkg.write_bytes(b"PK")
    run = CliRunner()
    res = run.invoke(main, ["gui", str(pkg)], env={"GRADERCAL_DB": str(tmp_path / "x.sqlite")})
    assert res.exit_code == 0, res.output  # $GRADERCAL_DB does not count as --db
    assert calls == [{"args": (), "view": "grading", "packet": pkg}]
    res = run.invoke(main, ["gui", str(pkg), "--view", "review"])
    assert res.exit_code == 0 and calls[-1]["view"] == "review"
    for extra, words in (
        (["--db", str(tmp_path / "x.sqlite")], "not both"),
        (["--grader", "zoe"], "fixed"),
        (["--view", "dashboard"], "no dashboard"),
    ):
        res = run.invoke(main, ["gui", str(pkg), *extra])
        assert res.exit_code == 2 and words in res.output, res.output
    db_file = tmp_path / "team.sqlite"
    db_file.write_bytes(b"")
    res = run.invoke(main, ["gui", str(db_file)])
    assert res.exit_code == 2 and "use --db" in res.output
    res = run.invoke(main, ["gui", str(tmp_path / "missing.gcpkg")])
    assert res.exit_code == 2 and "does not exist" in res.output
    assert len(calls) == 2


def test_a_damaged_packet_is_refused_with_a_message(tmp_path: Path) -> None:
    from gradercal.errors import GradercalError
    from gradercal.ui.qt_app import build_packet_window

    bad = tmp_path / "bad.gcpkg"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(GradercalError, match=r"bad\.gcpkg"):
        build_packet_window(bad, settings=QtAppSettings(tmp_path / "s.ini"))


# -- crash safety of the packet file ---------------------------------------------------------------
@pytest.fixture
def team(tmp_path: Path) -> str:
    db = str(tmp_path / "team.sqlite")
    cli("import", str(DEMO), "--db", db)
    cli("assign", "--db", db, "--graders", ",".join(GRADERS), "--overlap", "2", "--seed", "t")
    return db


def test_every_verdict_is_durable_before_the_packet_file_is_saved(
    qtbot: Any, tmp_path: Path, team: str, windows: list[QtMainWindow]
) -> None:
    """A verdict shown as saved is committed in the working folder; a crash before the
    packet file is packed loses nothing: merge warns, reopening packs it, merge gets it."""
    path = tmp_path / "ana.gcpkg"
    cli("packet", "export", "--db", team, "--grader", "u-ana", "-o", str(path))
    window = open_packet_window(qtbot, path, tmp_path, windows)
    g = window.grading
    assert g is not None and g.state is not None
    controller = window.packet  # type: ignore[attr-defined]
    controller._autosave.stop()  # a "crash" before any periodic save
    controller._debounce.stop()
    row = next(i for i, r in enumerate(g.state.rows) if not r.is_auto)
    g.rubric.set_current_row(row)
    crit = g.state.rows[row].criterion.id
    press(qtbot, window, "N")
    assert g.state.value(crit).met is False  # shown as saved …
    work = path.with_name(path.name + ".work") / DATABASE
    conn = sqlite3.connect(work)  # … and committed in the working database (WAL included)
    try:
        n = conn.execute("SELECT count(*) FROM judgment WHERE met = 0").fetchone()[0]
    finally:
        conn.close()
    assert n == 1
    # the app dies here: no close, no save (the file still holds the export)
    controller._autosave.stop()
    window.closed.disconnect()
    controller.session.db.dispose()
    report = merge_packet(open_database(team), path)
    assert report.judgments_added == 0 and report.warnings
    assert "working folder" in report.warnings[0]
    # reopening the packet (the app's next start) packs the recovered work into the file
    with open_packet(path) as session:
        assert any("recovered" in w for w in session.warnings)
    report = merge_packet(open_database(team), path)
    assert report.judgments_added == 1 and report.warnings == []


def test_closing_the_window_packs_every_write_and_nothing_is_written_after(
    qtbot: Any, tmp_path: Path, team: str, windows: list[QtMainWindow], monkeypatch: Any
) -> None:
    """Closing a packet window packs all it wrote, and the closed window writes no more.

    The flake behind this test: the time-on-task timer (every ``TIME_FLUSH_MS``) of a
    closed window kept running, and on a loaded machine it fired after the close-time
    pack, adding time to the working database that the file lacked (merge then warned
    "the working folder … holds grading that is not in …"). Here the timer is fast, the
    clock is fake, and every timer and queued reload of the closed view is fired by hand.
    """
    from gradercal.db.packets.session import grading_fingerprint, load_state
    from gradercal.ui import qt_grading_view
    from gradercal.ui.grading_state import TimeTracker

    monkeypatch.setattr(qt_grading_view, "TIME_FLUSH_MS", 20)
    path = tmp_path / "ana.gcpkg"
    cli("packet", "export", "--db", team, "--grader", "u-ana", "-o", str(path))
    window = open_packet_window(qtbot, path, tmp_path, windows)
    g = window.grading
    assert g is not None and g.state is not None and g.current is not None
    clock = [1000.0]
    g.tracker = TimeTracker(clock=lambda: clock[0])
    g.flush_time(final=True)  # whatever the opening took, before the fake clock
    aid, index = g.current.item.assignment_id, g.index
    row = next(i for i, r in enumerate(g.state.rows) if not r.is_auto)
    g.rubric.set_current_row(row)
    clock[0] += 30
    press(qtbot, window, "N")  # a verdict, and 30 s on task
    clock[0] += 12  # reading on: 12 s more, saved when the window closes
    before = g.store.queue_item(aid).time_spent_s
    window.close()
    windows.remove(window)
    work = path.with_name(path.name + ".work")

    def packed() -> bool:
        state = load_state(work)
        return state is not None and state["fingerprint"] == grading_fingerprint(work / DATABASE)

    assert packed()
    # after the close: time passes, the timers and a queued reload come due
    clock[0] += 20
    qtbot.wait(100)
    for timer in (g._time_timer, g._text_timer, g._prefetch_timer):
        timer.timeout.emit()
    g._reload(aid, index, row)
    clock[0] += 20
    qtbot.wait(100)
    assert packed(), "the closed window wrote to the working database after the final pack"
    controller = window.packet  # type: ignore[attr-defined]
    g.queue_changed.emit()  # a late queue change saves nothing and shows no error
    assert controller.save_if_changed() and controller.last_error is None
    assert not controller._debounce.isActive()
    team_db = open_database(team)
    try:
        report = merge_packet(team_db, path)
        assert report.warnings == [] and report.judgments_added == 1
        with team_db.read() as s:
            spent = s.scalar(select(m.Assignment.time_spent_s).where(m.Assignment.id == aid))
    finally:
        team_db.dispose()
    assert spent == pytest.approx(before + 12.0)  # the time up to the close, not after


# -- damaged database ---------------------------------------------------------------------------
def corrupt_index(path: Path, index: str) -> None:
    """Overwrite the root page of ``index`` with garbage (the tables stay readable)."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode = DELETE")
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (index,))
        (page,) = root.fetchone()
    finally:
        conn.close()
    with path.open("r+b") as fh:
        fh.seek((page - 1) * page_size)
        fh.write(b"\xa5" * page_size)


def _refused_verdict(qtbot: Any, window: QtMainWindow) -> str:
    """Give the first judged criterion of the open response a verdict on a read-only
    database: it must not show as saved; returns what the rubric says instead."""
    g = window.grading
    assert g is not None
    qtbot.waitUntil(lambda: g.current is not None and not g._ready_pending, timeout=30_000)
    assert g.state is not None
    row = next(i for i, r in enumerate(g.state.rows) if not r.is_auto)
    g.rubric.set_current_row(row)
    crit = g.state.rows[row].criterion.id
    g.set_verdict("met")
    assert g.state.value(crit).met is None  # not shown as saved
    return str(g.rubric.message.text())


def test_a_damaged_database_opens_read_only_with_a_banner_and_refuses_writes(
    qtbot: Any, tmp_path: Path, team: str
) -> None:
    from gradercal.ui.qt_app import build_window

    store = GradingStore(open_database(team))
    aid = store.queue("u-ben")[0].assignment_id
    store.db.dispose()
    damaged = tmp_path / "damaged.sqlite"
    # The SQLite backup API, not a file copy: pages still in the team file's WAL (another
    # connection may keep it from being checkpointed) would be missing from a copy.
    src, dst = sqlite3.connect(team), sqlite3.connect(damaged)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()
    corrupt_index(damaged, "ix_revision_entity")
    before = damaged.read_bytes()

    window = build_window(str(damaged), "u-ben", None, settings=QtAppSettings(tmp_path / "ro.ini"))
    qtbot.addWidget(window)
    try:
        assert "Read-only" in banner_text(window) and "damaged" in banner_text(window)
        assert "read-only" in window.windowTitle()
        g = window.grading
        assert g is not None
        assert "read-only" in _refused_verdict(qtbot, window)
        assert g.current is not None and g.current.item.assignment_id == aid  # readable
        g.submit()
        g.flush_time(final=True)
        qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
    finally:
        window.close()
        window.store.db.dispose()
    assert damaged.read_bytes() == before  # not one byte written
    assert not damaged.with_name(damaged.name + "-wal").exists() or not (
        damaged.with_name(damaged.name + "-wal").stat().st_size
    )


def test_a_database_file_that_cannot_be_written_opens_read_only_and_says_why(
    qtbot: Any, tmp_path: Path, team: str
) -> None:
    """A healthy file that cannot be written (immutable: even root cannot) opens
    read-only up front, with a banner and title naming the reason (not "damaged"); the
    grader can read their work, and a verdict is refused in the rubric with that reason."""
    from gradercal.ui.qt_app import build_window

    locked = tmp_path / "locked.sqlite"
    src, dst = sqlite3.connect(team), sqlite3.connect(locked)
    try:
        src.backup(dst)
        dst.execute("PRAGMA journal_mode = DELETE")  # no -wal/-shm beside it
    finally:
        dst.close()
        src.close()
    if not immutable(locked, True):
        pytest.skip("chattr +i is not available here (needs root on a filesystem that has it)")
    try:
        before = locked.read_bytes()
        window = build_window(
            str(locked), "u-ben", None, settings=QtAppSettings(tmp_path / "locked.ini")
        )
        qtbot.addWidget(window)
        try:
            text = banner_text(window)
            assert "Read-only" in text and "cannot be written" in text and "damaged" not in text
            assert "read-only (file cannot be written)" in window.windowTitle()
            assert "cannot be written" in _refused_verdict(qtbot, window)
            qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
        finally:
            window.close()
            window.store.db.dispose()
        assert locked.read_bytes() == before
    finally:
        immutable(locked, False)


def test_an_unreadable_database_is_a_message_not_a_crash(tmp_path: Path) -> None:
    from gradercal.errors import GradercalError
    from gradercal.ui.qt_app import build_window

    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"SQLite format 3\x00" + b"\xff" * 8000)
    with pytest.raises(GradercalError, match=r"damaged|cannot be read"):
        build_window(str(junk), "x", None, settings=QtAppSettings(tmp_path / "j.ini"))


# -- conflicts dialog ---------------------------------------------------------------------------
def make_conflicts(db_path: str, tmp_path: Path) -> list[tuple[int, str]]:
    """Two judgment conflicts for u-ana: changed in the packet and in the database."""
    db = open_database(db_path)
    try:
        store = GradingStore(db)
        path = tmp_path / "conflicts.gcpkg"
        export_packet(db, "u-ana", path)
        picked: list[tuple[int, str]] = []
        for q in store.queue("u-ana")[:2]:
            item = store.load_item("u-ana", q.assignment_id)
            crit = next(c.id for c in item.task.criteria if c.kind.value == "judgment")
            store.save_judgment(q.assignment_id, crit, JudgmentValue(met=True, rationale="db"))
            picked.append((q.assignment_id, crit))
        with open_packet(path, workdir=tmp_path / "cw") as session:
            pstore = GradingStore(session.db)
            for aid, crit in picked:
                pstore.save_judgment(aid, crit, JudgmentValue(met=False, rationale="packet"))
        assert len(merge_packet(db, path).conflicts) == 2
    finally:
        db.dispose()
    return picked


def test_conflicts_dialog_keeps_left_or_right_from_the_coordinator_file_menu(
    qtbot: Any, tmp_path: Path, team: str
) -> None:
    from gradercal.ui.qt_app import build_coordinator_window
    from gradercal.ui.qt_conflicts import QtConflictsDialog

    picked = make_conflicts(team, tmp_path)
    window = build_coordinator_window(
        team, "lead", None, settings=QtAppSettings(tmp_path / "c.ini"), compute=False
    )
    qtbot.addWidget(window)
    try:
        action = window.conflicts_action
        assert action.isEnabled() and action in window.menuBar().actions()[0].menu().actions()
        action.trigger()
        dialog = window.conflicts_dialog
        assert isinstance(dialog, QtConflictsDialog)
        assert dialog.table.rowCount() == 2 and "2 open conflicts" in dialog.summary.text()
        assert "db" in dialog.left.toPlainText() and "packet" in dialog.right.toPlainText()
        dialog.table.selectRow(0)
        dialog.note.setText("the database value was checked")
        qtbot.mouseClick(dialog.keep_left, qtbot_button())
        assert "kept left" in dialog.status.text()
        assert dialog.table.rowCount() == 1
        dialog.table.selectRow(0)
        qtbot.mouseClick(dialog.keep_right, qtbot_button())
        assert dialog.table.rowCount() == 0 and "No open conflicts" in dialog.summary.text()
        dialog.show_resolved.setChecked(True)
        assert dialog.table.rowCount() == 2
        assert not dialog.keep_left.isEnabled()  # resolved rows cannot be resolved again
    finally:
        window.close()
        window.store.db.dispose()
    db = open_database(team)
    try:
        rows = list_conflicts(db)
        assert [r["resolution"]["keep"] for r in rows] == ["database", "packet"]
        assert rows[0]["resolution"]["by"] == "lead"
        assert rows[0]["resolution"]["note"] == "the database value was checked"
        store = GradingStore(db)
        values = [store.load_item("u-ana", aid).judgments[crit] for aid, crit in picked]
        assert [(v.met, v.rationale) for v in values] == [(True, "db"), (False, "packet")]
    finally:
        db.dispose()


def qtbot_button() -> Any:
    from PySide6.QtCore import Qt

    return Qt.MouseButton.LeftButton


def test_a_graders_window_has_no_conflicts_action(qtbot: Any, tmp_path: Path, team: str) -> None:
    from gradercal.ui.qt_app import build_window

    window = build_window(team, "u-ana", None, settings=QtAppSettings(tmp_path / "g.ini"))
    qtbot.addWidget(window)
    try:
        assert not hasattr(window, "conflicts_action")
        qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
    finally:
        window.close()
        window.store.db.dispose()


# -- stale views ---------------------------------------------------------------------------------
def test_a_verdict_changed_elsewhere_asks_reload_or_overwrite(
    qtbot: Any, tmp_path: Path, team: str
) -> None:
    from gradercal.ui.qt_app import build_window
    from gradercal.ui.qt_conflicts import stale_message

    window = build_window(team, "u-ben", None, settings=QtAppSettings(tmp_path / "s.ini"))
    qtbot.addWidget(window)
    other = GradingStore(open_database(team))  # the same grader on another machine
    try:
        g = window.grading
        assert g is not None
        qtbot.waitUntil(lambda: g.current is not None and not g._ready_pending, timeout=30_000)
        assert g.current is not None and g.state is not None
        aid = g.current.item.assignment_id
        row = next(i for i, r in enumerate(g.state.rows) if not r.is_auto)
        crit = g.state.rows[row].criterion.id
        g.rubric.set_current_row(row)
        other.save_judgment(aid, crit, JudgmentValue(met=True, rationale="other machine"))
        asked: list[tuple[StaleJudgmentError, JudgmentValue]] = []
        answers = iter(["cancel", "reload"])
        g.stale_prompt = lambda exc, mine: (asked.append((exc, mine)), next(answers))[1]

        g.set_verdict("not_met")  # cancel: nothing written, the view says why
        assert len(asked) == 1 and asked[0][0].current_value is not None
        assert asked[0][0].current_value.met is True and asked[0][1].met is False
        assert "changed elsewhere" in g.rubric.message.text()
        named = f"criterion {g.state.label(crit)}"  # its number and text, never its id
        assert (
            named in g.rubric.message.text() and f"criterion {crit} " not in g.rubric.message.text()
        )
        text = stale_message(*asked[0])
        assert "In the database now: met" in text and "Yours (not saved): not met" in text
        assert other.load_item("u-ben", aid).judgments[crit].rationale == "other machine"

        g.rubric.set_current_row(row)
        g.set_verdict("not_met")  # reload: the view now shows the other machine's value
        qtbot.waitUntil(lambda: g.state is not None and g.state.value(crit).met is True)
        assert g.state.value(crit).rationale == "other machine"
        g.rubric.set_current_row(row)
        g.set_verdict("not_met")  # now current: saved without a question
        assert len(asked) == 2
        assert other.load_item("u-ben", aid).judgments[crit].met is False

        other.save_judgment(aid, crit, JudgmentValue(met=True, rationale="again"))
        g.stale_prompt = lambda exc, mine: (asked.append((exc, mine)), "overwrite")[1]
        g.rubric.set_current_row(row)
        g.set_verdict(None)  # overwrite on purpose: saved, the other value kept in history
        assert len(asked) == 3 and asked[2][0].current_value == JudgmentValue(True, None, "again")
        assert not other.load_item("u-ben", aid).judgments[crit].answered
        assert g.state.value(crit).met is None
        history = other.judgment_history(aid, crit)
        assert [(h["met"], h["rationale"]) for h in history] == [
            (True, "other machine"),
            (False, "other machine"),
            (True, "again"),
            (None, "other machine"),
        ]
        qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
    finally:
        window.close()
        window.store.db.dispose()
        other.db.dispose()


def test_a_reopen_made_in_a_packet_travels_back_on_merge(
    qtbot: Any, tmp_path: Path, windows: list[QtMainWindow]
) -> None:
    """Ctrl+O on a submitted response while grading from a packet is recorded in the
    packet, and `packet merge` adds it to the team database's reopen history (the state
    it left, the grader, when), once: merging again adds nothing. Before, the merge
    brought the verdicts back and dropped the reopening."""
    db = str(tmp_path / "team.sqlite")
    cli("import", str(DEMO), "--db", db)
    cli("assign", "--db", db, "--graders", "u-ana", "--overlap", "1", "--seed", "reopen")
    path = tmp_path / "u-ana.gcpkg"
    cli_json("packet", "export", "--db", db, "--grader", "u-ana", "-o", str(path))
    window = open_packet_window(qtbot, path, tmp_path, windows)
    g = window.grading
    assert g is not None
    first = g.queue[g.index]
    grade_current_by_keyboard(qtbot, window)  # submits it and moves on
    with qtbot.waitSignal(g.item_ready, timeout=20_000):
        press(qtbot, window, "[")  # back to the submitted one
    assert g.queue[g.index].assignment_id == first.assignment_id and g.queue[g.index].done
    press(qtbot, window, "Ctrl+O")
    assert not g.queue[g.index].done
    with qtbot.waitSignal(g.item_ready, timeout=20_000):
        press(qtbot, window, "Ctrl+Return")  # submitted again
    offline = GradingStore(window.store.db).reopen_history(first.assignment_id)
    assert [h["status"] for h in offline] == ["submitted"]
    window.close()
    windows.remove(window)

    report = cli_json("packet", "merge", str(path), "--db", db)
    assert report["reopens_added"] == 1 and report["changed"] is True
    team = open_database(db)
    try:
        history = GradingStore(team).reopen_history(first.assignment_id)
    finally:
        team.dispose()
    assert len(history) == 1
    h = history[0]
    assert (h["status"], h["actor"], h["revision"]) == ("submitted", "u-ana", 1)
    assert h["submitted_at"] == offline[0]["submitted_at"]
    assert h["packet_id"] == report["packet_id"]
    settled = fingerprint(db)
    again = cli_json("packet", "merge", str(path), "--db", db)
    assert again["reopens_added"] == 0 and again["changed"] is False
    assert fingerprint(db) == settled
    line = cli("packet", "merge", str(path), "--db", db).stdout
    assert "nothing new" in line


@pytest.mark.parametrize("size", [(1280, 720), (1366, 768)])
def test_the_packet_banner_has_room_on_a_laptop(
    qtbot: Any, tmp_path: Path, windows: list[QtMainWindow], size: tuple[int, int]
) -> None:
    """The offline-packet banner spans the window and is as tall as its wrapped text: every
    line is visible, in at most three lines. In a tool bar it was a 215 px column of
    eight lines; replacing its text (a save that failed) raised UnboundLocalError."""
    from PySide6.QtCore import QRect
    from PySide6.QtWidgets import QLabel

    from gradercal.ui.qt_packet import add_banner

    db = str(tmp_path / "team.sqlite")
    cli("import", str(DEMO), "--db", db)
    cli("assign", "--db", db, "--graders", "u-ana", "--overlap", "1", "--seed", "banner")
    path = tmp_path / "u-ana.gcpkg"
    cli_json("packet", "export", "--db", db, "--grader", "u-ana", "-o", str(path))
    window = open_packet_window(qtbot, path, tmp_path, windows)
    window.resize(*size)
    for text, kind in (
        (banner_text(window), None),  # as the window opened
        ("Could not save u-ana.gcpkg: the disk is full. " * 3, "warning"),
    ):
        found = window.findChild(QLabel, "bannerLabel")
        label = found if kind is None else add_banner(window, text, kind)
        assert isinstance(label, QLabel)
        qtbot.waitUntil(lambda lab=label: lab.height() >= lab.heightForWidth(lab.width()))
        assert window.findChildren(QLabel, "bannerLabel") == [label]
        assert window.size().width() == size[0]  # the banner never widens the window
        assert label.isVisible() and label.width() >= size[0] - 16
        inner = label.contentsRect().adjusted(8, 4, -8, -4)  # the style's padding
        needed = label.fontMetrics().boundingRect(
            QRect(0, 0, inner.width(), 10_000), int(Qt.TextFlag.TextWordWrap), text
        )
        assert needed.height() <= label.contentsRect().height(), (needed, label.geometry())
        assert needed.height() <= 3 * label.fontMetrics().lineSpacing() + 2
        top = label.mapTo(window, label.rect().topLeft()).y()
        assert (
            top + label.height()
            <= window.grading.mapTo(window, window.grading.rect().topLeft()).y()
        )
