"""The dashboard's worker process, seen from the window: :class:`QtDashboardProcess`.

It starts ``python -m gradercal.ui.dashboard.worker`` with ``QProcess`` (no ``fork`` of the
window's process, nothing of Qt in the child), sends it requests and reads its messages as
they arrive (``readyReadStandardOutput``: the event loop never waits on the pipe). The
result comes back in parts — each field of the Dashboard, each prepared table, each chart
— and they are unpickled one per event-loop turn, so even a large result never stalls the
window for long; once all are in, :attr:`~QtDashboardProcess.computed` carries the
:class:`~gradercal.ui.dashboard.data.Computed`.

The window keeps the parts of the result it shows with their digests and sends those
digests with the next request: parts the worker would send unchanged are taken from there
(``done``'s ``reused``), and :attr:`Computed.changed <gradercal.ui.dashboard.data.Computed.changed>`
names the parts that are new, so the view redraws only those. :meth:`~QtDashboardProcess.prefetch`
asks the worker to compute ahead the dashboard of hypothetical adjudications
(:attr:`~QtDashboardProcess.prefetched` says one is ready); :meth:`~QtDashboardProcess.warm`
starts the worker and loads the frames before the first request.

Replies for a generation no longer wanted (cancelled, or superseded by a newer filter
set) are not unpickled: :attr:`~QtDashboardProcess.dropped` says one arrived. A worker that
stops (killed, crashed) fails the computation it was running with a message, and the
next :meth:`~QtDashboardProcess.compute` starts a new one (:attr:`restarted` says so).
:meth:`~QtDashboardProcess.stop` ends it; it also ends by itself when this process goes
away (its standard input closes).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import pickle
import sys
import time
import weakref
from collections import deque
from typing import TYPE_CHECKING, cast

from PySide6.QtCore import QCoreApplication, QObject, QProcess, QProcessEnvironment, QTimer, Signal

from gradercal.ui.dashboard.protocol import (
    PROTOCOL,
    Done,
    FrameReader,
    Part,
    PartKind,
    ToWindow,
    ToWorker,
    encode,
)
from gradercal.ui.dashboard.results import PickledRequest

if TYPE_CHECKING:  # data imports pandas: not needed to start the worker
    from matplotlib.figure import Figure

    from gradercal.ui.dashboard.data import Computed, PreparedTable, Request
#: Objects allocated (gc.get_count()[0]) after which a decoded part is followed by a
#: collection of the youngest generation.
YOUNG_LIMIT = 5_000
#: How long :meth:`QtDashboardProcess.stop` waits for the worker to exit before killing it.
STOP_WAIT_MS = 1_000
#: The program and arguments that start the worker. The test suite points this at a
#: launcher that forks a worker whose imports are already done
#: (``tests/support/worker_fork_server.py``); the worker it runs is the same.
DEFAULT_WORKER_COMMAND: tuple[str, ...] = (sys.executable, "-m", "gradercal.ui.dashboard.worker")
WORKER_COMMAND: tuple[str, ...] = DEFAULT_WORKER_COMMAND
_LIVE: weakref.WeakSet[QtDashboardProcess] = weakref.WeakSet()
_HOOKED: list[QObject] = []
_PREIMPORT: list[bool] = []


def preimport() -> None:
    """Import what unpickling a result needs (matplotlib, the Dashboard class) — run in a
    worker thread while the worker process computes, so the first result's charts do not
    pay for the imports on the UI thread (near a second on a loaded machine)."""
    import matplotlib.backends.backend_agg
    import matplotlib.backends.backend_qtagg
    import matplotlib.figure  # noqa: F401


def _freeze_long_lived(_result: object = None) -> None:
    """Move everything alive now — modules, classes, functions of the app and of the
    imports above — out of the cyclic collector's sight (``gc.freeze``, O(1)).

    The app collects on the UI thread (:func:`gradercal.ui.qt_workers.collect_garbage_on_ui_thread`);
    with a quarter of a million long-lived objects each full collection took 130–200 ms.
    What is frozen is never collected: done once per process, after the imports.
    """
    import gc

    from gradercal.ui import qt_workers

    gc.freeze()
    qt_workers.pause_collections(False)


#: The worker started by :func:`launch_early`, until :func:`take_early` hands it over.
_EARLY: list[QtDashboardProcess] = []


def launch_early() -> QtDashboardProcess:
    """Make the ``QApplication`` and start a dashboard worker, before the coordinator
    window's modules are imported (``gradercal gui`` on a coordinator view; #33): its
    start-up and the headline's imports then overlap the window's imports and build.
    The worker is told that a request comes ``soon`` (no database yet): it imports what
    the headline needs and waits for it, instead of all its imports. The window takes it
    with :func:`take_early`; one never taken is stopped when the application quits.

    Measured at 750 tasks (``benchmarks/README.md``, session 17): PySide6 loaded first
    makes the window's own imports slower (its import hook) and the window shows
    ≈ 0.15 s later, but the headline comes ≈ 0.3–0.4 s sooner after it shows and ≈ 0.5 s
    sooner from the command's start than with the worker started by the window. Started
    after the database layer instead (the order :mod:`gradercal.ui.qt_app` keeps), the
    worker gains only the ≈ 0.1 s that remains of the imports."""
    from gradercal.ui.qt_application import application

    worker = QtDashboardProcess("", application())
    worker.launch()
    worker._send_now({"op": "soon", "url": "", "benchmark": None})
    _EARLY[:] = [worker]
    return worker


def take_early() -> QtDashboardProcess | None:
    """The worker :func:`launch_early` started (once; None if none is running)."""
    worker = _EARLY.pop() if _EARLY else None
    return worker if worker is not None and worker.running else None


def _stop_all() -> None:
    for client in list(_LIVE):
        with contextlib.suppress(RuntimeError):  # its Qt objects are gone already
            client.stop()


# At the interpreter's exit too (a SystemExit before the event loop ran, a signal): a
# QProcess destroyed with its worker still running would kill it instead of stopping it.
atexit.register(_stop_all)


class QtDashboardProcess(QObject):
    """One worker process for one dashboard view (started on the first computation).

    Give it a parent (the view, the window): one that ran a process and is then left to
    the garbage collector crashes Qt when the event loop next runs (PySide6 6.12)."""

    #: generation, done, total, label
    progress = Signal(int, int, int, str)
    #: the Computed of the generation last asked for
    computed = Signal(object)
    #: generation, kind (``cancelled``, ``superseded``, ``error``, ``crashed``), message
    failed = Signal(int, str, str)
    #: a reply for a generation no longer wanted arrived (and was thrown away)
    dropped = Signal(int)
    #: a new worker was started after the previous one stopped (the message says why)
    restarted = Signal(str)
    #: a prefetched result is ready: the worker's ``prefetched`` message (a dict)
    prefetched = Signal(object)
    #: generation, the headline (:func:`gradercal.dashboard.headline_of`) of the generation
    #: asked for, as soon as the worker computed it (before the rest of the result)
    headline = Signal(int, object)

    def __init__(self, url: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.url = url
        self.process: QProcess | None = None
        #: the worker's process id (0 before its first message)
        self.pid = 0
        #: whether the worker reported any Qt module loaded (it must not)
        self.child_has_qt = False
        #: the generation whose result is wanted (None: none)
        self.wanted: int | None = None
        #: generations sent and not answered yet
        self.outstanding: set[int] = set()
        #: workers started after one stopped
        self.restarts = 0
        #: the longest unpickling of one part on this thread, in ms (for the benchmark)
        self.max_decode_ms = 0.0
        self._reader = FrameReader()
        self._writes: list[bytes] = []
        self._parts: dict[Part, object] = {}
        self._digests: dict[Part, bytes] = {}
        self._undecoded: deque[tuple[Part, bytes]] = deque()
        #: the parts of the result last assembled: part → (digest, value)
        self._current: dict[Part, tuple[bytes, object]] = {}
        self._done: Done | None = None
        self._stopped_because: str | None = None
        self._stderr: deque[str] = deque(maxlen=30)
        self._stopping = False
        self._decoder = QTimer(self)
        self._decoder.setInterval(0)
        self._decoder.timeout.connect(self._decode_next)
        _LIVE.add(self)
        app = QCoreApplication.instance()
        if app is not None and app not in _HOOKED:
            app.aboutToQuit.connect(_stop_all)
            _HOOKED.append(app)

    # -- the process ------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.process is not None

    def _start(self) -> None:
        self._stopping = False
        self._reader = FrameReader()
        self._writes = []
        self.pid = 0
        proc = QProcess(self)
        proc.setProgram(WORKER_COMMAND[0])
        proc.setArguments(list(WORKER_COMMAND[1:]))
        env = QProcessEnvironment.systemEnvironment()
        env.insert("MPLBACKEND", "Agg")
        proc.setProcessEnvironment(env)
        proc.setProcessChannelMode(QProcess.ProcessChannelMode.SeparateChannels)
        proc.readyReadStandardOutput.connect(lambda p=proc: self._read(p))
        proc.readyReadStandardError.connect(lambda p=proc: self._read_stderr(p))
        proc.started.connect(lambda p=proc: self._flush(p))
        proc.finished.connect(lambda code, status, p=proc: self._finished(p, code, status))
        proc.errorOccurred.connect(lambda error, p=proc: self._error(p, error))
        self.process = proc
        proc.start()

    def _send(self, message: ToWorker) -> None:
        data = encode(message)
        proc = self.process
        if proc is not None and proc.state() == QProcess.ProcessState.Running:
            proc.write(data)
        else:
            self._writes.append(data)

    def _flush(self, proc: QProcess) -> None:
        if proc is not self.process:
            return
        for data in self._writes:
            proc.write(data)
        self._writes = []

    def stop(self) -> None:
        """End the worker (told to quit, killed if it does not within a second)."""
        self._decoder.stop()
        self._stopping = True
        proc, self.process = self.process, None
        self.wanted = None
        self.outstanding.clear()
        self._reset()
        if proc is None:
            return
        if proc.state() == QProcess.ProcessState.Running:
            proc.write(encode({"op": "quit"}))
            proc.closeWriteChannel()
            if not proc.waitForFinished(STOP_WAIT_MS):
                proc.kill()
                proc.waitForFinished(STOP_WAIT_MS)
        elif proc.state() == QProcess.ProcessState.Starting:
            proc.kill()
            proc.waitForFinished(STOP_WAIT_MS)
        proc.deleteLater()
        self.pid = 0

    def _stopped(self, proc: QProcess, why: str) -> None:
        if proc is not self.process or self._stopping:
            return
        self.process = None
        self.pid = 0
        tail = [line for line in self._stderr if line.strip()]
        if tail:
            why += f"; last output: {tail[-1].strip()[:300]}"
        self._stopped_because = why
        proc.deleteLater()
        wanted = self.wanted
        lost = sorted(self.outstanding)
        self.outstanding.clear()
        self.wanted = None
        self._reset()
        for gen in lost:
            if gen == wanted:
                self.failed.emit(gen, "crashed", why)
            else:
                self.dropped.emit(gen)

    def _finished(self, proc: QProcess, code: int, status: QProcess.ExitStatus) -> None:
        if status == QProcess.ExitStatus.CrashExit:
            why = "the dashboard process stopped unexpectedly (killed or crashed)"
        else:
            why = f"the dashboard process stopped unexpectedly (exit code {code})"
        self._stopped(proc, why)

    def _error(self, proc: QProcess, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            self._stopped(proc, f"cannot start the dashboard process: {proc.errorString()}")

    def _read_stderr(self, proc: QProcess) -> None:
        text = bytes(proc.readAllStandardError().data()).decode("utf-8", "replace")
        if text:
            sys.stderr.write(text)  # the worker's tracebacks and warnings, for the log
            self._stderr.extend(text.splitlines())

    # -- requests ---------------------------------------------------------------------------
    def _ensure_started(self) -> None:
        if self.process is None:
            if self._stopped_because is not None:
                why, self._stopped_because = self._stopped_because, None
                self.restarts += 1
                self.restarted.emit(f"Restarted the dashboard process ({why}).")
            self._start()

    def launch(self) -> None:
        """Start the worker process now, nothing asked yet: its start-up overlaps what the
        window does before it knows what to ask (opening the database, building itself)."""
        self._ensure_started()

    def start(self, benchmark: str) -> None:
        """Start the worker now, as the window is being built: its first request (about
        ``benchmark``) follows (``soon``), and may be answered from the disk before the
        worker's heavy imports."""
        self._ensure_started()
        self._send_now({"op": "soon", "url": self.url, "benchmark": benchmark})

    def _send_now(self, message: ToWorker) -> None:
        """:meth:`_send`, written to the pipe before returning — for messages sent while
        the window is being built, before its event loop runs (a queued write would only
        reach the worker then)."""
        proc = self.process
        if proc is not None and proc.waitForStarted(STOP_WAIT_MS * 5):
            self._flush(proc)
            proc.write(encode(message))
            proc.waitForBytesWritten(STOP_WAIT_MS)
        else:
            self._send(message)

    def warm(self, benchmark: str) -> None:
        """Start the worker now and let it load ``benchmark``'s frames before it is asked
        for anything (the first :meth:`compute` then only computes)."""
        self._ensure_started()
        self._send_now({"op": "warm", "url": self.url, "benchmark": benchmark})

    def prefetch(
        self, request: Request, hypotheses: list[tuple[str, str, bool, int | None]]
    ) -> None:
        """Let the worker compute ahead, while idle, ``request`` as it would be with each of
        ``hypotheses`` (response id, criterion id, met, level) adjudicated."""
        if not hypotheses:
            return
        self._ensure_started()
        self._send(
            {"op": "prefetch", "request": request, "url": self.url, "hypotheses": hypotheses}
        )

    def prefetch_requests(self, requests: list[Request]) -> None:
        """Let the worker compute ahead, while idle and at a lower priority, ``requests``
        (filter sets the window may ask for next); replaces the prefetches queued."""
        if not requests or self.process is None:
            return
        self._send({"op": "prefetch", "url": self.url, "requests": requests})

    def compute(
        self, request: Request, expect: tuple[str, str, bool, int | None] | None = None
    ) -> None:
        """Ask for ``request`` (the newest request supersedes the one running); ``expect``:
        the adjudication just saved (a prefetch of it then keeps running)."""
        self._ensure_started()
        if not _PREIMPORT:
            from gradercal.ui import qt_workers

            _PREIMPORT.append(True)
            qt_workers.collect_garbage_on_ui_thread()
            qt_workers.pause_collections(True)  # until the imports are in and frozen
            qt_workers.submit(preimport, done=_freeze_long_lived, failed=_freeze_long_lived)
        self.wanted = request.generation
        self._reset()
        self.outstanding.add(request.generation)
        have = {key: dig for key, (dig, _value) in self._current.items()}
        self._send(
            {
                "op": "compute",
                "request": PickledRequest.of(request),
                "url": self.url,
                "have": have,
                "expect": expect,
            }
        )

    def cancel(self, generation: int) -> None:
        """Stop computing ``generation`` (and anything older); its reply will be dropped."""
        if self.wanted is not None and self.wanted <= generation:
            self.wanted = None
            self._reset()
        if self.process is not None:
            self._send({"op": "cancel", "generation": generation})

    # -- replies ----------------------------------------------------------------------------
    def _reset(self) -> None:
        self._parts = {}
        self._digests = {}
        self._undecoded.clear()
        self._done = None
        self._decoder.stop()

    def _read(self, proc: QProcess) -> None:
        if proc is not self.process:
            return
        data = bytes(proc.readAllStandardOutput().data())
        try:
            messages = self._reader.feed(data)
        except Exception as exc:  # a corrupt stream: this worker cannot be trusted
            proc.kill()
            self._stopped(proc, f"the dashboard process sent unreadable data ({exc})")
            return
        for message in messages:
            self._handle(message)

    def _handle(self, m: ToWindow) -> None:
        if m["type"] == "hello":
            self.pid = int(m["pid"])
            self.child_has_qt = bool(m["qt"])
            if m["protocol"] != PROTOCOL:
                sys.stderr.write(f"dashboard worker speaks protocol {m['protocol']}\n")
        elif m["type"] == "progress":
            gen = m["generation"]
            if gen == self.wanted:
                self.progress.emit(gen, int(m["done"]), int(m["total"]), str(m["label"]))
        elif m["type"] == "headline":
            gen = m["generation"]
            if gen == self.wanted:  # small: unpickled at once, ahead of the parts
                self.headline.emit(gen, pickle.loads(m["payload"]))
        elif m["type"] == "part":
            if m["generation"] == self.wanted:
                self._undecoded.append((m["key"], m["payload"]))
                self._digests[m["key"]] = m["digest"]
                self._decoder.start()
        elif m["type"] == "prefetched":
            self.prefetched.emit(m)
        elif m["type"] == "done":
            gen = m["generation"]
            self.child_has_qt = self.child_has_qt or bool(m["qt"])
            if gen == self.wanted:
                self._done = m
                self._decoder.start()
            else:
                self.outstanding.discard(gen)
                self.dropped.emit(gen)
        elif m["type"] == "error":
            gen = m["generation"]
            self.outstanding.discard(gen)
            if m["traceback"]:
                sys.stderr.write(str(m["traceback"]))
            if gen == self.wanted:
                self.wanted = None
                self._reset()
                self.failed.emit(gen, str(m["kind"]), str(m["message"]))
            else:
                self.dropped.emit(gen)

    def _decode_next(self) -> None:
        """Unpickle one part (one per event-loop turn); assemble when all are in."""
        if self._undecoded:
            key, payload = self._undecoded.popleft()
            t0 = time.perf_counter()
            value: object = pickle.loads(payload)
            if key.kind is PartKind.FIGURE and isinstance(value, tuple):
                from gradercal.ui.dashboard.data import attach_pixels

                figure, pixels = value
                attach_pixels(figure, pixels)
                value = figure
            self._parts[key] = value
            self.max_decode_ms = max(self.max_decode_ms, (time.perf_counter() - t0) * 1e3)
            if gc.get_count()[0] > YOUNG_LIMIT:
                # A part made many objects (a figure's artists, a column of tuples): collect
                # the youngest generation now, in this turn, while it is small — tuples of
                # strings leave the collector's lists there, and the app's older
                # generations (collected from a timer) stay small too.
                gc.collect(0)
            return
        self._decoder.stop()
        done = self._done
        if done is None:
            return
        self._done = None
        gen = int(done["generation"])
        parts, self._parts = self._parts, {}
        digests, self._digests = self._digests, {}
        self.outstanding.discard(gen)
        self.wanted = None
        changed = {k for k in parts if self._current.get(k, (None,))[0] != digests.get(k)}
        for key in done["reused"]:
            if key in self._current and key not in parts:
                digests[key], parts[key] = self._current[key]
        missing = [k for k in done["keys"] if k not in parts]
        if missing:
            self.failed.emit(gen, "error", f"the dashboard process sent no {missing[0]}")
            return
        self._current = {k: (digests[k], parts[k]) for k in done["keys"] if k in digests}
        self.computed.emit(assemble(gen, parts, done, frozenset(changed)))


