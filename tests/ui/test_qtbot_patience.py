"""The suite's ``qtbot`` (tests/conftest.py) waits long enough for a loaded machine."""

from __future__ import annotations

import inspect
import time
from typing import Any

import pytest

WAITS = ("waitActive", "waitExposed", "waitSignal", "waitSignals", "waitUntil", "waitCallback")


@pytest.mark.parametrize("name", WAITS)
def test_every_wait_without_a_named_timeout_lasts_a_minute(qtbot: Any, name: str) -> None:
    for method in (getattr(qtbot, name), getattr(qtbot, _pep8(name))):
        assert inspect.signature(method).parameters["timeout"].default >= 60_000


def test_a_short_named_timeout_is_raised_unless_the_wait_may_time_out(qtbot: Any) -> None:
    from PySide6.QtCore import QObject, QTimer, Signal

    class Source(QObject):
        fired = Signal()

    hits: list[int] = []
    QTimer.singleShot(300, lambda: hits.append(1))
    qtbot.waitUntil(lambda: bool(hits), timeout=100)  # met after the 100 ms it names
    source = Source()
    QTimer.singleShot(300, source.fired.emit)
    with qtbot.waitSignal(source.fired, timeout=100):
        pass
    start = time.monotonic()
    with qtbot.waitSignal(source.fired, timeout=100, raising=False) as blocker:
        pass  # nothing fires: a non-failing wait keeps its time
    assert not blocker.signal_triggered and time.monotonic() - start < 30
    with qtbot.assertNotEmitted(source.fired, wait=50):
        pass


def _pep8(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)
