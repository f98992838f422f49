"""A ``qtbot`` whose waits have no deadline a loaded machine can meet.

pytest-qt waits 5 s for a condition, a signal or a window unless a test names a timeout,
and the tests name 2–30 s. None of these is a claim of any test (no test here is about
speed, and none expects a wait to time out): they are guesses at how long a busy machine
may take, and CI runs the suite on two cores shared with other work, where a dashboard
computed in a worker process, a window's activation or a first paint has taken longer. A
wait that succeeds returns as soon as its condition holds, so a longer deadline costs a
passing test nothing; it only lets a real failure take longer to report.

:class:`PatientQtBot` waits at least :data:`FLOOR_MS` in every wait that fails when its
time is up. A wait that does not fail (``raising=False``, as in ``assertNotEmitted``)
keeps its time: there the time is what is being checked.
"""

from __future__ import annotations

from typing import Any

from pytestqt.qtbot import QtBot

#: The shortest time a failing wait lasts (ms).
FLOOR_MS = 60_000


def patient(timeout: int, raising: bool | None = None) -> int:
    """The time a wait asked for ``timeout`` ms lasts."""
    return timeout if raising is False else max(timeout, FLOOR_MS)


class PatientQtBot(QtBot):
    """:class:`QtBot` whose failing waits last at least :data:`FLOOR_MS`."""

    def waitActive(self, widget: Any, *, timeout: int = FLOOR_MS) -> Any:
        return super().waitActive(widget, timeout=patient(timeout))

    def waitExposed(self, widget: Any, *, timeout: int = FLOOR_MS) -> Any:
        return super().waitExposed(widget, timeout=patient(timeout))

    def waitSignal(
        self, signal: Any, *, timeout: int = FLOOR_MS, raising: bool | None = None, **kw: Any
    ) -> Any:
        return super().waitSignal(signal, timeout=patient(timeout, raising), raising=raising, **kw)

    def waitSignals(
        self, signals: Any, *, timeout: int = FLOOR_MS, raising: bool | None = None, **kw: Any
    ) -> Any:
        return super().waitSignals(
            signals, timeout=patient(timeout, raising), raising=raising, **kw
        )

    def waitUntil(self, callback: Any, *, timeout: int = FLOOR_MS) -> None:
        super().waitUntil(callback, timeout=patient(timeout))

    def waitCallback(
        self, *, timeout: int = FLOOR_MS, raising: bool | None = None, **kw: Any
    ) -> Any:
        return super().waitCallback(timeout=patient(timeout, raising), raising=raising, **kw)

    # pytest-qt's PEP 8 aliases are bound to the base class's functions: bind them here
    wait_active = waitActive
    wait_exposed = waitExposed
    wait_signal = waitSignal
    wait_signals = waitSignals
    wait_until = waitUntil
    wait_callback = waitCallback
