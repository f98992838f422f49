"""Fixtures of the GUI tests: the dashboard workers their windows start."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session", autouse=True)
def dashboard_worker_fork_server() -> Iterator[str | None]:
    """Windows opened by the tests get their dashboard worker forked from one server per
    pytest process that imported the worker's engines once (tests/support/worker_fork_server.py):
    the same worker, without 2.5 s of imports per window. Tests of the worker's start take
    :func:`real_dashboard_worker`. ``GRADERCAL_TEST_REAL_WORKER=1`` turns it off for a run.
    Yields the server's socket (None when off)."""
    import subprocess
    import sys
    import tempfile

    if os.environ.get("GRADERCAL_TEST_REAL_WORKER") or not sys.platform.startswith("linux"):
        yield None
        return
    from gradercal.ui.dashboard import qt_process

    folder = Path(tempfile.mkdtemp(prefix="gc-fork-"))
    sock = str(folder / "s")
    script = str(ROOT / "tests" / "support" / "worker_fork_server.py")
    with (folder / "server.log").open("wb") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                script,
                "serve",
                sock,
                "gradercal.ui.dashboard.worker",
                str(os.getpid()),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env={**os.environ, "MPLBACKEND": "Agg"},
        )
    default = qt_process.WORKER_COMMAND
    qt_process.WORKER_COMMAND = (sys.executable, "-I", "-S", script, "client", sock)
    try:
        yield sock
    finally:
        qt_process.WORKER_COMMAND = default
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def real_dashboard_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test's windows start ``python -m gradercal.ui.dashboard.worker`` itself (what
    the app does), not a fork of the tests' server."""
    from gradercal.ui.dashboard import qt_process

    monkeypatch.setattr(qt_process, "WORKER_COMMAND", qt_process.DEFAULT_WORKER_COMMAND)
