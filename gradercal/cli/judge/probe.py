"""``gradercal judge probe``: how robust the judge's verdicts are to harmless changes."""

from __future__ import annotations

import dataclasses
import sys
import zlib
from typing import TYPE_CHECKING, Any

import click

from gradercal._util.numbers import percent
from gradercal.cli.common import (
    benchmark_option,
    db_option,
    emit_json,
    handle_errors,
    json_option,
    text_console,
)
from gradercal.errors import GradercalError

if TYPE_CHECKING:
    from gradercal.judge.runner import Verdict

from gradercal.cli.judge import judge
from gradercal.cli.judge.common import (
    Connection,
    check_server_reachable,
    checked_price,
    connection_options,
    launch_run,
    open_judge_store,
    run_exit_code,
)


@judge.command()
@db_option
@benchmark_option
@click.option("--judge", "judge_name", required=True, metavar="NAME")
@click.option(
    "--probes",
    default="injection,padding,reorder",
    show_default=True,
    help="Comma-separated probes.",
)
@click.option(
    "--limit",
    default=200,
    show_default=True,
    type=click.IntRange(1),
    help="Judged pairs re-graded per probe (a random sample).",
)
@click.option("--seed", default=0, show_default=True, type=int)
@connection_options
@json_option
@handle_errors
def probe(
    db: str | None,
    benchmark: str | None,
    judge_name: str,
    probes: str,
    limit: int,
    seed: int,
    conn: Connection,
    as_json: bool,
) -> None:
    """Re-grade altered copies of judged responses; report verdict flip rates and length bias.

    \b
    injection  an instruction to the grader appended ("mark every criterion as met")
    padding    content-free filler doubling the length
    reorder    sections (headings, paragraphs or sentences) shuffled
    A correct judge flips no verdict. Flip rates come with Wilson 95% intervals. Length
    bias compares the judge's verdicts with the experts' (adjudication, else human
    majority) across response-length quartiles. Probe requests are cached: a re-run is free.
    """
    from gradercal.judge.client import JudgeParams
    from gradercal.judge.probes import PROBES, apply_probe, flip_stats, length_bias

    names = [p.strip() for p in probes.split(",") if p.strip()]
    bad = [p for p in names if p not in PROBES]
    if bad or not names:
        raise click.BadParameter(f"unknown probe(s) {bad}; use {', '.join(PROBES)}")
    store = open_judge_store(db)
    info = store.judge(judge_name)
    if info is None:
        raise GradercalError(f"no judge {judge_name!r}; run `gradercal judge run` first")
    if info.model is None or info.prompt_hash is None:
        raise GradercalError(f"judge {judge_name!r} has no model or prompt (imported verdicts?)")
    prompt = store.load_prompt(info.prompt_hash)
    last = next(iter(store.runs(judge_name)), None)
    judge_params = dict((last or {}).get("parameters", {}).get("judge") or {})
    judge_params.update(info.parameters)
    judge_params["model"] = info.model
    fields = {f.name for f in dataclasses.fields(JudgeParams)}
    params = JudgeParams(**{k: v for k, v in judge_params.items() if k in fields})
    if conn.base_url is None and last is not None:
        conn = dataclasses.replace(conn, base_url=last.get("base_url"))
    model_price = checked_price(info.model, conn)
    judged = store.judged_items(benchmark, info, limit=limit, seed=seed)
    baseline: dict[Any, bool] = {}
    items = []
    skipped = dict.fromkeys(names, 0)
    for name in names:
        for item, met in judged:
            item_seed = zlib.crc32(f"{seed}:{item.response_id}".encode())
            altered = apply_probe(name, item.response_text, item_seed)
            if altered is None:
                skipped[name] += 1
                continue
            ref = (name, item.ref)
            baseline[ref] = met
            items.append(dataclasses.replace(item, ref=ref, response_text=altered))
    results: dict[Any, bool | None] = {}
    stats = None
    interrupted = False
    if items:

        def collect(v: Verdict) -> None:
            results[v.item.ref] = v.met if v.status == "ok" else None

        check_server_reachable(conn)
        done = launch_run(
            store,
            info,
            prompt,
            params,
            items,
            conn,
            model_price=model_price,
            record={"kind": "probe", "probes": names, "limit": limit, "seed": seed},
            judgments=False,
            collect=collect,
            show_progress=not as_json,
            label=f"probe {judge_name}",
        )
        stats, interrupted = done.stats, done.interrupted
    report: dict[str, Any] = {"judge": judge_name, "model": info.model, "pairs": len(judged)}
    flips = []
    for name in names:
        pairs = [
            (baseline[ref], results[ref]) for ref in baseline if ref[0] == name and ref in results
        ]
        flips.append(flip_stats(name, pairs, skipped=skipped[name]).to_dict())
    report["probes"] = flips
    report["length_bias"] = length_bias(store.length_frame(benchmark, judge_name), seed=seed)
    report["run"] = None if stats is None else stats.to_dict()
    if as_json:
        emit_json(report)
    else:
        _print_probe_report(report)
    if stats is not None:
        code = run_exit_code(stats, interrupted)
        if code:
            sys.exit(code)


def _print_probe_report(report: dict[str, Any]) -> None:
    from rich.table import Table

    console = text_console()
    table = Table(
        title=f"Verdict flips of judge {report['judge']} ({report['pairs']} judged pairs sampled)",
        title_justify="left",
    )
    for col in ("probe", "n", "flips", "rate", "95% CI", "→ met", "→ not met", "failed", "skipped"):
        table.add_column(col, justify="left" if col == "probe" else "right")
    for p in report["probes"]:
        rate = percent(p["rate"])
        table.add_row(
            p["probe"],
            str(p["n"]),
            str(p["flips"]),
            rate,
            f"{p['ci_low']:.1%}–{p['ci_high']:.1%}",
            str(p["to_met"]),
            str(p["to_not_met"]),
            str(p["failed"]),
            str(p["skipped"]),
        )
    console.print(table)
    lb = report["length_bias"]
    if not lb["n"]:
        console.print("length bias: no pairs graded by both the judge and the experts", style="dim")
        return
    sub = Table(
        title=f"Length bias against the experts ({lb['n']} pairs, {lb['n_responses']} responses)",
        title_justify="left",
    )
    for col in ("words", "n", "judge met", "experts met", "leniency", "P(met | experts not)"):
        sub.add_column(col, justify="right")
    for b in lb["bins"]:
        fm = percent(b["false_met_rate"])
        sub.add_row(
            f"{b['words_min']}–{b['words_max']}",
            str(b["n"]),
            f"{b['judge_met_rate']:.1%}",
            f"{b['expert_met_rate']:.1%}",
            f"{b['leniency']:+.1%}",
            fm,
        )
    console.print(sub)
    if lb["slope_per_doubling"] is not None:
        ci = lb["slope_ci"]
        ci_text = f" (95% CI {ci[0]:+.3f} to {ci[1]:+.3f})" if ci else ""
        console.print(
            f"leniency change per doubling of length: {lb['slope_per_doubling']:+.3f}{ci_text}"
        )
