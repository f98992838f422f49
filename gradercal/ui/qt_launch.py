"""Start the coordinator window's dashboard worker early (``gradercal gui`` on a
coordinator view, #33). Importing this module imports no Qt: the function does.
"""

from __future__ import annotations

__all__ = ["launch_dashboard_worker"]


def launch_dashboard_worker() -> None:
    """Make the ``QApplication`` and start the dashboard's worker process first of all,
    before the coordinator window's modules are imported (``gradercal gui`` on a
    coordinator view, #33): the worker's start-up and the headline's imports overlap the
    window's imports and build (:func:`gradercal.ui.dashboard.qt_process.launch_early`).

    Measured at 750 tasks (``benchmarks/README.md``, session 17): PySide6 loaded first
    makes the window's own imports slower (its import hook) and the window shows
    ≈ 0.15 s later, but the headline comes ≈ 0.3–0.4 s sooner after it shows and ≈ 0.5 s
    sooner from the command's start than with the worker started by the window. Started
    after the database layer instead (the order :mod:`gradercal.ui.qt_app` keeps), the
    worker gains only the ≈ 0.1 s that remains of the imports."""
    from gradercal.ui.dashboard.qt_process import launch_early
    from gradercal.ui.qt_application import application

    application()
    launch_early()
