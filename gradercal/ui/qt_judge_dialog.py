"""The "Run judge…" dialog: ``gradercal judge run`` from the coordinator's window.

The coordinator picks the server (base URL), model, judge name, prompt version, scope,
concurrency and the environment variable holding the API key; **Estimate** shows the
pairs, requests, tokens and cost before anything is sent; **Start** runs the judge in a
``QThread`` with its own asyncio event loop, so the window stays responsive; the
progress bar shows counts, rate and ETA; **Cancel** asks the runner to stop (requests
in flight finish, every verdict received is saved). Errors — a refused key, an unknown
model, a judge name used with other settings — appear in the dialog; the window lives on.

The API key is read as the CLI reads it (:func:`gradercal.judge.secrets.resolve_api_key`:
the environment variable, else the system keyring) at the moment the run starts; it is
never shown, and neither the database nor QSettings ever holds it (only the variable's
name is remembered). The dialog exists only in coordinator windows: a grader must not
see the judge's verdicts (blinding).
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from gradercal.db.judging import JudgeStore, OpenRun, Scope
from gradercal.db.session import Database
from gradercal.errors import GradercalError
from gradercal.judge.client import JudgeClient, JudgeParams, RetryPolicy
from gradercal.judge.pricing import load_prices, price_for
from gradercal.judge.runner import RunStats, estimate_run
from gradercal.judge.secrets import DEFAULT_KEY_ENV, Redactor, resolve_api_key

__all__ = ["JudgeRunConfig", "QtJudgeDialog"]


@dataclass(frozen=True)
class JudgeRunConfig:
    """What the dialog's form says (no key: only where to find it)."""

    judge: str
    model: str
    base_url: str | None = None
    prompt: str | None = None
    scope: str = "unjudged"
    concurrency: int = 8
    api_key_env: str = DEFAULT_KEY_ENV
    max_cost: float | None = None
    timeout: float = 120.0

    def params(self) -> JudgeParams:
        return JudgeParams(model=self.model)


class _JudgeWorker(QObject):
    """Prepares and runs one judge run on its own event loop in a ``QThread``."""

    progress = Signal(object)  # RunStats snapshot (dict)
    started_run = Signal(int, int)  # run id, number of items
    finished = Signal(object)  # final RunStats as a dict
    failed = Signal(str)

    def __init__(self, db: Database, benchmark: str | None, config: JudgeRunConfig) -> None:
        super().__init__()
        self.db = db
        self.benchmark = benchmark
        self.config = config
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._run: OpenRun | None = None
        self._cancelled = False
        self._last_emit = 0.0

    def cancel(self) -> None:
        """Ask the run to stop (any thread): no new request; those in flight finish."""
        with self._lock:
            self._cancelled = True
            loop, run = self._loop, self._run
        if loop is not None and run is not None and not loop.is_closed():
            loop.call_soon_threadsafe(run.runner.stop)

    @Slot()
    def work(self) -> None:
        redact = Redactor()
        try:
            cfg = self.config
            store = JudgeStore(self.db)
            store.mark_interrupted()
            params = cfg.params()
            existing = store.judge(cfg.judge)
            ref = cfg.prompt or (existing.prompt_hash if existing else None)
            prompt = store.load_prompt(ref)
            scope = Scope.parse(cfg.scope)
            info = store.ensure_judge(
                cfg.judge, model=cfg.model, prompt=prompt, parameters=params.to_dict()
            )
            items = store.work_items(self.benchmark, info, scope, prompt)
            price = price_for(cfg.model, load_prices())
            if cfg.max_cost is not None and price is None:
                raise GradercalError(
                    f"no price known for model {cfg.model!r}, so a cost limit cannot be "
                    "enforced: add it to the price table (`gradercal judge prices --init`)"
                )
            if not items:
                self.finished.emit({"status": "completed", "done": 0, "total": 0, "ok": 0})
                return
            key = resolve_api_key(cfg.api_key_env)
            redact = Redactor(key.value)
            client = JudgeClient(
                params,
                base_url=cfg.base_url,
                api_key=key.value,
                concurrency=cfg.concurrency,
                retry=RetryPolicy(timeout=cfg.timeout),
            )
            run = store.open_run(
                info,
                prompt,
                client,
                record={
                    "kind": "run",
                    "scope": str(scope),
                    "benchmark": self.benchmark,
                    "prompt_version": prompt.content_hash,
                    "items": len(items),
                    "api_key_env": cfg.api_key_env,
                    "api_key_source": key.source,
                    "front_end": "app",
                },
                price=price,
                max_cost=cfg.max_cost,
            )
            run.runner.progress = self._on_progress
            loop = asyncio.new_event_loop()
            with self._lock:
                self._loop, self._run = loop, run
                cancelled = self._cancelled
            if cancelled:
                run.runner.stop()
            self.started_run.emit(run.run_id, len(items))
            try:

                async def main() -> RunStats:
                    async with client:
                        return await run.runner.run(items, total=len(items))

                loop.run_until_complete(main())
            except BaseException:
                run.runner.stats.status = "failed"
                raise
            finally:
                with self._lock:
                    self._loop = None
                loop.close()
                stats = run.finish()
            out = stats.to_dict()
            out["run_id"] = run.run_id
            out["saved"] = run.writer.saved
            self.finished.emit(out)
        except Exception as exc:  # shown in the dialog; the window lives on
            self.failed.emit(redact(str(exc) or type(exc).__name__))

    def _on_progress(self, stats: RunStats) -> None:
        now = time.monotonic()
        if now - self._last_emit >= 0.1 or stats.done == stats.total:
            self._last_emit = now
            self.progress.emit(stats.to_dict())


