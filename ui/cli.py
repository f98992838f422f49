"""``gradercal gui``: the desktop app (registered by gradercal/cli.py with ``main.add_command``).

Qt, PyMuPDF and the app's modules are imported inside the command, so ``gradercal
--help`` stays fast.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise click.BadParameter("use WIDTHxHEIGHT, e.g. 1600x1000") from None
    if not (400 <= w <= 8000 and 300 <= h <= 8000):
        raise click.BadParameter("between 400x300 and 8000x8000")
    return w, h


@click.command()
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
    type=click.Choice(["grading", "review"]),
    default="grading",
    show_default=True,
    help="Open in grading mode or task review mode.",
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
def gui(
    db: str | None,
    grader: str | None,
    benchmark: str | None,
    view: str,
    screenshot: Path | None,
    size: str,
) -> None:
    """Open the expert grading app: grade responses criterion by criterion, beside the
    task's artifacts; keyboard-first (F1 lists the keys), blinded, saved as you go.
    """
    from gradercal.errors import GradercalError

    if screenshot is not None:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        width_height = _size(size)
        from gradercal.ui.app import screenshot as take

        try:
            code = take(screenshot, db, grader, benchmark, view, width_height)
        except GradercalError as exc:
            click.echo(click.style("error: ", fg="red", bold=True) + str(exc), err=True)
            sys.exit(1)
        click.echo(f"screenshot saved to {screenshot}")
        sys.exit(code)
    from gradercal.ui.app import run

    sys.exit(run(db, grader, benchmark, view))
