"""Filter sets one click away, computed ahead while the coordinator reads the dashboard.

Once a result is on screen the window asks the worker to compute, while idle and at a
lower priority, the dashboard of each model alone (then each workflow alone); choosing
one of them is then answered from the worker's results with nothing computed, and its
numbers are those of a computation from nothing. Any request stops a read-ahead that is
not the result it wants.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from gradercal.dashboard import Cancelled, DashboardFilters
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from tests.ui.test_dashboard_results import (  # noqa: F401  (fixtures)
    Session,
    db_file,
    demo,
    same_parts,
)
from tests.ui.test_ui_dashboard import (  # noqa: F401 (fixtures)
    N_BOOT,
    TIMEOUT,
    Opener,
    db_path,
    demo_db,
    open_coordinator,
)
from tests.ui.test_ui_dashboard_return import fresh_json


@pytest.mark.gui
def test_a_model_chosen_after_the_read_ahead_is_shown_without_computing(
    qtbot: Any,
    open_coordinator: Opener,  # noqa: F811
    db_path: str,  # noqa: F811
) -> None:
    window = open_coordinator(db_path, compute=False)
    coord = window.coordination
    assert coord is not None
    board = coord.dashboard
    board.read_ahead_filters = 2
    ready: list[dict[str, Any]] = []
    board.worker.prefetched.connect(ready.append)
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
        board.recompute()
    result = board.result
    assert result is not None
    models = result.options["models"]
    assert len(models) >= 2
    wanted = [DashboardFilters(models=(m,)) for m in models[:2]]
    assert board.neighbours() == wanted
    qtbot.waitUntil(lambda: len(ready) >= 2, timeout=TIMEOUT)
    assert [r["request"].filters for r in ready] == wanted
    assert all(r["hypothesis"] is None and not r["cached"] for r in ready)

    ready.clear()
    with qtbot.waitSignal(board.computed, timeout=TIMEOUT):
        board.models.set_selected([models[1]])
        board.recompute()
    shown = board.result
    assert shown is not None and shown.cached and not shown.loaded
    assert board.status.text().startswith("Shown in") and "computed ahead" in board.status.text()
    assert json.dumps(shown.dashboard.to_json(), sort_keys=True) == fresh_json(db_path, wanted[1])
    # from there, the next read-ahead starts from the filters shown: the other model alone
    # (the first of the list), then the workflows
    assert board.neighbours()[0] == DashboardFilters(models=(models[0],))
    board.read_ahead_filters = 0
    assert board.neighbours() == []


def test_a_read_ahead_in_a_niced_child_equals_a_computation(db_file: str) -> None:  # noqa: F811
    s = Session(db_file)
    s.compute()
    model = Repository(open_database(db_file)).load_frames().responses["model"].iloc[0]
    filters = DashboardFilters(models=(model,))
    s.worker.prefetch(s.request(filters=filters), db_file, None, threading.Event())
    (message,) = [m for m in s.sent if m["type"] == "prefetched"]
    assert message["hypothesis"] is None and not message["cached"]
    assert s.worker.computations == 1  # the read-ahead was computed by a child
    done = s.compute(filters=filters)
    assert done["cached"] and s.worker.computations == 1
    other = Session(db_file)
    same_parts(done["parts"], other.compute(filters=filters)["parts"])


def test_a_cancelled_read_ahead_stops_its_child(db_file: str, tmp_path: Path) -> None:  # noqa: F811
    s = Session(db_file)
    s.compute()
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled):
        s.worker.prefetch(
            s.request(filters=DashboardFilters(workflows=("x",))), db_file, None, cancel
        )
    assert not [m for m in s.sent if m["type"] == "prefetched"]


def test_what_stops_a_read_ahead() -> None:
    """A guessed filter set gives way to a case's verdicts and to any request but its
    own; a case's verdict keeps running when the window asks for the result it expects."""
    from gradercal.ui.dashboard.data import Request
    from gradercal.ui.dashboard.results import PickledRequest, request_key
    from gradercal.ui.dashboard.worker import _PREFETCH, Worker

    worker = Worker(lambda _m: None, use_disk=False)

    def req(gen: int, filters: DashboardFilters) -> Request:
        return Request(gen, "b", filters, None, False, n_boot=20)

    one_model = req(1, DashboardFilters(models=("m1",)))

    def running(hypothesis: Any, request: Request = one_model) -> threading.Event:
        stop = threading.Event()
        worker._running = (_PREFETCH, stop, (request_key(request), hypothesis))
        return stop

    guess = running(None)
    worker.receive({"op": "prefetch", "url": "u", "requests": [req(1, DashboardFilters())]})
    assert not guess.is_set()  # another guess only replaces the queue
    worker.receive(
        {"op": "prefetch", "url": "u", "request": one_model, "hypotheses": [("r", "c", True, None)]}
    )
    assert guess.is_set()  # a case's verdicts first
    verdict = running(("r", "c", True, None))
    worker.receive({"op": "prefetch", "url": "u", "requests": [one_model]})
    assert not verdict.is_set()

    # the window asks for the very result being computed ahead: it keeps running
    guess = running(None)
    ask = {
        "op": "compute",
        "request": PickledRequest.of(req(2, DashboardFilters(models=("m1",)))),
        "url": "u",
    }
    worker.receive(ask)
    assert not guess.is_set() and worker._prefetch is None  # the rest of the queue dropped
    guess = running(None)
    worker.receive({**ask, "request": PickledRequest.of(req(3, DashboardFilters()))})
    assert guess.is_set()  # something else: stopped
    verdict = running(("r", "c", False, None), req(4, DashboardFilters()))
    worker.receive(
        {**ask, "request": req(5, DashboardFilters()), "expect": ("r", "c", False, None)}
    )
    assert not verdict.is_set()
    assert worker.receive({"op": "quit"}) is False
