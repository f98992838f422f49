"""The suite's ``qtbot`` (tests/conftest.py) waits long enough for a loaded machine."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

WAITS = ("waitActive", "waitExposed", "waitSignal", "waitSignals", "waitUntil", "waitCallback")


@pytest.mark.parametrize("name", WAITS)
def test_every_wait_without_a_named_timeout_lasts_a_minute(qtbot: Any, name: str) -> None:
    for method in (getattr(qtbot, name), getattr(qtbot, _pep8(name))):
        assert inspect.signature(method).parameters["timeout"].default >= 60_000


def test_a_condition_met_late_is_still_seen_and_a_named_timeout_is_kept(qtbot: Any) -> None:
    from PySide6.QtCore import QTimer
    from pytestqt.exceptions import TimeoutError as QtTimeout

    hits: list[int] = []
    QTimer.singleShot(50, lambda: hits.append(1))
    qtbot.waitUntil(lambda: bool(hits))  # no timeout named
    with pytest.raises(QtTimeout):
        qtbot.waitUntil(lambda: False, timeout=50)  # a named one still fails in time


def _pep8(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)
