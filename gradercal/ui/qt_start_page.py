"""Choosing (or creating) who grades, and which benchmark: the first page of the window."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from gradercal.db.grading import GradingStore
from gradercal.errors import GradercalError
from gradercal.ui.qt_grading_view import format_duration


class QtStartPage(QWidget):
    #: (grader name, benchmark name, mode "grading" | "review")
    chosen = Signal(str, str, str)

    def __init__(
        self,
        store: GradingStore,
        last_grader: str | None,
        parent: QWidget | None = None,
        *,
        preselect: bool = False,
    ) -> None:
        super().__init__(parent)
        self.store = store
        #: the last grader is selected (Enter starts their work) only when the app starts;
        #: after "switch grader" somebody else sits down, and Enter must not open it
        self.preselect = preselect
        #: in team mode the session's login role: nobody else can be chosen
        self.team_user = store.team_user()
        outer = QVBoxLayout(self)
        outer.addStretch(1)
        box = QWidget()
        box.setMaximumWidth(620)
        layout = QVBoxLayout(box)
        title = QLabel(
            "Who is grading?" if self.team_user is None else f"Grading as {self.team_user}"
        )
        font = title.font()
        font.setPointSizeF(font.pointSizeF() * 1.5)
        font.setBold(True)
        title.setFont(font)
        layout.addWidget(title)
        form = QFormLayout()
        self.benchmark = QComboBox()
        self.benchmark.addItems(store.benchmark_names())
        form.addRow("Benchmark", self.benchmark)
        layout.addLayout(form)
        self.graders = QListWidget()
        layout.addWidget(self.graders, 1)
        row = QHBoxLayout()
        self.new_name = QLineEdit()
        self.new_name.setPlaceholderText("…or type a new name (e.g. your initials) and press Enter")
        row.addWidget(self.new_name, 1)
        layout.addLayout(row)
        if self.team_user is not None:
            self.graders.setVisible(False)
            self.new_name.setVisible(False)
        buttons = QHBoxLayout()
        self.grade_button = QPushButton("Start grading")
        self.grade_button.setDefault(True)
        self.review_button = QPushButton("Review tasks")
        buttons.addStretch(1)
        buttons.addWidget(self.review_button)
        buttons.addWidget(self.grade_button)
        layout.addLayout(buttons)
        self.error = QLabel("")
        self.error.setWordWrap(True)
        layout.addWidget(self.error)
        outer.addWidget(box, 0, Qt.AlignmentFlag.AlignHCenter)
        outer.addStretch(2)
        self.benchmark.currentTextChanged.connect(lambda _t: self.refresh(last_grader))
        self.graders.itemActivated.connect(lambda _i: self._choose("grading"))
        self.new_name.returnPressed.connect(lambda: self._choose("grading"))
        self.grade_button.clicked.connect(lambda: self._choose("grading"))
        self.review_button.clicked.connect(lambda: self._choose("review"))
        self.refresh(last_grader)

    def refresh(self, select: str | None = None) -> None:
        """List the graders with their progress; ``select`` (the last grader) is scrolled
        to, and selected when the page was built with ``preselect`` (the app's start: the
        same person on the same account, most likely). The name field keeps the focus: a
        name typed there wins, Enter on an empty field starts the selected grader."""
        self.graders.clear()
        if self.team_user is not None:
            self.grade_button.setFocus()
            return
        bench = self.benchmark.currentText()
        for g in self.store.graders():
            label = g.name
            if bench:
                try:
                    p = self.store.progress(g.name, bench)
                except GradercalError:
                    p = None
                if p is not None and p.total:
                    label += f"   —   {p.done} / {p.total} done · {format_duration(p.time_spent_s)}"
            item = QListWidgetItem(label)
            item.setData(Qt.ItemDataRole.UserRole, g.name)
            self.graders.addItem(item)
        self.graders.setCurrentRow(-1)
        for i in range(self.graders.count()):
            item = self.graders.item(i)
            if item.data(Qt.ItemDataRole.UserRole) == select:
                self.graders.scrollToItem(item)
                if self.preselect:
                    self.graders.setCurrentItem(item)
        self.new_name.setFocus()

    def showEvent(self, event: QShowEvent) -> None:
        """Focus set while the page was hidden does not survive its showing: set it again,
        so the first key typed lands in the name field (not in the Benchmark box)."""
        super().showEvent(event)
        (self.grade_button if self.team_user is not None else self.new_name).setFocus()

    def _choose(self, mode: str) -> None:
        bench = self.benchmark.currentText()
        if not bench:
            self.error.setText("The database holds no benchmark yet: run `gradercal import`.")
            return
        if self.team_user is not None:
            try:
                grader = self.store.grader(self.team_user)
            except GradercalError:
                self.error.setText(
                    f"{self.team_user} has no grader in this database: ask the coordinator "
                    "to run `gradercal team add`."
                )
                return
            self.chosen.emit(grader.name, bench, mode)
            return
        name = self.new_name.text().strip()
        if not name and self.graders.currentItem() is not None:
            name = str(self.graders.currentItem().data(Qt.ItemDataRole.UserRole))
        if not name:
            self.error.setText("Choose your name in the list or type a new one.")
            return
        try:
            grader = self.store.create_grader(name)
        except GradercalError as exc:
            self.error.setText(str(exc))
            return
        self.chosen.emit(grader.name, bench, mode)
