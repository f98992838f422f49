"""``gradercal alttest``, ``calibrate`` and ``impact``: may the judge stand in for the
experts, its calibration, and what it does to each model's score."""

from __future__ import annotations

from typing import Any

import click

from gradercal._util.jsonsafe import json_safe
from gradercal._util.numbers import fixed
from gradercal.cli.analysis.common import (
    BREAKDOWN_CHOICES,
    DEFAULT_HOLDOUT,
    bootstrap_option,
    calibration_methods,
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
    EngineChoice,
    benchmark_option,
    ci_option,
    db_option,
    handle_errors,
    json_option,
    progress_bar,
    seed_option,
    styled,
    version_option,
)

# ----------------------------------------------------------------------------- alt-test


@click.command()
@db_option
@benchmark_option
@click.option("--judge", "-j", metavar="NAME", required=True, help="The judge to test.")
@click.option(
    "--epsilon",
    type=click.FloatRange(0.0, 1.0, max_open=True),
    default=0.2,
    show_default=True,
    help="Cost-benefit allowance ε (0.2 for experts, 0.15 skilled, 0.1 crowd).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="FDR level of the Benjamini–Yekutieli correction.",
)
@click.option(
    "--cluster",
    type=click.Choice(["auto", "task", "none"]),
    default="auto",
    show_default=True,
    help="auto: the task-clustered test when tasks hold several criteria (items of one "
    "task are correlated), else the exact test; task / none: force either.",
)
@click.option(
    "--min-tasks",
    type=click.IntRange(2),
    default=10,
    show_default=True,
    help="Fewest tasks for the task-clustered test of one expert (fewer: not tested).",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the task-clustered test's bootstrap.",
)
@humans_option
@version_option
@json_option
@handle_errors
@refusals
def alttest(
    db: str | None,
    benchmark: str | None,
    judge: str,
    epsilon: float,
    alpha: float,
    cluster: str,
    min_tasks: int,
    seed: int,
    humans: str | None,
    version: Any,
    as_json: bool,
) -> None:
    """The alternative annotator test: may the judge replace the experts?

    Calderon, Reichart & Dror (ACL 2025): leave one expert out at a time and test whether
    the judge represents the remaining experts at least as well as the excluded one,
    up to ε, with the Benjamini–Yekutieli correction. Per expert: a task-clustered
    bootstrap-t test when tasks hold several criteria (the default), else an exact test
    whose size is at most α for any number of items. Experts with items in fewer than
    --min-tasks tasks are not tested (and said so). The judge passes when it wins against
    at least half of the tested experts. Needs at least two testable experts on shared
    items (three recommended).
    """
    from gradercal.analysis.alt_test import alt_test_frames

    repo, frames, name = load_benchmark(db, benchmark, version)
    check_judge(frames, judge)
    res = alt_test_frames(
        frames,
        judge,
        chosen_humans(frames, humans, judge),
        epsilon=epsilon,
        alpha=alpha,
        cluster=cluster,  # type: ignore[arg-type]
        min_clusters=min_tasks,
        seed=seed,
    )
    out = {"benchmark": name, **res.to_dict()}
    if res.clustering == "none":
        # options of the task-clustered test, typed by the user, that did nothing
        from click.core import ParameterSource

        ctx = click.get_current_context()
        idle = [
            flag
            for param, flag in (("seed", "--seed"), ("min_tasks", "--min-tasks"))
            if ctx.get_parameter_source(param) == ParameterSource.COMMANDLINE
        ]
        if idle:
            out["warnings"] = [
                *out["warnings"],
                f"{', '.join(idle)} only {'affects' if len(idle) == 1 else 'affect'} the "
                "task-clustered test; the exact test was used (items independent)",
            ]
    if as_json:
        emit_report(repo, name, version, out)
        return
    from rich.table import Table

    console = table_console()
    how = (
        f"task-clustered bootstrap-t over {res.n_clusters} tasks"
        if res.clustering == "task"
        else "exact test, items independent"
    )
    t = Table(
        title=f"Alt-test of {judge}: ε = {epsilon:g}, α = {alpha:g} ({res.n_items} items; {how})",
        title_justify="left",
    )
    for col in (
        "left-out expert",
        "items",
        "tasks",
        "test",
        "ρ judge",
        "ρ expert",
        "p",
        "p (BY)",
        "judge wins",
    ):
        t.add_column(col, justify="left" if col == "left-out expert" else "right")
    for a in res.annotators:
        t.add_row(
            a.human,
            str(a.n_items),
            "—" if a.n_clusters is None else str(a.n_clusters),
            a.test,
            fixed(a.rho_judge),
            fixed(a.rho_human),
            "—" if a.p_value is None else f"{a.p_value:.3g}",
            "—" if a.p_adjusted is None else f"{a.p_adjusted:.3g}",
            "—" if not a.tested else ("yes" if a.rejected else "no"),
        )
    console.print(t)
    verdict = ("PASSES", "green") if res.passed else ("FAILS", "red")
    tested = len(res.tested)
    console.print(
        styled(
            f"winning rate ω = {res.winning_rate:.3f} over {tested} tested expert"
            f"{'s' if tested != 1 else ''}, average advantage probability "
            f"ρ = {res.advantage_probability:.3f}: the judge ",
            verdict,
            " (ω ≥ 0.5 needed)",
        )
    )
    print_notes(
        console, [*out["warnings"], *(f"{a.human}: {a.note}" for a in res.annotators if a.note)]
    )


