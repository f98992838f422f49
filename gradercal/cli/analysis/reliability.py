"""``gradercal agreement`` (also by criterion version, and HealthBench's meta-evaluation),
``health`` and ``surveys``: how far the experts, the judge and the criteria can be trusted."""

from __future__ import annotations

from typing import Any

import click

from gradercal._util.numbers import fixed
from gradercal.cli.analysis.common import (
    BY_CHOICES,
    bootstrap_option,
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
    emit_json,
    handle_errors,
    json_option,
    open_repo,
    progress_bar,
    seed_option,
    styled,
    version_option,
    with_version,
)

# --------------------------------------------------------------------------- agreement


@click.command()
@db_option
@benchmark_option
@click.option("--judge", "-j", metavar="NAME", help="Also compare this judge with the experts.")
@click.option(
    "--by",
    type=click.Choice(BY_CHOICES),
    help="Also break agreement down by criterion, tag, workflow or domain.",
)
@click.option(
    "--by-version",
    is_flag=True,
    help="Agreement on each revised criterion per version of its wording (before and "
    "after each fix), with intervals that resample its responses; counts every verdict "
    "(not with --version).",
)
@humans_option
@bootstrap_option
@seed_option
@ci_option
@version_option
@json_option
@handle_errors
@refusals
def agreement(
    db: str | None,
    benchmark: str | None,
    judge: str | None,
    by: str | None,
    by_version: bool,
    humans: str | None,
    n_boot: int,
    seed: int,
    ci: float,
    version: Any,
    as_json: bool,
) -> None:
    """Expert–expert and expert–judge agreement, with task-clustered intervals.

    Human–human: percent agreement, Fleiss' kappa, Gwet's AC1 and Krippendorff's alpha
    on the met / not met verdicts, the pairwise matrix (Cohen's kappa), and each expert
    against the consensus of the others. With --judge: the judge against the human
    consensus (confusion matrix, precision/recall/F1 for met and not met, balanced F1,
    Cohen's kappa, leniency bias), beside every expert treated as the judge.
    The JSON shape is documented in docs/agreement.md.

    With --by-version: for every criterion revised in a way that changes verdicts, the
    agreement of the verdicts given under each version of it (each grader's latest
    verdict in that version, earlier ones from the history), human–human percent
    agreement and Krippendorff's alpha, and
    with --judge the judge against the consensus of the same version.
    """
    if by_version:
        _by_version(db, benchmark, judge, by, humans, n_boot, seed, ci, as_json)
        return
    from gradercal.analysis.agreement import agreement_report

    repo, frames, name = load_benchmark(db, benchmark, version)
    if judge is not None:
        check_judge(frames, judge)
    names = chosen_humans(frames, humans, judge)
    with progress_bar(not as_json) as update:
        report = agreement_report(
            frames,
            judge=judge,
            humans=names,
            by=by,  # type: ignore[arg-type]
            n_boot=n_boot,
            seed=seed,
            ci=ci,
            progress=update,
            benchmark=name,
        )
    from gradercal.analysis.meta_eval import has_categories, meta_eval_report

    if has_categories(frames):  # a HealthBench meta-evaluation: its own metric beside ours
        report["healthbench_meta"] = meta_eval_report(
            frames, judges=None if judge is None else [judge], humans=names
        )
    if as_json:
        emit_report(repo, name, version, report)
        return
    _print_agreement(report)
    if "healthbench_meta" in report:
        _print_meta_eval(report["healthbench_meta"])


