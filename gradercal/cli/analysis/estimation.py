"""``gradercal estimate``: bias-corrected mean score and pass rate, with anytime-valid
confidence sequences on request."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from gradercal._util.numbers import fixed
from gradercal.cli.analysis.common import (
    check_judge,
    chosen_humans,
    emit_report,
    figure_cell,
    humans_option,
    load_benchmark,
    print_notes,
    refusals,
    table_console,
)
from gradercal.cli.common import (
    benchmark_option,
    ci_option,
    db_option,
    handle_errors,
    json_option,
    version_option,
)

if TYPE_CHECKING:
    from rich.console import Console

    from gradercal.db.repo import Repository
    from gradercal.frames import Frames


# ----------------------------------------------------------------------------- estimate


@click.command()
@db_option
@benchmark_option
@click.option(
    "--judge", "-j", metavar="NAME", required=True, help="The judge that graded everything."
)
@click.option(
    "--stratify",
    type=click.Choice(["workflow", "domain"]),
    help="Stratified PPI: one estimate per workflow (or domain), weighted by size.",
)
@click.option(
    "--rg-pooled",
    is_flag=True,
    help="Estimate the judge's sensitivity/specificity over all models (Rogan–Gladen).",
)
@click.option(
    "--sequential",
    is_flag=True,
    help="Add anytime-valid confidence sequences (cs) beside the fixed-sample intervals.",
)
@humans_option
@ci_option
@version_option
@json_option
@handle_errors
@refusals
def estimate(
    db: str | None,
    benchmark: str | None,
    judge: str,
    stratify: str | None,
    rg_pooled: bool,
    sequential: bool,
    humans: str | None,
    ci: float,
    version: Any,
    as_json: bool,
) -> None:
    """Bias-corrected mean score and pass rate per model from a human-graded subset.

    PPI++ (prediction-powered inference with power tuning) combines the experts'
    scores on the graded subset with the judge's on everything, and shows the
    effective number of human labels gained; the Rogan–Gladen correction of the
    judge's pass rate includes the uncertainty of the sensitivity and specificity.
    """
    from gradercal.analysis.estimate import estimate_report

    repo, frames, name = load_benchmark(db, benchmark, version)
    check_judge(frames, judge)
    from gradercal.db.assignments import active_design

    probabilities, rounds = active_design(repo.db, name)
    rep = estimate_report(
        frames,
        judge,
        chosen_humans(frames, humans, judge),
        stratify=stratify,  # type: ignore[arg-type]
        ci=ci,
        pooled=rg_pooled,
        benchmark=name,
        inclusion=probabilities,
        rounds=rounds,
    )
    if sequential:
        _attach_sequences(repo, name, frames, judge, chosen_humans(frames, humans, judge), ci, rep)
    if as_json:
        emit_report(repo, name, version, rep)
        return
    from rich.table import Table

    console = table_console()
    for fig, label in (("mean_score", "Mean rubric score"), ("pass_rate", "Pass rate")):
        methods = dict.fromkeys(r[fig]["method"] for r in rep["models"] if r[fig].get("method"))
        classical = dict.fromkeys(
            r[fig]["classical_method"] for r in rep["models"] if r[fig].get("classical_method")
        )
        how = ""
        if methods:
            how = f": {', '.join(methods)}"
            if classical:
                how += f"; experts only: {', '.join(classical)}"
        t = Table(
            title=f"{label} by model: PPI++{' stratified by ' + stratify if stratify else ''} "
            f"(judge {judge}, {ci:.0%} intervals{how})",
            title_justify="left",
        )
        for col in (
            "model",
            "PPI++",
            "experts only",
            "judge only",
            "human labels",
            "effective",
            "λ",
        ):
            t.add_column(col, justify="left" if col == "model" else "right")
        for row in rep["models"]:
            r = row[fig]
            cl = r["classical_ci"]
            t.add_row(
                row["model"],
                figure_cell({"value": r["estimate"], "ci": r["ci"]}),
                figure_cell({"value": r["classical"], "ci": cl}),
                fixed(r["judge_only"]),
                str(r["n_labelled"]),
                fixed(r["n_effective"], 1),
                fixed(r["lambda"], 2),
            )
        console.print(t)
    rg = Table(title="Pass rate, Rogan–Gladen correction of the judge", title_justify="left")
    for col in ("model", "corrected", "judge's apparent", "sensitivity", "specificity"):
        rg.add_column(col, justify="left" if col == "model" else "right")
    notes = list(rep["notes"])
    for row in rep["models"]:
        r = row["pass_rate_rogan_gladen"]
        rg.add_row(
            row["model"],
            figure_cell({"value": r["estimate"], "ci": r["ci"]}),
            fixed(r["apparent"]),
            fixed(r["sensitivity"]),
            fixed(r["specificity"]),
        )
        notes += [
            r["note"] or "",
            *row["notes"],
            row["mean_score"]["note"] or "",
            row["pass_rate"]["note"] or "",
        ]
    console.print(rg)
    if sequential:
        _print_sequences(console, rep["sequential"])
    print_notes(console, notes)


def _attach_sequences(
    repo: Repository,
    name: str,
    frames: Frames,
    judge: str,
    humans: list[str],
    ci: float,
    rep: dict[str, Any],
) -> None:
    """``estimate --sequential``: ``cs`` beside each model's ``ci`` and the report's
    ``sequential`` section (:mod:`gradercal.analysis.sequential_report`)."""
    from gradercal.analysis.sequential_report import sequential_report
    from gradercal.db.completion import consensus_completion_times

    times = consensus_completion_times(repo.db, repo.benchmark(name).id)
    seq = sequential_report(frames, judge, humans, times=times, alpha=1.0 - ci)
    for row in rep["models"]:
        for fig in ("mean_score", "pass_rate"):
            part = seq["models"].get(row["model"], {}).get(fig) or {}
            row[fig]["cs"] = part.get("cs")
            row[fig]["cs_half_width"] = part.get("half_width")
    rep["sequential"] = seq


def _print_sequences(console: Console, seq: dict[str, Any]) -> None:
    labels = {"mean_score": "mean score", "pass_rate": "pass rate"}
    for model, figs in seq["models"].items():
        for fig, label in labels.items():
            w = figs[fig]["half_width"]
            if w is not None:
                console.print(
                    f"model {model}'s {label} is known to ±{w:.3f} (anytime-valid, "
                    f"{figs[fig]['n']} expert-graded responses in {seq['order']} order)"
                )
    ag = seq["agreement"]
    if ag.get("half_width") is not None:
        console.print(
            f"judge–consensus percent agreement {ag['estimate']:.3f} is known to "
            f"±{ag['half_width']:.3f} (anytime-valid; a bounded mean, not κ)"
        )
    decided = [t for t in seq["tasks"] if t["decided"]]
    if seq["tasks"]:
        console.print(
            f"{len(decided)} of {len(seq['tasks'])} tasks: more grading will not change this "
            f"task's decision at the bar {seq['bar']:g} (reviewer agreement's sequence entirely "
            "above or below it)"
        )
