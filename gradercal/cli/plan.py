"""``gradercal plan``: how much expert grading stated targets need (docs/planning.md).

From the judgments so far (a pilot, read from the database) or from stated assumptions
(``--assume kappa=0.6,icc=0.2,pass_rate=0.5``), simulate a grid of designs (tasks graded ×
experts per item) with :mod:`gradercal.analysis.planning` and print the expected interval
half-widths, the alt-test power and the acceptance-decision error of each; ``--target``
marks the cheapest design meeting every target, ``--chart`` draws half-width against tasks
graded, ``--json`` prints the shape documented in docs/cli.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gradercal._util.numbers import fixed
from gradercal.cli.common import (
    benchmark_option,
    db_option,
    emit_json,
    handle_errors,
    json_option,
    open_repo,
    progress_bar,
    text_console,
)
from gradercal.errors import GradercalError

__all__ = ["plan"]


def _pairs(text: str, what: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, value = part.partition("=")
        if not sep:
            raise click.BadParameter(f"{part!r}: expected NAME=VALUE", param_hint=what)
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise click.BadParameter(
                f"{name.strip()}: {value.strip()!r} is not a number", param_hint=what
            ) from None
    return out


def _ints(text: str | None, what: str) -> list[int] | None:
    if text is None:
        return None
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(
            f"{text!r}: expected whole numbers like 20,50,100", param_hint=what
        ) from None
    if not values:
        raise click.BadParameter("no value given", param_hint=what)
    return values


def _chart(result: Any, path: Path) -> None:
    """The chart the window's Plan tab shows (:func:`gradercal.dashboard.charts.plan_figure`)."""
    from gradercal.dashboard.charts import plan_figure

    plan_figure(result).savefig(path, dpi=110)


_fmt = fixed