# ---------------------------------------------------------------------------- calibrate


@click.command()
@db_option
@benchmark_option
@click.option("--judge", "-j", metavar="NAME", required=True, help="The judge to calibrate.")
@click.option(
    "--method",
    type=EngineChoice(calibration_methods),
    default="threshold",
    show_default=True,
    help="threshold/leniency correct criterion verdicts; isotonic/platt map response scores.",
)
@click.option(
    "--metric",
    type=click.Choice(["kappa", "f1", "balanced_f1"]),
    default="kappa",
    show_default=True,
    help="What the threshold maximises.",
)
@click.option(
    "--per-tag/--overall",
    "per_tag",
    default=None,
    help="One threshold per criterion tag (default: overall for threshold, per tag for leniency).",
)
@click.option(
    "--tag-prefix",
    metavar="PREFIX",
    help="Group criteria by their first tag with this prefix (e.g. axis:).",
)
@click.option(
    "--folds",
    type=click.IntRange(min=2),
    default=5,
    show_default=True,
    help="GroupKFold folds (by task).",
)
@click.option(
    "--holdout",
    "holdout",
    type=click.FloatRange(0.0, 1.0, max_open=True),
    default=None,
    metavar="FRACTION",
    help="Share of the human-graded tasks held out (drawn with --seed), never used to fit; "
    "the figures on them are the test metrics. 0: none. [default: 0.25, or none with a "
    "warning below 4 human-graded tasks]",
)
@click.option(
    "--save/--no-save",
    default=True,
    show_default=True,
    help="Store the calibration in the database.",
)
@humans_option
@click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(min=0),
    default=1000,
    show_default=True,
    help="Task bootstrap resamples for the intervals (0: none). The out-of-fold figures' "
    "intervals redo the whole cross-fit on every resample (see --oof-interval).",
)
@click.option(
    "--oof-interval",
    type=click.Choice(["refit", "fixed"]),
    default="refit",
    show_default=True,
    help="refit: every task resample repeats the fold split and the fits, so the "
    "interval accounts for the fitting; fixed: the fitted calibrators are held fixed "
    "(faster, too narrow: 77-90% coverage at nominal 95% in docs/agreement.md).",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the bootstrap and of the held-out task draw.",
)
@ci_option
@version_option
@json_option
@handle_errors
@refusals
def calibrate(
    db: str | None,
    benchmark: str | None,
    judge: str,
    method: str,
    metric: str,
    per_tag: bool | None,
    tag_prefix: str | None,
    folds: int,
    holdout: float | None,
    save: bool,
    humans: str | None,
    n_boot: int,
    oof_interval: str,
    seed: int,
    ci: float,
    version: Any,
    as_json: bool,
) -> None:
    """Calibrate the judge against the experts; report held-out figures; save it.

    A seeded random share of the human-graded tasks (--holdout, default 0.25) is
    reserved: nothing is fitted on it. The rest, the calibration tasks, are evaluated
    out of fold (GroupKFold by task): agreement, leniency bias, Brier score and ECE
    before and after, and the effect on response scores and pass/fail. The calibrator
    fitted on all calibration tasks is then measured on the reserved tasks (the test
    figures) and saved as the judge's active calibration (a new version).
    """
    from gradercal.analysis.calibration import fit_calibration

    repo, frames, name = load_benchmark(db, benchmark, version)
    check_judge(frames, judge)
    with progress_bar(not as_json) as update:
        update("calibrating", 0, 1)
        res = fit_calibration(
            frames,
            judge,
            method,  # type: ignore[arg-type]
            chosen_humans(frames, humans, judge),
            n_splits=folds,
            per_group=per_tag,
            metric=metric,  # type: ignore[arg-type]
            tag_prefix=tag_prefix,
            n_boot=n_boot,
            oof_interval=oof_interval,  # type: ignore[arg-type]
            seed=seed,
            ci=ci,
            benchmark=name,
            holdout=DEFAULT_HOLDOUT if holdout is None else holdout,
            strict_holdout=holdout is not None,
        )
        update("calibrating", 1, 1)
    saved = None
    if save:
        from gradercal.db.calibrations import save_calibration

        saved = save_calibration(
            repo,
            name,
            judge,
            method,
            params=json_safe(res.params),
            split=json_safe(res.split),
            metrics=json_safe(res.metrics),
            # fitted on other verdicts than the current ones: say which
            provenance=json_safe(
                res.provenance if version == "current" else {**res.provenance, "version": version}
            ),
        )
    out = {"benchmark": name, "saved": None if saved is None else saved.to_dict(), **res.to_dict()}
    if as_json:
        emit_report(repo, name, version, out)
        return
    for w in res.warnings:
        click.echo(click.style("warning: ", fg="yellow", bold=True) + w, err=True)
    _print_calibration(out)


