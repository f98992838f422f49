"""What the ``gradercal judge`` commands share: the connection options, the progress
bars, launching online and batch runs, and the exit status of a run."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

from gradercal.cli.common import (
    emit_json,
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
class Connection:
    """The server options shared by ``judge run`` and ``judge probe``."""

    base_url: str | None
    api_key_env: str
    concurrency: int
    timeout: float
    max_retries: int
    max_cost: float | None
    price: str | None
    http: str


_CONNECTION_FIELDS = tuple(f.name for f in dataclasses.fields(Connection))


def response_formats() -> tuple[str, ...]:
    from gradercal.judge.client import RESPONSE_FORMATS

    return RESPONSE_FORMATS


def connection_options(fn: F) -> F:
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
        conn = Connection(**{k: kwargs.pop(k) for k in _CONNECTION_FIELDS})
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
def open_judge_store(db: str | None) -> JudgeStore:
    from gradercal.db.judging import JudgeStore
    from gradercal.db.session import open_database

    return JudgeStore(open_database(db, create=False))


def checked_price(model: str, conn: Connection) -> Price | None:
    """The model's price; an error when ``--max-cost`` is asked without one."""
    model_price = price_from_option(model, conn.price)
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


def check_server_reachable(conn: Connection) -> None:
    """Fail at once, with the cause, when the judge server cannot be reached."""
    from gradercal.judge.client import check_server

    check_server(conn.base_url, timeout=min(conn.timeout, 10.0))


def launch_run(
    store: JudgeStore,
    info: JudgeInfo,
    prompt: PromptTemplate,
    params: JudgeParams,
    items: list[WorkItem],
    conn: Connection,
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


def _client(params: JudgeParams, conn: Connection, *, online: bool) -> tuple[JudgeClient, ApiKey]:
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


def launch_batch(
    store: JudgeStore,
    info: JudgeInfo,
    prompt: PromptTemplate,
    params: JudgeParams,
    conn: Connection,
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


def note_interrupted(store: JudgeStore) -> None:
    for run_id in store.mark_interrupted():
        click.echo(f"note: judge run {run_id} was interrupted (its process is gone)", err=True)


def price_from_option(model: str, price: str | None) -> Price | None:
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


def stats_line(stats: RunStats) -> str:
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


def run_losses(stats: RunStats, samples: int) -> list[str]:
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


def run_exit_code(stats: RunStats, interrupted: bool) -> int:
    if interrupted:
        return EXIT_INTERRUPTED
    if stats.status == "failed":
        return 1
    if stats.status == "no_verdicts":
        return EXIT_NO_VERDICTS
    if stats.status != "completed" or stats.parse_failures or stats.errors:
        return EXIT_INCOMPLETE
    return 0


def prompt_with_vision(
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


def print_estimate(
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
