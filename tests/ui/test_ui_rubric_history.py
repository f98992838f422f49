"""Rubric history and stale verdicts in the coordinator window (Ctrl+7, #33), on SQLite
and PostgreSQL: a criterion revised through the view's Ctrl+E (the revise dialog), then
the task's versions with their word diff and the stale verdicts per grader, as
``gradercal rubric history`` and ``gradercal rubric stale`` report them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from gradercal.db.grading import GradingStore
from gradercal.db.repo import Repository
from gradercal.db.revisions import RevisionStore
from gradercal.db.session import Database, open_database
from gradercal.formats import read_path
from gradercal.ui import qt_workers
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_settings import QtAppSettings
from gradercal.ui.rubric_history_text import changes_html, stale_text
from gradercal.ui.window_fit import FRAME

pytestmark = pytest.mark.gui


@pytest.fixture
def db(db_url: str, mini: Path) -> Iterator[Database]:
    database = open_database(db_url)
    Repository(database).import_data(read_path(mini))
    try:
        yield database
    finally:
        app = QApplication.instance()
        for _ in range(500):
            if qt_workers.pending_jobs() == 0:
                break
            if app is not None:
                app.processEvents()
        database.dispose()


def test_changes_html_words_every_kind_of_change() -> None:
    html = changes_html(
        {
            "kind": "verdict",
            "task": [{"field": "prompt", "kind": "wording", "before": "old", "after": "new"}],
            "criteria": [
                {"id": "c1", "kind": "verdict", "added": False, "removed": False,
                 "fields": [{"field": "tags", "kind": "wording", "before": ["a"],
                             "after": ["a", "b"]}]},
                {"id": "c9", "kind": "verdict", "added": True, "removed": False, "fields": []},
                {"id": "c3", "kind": "verdict", "added": False, "removed": True, "fields": []},
            ],
        }
    )  # fmt: skip
    assert "<b>prompt</b>" in html and "line-through" in html
    assert "Criterion c9</b>: added" in html and "Criterion c3</b>: removed" in html
    assert 'underline; font-weight:600">a, b</span>' in html  # a list as words
    assert changes_html({}) == "<p>No change recorded (the first stored version).</p>"
    assert stale_text({}) == "no stale verdicts"
    assert stale_text({"ben": 2, "ana": 1}) == "ana 1 · ben 2 (3 stale verdicts)"


def test_revise_from_the_history_view_and_read_versions_and_stale_verdicts(
    qtbot: Any, db: Database, tmp_path: Path
) -> None:
    bench = Repository(db).benchmark(None).name
    window = QtMainWindow(
        GradingStore(db), QtAppSettings(tmp_path / "s.ini"), db.display,
        track_time=False, coordinator=True,
    )  # fmt: skip
    qtbot.addWidget(window)
    window._restore_window((0, 0, 1280, 720))
    window.show()
    qtbot.waitExposed(window)
    window.open_dashboard(bench, compute=False)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    handle = window.windowHandle()
    assert handle is not None
    qtbot.keyClick(handle, Qt.Key.Key_7, Qt.KeyboardModifier.ControlModifier)
    view = window.history_view
    assert view is not None and window.stack.currentWidget() is view
    assert "rubric history" in window.windowTitle()
    for available in ((1280, 720), (1024, 700)):
        need = window.minimumSizeHint()
        assert need.width() + FRAME[0] <= available[0], need
        assert need.height() + FRAME[1] <= available[1], need
    # nothing revised yet
    assert view.summary.text().endswith("0 revised · benchmark: no stale verdicts")
    assert view.selected_task() == "M1"
    assert "M1 was never revised (version 1)" in view.changes.toPlainText()

    # Ctrl+E: the revise dialog on the chosen criterion (c1 of M1)
    view.criterion.setCurrentIndex(view.criterion.findData("c1"))
    view.task_table.setFocus()
    qtbot.keyClick(view.task_table, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    dialog = view.revise_dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.text.toPlainText() == "Notes the premature stop codon"
    dialog.text.setPlainText("Names the premature stop codon and its position")
    dialog.reason.setText("graders split on 'notes'")
    with qtbot.waitSignal(dialog.revised):
        assert dialog.save()

    # the view shows the new version at once, newest first, with the word diff
    store = RevisionStore(db)
    history = store.history(bench, "M1")
    assert [v.version for v in history] == [1, 2]
    assert view.version_table.rowCount() == 2
    assert view.version_table.item(0, 0).text() == "v2"  # type: ignore[union-attr]
    assert view.version_table.item(0, 4).text() == "graders split on 'notes'"  # type: ignore[union-attr]
    shown = view.changes.toHtml()
    assert "line-through" in shown and "its position" in shown and "Notes" in shown
    row = [view.task_table.item(0, c).text() for c in range(4)]  # type: ignore[union-attr]
    # stale verdicts, as `rubric stale` counts them: ana, ben and the judge on 2 responses
    stale = store.stale_counts(bench)
    assert sum(stale.values()) == 6
    assert row == ["M1", "2", "2", "6"]
    assert view.stale_label.text() == f"Stale verdicts of M1: {stale_text(stale)}"
    assert view.summary.text().endswith(f"1 revised · benchmark: {stale_text(stale)}")
    assert store.stale_by_task(bench) == {"M1": stale}
    # the other task: never revised, no stale verdicts
    assert view.select("M2")
    assert view.stale_label.text() == "Stale verdicts of M2: no stale verdicts"


def test_gui_screenshot_of_the_inbox_and_the_history(
    qtbot: Any, db: Database, db_url: str, tmp_path: Path
) -> None:
    """`gradercal gui --view clarifications|history --screenshot` (the in-process call)."""
    from PySide6.QtGui import QImage

    from gradercal.ui.qt_app import screenshot

    for view in ("clarifications", "history"):
        out = tmp_path / f"{view}.png"
        assert screenshot(out, db_url, None, None, view, (1280, 720)) == 0
        image = QImage(str(out))
        assert (image.width(), image.height()) == (1280, 720), view
