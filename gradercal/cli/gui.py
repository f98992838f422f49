"""``gradercal gui``: the desktop app (registered lazily by :class:`gradercal.cli.LazyGroup`).

Qt, PyMuPDF and the app's modules are imported inside the command, so ``gradercal
--help`` stays fast.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib.util import find_spec
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
    if view in ("dashboard", "progress", "tasks", "clarifications", "history", "next"):
        raise click.UsageError(f"a packet holds one grader's work: no {view} view")
    if screenshot is not None:
        raise click.UsageError("--screenshot works on a database (--db), not a packet")


#: The shared libraries Qt's X11 (xcb) platform plugin needs from the system, and the
#: Debian/Ubuntu package of each. Without one of them Qt aborts at start ("Could not load
#: the Qt platform plugin xcb"); the README lists them too.
XCB_PACKAGES = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xinerama.so.0": "libxcb-xinerama0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb.so.1": "libxcb1",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libOpenGL.so.0": "libopengl0",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libdbus-1.so.3": "libdbus-1-3",
    "libglib-2.0.so.0": "libglib2.0-0",
}
#: Qt 6.5 and later also need xcb-cursor, loaded at run time (ldd cannot see it).
XCB_RUNTIME = ("libxcb-cursor.so.0",)


def missing_libraries(ldd_output: str) -> list[str]:
    """The libraries ``ldd`` could not find, in its order, each once."""
    found = re.findall(r"^\s*(\S+)\s+=>\s+not found", ldd_output, flags=re.MULTILINE)
    return list(dict.fromkeys(found))


def xcb_problem(env: dict[str, str] | None = None) -> str | None:
    """Why Qt could not open an X11 window here, with what to install; None when it can
    (or when the check does not apply: not Linux, another platform, a Wayland session,
    no ldd)."""
    env = dict(os.environ) if env is None else env
    platform = env.get("QT_QPA_PLATFORM", "")
    wayland = env.get("XDG_SESSION_TYPE") == "wayland" and env.get("WAYLAND_DISPLAY")
    if not sys.platform.startswith("linux") or platform not in ("", "xcb") or wayland:
        return None
    spec = find_spec("PySide6")
    ldd = shutil.which("ldd")
    if spec is None or not spec.submodule_search_locations or ldd is None:
        return None
    plugin = Path(next(iter(spec.submodule_search_locations)), "Qt/plugins/platforms/libqxcb.so")
    if not plugin.exists():
        return None
    try:
        out = subprocess.run(
            [ldd, str(plugin)], capture_output=True, text=True, timeout=20, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    missing = missing_libraries(out)
    missing += [lib for lib in XCB_RUNTIME if not _loadable(lib) and lib not in missing]
    if not missing:
        return None
    packages = list(dict.fromkeys(XCB_PACKAGES.get(lib, lib) for lib in missing))
    return (
        "Qt cannot open a window on this machine: system libraries of its X11 (xcb) "
        f"platform plugin are missing ({', '.join(missing)}).\n"
        f"On Debian or Ubuntu:  sudo apt-get install {' '.join(packages)}\n"
        "(--screenshot works without them; so does QT_QPA_PLATFORM=wayland on a Wayland "
        "desktop.)"
    )


def _loadable(library: str) -> bool:
    import ctypes

    try:
        ctypes.CDLL(library)
    except OSError:
        return False
    return True


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
    type=click.Choice(
        ["grading", "review", "dashboard", "progress", "tasks", "clarifications", "history", "next"]
    ),
    default="grading",
    show_default=True,
    help="Open in grading mode or task review mode, or (coordinators) open a coordinator "
    "window with the agreement dashboard and adjudication; a grading window never shows "
    "the dashboard. progress opens the coordinator window on grading progress, tasks on "
    "task acceptance (Ctrl+5), clarifications on the clarification inbox (Ctrl+6), history "
    "on the rubric history and stale verdicts (Ctrl+7), next on where to grade next and the "
    "grading plan (Ctrl+8). With "
    "dashboard, --grader names the adjudicator.",
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
    if screenshot is None and (problem := xcb_problem()) is not None:
        click.echo(click.style("error: ", fg="red", bold=True) + problem, err=True)
        sys.exit(1)
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
    from gradercal.ui import COORDINATOR_VIEWS

    if view in COORDINATOR_VIEWS:  # the dashboard's worker first of all (#33)
        from gradercal.ui.dashboard.qt_process import launch_early

        launch_early()
    from gradercal.ui.qt_app import run

    sys.exit(run(db, grader, benchmark, view))
