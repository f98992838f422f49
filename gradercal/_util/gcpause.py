"""Pausing Python's cyclic garbage collector around bulk work that makes no cycles."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collections_paused() -> Iterator[None]:
    """No automatic cyclic garbage collection inside the block (restored after, unless it
    was off already: the Qt app runs its collections from a timer).

    Reading or importing a benchmark allocates a few hundred thousand small records
    (tuples, dicts and dataclasses of numbers and strings) that hold no reference cycles;
    the collector, triggered by every 700 allocations, walks them again and again — about
    half of ``load_frames``' time at 222k judgments, a sixth of an import's. Reference
    counting still frees everything as usual.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