@click.command()
@db_option
@benchmark_option
@click.option("--judge", "-j", metavar="NAME", help="The judge (needed to plan from a pilot).")
@click.option(
    "--assume",
    metavar="NAME=VALUE,…",
    help="Plan from assumptions instead of the judgments so far: kappa, icc, pass_rate, "
    "tasks, models, criteria, task_sd, prevalence, pass_threshold.",
)
@click.option(
    "--target",
    "targets",
    metavar="NAME=VALUE",
    multiple=True,
    help="A goal (repeatable): pass_rate_half_width, mean_score_half_width, "
    "kappa_half_width, alttest_power, acceptance_error.",
)
@click.option(
    "--tasks", "tasks_grid", metavar="N,N,…", help="Tasks graded to try (default: 20 … all)."
)
@click.option(
    "--experts",
    "experts_grid",
    metavar="K,K,…",
    default="1,3,5",
    show_default=True,
    help="Experts per item to try.",
)
@click.option("--population", type=int, help="Tasks in the benchmark (default: the benchmark's).")
@click.option(
    "--sims",
    type=click.IntRange(10, 100000),
    default=200,
    show_default=True,
    help="Simulations per design.",
)
@click.option("--epsilon", type=float, default=0.2, show_default=True, help="Alt-test allowance ε.")
@click.option("--bar", type=float, default=0.90, show_default=True, help="Acceptance bar.")
@click.option("--seed", type=int, default=0, show_default=True, help="Simulation seed.")
@click.option("--chart", type=click.Path(dir_okay=False, path_type=Path), help="Write a PNG chart.")
@json_option
@handle_errors
def plan(
    db: str | None,
    benchmark: str | None,
    judge: str | None,
    assume: str | None,
    targets: tuple[str, ...],
    tasks_grid: str | None,
    experts_grid: str,
    population: int | None,
    sims: int,
    epsilon: float,
    bar: float,
    seed: int,
    chart: Path | None,
    as_json: bool,
) -> None:
    """How much expert grading the targets need: expected interval half-widths, alt-test
    power and acceptance-decision error per design (tasks graded × experts per item)."""
    from gradercal.analysis.planning import TARGETS, assumed_model, fit_pilot
    from gradercal.analysis.planning import plan as run_plan

    goal: dict[str, float] = {}
    for t in targets:
        goal.update(_pairs(t, "--target"))
    for name in goal:
        if name not in TARGETS:
            raise click.BadParameter(
                f"unknown target {name!r} (known: {', '.join(TARGETS)})", param_hint="--target"
            )
    try:
        if assume is not None:
            values = _pairs(assume, "--assume")
            if population is not None:
                values["tasks"] = population
            model = assumed_model(values)
            source = "assumptions"
        else:
            if not judge:
                raise GradercalError(
                    "give --judge NAME to plan from the judgments so far, or --assume"
                )
            repo = open_repo(db)
            bench = repo.benchmark(benchmark)
            frames = repo.load_frames(bench.name)
            known = set(frames.judgments["grader"])
            if judge not in known:
                raise GradercalError(f"no grader {judge!r} in benchmark {bench.name!r}")
            model = fit_pilot(frames, judge, n_tasks=population)
            source = f"the judgments of {bench.name}"
        with progress_bar(not as_json) as update:
            result = run_plan(
                model,
                tasks=_ints(tasks_grid, "--tasks"),
                experts=_ints(experts_grid, "--experts") or [1, 3, 5],
                targets=goal,
                n_sims=sims,
                epsilon=epsilon,
                bar=bar,
                seed=seed,
                progress=update,
            )
    except ValueError as exc:
        raise GradercalError(str(exc)) from exc
    if chart is not None:
        try:
            _chart(result, chart)
        except OSError as exc:
            raise GradercalError(f"{chart}: cannot write the chart: {exc.strerror or exc}") from exc
    if as_json:
        emit_json(result.to_dict())
        return
    from rich.table import Table

    console = text_console(width=140)
    table = Table(
        title=f"Plan from {source}: {result.n_sims} simulations per design, "
        f"{model.n_tasks} tasks, {len(model.models)} models (95% intervals)",
        title_justify="left",
    )
    cols = [
        ("tasks", "tasks"),
        ("experts", "experts"),
        ("expert items", "expert items"),
        ("pass rate ±", "pass_rate_half_width"),
        ("mean score ±", "mean_score_half_width"),
        ("κ ±", "kappa_half_width"),
        (f"alt-test power (ε={epsilon:g})", "alttest_power"),
        (f"acceptance error (bar {bar:g})", "acceptance_error"),
        ("meets targets", "meets"),
    ]
    for label, _ in cols:
        table.add_column(label, justify="right")
    rec = result.recommended
    for d in result.designs:
        vals = {**d["expected_half_width"], **d["power"]}
        is_rec = rec is not None and (d["tasks"], d["experts_per_item"]) == (
            rec["tasks"],
            rec["experts_per_item"],
        )
        meets = "" if d["meets_targets"] is None else ("yes" if d["meets_targets"] else "no")
        table.add_row(
            str(d["tasks"]),
            str(d["experts_per_item"]),
            str(d["expert_items"]),
            *[_fmt(vals[key]) for _, key in cols[3:-1]],
            meets + (" ← cheapest" if is_rec else ""),
            style="bold" if is_rec else None,
        )
    console.print(table)
    if goal:
        wanted = ", ".join(
            f"{k} {'≤' if TARGETS[k][1] == 'below' else '≥'} {v:g}" for k, v in goal.items()
        )
        if rec is not None:
            console.print(
                f"cheapest design meeting {wanted}: {rec['tasks']} tasks × "
                f"{rec['experts_per_item']} experts per item ({rec['expert_items']} expert-graded responses)"
            )
        else:
            console.print(f"no design of the grid meets {wanted}")
    for note in result.notes:
        console.print(f"note: {note}", style="dim")
    if chart is not None:
        console.print(f"chart written to {chart}")
