"""The suite's Hypothesis defaults (tests/conftest.py) time nothing: a loaded machine
cannot fail a property."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def test_the_profile_has_no_deadline_and_no_too_slow_check() -> None:
    assert settings.default.deadline is None
    assert HealthCheck.too_slow in settings.default.suppress_health_check


@settings(max_examples=1)  # names other settings: the profile's deadline still holds
@given(st.integers(0, 3))
def test_an_example_slower_than_hypothesis_own_deadline_passes(n: int) -> None:
    time.sleep(0.25)  # more than Hypothesis's 200 ms default deadline
    assert 0 <= n <= 3
