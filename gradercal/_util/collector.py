"""Pausing Python's cyclic garbage collector around a long, allocation-heavy step.

The steps that read a benchmark or compute a dashboard allocate hundreds of thousands of
short-lived tuples, lists and pandas objects that hold no reference cycles; the
collector, triggered by every 700 allocations, walks them again and again for nothing.
:func:`collections_paused` turns the automatic collections off inside a block (reference
counting still frees everything as usual) and restores them after — unless they were
off already (the Qt app runs its collections from a timer on its UI thread).

This module imports the standard library only.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collections_paused"]


@contextmanager
def collections_paused() -> Iterator[None]:
    """No automatic cyclic garbage collection inside the block (restored after, unless it
    was off already)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
