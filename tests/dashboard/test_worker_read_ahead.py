"""The worker reads the data in a forked child while it imports the headline's engines (#33).

A window being built tells its worker that a request comes ``soon``; with nothing kept on
disk for the data, the worker imports what the headline needs and reads the data at
once. Both hold the GIL, and at 750 tasks they are ≈ 0.45 s and ≈ 0.55 s of the way to
the window's first numbers: the read goes to a forked child (its own connection) while
the worker imports. These tests check that the read happens in a child (the reading
function is never called in the worker's process), that the data kept equals a direct
read, and that without fork the worker reads it itself — on SQLite and PostgreSQL (the
child opens its own connection; the worker's stays unused across the fork).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from gradercal.db import dashboard_data
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.formats import read_path
from gradercal.ui.dashboard import disk_cache, worker
from tests.conftest import DEMO


@pytest.fixture
def demo_url(db_url: str) -> str:
    """The demo in a fresh database of each backend (SQLite, PostgreSQL)."""
    url = db_url if "://" in db_url else f"sqlite:///{db_url}"
    db = open_database(url)
    try:
        Repository(db).import_data(read_path(DEMO))
    finally:
        db.dispose()
    return url


@pytest.fixture
def reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the processes that called ``load_dashboard_data`` and reported it here
    (a forked child's call is not seen: its list is its own copy)."""
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(disk_cache.ENV_KEY, str(tmp_path / "key"))
    calls: list[int] = []
    real = dashboard_data.load_dashboard_data

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(os.getpid())
        return real(*args, **kwargs)

    monkeypatch.setattr(dashboard_data, "load_dashboard_data", counted)
    return calls


def _read_ahead(url: str) -> worker.Worker:
    w = worker.Worker(lambda message: None)
    assert w.disk is not None
    imported: list[str] = []
    w._preload = lambda: imported.append("all")  # pending heavy imports (serve sets it)
    try:
        w._read_ahead({"op": "soon", "url": url, "benchmark": None})
    finally:
        if w._frozen:
            import gc

            gc.unfreeze()
    assert w._imported == {"first"} and imported == []  # the headline's imports only
    return w


def _same(got: Any, ref: Any, where: str) -> None:
    """``got`` equals ``ref``: frames column by column, dataclasses and containers field
    by field."""
    if isinstance(ref, pd.DataFrame):
        pd.testing.assert_frame_equal(got, ref, obj=where)
    elif dataclasses.is_dataclass(ref) and not isinstance(ref, type):
        for f in dataclasses.fields(ref):
            _same(getattr(got, f.name), getattr(ref, f.name), f"{where}.{f.name}")
    elif isinstance(ref, (tuple, list)):
        assert isinstance(got, type(ref)) and len(got) == len(ref), where
        for i, (a, b) in enumerate(zip(got, ref, strict=True)):
            _same(a, b, f"{where}[{i}]")
    elif isinstance(ref, dict):
        assert isinstance(got, dict) and got.keys() == ref.keys(), where
        for k in ref:
            _same(got[k], ref[k], f"{where}[{k!r}]")
    else:
        assert got == ref, where


def _same_data(got: Any, url: str) -> None:
    db = open_database(url)
    try:
        ref = dashboard_data.load_dashboard_data(Repository(db), None)
    finally:
        db.dispose()
    assert ref.reviews is not None and ref.frames.judgments.shape[0] > 100
    _same(got, ref, "data")


def test_soon_reads_the_data_in_a_child_while_importing(demo_url: str, reads: list[int]) -> None:
    w = _read_ahead(demo_url)
    assert w._data is not None and w._revision and w._frames_key == (demo_url, "None")
    assert reads == []  # read in the forked child, not here
    _same_data(w._data, demo_url)


def test_without_fork_the_worker_reads_itself(
    demo_url: str, reads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker, "_READ_IN_CHILD", False)
    w = _read_ahead(demo_url)
    assert reads == [os.getpid()]
    assert w._data is not None
    _same_data(w._data, demo_url)
