"""The dashboard draws its bootstrap weights ahead, while it prepares (#33).

The weights of the whole benchmark, the alt-test and each workflow, domain and tag are
drawn by a thread while the verdict table is built; the sections then find them drawn.
The numbers are those of a computation that draws nothing ahead, and no thread is left
running when the computation forks its child.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import numpy as np
import pytest

import gradercal.dashboard.compute as compute_mod
from gradercal._util.forked import ForkedCall, fork_available
from gradercal.analysis.alt_test import CLUSTER_BOOTSTRAP
from gradercal.dashboard import compute_dashboard
from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from gradercal.stats import bootstrap, drawn_ahead
from gradercal.stats.boot_settings import BootSettings
from tests.conftest import DEMO

N_BOOT = 40


@pytest.fixture(scope="module")
def demo() -> Frames:
    return frames_from_data(read_path(DEMO))


@pytest.fixture(scope="module")
def nothing_ahead(demo: Frames) -> str:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compute_mod, "_weights_ahead", lambda *a: [])
        d = compute_dashboard(demo, n_boot=N_BOOT, seed=3, processes=1)
    return json.dumps(d.to_json(), sort_keys=True)


def _record_draws(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[int, int]]]:
    """(thread name, (clusters, resamples)) of every weight matrix drawn."""
    seen: list[tuple[str, tuple[int, int]]] = []
    real = drawn_ahead.draw

    def draw(gen: np.random.Generator, n: int, b: int) -> Any:
        name = threading.current_thread().name
        seen.append((name, (n, b)))
        if name == "gradercal-draw":
            time.sleep(0.02)  # as slow as at 750 tasks: the thread outlasts the preparation
        return real(gen, n, b)

    monkeypatch.setattr(drawn_ahead, "draw", draw)
    monkeypatch.setattr(bootstrap, "_draw", draw)
    bootstrap._seeded_weights.cache_clear()  # nothing kept from other tests
    return seen


@pytest.mark.parametrize("processes", [1, 2])
def test_the_weights_are_drawn_ahead_once_and_change_no_number(
    demo: Frames, nothing_ahead: str, monkeypatch: pytest.MonkeyPatch, processes: int
) -> None:
    seen = _record_draws(monkeypatch)
    at_fork: list[list[str]] = []
    real_fork = ForkedCall

    def forked(fn: Any) -> Any:
        names = [t.name for t in threading.enumerate()]
        # a child forked while the thread draws would wait forever for its key
        assert "gradercal-draw" not in names, "the process forks while weights are drawn"
        at_fork.append(names)
        return real_fork(fn)

    monkeypatch.setattr(compute_mod, "ForkedCall", forked)
    d = compute_dashboard(demo, n_boot=N_BOOT, seed=3, processes=processes)
    assert json.dumps(d.to_json(), sort_keys=True) == nothing_ahead
    n_tasks = len(demo.tasks)
    ahead = [key for name, key in seen if name == "gradercal-draw"]
    # the headline's weights first: every task, then the alt-test's (how many more
    # before the fork stops the thread depends on the machine)
    assert ahead[:1] == [(n_tasks, N_BOOT)]
    assert ahead[1:2] in ([], [(n_tasks, CLUSTER_BOOTSTRAP)])
    # a matrix drawn ahead is never drawn again in this process
    here = [key for name, key in seen if name != "gradercal-draw"]
    assert not set(here) & set(ahead)
    assert not any(t.name == "gradercal-draw" for t in threading.enumerate())
    if processes == 2 and fork_available():
        assert at_fork


def test_the_guess_names_each_groups_tasks(demo: Frames) -> None:
    keys = compute_mod._weights_ahead(demo, ["a", "b"], "judge", BootSettings(50, 7))
    n_tasks = len(demo.tasks)
    assert keys[:2] == [(n_tasks, 50, 7), (n_tasks, CLUSTER_BOOTSTRAP, 0)]
    sizes = [n for n, _b, _s in keys[2:]]
    assert sizes == sorted(sizes, reverse=True)
    tasks = demo.tasks.set_index("task_id")
    for by in ("workflow", "domain"):
        for _label, group in tasks.groupby(by, dropna=False):
            assert len(group) in sizes
    crit = demo.criteria
    for tag in {t for tags in crit["tags"] for t in tags}:
        tagged = crit.loc[crit["tags"].map(lambda ts, tag=tag: tag in ts), "task_id"]
        assert tagged.nunique() in sizes
    # no judge or one expert: no alt-test; no resamples: only the alt-test's
    assert (n_tasks, CLUSTER_BOOTSTRAP, 0) not in compute_mod._weights_ahead(
        demo, ["a"], "judge", BootSettings(50, 7)
    )
    assert compute_mod._weights_ahead(demo, ["a", "b"], "j", BootSettings(0, 7)) == [
        (n_tasks, CLUSTER_BOOTSTRAP, 0)
    ]
