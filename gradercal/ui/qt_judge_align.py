"""The Judges view: a judge's prompt versions compared by its alignment certificate, and
``gradercal judge align`` started from the coordinator's window (#34).

**The view** (:class:`QtJudgeAlignDialog`) lists, for the chosen judge, its newest stored
certificate (``JudgeStore.certificates``): one row per prompt version evaluated on the
held-out tasks — the baseline and every finalist — with Cohen's kappa, balanced
accuracy, the paired kappa difference to the baseline with its 95 % interval and its
Holm-corrected interval, and whether it is proven better; above the table the split
(development and held-out task counts, seed), the chosen version and the cost.

**Align** runs ``gradercal judge align … --json`` as a child process from a worker
``QThread`` (the window stays responsive; the command's own code, options and reply
cache, so the window and the terminal give the same certificate). The child reports its
progress as JSON lines on stderr (``GRADERCAL_PROGRESS=jsonl``, see
``gradercal.cli.judge.progress_bar``): the progress bar shows the stage (each
candidate on the development tasks, then each finalist on the held-out tasks) with
its counts. **Cancel** ends the child (as a kill would: nothing half-done is stored as
a certificate; every reply received is in the reply cache, so Align again resumes
without asking the server twice). When the command ends the view reads the stored
certificate back from the database. Errors (a judge never run, an unreachable server)
appear in the dialog.

The API key is never read here: the child reads it as the CLI does (the environment
variable named in the form, else the keyring). Coordinator windows only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from typing import Any

from PySide6.QtCore import QObject, QThread, Signal, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gradercal._util.numbers import cell
from gradercal.db.judging import JudgeStore
from gradercal.db.session import ENV_VAR, Database
from gradercal.errors import GradercalError
from gradercal.judge.secrets import DEFAULT_KEY_ENV

__all__ = ["COLUMNS", "QtJudgeAlignDialog", "add_judge_align_action", "certificate_rows"]

#: The child's progress protocol (gradercal.cli.judge.common.PROGRESS_ENV; the ui does not import cli).
_PROGRESS_ENV = "GRADERCAL_PROGRESS"

COLUMNS = (
    "prompt version",
    "role",
    "kappa",
    "balanced accuracy",
    "Δ kappa",
    "95% CI",
    "corrected CI",
    "proven better",
)


_fmt = cell


def _ci(ci: Any) -> str:
    if not isinstance(ci, list | tuple) or len(ci) != 2:
        return "—"
    return f"[{_fmt(ci[0])}, {_fmt(ci[1])}]"


def certificate_rows(cert: dict[str, Any]) -> list[list[str]]:
    """The table's rows (:data:`COLUMNS`) of one certificate: every prompt version
    evaluated on the held-out tasks, the baseline first."""
    rows = []
    for version, h in (cert.get("heldout") or {}).items():
        k = (h.get("paired") or {}).get("kappa") or {}
        rows.append(
            [
                str(version)[:12],
                str(h.get("role", "")),
                _fmt(h.get("kappa")),
                _fmt(h.get("balanced_accuracy")),
                _fmt(k.get("estimate")) if k else "—",
                _ci(k.get("ci")) if k else "—",
                _ci(k.get("ci_corrected")) if k else "—",
                _fmt(h.get("proven_better")) if "proven_better" in h else "—",
            ]
        )
    return rows


def _url_arg(db: Database) -> str:
    url = db.url
    if url.get_backend_name() == "sqlite" and url.database:
        return str(url.database)
    return url.render_as_string(hide_password=False)


class _AlignWorker(QObject):
    """Runs ``gradercal judge align`` as a child process; see the module docstring."""

    progress = Signal(str, int, int)  # stage, done, total
    finished = Signal(object)  # the certificate (dict)
    failed = Signal(str)
    cancelled = Signal()

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        super().__init__()
        self.argv = argv
        self.env = env
        self._proc: subprocess.Popen[str] | None = None
        self._cancel = threading.Event()
        self._lock = threading.Lock()

    def cancel(self) -> None:
        """End the child (thread-safe); the worker then reports ``cancelled``."""
        self._cancel.set()
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                self._proc.terminate()

    @Slot()
    def work(self) -> None:
        env = {**os.environ, **self.env, _PROGRESS_ENV: "jsonl"}
        try:
            with self._lock:
                if self._cancel.is_set():
                    self.cancelled.emit()
                    return
                self._proc = subprocess.Popen(
                    self.argv,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=env,
                )
            proc = self._proc
            assert proc.stderr is not None and proc.stdout is not None
            out_chunks: list[str] = []
            reader = threading.Thread(target=lambda: out_chunks.append(proc.stdout.read()))  # type: ignore[union-attr]
            reader.start()
            messages: list[str] = []
            for line in proc.stderr:
                try:
                    obj = json.loads(line)
                except ValueError:
                    obj = None
                if isinstance(obj, dict) and "progress" in obj:
                    self.progress.emit(str(obj["progress"]), int(obj["done"]), int(obj["total"]))
                elif line.strip():
                    messages.append(line.strip())
            rc = proc.wait()
            reader.join()
            if self._cancel.is_set():
                self.cancelled.emit()
            elif rc != 0:
                self.failed.emit("\n".join(messages[-5:]) or f"judge align ended with {rc}")
            else:
                self.finished.emit(json.loads("".join(out_chunks)))
        except (OSError, ValueError) as exc:
            self.failed.emit(str(exc))


class QtJudgeAlignDialog(QDialog):
    """The Judges view and the Align command (see the module docstring)."""

    #: The certificate of an Align run of this dialog, once stored.
    certificate_stored = Signal(object)

    def __init__(
        self, db: Database, benchmark: str | None = None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Judges: prompt versions and alignment")
        self.db = db
        self.benchmark = benchmark
        self._thread: QThread | None = None
        self._worker: _AlignWorker | None = None
        self.judge = QComboBox()
        self.judge.currentTextChanged.connect(lambda _name: self.refresh())
        self.model = QLineEdit()
        self.base_url = QLineEdit()
        self.key_env = QLineEdit(DEFAULT_KEY_ENV)
        self.holdout = QDoubleSpinBox()
        self.holdout.setRange(0.05, 0.95)
        self.holdout.setSingleStep(0.05)
        self.holdout.setValue(0.3)
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.max_candidates = QSpinBox()
        self.max_candidates.setRange(1, 20)
        self.concurrency = QSpinBox()
        self.concurrency.setRange(1, 1024)
        self.concurrency.setValue(8)
        self.n_boot = QSpinBox()
        self.n_boot.setRange(100, 100_000)
        self.n_boot.setValue(2000)
        form = QFormLayout()
        form.addRow("Judge", self.judge)
        form.addRow("Model", self.model)
        form.addRow("Base URL", self.base_url)
        form.addRow("API key variable", self.key_env)
        form.addRow("Held-out share", self.holdout)
        form.addRow("Seed", self.seed)
        form.addRow("Finalists", self.max_candidates)
        form.addRow("Concurrency", self.concurrency)
        form.addRow("Resamples", self.n_boot)
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.align_button = QPushButton("&Align")
        self.align_button.clicked.connect(self.start)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        buttons = QHBoxLayout()
        buttons.addWidget(self.align_button)
        buttons.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.summary)
        layout.addWidget(self.table)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addLayout(buttons)
        self._load_judges()

    # -- the view ----------------------------------------------------------------------
    def _load_judges(self) -> None:
        try:
            names = sorted({str(r["judge"]) for r in JudgeStore(self.db).runs(None)})
        except GradercalError as exc:
            self.status.setText(str(exc))
            names = []
        self.judge.addItems(names)

    def certificate(self) -> dict[str, Any] | None:
        """The chosen judge's newest stored certificate record (on this benchmark)."""
        name = self.judge.currentText()
        if not name:
            return None
        rows = JudgeStore(self.db).certificates(name)
        if self.benchmark is not None:
            rows = [r for r in rows if r.get("benchmark") == self.benchmark]
        return rows[0] if rows else None

    @Slot()
    def refresh(self) -> None:
        """Show the chosen judge's newest certificate (or say there is none)."""
        row = self.certificate()
        self.table.setRowCount(0)
        if row is None:
            self.summary.setText("No certificate yet: Align compares prompt versions.")
            return
        cert = row["certificate"]
        split = cert.get("split") or {}
        chosen = (cert.get("chosen") or {}).get("prompt_version", "")
        cost = cert.get("cost") or {}
        self.summary.setText(
            f"Certificate {row['id']} ({row['created_at'][:19]}): "
            f"{len(split.get('development') or [])} development, "
            f"{len(split.get('held_out') or [])} held-out tasks (seed {split.get('seed')}); "
            f"{len(cert.get('candidates') or [])} candidates. "
            + (
                f"Proven better: {chosen[:12]}."
                if cert.get("proven_better")
                else "No candidate is proven better: the baseline is kept."
            )
            + f" {cost.get('requests', 0)} requests, ${float(cost.get('usd') or 0):.4f}."
            + (f" {cert['note']}" if cert.get("note") else "")
        )
        rows = certificate_rows(cert)
        self.table.setRowCount(len(rows))
        for i, values in enumerate(rows):
            for j, v in enumerate(values):
                self.table.setItem(i, j, QTableWidgetItem(v))
        self.table.resizeColumnsToContents()

    # -- align -------------------------------------------------------------------------
    def argv(self) -> list[str]:
        """The ``gradercal judge align`` command line the form describes."""
        args = [
            sys.executable, "-m", "gradercal", "judge", "align",
            "--judge", self.judge.currentText(), "--model", self.model.text().strip(),
            "--api-key-env", self.key_env.text().strip() or DEFAULT_KEY_ENV,
            "--holdout-share", f"{self.holdout.value():g}", "--seed", str(self.seed.value()),
            "--max-candidates", str(self.max_candidates.value()),
            "--concurrency", str(self.concurrency.value()),
            "--n-boot", str(self.n_boot.value()), "--json",
        ]  # fmt: skip
        if self.base_url.text().strip():
            args += ["--base-url", self.base_url.text().strip()]
        if self.benchmark is not None:
            args += ["--benchmark", self.benchmark]
        return args

    def running(self) -> bool:
        return self._thread is not None

    @Slot()
    def start(self) -> None:
        """Start ``judge align`` in a worker thread (see the module docstring)."""
        if self.running():
            return
        if not self.judge.currentText() or not self.model.text().strip():
            self.status.setText("Choose a judge and give the model.")
            return
        # the database reaches the child as $GRADERCAL_DB, never on its command line (a
        # PostgreSQL password there would show in the process list)
        self._worker = _AlignWorker(self.argv(), {ENV_VAR: _url_arg(self.db)})
        self._thread = QThread(self)
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.work)
        self._worker.progress.connect(self._on_progress)
        self._worker.finished.connect(self._on_finished)
        self._worker.failed.connect(self._on_failed)
        self._worker.cancelled.connect(self._on_cancelled)
        self.align_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setRange(0, 0)  # busy until the first stage reports
        self.status.setText("Building the candidates from the development tasks…")
        self._thread.start()

    @Slot()
    def cancel(self) -> None:
        if self._worker is not None:
            self.status.setText("Cancelling…")
            self._worker.cancel()

    def wait(self, ms: int = 60_000) -> bool:
        return self._thread is None or self._thread.wait(ms)

    def _end(self) -> None:
        if self._thread is not None:
            self._thread.quit()
            self._thread.wait()
        self._thread = None
        self._worker = None
        self.align_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.progress.setRange(0, 1)

    @Slot(str, int, int)
    def _on_progress(self, stage: str, done: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(min(done, max(total, 1)))
        self.status.setText(f"{stage}: {done} of {total}")

    @Slot(object)
    def _on_finished(self, cert: dict[str, Any]) -> None:
        self._end()
        self.refresh()
        self.status.setText(
            f"Done: certificate {cert.get('certificate_id')} stored; "
            + (
                "a candidate is proven better."
                if cert.get("proven_better")
                else "no candidate is proven better (baseline kept)."
            )
        )
        self.certificate_stored.emit(cert)

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self._end()
        self.status.setText(f"judge align failed: {message}")

    @Slot()
    def _on_cancelled(self) -> None:
        self._end()
        self.status.setText(
            "Cancelled: no certificate stored. Replies received are cached; Align again "
            "resumes without asking the server twice."
        )

    def closeEvent(self, event: Any) -> None:
        self.cancel()
        self.wait()
        super().closeEvent(event)


def add_judge_align_action(window: Any, menu: QMenu) -> QAction:
    """Add "Judges: prompt versions and alignment…" to ``menu`` of a coordinator
    ``window`` (a QtMainWindow: its ``store.db`` and ``benchmark``); it opens the dialog
    (kept as ``window.judge_align_dialog``)."""
    action = QAction("&Judges: prompt versions and alignment…", window)
    action.setObjectName("file.judge_align")

    def show() -> None:
        dialog = QtJudgeAlignDialog(window.store.db, window.benchmark, parent=window)
        dialog.refresh()
        window.judge_align_dialog = dialog
        dialog.show()

    action.triggered.connect(show)
    menu.addAction(action)
    return action
