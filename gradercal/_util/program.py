"""The ``gradercal`` program's own process: whether this is it, and ending it at once.

:func:`gradercal.cli.run` (the console script, ``python -m gradercal``) marks the process as
the program's own; a caller of ``gradercal.cli.main`` (the tests' ``CliRunner``) is not.
"""

from __future__ import annotations

import atexit
import os
import sys

__all__ = ["OWN_PROCESS", "end_process_now"]

#: Whether this process is the ``gradercal`` program itself (:func:`gradercal.cli.run`),
#: not a caller of ``main`` that runs on afterwards (the tests' ``CliRunner``).
OWN_PROCESS = False


def end_process_now() -> None:
    """End the program at once, its work written: standard output and error flushed and
    the ``atexit`` handlers run (scratch folders removed, logging shut down), then
    ``os._exit(0)`` — the interpreter's teardown, which frees every object the command
    left one by one (about 0.05 s after a report at 750 tasks), skipped. Nothing when
    this process is not the program's own (:data:`OWN_PROCESS`), or when flushing fails
    (a closed pipe: the usual exit reports it)."""
    if not OWN_PROCESS:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    atexit._run_exitfuncs()
    os._exit(0)
