"""A fork server for the dashboard's worker process, for the test suite only.

Every coordinator window starts a dashboard worker (``python -m
gradercal.ui.dashboard.worker``), which imports pandas, scipy, scikit-learn and matplotlib
and draws once before it computes: about 2.5 s of CPU per window, paid by a hundred GUI
tests a run. Here one *server* per pytest process does those imports once; each window's
worker is then a fork of it, running the same :func:`gradercal.ui.dashboard.worker.main`.

The window still starts a process of its own (``QProcess``): the *client*, this file run
as a script with the standard library only. It hands its standard input, output and error
to the server (``SCM_RIGHTS``) with its environment and working directory; the server
forks, and the child puts those on its descriptors 0–2 and serves the window on them, as a
worker started by the window would. The client stays until the child ends and then ends
the same way (the same exit code, or killed by the same signal), so the window sees its
worker exit, crash or be killed as before. A client that goes away (killed by the window)
takes its child with it. The child's process id is the worker's (its ``hello``), and its
command line names the worker module.

Not used by the tests of the worker's start itself (its imports, its answer from the disk
before them, its command line): they start ``python -m gradercal.ui.dashboard.worker``.

    python worker_fork_server.py serve SOCKET MODULE PARENT  # the server (prints "ready")
    python worker_fork_server.py client SOCKET          # what the window starts
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time

_LEN = struct.Struct("!I")
_STATUS = struct.Struct("!i")
#: How long a client waits for the server to listen (it imports for a few seconds).
CONNECT_WAIT = 120.0


def _read_exact(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise EOFError("connection closed")
        data += chunk
    return data


# -- the client: what the window starts -------------------------------------------------------
def client(path: str) -> int:
    """Hand descriptors 0–2 to the server's next child; end as that child ends."""
    deadline = time.monotonic() + CONNECT_WAIT
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    while True:
        try:
            conn.connect(path)
            break
        except (FileNotFoundError, ConnectionRefusedError):
            if time.monotonic() > deadline:
                print(
                    f"worker fork server: nothing listens on {path} (its log: server.log beside it)",
                    file=sys.stderr,
                )
                return 70
            time.sleep(0.02)
    payload = json.dumps({"env": dict(os.environ), "cwd": os.getcwd()}).encode()
    socket.send_fds(conn, [b"w"], [0, 1, 2])
    conn.sendall(_LEN.pack(len(payload)) + payload)
    try:
        (status,) = _STATUS.unpack(_read_exact(conn, _STATUS.size))  # the child's pid
        (status,) = _STATUS.unpack(_read_exact(conn, _STATUS.size))  # how it ended
    except EOFError:
        return 71  # the server went away
    if status < 0:  # killed by a signal: so is this process
        with contextlib.suppress(OSError, ValueError):  # (SIGKILL's cannot be set)
            signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        time.sleep(5)
        return 128 - status
    return status


# -- the server: one per pytest process ------------------------------------------------------------
def _child(request: dict[str, object], fds: list[int], module: object) -> None:
    """In the forked child: become the worker on the client's descriptors; never returns."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])  # type: ignore[call-overload]
        os.chdir(str(request["cwd"]))
        code = int(module.main() or 0)  # type: ignore[attr-defined]
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def serve(path: str, module_name: str, parent: int) -> None:
    """Import ``module_name`` and its heavy imports (its ``preload``), then fork one child per
    client until process ``parent`` (pytest, which started this one) goes away or this
    process is terminated."""
    import gc
    import importlib

    os.environ.setdefault("MPLBACKEND", "Agg")
    module = importlib.import_module(module_name)
    module.preload()
    gc.collect()
    gc.freeze()  # what is imported stays shared with the children, untouched

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(path)
        listener.listen(64)
        selector = selectors.DefaultSelector()
        selector.register(listener, selectors.EVENT_READ, "accept")
        selector.register(wake_r, selectors.EVENT_READ, "signal")
        children: dict[int, socket.socket] = {}
        print("ready", flush=True)
        try:
            while os.getppid() == parent:
                for key, _events in selector.select(timeout=1.0):
                    if key.data == "signal":
                        while True:
                            try:
                                if not os.read(wake_r, 512):
                                    break
                            except BlockingIOError:
                                break
                    elif key.data == "accept":
                        conn, _ = listener.accept()
                        try:
                            _msg, fds, _flags, _addr = socket.recv_fds(conn, 1, 3)
                            (n,) = _LEN.unpack(_read_exact(conn, _LEN.size))
                            request = json.loads(_read_exact(conn, n))
                        except (OSError, EOFError, ValueError):
                            conn.close()
                            continue
                        pid = os.fork()
                        if pid == 0:
                            signal.set_wakeup_fd(-1)
                            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                            signal.signal(signal.SIGTERM, signal.SIG_DFL)
                            selector.close()
                            listener.close()
                            for other in children.values():
                                other.close()
                            os.close(wake_r)
                            os.close(wake_w)
                            conn.close()
                            _child(request, fds, module)
                        for fd in fds:
                            os.close(fd)
                        try:
                            conn.sendall(_STATUS.pack(pid))
                        except OSError:
                            # The client went away before its worker's pid reached it (the
                            # window killed it at once): its child goes too, and the server
                            # serves on (before, this error ended it, and every later window
                            # of the pytest process found nothing listening).
                            with contextlib.suppress(ProcessLookupError):
                                os.kill(pid, signal.SIGKILL)
                            conn.close()
                            continue
                        children[pid] = conn
                        selector.register(conn, selectors.EVENT_READ, pid)
                    else:  # the client ended (killed): its child goes too
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(key.data, signal.SIGKILL)
                        selector.unregister(key.fileobj)
                _reap(children, selector)
        finally:
            for pid in list(children):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


def _reap(children: dict[int, socket.socket], selector: selectors.BaseSelector) -> None:
    """Tell each ended child's client how it ended (exit code, or minus the signal)."""
    while children:
        try:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is None:
            continue
        if os.WIFSIGNALED(wait_status):
            status = -os.WTERMSIG(wait_status)
        else:
            status = os.waitstatus_to_exitcode(wait_status)
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(conn)
        with contextlib.suppress(OSError):
            conn.sendall(_STATUS.pack(status))
        conn.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1:2] == ["client"]:
        raise SystemExit(client(sys.argv[2]))
    else:
        raise SystemExit(f"usage: {sys.argv[0]} serve SOCKET MODULE PARENT | client SOCKET")
