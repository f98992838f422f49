"""``gradercal gui`` stopped from outside: Ctrl+C in its terminal (SIGINT) or SIGTERM.

The window closes as its close button closes it — its geometry is saved, the dashboard's
worker process is stopped — and the command exits with 128 + the signal's number. Before,
Ctrl+C did nothing (Qt's event loop runs no Python code to see it) and SIGTERM ended the
interpreter under Qt's objects: "QProcess: Destroyed while process … is still running"
and a RuntimeError traceback, with the worker killed rather than stopped.

The real command in its own process, on the demo, offscreen.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gradercal.ui.dashboard.qt_process import process_alive
from gradercal.ui.qt_settings import ENV_VAR as SETTINGS_ENV
from tests.conftest import DEMO, ROOT
from tests.support.gui import import_folder

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads the process tree from /proc"
)


def _workers(pid: int) -> list[int]:
    """The dashboard worker processes among the children of ``pid``."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            except FileNotFoundError:
                continue
            if b"dashboard.worker" in cmdline:
                out.append(int(child))
    return out


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _wait_until_idle(pid: int, deadline: float) -> None:
    """Until the process used no CPU for a second (built, its event loop waiting)."""
    last, still = _cpu_ticks(pid), 0
    while still < 4 and time.monotonic() < deadline:
        time.sleep(0.25)
        now = _cpu_ticks(pid)
        still = still + 1 if now == last else 0
        last = now


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_closes_the_window_and_stops_its_worker(tmp_path: Path, sig: int) -> None:
    db = tmp_path / "demo.sqlite"
    import_folder(str(db), DEMO)
    settings = tmp_path / "settings.ini"
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "GRADERCAL_DASHBOARD_CACHE": "off",
        SETTINGS_ENV: str(settings),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "gradercal", "gui", "--view", "dashboard", "--db", str(db)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while not workers and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            workers = _workers(proc.pid)
        assert workers, "the window started no dashboard worker"
        _wait_until_idle(proc.pid, deadline)  # the window is up, its event loop waiting
        proc.send_signal(sig)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running 30 s after {signal.Signals(sig).name}")
        assert proc.stderr is not None
        err = proc.stderr.read().decode("utf-8", "replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 128 + sig, err
    assert "Traceback" not in err and "Destroyed while process" not in err, err
    time.sleep(0.5)
    assert not any(process_alive(w) for w in workers)  # stopped with the window
    assert "geometry" in settings.read_text("utf-8") or "window" in settings.read_text("utf-8")