def _print_calibration(out: dict[str, Any]) -> None:
    from rich.table import Table

    from gradercal.analysis.calibration import FIGURE_LABELS

    console = table_console()
    m = out["metrics"]
    p = out["params"]
    head = styled((f"{out['method']} calibration of {out['judge']}", "bold"))
    if "threshold" in p:
        head += f": threshold {p['threshold']:.4g}"
        if p.get("group_thresholds"):
            head += " overall; " + ", ".join(
                f"{g} {t:.4g}" for g, t in p["group_thresholds"].items()
            )
    if "coef" in p:
        head += f": g(x) = σ({p['coef']:.4g}·x + {p['intercept']:.4g})"
    console.print(head)
    split = out["split"]
    held = list(split.get("held_out") or [])
    console.print(
        f"out of fold by {split['n_splits']}-fold GroupKFold over {m['n_tasks']} calibration "
        f"tasks ({m.get('n_items', '—')} criterion verdicts, {m['n_responses']} responses)"
    )
    test = m.get("test")
    if held and test:
        console.print(
            f"held out (never fitted on, seed {split.get('seed')}): {len(held)} tasks "
            f"({', '.join(held)}; {test.get('n_items', '—')} criterion verdicts, "
            f"{test['n_responses']} responses)"
        )
    else:
        console.print("held out: no task (--holdout 0): the out-of-fold figures are the only check")
    notes: list[str] = []
    blocks = [(m, "out of fold, calibration tasks")]
    if test:
        blocks.append((test, "held-out tasks (test)"))
    for source, title in blocks:
        for level in ("criterion", "response"):
            block = source.get(level)
            if not block:
                continue
            t = Table(title=f"{level} level, {title}", title_justify="left")
            for col in ("figure", "raw judge", "calibrated", "change"):
                t.add_column(col, justify="left" if col == "figure" else "right")
            for key, fig in block["before"].items():
                t.add_row(
                    FIGURE_LABELS.get(key, key),
                    figure_cell(fig),
                    figure_cell(block["after"][key]),
                    figure_cell(block["change"][key]),
                )
                notes.append(fig.get("note") or "")
            console.print(t)
    if out.get("saved"):
        s = out["saved"]
        console.print(f"saved as {out['method']} version {s['version']} (id {s['id']}), active")
    print_notes(console, notes)


# ------------------------------------------------------------------------------- impact


