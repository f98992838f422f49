"""The bootstrap's weights drawn ahead in a thread are the weights drawn in place (#33)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from gradercal.stats import bootstrap, drawn_ahead
from gradercal.stats.drawn_ahead import DrawnAhead, drawing_ahead


def _in_place(n: int, b: int, seed: int) -> np.ndarray:
    p = np.full(n, 1.0 / n)
    return np.random.default_rng(seed).multinomial(n, p, size=b)


def test_weights_drawn_ahead_are_the_ones_drawn_in_place() -> None:
    keys = [(40, 200, 0), (7, 50, 3), (40, 200, 1), (120, 30, 0)]
    with drawing_ahead() as ahead:
        ahead.start(keys)
        assert ahead.wait(30)
        assert ahead.drawn == set(keys)
        for n, b, seed in keys:
            got = bootstrap.resampling_weights(n, b, seed)
            assert got.dtype == np.int64
            np.testing.assert_array_equal(got, _in_place(n, b, seed))
            got[0, 0] += 1  # a copy: the kept weights cannot be changed through it
            np.testing.assert_array_equal(ahead.get((n, b, seed)), _in_place(n, b, seed))
    # outside the block nothing is kept ahead
    assert drawn_ahead.drawn((40, 200, 0)) is None


def test_a_key_not_begun_is_drawn_by_the_caller_and_skipped_by_the_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entered, gate = threading.Event(), threading.Event()
    real = drawn_ahead.draw

    def slow(gen: np.random.Generator, n: int, b: int) -> np.ndarray:
        entered.set()
        gate.wait(5)  # the first draw waits until the caller has claimed the last key
        return real(gen, n, b)

    monkeypatch.setattr(drawn_ahead, "draw", slow)
    ahead = DrawnAhead()
    ahead.start([(30, 20, 0), (31, 20, 0), (32, 20, 0)])
    assert entered.wait(5)  # the thread is drawing the first key
    assert ahead.get((32, 20, 0)) is None  # not begun: the caller's now
    assert ahead.get((99, 20, 0)) is None  # never a key
    gate.set()
    got = ahead.get((30, 20, 0))  # under way: waited for
    assert got is not None
    np.testing.assert_array_equal(got, _in_place(30, 20, 0))
    ahead.stop()
    assert ahead.drawn == {(30, 20, 0), (31, 20, 0)}


def test_stop_ends_with_the_draw_under_way_and_begins_no_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started = threading.Event()
    release = threading.Event()
    real = drawn_ahead.draw

    def held(gen: np.random.Generator, n: int, b: int) -> np.ndarray:
        started.set()
        release.wait(5)
        return real(gen, n, b)

    monkeypatch.setattr(drawn_ahead, "draw", held)
    ahead = DrawnAhead()
    ahead.start([(10, 5, 0), (11, 5, 0), (12, 5, 0)])
    assert started.wait(5)
    stopper = threading.Thread(target=ahead.stop)
    stopper.start()
    stopper.join(0.2)
    assert stopper.is_alive()  # it waits for the draw under way …
    release.set()
    stopper.join(5)
    assert not stopper.is_alive()
    assert ahead.drawn == {(10, 5, 0)}  # … and no other begins
    assert not any(t.name == "gradercal-draw" for t in threading.enumerate())
    assert ahead.get((11, 5, 0)) is None  # left to the caller, without waiting
    ahead.start([(13, 5, 0)])  # a stopped drawing does not start again
    assert ahead.drawn == {(10, 5, 0)}


def test_the_memory_cap_leaves_the_rest_to_the_callers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drawn_ahead, "MAX_BYTES", 2 * 50 * 100 * 8)
    ahead = DrawnAhead()
    ahead.start([(50, 100, 0), (50, 100, 1), (50, 100, 2)])
    assert ahead.wait(30)
    assert ahead.drawn == {(50, 100, 0), (50, 100, 1)}
    assert ahead.get((50, 100, 2)) is None
