"""gradercal._util.forked: one function in a forked child, its result or its error back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import gradercal._util.forked as forked_mod
from gradercal._util.forked import ChildFailed, ForkedCall, fork_available

pytestmark = pytest.mark.skipif(not fork_available(), reason="fork is used on Linux only")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_result_comes_from_another_process() -> None:
    parent = os.getpid()
    call = ForkedCall(lambda: (os.getpid(), sum(range(1000))))
    pid, total = call.result()
    assert pid != parent and pid == call.pid
    assert total == 499500
    assert call.done()
    deadline = time.monotonic() + 10
    while _alive(call.pid) and time.monotonic() < deadline:  # reaped as it exits …
        time.sleep(0.02)
    assert not _alive(call.pid)  # … not left a zombie


def test_a_result_larger_than_the_pipe_while_the_parent_works() -> None:
    blob = bytes(range(256)) * 40_000  # 10 MB: far more than a pipe holds
    call = ForkedCall(lambda: blob)
    time.sleep(0.2)  # the parent busy elsewhere; the child must not block on the pipe
    assert call.result() == blob


def test_the_childs_exception_is_raised_again() -> None:
    def fail() -> None:
        raise ValueError("no such judge: j9")

    with pytest.raises(ValueError, match="no such judge: j9"):
        ForkedCall(fail).result()


def test_an_exception_that_does_not_pickle_is_reported_by_name() -> None:
    class Local(Exception):  # a local class cannot be pickled
        pass

    def fail() -> None:
        raise Local("odd")

    with pytest.raises(ChildFailed, match="Local: odd"):
        ForkedCall(fail).result()


def test_a_child_that_dies_without_a_result() -> None:
    with pytest.raises(ChildFailed, match="without a result"):
        ForkedCall(lambda: os._exit(7)).result()


def test_cancel_kills_the_child() -> None:
    call = ForkedCall(lambda: time.sleep(60))
    start = time.monotonic()
    with pytest.raises(InterruptedError):
        call.result(cancelled=lambda: time.monotonic() - start > 0.2)
    assert time.monotonic() - start < 30  # the child sleeps 60 s: it did not wait for it
    assert not _alive(call.pid)


def test_kill_after_the_result_is_harmless() -> None:
    call = ForkedCall(lambda: 5)
    assert call.result() == 5
    call.kill()
    call.kill()


def test_the_result_is_in_before_the_child_has_exited(monkeypatch: pytest.MonkeyPatch) -> None:
    """A large child takes 15-30 ms to exit (its copy of the process is unmapped); the
    parent takes the result as soon as it is written, and the child is reaped meanwhile.
    Here the child's exit is made to take a second."""

    def slow_exit(code: int) -> None:
        time.sleep(1.0)
        os._exit(code)

    monkeypatch.setattr(forked_mod, "_leave", slow_exit)
    call = ForkedCall(lambda: "sent")
    t0 = time.perf_counter()
    assert call.result() == "sent"
    call.kill()  # nothing to stop: it returns at once too
    assert time.perf_counter() - t0 < 0.6
    os.kill(call.pid, 0)  # still exiting …
    deadline = time.monotonic() + 10
    while call._status is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert call._status == 0  # … then reaped, by nobody waiting for it
    with pytest.raises(ProcessLookupError):
        os.kill(call.pid, 0)


def test_refused_where_fork_is_not_available(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked_mod, "fork_available", lambda: False)
    with pytest.raises(ChildFailed, match="not available"):
        ForkedCall(lambda: 1)


