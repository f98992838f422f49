"""What the analysis commands share: loading a benchmark, checking the judge and the
experts named, the ``--json`` emitter with the version used, the readable tables' cells and
notes, and the options only they take."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from gradercal.cli.common import emit_json, open_repo, text_console, version_used, with_version
from gradercal.errors import GradercalError

if TYPE_CHECKING:
    from rich.console import Console

    from gradercal.db.repo import Repository
    from gradercal.frames import Frames

F = TypeVar("F", bound=Callable[..., Any])


def calibration_methods() -> tuple[str, ...]:
    from gradercal.analysis.calibration import METHODS

    return METHODS


#: Share of the human-graded tasks ``calibrate`` holds out unless told otherwise.
DEFAULT_HOLDOUT = 0.25
BY_CHOICES = ("criterion", "tag", "workflow", "domain")
BREAKDOWN_CHOICES = ("workflow", "domain", "artifacts", "answer_format")


def refusals(fn: F) -> F:
    """Report ``ValueError`` from the statistics (too little data, unknown names) cleanly."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except GradercalError:
            raise
        except ValueError as exc:
            raise GradercalError(str(exc)) from exc

    return wrapper  # type: ignore[return-value]


def load_benchmark(
    db: str | None, benchmark: str | None, version: Any = "current"
) -> tuple[Repository, Frames, str]:
    repo = open_repo(db)
    bench = repo.benchmark(benchmark)
    return repo, repo.load_frames(bench.name, version), bench.name


def emit_report(repo: Repository, name: str, version: Any, obj: dict[str, Any]) -> None:
    """``--json``: ``obj`` with the version used (:func:`gradercal.cli.common.version_used`)."""
    emit_json(with_version(obj, version_used(repo, name, version)))


def check_judge(frames: Frames, judge: str) -> None:
    from gradercal.analysis.verdicts import human_graders, judge_graders

    known = judge_graders(frames) + human_graders(frames)
    if judge not in known:
        raise GradercalError(
            f"no grader {judge!r} in this benchmark; judges: {', '.join(judge_graders(frames)) or 'none'}"
        )


def chosen_humans(frames: Frames, humans: str | None, judge: str | None) -> list[str]:
    from gradercal.analysis.verdicts import human_graders

    if humans is None:
        names = human_graders(frames)
    else:
        names = [h.strip() for h in humans.split(",") if h.strip()]
        known = set(frames.judgments["grader"])
        bad = [h for h in names if h not in known]
        if bad:
            raise GradercalError(f"no grader {bad[0]!r} in this benchmark")
    return [h for h in names if h != judge]


def table_console() -> Console:
    return text_console(width=120)


def figure_cell(fig: dict[str, Any] | None, digits: int = 3, pct: bool = False) -> str:
    """``0.812 [0.771, 0.850]`` from ``{"value", "ci"}``; ``—`` when null."""
    if fig is None or fig.get("value") is None:
        return "—"

    def f(x: float) -> str:
        return f"{x:.{max(digits - 2, 0)}%}" if pct else f"{x:.{digits}f}"

    text = f(fig["value"])
    if fig.get("ci"):
        lo, hi = fig["ci"]
        text += f" [{f(lo)}, {f(hi)}]"
    return text


def print_notes(console: Console, notes: list[str]) -> None:
    for note in dict.fromkeys(n for n in notes if n):
        console.print(f"note: {note}", style="dim")


humans_option = click.option(
    "--humans",
    metavar="A,B,…",
    help="The human graders forming the consensus (default: every grader of kind human).",
)
bootstrap_option = click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(min=0),
    default=2000,
    show_default=True,
    help="Task-clustered bootstrap resamples for the intervals (0: none).",
)
