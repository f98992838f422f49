"""The tests' fork server for dashboard workers (tests/support/worker_fork_server.py): a
client started in place of the worker ends as its forked worker ends, and takes it along
when it is killed — what the window relies on to see its worker exit, crash or be killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gradercal.ui.dashboard.qt_process import process_alive

SCRIPT = Path(__file__).resolve().parents[1] / "support" / "worker_fork_server.py"

# A stand-in for the worker module: echoes one line, then ends as the line says.
FAKE = """
import os, signal, sys
def preload():
    pass
def main():
    line = sys.stdin.readline().strip()
    sys.stdout.write(f"{os.getpid()} {os.environ.get('FAKE_NAME')} {os.getcwd()}\\n")
    sys.stdout.flush()
    if line == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if line == "wait":
        sys.stdin.readline()
    return int(line) if line.isdigit() else 0
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "fake_worker.py").write_text(FAKE)
    sock = str(tmp_path / "s")
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "serve", sock, "fake_worker", str(os.getpid())],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    try:
        yield sock
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
        assert not Path(sock).exists()


def _client(sock: str, cwd: Path, name: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-I", "-S", str(SCRIPT), "client", sock],
        cwd=cwd,
        env={**os.environ, "FAKE_NAME": name},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )


def _say(client: subprocess.Popen[bytes], line: str) -> list[str]:
    assert client.stdin is not None and client.stdout is not None
    client.stdin.write(line.encode() + b"\n")
    client.stdin.flush()
    return client.stdout.readline().decode().split()


def test_the_client_ends_with_its_workers_exit_code_and_passes_environment_and_folder(
    server: str, tmp_path: Path
) -> None:
    here = tmp_path / "elsewhere"
    here.mkdir()
    client = _client(server, here, "zoe")
    pid, name, cwd = _say(client, "3")
    assert int(pid) not in (client.pid, os.getpid()) and name == "zoe" and cwd == str(here)
    assert client.wait(timeout=30) == 3
    assert _client_done(_client(server, here, "ann"), "0") == 0


def _client_done(client: subprocess.Popen[bytes], line: str) -> int:
    _say(client, line)
    return client.wait(timeout=30)


def test_a_killed_worker_kills_its_client_with_the_same_signal(server: str, tmp_path: Path) -> None:
    client = _client(server, tmp_path, "x")
    assert _client_done(client, "kill") == -signal.SIGKILL


def test_a_killed_client_takes_its_worker_along(server: str, tmp_path: Path) -> None:
    client = _client(server, tmp_path, "x")
    worker = int(_say(client, "wait")[0])
    assert process_alive(worker)
    client.kill()
    client.wait(timeout=30)
    deadline = time.monotonic() + 30
    while process_alive(worker) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not process_alive(worker)


def test_a_server_whose_pytest_is_gone_ends_by_itself(tmp_path: Path) -> None:
    """A pytest process that died while its server was still importing (a crash in the
    first test) left the server running for good: it took the parent it found after its
    imports (init by then) for pytest's. It is told pytest's id instead."""
    (tmp_path / "fake_worker.py").write_text(FAKE)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "serve", str(tmp_path / "s"), "fake_worker", str(gone.pid)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    assert proc.wait(timeout=60) == 0


def test_a_client_gone_before_its_pid_leaves_the_server_serving(
    server: str, tmp_path: Path
) -> None:
    """A window may kill its worker's client the moment it started it: the client is gone
    before the server sends it the worker's pid. The server serves the next clients (it
    used to die of the broken pipe, and every later window of that pytest process waited
    two minutes on nothing)."""
    import json
    import socket
    import struct

    payload = json.dumps({"env": dict(os.environ), "cwd": str(tmp_path)}).encode()
    for _ in range(5):
        gone = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        gone.connect(server)
        r, w = os.pipe()
        socket.send_fds(gone, [b"w"], [r, w, w])
        gone.sendall(struct.pack("!I", len(payload)) + payload)
        gone.close()
        os.close(r)
        os.close(w)
        time.sleep(0.05)
    client = _client(server, tmp_path, "next")
    assert _say(client, "0")[1] == "next"
    assert client.wait(timeout=30) == 0
