"""``gradercal judge``: run the LLM judge, probe its robustness, manage its prompts and prices.

Registered lazily by :class:`gradercal.cli.LazyGroup`.
A front end: it opens the database (:mod:`gradercal.db.judging`) and drives the core
(:mod:`gradercal.judge`).

Exit status of ``judge run`` and ``judge probe``: 0 when every work item got a verdict,
3 when the run ended with items left (``--max-cost`` reached, or parse failures/errors
to retry by running the same command again), 4 when no item got a verdict (run status
``no_verdicts``: the server's replies could not be read, or every request failed), 1 on
an error (nothing more was sent), 130 when interrupted (Ctrl+C; every verdict received
so far is saved).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import os
import sys
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from gradercal._util.numbers import percent
from gradercal.cli.common import (
    EngineChoice,
    benchmark_option,
    calibrated_summary,
    db_option,
    db_option_unused,
    emit_json,
    handle_errors,
    json_option,
    print_calibrated,
    text_console,
)
from gradercal.errors import GradercalError

if TYPE_CHECKING:
    from gradercal.db.judging import JudgeInfo, JudgeStore, OpenRun, Scope
    from gradercal.judge.batch import BatchProgress
    from gradercal.judge.client import JudgeClient, JudgeParams
    from gradercal.judge.pricing import Price
    from gradercal.judge.prompts import PromptTemplate
    from gradercal.judge.runner import RunStats, Verdict, WorkItem
    from gradercal.judge.secrets import ApiKey

F = TypeVar("F", bound=Callable[..., Any])

EXIT_INCOMPLETE = 3
EXIT_NO_VERDICTS = 4
EXIT_INTERRUPTED = 130
#: ``jsonl``: progress as JSON lines on stderr (see :func:`progress_bar`).
PROGRESS_ENV = "GRADERCAL_PROGRESS"


@dataclasses.dataclass(frozen=True)
class _Connection:
    """The server options shared by ``judge run`` and ``judge probe``."""

    base_url: str | None
    api_key_env: str
    concurrency: int
    timeout: float
    max_retries: int
    max_cost: float | None
    price: str | None
    http: str


_CONNECTION_FIELDS = tuple(f.name for f in dataclasses.fields(_Connection))


def _response_formats() -> tuple[str, ...]:
    from gradercal.judge.client import RESPONSE_FORMATS

    return RESPONSE_FORMATS


def _connection_options(fn: F) -> F:
    """Add the server options; the command receives them as one ``conn`` argument."""
    options = [
        click.option(
            "--base-url",
            metavar="URL",
            help="OpenAI-compatible API base URL (e.g. http://localhost:8000/v1). "
            "Default: $OPENAI_BASE_URL, else OpenAI's.",
        ),
        click.option(
            "--api-key-env",
            default="OPENAI_API_KEY",
            show_default=True,
            metavar="VAR",
            help="Environment variable holding the API key (else the system keyring, "
            "service 'gradercal', user VAR). The key is never stored or printed.",
        ),
        click.option("--concurrency", default=8, show_default=True, type=click.IntRange(1, 1024)),
        click.option(
            "--timeout",
            default=120.0,
            show_default=True,
            type=click.FloatRange(0.01),
            help="Per-request timeout in seconds.",
        ),
        click.option(
            "--max-retries",
            default=6,
            show_default=True,
            type=click.IntRange(1),
            help="HTTP attempts per request on timeouts, 429 and 5xx.",
        ),
        click.option(
            "--max-cost",
            type=click.FloatRange(0),
            metavar="USD",
            help="Stop cleanly before the run's cost passes this.",
        ),
        click.option(
            "--price",
            metavar="IN,OUT",
            help="USD per million input and output tokens (overrides the price table).",
        ),
        click.option(
            "--http",
            type=click.Choice(["direct", "aiohttp", "httpx"]),
            default="direct",
            show_default=True,
            help="HTTP path: gradercal's own aiohttp client for /chat/completions (fastest), "
            "or the openai SDK with its aiohttp or httpx transport.",
        ),
    ]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        conn = _Connection(**{k: kwargs.pop(k) for k in _CONNECTION_FIELDS})
        return fn(*args, conn=conn, **kwargs)

    command: Any = wrapper
    for option in reversed(options):
        command = option(command)
    return command  # type: ignore[no-any-return]


# -- progress ----------------------------------------------------------------------------
@contextmanager
def progress_bar(enabled: bool, total: int, label: str) -> Iterator[Callable[[RunStats], None]]:
    """A rich progress bar (rate, ETA, cost) on stderr when it is a terminal.

    With the environment variable :data:`PROGRESS_ENV` set to ``jsonl`` (a window running
    the command as a child process, gradercal.ui.qt_judge_align), one JSON line per
    update instead, whatever ``enabled`` says: ``{"progress": label, "done", "total",
    "cost_usd"}``.
    """
    if os.environ.get(PROGRESS_ENV) == "jsonl":

        def emit(stats: RunStats) -> None:
            line = {"progress": label, "done": stats.done, "total": total,
                    "cost_usd": round(stats.cost_usd, 6)}  # fmt: skip
            sys.stderr.write(json.dumps(line) + "\n")
            sys.stderr.flush()

        yield emit
        return
    if not enabled or not sys.stderr.isatty():
        yield lambda _stats: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[info]}"),
        console=Console(stderr=True),
        transient=False,
    ) as prog:
        task = prog.add_task(label, total=total, rate="", info="")

        def update(stats: RunStats) -> None:
            rate = stats.done / stats.elapsed_s if stats.elapsed_s > 0 else 0.0
            info = f"${stats.cost_usd:.4f}"
            failed = stats.parse_failures + stats.errors
            if failed:
                info += f" · {failed} failed"
            if stats.cached:
                info += f" · {stats.cached} cached"
            prog.update(task, completed=stats.done, rate=f"{rate:.1f}/s", info=info)

        yield update


# -- helpers -------------------------------------------------------------------------
def _store(db: str | None) -> JudgeStore:
    from gradercal.db.judging import JudgeStore
    from gradercal.db.session import open_database

    return JudgeStore(open_database(db, create=False))


def _checked_price(model: str, conn: _Connection) -> Price | None:
    """The model's price; an error when ``--max-cost`` is asked without one."""
    model_price = _price(model, conn.price)
    if conn.max_cost is not None and model_price is None:
        raise GradercalError(
            f"no price known for model {model!r}, so --max-cost cannot be enforced: add it to "
            "the price table (`gradercal judge prices --init`) or pass --price IN,OUT"
        )
    return model_price


