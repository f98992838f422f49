"""Whichever process computes which grouping, the dashboard is the same (#33).

With ``processes=2`` the forked child takes the calibration, models and health sections
and, for balance, the agreement of :data:`gradercal.dashboard.compute._CHILD_GROUPINGS`
(by tag: the largest at 750 tasks). The agreement table still lists the groupings in
their order (tag, workflow, domain), each grouping's rows in theirs: every split gives
the dashboard of one process, the same steps in the same order.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import gradercal.dashboard.compute as compute_mod
from gradercal._util.forked import fork_available
from gradercal.dashboard import compute_dashboard
from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from tests.conftest import DEMO


@pytest.fixture(scope="module")
def demo() -> Frames:
    return frames_from_data(read_path(DEMO))


@pytest.fixture(scope="module")
def one_process(demo: Frames) -> tuple[str, list[Any]]:
    seen: list[Any] = []
    d = compute_dashboard(demo, n_boot=20, processes=1, progress=lambda *a: seen.append(a))
    return json.dumps(d.to_json(), sort_keys=True), seen


def test_the_child_takes_the_agreement_by_tag() -> None:
    assert compute_mod._CHILD_GROUPINGS == ("tag",)


@pytest.mark.skipif(not fork_available(), reason="the forked child is used on Linux only")
@pytest.mark.parametrize(
    "split", [(), ("tag",), ("domain",), ("workflow", "domain"), ("tag", "workflow", "domain")]
)
@pytest.mark.parametrize("processes", [1, 2])
def test_any_split_of_the_groupings_gives_the_same_dashboard(
    demo: Frames,
    one_process: tuple[str, list[Any]],
    monkeypatch: pytest.MonkeyPatch,
    split: tuple[str, ...],
    processes: int,
) -> None:
    monkeypatch.setattr(compute_mod, "_CHILD_GROUPINGS", split)
    seen: list[Any] = []
    d = compute_dashboard(demo, n_boot=20, processes=processes, progress=lambda *a: seen.append(a))
    expected, steps = one_process
    assert json.dumps(d.to_json(), sort_keys=True) == expected
    by = list(dict.fromkeys(d.agreement["by"]))
    assert by == ["overall", "tag", "workflow", "domain", "criterion"]
    assert sorted(s[2] for s in seen) == sorted(s[2] for s in steps)
    assert [s[0] for s in seen] == list(range(1, len(seen) + 1))
