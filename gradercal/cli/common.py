"""What every command module shares: the common options, error handling, the one
``--json`` emitter, the progress bar, and opening the database.

Command modules (:mod:`gradercal.cli.data`, :mod:`gradercal.cli.analysis`, …) import this
module and never each other; :mod:`gradercal.cli` only registers them.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

from gradercal._util.jsonsafe import json_safe
from gradercal._util.numbers import percent
from gradercal.errors import GradercalError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from gradercal.db.judging import JudgeStore
    from gradercal.db.repo import Repository

F = TypeVar("F", bound=Callable[..., Any])

BREAKDOWNS = ("workflow", "domain", "artifacts", "answer_format")


class EngineChoice(click.Choice[str]):
    """A ``click.Choice`` whose choices are an engine's own list (its registry), read each
    time they are needed — the command's ``--help`` or the parsing of its options — so the
    option never copies the list and importing a command module still loads no engine.

    ``names`` returns the list, importing the engine itself (a ``lambda`` with a local
    import)."""

    def __init__(self, names: Callable[[], Sequence[str]]) -> None:
        self._names = names
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(self._names())

    @choices.setter
    def choices(self, _value: object) -> None:  # click.Choice.__init__ sets it
        pass


def emit_json(obj: Any) -> None:
    """Print ``obj`` as strict JSON: every command's ``--json`` output.

    ``obj`` goes through :func:`gradercal._util.jsonsafe.json_safe` first (numpy scalars
    → numbers, NaN and ±inf → ``null``, datetimes and other values → ``str``), then
    ``json.dumps(..., indent=2, ensure_ascii=False, allow_nan=False)``.
    """
    click.echo(pretty_json(json_safe(obj)))


#: Where orjson's text may differ from the standard library's on JSON data: a float
#: below 1e-4 in magnitude, which the standard library writes with an exponent (``1e-05``)
#: and orjson as ``0.00001`` or ``2.5e-7``. Neither library writes such text otherwise
#: (it may occur inside a string, which only costs the slow path).
_SMALL_FLOAT = re.compile(rb"[0-9]e-[0-9]|(?<![0-9])0\.0000")


def pretty_json(data: Any) -> str:
    """``json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)``, byte for byte.

    The standard library's encoder is pure Python once ``indent`` is given (≈ 0.75 s for
    the 25 MB of ``gradercal health --json`` on 750 tasks); orjson writes the same text
    in C for JSON data (``json_safe``'s output: plain dicts with str keys, lists, str,
    int, finite float, bool, None). Its output is used unless it could differ: an
    integer or string orjson refuses (beyond 64 bits, lone surrogates), or a float
    below 1e-4 in magnitude (:data:`_SMALL_FLOAT`): then the standard library writes it.
    """
    import orjson

    try:
        out = orjson.dumps(data, option=orjson.OPT_INDENT_2)
    except (TypeError, orjson.JSONEncodeError):
        out = None
    if out is None or _SMALL_FLOAT.search(out):
        return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)
    return out.decode("utf-8")


def fail(message: str) -> None:
    click.echo(click.style("error: ", fg="red", bold=True) + message, err=True)


def handle_errors(fn: F) -> F:
    """Turn gradercal's own errors into a clean message and exit status 1."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except GradercalError as exc:
            fail(str(exc))
            sys.exit(1)
        except Exception as exc:
            message = storage_failure(exc)
            if message is None:
                raise
            fail(message)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


def storage_failure(exc: BaseException) -> str | None:
    """One line for a failure of the disk or the database server under a command (a full
    disk, an I/O error, a lost connection, a damaged page of a SQLite file); None for
    anything else (a bug: shown whole).
    Writes are transactions, so such a failure leaves the database as it was."""
    import errno
    import sqlite3

    from sqlalchemy.exc import DatabaseError, OperationalError, ProgrammingError

    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return f"the disk is full ({exc.filename or 'writing'}): free some space and run it again"
    if isinstance(exc, ProgrammingError) and getattr(exc.orig, "sqlstate", None) == "42501":
        reason = str(exc.orig).strip().splitlines()[0]
        return (
            f"your database login may not do this ({reason}): in team mode a grader reads "
            "and writes only their own work; ask the coordinator (docs/team.md)"
        )
    if isinstance(exc, sqlite3.DatabaseError):  # raised by a raw cursor (frames_read)
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if "malformed" in reason or "not a database" in reason:
            return _damaged(reason)
        return None
    if not isinstance(exc, DatabaseError):
        return None
    reason = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc)
    if "malformed" in reason or "not a database" in reason:
        return _damaged(reason)
    if not isinstance(exc, OperationalError):
        return None
    if "full" in reason.lower():
        return (
            f"the database's disk is full ({reason}): nothing was written; free some space "
            "and run it again"
        )
    if "readonly" in reason.lower() or "read-only" in reason.lower():
        return (
            f"the database is read-only ({reason}): nothing was written; reading commands "
            "still work. Make the file (and its folder) writable, or work on a copy"
        )
    return f"the database failed ({reason}): nothing was written"