@click.command()
@db_option
@benchmark_option
@click.option("--judge", "-j", metavar="NAME", required=True, help="The judge.")
@click.option(
    "--calibration",
    type=EngineChoice(lambda: ("active", "none", *calibration_methods())),
    default="active",
    show_default=True,
    help="Calibrated judge column: the method of the judge's active saved calibration, "
    "a method, or none. Always cross-fitted (out of fold) on the human-graded tasks.",
)
@click.option(
    "--by",
    "by",
    default=",".join(BREAKDOWN_CHOICES),
    show_default=True,
    help="Breakdowns (comma-separated; empty for none).",
)
@humans_option
@bootstrap_option
@seed_option
@ci_option
@version_option
@json_option
@handle_errors
@refusals
def impact(
    db: str | None,
    benchmark: str | None,
    judge: str,
    calibration: str,
    by: str,
    humans: str | None,
    n_boot: int,
    seed: int,
    ci: float,
    version: Any,
    as_json: bool,
) -> None:
    """What the judge does to each model's mean score and pass rate.

    Consensus vs raw judge vs calibrated judge on the same responses, their
    differences with task-clustered intervals, the responses that flip pass ↔ fail,
    breakdowns, and the partial-credit view (failing responses with ≥ 50% of the
    rubric reward).
    """
    from gradercal.analysis.impact import impact_report

    repo, frames, name = load_benchmark(db, benchmark, version)
    check_judge(frames, judge)
    names = chosen_humans(frames, humans, judge)
    groups = [g for g in by.split(",") if g]
    bad = [g for g in groups if g not in BREAKDOWN_CHOICES]
    if bad:
        raise click.BadParameter(
            f"unknown breakdown {bad[0]!r}; use {', '.join(BREAKDOWN_CHOICES)}", param_hint="--by"
        )
    calibrated = None
    described: dict[str, Any] | None = None
    method = None if calibration == "none" else calibration
    options: dict[str, Any] = {}
    if method == "active":
        from gradercal.db.calibrations import load_calibration

        saved = load_calibration(repo, name, judge)
        method = None if saved is None else saved.method
        if saved is not None:
            sk = saved.params.get("sklearn_params") or {}
            options = {
                "per_group": sk.get("per_group"),
                "metric": saved.params.get("metric", "kappa"),
                "tag_prefix": saved.params.get("tag_prefix"),
            }
            described = {
                "source": "active saved calibration",
                "id": saved.id,
                "version": saved.version,
            }
    with progress_bar(not as_json) as update:
        if method is not None:
            from gradercal.analysis.calibration import cross_fit

            update("calibrating", 0, 1)
            cf = cross_fit(frames, judge, method, names, **options)  # type: ignore[arg-type]
            calibrated = cf.responses.loc[:, ["response_id", "oof"]].rename(
                columns={"oof": "score"}
            )
            described = {
                **(described or {"source": "option"}),
                "method": method,
                "out_of_fold": True,
                "n_splits": len(set(cf.folds.values())),
            }
            update("calibrating", 1, 1)
        rep = impact_report(
            frames,
            judge,
            names,
            calibrated=calibrated,
            calibration=described,
            breakdowns=groups,
            n_boot=n_boot,
            seed=seed,
            ci=ci,
            progress=update,
            benchmark=name,
        )
    if as_json:
        emit_report(repo, name, version, rep)
        return
    _print_impact(rep, groups)


def _print_impact(rep: dict[str, Any], groups: list[str]) -> None:
    from rich.table import Table

    console = table_console()
    graders = rep["graders"]
    names = {"consensus": "experts", "judge": "judge", "calibrated": "calibrated judge"}
    for fig, label in (
        ("mean_score", "Mean rubric score"),
        ("pass_rate", "Pass rate"),
        ("partial_credit_rate", "Partial credit (fails, ≥ 50%)"),
    ):
        t = Table(
            title=f"{label} on {rep['n_paired']} responses graded by all (pass ≥ {rep['pass_threshold']:.0%})",
            title_justify="left",
        )
        t.add_column("model")
        t.add_column("n", justify="right")
        for g in graders:
            t.add_column(names[g], justify="right")
        for g in graders[1:]:
            t.add_column(f"{names[g]} − experts", justify="right")
        rows = [*rep["models"], *([{"model": "all", **rep["overall"]}] if rep["overall"] else [])]
        for row in rows:
            line = [row["model"], str(row["n_responses"])]
            line += [figure_cell(row[g][fig]) for g in graders]
            line += [figure_cell(row[f"{g}_minus_consensus"][fig]) for g in graders[1:]]
            t.add_row(*line)
        console.print(t)
    for b in groups:
        rows = rep["breakdowns"].get(b) or []
        if not rows:
            continue
        t = Table(
            title=f"by {b.replace('_', ' ')}: mean score, experts → judge (n)", title_justify="left"
        )
        t.add_column(b.replace("_", " "))
        models = sorted({r["model"] for r in rows})
        for m in models:
            t.add_column(m, justify="right")
        cells: dict[str, dict[str, str]] = {}
        for r in rows:
            cells.setdefault(r["group"], {})[r["model"]] = (
                f"{fixed(r['consensus']['mean_score']['value'])} → {fixed(r['judge']['mean_score']['value'])} ({r['n_responses']})"
            )
        for gname, per in cells.items():
            t.add_row(gname, *[per.get(m, "") for m in models])
        console.print(t)
    flips = rep["flips"]
    if flips:
        t = Table(
            title=f"Pass ↔ fail flips ({', '.join(f'{k}: {v}' for k, v in rep['n_flips'].items())})",
            title_justify="left",
        )
        for col in ("grader", "model", "task", "response", "experts", "grader score", "direction"):
            t.add_column(col, justify="right" if col in ("experts", "grader score") else "left")
        for f in flips:
            t.add_row(
                names.get(f["grader"], f["grader"]),
                f["model"],
                f["task_id"],
                f["response_id"],
                fixed(f["consensus_score"]),
                fixed(f["grader_score"]),
                f["direction"],
            )
        console.print(t)
    notes = []
    if rep["n_unpaired"]:
        notes.append(f"{rep['n_unpaired']} responses scored by some graders only were left out")
    if rep.get("calibration") is None:
        notes.append("no calibrated judge: run `gradercal calibrate` or pass --calibration METHOD")
