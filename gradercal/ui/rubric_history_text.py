"""What the rubric history view says about a task's versions (#33), Qt-free.

One stored version's ``changes`` (``content_version.changes``, see
:func:`gradercal.db.revisions.revision_changes`) as HTML: every changed field of the
task and of each criterion, its kind of change, and its text before → after as a word
diff (:func:`gradercal.ui.revision_text.diff_html`); and the stale verdicts per grader as
a line of words.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from gradercal.ui.revision_text import diff_html

__all__ = ["changes_html", "stale_text"]


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def _field_html(f: Mapping[str, Any], dark: bool) -> str:
    name = html.escape(str(f.get("field", "")))
    kind = html.escape(str(f.get("kind", "")))
    diff = diff_html(_text(f.get("before")), _text(f.get("after")), dark=dark)
    return f"<li><b>{name}</b> <i>({kind})</i>: {diff}</li>"


def changes_html(changes: Mapping[str, Any], *, dark: bool = False) -> str:
    """The changes of one version as HTML (a version without changes says so)."""
    parts: list[str] = []
    task_fields = list(changes.get("task") or ())
    if task_fields:
        parts.append("<p><b>Task</b></p><ul>")
        parts += [_field_html(f, dark) for f in task_fields]
        parts.append("</ul>")
    for c in changes.get("criteria") or ():
        cid = html.escape(str(c.get("id", "")))
        kind = html.escape(str(c.get("kind", "")))
        if c.get("added"):
            parts.append(f"<p><b>Criterion {cid}</b>: added</p>")
        elif c.get("removed"):
            parts.append(f"<p><b>Criterion {cid}</b>: removed</p>")
        else:
            parts.append(f"<p><b>Criterion {cid}</b> <i>({kind})</i></p><ul>")
            parts += [_field_html(f, dark) for f in c.get("fields") or ()]
            parts.append("</ul>")
    return "".join(parts) or "<p>No change recorded (the first stored version).</p>"


def stale_text(counts: Mapping[str, int]) -> str:
    """``{"ana": 3, "judge": 1}`` → ``"ana 3 · judge 1 (4 stale verdicts)"``."""
    if not counts:
        return "no stale verdicts"
    total = sum(counts.values())
    each = " · ".join(f"{name} {n}" for name, n in sorted(counts.items()))
    return f"{each} ({total} stale verdict{'s' if total != 1 else ''})"