class QtJudgeDialog(QDialog):
    """Configure, estimate, run, watch and cancel a judge run (coordinator windows only).

    Args:
        db: The open database.
        benchmark: The benchmark (None: the database's only one).
        settings: Optional ``QSettings``-like object (``value``/``setValue``) to remember
            the form between uses; the API key is never among what is kept.
    """

    #: Emitted with the final RunStats dict when a run ends (completed, cancelled, failed).
    run_finished = Signal(object)

    _SETTINGS = ("judge", "model", "base_url", "api_key_env", "concurrency")

    def __init__(
        self,
        db: Database,
        benchmark: str | None = None,
        *,
        settings: Any = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Run the LLM judge")
        self.setObjectName("judge_dialog")
        self.db = db
        self.benchmark = benchmark
        self.settings = settings
        self._thread: QThread | None = None
        self.worker: _JudgeWorker | None = None
        self.outcome: dict[str, Any] | None = None
        self.run_id: int | None = None

        self.base_url = QLineEdit()
        self.base_url.setPlaceholderText(
            "http://localhost:8000/v1 (empty: $OPENAI_BASE_URL or OpenAI)"
        )
        self.model = QLineEdit()
        self.judge = QLineEdit()
        self.prompt = QComboBox()
        self.prompt.setEditable(True)
        self.scope = QComboBox()
        self.scope.setEditable(True)
        self.scope.addItems(["unjudged", "all", "calibration"])
        self.scope.setToolTip("unjudged (resume), all, calibration, or tasks:ID,ID,…")
        self.concurrency = QSpinBox()
        self.concurrency.setRange(1, 1024)
        self.concurrency.setValue(8)
        self.key_env = QLineEdit(DEFAULT_KEY_ENV)
        self.key_state = QLabel()
        self.max_cost = QDoubleSpinBox()
        self.max_cost.setRange(0.0, 1e6)
        self.max_cost.setDecimals(2)
        self.max_cost.setSpecialValueText("no limit")
        self.max_cost.setPrefix("$ ")
        form = QFormLayout()
        form.addRow("Server base URL", self.base_url)
        form.addRow("Model", self.model)
        form.addRow("Judge name", self.judge)
        form.addRow("Prompt version", self.prompt)
        form.addRow("Scope", self.scope)
        form.addRow("Concurrency", self.concurrency)
        form.addRow("API key variable", self.key_env)
        form.addRow("", self.key_state)
        form.addRow("Cost limit", self.max_cost)

        self.estimate_label = QLabel("")
        self.estimate_label.setWordWrap(True)
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 1)
        self.progress_bar.setValue(0)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.error = QLabel("")
        self.error.setObjectName("judge_error")
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #c0392b;")
        self.estimate_button = QPushButton("&Estimate")
        self.start_button = QPushButton("&Start")
        self.cancel_button = QPushButton("&Cancel run")
        self.cancel_button.setEnabled(False)
        buttons = QDialogButtonBox()
        buttons.addButton(self.estimate_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.start_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.cancel_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.close_button = buttons.addButton(QDialogButtonBox.StandardButton.Close)
        self.close_button.clicked.connect(self.close)
        self.estimate_button.clicked.connect(self.estimate)
        self.start_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        self.key_env.textChanged.connect(self._update_key_state)

        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.estimate_label)
        layout.addWidget(self.progress_bar)
        layout.addWidget(self.status)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        self._load_prompts()
        self._restore()
        self._update_key_state()

    # -- form --------------------------------------------------------------------------
    def config(self) -> JudgeRunConfig:
        """The form as a :class:`JudgeRunConfig`; GradercalError when a field is missing."""
        judge, model = self.judge.text().strip(), self.model.text().strip()
        if not judge:
            raise GradercalError("enter a judge name (the grader its verdicts are stored as)")
        if not model:
            raise GradercalError("enter the model name as the server knows it")
        prompt = self.prompt.currentText().strip()
        return JudgeRunConfig(
            judge=judge,
            model=model,
            base_url=self.base_url.text().strip() or None,
            prompt=None
            if prompt in ("", "default (the judge's, else the shipped one)")
            else prompt,
            scope=self.scope.currentText().strip() or "unjudged",
            concurrency=self.concurrency.value(),
            api_key_env=self.key_env.text().strip() or DEFAULT_KEY_ENV,
            max_cost=self.max_cost.value() or None,
        )

    def _load_prompts(self) -> None:
        self.prompt.addItem("default (the judge's, else the shipped one)")
        try:
            for p in JudgeStore(self.db).prompts():
                self.prompt.addItem(p.content_hash[:12] + (f"  {p.name}" if p.name else ""))
        except GradercalError:
            pass

    def _update_key_state(self) -> None:
        key = resolve_api_key(self.key_env.text().strip() or DEFAULT_KEY_ENV)
        self.key_state.setText(
            {
                "env": "key found in the environment (not shown, never stored)",
                "keyring": "key found in the system keyring (not shown, never stored)",
            }.get(key.source, "no key found: none will be sent (fine for local servers)")
        )

    def _restore(self) -> None:
        if self.settings is None:
            return
        fields = {"judge": self.judge, "model": self.model, "base_url": self.base_url,
                  "api_key_env": self.key_env}  # fmt: skip
        for name, widget in fields.items():
            value = self.settings.value(f"judge_dialog/{name}")
            if value:
                widget.setText(str(value))
        conc = self.settings.value("judge_dialog/concurrency")
        if conc:
            self.concurrency.setValue(int(conc))

    def _remember(self, cfg: JudgeRunConfig) -> None:
        if self.settings is None:
            return
        for name in self._SETTINGS:  # the key itself is not a field of the config
            value = getattr(cfg, name)
            self.settings.setValue(f"judge_dialog/{name}", "" if value is None else value)

    # -- actions -------------------------------------------------------------------------
    def estimate(self) -> None:
        """Show pairs, requests, tokens and cost of the configured run (nothing is sent)."""
        self.error.setText("")
        try:
            cfg = self.config()
            store = JudgeStore(self.db)
            existing = store.judge(cfg.judge)
            prompt = store.load_prompt(cfg.prompt or (existing.prompt_hash if existing else None))
            items = store.work_items(self.benchmark, existing, Scope.parse(cfg.scope), prompt)
            price = price_for(cfg.model, load_prices())
            est = estimate_run(items, prompt, max_tokens=cfg.params().max_tokens, price=price)
        except GradercalError as exc:
            self.error.setText(str(exc))
            return
        cost = "unknown (no price for this model)"
        if est.cost_usd is not None:
            cost = f"≈ ${est.cost_usd:.4f} (at most ${est.cost_usd_max:.4f})"
        self.estimate_label.setText(
            f"{est.items} pairs, {est.requests} requests, ≈ {est.prompt_tokens:,} prompt + "
            f"{est.completion_tokens:,} completion tokens; cost {cost}"
        )

    def start(self) -> None:
        """Start the run in a worker thread (refused while one runs)."""
        if self.running:
            return
        self.error.setText("")
        try:
            cfg = self.config()
        except GradercalError as exc:
            self.error.setText(str(exc))
            return
        self._remember(cfg)
        self.outcome = None
        self.run_id = None
        self.progress_bar.setRange(0, 0)  # busy until the work list is known
        self.status.setText("preparing the work list…")
        self._thread = QThread(self)
        self.worker = _JudgeWorker(self.db, self.benchmark, cfg)
        self.worker.moveToThread(self._thread)
        self._thread.started.connect(self.worker.work)
        self.worker.started_run.connect(self._on_started)
        self.worker.progress.connect(self._on_progress)
        self.worker.finished.connect(self._on_finished)
        self.worker.failed.connect(self._on_failed)
        # direct: quit() is thread-safe, and the thread must end even while the UI
        # thread is blocked in wait() (a queued quit would never be delivered)
        direct = Qt.ConnectionType.DirectConnection
        self.worker.finished.connect(self._thread.quit, direct)
        self.worker.failed.connect(self._thread.quit, direct)
        self._set_running(True)
        self._thread.start()

    def cancel(self) -> None:
        """Stop the run: requests in flight finish, every verdict received is kept."""
        if self.worker is not None:
            self.status.setText("cancelling: waiting for the requests in flight…")
            self.cancel_button.setEnabled(False)
            self.worker.cancel()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.isRunning()

    def wait(self, ms: int = 30000) -> bool:
        """Block until the worker thread ended (tests, closing)."""
        return self._thread is None or self._thread.wait(ms)

    def _set_running(self, running: bool) -> None:
        self.start_button.setEnabled(not running)
        self.estimate_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        for w in (self.base_url, self.model, self.judge, self.prompt, self.scope,
                  self.concurrency, self.key_env, self.max_cost):  # fmt: skip
            w.setEnabled(not running)

    def _on_started(self, run_id: int, total: int) -> None:
        self.run_id = run_id
        self.progress_bar.setRange(0, total)
        self.progress_bar.setValue(0)
        self.status.setText(f"run {run_id}: 0 of {total}")

    def _on_progress(self, stats: dict[str, Any]) -> None:
        total, done = stats.get("total") or 0, stats["done"]
        self.progress_bar.setValue(done)
        elapsed = stats.get("elapsed_s") or 0.0
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (total - done) / rate if rate > 0 else math.inf
        failed = stats["parse_failures"] + stats["errors"]
        self.status.setText(
            f"run {self.run_id}: {done} of {total} · {stats['ok']} verdicts · {failed} failed · "
            f"{stats['cached']} cached · {rate:.1f}/s · ETA "
            + ("—" if math.isinf(eta) else f"{eta:.0f} s")
            + f" · ${stats['cost_usd']:.4f}"
        )

    def _on_finished(self, stats: dict[str, Any]) -> None:
        self.outcome = stats
        self._set_running(False)
        total = stats.get("total") or 0
        self.progress_bar.setRange(0, max(total, 1))
        self.progress_bar.setValue(stats.get("done", 0) if total else 1)
        word = {
            "completed": "done",
            "cancelled": "cancelled",
            "stopped_cost": "stopped at the cost limit",
            "failed": "failed",
            "no_verdicts": "got no verdict",
        }.get(stats["status"], stats["status"])
        if not total:
            self.status.setText("nothing to judge in this scope")
        else:
            self.status.setText(
                f"run {stats.get('run_id')} {word}: {stats['ok']} verdicts, "
                f"{stats['parse_failures']} parse failures, {stats['errors']} errors, "
                f"{stats['cached']} from cache, ${stats['cost_usd']:.4f}"
            )
        if stats["status"] in ("failed", "no_verdicts") and stats.get("message"):
            self.error.setText(str(stats["message"]))
        self.run_finished.emit(stats)

    def _on_failed(self, message: str) -> None:
        self._set_running(False)
        self.progress_bar.setRange(0, 1)
        self.progress_bar.setValue(0)
        self.status.setText("the run did not start" if self.run_id is None else "the run failed")
        self.error.setText(message)
        self.outcome = {"status": "failed", "message": message}
        self.run_finished.emit(self.outcome)

    def closeEvent(self, event: Any) -> None:
        if self.running:
            self.cancel()
            self.wait()
        super().closeEvent(event)
