"""What the coordinator window says when the rules refuse an action (#33), Qt-free.

The database layer words its refusals for the command line ("close it first (tasks close
ID), or --force"). A coordinator in the window has buttons and keys, not commands:
:func:`refusal_text` rewrites each command hint as the window's own action, and
:func:`forceable` tells whether the refusal is one that ``force`` lifts (the window then
offers to do it anyway, after a confirmation), so no refusal ever asks for a command.
"""

from __future__ import annotations

import re

__all__ = ["FORCE_LABELS", "forceable", "refusal_text"]

#: The window's name for doing an action anyway (``force``), by action.
FORCE_LABELS = {
    "accept": "Force accept…",
    "reject": "Reject anyway",
    "close": "Close anyway",
}

#: (command-line hint, the window's words), applied in order.
_HINTS: tuple[tuple[str, str], ...] = (
    ("reopen it first (tasks reopen ID --note …)", "send it back first (Send back…)"),
    ("(tasks open ID starts round 1)", "(Open round starts round 1)"),
    ("close it first (tasks close ID)", "close it first (Close round…)"),
    (" (see `gradercal tasks`)", ""),
    ("; --force closes it", ""),
    ("; --force decides without one", ""),
    ("; open the next round, or --force", "; open the next round (Open round)"),
    (", or --force", ""),
    ("; --force", ""),
    ("answer without --recheck", "answer without re-check"),
)
#: Any flag left in parentheses, e.g. "(--note TEXT)", "(--actor NAME)".
_FLAG = re.compile(r"\s*\(--[a-z-]+(?: [A-Z…]+)?\)")
#: Any command in backticks.
_COMMAND = re.compile(r"\s*\(?`gradercal [^`]*`\)?")


def refusal_text(message: str) -> str:
    """``message`` with every command-line hint replaced by the window's words."""
    text = message
    for hint, words in _HINTS:
        text = text.replace(hint, words)
    text = _FLAG.sub("", text)
    text = _COMMAND.sub("", text)
    return text


def forceable(message: str) -> bool:
    """Whether the refusal is one ``force`` lifts (its command-line words offer --force)."""
    return "--force" in message
