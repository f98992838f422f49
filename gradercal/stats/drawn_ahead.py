"""Resampling weights drawn ahead, on the second core, while the caller prepares.

A dashboard's bootstrap needs one matrix of cluster multiplicities per number of tasks it
resamples (:func:`gradercal.stats.bootstrap.resampling_weights`): the whole benchmark, each
workflow, domain and tag, the alt-test's 1,999 resamples. At 750 tasks a matrix takes
20–80 ms to draw, about 0.35 s for a whole dashboard, and that time used to fall inside
the sections, where both cores are busy. numpy's multinomial sampler runs without the
GIL, so a thread can draw those matrices while the main thread builds the verdict table
(one core idle until then).

Drawing ahead changes no number: each key ``(clusters, resamples, seed)`` is drawn exactly
as :func:`gradercal.stats.bootstrap.resampling_weights` draws it (a fresh
``numpy.random.default_rng(seed)``, the same call), only earlier and elsewhere. A key the
thread has not started when it is needed is drawn by the caller as before; a key under
way is waited for. The keys are a guess (the tasks of each group as the frames list
them); a wrong guess costs only the idle core's time.

Before a process forks, the thread is stopped (:meth:`DrawnAhead.stop` returns once the
draw under way ends): a child never starts with a thread that vanished mid-draw.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import numpy as np
import numpy.typing as npt

__all__ = ["DrawnAhead", "Key", "draw", "drawing_ahead", "drawn"]

#: ``(clusters, resamples, seed)`` of one weight matrix.
Key = tuple[int, int, int]

#: Most bytes of weights kept ahead at once (int64 matrices; 750 tasks × 1,000
#: resamples is 6 MB): a benchmark with thousands of tasks and many tags draws the rest
#: where they are needed.
MAX_BYTES = 256 * 2**20


def draw(gen: np.random.Generator, n_clusters: int, n_boot: int) -> npt.NDArray[np.int64]:
    """``n_boot`` rows of ``gen.multinomial(n_clusters, [1/n_clusters] * n_clusters)``."""
    p = np.full(n_clusters, 1.0 / n_clusters)
    return np.asarray(gen.multinomial(n_clusters, p, size=n_boot), dtype=np.int64)


class DrawnAhead:
    """Weights drawn by a background thread, in the order of the keys given to
    :meth:`start`."""

    def __init__(self) -> None:
        self._keys: list[Key] = []
        self._lock = threading.Lock()
        self._claimed: set[Key] = set()  # by the thread (under way or drawn) or a caller
        self._done: dict[Key, threading.Event] = {}
        self._arrays: dict[Key, npt.NDArray[np.int64]] = {}
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def drawn(self) -> frozenset[Key]:
        """The keys drawn so far."""
        return frozenset(self._arrays)

    def start(self, keys: Iterable[Key]) -> None:
        """Begin drawing ``keys`` in this order (duplicates and empty keys dropped); once
        only, and not after :meth:`stop`."""
        if self._thread is not None or self._stopping.is_set():
            return
        self._keys = [k for k in dict.fromkeys(keys) if k[0] >= 1 and k[1] >= 1]
        self._done = {k: threading.Event() for k in self._keys}
        if self._keys:
            self._thread = threading.Thread(target=self._run, name="gradercal-draw", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        budget = MAX_BYTES
        try:
            for key in self._keys:
                n, b, seed = key
                budget -= n * b * 8
                if self._stopping.is_set() or budget < 0:
                    return
                with self._lock:
                    if key in self._claimed:  # a caller needed it first and draws it
                        continue
                    self._claimed.add(key)
                out = draw(np.random.default_rng(seed), n, b)
                out.setflags(write=False)
                self._arrays[key] = out
                self._done[key].set()
        except MemoryError:
            return
        finally:
            for event in self._done.values():  # whatever was not drawn is drawn where needed
                event.set()

    def get(self, key: Key) -> npt.NDArray[np.int64] | None:
        """The weights of ``key`` when drawn ahead (waiting for a draw under way), None when
        the caller must draw them itself (not a key, or not begun: then never begun)."""
        event = self._done.get(key)
        if event is None:
            return None
        with self._lock:
            if key not in self._claimed:
                self._claimed.add(key)  # the thread will skip it
                return None
        event.wait()
        return self._arrays.get(key)

    def wait(self, timeout: float | None = None) -> bool:
        """Until every key is drawn, or left to the callers; False after ``timeout``."""
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    def stop(self) -> None:
        """Draw nothing more; returns when the draw under way has ended (call it before
        a fork). What was drawn stays available."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()


_CURRENT: DrawnAhead | None = None


@contextmanager
def drawing_ahead() -> Iterator[DrawnAhead]:
    """A :class:`DrawnAhead`, current for :func:`drawn` until the block ends (then
    stopped and forgotten); :meth:`DrawnAhead.start` begins the drawing."""
    global _CURRENT
    ahead = DrawnAhead()
    previous, _CURRENT = _CURRENT, ahead
    try:
        yield ahead
    finally:
        ahead.stop()
        _CURRENT = previous


def drawn(key: Key) -> npt.NDArray[np.int64] | None:
    """The current drawing's weights of ``key``, or None (see :meth:`DrawnAhead.get`)."""
    ahead = _CURRENT
    return None if ahead is None else ahead.get(key)
