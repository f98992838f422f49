"""F1 on a laptop screen (#33): the dialog fits a 1280×720 (and 1024×700) screen with its
keys column whole, and lists exactly the keys of the window it is opened from — each one a
key of a shown menu action of that window or of one of that window's views."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

from gradercal.db.grading import GradingStore
from gradercal.db.session import open_database
from gradercal.ui import qt_workers
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_settings import QtAppSettings
from gradercal.ui.qt_shortcuts_dialog import QtShortcutsDialog
from gradercal.ui.shortcuts import BY_ID, SHORTCUTS
from gradercal.ui.window_fit import FRAME
from tests.support.gui import GRADER, import_folder, write_gui_benchmark

pytestmark = pytest.mark.gui

#: The groups of keys each kind of window's own views handle (no menu action).
VIEW_GROUPS = {
    False: {"Rubric", "Responses", "Task review"},
    True: {"Adjudication", "Tasks", "Clarifications", "Rubric history"},
}


@pytest.fixture
def window_of(qtbot: Any, tmp_path: Path) -> Iterator[Any]:
    path = str(tmp_path / "f1.sqlite")
    import_folder(path, write_gui_benchmark(tmp_path / "bench"))
    databases = []
    windows: list[QtMainWindow] = []

    def make(coordinator: bool, available: tuple[int, int, int, int]) -> QtMainWindow:
        db = open_database(path)
        databases.append(db)
        store = GradingStore(db)
        window = QtMainWindow(
            store,
            QtAppSettings(tmp_path / "f1.ini"),
            db.display,
            track_time=False,
            coordinator=coordinator,
        )
        qtbot.addWidget(window)
        windows.append(window)
        window._restore_window(available)
        window.show()
        qtbot.waitExposed(window)
        bench = store.benchmark_names()[0]
        if coordinator:
            window.open_dashboard(bench, compute=False)
        else:
            window.start_session(GRADER, bench, "grading", load=False)
        return window

    yield make
    for w in windows:
        if w.coordination is not None:
            w.coordination.shutdown()
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
    for db in databases:
        db.dispose()


def listed(dialog: QtShortcutsDialog) -> list[tuple[str, str]]:
    rows = []
    tree = dialog.tree
    for g in range(tree.topLevelItemCount()):
        group = tree.topLevelItem(g)
        assert group is not None
        for c in range(group.childCount()):
            child = group.child(c)
            assert child is not None
            rows.append((child.text(0), child.text(1)))
    return rows


@pytest.mark.parametrize("coordinator", [False, True], ids=["grader", "coordinator"])
@pytest.mark.parametrize("available", [(0, 0, 1280, 720), (0, 0, 1024, 700)])
def test_f1_fits_the_screen_and_lists_only_the_keys_that_work_in_its_window(
    qtbot: Any, window_of: Any, coordinator: bool, available: tuple[int, int, int, int]
) -> None:
    window = window_of(coordinator, available)
    dialog = window.show_shortcuts()
    qtbot.waitExposed(dialog)
    QApplication.processEvents()
    # the dialog fits the screen with its frame, and its keys column shows every key whole
    assert dialog.width() + FRAME[0] <= available[2], dialog.size()
    assert dialog.height() + FRAME[1] <= available[3], dialog.size()
    tree = dialog.tree
    assert tree.columnWidth(0) + tree.columnWidth(1) <= tree.viewport().width()
    metrics = tree.fontMetrics()
    rows = listed(dialog)
    for _label, keys_text in rows:
        assert metrics.horizontalAdvance(keys_text) <= tree.columnWidth(1), keys_text
    # each listed key works in this window: a shown menu action, or a key of its views
    by_label = {s.label: s for s in SHORTCUTS}
    wrong = []
    for label, _keys in rows:
        s = by_label[label]
        if s.local:
            if s.group not in VIEW_GROUPS[coordinator]:
                wrong.append(s.id)
        else:
            action = window.actions_by_id.get(s.id)
            if action is None or not action.isVisible():
                wrong.append(s.id)
    assert wrong == [], wrong
    # … and every shown menu action with a key is listed
    labels = {label for label, _keys in rows}
    missing = [
        sid
        for sid, action in window.actions_by_id.items()
        if action.isVisible() and BY_ID[sid].keys and BY_ID[sid].label not in labels
    ]
    assert missing == [], missing
