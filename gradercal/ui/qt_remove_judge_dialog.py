"""File ▸ Remove a judge… (Ctrl+Shift+Delete): a (test) judge and its verdicts go.

Choose the judge: the dialog states how many of its verdicts (and saved calibrations)
the benchmark loses. Remove (Ctrl+Return) asks once more, naming that count, then
deletes them in one transaction (the verdicts stay in the history). Human graders are
never listed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QComboBox, QLabel, QMessageBox, QWidget

from gradercal.ui.coordinator_ops import Outcome
from gradercal.ui.judge_ops import judges
from gradercal.ui.qt_ops_dialog import QtOpsDialog, hint, present

if TYPE_CHECKING:
    from gradercal.db.session import Database


def _remove(db: Database, benchmark: str | None, judge: str) -> Outcome:
    from gradercal.db.judge_removal import remove_judge

    r = remove_judge(db, benchmark, judge, actor="coordinator")
    lines = []
    if r.calibrations:
        lines.append(f"{r.calibrations} saved calibrations removed.")
    if r.certificates:
        lines.append(f"{r.certificates} alignment certificates removed.")
    lines.append(
        f"{r.judge} has no verdict left: the judge is gone from the database."
        if r.grader_removed
        else f"{r.judge} keeps its verdicts in other benchmarks."
    )
    return Outcome(
        f"Removed {r.judge} and its {r.verdicts} verdicts from {r.benchmark!r}.",
        lines,
        {"judge": r.judge, "benchmark": r.benchmark, "verdicts": r.verdicts},
    )


class QtRemoveJudgeDialog(QtOpsDialog):
    def __init__(self, db: Database, benchmark: str | None, parent: QWidget | None = None) -> None:
        super().__init__("Remove a judge", "&Remove…", parent)
        self.setObjectName("remove_judge_dialog")
        self.db = db
        self.benchmark = benchmark
        self.judge = QComboBox()
        with contextlib.suppress(Exception):
            self.judge.addItems(judges(db, benchmark))
        self.form.addRow("&Judge:", self.judge)
        self.count_label = QLabel("")
        self.count_label.setObjectName("verdictCount")
        self.count_label.setWordWrap(True)
        self.form.addRow(self.count_label)
        self.form.addRow(hint("Human graders are never listed: their work is kept."))
        self.judge.currentTextChanged.connect(self._count)
        self.count = 0
        self._count(self.judge.currentText())
        #: The last confirmation asked (for tests: answered by ``confirm``).
        self.confirmation: QMessageBox | None = None

    def _count(self, judge: str) -> None:
        from gradercal.db.judge_removal import judge_verdict_count

        if not judge:
            self.count = 0
            self.count_label.setText("This benchmark has no judge verdicts.")
            return
        try:
            self.count = judge_verdict_count(self.db, self.benchmark, judge)
        except Exception as exc:
            self.count_label.setText(f"Cannot count its verdicts: {exc}")
            return
        self.count_label.setText(f"Removing {judge} deletes its {self.count} verdicts.")

    def work(self) -> tuple[Callable[..., Outcome], tuple[Any, ...]] | str:
        judge = self.judge.currentText().strip()
        if not judge:
            return "this benchmark has no judge to remove."
        return _remove, (self.db, self.benchmark, judge)

    def start(self) -> None:
        """Ask first, naming how many verdicts go; remove on Yes."""
        if self.busy:
            return
        judge = self.judge.currentText().strip()
        if not judge:
            self._refuse("this benchmark has no judge to remove.")
            return
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            "Remove the judge?",
            f"Remove {judge} and its {self.count} verdicts from this benchmark? "
            "Its saved calibrations go too. This cannot be undone in the app.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            self,
        )
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.finished.connect(lambda result: self._answered(result))
        self.confirmation = box
        present(box)

    def _answered(self, result: int) -> None:
        if result == QMessageBox.StandardButton.Yes:
            super().start()
        else:
            self.output.setPlainText("Nothing removed.")

    def finished_ok(self, outcome: Outcome) -> None:
        index = self.judge.findText(str(outcome.data.get("judge")))
        if index >= 0:
            self.judge.removeItem(index)
