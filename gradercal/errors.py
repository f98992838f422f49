"""Errors that reach users: each says which file, line and field is wrong."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

#: How many problems an error message lists before it only counts the rest.
MAX_LISTED_PROBLEMS = 50


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: where (file, line, field) and what."""

    file: str
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )


class GradercalError(Exception):
    """Base class of the errors gradercal reports to users without a traceback."""


class ValidationError(GradercalError):
    """An input failed validation; ``problems`` lists every problem found."""

    def __init__(self, problems: Iterable[Problem], hint: str | None = None) -> None:
        self.problems = list(problems)
        #: A closing line on what the input was taken for (e.g. which format read it).
        self.hint = hint
        super().__init__(self.render())

    def render(self, limit: int = MAX_LISTED_PROBLEMS) -> str:
        lines = [str(p) for p in self.problems[:limit]]
        rest = len(self.problems) - limit
        if rest > 0:
            lines.append(f"… and {rest} more problem{'s' if rest != 1 else ''}")
        if self.hint:
            lines.append(self.hint)
        return "\n".join(lines)


class ConflictError(GradercalError):
    """The input disagrees with what the database already holds; nothing was written."""


class NotFoundError(GradercalError):
    """A named benchmark, grader, task or response does not exist."""
