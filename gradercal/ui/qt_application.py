"""The app's one ``QApplication`` (:func:`application`), in a module of its own: ``gradercal
gui`` makes it before the window's modules are imported, to start the dashboard's worker
process early (:func:`gradercal.ui.dashboard.qt_process.launch_early`).
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QThreadPool
from PySide6.QtWidgets import QApplication

__all__ = ["application"]


def application() -> QApplication:
    """The process's ``QApplication``, made (and set up: names, style, theme, the
    collector on the UI thread) the first time."""
    app = QApplication.instance()
    if isinstance(app, QApplication):
        return app
    app = QApplication(sys.argv[:1])
    # Keep worker threads alive between jobs (starting a thread costs milliseconds).
    QThreadPool.globalInstance().setExpiryTimeout(-1)
    app.setApplicationName("gradercal")
    app.setOrganizationName("gradercal")
    app.setApplicationDisplayName("gradercal")
    # Fusion follows the system's light or dark colour scheme and looks the same everywhere.
    app.setStyle("Fusion")
    from gradercal.ui.qt_theme import apply_theme

    apply_theme(app)  # the system's scheme, unless --theme / $GRADERCAL_THEME says otherwise
    from gradercal.ui.qt_workers import collect_garbage_on_ui_thread

    collect_garbage_on_ui_thread()
    return app
