"""File ▸ Assign work… (Ctrl+Shift+A): ``gradercal assign`` in the window.

The graders, how many grade each response (overlap K), the share graded by everyone
(calibration subset), the attributes to balance over, whole tasks or single responses,
and the seed. Preview (Alt+P) shows who would get what without writing; Assign
(Ctrl+Return) applies it — applying the same design again changes nothing, and
existing assignments are never changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from gradercal.ui.coordinator_ops import (
    AssignOptions,
    Outcome,
    assign_apply,
    assign_preview,
    human_graders,
    split_names,
)
from gradercal.ui.qt_ops_dialog import QtOpsDialog, hint

if TYPE_CHECKING:
    from gradercal.db.session import Database

STRATA = ("workflow", "domain", "answer_format", "model")


class QtAssignDialog(QtOpsDialog):
    def __init__(self, db: Database, benchmark: str | None, parent: QWidget | None = None) -> None:
        super().__init__("Assign work", "&Assign", parent)
        self.setObjectName("assign_dialog")
        self.db = db
        self.benchmark = benchmark
        self.graders = QLineEdit(", ".join(_safe(human_graders, db)))
        self.graders.setPlaceholderText("ana, ben, chloe (new names become graders)")
        self.form.addRow("&Graders:", self.graders)
        self.overlap = QSpinBox()
        self.overlap.setRange(1, 50)
        self.overlap.setValue(2)
        self.form.addRow("&Overlap (graders per response):", self.overlap)
        self.calibration = QDoubleSpinBox()
        self.calibration.setRange(0.0, 1.0)
        self.calibration.setSingleStep(0.05)
        self.calibration.setDecimals(2)
        self.form.addRow("&Calibration subset (share graded by everyone):", self.calibration)
        strata = QWidget()
        grid = QGridLayout(strata)
        grid.setContentsMargins(0, 0, 0, 0)
        self.stratify: dict[str, QCheckBox] = {}
        for i, key in enumerate(STRATA):
            box = QCheckBox(key.replace("_", " "))
            self.stratify[key] = box
            grid.addWidget(box, i // 2, i % 2)
        self.form.addRow("Balance over:", strata)
        self.unit = QComboBox()
        self.unit.addItem("single responses", "response")
        self.unit.addItem("whole tasks", "task")
        self.form.addRow("&Unit:", self.unit)
        self.seed = QLineEdit("1")
        self.form.addRow("&Seed (same seed, same design):", self.seed)
        self.preview_button = QPushButton("&Preview")
        self.preview_button.setObjectName("assignPreview")
        self.preview_button.clicked.connect(self.preview)
        self.form.addRow("", self.preview_button)
        self.form.addRow(hint("Existing assignments are never changed or removed."))

    def options(self) -> AssignOptions | str:
        """The form's options, or what is missing (words)."""
        graders = tuple(split_names(self.graders.text()))
        if not graders:
            return "name at least one grader."
        if self.overlap.value() > len(graders):
            return (
                f"an overlap of {self.overlap.value()} needs at least that many graders "
                f"({len(graders)} named)."
            )
        seed = self.seed.text().strip()
        if not seed:
            return "give a seed (any text): the same seed gives the same design."
        unit: Literal["response", "task"] = (
            "task" if self.unit.currentData() == "task" else "response"
        )
        return AssignOptions(
            graders=graders,
            overlap=self.overlap.value(),
            calibration_fraction=self.calibration.value(),
            stratify=tuple(k for k, box in self.stratify.items() if box.isChecked()),
            seed=seed,
            unit=unit,
        )

    def preview(self) -> None:
        """Who would get what, written nowhere."""
        options = self.options()
        if isinstance(options, str):
            self._refuse(options)
            return
        self.run_job(assign_preview, (self.db, self.benchmark, options))

    def work(self) -> tuple[Callable[..., Outcome], tuple[Any, ...]] | str:
        options = self.options()
        if isinstance(options, str):
            return options
        return assign_apply, (self.db, self.benchmark, options)


def _safe(fn: Callable[[Database], list[str]], db: Database) -> list[str]:
    try:
        return fn(db)
    except Exception:
        return []