def assemble(
    generation: int,
    parts: dict[Part, object],
    done: Done,
    changed: frozenset[Part] | None = None,
) -> Computed:
    """The :class:`Computed` of a worker's parts (see :mod:`gradercal.ui.dashboard.worker`);
    ``changed``: the keys of the parts that differ from the result shown before (None:
    all)."""
    from gradercal.dashboard import Dashboard
    from gradercal.ui.dashboard.data import Computed, share_frames

    dash = Dashboard.from_fields({k.name: v for k, v in parts.items() if k.kind is PartKind.DASH})
    tables = {k.name: v for k, v in parts.items() if k.kind is PartKind.TABLE}
    figures = {k.name: v for k, v in parts.items() if k.kind is PartKind.FIGURE}
    return Computed(
        generation=generation,
        dashboard=dash,
        options=cast("dict[str, list[str]]", parts.get(Part(PartKind.OPTIONS), {})),
        tables=share_frames(cast("dict[str, PreparedTable]", tables), dash),
        figures=cast("dict[str, Figure | str]", figures),
        first_response=cast("dict[str, str]", parts.get(Part(PartKind.FIRST_RESPONSE), {})),
        seconds=done["seconds"],
        pid=done["pid"],
        loaded=done["loaded"],
        phases=dict(done["phases"]),
        changed=changed,
        cached=done["cached"],
        disk=done["disk"],
        refreshed=tuple(done["refreshed"]),
    )


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie counts as exited)."""
    if pid <= 0:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:  # no /proc (macOS): ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


__all__ = ["QtDashboardProcess", "assemble", "process_alive"]
