"""What saving a verdict does to its assignment's status: the one rule the grading store
applies when it writes the verdict and the grading view shows before it reloads.

Pure (no database, no Qt): :func:`status_after_save`.
"""

from __future__ import annotations

from gradercal.model import AssignmentStatus

__all__ = ["status_after_save"]


def status_after_save(status: str, *, answered: bool, changed: bool) -> str:
    """The status of an assignment after one of its verdicts is saved.

    A save that changed the stored verdict (``changed``) and answers it starts a *pending*
    assignment (*in progress*); one that clears the verdict of a *submitted* assignment
    reopens it (*in progress*: a criterion is unanswered again). Every other save keeps
    ``status``: a save that changed nothing, an assignment already in progress, a skipped
    one, a submitted one whose verdict is still answered.

    Args:
        status: The assignment's status before the save (an :class:`AssignmentStatus`
            value).
        answered: Whether the saved verdict answers the criterion.
        changed: Whether the save changed the stored verdict (a new revision).
    """
    if not changed:
        return status
    starts = status == AssignmentStatus.PENDING.value and answered
    reopens = status == AssignmentStatus.SUBMITTED.value and not answered
    return AssignmentStatus.IN_PROGRESS.value if starts or reopens else status
