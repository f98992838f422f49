"""The Tasks view's acceptance actions beyond open/accept/send back/reject (#33).

Installed on a :class:`gradercal.ui.qt_tasks.QtTasksView` by :func:`install`:

* **Close round…** (Ctrl+Shift+C) measures and freezes the selected task's open round,
  as ``gradercal tasks close`` does; a round not ready yet is closed only after the
  coordinator confirms ("Close anyway", ``force``).
* **Force accept…** (Ctrl+Shift+F) accepts the selected task without a proposal or a
  closed round, after a confirmation that says what the rules would have refused
  (``tasks accept --force``).
* **Settings…** (Ctrl+Shift+S) edits the benchmark's acceptance settings (bar,
  statistic, rule point|interval, rounds, survey minimums, interval level, bootstrap
  replicates) as ``gradercal tasks settings`` does.

Every refusal is shown in words (:mod:`gradercal.ui.coordinator_words`), never as a
command: when ``force`` would lift it, an accept says Force accept… does it anyway, and
a reject or a close of a round not ready asks whether to do it anyway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QBoxLayout,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from gradercal.db.acceptance import act, load_settings, save_settings
from gradercal.db.session import Database
from gradercal.errors import GradercalError
from gradercal.model import REVIEW_DIMENSIONS
from gradercal.ops.acceptance import RULES, STATISTICS, Settings, statistic_label
from gradercal.ui.coordinator_words import FORCE_LABELS, forceable, refusal_text

if TYPE_CHECKING:
    from gradercal.ui.qt_tasks import QtTasksView

__all__ = ["RULE_TEXT", "QtAcceptanceSettingsDialog", "QtTaskActions", "install"]

#: What each rule means, shown beside the rule box.
RULE_TEXT = {
    "point": "point: the measured agreement must reach the bar",
    "interval": "interval: the whole confidence interval must clear the bar",
}
#: (id, label, key) of the buttons added to the Tasks view.
ACTION_BUTTONS: tuple[tuple[str, str, str], ...] = (
    ("close", "Close round…", "Ctrl+Shift+C"),
    ("force_accept", "Force accept…", "Ctrl+Shift+F"),
    ("settings", "Settings…", "Ctrl+Shift+S"),
)


class QtAcceptanceSettingsDialog(QDialog):
    """The benchmark's acceptance settings; Save writes the changed ones."""

    def __init__(self, db: Database, benchmark: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.db = db
        self.benchmark = benchmark
        self.saved: Settings | None = None
        self.setObjectName("tasks.settings")
        self.setWindowTitle(f"Acceptance settings of {benchmark}")
        current = load_settings(db, benchmark)
        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.statistic = QComboBox()
        self.statistic.setObjectName("settings.statistic")
        for key in STATISTICS:
            self.statistic.addItem(statistic_label(key), key)
        self.statistic.setCurrentIndex(STATISTICS.index(current.statistic))
        form.addRow("&Statistic:", self.statistic)
        self.bar = QDoubleSpinBox()
        self.bar.setObjectName("settings.bar")
        self.bar.setRange(-1.0, 1.0)
        self.bar.setDecimals(3)
        self.bar.setSingleStep(0.01)
        self.bar.setValue(current.bar)
        form.addRow("&Bar (agreement ≥):", self.bar)
        self.rule = QComboBox()
        self.rule.setObjectName("settings.rule")
        for key in RULES:
            self.rule.addItem(RULE_TEXT[key], key)
        self.rule.setCurrentIndex(RULES.index(current.rule))
        form.addRow("&Rule:", self.rule)
        self.ci = QDoubleSpinBox()
        self.ci.setObjectName("settings.ci")
        self.ci.setRange(0.5, 0.999)
        self.ci.setDecimals(3)
        self.ci.setSingleStep(0.01)
        self.ci.setValue(current.ci)
        form.addRow("&Interval level:", self.ci)
        self.n_boot = QSpinBox()
        self.n_boot.setObjectName("settings.n_boot")
        self.n_boot.setRange(0, 100_000)
        self.n_boot.setSingleStep(500)
        self.n_boot.setValue(current.n_boot)
        self.n_boot.setToolTip("Bootstrap replicates of the interval (0: no bootstrap)")
        form.addRow("Bootstrap &replicates:", self.n_boot)
        self.min_rounds = QSpinBox()
        self.min_rounds.setObjectName("settings.min_rounds")
        self.min_rounds.setRange(1, 20)
        self.min_rounds.setValue(current.min_rounds)
        form.addRow("&Minimum rounds:", self.min_rounds)
        self.survey: dict[str, QDoubleSpinBox] = {}
        for d in REVIEW_DIMENSIONS:
            box = QDoubleSpinBox()
            box.setObjectName(f"settings.survey.{d.key}")
            box.setRange(1.0, 5.0)
            box.setDecimals(2)
            box.setSingleStep(0.25)
            box.setValue(float(current.survey_min.get(d.key, 4.0)))
            box.setToolTip(d.statement)
            form.addRow(f"Survey mean ≥ ({d.key.replace('_', ' ')}):", box)
            self.survey[d.key] = box
        layout.addLayout(form)
        self.problem = QLabel("")
        self.problem.setObjectName("settings.problem")
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #b3261e")
        layout.addWidget(self.problem)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.statistic.setFocus()

    def changes(self) -> dict[str, object]:
        """The settings as the dialog shows them (what Save writes)."""
        return {
            "statistic": self.statistic.currentData(),
            "bar": round(self.bar.value(), 3),
            "rule": self.rule.currentData(),
            "ci": round(self.ci.value(), 3),
            "n_boot": self.n_boot.value(),
            "min_rounds": self.min_rounds.value(),
            "survey_min": {k: round(box.value(), 2) for k, box in self.survey.items()},
        }

    def save(self) -> bool:
        """Write the settings; a refusal stays in the dialog, in words."""
        try:
            self.saved = save_settings(self.db, self.benchmark, **self.changes())
        except GradercalError as exc:
            self.problem.setText(refusal_text(str(exc)))
            return False
        self.accept()
        return True


class QtTaskActions(QObject):
    """Close round, force accept and the settings dialog of one Tasks view."""

    def __init__(self, view: QtTasksView) -> None:
        super().__init__(view)
        self.view = view
        self.settings_dialog: QtAcceptanceSettingsDialog | None = None
        self.buttons: dict[str, QPushButton] = {}
        handlers = {
            "close": self.close_round,
            "force_accept": self.force_accept,
            "settings": self.edit_settings,
        }
        # a second row under the view's buttons: one row of eight would not fit 1024 px
        row = QHBoxLayout()
        outer = view.layout()
        if isinstance(outer, QBoxLayout):
            outer.insertLayout(1, row)
        for key, label, keys in ACTION_BUTTONS:
            button = QPushButton(label)
            button.setObjectName(f"tasks.{key}")
            button.setToolTip(f"{label.rstrip('…')} ({keys})")
            button.clicked.connect(lambda _=False, h=handlers[key]: h())
            self.buttons[key] = button
            row.addWidget(button)
            shortcut = QShortcut(QKeySequence(keys), view)
            shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            shortcut.activated.connect(lambda h=handlers[key]: h())
        row.addStretch(1)
        view.table.itemSelectionChanged.connect(self.update_buttons)
        # after any action of the view (it says so, then reads the tasks again)
        view.message.connect(lambda _text: QTimer.singleShot(0, self.update_buttons))
        self.update_buttons()

    def update_buttons(self) -> None:
        task = self.view._task(self.view.selected_task())
        self.buttons["close"].setEnabled(task is not None and task.state == "open")
        self.buttons["force_accept"].setEnabled(
            task is not None and task.state not in ("accepted", "rejected")
        )

    # -- confirmations ------------------------------------------------------------------
    def confirm(self, title: str, text: str, yes: str) -> bool:
        """Ask before acting (the default button is Cancel: Enter does not force)."""
        box = QMessageBox(self.view)
        box.setObjectName("tasks.confirm")
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle(title)
        box.setText(text)
        do = box.addButton(yes, QMessageBox.ButtonRole.AcceptRole)
        do.setObjectName("tasks.confirm.yes")
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(cancel)
        box.exec()
        return box.clickedButton() is do

    def _say(self, text: str) -> None:
        self.view.status.setText(text)
        self.view.message.emit(text)

    def _act(self, task: str, action: str, note: str | None, force: bool) -> bool:
        try:
            after = act(
                self.view.db,
                self.view.benchmark,
                task,
                action,
                note=note or None,
                actor=self.view.actor,
                force=force,
                source="ui",
            )
        except GradercalError as exc:
            self._say(refusal_text(str(exc)))
            return False
        self._say(f"{after.task}: {after.status} (round {after.round})")
        self.view.refresh()
        return True

    def refused(self, action: str, task: str, note: str | None, message: str) -> bool:
        """A button's action was refused: say why in words. When ``force`` lifts the
        refusal, an accept says that Force accept… does it anyway; a reject or a close
        asks whether to do it anyway (they have no button of their own). True when it
        was done after all."""
        words = refusal_text(message)
        if not forceable(message):
            self._say(words)
            return False
        if action == "accept":
            self._say(f"{words}. Force accept… (Ctrl+Shift+F) accepts it anyway.")
            return False
        self._say(words)
        if action not in FORCE_LABELS:
            return False
        label = FORCE_LABELS[action].rstrip("…")
        if not self.confirm(f"{label}: {task}", f"{words}.\n\n{label}?", label):
            return False
        return self._act(task, action, note, True)

    # -- the actions --------------------------------------------------------------------
    def close_round(self) -> bool:
        """Close the selected task's open round (a round not ready: after a confirmation)."""
        task = self.view.selected_task()
        if task is None:
            self._say("Select a task first.")
            return False
        try:
            act(self.view.db, self.view.benchmark, task, "close", actor=self.view.actor,
                source="ui")  # fmt: skip
        except GradercalError as exc:
            return self.refused("close", task, None, str(exc))
        self._say(f"{task}: round closed")
        self.view.refresh()
        return True

    def force_accept(self) -> bool:
        """Accept the selected task whatever its round says, after a confirmation that
        says what the rules would refuse, and a note."""
        task = self.view.selected_task()
        row = self.view._task(task)
        if task is None or row is None:
            self._say("Select a task first.")
            return False
        if row.state in ("accepted", "rejected"):
            self._say(f"{task}: the task is already {row.state}")
            return False
        why = "; ".join(row.reasons) if not row.proposed else "it is proposed for acceptance"
        text = (
            f"Accept {task} now, whatever its review round says?\n\n"
            f"Where it stands: {row.status}" + (f"; {why}" if why else "") + "."
        )
        if not self.confirm(f"Force accept: {task}", text, "Force accept"):
            return False
        note = self.view.ask_note(f"Force accept the task: {task}", False)
        if note is None:
            return False
        return self._act(task, "accept", note, True)

    def edit_settings(self) -> QtAcceptanceSettingsDialog:
        """The acceptance settings dialog (window-modal); Save refreshes the view."""
        dialog = QtAcceptanceSettingsDialog(self.view.db, self.view.benchmark, self.view)
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.accepted.connect(self._settings_saved)
        self.settings_dialog = dialog
        dialog.open()
        return dialog

    def _settings_saved(self) -> None:
        self._say("Acceptance settings saved.")
        self.view.refresh()


def install(view: QtTasksView) -> QtTaskActions:
    """Add the acceptance actions to ``view``: a row of buttons under its own, keys,
    refusals in words."""
    return QtTaskActions(view)
