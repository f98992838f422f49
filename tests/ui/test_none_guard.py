"""PySide6 6.12 on Python 3.11 takes a reference off None per void Qt call; without the
guard, a long grading session aborts the interpreter ("none_dealloc")."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CALLS = 40_000  # None starts with a few thousand references: far more than enough to crash

SCRIPT = f"""
import sys
import gradercal.ui  # the guard
from PySide6.QtWidgets import QApplication, QLabel
app = QApplication([])
label = QLabel()
for i in range({CALLS}):
    label.setText(str(i))
print("alive", flush=True)
"""


def test_many_void_qt_calls_do_not_abort_the_interpreter() -> None:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "alive"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="None is immortal from Python 3.12")
def test_the_guard_is_applied_once() -> None:
    import gradercal.ui  # noqa: F401  (applies it)
    from gradercal.ui._none_guard import guard_none

    before = sys.getrefcount(None)
    assert guard_none() is False  # already applied at import
    assert abs(sys.getrefcount(None) - before) < 1000