def _damaged(reason: str) -> str:
    """A damaged page met while reading or writing (the file opened: its header and schema
    are whole); SQLite rolled the statement's transaction back."""
    return (
        f"the database is damaged ({reason}): restore a copy from `gradercal backup` "
        "(`PRAGMA integrity_check` in sqlite3 lists the damaged pages)"
    )


db_option = click.option(
    "--db",
    "db",
    envvar="GRADERCAL_DB",
    metavar="PATH|URL",
    help="SQLite file or database URL (postgresql+psycopg://…). "
    "Default: $GRADERCAL_DB, else gradercal.sqlite in the user data directory.",
)
#: ``--db`` on a command that uses no database (``judge prices``, ``samples``, ``stats``): taken
#: and ignored, so every command accepts ``--db`` as the README promises and a script that
#: passes it to every call works.
db_option_unused = click.option(
    "--db",
    "db",
    metavar="PATH|URL",
    expose_value=False,
    help="Accepted as by every command; ignored: this command uses no database.",
)
benchmark_option = click.option(
    "--benchmark",
    "-b",
    metavar="NAME",
    help="Benchmark to use when the database holds several.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
seed_option = click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
ci_option = click.option(
    "--ci",
    type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="Confidence level of the intervals.",
)


def _parse_version(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    from gradercal.frame_rows import parse_version

    try:
        return parse_version(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


#: ``--version all|current|N`` of the commands that read verdicts for scores and statistics
#: (issue #16): which verdicts count after a rubric revision. Parsed by
#: :func:`gradercal.frame_rows.parse_version` ("current", "all" or an int ≥ 1).
version_option = click.option(
    "--version",
    "version",
    default="current",
    show_default=True,
    metavar="all|current|N",
    callback=_parse_version,
    help="Which verdicts count after rubric revisions: current (stale verdicts, given "
    "under an older wording of their criterion, are left out), all (every verdict), or a "
    "task version N (the verdicts that were current when each task was at version N). "
    "The --json output names the version used when the benchmark has a revision or the "
    "option is given.",
)


def version_used(repo: Repository, benchmark: str | None, version: Any) -> Any:
    """The version to name in ``--json`` output (the ``"version"`` key), or None to leave
    the key out: it is named when ``--version`` was given on the command line or when
    some criterion of the benchmark was revised in a way that changes verdicts (so the
    output of an unrevised benchmark under the default is as it always was)."""
    from click.core import ParameterSource

    ctx = click.get_current_context(silent=True)
    given = ctx is not None and ctx.get_parameter_source("version") not in (
        None,
        ParameterSource.DEFAULT,
    )
    if given:
        return version
    from gradercal.db.frames_fetch import has_verdict_changes

    return version if has_verdict_changes(repo, benchmark) else None


def with_version(obj: dict[str, Any], version: Any) -> dict[str, Any]:
    """``obj`` with ``"version": version`` after its ``"benchmark"`` key (first when it has
    none); ``obj`` itself when ``version`` is None."""
    if version is None:
        return obj
    out: dict[str, Any] = {}
    if "benchmark" not in obj:
        out["version"] = version
    for k, v in obj.items():
        if k == "version":
            continue
        out[k] = v
        if k == "benchmark":
            out["version"] = version
    return out


def open_repo(db: str | None, *, create: bool = False) -> Repository:
    """The repository of ``--db``; an existing database only unless ``create`` (the
    commands that make one: ``import``, ``init``)."""
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database

    return Repository(open_database(db, create=create))


def text_console(
    *, width: int | None = None, record: bool = False, soft_wrap: bool = False
) -> Console:
    """The rich console every command prints its tables and lines through (on stdout).

    Rich markup, emoji codes and highlighting are **off**: what a command prints is shown
    as written, so a grader name, task title, criterion text or note holding ``[/]``,
    ``[bold]`` or ``:smile:`` is printed as those characters (with markup on, ``[/]``
    ended the command with a ``MarkupError`` traceback). Styles are given as data
    (``print(text, style="dim")``, :func:`styled`), never inside the text. ``width``: the
    width when stdout is not a terminal (None: rich's default)."""
    from rich.console import Console

    return Console(
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=soft_wrap,
        record=record,
        width=None if sys.stdout.isatty() else width,
    )


def styled(*parts: str | tuple[str, str]) -> Text:
    """A line of text for :func:`text_console`, each part a string or ``(string, style)``:
    the style is applied to the string as written (no markup is parsed)."""
    from rich.text import Text

    return Text.assemble(*parts)


@contextmanager
def progress_bar(enabled: bool) -> Iterator[Callable[[str, int, int], None]]:
    """A rich progress bar on stderr (only on a terminal); yields a (stage, done, total) hook."""
    if not enabled or not sys.stderr.isatty():
        yield lambda _stage, _done, _total: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    bars: dict[str, Any] = {}
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as prog:

        def update(stage: str, done: int, total: int) -> None:
            if stage not in bars:
                bars[stage] = prog.add_task(stage, total=max(total, 1))
            prog.update(bars[stage], completed=done, total=max(total, 1))

        yield update


def calibrated_summary(store: JudgeStore, benchmark: str | None, name: str) -> Any:
    """The judge's calibrated per-model figures (no per-response rows); None if uncalibrated."""
    report = store.calibrated_report(benchmark, name)
    if report is None:
        return None
    return {k: v for k, v in report.items() if k != "responses"}


def attach_calibrated(repo: Any, benchmark: str | None, reports: list[dict[str, Any]]) -> None:
    """``gradercal scores --calibrated``: add each judge report's calibrated figures.

    Sets ``report["calibrated"]`` of every report whose grader is a judge to
    ``{"judge", "pass_threshold", "calibration": {"id", "method", "version",
    "created_at"}, "models": [...]}`` (see :func:`gradercal.analysis.calibration.apply.calibrated_report`).

    Raises:
        GradercalError: No report is of a judge, or a judge has no active calibration.
    """
    from gradercal.db.judging import JudgeStore
    from gradercal.errors import ConflictError

    store = JudgeStore(repo.db)
    found = False
    for report in reports:
        name = report["grader"]
        if name == "consensus":
            continue
        try:
            if store.judge(name) is None:
                continue
        except ConflictError:  # a person
            continue
        found = True
        summary = calibrated_summary(store, benchmark, name)
        if summary is None:
            raise GradercalError(
                f"judge {name!r} has no active calibration: fit one with "
                f"`gradercal calibrate --judge {name}`"
            )
        report["calibrated"] = summary
    if not found:
        raise GradercalError("--calibrated needs --grader JUDGE (or all) naming a judge grader")


def print_calibrated(report: dict[str, Any] | None) -> None:
    """Print the calibrated per-model figures (nothing for None)."""
    if report is None:
        return
    cal = report["calibration"]
    click.echo(
        f"calibrated with {cal['method']} v{cal['version']} (calibration #{cal['id']}), "
        f"pass ≥ {report['pass_threshold']:.0%}:"
    )

    def pct(x: float | None) -> str:
        return percent(x)

    for row in report["models"]:
        click.echo(
            f"  {row['model']}: mean score {pct(row['mean_score'])} "
            f"(raw {pct(row['raw_mean_score'])}), pass rate {pct(row['pass_rate'])} "
            f"(raw {pct(row['raw_pass_rate'])}), {row['n_scored']}/{row['n_responses']} scored"
        )


def revision_line(r: Any) -> str:
    """One line on a task's revision (``import --revise``, ``rubric revise``)."""
    version = f"v{r.version_before} → v{r.version}"
    what = [f"{r.kind} change"]
    if r.stale_criteria:
        what.append(
            f"{r.stale_judgments} verdicts on {', '.join(r.stale_criteria)} "
            f"{'would become' if r.dry_run else 'now'} stale"
        )
    if r.rescored_criteria:
        what.append(f"points changed on {', '.join(r.rescored_criteria)} (rescored)")
    if r.added_criteria:
        what.append(f"added {', '.join(r.added_criteria)}")
    if r.removed_criteria:
        what.append(
            f"removed {', '.join(r.removed_criteria)} ({r.removed_verdicts} verdicts to history)"
        )
    if r.requeued:
        what.append(f"back in the queues of {', '.join(r.requeued)}")
    return f"{r.task_id} {version}: " + "; ".join(what)