@dataclasses.dataclass
class _Launched:
    stats: RunStats
    interrupted: bool
    run_id: int
    saved: int
    #: with --batch: the batches followed, whether an open one was resumed, items left
    batches: list[str] | None = None
    resumed: bool = False
    left: int | None = None


def _check_server(conn: _Connection) -> None:
    """Fail at once, with the cause, when the judge server cannot be reached."""
    from gradercal.judge.client import check_server

    check_server(conn.base_url, timeout=min(conn.timeout, 10.0))


def _launch(
    store: JudgeStore,
    info: JudgeInfo,
    prompt: PromptTemplate,
    params: JudgeParams,
    items: list[WorkItem],
    conn: _Connection,
    *,
    model_price: Price | None,
    record: dict[str, Any],
    judgments: bool = True,
    collect: Callable[[Verdict], None] | None = None,
    show_progress: bool,
    label: str,
) -> _Launched:
    """Record a run, judge ``items`` through the server, commit every verdict, close the run."""
    client, key = _client(params, conn, online=True)
    run = store.open_run(
        info,
        prompt,
        client,
        record={
            **record,
            "items": len(items),
            "api_key_env": conn.api_key_env,
            "api_key_source": key.source,
        },
        price=model_price,
        max_cost=conn.max_cost,
        judgments=judgments,
        collect=collect,
    )
    stats, interrupted = _execute(run, items, show_progress=show_progress, label=label)
    return _Launched(stats, interrupted, run.run_id, run.writer.saved)


def _client(params: JudgeParams, conn: _Connection, *, online: bool) -> tuple[JudgeClient, ApiKey]:
    """The judge's client for ``conn`` and the API key it was given (a note when none).

    ``online``: requests go out concurrently over ``conn.http``; a batch run's client only
    builds request bodies and speaks the Batch API through the SDK's defaults."""
    from gradercal.judge.client import JudgeClient, RetryPolicy
    from gradercal.judge.secrets import resolve_api_key

    key = resolve_api_key(conn.api_key_env)
    if key.value is None:
        click.echo(
            f"note: no API key in ${conn.api_key_env} or the keyring; sending none", err=True
        )
    extra: dict[str, Any] = (
        {"concurrency": conn.concurrency, "http_backend": conn.http} if online else {}
    )
    client = JudgeClient(
        params,
        base_url=conn.base_url,
        api_key=key.value,
        retry=RetryPolicy(max_attempts=conn.max_retries, timeout=conn.timeout),
        **extra,
    )
    return client, key


def _launch_batch(
    store: JudgeStore,
    info: JudgeInfo,
    prompt: PromptTemplate,
    params: JudgeParams,
    conn: _Connection,
    *,
    model_price: Price | None,
    record: dict[str, Any],
    benchmark: str | None,
    scope: Scope,
    items: int,
    show_progress: bool,
    label: str,
    poll_interval: float,
    rounds: int,
    store_chunk: int = 200,
) -> _Launched:
    """Record (or resume) a batch run, follow it to the end, store its verdicts."""
    from gradercal.db.judge_batch import DbBatchStore, open_batch_run
    from gradercal.judge.batch import BatchJudge, OpenAIBatchAPI

    client, key = _client(params, conn, online=False)
    charged = None if model_price is None else model_price.batch()
    run_id, resumed = open_batch_run(
        store,
        info,
        base_url=client.public_base_url,
        start={
            "model": params.model,
            "base_url": client.public_base_url,
            "parameters": {
                **record,
                "items": items,
                "api_key_env": conn.api_key_env,
                "api_key_source": key.source,
                "judge": params.to_dict(),
                "timeout": conn.timeout,
                "max_retries": conn.max_retries,
                "max_cost": conn.max_cost,
                "max_rounds": rounds,
                "price": None if charged is None else model_price.to_dict(),  # type: ignore[union-attr]
            },
        },
    )
    if resumed:
        click.echo(f"note: resuming judge run {run_id} (its batch is still open)", err=True)
    bstore = DbBatchStore(
        store, info, run_id, benchmark=benchmark, scope=scope, prompt=prompt, model=params.model
    )
    api = OpenAIBatchAPI(
        base_url=conn.base_url,
        api_key=key.value,
        timeout=conn.timeout,
        max_retries=conn.max_retries,
        redact=client.redact,
    )
    interrupted = False
    with batch_progress(show_progress, label) as (update, note):
        judge = BatchJudge(
            client, prompt, api, bstore, price=model_price, max_cost=conn.max_cost,
            max_rounds=rounds, poll_interval=poll_interval, progress=update, note=note,
            run_id=run_id, store_chunk=store_chunk,
        )  # fmt: skip
        try:
            judge.run()
        except KeyboardInterrupt:
            interrupted = True
            judge.stats.status = "cancelled"
        except BaseException:
            judge.stats.status = "failed"
            raise
        finally:
            api.close()
            store.finish_run(run_id, judge.stats)
    left = len(bstore.work_items(False))
    return _Launched(
        judge.stats, interrupted, run_id, judge.stats.done, judge.batches, resumed, left
    )


@contextmanager
def batch_progress(
    enabled: bool, label: str
) -> Iterator[tuple[Callable[[BatchProgress], None], Callable[[str], None]]]:
    """A progress bar of the batch's requests (done / total, status) and a note printer,
    on stderr when it is a terminal (notes without one too, unless ``--json``)."""

    def echo(message: str) -> None:
        if enabled:
            click.echo(f"note: {message}", err=True)

    if not enabled or not sys.stderr.isatty():
        yield (lambda _p: None), echo
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    console = Console(stderr=True)
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        console=console,
    ) as prog:
        task = prog.add_task(label, total=None, info="")

        def update(p: BatchProgress) -> None:
            info = f"{p.status}" + (f" · {p.failed} failed" if p.failed else "")
            prog.update(
                task, total=p.total or None, completed=p.completed + p.failed,
                info=f"round {p.round} {p.batch_id or ''} {info}",
            )  # fmt: skip

        yield update, lambda message: prog.console.print(f"note: {message}")


