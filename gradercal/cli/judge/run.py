"""``gradercal judge run``: grade every judgment criterion with the LLM judge."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from gradercal.cli.common import (
    EngineChoice,
    benchmark_option,
    calibrated_summary,
    db_option,
    emit_json,
    handle_errors,
    json_option,
    print_calibrated,
)

if TYPE_CHECKING:
    pass

from gradercal.cli.judge import judge
from gradercal.cli.judge.common import (
    EXIT_INCOMPLETE,
    Connection,
    check_server_reachable,
    checked_price,
    connection_options,
    launch_batch,
    launch_run,
    note_interrupted,
    open_judge_store,
    print_estimate,
    prompt_with_vision,
    response_formats,
    run_exit_code,
    run_losses,
    stats_line,
)


@judge.command()
@db_option
@benchmark_option
@click.option(
    "--judge", "judge_name", required=True, metavar="NAME", help="Grader name of the judge."
)
@click.option("--model", required=True, metavar="MODEL", help="Model name as the server knows it.")
@connection_options
@click.option(
    "--prompt",
    "prompt_ref",
    metavar="VERSION",
    help="Prompt version (hash prefix or name). Default: the judge's, else the shipped default.",
)
@click.option("--samples", default=1, show_default=True, type=click.IntRange(1, 50))
@click.option("--temperature", default=0.0, show_default=True, type=click.FloatRange(0, 2))
@click.option("--max-tokens", default=1024, show_default=True, type=click.IntRange(1))
@click.option("--seed", type=int, help="Sampling seed, for servers that honour it.")
@click.option(
    "--response-format",
    type=EngineChoice(response_formats),
    default="json_object",
    show_default=True,
    help="JSON mode, structured output, or none.",
)
@click.option(
    "--logprobs/--no-logprobs",
    default=True,
    show_default=True,
    help="Ask for log-probabilities (confidence from the verdict token).",
)
@click.option(
    "--scope",
    default="unjudged",
    show_default=True,
    metavar="all|unjudged|stale|calibration|tasks:ID,…",
    help="unjudged: pairs without a current verdict (resume; stale ones included); "
    "stale: only criteria a rubric revision changed; all: re-judge everything; "
    "calibration: responses the experts graded; tasks:…: those tasks.",
)
@click.option(
    "--vision",
    is_flag=True,
    help="A judge that sees figures: send each task's PNG/JPEG artifacts and its PDF pages "
    "(rendered) as images. A prompt option: the prompt version becomes one derived with it.",
)
@click.option(
    "--vision-dpi",
    type=click.IntRange(36, 600),
    metavar="N",
    help="With --vision: resolution of the rendered PDF pages (default 100, or the prompt's).",
)
@click.option(
    "--vision-pages",
    type=click.IntRange(0, 100),
    metavar="N",
    help="With --vision: PDF pages sent per task, across its PDFs (default 4, or the prompt's).",
)
@click.option(
    "--vision-images",
    type=click.IntRange(0, 100),
    metavar="N",
    help="With --vision: image artifacts sent per task (default 4, or the prompt's).",
)
@click.option(
    "--batch",
    "use_batch",
    is_flag=True,
    help="Send the requests through the OpenAI Batch API (one JSONL file, results within "
    "24 h, at the batch price). Resumable: run the same command again after a kill or "
    "Ctrl+C to follow the same batch.",
)
@click.option(
    "--poll-interval",
    default=30.0,
    show_default=True,
    type=click.FloatRange(0, 300),
    metavar="SECONDS",
    help="With --batch: seconds between polls of the batch's status (each poll is also "
    "the run's sign of life).",
)
@click.option(
    "--batch-rounds",
    default=3,
    show_default=True,
    type=click.IntRange(1, 20),
    metavar="N",
    help="With --batch: batches at most; a following batch resends failed, unparsed and "
    "unfinished (expired) requests.",
)
@click.option("--batch-store-chunk", default=200, type=click.IntRange(1), hidden=True)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Only estimate: pairs, requests, tokens and cost (nothing is sent or recorded).",
)
@json_option
@handle_errors
def run(
    db: str | None,
    benchmark: str | None,
    judge_name: str,
    model: str,
    conn: Connection,
    prompt_ref: str | None,
    samples: int,
    temperature: float,
    max_tokens: int,
    seed: int | None,
    response_format: str,
    logprobs: bool,
    scope: str,
    vision: bool,
    vision_dpi: int | None,
    vision_pages: int | None,
    vision_images: int | None,
    use_batch: bool,
    poll_interval: float,
    batch_rounds: int,
    batch_store_chunk: int,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Grade every judgment criterion of every response (one request per pair).

    With --batch the same requests go through the OpenAI Batch API as one file: the
    command uploads it, creates the batch, polls it (--poll-interval) and stores the
    verdicts when it ends, costed at the batch price. A killed or interrupted command
    leaves the batch recorded in the database; the same command resumes it (never
    submitting it twice). Failed, unparsed and expired requests are sent again in a
    following batch, up to --batch-rounds batches.

    Verdicts are stored as the judgments of grader NAME (kind judge) as they arrive;
    Ctrl+C keeps every verdict received, and running the same command again resumes
    (only missing verdicts are requested; identical requests come from the cache). A
    run whose process was killed is marked interrupted. When the judge has an active
    calibration (`gradercal calibrate`), the calibrated per-model figures are printed
    too. Auto criteria are never sent. Exit status: 0 complete, 3 items left (max cost,
    failures to retry), 1 error, 130 interrupted.

    With --vision the judge also sees each task's figures: PNG/JPEG artifacts as they
    are and PDF pages rendered at --vision-dpi, within --vision-pages pages and
    --vision-images images per task, sent as image parts of the request (the model must
    accept images). It is an option of the prompt version, so a new one (NAME+vision) is
    derived and stored; a judge keeps its prompt version, so give a new --judge name.
    """
    from gradercal.db.judging import Scope
    from gradercal.judge.client import JudgeParams
    from gradercal.judge.runner import estimate_run

    store = open_judge_store(db)
    where = Scope.parse(scope)
    params = JudgeParams(
        model=model,
        temperature=temperature,
        samples=samples,
        max_tokens=max_tokens,
        response_format=response_format,  # type: ignore[arg-type]
        logprobs=logprobs,
        seed=seed,
    )
    existing = store.judge(judge_name)
    if prompt_ref is None and existing is not None and existing.prompt_hash:
        prompt_ref = existing.prompt_hash
    base_prompt = store.load_prompt(prompt_ref)
    prompt = prompt_with_vision(base_prompt, vision, vision_dpi, vision_pages, vision_images)
    model_price = checked_price(model, conn)
    if dry_run:
        items = store.work_items(benchmark, existing, where, prompt)
        charged = model_price.batch() if use_batch and model_price is not None else model_price
        estimate = estimate_run(
            items, prompt, samples=samples, max_tokens=max_tokens, price=charged
        )
        print_estimate(
            judge_name, model, prompt.content_hash, str(where), estimate, as_json,
            pricing="batch" if use_batch else "online", price=charged,
        )  # fmt: skip
        return
    # An unreachable server fails here, before the judge grader or a run is recorded.
    check_server_reachable(conn)
    note_interrupted(store)
    if prompt is not base_prompt:  # a derived version needs its parent stored
        store.save_prompt(base_prompt)
    info = store.ensure_judge(judge_name, model=model, prompt=prompt, parameters=params.to_dict())
    items = store.work_items(benchmark, info, where, prompt)
    pending = False
    summary: dict[str, Any] = {
        "judge": judge_name,
        "model": model,
        "prompt_version": prompt.content_hash,
        "scope": str(where),
        "database": store.db.display,
        "items": len(items),
    }
    if prompt.vision is not None:
        summary["vision"] = prompt.vision.to_dict()
    if use_batch and not items:
        from gradercal.db.judge_batch import has_open_batch

        pending = has_open_batch(store, info)  # an open batch is collected even so
    if not items and not (use_batch and pending):
        summary.update(status="completed", run_id=None)
        if use_batch:
            summary.update(batches=[], resumed=False, left=0)
        summary["calibrated"] = calibrated_summary(store, benchmark, judge_name)
        if as_json:
            emit_json(summary)
        else:
            click.echo(f"judge {judge_name!r}: nothing to judge (scope {where})")
            print_calibrated(summary["calibrated"])
        return
    record = {
        "kind": "batch" if use_batch else "run",
        "scope": str(where),
        "benchmark": benchmark,
        "prompt_version": prompt.content_hash,
        **({} if prompt.vision is None else {"vision": prompt.vision.to_dict()}),
    }
    if use_batch:
        done = launch_batch(
            store, info, prompt, params, conn, model_price=model_price, record=record,
            benchmark=benchmark, scope=where, items=len(items), show_progress=not as_json,
            label=f"judge {judge_name} batch", poll_interval=poll_interval,
            rounds=batch_rounds, store_chunk=batch_store_chunk,
        )  # fmt: skip
    else:
        done = launch_run(
            store,
            info,
            prompt,
            params,
            items,
            conn,
            model_price=model_price,
            record=record,
            show_progress=not as_json,
            label=f"judge {judge_name}",
        )
    stats = done.stats
    summary.update(run_id=done.run_id, saved=done.saved, **stats.to_dict())
    if use_batch:
        summary.update(batches=done.batches, resumed=done.resumed, left=done.left)
    summary["calibrated"] = (
        None if stats.status == "failed" else calibrated_summary(store, benchmark, judge_name)
    )
    if as_json:
        emit_json(summary)
    else:
        head = {
            "completed": "done",
            "stopped_cost": f"stopped: {stats.message}",
            "cancelled": "interrupted",
            "failed": f"failed: {stats.message}",
            "no_verdicts": "got no verdict",
        }.get(stats.status, stats.status)
        click.echo(f"judge {judge_name!r} run {done.run_id} {head}: {stats_line(stats)}")
        if prompt.vision is not None:
            v = prompt.vision
            click.echo(
                f"figures sent as images (prompt {prompt.short_hash}): PDF pages at {v.dpi} dpi, "
                f"at most {v.max_pages} pages and {v.max_images} images per task"
            )
        for line in run_losses(stats, samples):
            click.echo(click.style("note: ", fg="yellow", bold=True) + line, err=True)
        left = len(items) - stats.ok if done.left is None else done.left
        if done.batches:
            click.echo("batches: " + ", ".join(done.batches))
        if done.interrupted and done.batches is not None:
            click.echo("the batch goes on at the server: run the same command again to collect it")
        if left and stats.status != "failed":
            click.echo(
                f"{left} of {len(items)} pairs still without a verdict: run the same "
                "command again to resume"
            )
        print_calibrated(summary["calibrated"])
    if stats.status in ("failed", "no_verdicts") and not as_json:
        click.echo(click.style("error: ", fg="red", bold=True) + str(stats.message), err=True)
    code = run_exit_code(stats, done.interrupted)
    if done.left is not None and code == EXIT_INCOMPLETE and stats.status == "completed":
        # a batch run's failures of early rounds may have been answered by later ones
        code = EXIT_INCOMPLETE if done.left else 0
    elif code == 0 and done.left:
        code = EXIT_INCOMPLETE
    if code:
        sys.exit(code)
