"""``gradercal clarify``: clarification threads on criteria (graders ask, coordinators
answer; the storage and its rules are :mod:`gradercal.db.clarifications`).

Registered lazily by :mod:`gradercal.cli` (``LazyGroup.lazy``). Every command takes
``--db``, ``--json`` and ``--help``; gradercal's own errors print ``error: …`` on stderr
with exit status 1.
"""

from __future__ import annotations

from typing import Any

import click

from gradercal.cli.common import benchmark_option, db_option, emit_json, handle_errors, json_option

__all__ = ["clarify"]

_STATUS = click.Choice(["open", "answered", "closed"])
_ACTOR_HELP = "Who you are (default: your login; in team mode always the session user)."


def _login() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "coordinator"


def _short(text: str | None, width: int = 60) -> str:
    if not text:
        return "—"
    one = " ".join(text.split())
    return one if len(one) <= width else one[: width - 1] + "…"


@click.group()
def clarify() -> None:
    """Clarification threads on criteria. A grader who flags a criterion unclear with a
    note asks on it (the note opens the criterion's open thread, or joins it); a
    coordinator or adjudicator answers; graders see the answers in the Guidelines panel
    beside the rubric. `answer --recheck` also puts back in progress the finished work
    of graders whose verdict on that criterion predates the answer.

    \b
      gradercal clarify list --status open
      gradercal clarify show 3
      gradercal clarify answer 3 --text "Trends do not count: only p < 0.05." --recheck
      gradercal clarify ask P1 c2 --text "Does a partial dye count?"
    """


@clarify.command(name="list")
@db_option
@benchmark_option
@click.option("--status", type=_STATUS, help="Only the threads with this status.")
@json_option
@handle_errors
def list_command(db: str | None, benchmark: str | None, status: str | None, as_json: bool) -> None:
    """The benchmark's threads, oldest first: status, task, criterion, question, answer."""
    from gradercal.cli.common import open_repo
    from gradercal.db.clarifications import list_clarifications

    repo = open_repo(db)
    try:
        threads = list_clarifications(repo.db, benchmark, status=status)
    finally:
        repo.db.dispose()
    if as_json:
        emit_json([t.to_dict() for t in threads])
        return
    if not threads:
        click.echo("No clarification threads" + (f" with status {status}." if status else "."))
        return
    for t in threads:
        asked = sum(1 for msg in t.messages if msg.kind == "question")
        click.echo(
            f"#{t.id} {t.status:<8} {t.task} {t.criterion}  {_short(t.question)}"
            f" ({asked} question{'s' if asked != 1 else ''})"
            + (f"  → {_short(t.answer, 40)}" if t.answer else "")
        )


def _print_thread(t: Any) -> None:
    click.echo(f"#{t.id} {t.status}: {t.benchmark} / {t.task} / {t.criterion}")
    click.echo(f"criterion: {t.criterion_text}")
    for msg in t.messages:
        when = msg.created_at.strftime("%Y-%m-%d %H:%M") if msg.created_at else ""
        click.echo(f"  [{msg.kind}] {msg.author} {when}: {msg.text}")


@clarify.command(name="show")
@db_option
@click.argument("clarification_id", metavar="ID", type=int)
@json_option
@handle_errors
def show_command(db: str | None, clarification_id: int, as_json: bool) -> None:
    """One thread: the criterion, every question and answer in order."""
    from gradercal.cli.common import open_repo
    from gradercal.db.clarifications import get

    repo = open_repo(db)
    try:
        thread = get(repo.db, clarification_id)
    finally:
        repo.db.dispose()
    if as_json:
        emit_json(thread.to_dict())
        return
    _print_thread(thread)


@clarify.command(name="answer")
@db_option
@click.argument("clarification_id", metavar="ID", type=int)
@click.option("--text", "text", required=True, metavar="TEXT", help="The answer. Required.")
@click.option(
    "--recheck",
    is_flag=True,
    help="Reopen the submitted or skipped work of every grader whose verdict on this "
    "criterion predates the answer (coordinators only, in team mode).",
)
@click.option("--actor", metavar="NAME", help=_ACTOR_HELP)
@json_option
@handle_errors
def answer_command(
    db: str | None,
    clarification_id: int,
    text: str,
    recheck: bool,
    actor: str | None,
    as_json: bool,
) -> None:
    """Answer a thread (answering again replaces the answer; the thread keeps both)."""
    from gradercal.cli.common import open_repo
    from gradercal.db.clarifications import answer

    repo = open_repo(db)
    try:
        done = answer(repo.db, clarification_id, text, actor=actor or _login(), recheck=recheck)
    finally:
        repo.db.dispose()
    if as_json:
        emit_json(done.to_dict())
        return
    c = done.clarification
    click.echo(f"#{c.id} answered by {c.answered_by}")
    if recheck:
        who = ", ".join(done.graders) or "nobody"
        click.echo(f"re-check asked of: {who}; {len(done.reopened)} finished item(s) reopened")


@clarify.command(name="ask")
@db_option
@benchmark_option
@click.argument("task_id", metavar="TASK")
@click.argument("criterion_id", metavar="CRITERION")
@click.option("--text", "text", required=True, metavar="TEXT", help="The question. Required.")
@click.option("--actor", metavar="NAME", help=_ACTOR_HELP)
@json_option
@handle_errors
def ask_command(
    db: str | None,
    benchmark: str | None,
    task_id: str,
    criterion_id: str,
    text: str,
    actor: str | None,
    as_json: bool,
) -> None:
    """Ask a question on one criterion (joins its open thread, else opens one)."""
    from gradercal.cli.common import open_repo
    from gradercal.db.clarifications import ask

    repo = open_repo(db)
    try:
        thread = ask(repo.db, benchmark, task_id, criterion_id, text, actor=actor or _login())
    finally:
        repo.db.dispose()
    if as_json:
        emit_json(thread.to_dict())
        return
    asked = sum(1 for msg in thread.messages if msg.kind == "question")
    joined = f" (joins the open thread: {asked} questions)" if asked > 1 else ""
    click.echo(f"#{thread.id} {thread.status}: {thread.task} {thread.criterion}{joined}")


@clarify.command(name="close")
@db_option
@click.argument("clarification_id", metavar="ID", type=int)
@click.option("--actor", metavar="NAME", help=_ACTOR_HELP)
@json_option
@handle_errors
def close_command(db: str | None, clarification_id: int, actor: str | None, as_json: bool) -> None:
    """Close a thread (answered or not): a later question opens a new one."""
    from gradercal.cli.common import open_repo
    from gradercal.db.clarifications import close

    repo = open_repo(db)
    try:
        thread = close(repo.db, clarification_id, actor=actor or _login())
    finally:
        repo.db.dispose()
    if as_json:
        emit_json(thread.to_dict())
        return
    click.echo(f"#{thread.id} closed")