def _note_interrupted(store: JudgeStore) -> None:
    for run_id in store.mark_interrupted():
        click.echo(f"note: judge run {run_id} was interrupted (its process is gone)", err=True)


def _price(model: str, price: str | None) -> Price | None:
    from gradercal.judge.pricing import Price, load_prices, price_for

    if price is None:
        return price_for(model, load_prices())
    try:
        a, b = (float(x) for x in price.split(","))
    except ValueError:
        raise click.BadParameter(
            "expected IN,OUT (USD per million tokens)", param_hint="--price"
        ) from None
    return Price(a, b)


def _execute(
    run: OpenRun, items: list[Any], *, show_progress: bool, label: str
) -> tuple[RunStats, bool]:
    """Run to the end (or Ctrl+C); always commit what was received and close the run."""
    interrupted = False
    runner = run.runner
    with progress_bar(show_progress, len(items), label) as update:
        runner.progress = update

        async def main() -> RunStats:
            async with runner.client:
                return await runner.run(items, total=len(items))

        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            interrupted = True
            runner.stats.status = "cancelled"
        except BaseException:
            runner.stats.status = "failed"
            raise
        finally:
            run.finish()
    return runner.stats, interrupted


def _stats_line(stats: RunStats) -> str:
    parts = [
        f"{stats.ok} verdicts",
        f"{stats.parse_failures} parse failures",
        f"{stats.errors} errors",
        f"{stats.cached} from cache",
        f"{stats.requests} requests",
        f"{stats.prompt_tokens:,} + {stats.completion_tokens:,} tokens",
        f"${stats.cost_usd:.4f}",
        f"{stats.elapsed_s:.1f} s",
    ]
    return ", ".join(parts)


def _losses(stats: RunStats, samples: int) -> list[str]:
    """What the server's limits cost this run (one sentence each): features it refused
    (the client dropped them and carried on) and verdicts stored without a confidence."""
    out = []
    for a in stats.adaptations:
        if a.startswith("logprobs"):
            out.append("the server refused log-probabilities; requests were sent without them")
        elif a.startswith("response_format"):
            out.append(
                "the server refused JSON mode (response_format); requests were sent without "
                "it and verdicts read from the model's text"
            )
        else:
            out.append(f"server adaptation: {a}")
    if stats.logprobs_missing and not any(a.startswith("logprobs") for a in stats.adaptations):
        out.append(
            f"the server returned no log-probabilities for {stats.logprobs_missing} of "
            f"{stats.ok} verdicts"
        )
    lacking = stats.ok - stats.with_confidence
    if lacking:
        out.append(
            f"{lacking} of {stats.ok} verdicts have no confidence (stored empty, not 1.0): "
            "`calibrate --method threshold` needs one; `--method leniency`, `isotonic` and "
            "`platt` work without, or run again with --samples K (K ≥ 3) for a "
            "self-consistency confidence (K requests per pair)"
            if samples == 1
            else f"{lacking} of {stats.ok} verdicts have no confidence"
        )
    return out


def _exit_code(stats: RunStats, interrupted: bool) -> int:
    if interrupted:
        return EXIT_INTERRUPTED
    if stats.status == "failed":
        return 1
    if stats.status == "no_verdicts":
        return EXIT_NO_VERDICTS
    if stats.status != "completed" or stats.parse_failures or stats.errors:
        return EXIT_INCOMPLETE
    return 0


# -- commands ------------------------------------------------------------------------
@click.group()
def judge() -> None:
    """The LLM judge: grade every judgment criterion through an OpenAI-compatible API.

    \b
    Examples:
      export OPENAI_API_KEY=…
      gradercal judge run --judge gpt41mini --model gpt-4.1-mini --max-cost 5
      gradercal judge run --judge local --model qwen3 --base-url http://localhost:8000/v1
      gradercal judge probe --judge gpt41mini --limit 100
      gradercal judge align --judge gpt41mini --model gpt-4.1-mini --json
      gradercal judge prompt list
    """