def test_a_child_dies_with_its_parent(tmp_path: Path) -> None:
    """A parent killed mid-computation (the window closed, the worker killed) leaves no
    orphan child computing for nobody."""
    script = tmp_path / "parent.py"
    pid_file = tmp_path / "child.pid"
    script.write_text(
        "import os, sys, time\n"
        "from gradercal._util.forked import ForkedCall\n"
        f"path = {str(pid_file)!r}\n"
        "def work():\n"
        "    with open(path + '.tmp', 'w') as fh:\n"
        "        fh.write(str(os.getpid()))\n"
        "    os.replace(path + '.tmp', path)\n"
        "    time.sleep(120)\n"
        "call = ForkedCall(work)\n"
        "time.sleep(120)\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)])
    child = 0
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists():
            assert time.monotonic() < deadline, "the child never started"
            time.sleep(0.05)
        child = int(pid_file.read_text())
        assert _alive(child)
        parent.kill()
        parent.wait(30)
        deadline = time.monotonic() + 60
        while _alive(child) and not _is_zombie(child):
            assert time.monotonic() < deadline, "the child outlived its parent"
            time.sleep(0.05)
    finally:
        if parent.poll() is None:
            parent.kill()
        if child and _alive(child) and not _is_zombie(child):
            os.kill(child, signal.SIGKILL)  # never leave it behind, even on failure


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (FileNotFoundError, IndexError):
        return False


# Handover: one value from the parent to a child it forked, sent after the fork.


def test_a_value_sent_after_the_fork_reaches_the_child() -> None:
    box = forked_mod.Handover()
    call = ForkedCall(lambda: (box.receive(), os.getpid()))
    box.parent_side()
    time.sleep(0.05)  # the child is waiting for it by now
    assert box.send({"rows": [("overall", 1.5)]})
    value, pid = call.result()
    assert value == {"rows": [("overall", 1.5)]} and pid != os.getpid()


def test_send_does_not_wait_for_a_child_that_reads_late() -> None:
    box = forked_mod.Handover()

    def late() -> object:
        time.sleep(1.0)
        return box.receive()

    call = ForkedCall(late)
    box.parent_side()
    start = time.perf_counter()
    assert box.send(list(range(20_000)))  # ~100 KB: more than a default pipe holds
    assert time.perf_counter() - start < 0.5
    assert call.result() == list(range(20_000))


def test_a_value_larger_than_the_pipe_is_not_sent_and_the_child_gets_none() -> None:
    box = forked_mod.Handover()
    call = ForkedCall(box.receive)
    box.parent_side()
    assert not box.send(b"x" * (4 << 20))
    assert call.result() is None


def test_a_parent_that_closes_without_sending_leaves_the_child_none() -> None:
    box = forked_mod.Handover()
    call = ForkedCall(box.receive)
    box.close()
    assert call.result() is None


def test_receive_is_for_the_child() -> None:
    box = forked_mod.Handover()
    try:
        with pytest.raises(RuntimeError, match="forked child"):
            box.receive()
    finally:
        box.close()


# ForkedCall(…, early=True): a part of the result sent ahead.


def test_a_part_sent_ahead_arrives_before_the_result() -> None:
    def work(send: Any) -> str:
        send({"small": list(range(300_000))})  # more than the pipe holds
        time.sleep(1.0)
        return "rest"

    call = ForkedCall(work, early=True)
    start = time.perf_counter()
    assert call.early() == {"small": list(range(300_000))}
    assert time.perf_counter() - start < 0.8
    assert call.result() == "rest"


def test_parts_in_order_and_a_result_taken_without_them() -> None:
    def work(send: Any) -> int:
        send("one")
        send(b"\x00two")
        return 3

    call = ForkedCall(work, early=True)
    assert call.early() == "one" and call.early() == b"\x00two" and call.early() is None
    assert call.result() == 3
    skipped = ForkedCall(work, early=True)
    assert skipped.result() == 3  # the parts not taken are passed over


def test_no_part_sent_ahead() -> None:
    call = ForkedCall(lambda send: "all at once", early=True)
    assert call.early() is None
    assert call.result() == "all at once"


def test_a_child_dying_after_its_part_fails_at_the_result() -> None:
    def work(send: Any) -> None:
        send("ahead")
        os._exit(3)

    call = ForkedCall(work, early=True)
    assert call.early() == "ahead"
    with pytest.raises(ChildFailed):
        call.result()
    dead = ForkedCall(lambda send: os._exit(3), early=True)
    assert dead.early() is None
    with pytest.raises(ChildFailed):
        dead.result()
