"""``gradercal gui``: the desktop app (registered lazily by :class:`gradercal.cli.LazyGroup`).

Qt, PyMuPDF and the app's modules are imported inside the command, so ``gradercal
--help`` stays fast.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click


def _check_packet_args(
    packet: Path, grader: str | None, benchmark: str | None, view: str, screenshot: Path | None
) -> None:
    """A packet fixes the database, the grader and the benchmark: refuse what contradicts it."""
    ctx = click.get_current_context()
    if ctx.get_parameter_source("db") == click.core.ParameterSource.COMMANDLINE:
        raise click.UsageError("give either a packet file or --db, not both")
    if packet.suffix.lower() != ".gcpkg":
        hint = " (to open a database, use --db)" if packet.suffix.lower() in DB_SUFFIXES else ""
        raise click.BadParameter(f"{packet} is not a grading packet (.gcpkg){hint}")
    if grader is not None or benchmark is not None:
        raise click.UsageError("a packet's grader and benchmark are fixed: drop --grader/-b")
    if view == "dashboard":
        raise click.UsageError("a packet holds one grader's work: no dashboard")
    if screenshot is not None:
        raise click.UsageError("--screenshot works on a database (--db), not a packet")


#: File name endings that suggest a database given where a packet was expected.
DB_SUFFIXES = (".sqlite", ".sqlite3", ".db")


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise click.BadParameter("use WIDTHxHEIGHT, e.g. 1600x1000") from None
    if not (400 <= w <= 8000 and 300 <= h <= 8000):
        raise click.BadParameter("between 400x300 and 8000x8000")
    return w, h


@click.command()
@click.argument(
    "packet",
    required=False,
    metavar="[FILE.gcpkg]",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
)
@click.option(
    "--db",
    "db",
    envvar="GRADERCAL_DB",
    metavar="PATH|URL",
    help="SQLite file or database URL. Default: $GRADERCAL_DB, else the user data directory.",
)
@click.option("--grader", metavar="NAME", help="Grade as NAME (created when new).")
@click.option(
    "--benchmark", "-b", metavar="NAME", help="Benchmark, when the database holds several."
)
@click.option(
    "--view",
    type=click.Choice(["grading", "review", "dashboard"]),
    default="grading",
    show_default=True,
    help="Open in grading mode or task review mode, or (coordinators) open a coordinator "
    "window with the agreement dashboard and adjudication; a grading window never shows "
    "the dashboard. With dashboard, --grader names the adjudicator.",
)
@click.option(
    "--screenshot",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="OUT.png",
    help="Build the window offscreen, show the first queue item with an artifact, "
    "save a PNG of the whole window and exit.",
)
@click.option(
    "--size",
    default="1600x1000",
    show_default=True,
    metavar="WxH",
    help="Window size for --screenshot.",
)
@click.option(
    "--theme",
    type=click.Choice(["system", "light", "dark"]),
    default=None,
    help="Colours: follow the system (default), or force light or dark. Also $GRADERCAL_THEME.",
)
def gui(
    packet: Path | None,
    db: str | None,
    grader: str | None,
    benchmark: str | None,
    view: str,
    screenshot: Path | None,
    size: str,
    theme: str | None = None,
) -> None:
    """Open the expert grading app: grade responses criterion by criterion, beside the
    task's artifacts; keyboard-first (F1 lists the keys), blinded, saved as you go.

    With FILE.gcpkg (from `gradercal packet export`), grade offline into that packet: the
    grader and benchmark are the packet's, and the file is kept up to date as you go
    (send it back for `gradercal packet merge`).
    """
    from gradercal.errors import GradercalError

    if theme is not None:
        os.environ["GRADERCAL_THEME"] = theme
    if packet is not None:
        _check_packet_args(packet, grader, benchmark, view, screenshot)
        from gradercal.ui.qt_app import run as run_packet

        sys.exit(run_packet(view=view, packet=packet))

    if screenshot is not None:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        width_height = _size(size)
        from gradercal.ui.qt_app import screenshot as take

        try:
            code = take(screenshot, db, grader, benchmark, view, width_height)
        except GradercalError as exc:
            click.echo(click.style("error: ", fg="red", bold=True) + str(exc), err=True)
            sys.exit(1)
        click.echo(f"screenshot saved to {screenshot}")
        sys.exit(code)
    from gradercal.ui.qt_app import run

    sys.exit(run(db, grader, benchmark, view))
