"""Take the two screenshots of rubric revisions in docs/review-process.md (issue #16).

    QT_QPA_PLATFORM=offscreen python scripts/revision_screenshots.py [OUT_DIR]

Imports samples/demo into a temporary SQLite database; the three experts submit their
responses of task T01; then, in a coordinator window of 1366×768 with its dashboard
computed, the criterion edit dialog opens on T01's criterion c3, the text is edited and
a reason typed: ``revise-dialog.png`` is that window with the dialog over it (offscreen
windows are separate images, so the dialog is painted onto the window's). The dialog
saves the revision; then expert-ben's window opens his T01 response, which came back to
his queue: ``grading-changed.png``. OUT_DIR defaults to docs/img.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parent.parent
SIZE = (1366, 768)
TASK, CRITERION = "T01", "c3"
EXPERTS = ("expert-ana", "expert-ben", "expert-chloe")
NEW_TEXT = (
    "Identifies that batch 2 (donors D4–D6) was stained without a viability dye, so dead "
    "cells were not excluded; saying that no live/dead gate was used counts."
)
REASON = "Graders split on whether 'no live/dead gate' makes the same point (criterion health)"


def submit_task(db: object, task: str) -> None:
    """Each expert answers what is still open on their responses of ``task`` and submits."""
    from gradercal.db.grading import GradingStore, JudgmentValue

    store = GradingStore(db)  # type: ignore[arg-type]
    for grader in EXPERTS:
        store.ensure_queue(grader, None)
        for q in store.queue(grader):
            if q.task_id != task or q.done:
                continue
            item = store.load_item(grader, q.assignment_id)
            for c in item.task.criteria:
                if c.auto is None and not item.judgments.get(c.id, JudgmentValue()).answered:
                    store.save_judgment(q.assignment_id, c.id, JudgmentValue(met=True))
            store.submit(q.assignment_id)


def main(out_dir: Path) -> int:
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QColor, QPainter, QPen

    from gradercal.db.grading import GradingStore
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database
    from gradercal.formats import read_path
    from gradercal.ui.qt_app import _wait, application, build_coordinator_window
    from gradercal.ui.qt_main_window import QtMainWindow
    from gradercal.ui.qt_settings import QtAppSettings

    app = application()
    folder = Path(tempfile.mkdtemp(prefix="gradercal-shots-"))
    path = str(folder / "demo.sqlite")
    db = open_database(path)
    Repository(db).import_data(read_path(ROOT / "samples" / "demo"))
    submit_task(db, TASK)

    window = build_coordinator_window(
        path, "coordinator", None, settings=QtAppSettings(readonly=True), compute=False
    )
    window.resize(*SIZE)
    view = window.coordination
    assert view is not None
    board = view.dashboard
    board.recompute()
    _wait(board.result is not None and not board.busy, board.computed, 120_000)
    board.tables.setCurrentWidget(board.section_tables["health"])
    for _ in range(5):
        app.processEvents()
    dialog = view.revise_criterion(TASK, CRITERION)
    dialog.resize(860, 540)
    dialog.text.setPlainText(NEW_TEXT)
    dialog.reason.setText(REASON)
    dialog.refresh_preview()
    _wait(dialog.preview is not None, dialog.preview_shown, 20_000)
    for _ in range(5):
        app.processEvents()
    shot = window.grab()
    painter = QPainter(shot)
    painter.fillRect(shot.rect(), QColor(0, 0, 0, 70))  # the window behind a modal dialog
    at = QPoint((shot.width() - dialog.width()) // 2, (shot.height() - dialog.height()) // 2)
    painter.drawPixmap(at, dialog.grab())
    painter.setPen(QPen(QColor("#777777"), 1))
    painter.drawRect(at.x(), at.y(), dialog.width() - 1, dialog.height() - 1)
    painter.end()
    out_dir.mkdir(parents=True, exist_ok=True)
    shot.save(str(out_dir / "revise-dialog.png"), "PNG")
    if not dialog.save():
        print(f"error: the dialog did not save: {dialog.error.text()}", file=sys.stderr)
        return 1
    window.close()

    grader = QtMainWindow(
        GradingStore(db), QtAppSettings(readonly=True), db.display, track_time=False
    )
    grader.resize(*SIZE)
    grader.start_session("expert-ben", Repository(db).benchmark(None).name, load=False)
    grader.show()
    g = grader.grading
    assert g is not None
    g.load_queue_now()
    index = next(
        i for i, q in enumerate(g.queue) if q.task_id == TASK and q.status == "in_progress"
    )
    g.open_index(index)
    _wait(not g._ready_pending, g.item_ready, 20_000)
    for _ in range(5):
        app.processEvents()
    grader.grab().save(str(out_dir / "grading-changed.png"), "PNG")
    grader.close()
    db.dispose()
    print(f"saved {out_dir / 'revise-dialog.png'} and {out_dir / 'grading-changed.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "img"))
