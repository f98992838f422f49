"""The dashboard's worker process: ``python -m gradercal.ui.dashboard.worker``.

The coordinator window (:mod:`gradercal.ui.dashboard.qt_process`) starts this module as a
child process and talks to it over its standard input and output. The child opens the
database by URL, loads the benchmark's frames once and keeps them across computations
(a changed filter recomputes from the cached frames), runs
:func:`gradercal.dashboard.compute_dashboard`, prepares the tables and draws the charts,
and sends everything back. The window's process so never holds the large frames nor does
the pandas work, so neither its garbage collector nor the GIL stall its event loop.

It imports no Qt: gradercal.db, pandas and (for the charts) matplotlib's Agg backend.

Protocol (version :data:`~gradercal.ui.dashboard.protocol.PROTOCOL`): each message is a
pickled dict framed by an 8-byte big-endian length, one of the typed messages of
:mod:`gradercal.ui.dashboard.protocol` (:func:`encode`, :class:`FrameReader`).

Window → worker (``op``):
    ``compute``: ``request`` (:class:`gradercal.ui.dashboard.data.Request`, or a
        :class:`~gradercal.ui.dashboard.results.PickledRequest` of one), ``url``,
        optionally ``have`` ({part: digest} of the result the window shows: equal parts
        are not sent again) and ``expect`` (the :data:`~gradercal.ui.dashboard.results.Hypothesis`
        just saved, so that a prefetch computing it is not cancelled). A newer ``compute``
        cancels the one running, and any prefetch of another hypothesis.
    ``prefetch``: ``request``, ``url``, ``hypotheses`` — compute, while idle, the dashboard
        as it would be with each hypothetical adjudication, into the result cache (nothing
        is sent but ``prefetched``); and/or ``requests``: other requests on the data as it
        is (the filter sets the window may ask for next), each in a forked child at a lower
        priority. A newer ``prefetch`` replaces the queued ones; a ``compute`` drops
        them and stops the one running unless it asks for that very result.
    ``warm``: ``url``, ``benchmark`` — open the database and load the frames now.
    ``soon``: a ``compute`` follows once the window is built: wait for it (up to
        :data:`SOON_WAIT` seconds) before the heavy imports, as it may be answered from
        the disk without them. With ``url`` empty (the window does not know its database
        yet: ``launch_early``), import what the headline needs meanwhile.
    ``cancel``: ``generation`` — stop that computation (and any older one).
    ``quit``: exit now. End of input (the window's process gone) exits too.

Before every computation the worker compares the database's fingerprint
(``Repository.data_revision``) with that of its frames and reads again only what changed:
the adjudications, the task reviews or the acceptance rounds alone when only they changed, else
everything. Results are kept by what was asked and the data they were computed on
(:mod:`gradercal.ui.dashboard.results`): the same request on the same data is answered
from there, part by part. Each result sent is also written to disk
(:mod:`gradercal.ui.dashboard.disk_cache`) under the request, the database's fingerprint
and the code: a later session asking it on the same data reads the file — the first
request of a new worker is looked up there before the heavy imports, which follow (and
then the frames' load) while it is idle.

Worker → window (``type``):
    ``hello``: ``pid``, ``protocol``, ``qt`` (whether any Qt module is loaded: never).
    ``progress``: ``generation``, ``done``, ``total``, ``label`` (during the computation:
        the section just finished, :func:`gradercal.dashboard.compute_dashboard`'s labels).
    ``headline``: ``generation``, ``payload`` (a pickled
        :func:`~gradercal.dashboard.headline_of` dict: the overview, the overall agreement,
        the judges, the alt-test, the notes) — sent as soon as the headline is computed,
        before the other sections and every ``part`` (not for a result kept in memory or
        on disk: its parts follow at once).
    ``part``: ``generation``, ``key`` (a :class:`~gradercal.ui.dashboard.protocol.Part`),
        ``digest``, ``payload`` (bytes: a pickle, unpickled by the window one part per
        event-loop turn): ``Part.dash(<field>)`` per field of the Dashboard, ``OPTIONS``,
        ``FIRST_RESPONSE``, ``Part.table(<name>)`` (without its frame when that is a
        Dashboard field: :data:`~gradercal.ui.dashboard.data.SHARED_FRAMES`),
        ``Part.figure(<name>)`` (a Figure and its
        :class:`~gradercal.ui.dashboard.data.Pixels`, or a str saying why none).
    ``done``: ``generation``, ``keys`` (every part of the result), ``reused`` (those not
        sent: the window has them, by ``have``), ``seconds``, ``phases`` (seconds spent
        opening/loading, computing, preparing tables, drawing charts), ``pid``, ``qt``,
        ``loaded`` (whether the frames were read from the database for this request),
        ``refreshed`` (the parts of the data read again), ``cached`` (answered from the
        result cache: nothing computed), ``disk`` (answered from the cache on disk,
        :mod:`gradercal.ui.dashboard.disk_cache`), ``preloaded`` (the heavy imports were
        done when it was sent), ``imported`` (the parts of them done ahead: ``first``,
        what the headline needs; ``charts``, matplotlib).
    ``prefetched``: ``hypothesis`` (None for one of ``requests``), ``request`` (that one),
        ``cached`` (it was computed already), ``seconds``.
    ``error``: ``generation``, ``kind`` (``cancelled``, ``superseded`` or ``error``),
        ``message``, ``error_type``, ``traceback``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, BinaryIO

from gradercal._util.forked import ChildFailed, ForkedCall, fork_available
from gradercal.ui.dashboard.protocol import (
    MAX_MESSAGE,
    PROTOCOL,
    Compute,
    FrameReader,
    Part,
    PartKind,
    ToWindow,
    ToWorker,
    encode,
    read_message,
)

if TYPE_CHECKING:
    from gradercal.dashboard import Dashboard, DashboardData
    from gradercal.db.session import Database
    from gradercal.ui.dashboard.data import Request
    from gradercal.ui.dashboard.disk_cache import DiskCache
    from gradercal.ui.dashboard.results import Hypothesis, PickledRequest, StoredResult

#: (the framing lives in :mod:`gradercal.ui.dashboard.protocol`; importable from here too)
__all__ = [
    "MAX_MESSAGE",
    "PROTOCOL",
    "FrameReader",
    "Worker",
    "chart_parts",
    "encode",
    "main",
    "read_message",
]


def _hypothesis(h: Hypothesis | None) -> Hypothesis | None:
    """``h`` as a tuple (the window may send a list)."""
    return None if h is None else (h[0], h[1], h[2], h[3])


def qt_loaded() -> bool:
    """Whether any Qt binding is imported in this process (the worker must stay Qt-free)."""
    return any(m.split(".", 1)[0] in ("PySide6", "PyQt6", "PyQt5", "PySide2") for m in sys.modules)


class _Superseded(Exception):
    """A newer request arrived before this one started."""


#: ``_running``'s generation while a prefetch runs.
_PREFETCH = -1
#: How long a new worker waits for its first request before the heavy imports (seconds),
#: and how long when the window said one comes ``soon`` (it is being built).
FIRST_REQUEST_WAIT = 0.3
SOON_WAIT = 5.0
#: Seconds without a request after which the result waiting to go to disk is written.
WRITE_WHEN_IDLE = 20.0
#: The niceness of a filter set computed ahead (a guess at the window's next request).
GUESS_NICENESS = 10


class Worker:
    """The child's state: the open database, the cached frames and results, the running
    request."""

    def __init__(self, send: Callable[[ToWindow], None], use_disk: bool = True) -> None:
        from gradercal.ui.dashboard.disk_cache import DiskCache
        from gradercal.ui.dashboard.results import ResultCache

        disk_cache = DiskCache.from_env

        self.send = send
        self.inbox: queue.Queue[ToWorker | None] = queue.Queue()
        self._lock = threading.Lock()
        #: generation of the request being computed (``_PREFETCH`` for a prefetch), its
        #: cancel flag, and for a prefetch its (request key, hypothesis)
        self._running: tuple[int, threading.Event, tuple[str, Hypothesis | None] | None] | None = (
            None
        )
        #: the newest generation received (older queued requests are skipped)
        self._newest = 0
        self._cancelled_upto = 0
        self._db: Database | None = None
        self._url: str | None = None
        #: the benchmark's data (:func:`gradercal.db.dashboard_data.load_dashboard_data`)
        self._data: DashboardData | None = None
        self._frames_key: tuple[str, str] | None = None
        #: the database's fingerprint of the frames (read before them)
        self._revision: dict[str, str] = {}
        #: whether frames were frozen out of the collector's sight (``gc.freeze``)
        self._frozen = False
        self.results = ResultCache()
        #: dashboards kept between sessions (None: off; :mod:`gradercal.ui.dashboard.disk_cache`)
        self.disk: DiskCache | None = disk_cache() if use_disk else None
        #: disk keys written by this process (a result is written once), the result
        #: waiting to be written (key, result, other keys wanting the same parts) and the
        #: lock held while one is written
        self._written: set[str] = set()
        self._unwritten: tuple[str, StoredResult, list[str]] | None = None
        self._writing = threading.Lock()
        #: whether a request arrived (the first is looked up on disk before the imports)
        self._asked = False
        #: (url, benchmark, fingerprint, when) read on ``soon``, for the first lookup
        self._early: tuple[str, str | None, dict[str, str], float] | None = None
        #: the heavy imports, until they run (:meth:`serve`), and the parts of them run
        #: ahead ("first": the headline's, "charts": matplotlib's)
        self._preload: Callable[[], None] | None = None
        self._imported: set[str] = set()
        #: the prefetches waiting: (url, [(request, hypothetical adjudication or None)])
        self._prefetch: (
            tuple[str, list[tuple[PickledRequest | Request, Hypothesis | None]]] | None
        ) = None
        #: computations made (full dashboards, prefetches included), for the tests
        self.computations = 0

    # -- the input thread ---------------------------------------------------------------------
    def listen(self, stream: BinaryIO) -> None:
        """Read messages until the end of input; runs in its own thread."""
        try:
            while True:
                message = read_message(stream)
                if message is None or not self.receive(message):
                    break
        except Exception:  # a broken pipe or stream: nothing more will come
            traceback.print_exc()
        # The window closed or went away: leave at once, once the result waiting to go to
        # disk is written (a half-written file would only be thrown away).
        with contextlib.suppress(Exception):
            self.flush_disk()
        sys.stderr.flush()
        os._exit(0)

    def receive(self, message: ToWorker) -> bool:
        """Take one message from the window (on the input thread): cancel or queue what it
        asks. False: ``quit``."""
        from gradercal.ui.dashboard.results import request_key

        if message["op"] == "quit":
            return False
        with self._lock:
            if message["op"] == "cancel":
                gen = int(message["generation"])
                self._cancelled_upto = max(self._cancelled_upto, gen)
                if self._running is not None and self._running[0] <= gen:
                    self._running[1].set()
            elif message["op"] == "compute":
                gen = int(message["request"].generation)
                self._newest = max(self._newest, gen)
                self._prefetch = None  # computed on data about to change
                running = self._running
                if running is not None and running[0] == _PREFETCH:
                    expect = message.get("expect")
                    wanted = (request_key(message["request"]), _hypothesis(expect))
                    if running[2] != wanted:
                        running[1].set()  # not the result wanted now
                elif running is not None and running[0] < gen:
                    running[1].set()  # superseded
                self.inbox.put(message)
            elif message["op"] == "prefetch":
                jobs: list[tuple[PickledRequest | Request, Hypothesis | None]] = [
                    (message["request"], _hypothesis(h)) for h in message.get("hypotheses", [])
                ]
                jobs += [(r, None) for r in message.get("requests", [])]
                self._prefetch = (str(message["url"]), jobs)
                running = self._running
                urgent = any(h is not None for _r, h in jobs)
                if urgent and running is not None and running[0] == _PREFETCH:
                    self._give_way(running)  # the verdicts of a case before a guess
                self.inbox.put({"op": "wake"})
            elif message["op"] in ("warm", "soon"):
                self.inbox.put(message)
        return True

    @staticmethod
    def _give_way(
        running: tuple[int, threading.Event, tuple[str, Hypothesis | None] | None],
    ) -> None:
        """Stop ``running`` (a prefetch) if it computes a guessed filter set."""
        if running[2] is not None and running[2][1] is None:
            running[1].set()

    # -- the main thread ----------------------------------------------------------------------
    def serve(self, preload: Callable[[], None] | None = None) -> None:
        """Handle the messages the input thread queues until ``None``. ``preload`` (the
        heavy imports) runs first — or, with a cache on disk, after the first request when
        it comes at once: that one may be answered from the disk without them."""
        self._preload = preload
        wait = FIRST_REQUEST_WAIT
        while True:
            message: ToWorker | None
            if self._preload is not None and self.disk is not None and not self._asked:
                try:
                    message = self.inbox.get(timeout=wait)
                except queue.Empty:
                    self._preloaded()
                    continue
                if message is not None and message["op"] == "soon":
                    wait = SOON_WAIT  # the window is still being built: wait for it,
                    self._read_ahead(message)  # reading what the lookup needs meanwhile
                    continue
            else:
                if not (self._imported and not self.inbox.empty()):
                    # The rest of the imports (those the headline did not need: the
                    # calibration's scikit-learn) while idle — not ahead of a request
                    # waiting: a forked child imports what it needs.
                    self._preloaded()
                if self._unwritten is not None:
                    try:
                        message = self.inbox.get(timeout=WRITE_WHEN_IDLE)
                    except queue.Empty:
                        self.flush_disk()
                        continue
                else:
                    message = self.inbox.get()
            self._asked = True
            if message is None:
                return
            if message["op"] == "wake":
                self._preloaded()  # inherited by the prefetches' forked children
                self._run_prefetches()
                continue
            if message["op"] == "warm":
                try:
                    self._warm(str(message["url"]), message["benchmark"])
                except Exception:  # the first computation will say what is wrong
                    traceback.print_exc()
                continue
            if message["op"] != "compute":  # "soon": too late to matter, imports done
                continue
            self._serve_compute(message)

    def _serve_compute(self, message: Compute) -> None:
        """Compute what ``message`` asks unless a newer request or a cancel came first;
        any error goes back to the window as an ``error`` message."""
        request = message["request"]
        gen = int(request.generation)
        cancel = threading.Event()
        with self._lock:
            skip = gen < self._newest or gen <= self._cancelled_upto
            if not skip:
                self._running = (gen, cancel, None)
        if skip:
            kind = "cancelled" if gen <= self._cancelled_upto else "superseded"
            self._error(gen, kind, f"dashboard computation {kind}")
            return
        try:
            self.compute(request, str(message["url"]), cancel, message.get("have") or {})
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

    def _preloaded(self) -> None:
        """Run the pending heavy imports, if any (once)."""
        preload, self._preload = self._preload, None
        if preload is not None:
            preload()

    def _preloaded_first(self) -> None:
        """While the heavy imports are pending: those the headline needs
        (:func:`preload_first`); the rest wait for the headline or for idle time."""
        if self._preload is not None and "first" not in self._imported:
            self._imported.add("first")
            preload_first()

    def _preloaded_charts(self) -> None:
        """While the heavy imports are pending: matplotlib (:func:`preload_charts`)."""
        if self._preload is not None and "charts" not in self._imported:
            self._imported.add("charts")
            preload_charts()

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

    def _database(self, url: str) -> Database:
        if self._db is None or self._url != url:
            from gradercal.db.session import open_database

            if self._db is not None:
                self._db.dispose()
                self._db = None
            self._data, self._frames_key = None, None
            self._revision = {}
            # The window's process opened (and migrated) it already: only check here.
            self._db = open_database(url, migrate=False)
            self._url = url
        return self._db

    def _warm(
        self, url: str, benchmark: str | None, revision: dict[str, str] | None = None
    ) -> None:
        """Open the database and load the frames before the first request (``revision``:
        its fingerprint, when just read)."""
        db = self._database(url)
        self._refresh(benchmark, False, url, db, None, revision)

    def _loaded(self) -> DashboardData:
        """The data (read by :meth:`_refresh`)."""
        if self._data is None:
            raise RuntimeError("the dashboard's data is not loaded")
        return self._data

    def _refresh(
        self,
        benchmark: str | None,
        reload: bool,
        url: str,
        db: Database,
        progress: Callable[[int, int, str], None] | None,
        revision: dict[str, str] | None = None,
    ) -> tuple[bool, list[str]]:
        """Bring the data up to the database's: ``(loaded, refreshed)`` — whether
        everything was read (always with ``reload``), and which parts of the data were
        (none: unchanged). ``revision``: the database's fingerprint, when just read."""
        import gc

        from gradercal.db.dashboard_data import load_dashboard_data, refresh_dashboard_data
        from gradercal.db.repo import Repository

        repo = Repository(db)
        key = (url, str(benchmark))
        full = reload or self._data is None or self._frames_key != key
        # The fingerprint is read before the data: a change in between shows next time.
        if revision is None:
            revision = repo.data_revision(benchmark, self._revision)
        changed = [k for k, v in revision.items() if self._revision.get(k) != v]
        if not full and not changed:
            return False, []
        if not full and self._data is not None:
            refreshed = refresh_dashboard_data(self._data, repo, benchmark, changed)
            if refreshed is not None:
                self._data = refreshed
                self._revision = revision
                return False, changed
        self._data = None
        if self._frozen:
            # Old frames were frozen (below): unfreeze so that they can be collected. (Not
            # before the first read: nothing is frozen yet, and a full collection of the
            # modules just imported takes 0.2–0.3 s for ~2,000 objects of import garbage.)
            gc.unfreeze()
            gc.collect()
            self._frozen = False
        if progress is not None:
            progress(0, 0, "loading the benchmark")
        self._data = load_dashboard_data(repo, benchmark)
        self._frames_key = key
        self._revision = revision
        # Long-lived, millions of objects: out of the collector's sight.
        gc.freeze()
        self._frozen = True
        return True, list(revision)

    def compute(
        self,
        request: PickledRequest | Request,
        url: str,
        cancel: threading.Event,
        have: dict[Part, bytes] | None = None,
    ) -> None:
        """Compute ``request`` (or find it among the results kept) and send the parts the
        window does not ``have``, then ``done``."""
        from gradercal.ui.dashboard.results import PickledRequest, result_key

        have = have or {}
        t0 = time.perf_counter()
        gen = int(request.generation)
        last: list[tuple[float, str]] = [(0.0, "")]  # when and what progress was last sent

        def progress(done: int, total: int, label: str) -> None:
            now = time.perf_counter()
            if label != last[0][1] or now - last[0][0] > 0.05 or done == total:
                last[0] = (now, label)
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
                from gradercal.dashboard import Cancelled

                raise Cancelled("dashboard computation cancelled")

        keys: list[Part] = []
        reused: list[Part] = []

        def emit(key: Part, payload: bytes, dig: bytes) -> None:
            keys.append(key)
            if have.get(key) == dig:
                reused.append(key)
                return
            self.send(
                {"type": "part", "generation": gen, "key": key, "digest": dig, "payload": payload}
            )

        phases: dict[str, float] = {}
        mark = [t0]

        def phase(name: str) -> None:
            now = time.perf_counter()
            phases[name] = phases.get(name, 0.0) + now - mark[0]
            mark[0] = now

        progress(0, 0, "opening the database")
        db = self._database(url)
        revision, dkey, stored = self._from_disk(request, url, db)
        on_disk = cached = stored is not None
        loaded, refreshed = False, list[str]()
        if stored is not None:  # the frames are brought up to date when idle
            phase("disk")
            for key, payload, dig in stored.parts:
                emit(key, payload, dig)
            phase("cache")
            if self._data is None or self._revision != revision:
                self.inbox.put({"op": "warm", "url": url, "benchmark": request.benchmark})
        else:
            self._preloaded_first()  # not found on disk: the imports are needed now
            if isinstance(request, PickledRequest):
                request = request.load()
            loaded, refreshed = self._refresh(
                request.benchmark, request.reload, url, db, progress, revision
            )
            phase("load")
            data = self._loaded()
            rkey = result_key(request, self._revision, data.frames.adjudications)
            stored = self.results.get(rkey)
            cached = stored is not None
            if stored is None:

                def headline(figures: dict[str, object]) -> None:
                    payload = pickle.dumps(figures, protocol=pickle.HIGHEST_PROTOCOL)
                    self.send({"type": "headline", "generation": gen, "payload": payload})
                    # the rest of the imports (matplotlib for the charts, scikit-learn
                    # with its scipy.stats) while the rest computes: a filter change asked once
                    # the dashboard is complete then waits for none of them
                    self._preloaded()

                stored = self._produce(request, data, progress, cancel, emit, phase, headline)
                self.results.put(rkey, stored)
            else:
                for key, payload, dig in stored.parts:
                    emit(key, payload, dig)
                phase("cache")
        # What a window opens with (no filter) is kept for the next session: written when
        # the worker is idle or about to exit, the newest only (each adjudication makes a
        # new result; only the last is worth a file). Set before ``done``, so that a
        # window closing on it finds it.
        if (
            dkey is not None
            and not on_disk
            and not isinstance(request, PickledRequest)
            and request.filters.is_empty()
        ):
            aliases = self._aliases(request, url, revision, stored)
            with self._writing:
                self._unwritten = (dkey, stored, aliases)
        self.send(
            {
                "type": "done",
                "phases": phases,
                "generation": gen,
                "keys": keys,
                "reused": reused,
                "seconds": time.perf_counter() - t0,
                "pid": os.getpid(),
                "qt": qt_loaded(),
                "loaded": loaded,
                "refreshed": refreshed,
                "cached": cached,
                "disk": on_disk,
                "preloaded": self._preload is None,
                # the parts of the imports run ahead ("first": the headline's)
                "imported": sorted(self._imported),
            }
        )

    def flush_disk(self) -> None:
        """Write the result waiting to go to disk, if any (when idle, and before exiting)."""
        with self._writing:
            waiting, self._unwritten = self._unwritten, None
            if waiting is None or self.disk is None or waiting[0] in self._written:
                return
            key, stored, aliases = waiting
            if self.disk.put(key, stored, aliases) is not None:
                self._written.update((key, *aliases))

    @staticmethod
    def _aliases(
        request: PickledRequest | Request,
        url: str,
        revision: dict[str, str] | None,
        stored: StoredResult,
    ) -> list[str]:
        """Other disk keys that want the very parts of ``stored``: asked without a judge
        (``judge`` None: the one with the most verdicts), the same request naming the
        judge it resolved to. A window's first open asks without one, then remembers that
        judge and asks with it from then on: its first reopen reads this file."""
        import dataclasses

        from gradercal.ui.dashboard.data import Request
        from gradercal.ui.dashboard.disk_cache import disk_key

        if not isinstance(request, Request) or request.judge is not None or revision is None:
            return []
        overview = next((p for k, p, _d in stored.parts if k == Part.dash("overview")), None)
        judge = None if overview is None else pickle.loads(overview).get("primary_judge")
        if not isinstance(judge, str):
            return []
        # compute_dashboard(judge=None) is compute_dashboard(judge=<its primary judge>)
        return [disk_key(dataclasses.replace(request, judge=judge), url, revision)]

    def _read_ahead(self, message: ToWorker) -> None:
        """On ``soon``: open the database and read its fingerprint (and hash the code)
        before the request comes, for its lookup on disk."""
        if self.disk is None or message["op"] != "soon":
            return
        if not message["url"]:
            # Started before the window knew its database (``launch_early``): what the
            # headline needs is imported while the window imports and builds itself
            # (a result on disk needs pandas to be read too).
            self._preloaded_first()
            return
        from gradercal.db.repo import Repository
        from gradercal.ui.dashboard.disk_cache import code_fingerprint, data_key

        url, benchmark = str(message["url"]), message["benchmark"]
        try:
            revision = Repository(self._database(url)).data_revision(benchmark)
            code_fingerprint()
            kept = self.disk.has_data(data_key(url, revision))
        except Exception:  # the request will say what is wrong
            traceback.print_exc()
            return
        self._early = (url, benchmark, revision, time.monotonic())
        if not kept:
            # Nothing computed on this data: whatever is asked will be computed, so
            # import and load now, while the window is still being built — what the
            # headline needs only: the rest follows once the headline is sent.
            self._preloaded_first()
            with contextlib.suppress(Exception):
                self._warm(url, benchmark, revision)

    def _from_disk(
        self, request: PickledRequest | Request, url: str, db: Database
    ) -> tuple[dict[str, str] | None, str | None, StoredResult | None]:
        """``(revision, key, result)``: the database's fingerprint, the disk key of
        ``request`` on it and the result kept there (None: absent, or no cache on disk,
        then the key and revision are None too)."""
        if self.disk is None:
            return None, None, None
        from gradercal.db.repo import Repository
        from gradercal.ui.dashboard.disk_cache import disk_key

        early, self._early = self._early, None
        fresh = early is not None and time.monotonic() - early[3] < SOON_WAIT
        if early is not None and fresh and early[:2] == (url, request.benchmark):
            revision = early[2]  # read while the window was being built
        else:
            # the judgments' digest read for the frames is kept while their stamps hold
            revision = Repository(db).data_revision(request.benchmark, self._revision)
        key = disk_key(request, url, revision)
        return revision, key, self.disk.get(key)

    def _run_prefetches(self) -> None:
        """Compute the queued hypotheses one by one while no request waits."""
        from gradercal.dashboard import Cancelled
        from gradercal.ui.dashboard.results import request_key

        while True:
            with self._lock:
                job = self._prefetch
                if job is None or not self.inbox.empty():
                    return  # nothing to do, or a request goes first
                url, jobs = job
                if not jobs:
                    self._prefetch = None
                    return
                request, hypothesis = jobs[0]
                self._prefetch = (url, jobs[1:])
                cancel = threading.Event()
                self._running = (_PREFETCH, cancel, (request_key(request), hypothesis))
            try:
                self.prefetch(request, url, hypothesis, cancel)
            except Cancelled:
                pass
            except Exception:  # a prefetch is only ever a head start
                traceback.print_exc()
            finally:
                with self._lock:
                    self._running = None

    def prefetch(
        self,
        request: PickledRequest | Request,
        url: str,
        hypothesis: Hypothesis | None,
        cancel: threading.Event,
    ) -> None:
        """Compute ``request`` as it would be with the adjudication ``hypothesis`` saved —
        or, ``hypothesis`` None, as the data is (another filter set the window may ask
        for next) — into the result cache; sends ``prefetched``.

        A filter set is a guess: on Linux it is computed in a forked child at a lower
        priority (``nice`` :data:`GUESS_NICENESS`), so that it yields the cores to
        anything else, the window included; an adjudication's verdict is about to be
        saved, and is computed here."""
        import dataclasses

        from gradercal.dashboard import Cancelled
        from gradercal.ui.dashboard.results import PickledRequest, result_key, with_adjudication

        t0 = time.perf_counter()

        def progress(_done: int, _total: int, _label: str) -> None:
            if cancel.is_set():
                raise Cancelled("prefetch cancelled")

        if isinstance(request, PickledRequest):
            request = request.load()
        db = self._database(url)
        self._refresh(request.benchmark, request.reload, url, db, None)
        data = self._loaded()
        adjudications = data.frames.adjudications
        if hypothesis is not None:
            adjudications = with_adjudication(adjudications, hypothesis)
        rkey = result_key(request, self._revision, adjudications)
        cached = rkey in self.results
        if not cached:
            frames = dataclasses.replace(data.frames, adjudications=adjudications)
            data = dataclasses.replace(data, frames=frames)
            if hypothesis is None and fork_available():
                stored = self._produce_niced(request, data, cancel)
            else:
                stored = self._produce(request, data, progress, cancel, None, None)
            self.results.put(rkey, stored)
        self.send(
            {
                "type": "prefetched",
                "hypothesis": hypothesis,
                "request": None if hypothesis is not None else request,
                "cached": cached,
                "seconds": time.perf_counter() - t0,
            }
        )

    def _produce_niced(
        self, request: Request, data: DashboardData, cancel: threading.Event
    ) -> StoredResult:
        """:meth:`_produce` in a forked child at a lower priority (killed if cancelled)."""
        from gradercal.dashboard import Cancelled

        def produce() -> StoredResult:
            with contextlib.suppress(OSError):
                os.nice(GUESS_NICENESS)
            return self._produce(request, data, lambda *_a: None, threading.Event(), None, None)

        child = ForkedCall(produce)
        try:
            return child.result(cancel.is_set)
        except InterruptedError:
            raise Cancelled("prefetch cancelled") from None
        finally:
            child.kill()  # no-op once its result is in

    def _produce(
        self,
        request: Request,
        data: DashboardData,
        progress: Callable[[int, int, str], None],
        cancel: threading.Event,
        emit: Callable[[Part, bytes, bytes], None] | None,
        phase: Callable[[str], None] | None,
        headline: Callable[[dict[str, object]], None] | None = None,
    ) -> StoredResult:
        """Compute the dashboard of ``data``, prepare its tables and draw its charts:
        the :class:`~gradercal.ui.dashboard.results.StoredResult`, each part passed to
        ``emit`` as soon as it is made; ``headline`` gets the headline as soon as it is
        computed (``compute_dashboard(headline=…)``), before the other sections."""
        import dataclasses

        from gradercal.dashboard import (
            Cancelled,
            DashboardInputs,
            compute_dashboard,
            filter_options,
        )
        from gradercal.ui.dashboard.data import CHART_NAMES, SHARED_FRAMES, TABLES, prepare_table
        from gradercal.ui.dashboard.results import StoredResult, digest

        t0 = time.perf_counter()
        stored = StoredResult()

        def pickled(key: Part, payload: bytes, dig: bytes | None = None) -> None:
            dig = digest(payload) if dig is None else dig
            stored.parts.append((key, payload, dig))
            if emit is not None:
                emit(key, payload, dig)

        def part(key: Part, value: object) -> None:
            pickled(key, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

        def step(name: str) -> None:
            if phase is not None:
                phase(name)

        self.computations += 1
        progress(0, 0, "computing")
        dash = compute_dashboard(
            DashboardInputs(data, request.dashboard_request()),
            processes=2,  # a forked child takes some sections on Linux (no Qt here)
            progress=progress,
            cancelled=cancel.is_set,
            headline=headline,
        )
        self._preloaded_charts()  # (no headline: cancelled before, or an error)
        step("compute")
        # Half of the charts are drawn (and pickled) in a forked child meanwhile, on Linux,
        # from now on; the other half here after the parts and the tables.
        charts = None
        if fork_available():
            with contextlib.suppress(ChildFailed, OSError):
                charts = ForkedCall(functools.partial(chart_parts, dash, request, CHILD_CHARTS))
        try:
            # One part per field: the window unpickles each in its own event-loop turn.
            for f in dataclasses.fields(dash):
                part(Part.dash(f.name), getattr(dash, f.name))
            part(Part(PartKind.OPTIONS), filter_options(data.frames))
            first = data.frames.responses.drop_duplicates("task_id")
            part(
                Part(PartKind.FIRST_RESPONSE),
                dict(
                    zip(first["task_id"].astype(str), first["response_id"].astype(str), strict=True)
                ),
            )
            step("send")
            for i, (name, build) in enumerate(TABLES.items()):
                progress(i, len(TABLES), "preparing the tables")
                table = prepare_table(build(dash))
                if name in SHARED_FRAMES:  # the window has this frame already (dash:<field>)
                    table = dataclasses.replace(table, frame=None)
                part(Part.table(name), table)
            step("tables")
            progress(0, 0, "drawing the charts")
            mine = None if charts is None else [n for n in CHART_NAMES if n not in CHILD_CHARTS]
            for chart_key, payload, dig in chart_parts(dash, request, mine):
                pickled(chart_key, payload, dig)
            drawn: list[tuple[Part, bytes, bytes]] = []
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
        for chart_key, payload, dig in drawn:
            pickled(chart_key, payload, dig)
        step("charts")
        stored.seconds = time.perf_counter() - t0
        return stored


#: The charts a forked child draws while the worker sends the dashboard's parts, prepares
#: the tables and then draws the others (on 750 tasks at a load of 3: ≈ 1.6 s of drawing
#: there; ≈ 0.3 s of parts, 0.35 s of tables and 1.0 s of drawing here).
CHILD_CHARTS = ("pairwise", "models", "groups:tag")


def chart_parts(
    dash: Dashboard, request: Request, only: Collection[str] | None = None
) -> list[tuple[Part, bytes, bytes]]:
    """Every chart of ``dash`` (or those in ``only``) as a pickled ``Part.figure(name)``:
    the Figure with its pixels at the window's chart size (or the text saying why there
    is no chart), with its digest.

    A Figure's pickle differs between two drawings of the same chart (matplotlib keys
    transforms by object id), so a drawn chart's digest is that of its pixels: equal
    pixels, the same chart on screen. A chart without pixels gets its pickle's digest
    (it is then sent again each time)."""
    from gradercal.ui.dashboard.data import NOT_PRERENDERED, build_figures, render_pixels
    from gradercal.ui.dashboard.results import digest

    out: list[tuple[Part, bytes, bytes]] = []
    for name, fig in build_figures(dash, request.dark, only).items():
        pixels = None
        size = request.chart_size
        if not isinstance(fig, str) and size is not None and name not in NOT_PRERENDERED:
            pixels = render_pixels(fig, size)
        value = fig if isinstance(fig, str) else (fig, pixels)
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        if pixels is None:
            dig = digest(payload)
        else:
            drawn = f"{pixels.width}x{pixels.height}@{pixels.dpi}".encode()
            dig = digest(b"pixels " + drawn + b" " + pixels.rgba)
        out.append((Part.figure(name), payload, dig))
    return out


#: What the headline of a computation needs (:func:`preload_first`): the engines of the
#: overview, the expert and judge agreement and the alt-test, with krippendorff — not
#: scipy.stats (≈ 0.5 s; only the correlations of scales and the alt-test's exact test
#: need it: the t quantiles come from scipy.special), scikit-learn (the
#: calibration, in the forked child) nor matplotlib (the charts).
HEADLINE_MODULES = (
    "gradercal.db.repo",
    "gradercal.dashboard",
    "gradercal.analysis.agreement",
    "gradercal.analysis.alt_test",
    "gradercal.analysis.verdicts",
    "gradercal.stats.bootstrap",
    "gradercal.stats.coefficients",
    "krippendorff",
)


def preload_first() -> None:
    """Import what a computation needs up to its headline (:data:`HEADLINE_MODULES`):
    the first numbers do not wait for scikit-learn and matplotlib (≈ 1 s of imports on
    a quiet 2-core machine), which :func:`preload` adds."""
    import importlib

    for name in HEADLINE_MODULES:
        importlib.import_module(name)


def preload_charts() -> None:
    """Import matplotlib and draw once (its font cache and text set-up, ≈ 0.5 s)."""
    import matplotlib.backends.backend_agg
    import matplotlib.figure

    import gradercal.dashboard.charts  # noqa: F401

    # matplotlib reads its font cache and sets up text rendering on the first draw
    # (≈ 0.5 s): do it now, so that neither the first dashboard nor a forked child pays it.
    figure = matplotlib.figure.Figure(figsize=(2, 1), dpi=50)
    figure.add_subplot().set_title("warm-up 0.123")
    matplotlib.backends.backend_agg.FigureCanvasAgg(figure).draw()  # type: ignore[no-untyped-call]


def preload() -> None:
    """Import what a computation needs (engines, scipy, scikit-learn, matplotlib)."""
    import gradercal.dashboard

    preload_first()
    gradercal.dashboard.preload()
    preload_charts()


def main() -> int:
    """Serve the window on stdin/stdout until told to quit or stdin ends."""
    os.environ.setdefault("MPLBACKEND", "Agg")  # never a GUI backend in here
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    # Anything printed by a library goes to stderr, never into the message stream.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    inp = sys.stdin.buffer
    write_lock = threading.Lock()

    def send(message: ToWindow) -> None:
        data = encode(message)
        with write_lock:
            view = memoryview(data)
            while view:
                n = out.write(view)
                view = view[n or 0 :]

    worker = Worker(send)
    send({"type": "hello", "pid": os.getpid(), "protocol": PROTOCOL, "qt": qt_loaded()})
    threading.Thread(target=worker.listen, args=(inp,), daemon=True, name="input").start()
    # Every request needs the database layer (one answered from the disk too: its lookup
    # reads the database's fingerprint): imported now, while the window that started this
    # process opens the database and builds itself (0.3 s; #33).
    import gradercal.db.repo
    import gradercal.ui.dashboard.disk_cache  # noqa: F401

    # Heavy imports before anything is computed (paid once either way; a forked child
    # then inherits them instead of importing) — after the first request if that comes
    # at once and the result is on disk.
    try:
        worker.serve(preload)
    except BrokenPipeError:  # the window went away mid-message
        os._exit(0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
