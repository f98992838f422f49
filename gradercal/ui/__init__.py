"""The PySide6 desktop app (installed as ``gradercal.ui``): thin adapters over core and db.

Importing it guards the interpreter against PySide6 6.12's stray ``None`` decrements
(:mod:`gradercal.ui._none_guard`), before any widget exists.
"""

from gradercal.ui._none_guard import guard_none

guard_none()

#: The views of ``gradercal gui --view`` that open the coordinator window (the others, a
#: grader's); Qt-free, for the command to know before it imports the window's modules.
COORDINATOR_VIEWS = frozenset(
    {"dashboard", "progress", "tasks", "clarifications", "history", "next"}
)
