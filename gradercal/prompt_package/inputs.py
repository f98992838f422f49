"""The inputs of a prompt package: what the experts wrote and what they decided.

:class:`ExpertNote` is one note of an expert about a criterion ("criterion unclear" flags
and adjudication notes, the raw material of the guidance); :class:`AdjudicatedItem` is a
(response, criterion) pair with its final verdict and what everyone said about it (the
pool of few-shot examples and of the per-tag counts). Both are plain records: the
database side (:mod:`gradercal.db.prompt_sources`) fills them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from gradercal.judge.prompts import normalize_text

__all__ = ["AdjudicatedItem", "ExpertNote"]


@dataclass(frozen=True)
class ExpertNote:
    """One thing an expert wrote about a criterion.

    Attributes:
        source: ``"unclear"`` (a grader flagged the criterion unclear, with a note),
            ``"adjudication"`` (an adjudicator's note on the final verdict) or
            ``"clarification"`` (a coordinator's answer to the graders' questions on the
            criterion: :mod:`gradercal.db.clarifications`).
        task_id, criterion_id, response_id: Where (external ids; ``response_id`` is
            empty for a clarification, which is about the criterion, not a response).
        criterion: The criterion's text.
        tags: The criterion's tags.
        author: The grader or adjudicator.
        text: The note.
        verdict: The adjudicated verdict (adjudication) or the grader's (unclear).
        judge_met: The judge's verdict on the same item (None: no verdict).
    """

    source: Literal["unclear", "adjudication", "clarification"]
    task_id: str
    criterion_id: str
    response_id: str
    criterion: str
    tags: tuple[str, ...]
    author: str
    text: str
    verdict: bool | None = None
    judge_met: bool | None = None


@dataclass(frozen=True)
class AdjudicatedItem:
    """A (response, criterion) pair with a final verdict, and what everyone said.

    Attributes:
        task_id, response_id, criterion_id: External ids.
        criterion: The criterion's text.
        points: Its points.
        tags: Its tags.
        task_prompt: The task's prompt.
        response: The response's text.
        met: The adjudicated (final) verdict.
        adjudicator: Who decided.
        note: The adjudicator's note.
        experts: ``{grader: met}`` of the human graders (None: unanswered).
        rationales: ``{grader: rationale}`` of the human graders who wrote one.
        judge_met: The judge's verdict (None: none).
    """

    task_id: str
    response_id: str
    criterion_id: str
    criterion: str
    points: int
    tags: tuple[str, ...]
    task_prompt: str
    response: str
    met: bool
    adjudicator: str = ""
    note: str | None = None
    experts: Mapping[str, bool | None] = field(default_factory=dict)
    rationales: Mapping[str, str] = field(default_factory=dict)
    judge_met: bool | None = None

    @property
    def judge_wrong(self) -> bool:
        """The judge gave a verdict that the adjudication overruled."""
        return self.judge_met is not None and self.judge_met != self.met

    @property
    def disagreement(self) -> bool:
        """Experts disagreed among themselves, or someone (judge included) with the final."""
        said = {v for v in self.experts.values() if v is not None}
        return len(said) > 1 or self.judge_wrong or (bool(said) and said != {self.met})

    def explanation(self) -> str:
        """The answer's explanation: the adjudicator's note, else an agreeing expert's."""
        if self.note and self.note.strip():
            return normalize_text(self.note)
        for grader in sorted(self.rationales):
            if self.experts.get(grader) == self.met and self.rationales[grader].strip():
                return normalize_text(self.rationales[grader])
        return f"The experts' final verdict: the criterion is {'' if self.met else 'not '}met."
