"""``gradercal report``: the coordinator's dashboard as a self-contained HTML (and PDF) file.

Registered lazily on the main group (:class:`gradercal.cli.LazyGroup`); the computation
is :func:`gradercal.dashboard.compute_dashboard`, the rendering :mod:`gradercal.dashboard.report`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from gradercal.cli.common import (
    benchmark_option,
    ci_option,
    db_option,
    emit_json,
    handle_errors,
    json_option,
    open_repo,
    progress_bar,
    seed_option,
    version_option,
    version_used,
    with_version,
)
from gradercal.errors import GradercalError

__all__ = ["report"]

_CAL_CHOICES = ("active", "none", "threshold", "leniency", "isotonic", "platt")


def _names(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return tuple(x.strip() for x in value.split(",") if x.strip())


def _writable(path: Path, option: str) -> None:
    if path.exists() and path.is_dir():
        raise GradercalError(f"{option} {path}: is a directory")
    if not path.parent.exists():
        raise GradercalError(f"{option} {path}: folder {path.parent} does not exist")


@click.command()
@db_option
@benchmark_option
@click.option(
    "--judge",
    "-j",
    metavar="NAME",
    help="Judge of the per-judge sections (default: the judge with the most verdicts).",
)
@click.option(
    "--calibration",
    type=click.Choice(_CAL_CHOICES),
    default="active",
    show_default=True,
    help="Calibrated judge: the method of the judge's active saved calibration (else "
    "threshold), a method, or none. Always cross-fitted out of fold.",
)
@click.option("--models", metavar="A,B,…", help="Only these response models.")
@click.option("--workflows", metavar="A,B,…", help="Only tasks of these workflows.")
@click.option("--domains", metavar="A,B,…", help="Only tasks of these domains.")
@click.option("--experts", metavar="A,B,…", help="Only these human graders.")
@click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(min=0),
    default=1000,
    show_default=True,
    help="Task-clustered bootstrap resamples for the intervals (0: none).",
)
@seed_option
@ci_option
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The HTML file to write.",
)
@click.option(
    "--pdf",
    "pdf",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the report as this PDF file.",
)
@click.option(
    "--images",
    type=click.Choice(["svg", "png"]),
    default="svg",
    show_default=True,
    help="Format of the charts embedded in the HTML.",
)
@click.option(
    "--max-rows",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="Rows shown of each long table (health, disagreements, flips, criteria).",
)
@click.option("--title", help="Report title (default: 'Agreement report: <benchmark>').")
@version_option
@json_option
@handle_errors
def report(
    db: str | None,
    benchmark: str | None,
    judge: str | None,
    calibration: str,
    models: str | None,
    workflows: str | None,
    domains: str | None,
    experts: str | None,
    n_boot: int,
    seed: int,
    ci: float,
    output: Path | None,
    pdf: Path | None,
    images: str,
    max_rows: int,
    title: str | None,
    version: Any,
    as_json: bool,
) -> None:
    """Write the agreement dashboard as a self-contained HTML report (and a PDF).

    Sections: overview, agreement by tag / workflow / domain / criterion with intervals,
    pairwise agreement of experts and judges, every judge (prompt version) side by side,
    the confusion matrix, reliability before and after calibration, per-model scores
    under the experts, the raw and calibrated judge and the bias-corrected estimate,
    the alt-test, pass ↔ fail flips, criterion health and the disagreements. Charts are
    embedded, nothing is loaded from elsewhere. --json prints the full dashboard data.
    When a criterion was revised in a way that changes verdicts, a section compares its
    agreement per version (from every verdict, whatever --version says).
    """
    from gradercal.dashboard import DashboardFilters, compute_dashboard, primary_judge
    from gradercal.dashboard.report import write_html, write_pdf
    from gradercal.db.acceptance import load_round_table
    from gradercal.db.calibrations import load_task_reviews
    from gradercal.db.eras import load_eras

    if output is None and pdf is None and not as_json:
        raise click.UsageError("give -o FILE.html, --pdf FILE.pdf or --json")
    for path, opt in ((output, "-o"), (pdf, "--pdf")):
        if path is not None:
            _writable(path, opt)
    repo = open_repo(db)
    bench = repo.benchmark(benchmark)
    frames = repo.load_frames(bench.name, version)
    eras = load_eras(repo, bench.name)
    # the agreement per criterion version compares every verdict, stale ones included
    versions = (repo.load_frames(bench.name, "all"), eras) if eras else None
    filters = DashboardFilters(
        models=_names(models),
        workflows=_names(workflows),
        domains=_names(domains),
        graders=_names(experts),
    )
    known = set(frames.judgments["grader"])
    for g in filters.graders or ():
        if g not in known:
            raise GradercalError(f"no grader {g!r} in this benchmark")
    primary = primary_judge(frames, judge)
    params: dict[str, Any] | None = None
    if calibration == "none":
        params = {"method": "none"}
    elif calibration == "active":
        if primary is not None:
            from gradercal.db.calibrations import load_calibration

            saved = load_calibration(repo, bench.name, primary)
            params = None if saved is None else dict(saved.params)
    else:
        params = {"method": calibration}
    with progress_bar(not as_json) as update:
        try:
            d = compute_dashboard(
                frames,
                judge=primary,
                filters=filters,
                calibration=params,
                n_boot=n_boot,
                seed=seed,
                ci=ci,
                benchmark=bench.name,
                progress=lambda done, total, label: update("computing", done, total),
                processes=2,  # a forked child takes some sections on Linux
                reviews=load_task_reviews(repo, bench.name),
                rounds=load_round_table(repo.db, bench.name),
                versions=versions,
            )
        except ValueError as exc:
            raise GradercalError(str(exc)) from exc
        written: dict[str, str | None] = {"html": None, "pdf": None}
        if output is not None:
            write_html(
                d,
                output,
                title=title,
                image_format=images,
                max_rows=max_rows,
                progress=lambda done, total, label: update("html charts", done, total),
            )
            written["html"] = str(output)
        if pdf is not None:
            write_pdf(
                d,
                pdf,
                title=title,
                max_rows=max_rows,
                progress=lambda done, total, label: update("pdf charts", done, total),
            )
            written["pdf"] = str(pdf)
    if as_json:
        out = {"benchmark": bench.name, **written, "dashboard": d.to_json()}
        emit_json(with_version(out, version_used(repo, bench.name, version)))
        return
    for kind, where in written.items():
        if where:
            click.echo(f"wrote {kind.upper()} report: {where}")
    for note in d.notes:
        click.echo(f"note: {note}", err=True)
    sys.stdout.flush()
