"""The dashboard's worker process: ``python -m gradercal.ui.dashboard.worker``.

The coordinator window (:mod:`gradercal.ui.dashboard.qt_process`) starts this module as a
child process and talks to it over its standard input and output. The child opens the
database by URL, loads the benchmark's frames once and keeps them across computations
(a changed filter recomputes from the cached frames), runs
:func:`gradercal.dashboard.compute_dashboard`, prepares the tables and draws the charts,
and sends everything back. The window's process so never holds the large frames nor does
the pandas work, so neither its garbage collector nor the GIL stall its event loop.

It imports no Qt: gradercal.db, pandas and (for the charts) matplotlib's Agg backend.

Protocol (version :data:`PROTOCOL`): each message is a pickled dict framed by an 8-byte
big-endian length (:func:`encode`, :class:`FrameReader`).

Window → worker (``op``):
    ``compute``: ``request`` (:class:`gradercal.ui.dashboard.data.Request`), ``url``.
        A newer ``compute`` cancels the one running.
    ``cancel``: ``generation`` — stop that computation (and any older one).
    ``quit``: exit now. End of input (the window's process gone) exits too.

Worker → window (``type``):
    ``hello``: ``pid``, ``protocol``, ``qt`` (whether any Qt module is loaded: never).
    ``progress``: ``generation``, ``done``, ``total``, ``label``.
    ``part``: ``generation``, ``key``, ``payload`` (bytes: a pickle, unpickled by the window
        one part per event-loop turn): ``dash:<field>`` per field of the Dashboard,
        ``options``, ``first_response``, ``table:<name>`` (without its frame when that is
        a Dashboard field: :data:`~gradercal.ui.dashboard.data.SHARED_FRAMES`), ``figure:<name>`` (a Figure
        and its :class:`~gradercal.ui.dashboard.data.Pixels`, or a str saying why none).
    ``done``: ``generation``, ``keys`` (every part sent), ``seconds``, ``phases`` (seconds
        spent opening/loading, computing, preparing tables, drawing charts), ``pid``, ``qt``,
        ``loaded`` (whether the frames were read from the database for this request).
    ``error``: ``generation``, ``kind`` (``cancelled``, ``superseded`` or ``error``),
        ``message``, ``error_type``, ``traceback``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import queue
import struct
import sys
import threading
import time
import traceback
from collections.abc import Callable, Collection
from typing import Any, BinaryIO

from gradercal._util.forked import ChildFailed, ForkedCall, fork_available

PROTOCOL = 1
_HEADER = struct.Struct(">Q")
#: Largest message accepted (a sanity bound against a corrupt stream).
MAX_MESSAGE = 1 << 34


def encode(message: dict[str, Any]) -> bytes:
    """One framed message."""
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(body)) + body


class FrameReader:
    """Splits a byte stream into messages; :meth:`feed` returns the complete ones."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._start = 0

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._buffer += data
        out: list[dict[str, Any]] = []
        buf = self._buffer
        while len(buf) - self._start >= _HEADER.size:
            (n,) = _HEADER.unpack_from(buf, self._start)
            if n > MAX_MESSAGE:
                raise ValueError(f"corrupt message stream (a message of {n} bytes)")
            begin = self._start + _HEADER.size
            if len(buf) - begin < n:
                break
            out.append(pickle.loads(memoryview(buf)[begin : begin + n]))
            self._start = begin + n
        if self._start and (self._start == len(buf) or self._start > (1 << 20)):
            del buf[: self._start]  # drop what was read (rarely: a memmove of the rest)
            self._start = 0
        return out

    @property
    def pending(self) -> int:
        """Bytes received but not yet part of a complete message."""
        return len(self._buffer) - self._start


