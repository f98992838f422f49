"""What the revision dialog and the grading view say about a criterion's revision (#16).

Qt-free: the word diff as HTML, a draft of a criterion edit checked before anything is
written, and the consequences of a revision in words. The Qt widgets
(:mod:`gradercal.ui.qt_revise_dialog`, :mod:`gradercal.ui.qt_grading_view`) only show
these strings.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gradercal.db.revisions import RevisionReport
from gradercal.model import Criterion
from gradercal.ops.revisions import word_diff

__all__ = [
    "CriterionDraft",
    "consequences",
    "criterion_changes",
    "diff_html",
    "parse_tags",
]

#: (removed, added) colours on a light and on a dark background
_COLOURS = {False: ("#b3261e", "#1b7f3b"), True: ("#ff8a80", "#6fd08c")}


def diff_html(before: str, after: str, *, dark: bool = False) -> str:
    """``before`` → ``after`` word by word as HTML: removed words struck through in red,
    added words underlined in green, the rest as it is (every text escaped). A word replaced
    by another reads "old new": a space is shown between the struck and the added word when
    neither brings its own."""
    removed, added = _COLOURS[dark]
    parts = []
    previous = ("", "")
    for kind, text in word_diff(before, after):
        escaped = html.escape(text).replace("\n", "<br>")
        if (
            previous[0] == "removed"
            and kind == "added"
            and not previous[1][-1:].isspace()
            and not text[:1].isspace()
        ):
            parts.append(" ")
        previous = (kind, text)
        if kind == "removed":
            parts.append(
                f'<span style="color:{removed}; text-decoration:line-through">{escaped}</span>'
            )
        elif kind == "added":
            parts.append(
                f'<span style="color:{added}; text-decoration:underline; font-weight:600">'
                f"{escaped}</span>"
            )
        else:
            parts.append(escaped)
    return "".join(parts)


def parse_tags(text: str) -> tuple[str, ...]:
    """Tags typed as a comma-separated list (blanks dropped, order and case kept, each once)."""
    out: list[str] = []
    for part in text.split(","):
        tag = part.strip()
        if tag and tag not in out:
            out.append(tag)
    return tuple(out)


def _points(p: int) -> str:
    return f"{p:+d}".replace("-", "−")


def criterion_changes(old: Criterion, new: Criterion) -> list[str]:
    """The changes other than the text, in words ("points +3 → +5")."""
    out = []
    if old.points != new.points:
        out.append(f"points {_points(old.points)} → {_points(new.points)}")
    if old.levels != new.levels:
        out.append(f"levels {old.levels} → {new.levels}")
    if tuple(old.tags) != tuple(new.tags):
        before = ", ".join(old.tags) or "none"
        after = ", ".join(new.tags) or "none"
        out.append(f"tags {before} → {after}")
    return out


@dataclass(frozen=True)
class CriterionDraft:
    """A coordinator's edit of one criterion, before it is saved.

    ``changes()`` gives the keyword arguments of
    :meth:`gradercal.db.revisions.RevisionStore.revise_criterion` for the fields that
    differ from ``old`` (text compared without its surrounding blanks); ``problems()``
    what must be fixed before saving, each as (field, message).
    """

    old: Criterion
    text: str
    points: int
    levels: int
    tags: tuple[str, ...] = field(default_factory=tuple)
    reason: str = ""

    def changes(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.text.strip() != self.old.text:
            out["text"] = self.text
        if self.points != self.old.points:
            out["points"] = self.points
        if self.levels != self.old.levels:
            out["levels"] = self.levels
        if tuple(self.tags) != tuple(self.old.tags):
            out["tags"] = list(self.tags)
        return out

    def revised(self) -> Criterion:
        """The criterion as it would be saved."""
        from dataclasses import replace

        return replace(
            self.old,
            text=self.text.strip() or self.old.text,
            points=self.points,
            levels=self.levels,
            tags=tuple(self.tags),
        )

    def problems(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        if not self.text.strip():
            out.append(("text", "The criterion's text cannot be empty."))
        if self.points == 0:
            out.append(("points", "Points must not be 0."))
        if not self.changes():
            out.append(("text", "Nothing is changed yet: edit the text, points, levels or tags."))
        if not self.reason.strip():
            out.append(("reason", "Say why (the reason is required: it goes in the history)."))
        return out


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def _graders(count: int) -> str:
    """ "1 grader's", "3 graders'" (whose items)."""
    return f"{count:,} grader's" if count == 1 else f"{count:,} graders'"


def consequences(report: RevisionReport, requeued: Sequence[str] = ()) -> tuple[str, str]:
    """A dry run's report in words: (headline, detail).

    ``requeued``: the graders whose submitted items would go back to their queues
    (the dry run's :attr:`~gradercal.db.revisions.RevisionReport.requeued`).
    """
    if report.kind is None:
        return "No change yet", "Edit the text, points, levels or tags to see what it does."
    if report.kind == "verdict":
        stale = report.stale_judgments
        parts = [
            f"{_n(stale, 'verdict')} become{'s' if stale == 1 else ''} stale "
            "(kept in the history, never deleted; left out of scores and agreement until "
            "given again)"
        ]
        if report.stale_adjudications:
            parts.append(f"{_n(report.stale_adjudications, 'adjudication')} too")
        if requeued:
            parts.append(
                f"{_graders(len(requeued))} submitted items go back to their queues "
                f"({', '.join(requeued)})"
            )
        else:
            parts.append("no submitted item goes back to a queue")
        head = (
            f"Verdict change: {_n(stale, 'verdict')} become{'s' if stale == 1 else ''} stale, "
            f"{_graders(len(requeued))} items go back to their queues"
        )
        detail = "; ".join(parts) + ". A judge re-grades them with `judge run --scope stale`."
        return head, detail
    if report.kind == "score":
        return (
            "Points only: scores rescale, nobody regrades",
            "Every verdict stands; scores are recomputed with the new points.",
        )
    return (
        "Note only: no verdict or score changes",
        "Tags are recorded in the history; verdicts and scores stay as they are.",
    )