def _print_agreement(rep: dict[str, Any]) -> None:
    from rich.table import Table

    from gradercal.analysis.agreement import COMPARISON_FIGURES, HUMAN_STATISTICS
    from gradercal.stats.registry import STATISTICS

    console = table_console()
    notes: list[str] = list(rep.get("notes") or [])
    hh = rep["human_human"]["overall"]
    t = Table(
        title=f"Agreement among the experts ({', '.join(rep['humans']) or 'none'}): "
        f"{hh['n_units_paired']} criterion verdicts rated by ≥ 2 experts, {hh['n_tasks']} tasks",
        title_justify="left",
    )
    t.add_column("statistic")
    t.add_column("value [95% CI]" if rep.get("bootstrap") else "value", justify="right")
    for key in HUMAN_STATISTICS:
        t.add_row(STATISTICS[key].phrase, figure_cell(hh[key]))
        notes.append(hh[key].get("note") or "")
    console.print(t)
    pairs = rep["human_human"]["pairwise"]
    if pairs:
        p = Table(title="Pairs of experts (shared verdicts)", title_justify="left")
        for col in ("a", "b", "n", "agreement", "Cohen's kappa"):
            p.add_column(col, justify="right" if col not in ("a", "b") else "left")
        for row in pairs:
            p.add_row(
                row["a"],
                row["b"],
                str(row["n_units"]),
                figure_cell(row["percent_agreement"]),
                figure_cell(row["cohen_kappa"]),
            )
        console.print(p)
    loo = rep["human_human"]["leave_one_out"]
    if loo:
        lt = Table(title="Each expert against the consensus of the others", title_justify="left")
        for col in ("expert", "n", "agreement", "Cohen's kappa", "balanced F1", "leniency bias"):
            lt.add_column(col, justify="left" if col == "expert" else "right")
        for c in loo:
            m = c["metrics"]
            lt.add_row(
                c["candidate"],
                str(c["n_units"]),
                figure_cell(m["percent_agreement"]),
                figure_cell(m["cohen_kappa"]),
                figure_cell(m["balanced_f1"]),
                figure_cell(m["leniency_bias"]),
            )
        console.print(lt)
    hj = rep.get("human_judge")
    if hj:
        c = hj["confusion"]
        console.print(
            styled(
                (f"Judge {hj['judge']} vs {hj['reference']}", "bold"),
                f": {hj['n_units']} verdicts, {hj['n_tasks']} tasks ({hj['n_undecided']} with "
                "tied or missing consensus left out)\n"
                f"confusion (rows judge, columns experts): met/met {c['tp']}, met/not {c['fp']}, "
                f"not/met {c['fn']}, not/not {c['tn']}",
            )
        )
        jt = Table(title_justify="left")
        jt.add_column("figure")
        jt.add_column("judge vs consensus", justify="right")
        jt.add_column("experts as judges: range", justify="right")
        jt.add_column("judge, same references", justify="right")
        jt.add_column("within range", justify="center")
        for key, label in ((f.key, f.label) for f in COMPARISON_FIGURES):
            r = hj["human_range"].get(key)
            within = hj["within_human_range"].get(key)
            jt.add_row(
                label,
                figure_cell(hj["metrics"][key]),
                "—" if r is None else f"{r[0]:.3f} – {r[1]:.3f}",
                fixed(hj["judge_loo_mean"].get(key)),
                "—" if within is None else ("yes" if within else "no"),
            )
            notes.append(hj["metrics"][key].get("note") or "")
        console.print(jt)
    groups = rep.get("groups")
    if groups:
        g = Table(title=f"By {groups['by']}", title_justify="left")
        g.add_column(groups["by"])
        if groups["by"] == "criterion":
            g.add_column("task")
        g.add_column("n", justify="right")
        g.add_column("experts: agreement", justify="right")
        g.add_column("experts: Fleiss' kappa", justify="right")
        if hj:
            g.add_column("judge: balanced F1", justify="right")
            g.add_column("judge: kappa", justify="right")
            g.add_column("judge: leniency", justify="right")
        for row in groups["rows"]:
            h = row["human_human"]
            cells = [str(row["group"]) if row["group"] is not None else "—"]
            if groups["by"] == "criterion":
                cells.append(str(row.get("task_id")))
            cells += [
                str(h["n_units"]),
                figure_cell(h["percent_agreement"]),
                figure_cell(h["fleiss_kappa"]),
            ]
            if hj:
                j = row["human_judge"]
                m = j["metrics"] if j else {}
                cells += [
                    figure_cell(m.get("balanced_f1")),
                    figure_cell(m.get("cohen_kappa")),
                    figure_cell(m.get("leniency_bias")),
                ]
            g.add_row(*cells)
        console.print(g)
    print_notes(console, notes)


