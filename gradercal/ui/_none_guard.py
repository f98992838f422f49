"""A guard against PySide6 6.12's reference-count error on ``None`` (Python < 3.12).

With PySide6 6.12.0 on Python 3.11, every wrapped Qt call that returns nothing (e.g.
``QLabel.setText``) takes one reference off Python's ``None`` without having added it.
``None`` starts with some thousands of references, so after a few thousand such calls —
about 1,300 key presses in the grading window — the interpreter aborts with "Fatal Python
error: none_dealloc". From Python 3.12 on, ``None`` is immortal and the error is harmless.

No unaffected PySide6 release is on the package index here, so the app guards itself:
on Python < 3.12 it adds 2**40 references to ``None`` once, at import. ``None`` is never
deallocated in a working interpreter anyway, so the only effect is that the stray
decrements can no longer reach zero (they would need about 10**12 calls).
"""

from __future__ import annotations

import ctypes
import sys

#: References added to ``None`` on Python < 3.12.
BALLAST = 1 << 40


def guard_none() -> bool:
    """Add :data:`BALLAST` references to ``None`` once (Python < 3.12); True if it did."""
    if sys.version_info >= (3, 12) or getattr(sys, "_gradercal_none_guard", False):
        return False
    # ob_refcnt is the first field of every object in release builds of CPython
    refcount = ctypes.c_ssize_t.from_address(id(None))
    refcount.value += BALLAST
    sys._gradercal_none_guard = True  # type: ignore[attr-defined]
    return True
