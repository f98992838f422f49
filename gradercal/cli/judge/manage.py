"""``gradercal judge prompt``, ``prices`` and ``runs``: the judge's prompt versions,
its price table and its past runs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gradercal.cli.common import (
    db_option,
    db_option_unused,
    emit_json,
    handle_errors,
    json_option,
)
from gradercal.errors import GradercalError

if TYPE_CHECKING:
    from gradercal.judge.pricing import Price

from gradercal.cli.judge import judge
from gradercal.cli.judge.common import open_judge_store


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

    rows = open_judge_store(db).prompts()
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
    p = open_judge_store(db).load_prompt(ref)
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

    store = open_judge_store(db)
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
    rows = open_judge_store(db).runs(judge_name)
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