def _by_version(
    db: str | None,
    benchmark: str | None,
    judge: str | None,
    by: str | None,
    humans: str | None,
    n_boot: int,
    seed: int,
    ci: float,
    as_json: bool,
) -> None:
    """``gradercal agreement --by-version``."""
    from click.core import ParameterSource

    from gradercal.analysis.versions import versions_report
    from gradercal.db.eras import load_eras

    ctx = click.get_current_context()
    if ctx.get_parameter_source("version") == ParameterSource.COMMANDLINE:
        raise click.UsageError("--by-version counts every verdict: leave out --version")
    if by is not None:
        raise click.UsageError("--by-version and --by do not go together")
    repo, frames, name = load_benchmark(db, benchmark, "all")
    if judge is not None:
        check_judge(frames, judge)
    names = chosen_humans(frames, humans, judge)
    rep = versions_report(
        frames,
        load_eras(repo, name),
        names,
        judge,
        n_boot=n_boot,
        seed=seed,
        ci=ci,
        benchmark=name,
    )
    if as_json:
        emit_json(with_version(rep, "all"))
        return
    _print_by_version(rep)


def _print_by_version(rep: dict[str, Any]) -> None:
    from rich.table import Table

    console = table_console()
    rows = rep["criteria"]
    if not rows:
        console.print("no criterion was revised in a way that changes verdicts")
        return
    judge = rep.get("judge")
    level = f"{rep['bootstrap']['ci']:.0%} CI" if rep.get("bootstrap") else "no CI"
    t = Table(
        title=f"Agreement per criterion version ({rep['n_revised']} revised criteria; "
        f"experts {', '.join(rep['humans']) or 'none'}; intervals resample responses)",
        title_justify="left",
    )
    for col in ("task", "criterion", "version", "n", f"agreement [{level}]", "alpha"):
        t.add_column(col, justify="left" if col in ("task", "criterion") else "right")
    if judge:
        t.add_column("judge n", justify="right")
        t.add_column(f"{judge} vs experts", justify="right")
    notes: list[str] = list(rep.get("notes") or [])
    last: tuple[str, str] | None = None
    for r in rows:
        key = (r["task_id"], r["criterion_id"])
        cells = [
            *(("", "") if key == last else key),
            f"v{r['version']}" + (" (current)" if r["current"] else ""),
            str(r["n_units_paired"]),
            figure_cell(r["percent_agreement"]),
            figure_cell(r["krippendorff_alpha"]),
        ]
        if judge:
            hj = r["human_judge"]
            cells += [str(hj["n_units"]), figure_cell(hj["percent_agreement"])]
        t.add_row(*cells)
        last = key
    console.print(t)
    console.print("n: responses with two or more expert verdicts of that version", style="dim")
    print_notes(console, notes)


def _print_meta_eval(meta: dict[str, Any]) -> None:
    from rich.table import Table

    cats = sorted({c for r in [*meta["judges"], *meta["humans"]] for c in r["by_category"]})
    t = Table(
        title="HealthBench meta-evaluation: pairwise balanced F1 against each physician",
        title_justify="left",
    )
    t.add_column("grader")
    t.add_column("pairs", justify="right")
    t.add_column("balanced F1", justify="right")
    for c in cats:
        t.add_column(c, justify="right")

    def cell(x: Any) -> str:
        return fixed(x)

    for r in [*meta["judges"], *meta["humans"]]:
        t.add_row(
            r["grader"],
            f"{r['n_pairs']:,}",
            cell(r["balanced_f1"]),
            *(cell(r["by_category"].get(c, {}).get("balanced_f1")) for c in cats),
        )
    mean = meta["humans_mean"]
    t.add_row(
        f"physicians' mean ({mean['n_humans']})",
        "",
        cell(mean["balanced_f1"]),
        *(cell(mean["by_category"].get(c)) for c in cats),
    )
    table_console().print(t)


# ------------------------------------------------------------------------------- health