def read_message(stream: BinaryIO) -> dict[str, Any] | None:
    """The next message from a blocking stream; None at its end."""
    head = _read_exactly(stream, _HEADER.size)
    if head is None:
        return None
    (n,) = _HEADER.unpack(head)
    if n > MAX_MESSAGE:
        raise ValueError(f"corrupt message stream (a message of {n} bytes)")
    body = _read_exactly(stream, n)
    if body is None:
        return None
    message: dict[str, Any] = pickle.loads(body)
    return message


def _read_exactly(stream: BinaryIO, n: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < n:
        chunk = stream.read(n - len(chunks))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def qt_loaded() -> bool:
    """Whether any Qt binding is imported in this process (the worker must stay Qt-free)."""
    return any(m.split(".", 1)[0] in ("PySide6", "PyQt6", "PyQt5", "PySide2") for m in sys.modules)


class _Superseded(Exception):
    """A newer request arrived before this one started."""


class Worker:
    """The child's state: the open database, the cached frames, the running request."""

    def __init__(self, send: Callable[[dict[str, Any]], None]) -> None:
        self.send = send
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._lock = threading.Lock()
        #: generation of the request being computed, and its cancel flag
        self._running: tuple[int, threading.Event] | None = None
        #: the newest generation received (older queued requests are skipped)
        self._newest = 0
        self._cancelled_upto = 0
        self._db: Any = None
        self._url: str | None = None
        self._frames: Any = None
        self._reviews: Any = None
        self._frames_key: tuple[str, str] | None = None

    # -- the input thread ---------------------------------------------------------------------
    def listen(self, stream: BinaryIO) -> None:
        """Read messages until the end of input; runs in its own thread."""
        try:
            while True:
                message = read_message(stream)
                if message is None or message.get("op") == "quit":
                    break
                op = message.get("op")
                with self._lock:
                    if op == "cancel":
                        gen = int(message["generation"])
                        self._cancelled_upto = max(self._cancelled_upto, gen)
                        if self._running is not None and self._running[0] <= gen:
                            self._running[1].set()
                    elif op == "compute":
                        gen = int(message["request"].generation)
                        self._newest = max(self._newest, gen)
                        if self._running is not None and self._running[0] < gen:
                            self._running[1].set()  # superseded
                        self.inbox.put(message)
        except Exception:  # a broken pipe or stream: nothing more will come
            traceback.print_exc()
        # The window closed or went away: leave at once (no state worth saving here).
        sys.stderr.flush()
        os._exit(0)

    # -- the main thread ----------------------------------------------------------------------
    def serve(self) -> None:
        while True:
            message = self.inbox.get()
            if message is None:
                return
            request = message["request"]
            gen = int(request.generation)
            cancel = threading.Event()
            with self._lock:
                skip = gen < self._newest or gen <= self._cancelled_upto
                if not skip:
                    self._running = (gen, cancel)
            if skip:
                kind = "cancelled" if gen <= self._cancelled_upto else "superseded"
                self._error(gen, kind, f"dashboard computation {kind}")
                continue
            try:
                self.compute(request, str(message["url"]), cancel)
            except BaseException as exc:
                from gradercal.dashboard import Cancelled

                if isinstance(exc, Cancelled):
                    self._error(gen, "cancelled", str(exc) or "dashboard computation cancelled")
                elif isinstance(exc, KeyboardInterrupt | SystemExit):
                    raise
                else:
                    self._error(
                        gen,
                        "error",
                        str(exc) or type(exc).__name__,
                        type(exc).__name__,
                        traceback.format_exc(),
                    )
            finally:
                with self._lock:
                    self._running = None

    def _error(self, gen: int, kind: str, message: str, error_type: str = "", tb: str = "") -> None:
        self.send(
            {
                "type": "error",
                "generation": gen,
                "kind": kind,
                "message": message,
                "error_type": error_type,
                "traceback": tb,
            }
        )

    def _database(self, url: str) -> Any:
        if self._db is None or self._url != url:
            from gradercal.db.session import open_database

            if self._db is not None:
                self._db.dispose()
                self._db = None
            self._frames, self._reviews, self._frames_key = None, None, None
            # The window's process opened (and migrated) it already: only check here.
            self._db = open_database(url, migrate=False)
            self._url = url
        return self._db

    def compute(self, request: Any, url: str, cancel: threading.Event) -> None:
        """Compute ``request`` and send its parts, then ``done``."""
        import gc

        from gradercal.dashboard import Cancelled, compute_dashboard, filter_options
        from gradercal.ui.dashboard.data import (
            CHART_NAMES,
            SHARED_FRAMES,
            TABLES,
            prepare_table,
        )

        t0 = time.perf_counter()
        gen = int(request.generation)
        last: list[Any] = [0.0, ""]  # when and what progress was last sent

        def progress(done: int, total: int, label: str) -> None:
            now = time.perf_counter()
            if label != last[1] or now - last[0] > 0.05 or done == total:
                last[0], last[1] = now, label
                self.send(
                    {
                        "type": "progress",
                        "generation": gen,
                        "done": done,
                        "total": total,
                        "label": label,
                    }
                )
            if cancel.is_set():
                raise Cancelled("dashboard computation cancelled")

        keys: list[str] = []

        def pickled(key: str, payload: bytes) -> None:
            self.send({"type": "part", "generation": gen, "key": key, "payload": payload})
            keys.append(key)

        def part(key: str, value: Any) -> None:
            pickled(key, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

        phases: dict[str, float] = {}
        mark = [t0]

        def phase(name: str) -> None:
            now = time.perf_counter()
            phases[name] = phases.get(name, 0.0) + now - mark[0]
            mark[0] = now

        progress(0, 0, "opening the database")
        db = self._database(url)
        key = (url, str(request.benchmark))
        loaded = False
        if request.reload or self._frames is None or self._frames_key != key:
            from gradercal.db.calibrations import load_task_reviews
            from gradercal.db.repo import Repository

            # The old frames were frozen (below): unfreeze so that they can be collected.
            self._frames = None
            gc.unfreeze()
            gc.collect()
            progress(0, 0, "loading the benchmark")
            repo = Repository(db)
            self._frames = repo.load_frames(request.benchmark)
            self._reviews = load_task_reviews(repo, request.benchmark)
            self._frames_key = key
            loaded = True
            # Long-lived, millions of objects: out of the collector's sight.
            gc.freeze()
        frames = self._frames
        phase("load")
        progress(0, 0, "computing")
        extra: dict[str, Any] = {} if request.n_boot is None else {"n_boot": request.n_boot}
        dash = compute_dashboard(
            frames,
            **extra,
            processes=2,  # a forked child takes some sections on Linux (no Qt here)
            judge=request.judge,
            filters=request.filters,
            calibration=request.calibration,
            seed=request.seed,
            benchmark=request.benchmark,
            progress=progress,
            cancelled=cancel.is_set,
            reviews=self._reviews,
        )
        phase("compute")
        import dataclasses

        # One part per field: the window unpickles each in its own event-loop turn.
        for f in dataclasses.fields(dash):
            part(f"dash:{f.name}", getattr(dash, f.name))
        part("options", filter_options(frames))
        responses = frames.responses
        first = responses.drop_duplicates("task_id")
        part(
            "first_response",
            dict(zip(first["task_id"].astype(str), first["response_id"].astype(str), strict=True)),
        )
        phase("send")
        # Half of the charts are drawn (and pickled) in a forked child meanwhile, on Linux;
        # the other half here after the tables.
        charts = None
        if fork_available():
            with contextlib.suppress(ChildFailed, OSError):
                charts = ForkedCall(functools.partial(chart_parts, dash, request, CHILD_CHARTS))
        try:
            for i, (name, build) in enumerate(TABLES.items()):
                progress(i, len(TABLES), "preparing the tables")
                table = prepare_table(build(dash))
                if name in SHARED_FRAMES:  # the window has this frame already (dash:<field>)
                    table = dataclasses.replace(table, frame=None)
                part(f"table:{name}", table)
            phase("tables")
            progress(0, 0, "drawing the charts")
            mine = None if charts is None else [n for n in CHART_NAMES if n not in CHILD_CHARTS]
            for chart_key, payload in chart_parts(dash, request, mine):
                pickled(chart_key, payload)
            drawn: list[tuple[str, bytes]] = []
            if charts is not None:
                try:
                    drawn = charts.result(cancel.is_set)
                except InterruptedError:
                    raise Cancelled("dashboard computation cancelled") from None
                except ChildFailed:  # drawn here instead
                    drawn = chart_parts(dash, request, CHILD_CHARTS)
        finally:
            if charts is not None:
                charts.kill()  # no-op once its result is in
        for chart_key, payload in drawn:
            pickled(chart_key, payload)
        phase("charts")
        self.send(
            {
                "type": "done",
                "phases": phases,
                "generation": gen,
                "keys": keys,
                "seconds": time.perf_counter() - t0,
                "pid": os.getpid(),
                "qt": qt_loaded(),
                "loaded": loaded,
            }
        )


#: The charts a forked child draws while the worker prepares the tables and then draws
#: the others (on 750 tasks: ≈ 1.2 s of drawing there, ≈ 0.9 s of tables + 0.4 s here).
CHILD_CHARTS = ("pairwise", "confusion", "models", "groups:tag")


def chart_parts(
    dash: Any, request: Any, only: Collection[str] | None = None
) -> list[tuple[str, bytes]]:
    """Every chart of ``dash`` (or those in ``only``) as a pickled ``figure:<name>`` part:
    the Figure with its pixels at the window's chart size (or the text saying why there
    is no chart)."""
    from gradercal.ui.dashboard.data import NOT_PRERENDERED, build_figures, render_pixels

    out: list[tuple[str, bytes]] = []
    for name, fig in build_figures(dash, request.dark, only).items():
        pixels = None
        size = request.chart_size
        if not isinstance(fig, str) and size is not None and name not in NOT_PRERENDERED:
            pixels = render_pixels(fig, size)
        value = fig if isinstance(fig, str) else (fig, pixels)
        out.append((f"figure:{name}", pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)))
    return out


def preload() -> None:
    """Import what a computation needs (engines, scipy, scikit-learn, matplotlib)."""
    import matplotlib.backends.backend_agg
    import matplotlib.figure

    import gradercal.dashboard
    import gradercal.dashboard.charts
    import gradercal.db.repo

    gradercal.dashboard.preload()
    # matplotlib reads its font cache and sets up text rendering on the first draw
    # (≈ 0.5 s): do it now, so that neither the first dashboard nor a forked child pays it.
    figure = matplotlib.figure.Figure(figsize=(2, 1), dpi=50)
    figure.add_subplot().set_title("warm-up 0.123")
    matplotlib.backends.backend_agg.FigureCanvasAgg(figure).draw()  # type: ignore[no-untyped-call]


def main() -> int:
    """Serve the window on stdin/stdout until told to quit or stdin ends."""
    os.environ.setdefault("MPLBACKEND", "Agg")  # never a GUI backend in here
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    # Anything printed by a library goes to stderr, never into the message stream.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    inp = sys.stdin.buffer
    write_lock = threading.Lock()

    def send(message: dict[str, Any]) -> None:
        data = encode(message)
        with write_lock:
            view = memoryview(data)
            while view:
                n = out.write(view)
                view = view[n or 0 :]

    worker = Worker(send)
    send({"type": "hello", "pid": os.getpid(), "protocol": PROTOCOL, "qt": qt_loaded()})
    threading.Thread(target=worker.listen, args=(inp,), daemon=True, name="input").start()
    # Heavy imports now, while the window is still sending the first request (they are
    # paid once either way; a forked child then inherits them instead of importing).
    preload()

    try:
        worker.serve()
    except BrokenPipeError:  # the window went away mid-message
        os._exit(0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
