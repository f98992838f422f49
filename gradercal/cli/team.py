"""``gradercal team init|add|list|remove|passwd``: a grading team on PostgreSQL.

Each person is a PostgreSQL login role holding one of the database's group roles
(grader, adjudicator, coordinator); the server's row-level security decides what they
see and change (see :mod:`gradercal.db.team`). Run by the database owner. On SQLite
every subcommand says in one line that team mode needs PostgreSQL.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

from gradercal.cli.common import db_option, emit_json, handle_errors, json_option

if TYPE_CHECKING:
    from gradercal.db.session import Database

__all__ = ["team"]


def _open(db: str | None) -> Database:
    from gradercal.db.session import open_database
    from gradercal.db.team import require_postgres

    opened = open_database(db, create=False)
    try:
        require_postgres(opened)
    except BaseException:
        opened.dispose()
        raise
    return opened


def _password(var: str | None) -> str | None:
    from gradercal.db.team import TeamError

    if var is None:
        return None
    value = os.environ.get(var)
    if not value:
        raise TeamError(f"--password-env {var}: the environment variable is not set or empty")
    return value


@click.group()
def team() -> None:
    """A grading team on PostgreSQL: one login role per person, enforced by the server.

    \b
    gradercal team init --db URL                     roles, row-level security, history
    gradercal team add alice --role grader --password-env ALICE_PW
    gradercal team list
    gradercal team passwd alice --password-env ALICE_PW
    gradercal team remove alice
    """


@team.command("init")
@db_option
@json_option
@handle_errors
def init(db: str | None, as_json: bool) -> None:
    """Create the team's group roles, row-level security policies, grants and history
    triggers (run as the owner of the tables; again after each schema upgrade)."""
    from gradercal.db import team as t

    database = _open(db)
    try:
        report = t.init(database)
    finally:
        database.dispose()
    if as_json:
        emit_json(report.to_dict())
        return
    made = f" (created {', '.join(report.created_roles)})" if report.created_roles else ""
    click.echo(
        f"team mode on {report.database}: roles {', '.join(report.roles.values())}{made}; "
        f"{report.policies} policies on {len(report.tables)} tables"
    )


@team.command("add")
@click.argument("user")
@click.option(
    "--role",
    "role",
    required=True,
    type=click.Choice(["grader", "adjudicator", "coordinator"]),
    help="What the person may do.",
)
@click.option(
    "--password-env",
    "password_env",
    metavar="VAR",
    help="Take the login password from this environment variable (never from the "
    "command line). Without it the role has no password (other pg_hba methods).",
)
@db_option
@json_option
@handle_errors
def add(user: str, role: str, password_env: str | None, db: str | None, as_json: bool) -> None:
    """Create (or update) the login role USER with ROLE; they grade as grader USER."""
    from gradercal.db import team as t

    password = _password(password_env)
    database = _open(db)
    try:
        member = t.add(database, user, role, password)
    finally:
        database.dispose()
    if as_json:
        emit_json(member.to_dict())
        return
    click.echo(f"{member.user}: {member.role}" + (" (password set)" if password else ""))


@team.command("list")
@db_option
@json_option
@handle_errors
def list_(db: str | None, as_json: bool) -> None:
    """The team's members and their roles."""
    from gradercal.db import team as t

    database = _open(db)
    try:
        people = t.members(database)
    finally:
        database.dispose()
    if as_json:
        emit_json([p.to_dict() for p in people])
        return
    if not people:
        click.echo("no members yet: `gradercal team add USER --role grader`")
    for p in people:
        notes = [] if p.can_login else ["cannot log in"]
        if p.grader is None:
            notes.append("no grader row")
        click.echo(f"{p.user}\t{p.role}" + (f"\t({', '.join(notes)})" if notes else ""))


@team.command("remove")
@click.argument("user")
@db_option
@json_option
@handle_errors
def remove(user: str, db: str | None, as_json: bool) -> None:
    """Take USER out of the team (their grading stays); drops the login role when it
    belongs to no other team."""
    from gradercal.db import team as t

    database = _open(db)
    try:
        dropped = t.remove(database, user)
    finally:
        database.dispose()
    if as_json:
        emit_json({"user": user, "role_dropped": dropped})
        return
    click.echo(f"{user}: removed" + ("" if dropped else " (login role kept: it has other roles)"))


@team.command("passwd")
@click.argument("user")
@click.option(
    "--password-env",
    "password_env",
    metavar="VAR",
    required=True,
    help="The environment variable holding the new password.",
)
@db_option
@handle_errors
def passwd(user: str, password_env: str, db: str | None) -> None:
    """Set USER's login password."""
    from gradercal.db import team as t

    password = _password(password_env)
    assert password is not None
    database = _open(db)
    try:
        t.set_password(database, user, password)
    finally:
        database.dispose()
    click.echo(f"{user}: password set")
