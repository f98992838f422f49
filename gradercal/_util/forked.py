"""Run one function in a forked child process, to use a second core for CPU-bound work.

The dashboard's engines are pandas and Python code that holds the GIL, so threads do not
run them side by side. A forked child does: it starts with a copy-on-write view of the
parent's memory (the loaded frames and any cached tables, nothing is pickled on the way
in), computes, and sends its pickled result back through a pipe.

:class:`ForkedCall` is only used where :func:`fork_available` says so: on Linux (where
``fork`` is the platform's own model and safe for numpy, pandas and Agg), in a process
that opted in (the dashboard's worker process or the report command; never a Qt process,
whose threads and window-system connections a child would inherit). Everywhere else the
caller runs the function inline, with the same result.

The child never returns into the caller's code: it runs the function, writes the result
(or the exception) to the pipe and leaves with :func:`os._exit`, so no ``atexit`` handler,
buffered stream or finaliser of the parent runs twice. It closes the pipe as soon as the
result is written: the parent takes the result while the child's copy of the process is
unmapped (15-30 ms for the report's children), and a thread reaps the child
(``benchmarks/bench_forked_exit.py``).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["ChildFailed", "ForkedCall", "Handover", "fork_available"]

_T = TypeVar("_T")


class ChildFailed(RuntimeError):
    """The child died, or its result could not be read back (not an error of the work)."""


def fork_available() -> bool:
    """Whether :class:`ForkedCall` may be used here (Linux with ``os.fork``)."""
    return sys.platform.startswith("linux") and hasattr(os, "fork")


class ForkedCall(Generic[_T]):
    """``fn()`` computed in a forked child; :meth:`result` waits for and returns its value.

    An exception raised by ``fn`` in the child is raised again by :meth:`result` (the
    same type when it pickles, with the child's traceback in the message otherwise). A
    child that dies without a result raises :class:`ChildFailed`.
    """

    def __init__(self, fn: Callable[..., _T], *, early: bool = False) -> None:
        """``early``: ``fn`` is called with ``send``; ``send(value)`` hands ``value`` to
        :meth:`early` in this process at once, before ``fn`` returns (one part of a
        result that is ready sooner than the rest)."""
        if not fork_available():
            raise ChildFailed("fork is not available on this platform")
        read_fd, write_fd = os.pipe()
        if early:  # a part sent ahead is read while this process holds the GIL: fewer reads
            _enlarged(write_fd)
        parent = os.getpid()
        with warnings.catch_warnings():
            # Python 3.12+ warns when a process with threads forks: a lock held by another
            # thread stays locked in the child. The child here runs only ``fn`` and leaves
            # with os._exit; the threads that exist around it (a reader of the parent's
            # input, this module's own pipe readers) hold no lock that ``fn`` needs.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child
            os.close(read_fd)
            _child(fn, write_fd, parent, early)  # never returns
        os.close(write_fd)
        self.pid = pid
        self._chunks: list[bytes] = []
        self._arrived = threading.Condition()
        self._consumed = 0  # bytes of early parts taken by early()
        self._reader = threading.Thread(
            target=self._drain, args=(read_fd,), daemon=True, name=f"forked-{pid}"
        )
        self._reader.start()
        self._status: int | None = None
        self._received = False  # the whole result is in: the child is only exiting

    def _drain(self, fd: int) -> None:
        # Read while the parent works: the child would block on a full pipe otherwise.
        try:
            with os.fdopen(fd, "rb", buffering=0) as stream:
                while chunk := stream.read(1 << 20):
                    with self._arrived:
                        self._chunks.append(chunk)
                        self._arrived.notify_all()
        finally:
            with self._arrived:
                self._arrived.notify_all()

    def early(self, cancelled: Callable[[], bool] | None = None, poll: float = 0.05) -> Any:
        """What the child sent ahead with ``send`` (``early=True``; waits for it), or None
        when it sent nothing before its result or ended without sending (:meth:`result`
        then raises). Each call takes the next part sent.

        Raises:
            InterruptedError: ``cancelled()`` returned True (the child is killed).
        """
        head = len(_EARLY) + 8
        while True:
            with self._arrived:
                data = b"".join(self._chunks)
                self._chunks = [data] if data else []
                part = data[self._consumed :]
                if part[: len(_EARLY)] != _EARLY[: len(part)]:
                    return None  # the result came first
                if len(part) >= head:
                    size = int.from_bytes(part[len(_EARLY) : head], "big")
                    if len(part) >= head + size:
                        self._consumed += head + size
                        return pickle.loads(part[head : head + size])
                if not self._reader.is_alive():
                    return None  # the child ended before its part was whole
                if cancelled is not None and cancelled():
                    self.kill()
                    raise InterruptedError("cancelled")
                self._arrived.wait(poll)

    def done(self) -> bool:
        """Whether the child has sent everything (its result can be taken at once)."""
        return not self._reader.is_alive()

    def result(self, cancelled: Callable[[], bool] | None = None, poll: float = 0.05) -> _T:
        """The child's return value (waits for it).

        Args:
            cancelled: Polled every ``poll`` seconds while waiting; True kills the child and
                raises :class:`InterruptedError`.
            poll: Seconds between polls.

        Raises:
            InterruptedError: ``cancelled()`` returned True (the child is killed).
            ChildFailed: The child ended without a readable result.
            Exception: The exception ``fn`` raised in the child.
        """
        while self._reader.is_alive():
            if cancelled is not None and cancelled():
                self.kill()
                raise InterruptedError("cancelled")
            self._reader.join(poll)
        data = b"".join(self._chunks)
        self._chunks = []
        data = _past_early_parts(data, self._consumed)
        if not data:
            self._reap()
            raise ChildFailed(f"the child process ended without a result (status {self._status})")
        # The child closed the pipe once its result was written and is now only exiting:
        # unmapping its copy of this process takes 15-30 ms, which nobody needs to wait
        # for. A thread reaps it.
        self._received = True
        threading.Thread(target=self._reap, daemon=True, name=f"forked-reap-{self.pid}").start()
        try:
            kind, payload = pickle.loads(data)
        except Exception as exc:  # a truncated stream: the child died mid-write
            raise ChildFailed(f"unreadable result from the child process: {exc}") from exc
        if kind == "ok":
            value: _T = payload
            return value
        if isinstance(payload, BaseException):
            raise payload
        raise ChildFailed(str(payload))

    def kill(self) -> None:
        """Stop the child (if still running) and reap it; nothing once its result is in
        (it is exiting, and is reaped meanwhile)."""
        if self._received:
            return
        if self._status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        self._reap()
        self._reader.join(1.0)

    def _reap(self) -> None:
        if self._status is None:
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:  # reaped already
                status = -1
            if self._status is None:
                self._status = status


class Handover:
    """One value from this process to the child it forks next, sent after the fork.

    Made before the child is forked (:class:`ForkedCall`); the parent calls
    :meth:`parent_side` after the fork and :meth:`send` once the value is known, the child
    :meth:`receive` when it needs it (waiting until it is sent). A pipe: the value must
    fit in it (up to 1 MiB on Linux, where the pipe is enlarged), so that :meth:`send`
    never waits for a child that reads late; a larger one is not sent, and the child
    receives None — as it does when the parent closes its side without sending, or
    without a fork (:meth:`close`).
    """

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        self._capacity = _enlarged(self._write)
        os.set_blocking(self._write, False)
        self._parent = os.getpid()
        self._closed: set[str] = set()

    def _close(self, side: str) -> None:
        if side not in self._closed:
            self._closed.add(side)
            os.close(self._read if side == "read" else self._write)

    def parent_side(self) -> None:
        """In the parent, after the fork: only the child reads."""
        self._close("read")

    def send(self, value: Any) -> bool:
        """Send ``value`` (parent side; once): whether it was sent (False: larger than the
        pipe holds, or the child is gone)."""
        sent = False
        try:
            data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            if len(data) <= self._capacity:
                sent = os.write(self._write, data) == len(data)  # the empty pipe holds it
        except OSError:  # the child is gone (EPIPE) or the pipe is fuller than expected
            sent = False
        finally:
            self._close("write")
        return sent

    def receive(self) -> Any | None:
        """In the child: the value the parent sends (waits for it); None if none comes."""
        if os.getpid() == self._parent:
            raise RuntimeError("Handover.receive is for the forked child")
        self._close("write")  # the parent's copy alone keeps the pipe open
        chunks = []
        with os.fdopen(self._read, "rb", buffering=0) as stream:
            self._closed.add("read")
            while chunk := stream.read(1 << 20):
                chunks.append(chunk)
        data = b"".join(chunks)
        try:
            return pickle.loads(data) if data else None
        except Exception:  # a truncated write
            return None

    def close(self) -> None:
        """Both sides closed (no fork happened, or the value is no longer needed)."""
        self._close("read")
        self._close("write")


def _enlarged(fd: int) -> int:
    """Enlarge the pipe of ``fd`` to 1 MiB where Linux allows it (``F_SETPIPE_SZ``); its
    size (64 KiB, Linux's default, when it cannot be enlarged)."""
    with contextlib.suppress(Exception):
        import fcntl

        return int(fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 1 << 20))
    return 1 << 16


def _die_with_parent(parent: int) -> None:
    """Ask Linux to kill this child when its parent dies (``PR_SET_PDEATHSIG``), so that a
    parent killed mid-computation leaves no orphan computing for nobody."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except Exception:  # not Linux's libc: the child ends on its own anyway
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


#: What opens a part sent ahead (``ForkedCall(…, early=True)``), before its length (8 bytes,
#: big-endian) and its pickle; a result's pickle never starts with a zero byte.
_EARLY = b"\x00gradercal-early"


def _past_early_parts(data: bytes, consumed: int) -> bytes:
    """``data`` after the parts sent ahead (those :meth:`ForkedCall.early` took, then any
    it did not)."""
    data = data[consumed:]
    head = len(_EARLY) + 8
    while data.startswith(_EARLY) and len(data) >= head:
        data = data[head + int.from_bytes(data[len(_EARLY) : head], "big") :]
    return data


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _child(fn: Callable[..., Any], fd: int, parent: int, early: bool = False) -> None:
    """The child's whole life: compute, send, exit. Never returns."""
    code = 0
    _die_with_parent(parent)

    def send(value: Any) -> None:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        _write_all(fd, _EARLY + len(data).to_bytes(8, "big"))
        _write_all(fd, data)

    try:
        try:
            message: tuple[str, Any] = ("ok", fn(send) if early else fn())
            data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:
            text = "".join(traceback.format_exception(exc))
            try:
                data = pickle.dumps(("error", exc), protocol=pickle.HIGHEST_PROTOCOL)
                pickle.loads(data)  # an exception that pickles but does not unpickle
            except Exception:
                data = pickle.dumps(("error", f"{type(exc).__name__}: {exc}\n{text}"))
        _write_all(fd, data)
        os.close(fd)  # the parent has it all now, without waiting for this exit
    except BaseException:
        code = 1
    finally:
        _leave(code)


def _leave(code: int) -> None:
    """The child's exit (no ``atexit`` handler, no flush of the parent's buffers)."""
    os._exit(code)