@click.command()
@db_option
@benchmark_option
@click.option(
    "--judge",
    "-j",
    metavar="NAME",
    help="Also flag criteria where this judge departs from the consensus.",
)
@click.option(
    "--bar",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=0.9,
    show_default=True,
    help="Agreement below this flags a criterion.",
)
@click.option(
    "--all", "include_all", is_flag=True, help="List every criterion, not only flagged ones."
)
@click.option("--limit", type=click.IntRange(min=1), help="Show at most this many criteria.")
@humans_option
@version_option
@json_option
@handle_errors
@refusals
def health(
    db: str | None,
    benchmark: str | None,
    judge: str | None,
    bar: float,
    include_all: bool,
    limit: int | None,
    humans: str | None,
    version: Any,
    as_json: bool,
) -> None:
    """Criteria to fix first: low expert agreement or a judge that departs, ranked by impact.

    Impact = |points| × disagreement. Each flagged criterion lists its disagreeing
    responses with every grader's verdict and rationale (in --json).
    """
    from gradercal.analysis.health import health_report

    repo, frames, name = load_benchmark(db, benchmark, version)
    if judge is not None:
        check_judge(frames, judge)
    rep = health_report(
        frames,
        judge,
        chosen_humans(frames, humans, judge),
        bar=bar,
        include_all=include_all,
        limit=limit,
        benchmark=name,
    )
    if as_json:
        emit_report(repo, name, version, rep)
        return
    from rich.table import Table

    console = table_console()
    t = Table(
        title=f"Criterion health (bar {bar:.0%}): {rep['n_flagged']} of {rep['n_criteria']} criteria flagged",
        title_justify="left",
    )
    for col in (
        "task",
        "criterion",
        "points",
        "experts agree",
        "judge departs",
        "impact",
        "flags",
        "text",
    ):
        t.add_column(
            col,
            justify="right"
            if col in ("points", "experts agree", "judge departs", "impact")
            else "left",
        )
    for c in rep["criteria"]:
        t.add_row(
            c["task_id"],
            c["criterion_id"],
            str(c["points"]),
            "—"
            if c["human_agreement"] is None
            else f"{c['human_agreement']:.0%} ({c['n_paired']})",
            "—"
            if c["judge_disagreement"] is None
            else f"{c['judge_disagreement']:.0%} ({c['n_judged']})",
            fixed(c["impact"], 2),
            "; ".join(c["flags"]),
            c["text"] if len(c["text"]) <= 60 else c["text"][:59] + "…",
        )
    console.print(t)
    console.print(
        "note: per-criterion figures rest on few responses; --json lists the disagreeing verdicts",
        style="dim",
    )


# ------------------------------------------------------------------------------ surveys


@click.command()
@db_option
@benchmark_option
@click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Task bootstrap resamples for intervals (0: none).",
)
@seed_option
@ci_option
@json_option
@handle_errors
@refusals
def surveys(
    db: str | None, benchmark: str | None, n_boot: int, seed: int, ci: float, as_json: bool
) -> None:
    """Task review surveys: share (strongly) agreeing per dimension, ordinal alpha across reviewers."""
    from gradercal.analysis.surveys import REVIEW_DIMENSIONS, survey_summary
    from gradercal.db.calibrations import load_task_reviews

    repo = open_repo(db)
    name = repo.benchmark(benchmark).name
    reviews = load_task_reviews(repo, name)
    order = [d.key for d in REVIEW_DIMENSIONS]
    rep = {"benchmark": name, **survey_summary(reviews, order, n_boot=n_boot, seed=seed, ci=ci)}
    if as_json:
        emit_json(rep)
        return
    from rich.table import Table

    console = table_console()
    t = Table(
        title=f"Task review surveys: {rep['n_answers']} answers by {rep['n_reviewers']} reviewers on {rep['n_tasks']} tasks",
        title_justify="left",
    )
    for col in (
        "dimension",
        "answers",
        "strongly agree",
        "agree or strongly agree",
        "mean (1–5)",
        "ordinal alpha",
    ):
        t.add_column(col, justify="left" if col == "dimension" else "right")
    notes = []
    for d in rep["dimensions"]:
        t.add_row(
            d["dimension"],
            str(d["n_answers"]),
            figure_cell(d["share_strongly_agree"], pct=True),
            figure_cell(d["share_agree_or_strongly_agree"], pct=True),
            figure_cell(d["mean"], 2),
            figure_cell(d["krippendorff_alpha"]),
        )
        notes.append(d["krippendorff_alpha"].get("note") or "")
    console.print(t)
    print_notes(console, notes)