@judge.command()
@db_option
@benchmark_option
@click.option(
    "--judge", "judge_name", required=True, metavar="NAME", help="Grader name of the judge."
)
@click.option("--model", required=True, metavar="MODEL", help="Model name as the server knows it.")
@_connection_options
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
    type=EngineChoice(_response_formats),
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
    conn: _Connection,
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

    store = _store(db)
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
    prompt = _with_vision(base_prompt, vision, vision_dpi, vision_pages, vision_images)
    model_price = _checked_price(model, conn)
    if dry_run:
        items = store.work_items(benchmark, existing, where, prompt)
        charged = model_price.batch() if use_batch and model_price is not None else model_price
        estimate = estimate_run(
            items, prompt, samples=samples, max_tokens=max_tokens, price=charged
        )
        _print_estimate(
            judge_name, model, prompt.content_hash, str(where), estimate, as_json,
            pricing="batch" if use_batch else "online", price=charged,
        )  # fmt: skip
        return
    # An unreachable server fails here, before the judge grader or a run is recorded.
    _check_server(conn)
    _note_interrupted(store)
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
        done = _launch_batch(
            store, info, prompt, params, conn, model_price=model_price, record=record,
            benchmark=benchmark, scope=where, items=len(items), show_progress=not as_json,
            label=f"judge {judge_name} batch", poll_interval=poll_interval,
            rounds=batch_rounds, store_chunk=batch_store_chunk,
        )  # fmt: skip
    else:
        done = _launch(
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
        click.echo(f"judge {judge_name!r} run {done.run_id} {head}: {_stats_line(stats)}")
        if prompt.vision is not None:
            v = prompt.vision
            click.echo(
                f"figures sent as images (prompt {prompt.short_hash}): PDF pages at {v.dpi} dpi, "
                f"at most {v.max_pages} pages and {v.max_images} images per task"
            )
        for line in _losses(stats, samples):
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
    code = _exit_code(stats, done.interrupted)
    if done.left is not None and code == EXIT_INCOMPLETE and stats.status == "completed":
        # a batch run's failures of early rounds may have been answered by later ones
        code = EXIT_INCOMPLETE if done.left else 0
    elif code == 0 and done.left:
        code = EXIT_INCOMPLETE
    if code:
        sys.exit(code)


def _with_vision(
    prompt: PromptTemplate,
    vision: bool,
    dpi: int | None,
    pages: int | None,
    images: int | None,
) -> PromptTemplate:
    """``prompt``, or with ``--vision`` the version of it that sends the task's figures
    (the options given over the prompt's own vision settings, else the defaults)."""
    if not vision:
        if (dpi, pages, images) != (None, None, None):
            raise click.UsageError("--vision-dpi, --vision-pages and --vision-images need --vision")
        return prompt
    from gradercal.judge.prompts import with_vision
    from gradercal.judge.vision import DEFAULT_VISION

    have = prompt.vision or DEFAULT_VISION
    settings = dataclasses.replace(
        have,
        dpi=have.dpi if dpi is None else dpi,
        max_pages=have.max_pages if pages is None else pages,
        max_images=have.max_images if images is None else images,
    )
    return with_vision(prompt, settings)


def _print_estimate(
    judge_name: str,
    model: str,
    prompt_hash: str,
    scope: str,
    est: Any,
    as_json: bool,
    *,
    pricing: str = "online",
    price: Price | None = None,
) -> None:
    if as_json:
        emit_json(
            {
                "judge": judge_name,
                "model": model,
                "prompt_version": prompt_hash,
                "scope": scope,
                "pricing": pricing,
                "price": None if price is None else {"input": price.input, "output": price.output},
                "estimate": est.to_dict(),
            }
        )
        return
    cost = "unknown (no price for the model)"
    if est.cost_usd is not None:
        cost = f"≈ ${est.cost_usd:.4f} (at most ${est.cost_usd_max:.4f} if every reply is long)"
        if pricing == "batch" and price is not None:
            cost += (
                f" at the batch price (${price.input:g} in, ${price.output:g} out per "
                "million tokens)"
            )
    click.echo(
        f"judge {judge_name!r} ({model}), scope {scope}: {est.items} pairs, "
        f"{est.requests} requests, ≈ {est.prompt_tokens:,} prompt + "
        f"{est.completion_tokens:,} completion tokens; cost {cost}. "
        "Cached replies are free and not deducted."
    )
    if est.items and est.requests > est.items:
        k = est.requests // est.items
        click.echo(
            f"--samples {k}: {k} requests per pair, {k}x the cost of one, for a "
            "self-consistency confidence (the share of samples that say met) where the "
            "server gives no log-probabilities."
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
@_connection_options
@json_option
@handle_errors
def probe(
    db: str | None,
    benchmark: str | None,
    judge_name: str,
    probes: str,
    limit: int,
    seed: int,
    conn: _Connection,
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
    store = _store(db)
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
    model_price = _checked_price(info.model, conn)
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

        _check_server(conn)
        done = _launch(
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
        code = _exit_code(stats, interrupted)
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


@judge.group()
def prompt() -> None:
    """Judge prompt versions (immutable, identified by content hash)."""


@prompt.command(name="list")
@db_option
@json_option
@handle_errors
def prompt_list(db: str | None, as_json: bool) -> None:
    """List stored prompt versions (the shipped default is stored on first use)."""
    from gradercal.judge.prompts import DEFAULT_PROMPT

    rows = _store(db).prompts()
    if as_json:
        emit_json(
            {
                "default": DEFAULT_PROMPT.content_hash,
                "prompts": [dataclasses.asdict(r) for r in rows],
            }
        )
        return
    click.echo(f"shipped default: {DEFAULT_PROMPT.short_hash}")
    if not rows:
        click.echo("no prompt versions stored yet")
    for r in rows:
        parent = f" (from {r.parent_hash[:12]})" if r.parent_hash else ""
        judges = f"  judges: {', '.join(r.judges)}" if r.judges else ""
        click.echo(
            f"{r.content_hash[:12]}  {r.name or '-'}{parent}  {r.created_at:%Y-%m-%d}{judges}"
        )


@prompt.command(name="show")
@click.argument("ref", default="default")
@db_option
@json_option
@handle_errors
def prompt_show(ref: str, db: str | None, as_json: bool) -> None:
    """Show a prompt version (hash prefix or name; default: the shipped default).

    `--json` prints the form `judge prompt add` reads: edit it and add it back.
    """
    p = _store(db).load_prompt(ref)
    if as_json:
        emit_json(p.to_dict())
        return
    click.echo(f"# prompt {p.short_hash} ({p.name or 'unnamed'})")
    if p.parent_hash:
        click.echo(f"# parent {p.parent_hash[:12]}")
    click.echo(f"# options {json.dumps(dict(p.options))}")
    click.echo("\n## system\n" + p.system + "\n\n## user\n" + p.user)
    for i, ex in enumerate(p.few_shot, 1):
        click.echo(f"\n## example {i}\n{json.dumps(dict(ex), ensure_ascii=False, indent=2)}")


@prompt.command(name="add")
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--name", help="Label of the new version (default: the file's).")
@click.option("--parent", metavar="VERSION", help="Version it derives from (hash or name).")
@db_option
@json_option
@handle_errors
def prompt_add(
    path: Path, name: str | None, parent: str | None, db: str | None, as_json: bool
) -> None:
    """Store a new prompt version from a JSON file (the shape of `prompt show --json`)."""
    from gradercal.judge.prompts import prompt_from_dict

    store = _store(db)
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise GradercalError(f"{path}: not a readable JSON file ({exc})") from exc
    if not isinstance(data, dict):
        raise GradercalError(f"{path}: expected a JSON object")
    p = prompt_from_dict(data, source=str(path))
    changes: dict[str, Any] = {}
    if name is not None:
        changes["name"] = name
    if parent is not None:
        changes["parent_hash"] = store.load_prompt(parent).content_hash
        store.save_prompt(store.load_prompt(parent))
    if changes:
        p = dataclasses.replace(p, **changes)
    store.save_prompt(p)
    if as_json:
        emit_json(p.to_dict())
    else:
        click.echo(f"prompt version {p.short_hash} ({p.name or 'unnamed'}) stored")


@judge.command()
@click.option("--init", "init_file", is_flag=True, help="Write the shipped prices to the file.")
@db_option_unused
@json_option
@handle_errors
def prices(init_file: bool, as_json: bool) -> None:
    """Show the price table (USD per million tokens) and the file that overrides it."""
    from gradercal.judge.pricing import DEFAULT_PRICES, load_prices, prices_path, write_prices

    path = prices_path()
    if init_file:
        if path.exists():
            raise GradercalError(f"{path} exists; edit it")
        write_prices(path, DEFAULT_PRICES)
    table = load_prices(path)
    if as_json:
        emit_json(
            {
                "file": str(path),
                "prices": {k: _price_json(v) for k, v in sorted(table.items())},
            }
        )
        return
    state = "" if path.is_file() else " (not created; `--init` writes it)"
    click.echo(f"price file: {path}{state}")
    for model, p in sorted(table.items()):
        b = p.batch()
        click.echo(
            f"{model:24} in {p.input:8.3f}  out {p.output:8.3f}  "
            f"batch in {b.input:8.3f}  out {b.output:8.3f}"
        )


def _price_json(p: Price) -> dict[str, float]:
    """A price as in the price file: batch prices only when given (else half online)."""
    out = {"input": p.input, "output": p.output}
    if p.batch_input is not None:
        out["batch_input"] = p.batch_input
    if p.batch_output is not None:
        out["batch_output"] = p.batch_output
    return out


@judge.command()
@db_option
@click.option("--judge", "judge_name", metavar="NAME", help="Only this judge's runs.")
@json_option
@handle_errors
def runs(db: str | None, judge_name: str | None, as_json: bool) -> None:
    """List judge runs: status, requests, tokens and cost."""
    rows = _store(db).runs(judge_name)
    if as_json:
        emit_json(rows)
        return
    if not rows:
        click.echo("no judge runs yet")
    for r in rows:
        kind = (r["parameters"] or {}).get("kind", "run")
        click.echo(
            f"#{r['id']} {r['judge']} {kind} {r['status']}: {r['n_requests']} requests, "
            f"{r['prompt_tokens']:,}+{r['completion_tokens']:,} tokens, ${r['cost_usd']:.4f}, "
            f"started {r['started_at']:%Y-%m-%d %H:%M}"
        )


# -- align -------------------------------------------------------------------------------
@judge.command("align")
@db_option
@benchmark_option
@click.option("--judge", "judge_name", required=True, metavar="NAME", help="A judge already run.")
@click.option("--model", required=True, metavar="MODEL", help="Model name as the server knows it.")
@_connection_options
@click.option(
    "--optimizer-model", metavar="MODEL", help="Model writing the guidance (default: --model)."
)
@click.option(
    "--holdout-share",
    default=0.3,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    help="Share of the tasks held out (stratified by workflow and domain).",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the split.")
@click.option(
    "--holdout-from-calibration",
    is_flag=True,
    help="Hold out the tasks the judge's active calibration held out (instead of a new split).",
)
@click.option(
    "--max-candidates",
    default=1,
    show_default=True,
    type=click.IntRange(1, 20),
    help="Finalists evaluated on the held-out tasks (the correction covers all of them).",
)
@click.option("--n-boot", default=2000, show_default=True, type=click.IntRange(100))
@click.option(
    "--vision",
    is_flag=True,
    help="Candidates that see figures (as `judge run --vision`): each is derived from the "
    "judge's prompt with the vision option. Run the judge with --vision first so that the "
    "baseline sees them too.",
)
@click.option("--vision-dpi", type=click.IntRange(36, 600), metavar="N", help="As judge run.")
@click.option("--vision-pages", type=click.IntRange(0, 100), metavar="N", help="As judge run.")
@click.option("--vision-images", type=click.IntRange(0, 100), metavar="N", help="As judge run.")
@click.option("--dry-run", is_flag=True, help="Only estimate requests, tokens and cost.")
@json_option
@handle_errors
def align(
    db: str | None,
    benchmark: str | None,
    judge_name: str,
    model: str,
    conn: _Connection,
    optimizer_model: str | None,
    holdout_share: float,
    seed: int,
    holdout_from_calibration: bool,
    max_candidates: int,
    n_boot: int,
    vision: bool,
    vision_dpi: int | None,
    vision_pages: int | None,
    vision_images: int | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Improve a judge's prompt from the experts' verdicts and prove it on held-out tasks.

    The tasks with an expert consensus are split into development and held-out tasks
    (--holdout-share, --seed). Candidates are built from the development tasks only: the
    judge's disagreements with the consensus, the experts' rationales and adjudication
    notes, sent to an optimizer model (guidance per criterion), contrastive few-shot
    examples, and both. They are judged on the development tasks; the best
    --max-candidates go to the held-out tasks, where each is compared with the judge's
    stored verdicts by the paired difference of Cohen's kappa (task-clustered bootstrap,
    the same resamples for both) with a Holm correction over the finalists. A candidate
    is proven better only when its corrected lower bound is above zero; otherwise the
    baseline is kept. Every candidate is stored as a prompt version; the judge's own
    prompt is not changed. With --vision the candidates send each task's figures (the
    prompt's vision option, as `judge run --vision`). --max-cost caps everything the
    command pays for: the optimizer's call (its completion limit is lowered, or the call
    not made, so that its worst case fits) and every candidate run. See docs/alignment.md.
    """
    from gradercal.analysis import alignment as al
    from gradercal.db.judging import Scope
    from gradercal.judge.client import JudgeParams
    from gradercal.judge.runner import estimate_run

    store = _store(db)
    info = store.judge(judge_name)
    if info is None or not info.prompt_hash:
        raise GradercalError(
            f"--judge: no judge {judge_name!r} has been run; "
            f"run `gradercal judge run --judge {judge_name}` first"
        )
    baseline = store.load_prompt(info.prompt_hash)
    # the candidates derive from this one: the judge's prompt, with --vision seeing figures
    source = _with_vision(baseline, vision, vision_dpi, vision_pages, vision_images)
    frames = store.repo.load_frames(benchmark)
    units_all = al.consensus_units(frames)
    graded = frames.tasks.loc[frames.tasks["task_id"].isin(set(units_all["task_id"]))]
    if holdout_from_calibration:
        from gradercal.db.calibrations import load_calibration

        saved = load_calibration(store.repo, benchmark, judge_name)
        held = [] if saved is None else list(saved.split.get("held_out") or [])
        if saved is None or not held:
            raise GradercalError(
                f"--holdout-from-calibration: judge {judge_name!r} has no active calibration "
                "with held-out tasks (run `gradercal calibrate --holdout 0.3 --save` first)"
            )
        try:
            split = al.split_from_held_out(
                graded, held, int(saved.split.get("seed") or 0), source=f"calibration {saved.id}"
            )
        except ValueError as exc:
            raise GradercalError(f"--holdout-from-calibration: {exc}") from None
    else:
        try:
            split = al.split_tasks(graded, holdout_share, seed)
        except ValueError as exc:
            raise GradercalError(f"--holdout-share: {exc}") from None
    items = store.work_items(benchmark, None, Scope.parse("all"), source)
    by_key = {(it.response_id, it.criterion_id): it for it in items}
    dev_units = al.development_units(frames, judge_name, split.development)
    held_frame = al.consensus_units(frames, split.held_out)
    dev_items = [
        by_key[k]
        for k in zip(dev_units["response_id"], dev_units["criterion_id"], strict=True)
        if k in by_key
    ]
    held_items = [
        by_key[k]
        for k in zip(held_frame["response_id"], held_frame["criterion_id"], strict=True)
        if k in by_key
    ]
    params = JudgeParams(model=model)
    model_price = _checked_price(model, conn)
    if dry_run:
        per_candidate = [
            estimate_run(dev_items, source, max_tokens=params.max_tokens, price=model_price),
            estimate_run(held_items, source, max_tokens=params.max_tokens, price=model_price),
        ]
        n_dev_runs, n_held_runs = 3, max_candidates  # guidance, examples, both
        est = {
            "split": split.as_json(),
            "requests": n_dev_runs * per_candidate[0].requests
            + n_held_runs * per_candidate[1].requests
            + 1,
            "prompt_tokens": n_dev_runs * per_candidate[0].prompt_tokens
            + n_held_runs * per_candidate[1].prompt_tokens,
            "cost_usd": None
            if model_price is None
            else n_dev_runs * (per_candidate[0].cost_usd or 0.0)
            + n_held_runs * (per_candidate[1].cost_usd or 0.0),
            "note": "the optimizer's call and cached replies are not counted",
        }
        if as_json:
            emit_json({"judge": judge_name, "dry_run": True, "estimate": est})
        else:
            click.echo(
                f"judge align {judge_name!r}: ≈ {est['requests']} requests, "
                f"≈ {est['prompt_tokens']:,} prompt tokens, cost "
                + ("unknown" if est["cost_usd"] is None else f"≈ ${est['cost_usd']:.4f}")
            )
        return
    _check_server(conn)
    _note_interrupted(store)
    spent = {"usd": 0.0, "prompt_tokens": 0, "completion_tokens": 0, "requests": 0}
    if source is not baseline:
        store.save_prompt(source)
    candidates = _align_candidates(
        store, frames, judge_name, split, dev_units, by_key, source,
        optimizer_model or model, conn, spent, benchmark,
    )  # fmt: skip

    def judged(
        prompt: PromptTemplate, work: list[WorkItem], label: str
    ) -> dict[tuple[str, str], bool]:
        got: dict[tuple[str, str], bool] = {}

        def keep(v: Verdict) -> None:
            if v.met is not None:
                got[(v.item.response_id, v.item.criterion_id)] = bool(v.met)

        budget = None if conn.max_cost is None else max(conn.max_cost - spent["usd"], 0.0)
        if budget is not None and budget <= 0.0:
            # the runner always sends a first request to learn its cost: not with nothing left
            click.echo(f"note: --max-cost reached; {label} is not run", err=True)
            return got
        done = _launch(
            store, info, prompt, params, work, dataclasses.replace(conn, max_cost=budget),
            model_price=model_price,
            record={"kind": "align", "benchmark": benchmark, "prompt_version": prompt.content_hash},
            judgments=False, collect=keep, show_progress=not as_json, label=label,
        )  # fmt: skip
        spent["usd"] += done.stats.cost_usd
        spent["prompt_tokens"] += done.stats.prompt_tokens
        spent["completion_tokens"] += done.stats.completion_tokens
        spent["requests"] += done.stats.requests
        return got

    def as_array(frame: Any, verdicts: dict[tuple[str, str], bool]) -> Any:
        import numpy as np

        keys = zip(frame["response_id"], frame["criterion_id"], strict=True)
        return np.array([float(verdicts[k]) if k in verdicts else np.nan for k in keys])

    stored = {
        (r, c): bool(v)
        for r, c, v in zip(
            dev_units["response_id"], dev_units["criterion_id"], dev_units["judge_met"], strict=True
        )
    }
    dev_score: dict[str, float | None] = {baseline.content_hash: _kappa_of(dev_units, stored)}
    for cand in candidates:
        store.save_prompt(cand["prompt"])
        got = judged(cand["prompt"], dev_items, f"dev {cand['prompt'].short_hash}")
        dev_score[cand["prompt"].content_hash] = _kappa_of(dev_units, got)
        cand["dev_kappa"] = dev_score[cand["prompt"].content_hash]
    ranked = sorted(
        candidates, key=lambda c: -(c["dev_kappa"] if c["dev_kappa"] is not None else -2.0)
    )
    finalists = ranked[:max_candidates]
    base_held = frames.judgments.loc[frames.judgments["grader"] == judge_name]
    base_arr = al.verdicts_on(held_frame, base_held)
    held_verdicts: dict[str, Any] = {}
    for cand in finalists:
        got = judged(cand["prompt"], held_items, f"held-out {cand['prompt'].short_hash}")
        held_verdicts[cand["prompt"].content_hash] = as_array(held_frame, got)
    certificate = _align_certificate(
        frames, judge_name, split, baseline, candidates, finalists, held_frame, base_arr,
        held_verdicts, n_boot, seed, spent,
    )  # fmt: skip
    certificate["vision"] = None if source.vision is None else source.vision.to_dict()
    certificate["certificate_id"] = store.save_certificate(info, benchmark, certificate)
    if as_json:
        emit_json(certificate)
        return
    _print_align(certificate)


def _kappa_of(units: Any, verdicts: dict[tuple[str, str], bool]) -> float | None:
    """Cohen's kappa of ``verdicts`` against the consensus of ``units`` (their shared units)."""
    import numpy as np

    from gradercal.analysis.alignment import binary_figures

    keys = list(zip(units["response_id"], units["criterion_id"], strict=True))
    ok = np.array([k in verdicts for k in keys], dtype=bool)
    if not ok.any():
        return None
    j = np.array([float(verdicts.get(k, False)) for k in keys])[ok]
    c = units["consensus_met"].to_numpy(dtype=np.float64)[ok]
    k = float(binary_figures(np.array([len(j), j.sum(), c.sum(), (j * c).sum()]))["kappa"])
    return k if np.isfinite(k) else None


def _align_candidates(
    store: JudgeStore,
    frames: Any,
    judge_name: str,
    split: Any,
    dev_units: Any,
    by_key: dict[tuple[str, str], WorkItem],
    baseline: PromptTemplate,
    optimizer_model: str,
    conn: _Connection,
    spent: dict[str, Any],
    benchmark: str | None = None,
) -> list[dict[str, Any]]:
    """The candidates built from the development tasks, each with its checked provenance."""
    from gradercal.analysis import alignment as al
    from gradercal.judge import align as ja
    from gradercal.judge.client import JudgeClient, JudgeParams, RetryPolicy
    from gradercal.judge.parse import ReplyParseError
    from gradercal.judge.secrets import resolve_api_key

    evidence = al.development_evidence(
        frames, judge_name, split, clarifications=_dev_clarifications(store, benchmark, split)
    )
    records: list[dict[str, Any]] = [
        {
            **{str(k): v for k, v in rec.items()},
            "response_text": getattr(
                by_key.get((rec["response_id"], rec["criterion_id"])), "response_text", ""
            ),
        }
        for rec in evidence.to_dict("records")
    ]
    texts = dict(zip(dev_units["criterion_key"], dev_units["criterion_text"], strict=True))
    out: list[dict[str, Any]] = []
    guided: PromptTemplate | None = None
    cap: int | None = None
    if records:
        messages, keys = ja.optimizer_messages(records)
        store.save_prompt(ja.OPTIMIZER_PROMPT)
        price = _price(optimizer_model, conn.price)
        if conn.max_cost is not None and price is None:
            raise GradercalError(
                f"no price known for the optimizer model {optimizer_model!r}, so --max-cost "
                "cannot be enforced: add it to the price table or pass --price IN,OUT"
            )
        cap = ja.optimizer_token_cap(
            messages,
            0.0 if price is None else price.input,
            0.0 if price is None else price.output,
            None if conn.max_cost is None else conn.max_cost - spent["usd"],
        )
    if records and cap is None:
        click.echo(
            "note: the optimizer's call could exceed --max-cost: it is not made, so there is "
            "no guidance candidate",
            err=True,
        )
    elif records:
        assert cap is not None
        params = JudgeParams(model=optimizer_model, max_tokens=cap, logprobs=False)
        key = resolve_api_key(conn.api_key_env)
        client = JudgeClient(
            params, base_url=conn.base_url, api_key=key.value, concurrency=1,
            retry=RetryPolicy(max_attempts=conn.max_retries, timeout=conn.timeout),
            http_backend=conn.http,  # type: ignore[arg-type]
        )  # fmt: skip

        cache = store.cache()
        cache_key = client.cache_key(client.request_body(messages), 0)
        known = cache.get_many([cache_key])  # a re-run asks the optimizer nothing new

        async def ask() -> Any:
            async with client:
                return await client.sample(
                    messages, 0, known, check=lambda c: ja.parse_guidance(c, keys)
                )

        outcome = asyncio.run(ask())
        if outcome.cache_value is not None:
            cache.put_many([(outcome.cache_key, outcome.cache_value)], optimizer_model)
        spent["prompt_tokens"] += outcome.prompt_tokens
        spent["completion_tokens"] += outcome.completion_tokens
        spent["requests"] += outcome.attempts
        if price is not None:
            spent["usd"] += price.cost(outcome.prompt_tokens, outcome.completion_tokens)
        if outcome.status == "ok":
            try:
                g = ja.parse_guidance(outcome.raw, keys)
            except ReplyParseError:  # pragma: no cover - checked by sample()
                g = None
            if g is not None and (g.criteria or g.general):
                used = {k.split("/", 1)[0] for k in g.criteria} or {
                    str(t) for t in evidence["task_id"]
                }
                prov = al.Provenance(
                    ("guidance",),
                    frozenset(str(t) for t in evidence["task_id"]) | frozenset(used),
                    {
                        "optimizer_prompt": ja.OPTIMIZER_PROMPT.content_hash,
                        "model": optimizer_model,
                        "max_tokens": cap,
                    },
                )
                al.assert_no_leakage(prov.task_ids, split)
                guided = ja.guidance_prompt(baseline, g, texts)
                out.append({"prompt": guided, "provenance": prov})
        else:
            click.echo(f"note: the optimizer gave no usable guidance ({outcome.status})", err=True)
    pairs = al.contrastive_pairs(dev_units)
    if pairs:
        recs = dev_units.to_dict("records")
        shots = [
            [
                {
                    **recs[i],
                    "response_text": by_key[
                        (recs[i]["response_id"], recs[i]["criterion_id"])
                    ].response_text,
                }
                for i in pair
            ]
            for pair in pairs
            if all((recs[i]["response_id"], recs[i]["criterion_id"]) in by_key for i in pair)
        ]
        tasks = frozenset(str(recs[i]["task_id"]) for pair in pairs for i in pair)
        prov = al.Provenance(("examples",), tasks)
        al.assert_no_leakage(prov.task_ids, split)
        out.append({"prompt": ja.examples_prompt(baseline, shots), "provenance": prov})
        if guided is not None:
            both = out[0]["provenance"].merged(prov)
            al.assert_no_leakage(both.task_ids, split)
            out.append({"prompt": ja.examples_prompt(guided, shots), "provenance": both})
    return out


def _dev_clarifications(store: JudgeStore, benchmark: str | None, split: Any) -> Any:
    """The answered clarifications of the development tasks (``task_id``, ``criterion_id``,
    ``answer``); those of held-out tasks are never read into the evidence."""
    import pandas as pd

    from gradercal.db.clarifications import list_clarifications

    dev = set(split.development)
    rows = [
        {"task_id": c.task, "criterion_id": c.criterion, "answer": c.answer}
        for c in list_clarifications(store.db, benchmark)
        if c.answer and c.task in dev
    ]
    return pd.DataFrame(rows, columns=["task_id", "criterion_id", "answer"])


def _align_certificate(
    frames: Any,
    judge_name: str,
    split: Any,
    baseline: PromptTemplate,
    candidates: list[dict[str, Any]],
    finalists: list[dict[str, Any]],
    held_frame: Any,
    base_arr: Any,
    held_verdicts: dict[str, Any],
    n_boot: int,
    seed: int,
    spent: dict[str, Any],
) -> dict[str, Any]:
    """The JSON of ``judge align`` (docs/cli.md)."""
    from gradercal.analysis import alignment as al

    finalist_hashes = {c["prompt"].content_hash for c in finalists}
    out: dict[str, Any] = {
        "judge": judge_name,
        "split": split.as_json(),
        "baseline": {"prompt_version": baseline.content_hash},
        "candidates": [
            {
                "prompt_version": c["prompt"].content_hash,
                "built_from": list(c["provenance"].built_from),
                "provenance": c["provenance"].as_json(),
                "dev_kappa": c.get("dev_kappa"),
                "evaluated_on_held_out": c["prompt"].content_hash in finalist_hashes,
            }
            for c in candidates
        ],
        "heldout": {},
        "alt_test": {},
        "proven_better": False,
        "chosen": {"prompt_version": baseline.content_hash},
        "cost": {
            "usd": round(float(spent["usd"]), 6),
            "prompt_tokens": int(spent["prompt_tokens"]),
            "completion_tokens": int(spent["completion_tokens"]),
            "requests": int(spent["requests"]),
        },
        "note": None,
    }
    if not held_verdicts or len(held_frame) == 0:
        out["note"] = "no candidate to evaluate on the held-out tasks; the baseline is kept"
        return out
    units = al.HeldOutUnits.from_frame(held_frame)
    try:
        ev = al.evaluate_held_out(units, base_arr, held_verdicts, n_boot=n_boot, seed=seed)
    except ValueError as exc:
        out["note"] = f"no held-out proof: {exc}; the baseline is kept"
        return out
    out["heldout"][baseline.content_hash] = {"role": "baseline", **ev.baseline.as_json()}
    for c in ev.candidates:
        out["heldout"][c.name] = {"role": "candidate", **c.as_json()}
    out["heldout_design"] = {
        "n_tasks": ev.n_tasks, "n_units": units.n, "n_evaluated": ev.n_evaluated,
        "n_boot": ev.n_boot, "ci": ev.ci, "method": ev.method, "correction": "holm",
    }  # fmt: skip
    out["alt_test"] = _align_alt_tests(
        frames, judge_name, held_frame, base_arr, held_verdicts, baseline
    )
    proven = ev.proven()
    if proven:
        out["proven_better"] = True
        out["chosen"] = {"prompt_version": proven[0].name}
    else:
        out["note"] = "no candidate is proven better on the held-out tasks; the baseline is kept"
    return out


def _align_alt_tests(
    frames: Any,
    judge_name: str,
    held_frame: Any,
    base_arr: Any,
    held_verdicts: dict[str, Any],
    baseline: PromptTemplate,
) -> dict[str, Any]:
    """The alt-test of the baseline and each finalist on the held-out units."""
    import numpy as np
    import pandas as pd

    from gradercal.analysis.alt_test import AltTestRefused, alt_test

    item = [
        f"{r}\x1f{c}"
        for r, c in zip(held_frame["response_id"], held_frame["criterion_id"], strict=True)
    ]
    clusters = dict(zip(item, held_frame["task_id"], strict=True))
    j = frames.judgments
    h = j.loc[(j["grader_kind"] == "human") & j["met"].notna()]
    h = h.loc[
        h.set_index(["response_id", "criterion_id"]).index.isin(
            list(zip(held_frame["response_id"], held_frame["criterion_id"], strict=True))
        )
    ]
    humans = pd.DataFrame(
        {
            "item": [
                f"{r}\x1f{c}" for r, c in zip(h["response_id"], h["criterion_id"], strict=True)
            ],
            "annotator": h["grader"].astype(str).to_numpy(),
            "value": h["met"].astype(bool).to_numpy(),
        }
    )
    out: dict[str, Any] = {}
    for name, arr in {baseline.content_hash: base_arr, **held_verdicts}.items():
        judged = {i: bool(v) for i, v in zip(item, arr, strict=True) if not np.isnan(v)}
        try:
            res = alt_test(humans, judged, judge_name=name, clusters=clusters)
        except AltTestRefused as exc:
            out[name] = {"passed": None, "note": str(exc)}
            continue
        out[name] = {
            "passed": bool(res.passed),
            "winning_rate": float(res.winning_rate),
            "advantage_probability": float(res.advantage_probability),
        }
    return out


def _print_align(cert: dict[str, Any]) -> None:
    split = cert["split"]
    click.echo(
        f"judge align {cert['judge']!r}: {len(split['development'])} development, "
        f"{len(split['held_out'])} held-out tasks (seed {split['seed']}); "
        f"{len(cert['candidates'])} candidates, "
        f"{sum(c['evaluated_on_held_out'] for c in cert['candidates'])} evaluated on held-out"
    )
    for version, h in cert["heldout"].items():
        line = f"  {version[:12]} {h['role']:9} kappa {h['kappa']}"
        if "paired" in h:
            p = h["paired"]["kappa"]
            line += f"  Δ {p['estimate']} ci {p['ci']} corrected {p['ci_corrected']}"
        click.echo(line)
    click.echo(
        ("proven better: " + cert["chosen"]["prompt_version"][:12])
        if cert["proven_better"]
        else (cert.get("note") or "no candidate is proven better; the baseline is kept")
    )
    click.echo(f"cost: ${cert['cost']['usd']:.4f}, {cert['cost']['requests']} requests")


@judge.command("certificates")
@db_option
@click.option("--judge", "judge_name", metavar="NAME", help="Only this judge's certificates.")
@json_option
@handle_errors
def certificates(db: str | None, judge_name: str | None, as_json: bool) -> None:
    """The stored certificates of `judge align`, newest first (docs/alignment.md)."""
    rows = _store(db).certificates(judge_name)
    if as_json:
        emit_json(rows)
        return
    if not rows:
        click.echo("no judge certificate stored")
    for r in rows:
        cert = r["certificate"]
        click.echo(
            f"{r['id']:>4}  {r['judge']}  {r['created_at'][:19]}  "
            f"baseline {cert['baseline']['prompt_version'][:12]} → chosen "
            f"{cert['chosen']['prompt_version'][:12]}  "
            + ("proven better" if r["proven_better"] else "not proven (baseline kept)")
        )
