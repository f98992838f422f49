"""A ``qtbot`` whose waits have no deadline a loaded machine can meet.

pytest-qt waits 5 s for a condition, a signal or a window unless a test names a timeout.
That is no claim of any test (none of them is about speed): it is a guess at how long a
busy machine may take, and CI runs the suite on two cores shared with other work, where a
dashboard computed in a worker process or a window's first paint has taken longer. A wait
that succeeds returns as soon as its condition holds, so a longer deadline costs a passing
test nothing; it only lets a real failure take longer to report.

:class:`PatientQtBot` waits :data:`DEFAULT_MS` when a test names no timeout; a timeout a
test names is kept (a test that expects nothing to happen names a short one on purpose).
"""

from __future__ import annotations

from typing import Any

from pytestqt.qtbot import QtBot

#: How long a wait without a named timeout lasts before it fails (ms).
DEFAULT_MS = 60_000


class PatientQtBot(QtBot):
    """:class:`QtBot` with :data:`DEFAULT_MS` as the default of every wait."""

    def waitActive(self, widget: Any, *, timeout: int = DEFAULT_MS) -> Any:
        return super().waitActive(widget, timeout=timeout)

    def waitExposed(self, widget: Any, *, timeout: int = DEFAULT_MS) -> Any:
        return super().waitExposed(widget, timeout=timeout)

    def waitSignal(self, signal: Any, *, timeout: int = DEFAULT_MS, **kw: Any) -> Any:
        return super().waitSignal(signal, timeout=timeout, **kw)

    def waitSignals(self, signals: Any, *, timeout: int = DEFAULT_MS, **kw: Any) -> Any:
        return super().waitSignals(signals, timeout=timeout, **kw)

    def waitUntil(self, callback: Any, *, timeout: int = DEFAULT_MS) -> None:
        super().waitUntil(callback, timeout=timeout)

    def waitCallback(self, *, timeout: int = DEFAULT_MS, **kw: Any) -> Any:
        return super().waitCallback(timeout=timeout, **kw)

    # pytest-qt's PEP 8 aliases are bound to the base class's functions: bind them here
    wait_active = waitActive
    wait_exposed = waitExposed
    wait_signal = waitSignal
    wait_signals = waitSignals
    wait_until = waitUntil
    wait_callback = waitCallback
