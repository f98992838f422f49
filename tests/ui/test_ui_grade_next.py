"""View ▸ Where to grade next (Ctrl+8) and its Plan tab in the coordinator window (#35).

Real widgets offscreen (pytest-qt) on small generated benchmarks (:mod:`gradercal.synth`,
30 tasks × 8 criteria × 2 models, experts on the first 10 tasks: a pilot). The numbers
shown are compared with :mod:`gradercal.analysis.planning` run on the same inputs (never
hard-coded); the Assign buttons write assignments with the strategy's probabilities
(SQLite and PostgreSQL), the active draw the same as ``gradercal assign --strategy
active`` on a second database; refusals are words; model names with markup are text.
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
from PySide6.QtWidgets import QApplication, QLabel, QMessageBox
from sqlalchemy import select

from gradercal.analysis.planning import fit_pilot, next_batches, plan
from gradercal.cli import main
from gradercal.db import models as m
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.synth import SynthConfig, generate
from gradercal.ui import qt_grade_next, qt_workers
from gradercal.ui.grade_next import NO_JUDGE, change_text, fmt, graded_so_far
from gradercal.ui.qt_grade_next import QtGradeNextView
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_settings import QtAppSettings
from gradercal.ui.shortcuts import window_shortcuts

TIMEOUT = 120_000
SIMS = 30
HOSTILE = '<b>bold</b><img src="x"> & co'
PILOT_TASKS = 10


def cli(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def _bench(root: Path, *, judge: bool = True, experts: int = 3) -> Path:
    """30 tasks × 8 criteria × 2 models; experts on the first 10 tasks; model-a renamed
    to a name with markup."""
    out = root / f"bench-{judge}-{experts}"
    if out.exists():
        return out
    generate(
        out,
        SynthConfig(
            tasks=30,
            criteria_per_task=8,
            responses_per_task=2,
            artifacts_per_task=0,
            numeric_task_share=0.0,
            human_graders=experts,
            judge=judge,
            seed=3,
        ),
    )
    kept = []
    for line in (out / "judgments.jsonl").read_text("utf-8").splitlines():
        rec = json.loads(line)
        if rec["grader_kind"] == "human" and int(rec["response_id"][1:5]) > PILOT_TASKS:
            continue
        kept.append(line)
    (out / "judgments.jsonl").write_text("\n".join(kept) + "\n", "utf-8")
    responses = []
    for line in (out / "responses.jsonl").read_text("utf-8").splitlines():
        rec = json.loads(line)
        if rec.get("model") == "model-a":
            rec["model"] = HOSTILE
        responses.append(json.dumps(rec))
    (out / "responses.jsonl").write_text("\n".join(responses) + "\n", "utf-8")
    return out


@pytest.fixture(scope="module")
def benches(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("grade-next")


def _db(url: str, folder: Path) -> str:
    cli("init", "--db", url)
    cli("import", str(folder), "--db", url)
    return url


@pytest.fixture
def windows(qtbot: Any) -> Iterator[list[QtMainWindow]]:
    opened: list[QtMainWindow] = []
    yield opened
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=TIMEOUT)
    for w in opened:
        with contextlib.suppress(RuntimeError):
            w.close()
            w.store.db.dispose()


@pytest.fixture(autouse=True)
def _few_sims(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(qt_grade_next, "DEFAULT_SIMS", SIMS)


def coordinator(qtbot: Any, db: str, tmp_path: Path, opened: list[QtMainWindow]) -> QtMainWindow:
    from gradercal.ui.qt_app import build_coordinator_window

    window = build_coordinator_window(
        db, "lead", None, settings=QtAppSettings(tmp_path / "c.ini"), compute=False
    )
    opened.append(window)
    window.resize(1280, 720)
    qtbot.waitExposed(window)
    return window


def open_by_key(qtbot: Any, window: QtMainWindow) -> QtGradeNextView:
    """Ctrl+8 in the window; wait for the first computation."""
    action = window.actions_by_id["view.grade_next"]
    assert action.isEnabled() and action.isVisible()
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5_000)
    combo = action.shortcuts()[0][0]  # type: ignore[index]
    assert action.shortcuts()[0].toString() == "Ctrl+8"
    handle = window.windowHandle()
    assert handle is not None
    qtbot.keyClick(handle, combo.key(), combo.keyboardModifiers())
    view = window.grade_next_view
    assert view is not None and window.stack.currentWidget() is view
    wait_computed(qtbot, view)
    return view


def wait_computed(qtbot: Any, view: QtGradeNextView) -> None:
    qtbot.waitUntil(lambda: not view.busy, timeout=TIMEOUT)


def test_the_key_is_listed_in_f1_and_clashes_with_nothing() -> None:
    ours = [s for s in window_shortcuts(coordinator=True) if s.id == "view.grade_next"]
    assert ours and ours[0].keys == ("Ctrl+8",)
    assert all(s.id != "view.grade_next" for s in window_shortcuts(coordinator=False))
    others = {k for s in window_shortcuts(coordinator=True) if s.id != ours[0].id for k in s.keys}
    assert "Ctrl+8" not in others


def test_rows_show_the_plans_numbers_and_names_as_text(
    qtbot: Any, benches: Path, tmp_path: Path, windows: list[QtMainWindow]
) -> None:
    db = _db(str(tmp_path / "g.sqlite"), _bench(benches))
    window = coordinator(qtbot, db, tmp_path, windows)
    view = open_by_key(qtbot, window)
    assert view.refusal == "", view.refusal
    # the same inputs through analysis.planning
    database = open_database(db)
    try:
        frames = Repository(database).load_frames(None)
    finally:
        database.dispose()
    model = fit_pilot(frames, "judge")
    tasks_now, _ = graded_so_far(frames)
    assert tasks_now == PILOT_TASKS
    k = int(model.pilot["experts_per_item"])
    assert k == 3
    batch = view.batch.value()
    rows = next_batches(
        model,
        tasks_now=tasks_now,
        experts_now=k,
        batch_responses=batch,
        extra_experts=2,
        n_sims=SIMS,
    )
    assert view.table.rowCount() == len(rows) == 4
    for i, row in enumerate(rows):
        for j, key in enumerate(
            ("pass_rate_half_width", "mean_score_half_width", "kappa_half_width")
        ):
            cell = view.table.item(i, 2 + j)
            assert cell is not None
            assert cell.text() == change_text(row, rows[0], key)
    # the uniform batch narrows every headline interval
    assert all(v > 0 for v in rows[1]["shrink"].values())
    # each model, its name as text (markup shown, not rendered)
    names = [view.models_table.item(i, 0).text() for i in range(view.models_table.rowCount())]  # type: ignore[union-attr]
    assert HOSTILE in names
    i = names.index(HOSTILE)
    cell = view.models_table.item(i, 2)
    assert cell is not None
    assert cell.text() == fmt(rows[1]["per_model"][HOSTILE]["pass_rate_half_width"])
    for label in view.findChildren(QLabel):
        if label.text():
            assert label.textFormat() in (Qt.TextFormat.PlainText, Qt.TextFormat.AutoText)
            if HOSTILE in label.text():
                assert label.textFormat() == Qt.TextFormat.PlainText
    # the window fits 1280×720: the table's columns are all visible
    assert (
        view.table.horizontalScrollBar().maximum() == 0
        or not view.table.horizontalScrollBar().isVisible()
    )


def test_plan_tab_shows_gradercal_plans_table_and_chart(
    qtbot: Any, benches: Path, tmp_path: Path, windows: list[QtMainWindow]
) -> None:
    db = _db(str(tmp_path / "p.sqlite"), _bench(benches))
    window = coordinator(qtbot, db, tmp_path, windows)
    view = open_by_key(qtbot, window)
    view.tabs.setCurrentIndex(1)
    box, spin = view.targets["pass_rate_half_width"]
    box.setChecked(True)
    spin.setValue(0.2)
    view.plan_experts.setText("1,3")
    view.plan_tasks.setText("5,10,20,30")
    qtbot.mouseClick(view.plan_button, Qt.MouseButton.LeftButton)
    wait_computed(qtbot, view)
    assert view.plan_refusal == ""
    database = open_database(db)
    try:
        frames = Repository(database).load_frames(None)
    finally:
        database.dispose()
    ref = plan(
        fit_pilot(frames, "judge"),
        tasks=[5, 10, 20, 30],
        experts=[1, 3],
        targets={"pass_rate_half_width": 0.2},
        n_sims=SIMS,
    )
    assert view.plan_table.rowCount() == len(ref.designs) == 8
    for i, d in enumerate(ref.designs):
        texts = [view.plan_table.item(i, j).text() for j in range(6)]  # type: ignore[union-attr]
        assert texts[:3] == [str(d["tasks"]), str(d["experts_per_item"]), str(d["expert_items"])]
        assert texts[3] == fmt(d["expected_half_width"]["pass_rate_half_width"])
        assert texts[5] == fmt(d["expected_half_width"]["kappa_half_width"])
    if ref.recommended is not None:
        assert "Cheapest design" in view.plan_status.text()
    assert view.chart.figure is not None
    assert len(view.chart.figure.axes) == 3
    # a bad grid is refused in words
    view.plan_experts.setText("one,three")
    view.run_plan()
    assert "not a list of whole numbers" in view.plan_refusal


def _assignments(url: str) -> list[tuple[str, float | None, int | None]]:
    database = open_database(url)
    try:
        with database.read() as s:
            rows = s.execute(
                select(
                    m.Response.external_id,
                    m.Assignment.inclusion_probability,
                    m.Assignment.sampling_round,
                ).join(m.Response, m.Response.id == m.Assignment.response_id)
            ).all()
    finally:
        database.dispose()
    return [(str(r), p, n) for r, p, n in rows]


def _confirm(qtbot: Any, view: QtGradeNextView) -> None:
    qtbot.waitUntil(lambda: view.confirm_box is not None, timeout=5_000)
    box = view.confirm_box
    assert box is not None and box.isVisible()
    assert box.textFormat() == Qt.TextFormat.PlainText
    yes = box.button(QMessageBox.StandardButton.Yes)
    qtbot.mouseClick(yes, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not view.busy, timeout=TIMEOUT)


def test_assign_buttons_draw_the_batch_with_the_strategys_probabilities(
    qtbot: Any, benches: Path, db_url: str, tmp_path: Path, windows: list[QtMainWindow]
) -> None:
    folder = _bench(benches)
    db = _db(db_url, folder)
    reference = _db(str(tmp_path / "ref.sqlite"), folder)
    window = coordinator(qtbot, db, tmp_path, windows)
    view = open_by_key(qtbot, window)
    view.graders.setText("u-ana, u-ben")
    view.overlap.setValue(1)
    view.batch.setValue(12)
    view.seed.setText("s1")
    qtbot.mouseClick(view.compute_button, Qt.MouseButton.LeftButton)  # the rows say 12
    wait_computed(qtbot, view)
    assert view.table.item(2, 0).text().startswith("12 more responses, active")  # type: ignore[union-attr]
    # active first, by the keyboard: the row selected, Enter, then Yes
    view.table.setFocus()
    view.table.selectRow(2)
    view.table.setCurrentCell(2, 0)
    qtbot.keyClick(view.table, Qt.Key.Key_Return)
    _confirm(qtbot, view)
    assert view.last_outcome is not None, view.status.text()
    got = sorted(_assignments(db))
    assert got and all(n == 1 for _r, _p, n in got)
    # the same draw as `gradercal assign --strategy active` on a second database
    out = cli(
        "assign", "--db", reference, "--graders", "u-ana,u-ben", "--overlap", "1",
        "--strategy", "active", "--budget", "12", "--seed", "s1", "--json",
    )  # fmt: skip
    want = {a["response_id"]: a["probability"] for a in json.loads(out.output)["assigned"]}
    assert {r: p for r, p, _n in got} == pytest.approx(want, rel=1e-12)
    # then the uniform batch by its button: every drawn response with probability N / n
    candidates = 60 - len(got)
    view.batch.setValue(15)
    view.seed.setText("s2")
    qtbot.mouseClick(view.compute_button, Qt.MouseButton.LeftButton)
    wait_computed(qtbot, view)
    button = view.table.cellWidget(1, len(qt_grade_next.BATCH_COLUMNS) - 1)
    assert button is not None
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    _confirm(qtbot, view)
    second = [a for a in _assignments(db) if a[2] == 2]
    assert second
    assert [p for _r, p, _n in second] == pytest.approx([15 / candidates] * len(second), rel=1e-12)
    assert not {r for r, _p, _n in second} & {r for r, _p, _n in got}
    assert "Drew" in view.status.text()


def test_cancel_assigns_nothing(
    qtbot: Any, benches: Path, tmp_path: Path, windows: list[QtMainWindow]
) -> None:
    db = _db(str(tmp_path / "c.sqlite"), _bench(benches))
    window = coordinator(qtbot, db, tmp_path, windows)
    view = open_by_key(qtbot, window)
    view.graders.setText("u-ana")
    box = view.assign_row(1)
    assert box is not None
    qtbot.mouseClick(box.button(QMessageBox.StandardButton.Cancel), Qt.MouseButton.LeftButton)
    assert view.status.text() == "Not assigned."
    assert _assignments(db) == []


def test_without_a_judge_active_is_refused_and_assumptions_asked(
    qtbot: Any, benches: Path, tmp_path: Path, windows: list[QtMainWindow]
) -> None:
    db = _db(str(tmp_path / "nj.sqlite"), _bench(benches, judge=False))
    window = coordinator(qtbot, db, tmp_path, windows)
    view = open_by_key(qtbot, window)
    assert view.refusal.startswith("The plan needs assumptions: no judge has graded")
    assert view.assumptions.isVisible()
    assert view.table.rowCount() == 0
    qtbot.mouseClick(view.compute_button, Qt.MouseButton.LeftButton)
    wait_computed(qtbot, view)
    assert view.result is not None and view.result.source == "assumed"
    assert view.refusal == NO_JUDGE
    assert view.refusal_label.text() == NO_JUDGE
    col = len(qt_grade_next.BATCH_COLUMNS) - 1
    assert view.table.cellWidget(2, col) is None  # no Assign on the active row
    assert "needs a judge run" in view.table.item(2, col).text()  # type: ignore[union-attr]
    assert view.table.cellWidget(1, col) is not None  # uniform offered
    assert view.assign_row(2) is None and view.refusal_label.text() == NO_JUDGE


def test_without_a_pilot_the_plan_needs_assumptions(
    qtbot: Any, benches: Path, tmp_path: Path, windows: list[QtMainWindow]
) -> None:
    db = _db(str(tmp_path / "np.sqlite"), _bench(benches, experts=1))
    window = coordinator(qtbot, db, tmp_path, windows)
    view = open_by_key(qtbot, window)
    assert view.refusal.startswith("The plan needs assumptions: no item graded by two experts")
    assert view.assumptions.isVisible()
    view.tabs.setCurrentIndex(1)
    view.run_plan()
    wait_computed(qtbot, view)
    assert view.plan_refusal == ""  # the assumptions shown are used
    assert view.plan_table.rowCount() > 0


def test_gui_view_next_opens_the_view(tmp_path: Path, benches: Path, qtbot: Any) -> None:
    from gradercal.ui.qt_app import build_window

    db = _db(str(tmp_path / "v.sqlite"), _bench(benches))
    window = build_window(db, None, None, "next", settings=QtAppSettings(tmp_path / "s.ini"))
    try:
        view = window.grade_next_view
        assert view is not None and window.stack.currentWidget() is view
        wait_computed(qtbot, view)
    finally:
        qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=TIMEOUT)
        window.close()
        window.store.db.dispose()


def test_with_every_response_graded_no_batch_is_offered(
    qtbot: Any, tmp_path: Path, windows: list[QtMainWindow]
) -> None:
    """The demo: every response is graded, so a uniform or active batch would draw
    nothing; the rows say so in words instead of offering an Assign button."""
    from tests.conftest import ROOT

    db = _db(str(tmp_path / "demo.sqlite"), ROOT / "samples" / "demo")
    window = coordinator(qtbot, db, tmp_path, windows)
    view = open_by_key(qtbot, window)
    assert view.result is not None
    col = len(qt_grade_next.BATCH_COLUMNS) - 1
    for row in (1, 2):
        assert view.result.rows[row]["added_responses"] == 0
        assert view.table.cellWidget(row, col) is None
        assert view.table.item(row, col).text() == qt_grade_next.NOTHING_LEFT  # type: ignore[union-attr]
        view.graders.setText("u-ana")
        assert view.assign_row(row) is None
        assert qt_grade_next.NOTHING_LEFT in view.status.text()
    assert _assignments(db) == []
