"""View ▸ Where to grade next (Ctrl+8, coordinator windows): planning in the window (#35).

Two tabs over :mod:`gradercal.ui.grade_next` (Qt-free):

* **Where to grade next**: for the next batch of each kind — ``N`` more responses drawn
  uniformly, ``N`` more where the judge is least sure (``assign --strategy active``), more
  experts on each item already graded — the expected half-width of the headline figures
  (the widest model's pass rate and mean score, the judge–consensus κ) now and after the
  batch, from :func:`gradercal.analysis.planning.next_batches`, and each model's figures
  below. Each row has an **Assign…** button (Enter on a selected row does the same): a
  confirmation, then the batch is drawn and assigned through
  :func:`gradercal.db.assignments.assign_active` (uniform: equal probabilities); the
  experts row opens File ▸ Assign work with the overlap filled in. Refusals are words:
  without a judge run the active row says it needs one and offers uniform; without a
  pilot the assumption fields appear.
* **Plan**: ``gradercal plan``'s table (tasks graded × experts per item → expected
  half-widths, alt-test power, acceptance error), its targets editable, the **Plan**
  button, and its chart (the dashboard's :class:`~gradercal.ui.dashboard.qt_charts.QtChart`).

Every computation runs in a worker thread (:func:`gradercal.ui.qt_workers.submit`), its
progress in a bar. Names (models, graders) are shown as plain text, never as markup.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from gradercal.db.session import Database
from gradercal.errors import GradercalError
from gradercal.ui import qt_workers
from gradercal.ui.grade_next import (
    FIGURE_LABELS,
    NO_JUDGE,
    GradeNext,
    NeedsAssumptions,
    assign_batch,
    change_text,
    fmt,
    grade_next,
    plan_grid,
    row_label,
)

__all__ = ["QtGradeNextView"]

#: Simulations per design (tests lower it).
DEFAULT_SIMS = 200

NOTHING_LEFT = "every response is graded or assigned"

BATCH_COLUMNS = ("batch", "responses to grade", *FIGURE_LABELS.values(), "")
PLAN_COLUMNS = (
    "tasks",
    "experts",
    "expert items",
    *FIGURE_LABELS.values(),
    "alt-test power",
    "acceptance error",
    "meets targets",
)
TARGET_DEFAULTS = {
    "pass_rate_half_width": (0.05, False),
    "mean_score_half_width": (0.02, False),
    "kappa_half_width": (0.03, False),
    "alttest_power": (0.8, False),
    "acceptance_error": (0.05, False),
}


class _Relay(QObject):
    """Carries (stage, done, total) from the worker thread to the UI thread."""

    step = Signal(str, int, int)


def _label(text: str = "") -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)  # names are data, never markup
    label.setWordWrap(True)
    return label


def _item(text: str, *, right: bool = False) -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
    if right:
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return item


def _spin(lo: float, hi: float, value: float, step: float = 0.05) -> QDoubleSpinBox:
    box = QDoubleSpinBox()
    box.setRange(lo, hi)
    box.setDecimals(3)
    box.setSingleStep(step)
    box.setValue(value)
    return box


class _Runner:
    """A progress bar and a status line for one kind of computation."""

    def __init__(self, owner: QWidget) -> None:
        self.bar = QProgressBar()
        self.bar.setRange(0, 1)
        self.bar.setValue(0)
        self.bar.setTextVisible(True)
        self.bar.setFormat("")
        self.relay = _Relay(owner)
        self.relay.step.connect(self._step)
        self.busy = False

    def report(self, stage: str, done: int, total: int) -> None:
        self.relay.step.emit(stage, done, total)  # thread-safe (queued)

    def _step(self, stage: str, done: int, total: int) -> None:
        self.bar.setRange(0, max(total, 1))
        self.bar.setValue(min(done, max(total, 1)))
        self.bar.setFormat(f"{stage}: %v of %m")

    def start(self) -> None:
        self.busy = True
        self.bar.setRange(0, 0)

    def stop(self, text: str = "done") -> None:
        self.busy = False
        self.bar.setRange(0, 1)
        self.bar.setValue(1)
        self.bar.setFormat(text)


class QtGradeNextView(QWidget):
    """The view (see the module docstring)."""

    #: A short message for the status bar.
    message = Signal(str)
    #: A batch was assigned (its Outcome).
    assigned = Signal(object)
    #: The experts row asks for File ▸ Assign work with this overlap.
    assign_dialog_requested = Signal(int)
    #: A computation of either tab ended (for tests and screenshots).
    computed = Signal()

    def __init__(
        self, db: Database, benchmark: str, graders: list[str], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("gradeNextView")
        self.db = db
        self.benchmark = benchmark
        self.result: GradeNext | None = None
        self.plan_result: Any = None
        self.refusal = ""
        self.plan_refusal = ""
        self.confirm_box: QMessageBox | None = None
        self.last_outcome: Any = None
        self.tabs = QTabWidget()
        self.tabs.addTab(self._build_next_tab(graders), "&Where to grade next")
        self.tabs.addTab(self._build_plan_tab(), "P&lan")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.tabs)

    # -- building --------------------------------------------------------------------------
    def _build_next_tab(self, graders: list[str]) -> QWidget:
        page = QWidget()
        top = QHBoxLayout()
        form = QFormLayout()
        self.batch = QSpinBox()
        self.batch.setRange(1, 1_000_000)
        self.batch.setValue(30)
        self.batch.setObjectName("gradeNextBatch")
        form.addRow("&Batch (responses):", self.batch)
        self.sims = QSpinBox()
        self.sims.setRange(10, 100_000)
        self.sims.setValue(DEFAULT_SIMS)
        form.addRow("Si&mulations per design:", self.sims)
        top.addLayout(form)
        who = QFormLayout()
        self.graders = QLineEdit(", ".join(graders))
        self.graders.setPlaceholderText("ana, ben, chloe")
        who.addRow("&Graders:", self.graders)
        self.overlap = QSpinBox()
        self.overlap.setRange(1, 50)
        self.overlap.setValue(1)
        who.addRow("&Overlap:", self.overlap)
        self.seed = QLineEdit("next-1")
        who.addRow("S&eed:", self.seed)
        top.addLayout(who, 1)
        self.compute_button = QPushButton("&Compute")
        self.compute_button.setObjectName("gradeNextCompute")
        self.compute_button.clicked.connect(self.compute)
        top.addWidget(self.compute_button, 0, Qt.AlignmentFlag.AlignTop)
        self.assumptions = QGroupBox("Assumptions (no pilot to fit)")
        self.assumptions.setObjectName("gradeNextAssumptions")
        aform = QFormLayout(self.assumptions)
        aform.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.FieldsStayAtSizeHint)
        self.assume_kappa = _spin(0.0, 0.99, 0.6)
        self.assume_icc = _spin(0.01, 0.99, 0.5)
        self.assume_pass = _spin(0.01, 0.99, 0.5)
        aform.addRow("Judge's &kappa against the truth:", self.assume_kappa)
        aform.addRow("Experts' &ICC on a criterion:", self.assume_icc)
        aform.addRow("&Pass rate:", self.assume_pass)
        self.assumptions.hide()
        self.runner = _Runner(self)
        self.status = _label()
        self.status.setObjectName("gradeNextStatus")
        self.refusal_label = _label()
        self.refusal_label.setObjectName("gradeNextRefusal")
        self.table = QTableWidget(0, len(BATCH_COLUMNS))
        self.table.setObjectName("gradeNextTable")
        self.table.setHorizontalHeaderLabels(list(BATCH_COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(len(BATCH_COLUMNS) - 1, QHeaderView.ResizeMode.Fixed)
        self.table.setColumnWidth(len(BATCH_COLUMNS) - 1, 130)
        self.table.activated.connect(lambda index: self.assign_row(index.row()))
        self.models_table = QTableWidget(0, 5)
        self.models_table.setObjectName("gradeNextModels")
        self.models_table.setHorizontalHeaderLabels(
            ["model", "pass rate ± now", "after", "mean score ± now", "after"]
        )
        self.models_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.models_table.verticalHeader().hide()
        self.models_table.horizontalHeader().setSectionResizeMode(
            QHeaderView.ResizeMode.ResizeToContents
        )
        self.models_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.notes = _label()
        self.notes.setEnabled(False)
        layout = QVBoxLayout(page)
        layout.addLayout(top)
        layout.addWidget(self.assumptions)
        layout.addWidget(self.runner.bar)
        layout.addWidget(self.status)
        layout.addWidget(self.refusal_label)
        layout.addWidget(self.table, 3)
        layout.addWidget(_label("Each model (after the uniform batch):"))
        layout.addWidget(self.models_table, 2)
        layout.addWidget(self.notes)
        return page

    def _build_plan_tab(self) -> QWidget:
        page = QWidget()
        targets = QGroupBox("Targets")
        grid = QFormLayout(targets)
        self.targets: dict[str, tuple[QCheckBox, QDoubleSpinBox]] = {}
        for name, (value, on) in TARGET_DEFAULTS.items():
            box = QCheckBox(name.replace("_", " "))
            box.setChecked(on)
            spin = _spin(0.0, 1.0, value, 0.01)
            self.targets[name] = (box, spin)
            grid.addRow(box, spin)
        side = QFormLayout()
        self.plan_experts = QLineEdit("1,3,5")
        side.addRow("E&xperts per item:", self.plan_experts)
        self.plan_tasks = QLineEdit("")
        self.plan_tasks.setPlaceholderText("20 … all")
        side.addRow("&Tasks graded:", self.plan_tasks)
        self.plan_button = QPushButton("&Plan")
        self.plan_button.setObjectName("gradeNextPlan")
        self.plan_button.clicked.connect(self.run_plan)
        side.addRow("", self.plan_button)
        self.plan_runner = _Runner(self)
        side.addRow(self.plan_runner.bar)
        self.plan_status = _label()
        self.plan_status.setObjectName("planStatus")
        side.addRow(self.plan_status)
        left = QVBoxLayout()
        left.addWidget(targets)
        left.addLayout(side)
        left.addStretch(1)
        holder = QWidget()
        holder.setLayout(left)
        holder.setMaximumWidth(340)
        self.plan_table = QTableWidget(0, len(PLAN_COLUMNS))
        self.plan_table.setObjectName("planTable")
        self.plan_table.setHorizontalHeaderLabels(list(PLAN_COLUMNS))
        self.plan_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.plan_table.verticalHeader().hide()
        self.plan_table.horizontalHeader().setSectionResizeMode(
            QHeaderView.ResizeMode.ResizeToContents
        )
        from gradercal.ui.dashboard.qt_charts import QtChart

        self.chart = QtChart("Expected half-width against tasks graded", "plan")
        self.chart.message.connect(self.message)
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(self.plan_table)
        right.addWidget(self.chart)
        right.setSizes([220, 330])
        layout = QHBoxLayout(page)
        layout.addWidget(holder)
        layout.addWidget(right, 1)
        return page

    # -- what the forms say ----------------------------------------------------------------
    def assumption_values(self) -> dict[str, float] | None:
        """The assumptions, when their fields are shown (else the pilot is fitted)."""
        if self.assumptions.isHidden():
            return None
        return {
            "kappa": self.assume_kappa.value(),
            "icc": self.assume_icc.value(),
            "pass_rate": self.assume_pass.value(),
        }

    def target_values(self) -> dict[str, float]:
        return {name: spin.value() for name, (box, spin) in self.targets.items() if box.isChecked()}

    def graders_list(self) -> list[str]:
        from gradercal.ui.coordinator_ops import split_names

        return split_names(self.graders.text())

    @property
    def busy(self) -> bool:
        return self.runner.busy or self.plan_runner.busy

    # -- where to grade next ---------------------------------------------------------------
    def compute(self) -> None:
        """Compute the batch rows in a worker thread (ignored while one runs)."""
        if self.runner.busy:
            return
        self.runner.start()
        self.compute_button.setEnabled(False)
        self.status.setText("Simulating the next batches…")
        qt_workers.submit(
            self._compute_job,
            self.batch.value(),
            self.assumption_values(),
            self.sims.value(),
            done=self._computed,
            failed=self._compute_failed,
        )

    def _compute_job(
        self, batch: int, assumptions: dict[str, float] | None, sims: int
    ) -> GradeNext:
        return grade_next(
            self.db,
            self.benchmark,
            batch=batch,
            assumptions=assumptions,
            n_sims=sims,
            progress=self.runner.report,
        )

    def _computed(self, result: GradeNext) -> None:
        self.runner.stop()
        self.compute_button.setEnabled(True)
        if self.result is None:  # the first result proposes as many experts as now
            self.overlap.setValue(min(max(result.experts_now, 1), self.overlap.maximum()))
        self.result = result
        self.refusal = " ".join(r.text for r in result.refusals)
        self.refusal_label.setText(self.refusal)
        self.refusal_label.setVisible(bool(self.refusal))
        source = (
            f"fitted to the judgments so far (judge {result.judge})"
            if result.source == "pilot"
            else "from the assumptions above"
        )
        self.status.setText(
            f"{result.tasks_now} tasks graded so far by {result.experts_now} experts per item; "
            f"model {source}; {result.n_sims} simulations per design."
        )
        self._fill_rows(result)
        self._fill_models(result)
        self.notes.setText("\n".join(result.notes))
        self.computed.emit()

    def _compute_failed(self, exc: BaseException) -> None:
        self.runner.stop("not computed")
        self.compute_button.setEnabled(True)
        self.table.setRowCount(0)
        self.models_table.setRowCount(0)
        if isinstance(exc, NeedsAssumptions):
            self.assumptions.show()
            self.refusal = str(exc)
        elif isinstance(exc, GradercalError):
            self.refusal = f"Not computed: {exc}"
        else:
            self.refusal = f"Not computed: an unexpected error ({type(exc).__name__}: {exc})"
        self.refusal_label.setText(self.refusal)
        self.refusal_label.show()
        self.status.setText("")
        self.computed.emit()

    def _fill_rows(self, result: GradeNext) -> None:
        rows = result.rows
        now = rows[0]
        self.table.setRowCount(0)  # drops the last result's buttons
        self.table.setRowCount(len(rows))
        for i, row in enumerate(rows):
            self.table.setItem(i, 0, _item(row_label(row, result.batch)))
            what = (
                f"{row['added_responses']}"
                if row["kind"] != "experts"
                else f"{row['added_items']} more expert gradings"
            )
            self.table.setItem(i, 1, _item("—" if row["kind"] == "now" else what, right=True))
            for j, key in enumerate(FIGURE_LABELS, start=2):
                self.table.setItem(i, j, _item(change_text(row, now, key), right=True))
            col = len(BATCH_COLUMNS) - 1
            if row["kind"] == "now":
                self.table.setItem(i, col, _item(""))
                continue
            if row["kind"] == "active" and not result.active_allowed:
                self.table.setItem(i, col, _item("needs a judge run: assign uniformly"))
                continue
            if row["kind"] != "experts" and not row["added_responses"]:
                self.table.setItem(i, col, _item(NOTHING_LEFT))
                continue
            button = QPushButton("Assign…" if row["kind"] != "experts" else "Assign work…")
            button.setObjectName(f"gradeNextAssign.{row['kind']}")
            button.clicked.connect(lambda _c=False, r=i: self.assign_row(r))
            self.table.setCellWidget(i, col, button)
        self.table.resizeRowsToContents()
        if rows:
            self.table.selectRow(1 if len(rows) > 1 else 0)

    def _fill_models(self, result: GradeNext) -> None:
        now, after = result.rows[0], result.rows[1]
        heads = [
            "model",
            "pass rate ± now",
            f"after +{result.batch}",
            "mean score ± now",
            f"after +{result.batch}",
        ]
        self.models_table.setColumnCount(len(heads))
        self.models_table.setHorizontalHeaderLabels(heads)
        self.models_table.setRowCount(len(result.models))
        for i, name in enumerate(result.models):
            a, b = now["per_model"].get(name, {}), after["per_model"].get(name, {})
            values = [
                name,
                fmt(a.get("pass_rate_half_width")),
                fmt(b.get("pass_rate_half_width")),
                fmt(a.get("mean_score_half_width")),
                fmt(b.get("mean_score_half_width")),
            ]
            for j, v in enumerate(values):
                self.models_table.setItem(i, j, _item(v, right=j > 0))

    # -- assigning -------------------------------------------------------------------------
    def row_kind(self, row: int) -> str | None:
        if self.result is None or not 0 <= row < len(self.result.rows):
            return None
        return str(self.result.rows[row]["kind"])

    def assign_row(self, row: int) -> QMessageBox | None:
        """Ask to assign row ``row``'s batch (the experts row opens File ▸ Assign work)."""
        kind = self.row_kind(row)
        if kind is None or kind == "now" or self.result is None:
            return None
        if kind == "experts":
            more = self.result.rows[row]["experts_per_item"]
            self.assign_dialog_requested.emit(int(more))
            return None
        if kind == "active" and not self.result.active_allowed:
            self.refusal_label.setText(NO_JUDGE)
            self.refusal_label.show()
            return None
        if not self.result.rows[row]["added_responses"]:
            self._say(f"Not done: {NOTHING_LEFT}.")
            return None
        graders = self.graders_list()
        if not graders:
            self._say("Not done: name at least one grader.")
            return None
        budget = self.result.batch
        box = QMessageBox(self)
        box.setObjectName("gradeNextConfirm")
        box.setWindowTitle("Assign the batch")
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.setText(
            f"Draw about {budget} unassigned responses "
            f"({'where the judge is least sure' if kind == 'active' else 'uniformly'}) and "
            f"assign each to {self.overlap.value()} of: {', '.join(graders)} "
            f"(seed {self.seed.text().strip() or 'next-1'})?"
        )
        box.setStandardButtons(QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Yes)
        box.finished.connect(lambda code, k=kind, g=graders: self._confirmed(code, k, g, budget))
        self.confirm_box = box
        box.open()
        return box

    def _confirmed(self, code: int, kind: str, graders: list[str], budget: int) -> None:
        self.confirm_box = None
        if code != QMessageBox.StandardButton.Yes:
            self._say("Not assigned.")
            return
        self.runner.start()
        self._say("Assigning…")
        overlap, seed = self.overlap.value(), self.seed.text().strip() or "next-1"
        qt_workers.submit(
            lambda: assign_batch(
                self.db,
                self.benchmark,
                graders=graders,
                overlap=overlap,
                strategy=kind,
                budget=budget,
                seed=seed,
            ),
            done=self._assigned,
            failed=self._assign_failed,
        )

    def _assigned(self, outcome: Any) -> None:
        self.runner.stop("assigned")
        self.last_outcome = outcome
        self._say(outcome.text())
        self.message.emit(outcome.headline)
        self.assigned.emit(outcome)

    def _assign_failed(self, exc: BaseException) -> None:
        from gradercal.ui.qt_ops_dialog import refusal_text

        self.runner.stop("not assigned")
        self._say(refusal_text(exc))

    def _say(self, text: str) -> None:
        self.status.setText(text)

    # -- the plan tab ----------------------------------------------------------------------
    def _grid(self, text: str, what: str) -> list[int] | str | None:
        text = text.strip()
        if not text:
            return None
        try:
            values = [int(x) for x in text.split(",") if x.strip()]
        except ValueError:
            return f"{what}: {text!r} is not a list of whole numbers like 1,3,5"
        return values or None

    def run_plan(self) -> None:
        """``gradercal plan`` with the targets above, in a worker thread."""
        if self.plan_runner.busy:
            return
        experts = self._grid(self.plan_experts.text(), "experts per item")
        tasks = self._grid(self.plan_tasks.text(), "tasks graded")
        for bad in (experts, tasks):
            if isinstance(bad, str):
                self._plan_refuse(f"Not planned: {bad}.")
                return
        assert not isinstance(experts, str) and not isinstance(tasks, str)
        self.plan_runner.start()
        self.plan_button.setEnabled(False)
        self.plan_status.setText("Simulating the designs…")
        targets, assumptions, sims = (
            self.target_values(),
            self.assumption_values(),
            self.sims.value(),
        )
        job: Callable[[], Any] = lambda: plan_grid(  # noqa: E731
            self.db,
            self.benchmark,
            targets=targets,
            experts=experts or (1, 3, 5),
            tasks=tasks,
            assumptions=assumptions,
            n_sims=sims,
            progress=self.plan_runner.report,
        )
        qt_workers.submit(job, done=self._planned, failed=self._plan_failed)

    def _planned(self, result: Any) -> None:
        self.plan_runner.stop()
        self.plan_button.setEnabled(True)
        self.plan_result = result
        self.plan_refusal = ""
        self.plan_table.setRowCount(len(result.designs))
        rec = result.recommended
        for i, d in enumerate(result.designs):
            vals = {**d["expected_half_width"], **d["power"]}
            is_rec = rec is not None and (d["tasks"], d["experts_per_item"]) == (
                rec["tasks"],
                rec["experts_per_item"],
            )
            meets = "" if d["meets_targets"] is None else ("yes" if d["meets_targets"] else "no")
            cells = [
                str(d["tasks"]),
                str(d["experts_per_item"]),
                str(d["expert_items"]),
                *[fmt(vals[k]) for k in FIGURE_LABELS],
                fmt(vals["alttest_power"]),
                fmt(vals["acceptance_error"]),
                meets + (" ← cheapest" if is_rec else ""),
            ]
            for j, v in enumerate(cells):
                item = _item(v, right=True)
                if is_rec:
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                self.plan_table.setItem(i, j, item)
        if rec is not None:
            text = (
                f"Cheapest design meeting the targets: {rec['tasks']} tasks × "
                f"{rec['experts_per_item']} experts per item ({rec['expert_items']} "
                "expert-graded responses)."
            )
        elif result.targets:
            text = "No design of the grid meets every target: grade more tasks or relax a target."
        else:
            text = "Tick a target to mark the designs meeting it."
        self.plan_status.setText(f"{text} {result.n_sims} simulations per design.")
        from gradercal.dashboard.charts import plan_figure

        self.chart.set_figure(plan_figure(result))
        self.computed.emit()

    def _plan_failed(self, exc: BaseException) -> None:
        self.plan_runner.stop("not planned")
        self.plan_button.setEnabled(True)
        if isinstance(exc, NeedsAssumptions):
            self.assumptions.show()
            self._plan_refuse(f"{exc} (on the first tab)")
        elif isinstance(exc, GradercalError):
            self._plan_refuse(f"Not planned: {exc}")
        else:
            self._plan_refuse(f"Not planned: an unexpected error ({type(exc).__name__}: {exc})")
        self.computed.emit()

    def _plan_refuse(self, text: str) -> None:
        self.plan_refusal = text
        self.plan_status.setText(text)
