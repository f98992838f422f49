"""Team mode on PostgreSQL: who may read and change what, enforced by the server itself.

Identities are PostgreSQL login roles; what they may do comes from three **group roles**
of the database (its name sanitised, then ``_grader``, ``_adjudicator``,
``_coordinator``), row-level security policies and column privileges. Nothing of this
lives in gradercal's tables except a ``grader`` row named like the login role, so the
app and the reports can show who did what.

* :func:`init` (run by the database owner, who needs CREATEROLE) creates the group
  roles, enables row-level security on every table, (re)creates the policies and
  grants, and installs the history triggers. It is idempotent: run it again after a
  schema upgrade so new tables get their policies too.
* :func:`add`, :func:`remove`, :func:`set_password` and :func:`members` manage the
  login roles of the team.
* :func:`identity` tells a session of a team member who it is: the app then grades as
  ``current_user`` and offers no other name.

Why here and not in an Alembic migration: roles are cluster-wide and need CREATEROLE,
which the account that first opens (and so migrates) a database need not have, and
the policies name those roles. Keeping roles, policies, grants and triggers in one
idempotent command run by the owner means a plain SQLite or single-user PostgreSQL
database never changes, and re-running it brings an upgraded schema back under the
same rules.

What a **grader** sees (everything else is invisible or refused):

* ``response``: only the responses assigned to them, and only ``id``, ``benchmark_id``,
  ``task_id``, ``text``, ``answer`` (never ``model``, ``external_id`` or the content
  hash); the tasks, criteria, artifacts and blobs of those responses; the benchmarks.
* their own ``grader`` row, assignments (never their ``inclusion_probability``, the
  sampling probability of an active design), judgments, task reviews and the history of
  those; ``database_info`` only for the database id (never the packet key).
* nothing of ``adjudication``, ``calibration``, ``judge_run``, ``judge_cache``,
  ``prompt_version`` or ``task_round`` (the acceptance rounds: the coordinator's
  decisions, and the agreement figures they rest on), nor other graders' rows; none of
  the history of rounds, nor the acceptance settings kept in ``database_info``.

* of ``clarification`` threads (:mod:`gradercal.db.clarifications`), those on the
  criteria of their tasks, without the question and who asked it; of their messages,
  the answers and their own questions.

They write only their own judgments, task reviews and assignment progress (status,
time), the history rows of those, and questions on the criteria of their tasks (a new
thread, or a message in an open one, as themselves; their own questions they may
revise while the thread is open). An **adjudicator** reads
everything (acceptance rounds included, to see which tasks are settled), writes
adjudications and answers clarifications; a
**coordinator** reads and writes everything, and alone opens, closes and decides
acceptance rounds. A new table needs no entry here to be covered: :func:`init` enables
row-level security on every table of the schema and gives graders nothing on a table
absent from :data:`_GRADER_POLICIES` (``task_round`` is deliberately absent).

History: on ``judgment`` and ``adjudication`` a BEFORE UPDATE trigger moves
``revision`` on whenever the verdict changes (and refuses to move it back), and a
deferred constraint trigger checks at commit that the superseded value is in
``revision`` — recording it (``source = 'sql'``, ``actor`` = the session user) when
the writer did not, refusing the transaction when the row there holds another value.
``task_review`` gets the same commit-time check. A direct ``UPDATE`` therefore either
fails (not allowed by the policies) or is recorded. ``task_version`` counts as part of
the verdict (changing it is a new revision, with history), and no verdict may be given
under a version its task does not have. A grader's assignment becomes ``submitted`` only
with every judgment criterion answered (checked at commit), and goes back in progress
when the grader clears one of its verdicts (or makes it stale) by any means.

The trigger functions name every table with its schema and run with ``search_path =
pg_catalog, public, pg_temp``: PostgreSQL searches the temporary schema first unless it
is named, and a temporary ``revision`` would otherwise receive the history. No team role
(nor PUBLIC) may create temporary tables in the database. :func:`setup_problems` tells
``gradercal check`` when a database's setup predates this.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Connection, text

from gradercal.db.base import Base
from gradercal.db.session import Database
from gradercal.errors import GradercalError

__all__ = [
    "ROLES",
    "Identity",
    "TeamError",
    "TeamMember",
    "add",
    "group_role",
    "identity",
    "init",
    "members",
    "remove",
    "require_postgres",
    "set_password",
    "setup_problems",
]

#: The group roles of a team, least to most privileged.
ROLES = ("grader", "adjudicator", "coordinator")
_USER_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_POLICY_PREFIX = "gradercal_"


class TeamError(GradercalError):
    """A team command cannot be done; the message says why."""


@dataclass(frozen=True)
class TeamMember:
    user: str
    role: str
    can_login: bool
    grader: str | None
    """The name of the grader row the user grades as (None when it is missing)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Identity:
    """A team member's session: the login role and its group role in this database."""

    user: str
    role: str


# -- names ----------------------------------------------------------------------------------
def role_prefix(database: str) -> str:
    """The group roles' common prefix for a database (roles are cluster-wide: one team
    per database). Lower-case letters, digits and ``_``; a hash keeps altered or long
    names apart."""
    clean = re.sub(r"[^a-z0-9_]", "_", database.lower())
    if not clean or not (clean[0].isalpha() or clean[0] == "_"):
        clean = "db_" + clean
    if clean != database or len(clean) > 40:
        clean = clean[:32] + "_" + hashlib.sha256(database.encode()).hexdigest()[:7]
    return clean


def group_role(database: str, role: str) -> str:
    """The name of one group role of ``database``'s team."""
    if role not in ROLES:
        raise TeamError(f"unknown role {role!r}: one of {', '.join(ROLES)}")
    return f"{role_prefix(database)}_{role}"


def require_postgres(db: Database) -> None:
    if db.is_sqlite:
        raise TeamError(
            f"team mode needs PostgreSQL; {db.display} is a SQLite file (one person, no roles)"
        )


def _q(name: str) -> str:
    """A quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def _database(conn: Connection) -> str:
    return str(conn.execute(text("SELECT current_database()")).scalar_one())


def _groups(conn: Connection) -> dict[str, str]:
    db = _database(conn)
    return {r: group_role(db, r) for r in ROLES}


def _check_user_name(user: str) -> None:
    if not _USER_NAME.match(user) or user.startswith("pg_"):
        raise TeamError(
            f"{user!r} is not a usable role name: lower-case letters, digits and _, "
            "starting with a letter or _, at most 63 characters, not pg_…"
        )


def _role_exists(conn: Connection, name: str) -> bool:
    return bool(
        conn.execute(text("SELECT 1 FROM pg_roles WHERE rolname = :n"), {"n": name}).scalar()
    )


def _require_initialised(conn: Connection) -> dict[str, str]:
    groups = _groups(conn)
    missing = [g for g in groups.values() if not _role_exists(conn, g)]
    if missing:
        raise TeamError(
            f"team mode is not set up in this database (no role {missing[0]}): "
            "run `gradercal team init --db URL` as its owner first"
        )
    return groups


def _require_role_admin(conn: Connection) -> None:
    row = conn.execute(
        text("SELECT rolsuper, rolcreaterole FROM pg_roles WHERE rolname = current_user")
    ).one()
    if not (row.rolsuper or row.rolcreaterole):
        raise TeamError(
            "managing the team needs a PostgreSQL role with CREATEROLE (the database owner); "
            "connect as that role"
        )


# -- policies -------------------------------------------------------------------------------
#: The grader row of the session, as a scalar subquery (grader's own policy lets it see it).
_ME = "(SELECT g.id FROM grader g WHERE g.name = current_user AND g.kind = 'human')"
_OWN_HISTORY = (
    "(entity = 'judgment' AND entity_id IN (SELECT id FROM judgment)) OR "
    "(entity = 'task_review' AND entity_id IN (SELECT id FROM task_review))"
)

#: table → [(policy suffix, command, USING, WITH CHECK)] for the grader group role.
#: Sub-selects on other tables go through those tables' own policies, so "the tasks of
#: my responses" is simply ``SELECT task_id FROM response``.
_GRADER_POLICIES: dict[str, list[tuple[str, str, str | None, str | None]]] = {
    "benchmark": [("read", "SELECT", "true", None)],
    "grader": [("self", "SELECT", "name = current_user AND kind = 'human'", None)],
    "assignment": [
        ("read", "SELECT", f"grader_id = {_ME}", None),
        ("progress", "UPDATE", f"grader_id = {_ME}", f"grader_id = {_ME}"),
    ],
    "response": [("assigned", "SELECT", "id IN (SELECT response_id FROM assignment)", None)],
    "task": [("assigned", "SELECT", "id IN (SELECT task_id FROM response)", None)],
    "criterion": [("assigned", "SELECT", "task_id IN (SELECT id FROM task)", None)],
    "artifact": [("assigned", "SELECT", "task_id IN (SELECT id FROM task)", None)],
    # earlier versions of their tasks: the grading view shows what changed since a verdict
    "content_version": [("assigned", "SELECT", "task_id IN (SELECT id FROM task)", None)],
    "blob": [("assigned", "SELECT", "sha256 IN (SELECT sha256 FROM artifact)", None)],
    "judgment": [
        (
            "own",
            "ALL",
            f"grader_id = {_ME} AND response_id IN (SELECT response_id FROM assignment)",
            f"grader_id = {_ME} AND response_id IN (SELECT response_id FROM assignment)",
        )
    ],
    "task_review": [
        (
            "own",
            "ALL",
            f"grader_id = {_ME} AND task_id IN (SELECT id FROM task)",
            f"grader_id = {_ME} AND task_id IN (SELECT id FROM task)",
        )
    ],
    "revision": [
        ("read", "SELECT", _OWN_HISTORY, None),
        ("write", "INSERT", None, f"({_OWN_HISTORY}) AND actor = current_user"),
    ],
    "database_info": [("id", "SELECT", "key = 'database_id'", None)],
    # clarification threads on the criteria of their tasks: they read the answers (the
    # columns granted below leave out who asked what) and ask as themselves
    "clarification": [
        ("read", "SELECT", "criterion_id IN (SELECT id FROM criterion)", None),
        (
            "ask",
            "INSERT",
            None,
            "asked_by = current_user AND status = 'open' AND answer IS NULL "
            "AND answered_by IS NULL AND answered_at IS NULL "
            "AND criterion_id IN (SELECT id FROM criterion) "
            "AND task_id = (SELECT c.task_id FROM criterion c WHERE c.id = criterion_id) "
            "AND benchmark_id = (SELECT t.benchmark_id FROM task t WHERE t.id = task_id)",
        ),
        (  # the opener's edited note revises the thread's first question
            "revise",
            "UPDATE",
            "asked_by = current_user AND status = 'open'",
            "asked_by = current_user AND status = 'open' AND answer IS NULL",
        ),
    ],
    "clarification_message": [
        (
            "read",
            "SELECT",
            "clarification_id IN (SELECT id FROM clarification) "
            "AND (kind = 'answer' OR author = current_user)",
            None,
        ),
        (
            "ask",
            "INSERT",
            None,
            "kind = 'question' AND author = current_user "
            "AND clarification_id IN (SELECT id FROM clarification WHERE status = 'open') "
            "AND (judgment_id IS NULL OR judgment_id IN (SELECT id FROM judgment))",
        ),
        (  # a note edited while the thread is open revises its question
            "revise",
            "UPDATE",
            "kind = 'question' AND author = current_user "
            "AND clarification_id IN (SELECT id FROM clarification WHERE status = 'open')",
            "kind = 'question' AND author = current_user "
            "AND clarification_id IN (SELECT id FROM clarification WHERE status = 'open')",
        ),
    ],
}

#: Column privileges of the grader group role (table → {privilege: columns or None = all}).
_GRADER_GRANTS: dict[str, dict[str, tuple[str, ...] | None]] = {
    "benchmark": {"SELECT": None},
    "grader": {"SELECT": None},
    "assignment": {
        # every column but ``inclusion_probability`` (the active design's sampling
        # probability: it would tell a grader how unsure the judge was)
        "SELECT": (
            "id",
            "grader_id",
            "response_id",
            "status",
            "position",
            "time_spent_s",
            "calibration",
            "skip_reason",
            "created_at",
            "updated_at",
            "submitted_at",
        ),
        "UPDATE": ("status", "time_spent_s", "skip_reason", "updated_at", "submitted_at"),
    },
    "response": {"SELECT": ("id", "benchmark_id", "task_id", "text", "answer", "created_at")},
    "task": {"SELECT": None},
    "criterion": {"SELECT": None},
    "artifact": {"SELECT": None},
    "content_version": {"SELECT": None},
    "blob": {"SELECT": None},
    "judgment": {
        "SELECT": None,
        "INSERT": (
            "grader_id",
            "response_id",
            "criterion_id",
            "met",
            "level",
            "confidence",
            "rationale",
            "unclear",
            "unclear_note",
            "source",
            "revision",
            "created_at",
            "updated_at",
            "task_version",
        ),
        "UPDATE": (
            "met",
            "level",
            "confidence",
            "rationale",
            "unclear",
            "unclear_note",
            "source",
            "revision",
            "updated_at",
            "task_version",
        ),
    },
    "task_review": {
        "SELECT": None,
        "INSERT": ("task_id", "grader_id", "answers", "comment", "created_at", "updated_at"),
        "UPDATE": ("answers", "comment", "updated_at"),
    },
    "revision": {
        "SELECT": None,
        "INSERT": ("entity", "entity_id", "revision", "data", "actor", "source", "changed_at"),
    },
    "database_info": {"SELECT": None},
    "clarification": {
        "SELECT": (
            "id",
            "benchmark_id",
            "task_id",
            "criterion_id",
            "status",
            "answer",
            "answered_by",
            "answered_at",
            "updated_at",
        ),
        "INSERT": (
            "benchmark_id",
            "task_id",
            "criterion_id",
            "status",
            "question",
            "asked_by",
            "asked_at",
            "updated_at",
        ),
        "UPDATE": ("question", "updated_at"),
    },
    "clarification_message": {
        "SELECT": None,
        "INSERT": ("clarification_id", "kind", "author", "text", "created_at", "judgment_id"),
        "UPDATE": ("text",),
    },
}

#: Columns a history row keeps of each table (as gradercal's own writers keep them).
_SNAPSHOT_KEYS = {
    "judgment": (
        "met",
        "level",
        "confidence",
        "rationale",
        "unclear",
        "unclear_note",
        "source",
        "task_version",
    ),
    "adjudication": ("met", "level", "note", "adjudicator", "task_version"),
}
#: Columns a deletion's history row keeps (``<table>_deleted``): the value and whose it was.
_DELETED_KEYS = {
    "judgment": ("grader_id", "response_id", "criterion_id", *_SNAPSHOT_KEYS["judgment"]),
    "adjudication": ("response_id", "criterion_id", *_SNAPSHOT_KEYS["adjudication"]),
}
#: Tables whose history only grows: no team role may rewrite or empty it. TRUNCATE is
#: refused on the verdict tables too, since it fires no row trigger (deletes are recorded).
_APPEND_ONLY = {"revision": "UPDATE, DELETE, TRUNCATE"}
_NO_TRUNCATE = ("judgment", "adjudication")
#: Columns whose change makes a new revision. ``task_version`` too: giving the same
#: verdict again under a revised task is a new revision whose history keeps the old
#: version (as the app writes it), so a stale verdict never turns current unrecorded.
_VERDICT_KEYS = {
    "judgment": (
        "met",
        "level",
        "confidence",
        "rationale",
        "unclear",
        "unclear_note",
        "task_version",
    ),
    "adjudication": ("met", "level", "note", "adjudicator", "task_version"),
}

#: Every trigger function runs with this search_path: PostgreSQL's own catalog first, the
#: schema of gradercal's tables, and the session's temporary schema *last*. Without
#: ``pg_temp`` named, PostgreSQL searches it first, and any session able to create a
#: temporary table ``revision`` would receive the history meant for ``public.revision``.
#: Every table and function below is named with its schema as well.
_SAFE_PATH = "SET search_path = pg_catalog, public, pg_temp"

_FUNCTIONS = [
    rf"""
CREATE OR REPLACE FUNCTION public.gradercal_next_revision() RETURNS trigger
LANGUAGE plpgsql {_SAFE_PATH} AS $fn$
DECLARE
    changed boolean := false;
    k text;
BEGIN
    IF NEW.revision < OLD.revision THEN
        RAISE EXCEPTION 'the revision of % % cannot go back (% to %)',
            TG_TABLE_NAME, OLD.id, OLD.revision, NEW.revision
            USING ERRCODE = 'check_violation';
    END IF;
    FOREACH k IN ARRAY TG_ARGV LOOP
        IF (pg_catalog.to_jsonb(NEW) OPERATOR(pg_catalog.->) k)
           IS DISTINCT FROM (pg_catalog.to_jsonb(OLD) OPERATOR(pg_catalog.->) k) THEN
            changed := true;
        END IF;
    END LOOP;
    IF changed AND NEW.revision = OLD.revision THEN
        NEW.revision := OLD.revision + 1;
    END IF;
    RETURN NEW;
END
$fn$""",
    # the task version a verdict is given under is the task's, never one ahead of it:
    # a verdict whose version is ahead would not go stale when its criterion is revised
    rf"""
CREATE OR REPLACE FUNCTION public.gradercal_verdict_version() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER {_SAFE_PATH} AS $fn$
DECLARE
    current_version integer;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.task_version IS NOT DISTINCT FROM OLD.task_version THEN
        RETURN NEW;
    END IF;
    SELECT t.version INTO current_version
      FROM public.criterion c JOIN public.task t ON t.id = c.task_id
     WHERE c.id = NEW.criterion_id;
    IF NEW.task_version IS NULL OR NEW.task_version < 1
       OR NEW.task_version > COALESCE(current_version, 1) THEN
        RAISE EXCEPTION '% % cannot be given under task version % (the task is at version %)',
            TG_TABLE_NAME, NEW.id, NEW.task_version, current_version
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$fn$""",
    rf"""
CREATE OR REPLACE FUNCTION public.gradercal_keep_history() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER {_SAFE_PATH} AS $fn$
DECLARE
    old_row jsonb := pg_catalog.to_jsonb(OLD);
    snapshot jsonb := '{{}}'::jsonb;
    kept jsonb;
    k text;
BEGIN
    IF NEW.revision = OLD.revision THEN
        RETURN NULL;
    END IF;
    FOREACH k IN ARRAY TG_ARGV LOOP
        snapshot := snapshot OPERATOR(pg_catalog.||)
            pg_catalog.jsonb_build_object(k, old_row OPERATOR(pg_catalog.->) k);
    END LOOP;
    SELECT v.data::jsonb INTO kept FROM public.revision v
     WHERE v.entity = TG_TABLE_NAME AND v.entity_id = OLD.id AND v.revision = OLD.revision
     ORDER BY v.id LIMIT 1;
    IF NOT FOUND THEN
        INSERT INTO public.revision (entity, entity_id, revision, data, actor, source, changed_at)
        VALUES (TG_TABLE_NAME, OLD.id, OLD.revision,
                (snapshot OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object(
                    'updated_at', old_row OPERATOR(pg_catalog.->) 'updated_at'))::json,
                session_user, 'sql', pg_catalog.now());
    ELSE
        FOREACH k IN ARRAY TG_ARGV LOOP
            IF k <> 'source' AND (kept OPERATOR(pg_catalog.->) k)
               IS DISTINCT FROM (snapshot OPERATOR(pg_catalog.->) k) THEN
                RAISE EXCEPTION 'history row % of % % does not hold the value it replaces (%)',
                    OLD.revision, TG_TABLE_NAME, OLD.id, k
                    USING ERRCODE = 'check_violation';
            END IF;
        END LOOP;
    END IF;
    RETURN NULL;
END
$fn$""",
    rf"""
CREATE OR REPLACE FUNCTION public.gradercal_keep_review_history() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER {_SAFE_PATH} AS $fn$
BEGIN
    IF NEW.answers::jsonb IS NOT DISTINCT FROM OLD.answers::jsonb
       AND NEW.comment IS NOT DISTINCT FROM OLD.comment THEN
        RETURN NULL;
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM public.revision v
         WHERE v.entity = 'task_review' AND v.entity_id = OLD.id
           AND (v.data OPERATOR(pg_catalog.->) 'answers')::jsonb
               IS NOT DISTINCT FROM OLD.answers::jsonb
           AND (v.data OPERATOR(pg_catalog.->>) 'comment') IS NOT DISTINCT FROM OLD.comment
    ) THEN
        INSERT INTO public.revision (entity, entity_id, revision, data, actor, source, changed_at)
        SELECT 'task_review', OLD.id, pg_catalog.count(*) + 1,
               pg_catalog.json_build_object('answers', OLD.answers, 'comment', OLD.comment,
                                            'updated_at', OLD.updated_at),
               session_user, 'sql', pg_catalog.now()
          FROM public.revision v WHERE v.entity = 'task_review' AND v.entity_id = OLD.id;
    END IF;
    RETURN NULL;
END
$fn$""",
    rf"""
CREATE OR REPLACE FUNCTION public.gradercal_keep_deleted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER {_SAFE_PATH} AS $fn$
DECLARE
    old_row jsonb := pg_catalog.to_jsonb(OLD);
    snapshot jsonb := '{{}}'::jsonb;
    k text;
BEGIN
    FOREACH k IN ARRAY TG_ARGV LOOP
        snapshot := snapshot OPERATOR(pg_catalog.||)
            pg_catalog.jsonb_build_object(k, old_row OPERATOR(pg_catalog.->) k);
    END LOOP;
    INSERT INTO public.revision (entity, entity_id, revision, data, actor, source, changed_at)
    VALUES (TG_TABLE_NAME OPERATOR(pg_catalog.||) '_deleted', OLD.id, OLD.revision,
            (snapshot OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object(
                'updated_at', old_row OPERATOR(pg_catalog.->) 'updated_at'))::json,
            session_user, 'sql-delete', pg_catalog.now());
    RETURN NULL;
END
$fn$""",
    # a grader's item is submitted only with every judgment criterion answered under
    # the criterion's current wording (what GradingStore.submit checks), whoever writes
    rf"""
CREATE OR REPLACE FUNCTION public.gradercal_submit_complete() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER {_SAFE_PATH} AS $fn$
DECLARE
    missing integer;
BEGIN
    IF NEW.status <> 'submitted' OR OLD.status = 'submitted'
       OR NOT pg_catalog.pg_has_role(session_user, TG_ARGV[0], 'MEMBER') THEN
        RETURN NULL;
    END IF;
    SELECT pg_catalog.count(*) INTO missing
      FROM public.response r JOIN public.criterion c ON c.task_id = r.task_id
     WHERE r.id = NEW.response_id AND c.kind = 'judgment'
       AND NOT EXISTS (
           SELECT 1 FROM public.judgment j
            WHERE j.grader_id = NEW.grader_id AND j.response_id = NEW.response_id
              AND j.criterion_id = c.id
              AND (j.met IS NOT NULL OR j.level IS NOT NULL)
              AND j.task_version >= c.verdict_version);
    IF missing > 0 THEN
        RAISE EXCEPTION 'assignment % cannot be submitted: % criteria not answered yet',
            NEW.id, missing USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END
$fn$""",
    # a grader's verdict cleared (or made stale) on a submitted item puts the item back in
    # progress, as GradingStore.save_judgment does: a submitted item stays complete
    rf"""
CREATE OR REPLACE FUNCTION public.gradercal_reopen_unanswered() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER {_SAFE_PATH} AS $fn$
BEGIN
    IF NOT pg_catalog.pg_has_role(session_user, TG_ARGV[0], 'MEMBER') THEN
        RETURN NULL;
    END IF;
    IF (NEW.met IS NULL AND NEW.level IS NULL) OR EXISTS (
        SELECT 1 FROM public.criterion c
         WHERE c.id = NEW.criterion_id AND NEW.task_version < c.verdict_version) THEN
        UPDATE public.assignment a SET status = 'in_progress', updated_at = pg_catalog.now()
         WHERE a.grader_id = NEW.grader_id AND a.response_id = NEW.response_id
           AND a.status = 'submitted';
    END IF;
    RETURN NULL;
END
$fn$""",
    "REVOKE ALL ON FUNCTION public.gradercal_next_revision() FROM PUBLIC",
    "REVOKE ALL ON FUNCTION public.gradercal_reopen_unanswered() FROM PUBLIC",
    "REVOKE ALL ON FUNCTION public.gradercal_submit_complete() FROM PUBLIC",
    "REVOKE ALL ON FUNCTION public.gradercal_verdict_version() FROM PUBLIC",
    "REVOKE ALL ON FUNCTION public.gradercal_keep_deleted() FROM PUBLIC",
    "REVOKE ALL ON FUNCTION public.gradercal_keep_history() FROM PUBLIC",
    "REVOKE ALL ON FUNCTION public.gradercal_keep_review_history() FROM PUBLIC",
]


#: The functions :func:`init` installs (``public.<name>``), each run with ``_SAFE_PATH``.
FUNCTION_NAMES = (
    "gradercal_next_revision",
    "gradercal_verdict_version",
    "gradercal_keep_history",
    "gradercal_keep_review_history",
    "gradercal_keep_deleted",
    "gradercal_submit_complete",
    "gradercal_reopen_unanswered",
)


def setup_problems(conn: Connection) -> list[tuple[str, str, int]]:
    """What in a database's team setup would let history be skipped, as
    ``(check, message, count)``; none when team mode was never set up here.

    * ``team.history_functions``: a history function missing, or run with a search_path
      that does not put ``pg_temp`` last (as :func:`init` of earlier versions left them):
      a temporary table could then take the place of ``revision``.
    * ``team.temporary_tables``: PUBLIC, a group role or a member may create
      temporary tables in the database.

    Both are mended by running :func:`init` again.
    """
    installed = {
        str(name): list(config or [])
        for name, config in conn.execute(
            text(
                "SELECT p.proname, p.proconfig FROM pg_proc p "
                "JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE n.nspname = 'public' AND p.proname = ANY(:names)"
            ),
            {"names": list(FUNCTION_NAMES)},
        )
    }
    if not installed:
        return []
    out: list[tuple[str, str, int]] = []

    def safe(config: list[str]) -> bool:
        for item in config:
            key, _, value = item.partition("=")
            if key == "search_path":
                return [p.strip().strip('"') for p in value.split(",")][-1] == "pg_temp"
        return False

    bad = sorted(
        [n for n in FUNCTION_NAMES if n not in installed]
        + [n for n, config in installed.items() if not safe(config)]
    )
    if bad:
        out.append(
            (
                "team.history_functions",
                f"{len(bad)} history functions of team mode are missing or search temporary "
                f"tables first ({', '.join(bad)}): run `gradercal team init` as the owner",
                len(bad),
            )
        )
    groups = [g for g in _groups(conn).values() if _role_exists(conn, g)]
    names = list(groups)
    if groups:
        names += list(_memberships(conn, _groups(conn)))
    temp = [
        str(n)
        for (n,) in conn.execute(
            text(
                "SELECT r.rolname FROM pg_roles r WHERE r.rolname = ANY(:names) "
                "AND has_database_privilege(r.oid, current_database(), 'TEMPORARY') "
                "ORDER BY r.rolname"
            ),
            {"names": names},
        )
    ]
    public = conn.execute(
        text(
            "SELECT EXISTS (SELECT 1 FROM pg_database d, "
            "aclexplode(COALESCE(d.datacl, acldefault('d', d.datdba))) a "
            "WHERE d.datname = current_database() AND a.grantee = 0 "
            "AND a.privilege_type = 'TEMPORARY')"
        )
    ).scalar()
    if public:
        temp.insert(0, "PUBLIC")
    if temp:
        out.append(
            (
                "team.temporary_tables",
                f"{len(temp)} roles may create temporary tables in this database "
                f"({', '.join(temp)}): run `gradercal team init` as the owner",
                len(temp),
            )
        )
    return out


def _args(keys: Iterable[str]) -> str:
    return ", ".join(f"'{k}'" for k in keys)


def _trigger_statements(grader_role: str) -> list[str]:
    out: list[str] = []
    for table in ("judgment", "adjudication"):
        out += [
            f"DROP TRIGGER IF EXISTS gradercal_next_revision ON {table}",
            f"CREATE TRIGGER gradercal_next_revision BEFORE UPDATE ON {table} FOR EACH ROW "
            f"EXECUTE FUNCTION public.gradercal_next_revision({_args(_VERDICT_KEYS[table])})",
            f"DROP TRIGGER IF EXISTS gradercal_verdict_version ON {table}",
            f"CREATE TRIGGER gradercal_verdict_version BEFORE INSERT OR UPDATE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION public.gradercal_verdict_version()",
            f"DROP TRIGGER IF EXISTS gradercal_keep_history ON {table}",
            f"CREATE CONSTRAINT TRIGGER gradercal_keep_history AFTER UPDATE ON {table} "
            "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
            f"EXECUTE FUNCTION public.gradercal_keep_history({_args(_SNAPSHOT_KEYS[table])})",
            f"DROP TRIGGER IF EXISTS gradercal_keep_deleted ON {table}",
            f"CREATE TRIGGER gradercal_keep_deleted AFTER DELETE ON {table} FOR EACH ROW "
            f"EXECUTE FUNCTION public.gradercal_keep_deleted({_args(_DELETED_KEYS[table])})",
        ]
    out += [
        "DROP TRIGGER IF EXISTS gradercal_keep_history ON task_review",
        "CREATE CONSTRAINT TRIGGER gradercal_keep_history AFTER UPDATE ON task_review "
        "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
        "EXECUTE FUNCTION public.gradercal_keep_review_history()",
        "DROP TRIGGER IF EXISTS gradercal_reopen_unanswered ON judgment",
        "CREATE TRIGGER gradercal_reopen_unanswered AFTER UPDATE ON judgment FOR EACH ROW "
        f"EXECUTE FUNCTION public.gradercal_reopen_unanswered({_literal(grader_role)})",
        "DROP TRIGGER IF EXISTS gradercal_submit_complete ON assignment",
        "CREATE CONSTRAINT TRIGGER gradercal_submit_complete AFTER UPDATE ON assignment "
        "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
        f"EXECUTE FUNCTION public.gradercal_submit_complete({_literal(grader_role)})",
    ]
    return out


@dataclass(frozen=True)
class InitReport:
    database: str
    roles: dict[str, str]
    created_roles: list[str]
    tables: list[str]
    policies: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _tables() -> list[str]:
    """Every table of gradercal's schema (the models module registers them with Base)."""
    from gradercal.db import models  # noqa: F401

    tables = [t.name for t in Base.metadata.sorted_tables]
    if not tables:  # pragma: no cover - a policy-less team would look set up
        raise TeamError("gradercal's tables are not known here: nothing was changed")
    return tables


def init(db: Database) -> InitReport:
    """Create (or bring up to date) the team's roles, policies, grants and triggers.

    Raises:
        TeamError: SQLite, a role without CREATEROLE, or a connection that does not own
            the tables.
    """
    require_postgres(db)
    with db.engine.begin() as conn:
        _require_role_admin(conn)
        groups = _groups(conn)
        database = _database(conn)
        created: list[str] = []
        for name in groups.values():
            if not _role_exists(conn, name):
                conn.execute(text(f"CREATE ROLE {_q(name)} NOLOGIN"))
                created.append(name)
        tables = _tables()
        mine = {
            r[0]
            for r in conn.execute(
                text(
                    "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                    "AND pg_has_role(current_user, tableowner, 'USAGE')"
                )
            )
        }
        missing = [t for t in tables if t not in mine]
        if missing:
            raise TeamError(
                f"this role does not own table {missing[0]} (run `gradercal init` first, and "
                "`team init` as the role that owns the tables)"
            )
        g, a, c = groups["grader"], groups["adjudicator"], groups["coordinator"]
        everyone = ", ".join(_q(x) for x in (g, a, c))
        conn.execute(text(f"GRANT CONNECT ON DATABASE {_q(database)} TO {everyone}"))
        # no temporary tables for anyone but the owner: a temporary table is searched
        # before the schema's own unless named last (see _SAFE_PATH), and no team role
        # needs one
        conn.execute(text(f"REVOKE TEMPORARY ON DATABASE {_q(database)} FROM PUBLIC, {everyone}"))
        for user in _memberships(conn, groups):
            conn.execute(text(f"REVOKE TEMPORARY ON DATABASE {_q(database)} FROM {_q(user)}"))
        conn.execute(text(f"GRANT USAGE ON SCHEMA public TO {everyone}"))
        conn.execute(text(f"GRANT SELECT ON alembic_version TO {everyone}"))
        n_policies = 0
        for table in tables:
            conn.execute(text(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY"))
            conn.execute(text(f"REVOKE ALL ON {table} FROM {everyone}"))
            for (pol,) in conn.execute(
                text(
                    "SELECT policyname FROM pg_policies WHERE schemaname = current_schema() "
                    "AND tablename = :t AND policyname LIKE :p"
                ),
                {"t": table, "p": _POLICY_PREFIX + "%"},
            ).all():
                conn.execute(text(f"DROP POLICY {_q(pol)} ON {table}"))
            policies: list[tuple[str, str, str, str | None, str | None]] = [
                ("coordinator", c, "ALL", "true", "true"),
                ("adjudicator_read", a, "SELECT", "true", None),
            ]
            if table == "adjudication":
                policies += [
                    ("adjudicator_insert", a, "INSERT", None, "true"),
                    ("adjudicator_update", a, "UPDATE", "true", "true"),
                ]
            if table == "revision":
                policies.append(
                    ("adjudicator_insert", a, "INSERT", None, "entity LIKE 'adjudication%'")
                )
            if table == "clarification":  # adjudicators answer clarifications too
                policies.append(("adjudicator_answer", a, "UPDATE", "true", "true"))
            if table == "clarification_message":
                policies.append(
                    (
                        "adjudicator_answer",
                        a,
                        "INSERT",
                        None,
                        "kind = 'answer' AND author = current_user",
                    )
                )
            for suffix, command, using, check in _GRADER_POLICIES.get(table, []):
                policies.append((f"grader_{suffix}", g, command, using, check))
            for suffix, role, command, using, check in policies:
                sql = (
                    f"CREATE POLICY {_POLICY_PREFIX}{suffix} ON {table} FOR {command} TO {_q(role)}"
                )
                if using is not None:
                    sql += f" USING ({using})"
                if check is not None:
                    sql += f" WITH CHECK ({check})"
                conn.execute(text(sql))
                n_policies += 1
            conn.execute(text(f"GRANT ALL ON {table} TO {_q(c)}"))
            conn.execute(text(f"GRANT SELECT ON {table} TO {_q(a)}"))
            for privilege, columns in _GRADER_GRANTS.get(table, {}).items():
                cols = "" if columns is None else " (" + ", ".join(columns) + ")"
                conn.execute(text(f"GRANT {privilege}{cols} ON {table} TO {_q(g)}"))
        for table, privileges in _APPEND_ONLY.items():
            conn.execute(text(f"REVOKE {privileges} ON {table} FROM {_q(c)}"))
        for table in _NO_TRUNCATE:
            conn.execute(text(f"REVOKE TRUNCATE ON {table} FROM {_q(c)}"))
        conn.execute(text(f"GRANT INSERT, UPDATE ON adjudication TO {_q(a)}"))
        conn.execute(text(f"GRANT INSERT ON revision TO {_q(a)}"))
        conn.execute(
            text(
                "GRANT UPDATE (status, answer, answered_by, answered_at, updated_at) "
                f"ON clarification TO {_q(a)}"
            )
        )
        conn.execute(text(f"GRANT INSERT ON clarification_message TO {_q(a)}"))
        conn.execute(text(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {_q(c)}"))
        for table in (
            "judgment",
            "task_review",
            "revision",
            "clarification",
            "clarification_message",
        ):
            conn.execute(text(f"GRANT USAGE ON SEQUENCE {table}_id_seq TO {_q(g)}"))
        for table in ("adjudication", "revision", "clarification_message"):
            conn.execute(text(f"GRANT USAGE ON SEQUENCE {table}_id_seq TO {_q(a)}"))
        raw = conn.connection.driver_connection
        assert raw is not None
        with raw.cursor() as cur:  # no parameters: the functions' % are plpgsql's
            for sql in _FUNCTIONS:
                cur.execute(sql)
        for sql in _trigger_statements(g):
            conn.execute(text(sql))
    return InitReport(database, groups, created, tables, n_policies)


# -- members --------------------------------------------------------------------------------
def _memberships(conn: Connection, groups: dict[str, str]) -> dict[str, str]:
    """login role → its (most privileged) team role."""
    out: dict[str, str] = {}
    for role in ROLES:  # least to most privileged: the last one wins
        for (user,) in conn.execute(
            text(
                "SELECT m.rolname FROM pg_auth_members am "
                "JOIN pg_roles g ON g.oid = am.roleid JOIN pg_roles m ON m.oid = am.member "
                "WHERE g.rolname = :g"
            ),
            {"g": groups[role]},
        ):
            out[str(user)] = role
    return out


def _password_verifier(conn: Connection, user: str, password: str) -> str:
    """The SCRAM verifier of ``password``, computed by libpq on this side: the clear
    password never reaches the server (nor its logs)."""
    if "\x00" in password or not password:
        raise TeamError("the password must not be empty nor hold NUL characters")
    raw = conn.connection.driver_connection
    verifier = raw.pgconn.encrypt_password(  # type: ignore[union-attr]
        password.encode("utf-8"), user.encode("utf-8"), b"scram-sha-256"
    )
    return bytes(verifier).decode("ascii")


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def add(db: Database, user: str, role: str, password: str | None = None) -> TeamMember:
    """Give ``user`` the team role ``role``: create the login role when new, grant the
    group role (taking back another team role it had), create the grader row it grades
    as. ``password`` None keeps an existing password (a new role then has none: it
    logs in by ``pg_hba.conf``'s other methods, or after :func:`set_password`).
    """
    require_postgres(db)
    _check_user_name(user)
    with db.engine.begin() as conn:
        _require_role_admin(conn)
        groups = _require_initialised(conn)
        target = group_role(_database(conn), role)
        if user in groups.values():
            raise TeamError(f"{user} is one of the team's group roles, not a person")
        row = conn.execute(
            text("SELECT rolsuper, rolcanlogin FROM pg_roles WHERE rolname = :u"), {"u": user}
        ).first()
        if row is not None and row.rolsuper:
            raise TeamError(f"{user} is a superuser: it would see everything; choose another role")
        grader = conn.execute(text("SELECT kind FROM grader WHERE name = :u"), {"u": user}).scalar()
        if grader is not None and grader != "human":
            raise TeamError(f"{user!r} is the name of a {grader} grader; choose another name")
        pw = (
            ""
            if password is None
            else f" PASSWORD {_literal(_password_verifier(conn, user, password))}"
        )
        # exec_driver_sql: a verifier holds ':' that text() would read as parameters
        if row is None:
            conn.exec_driver_sql(f"CREATE ROLE {_q(user)} LOGIN{pw}")
        else:
            conn.exec_driver_sql(f"ALTER ROLE {_q(user)} LOGIN{pw}")
        if row is not None:  # one team role per person: take back any other
            for r, g in groups.items():
                if r != role:
                    conn.execute(text(f"REVOKE {_q(g)} FROM {_q(user)}"))
        conn.execute(text(f"GRANT {_q(target)} TO {_q(user)}"))
        database = _database(conn)  # no temporary tables (see init)
        conn.execute(text(f"REVOKE TEMPORARY ON DATABASE {_q(database)} FROM {_q(user)}"))
        if grader is None:
            conn.execute(
                text(
                    "INSERT INTO grader (name, kind, parameters, created_at) "
                    "VALUES (:u, 'human', '{}', now())"
                ),
                {"u": user},
            )
    return TeamMember(user, role, True, user)


def remove(db: Database, user: str) -> bool:
    """Take ``user`` out of the team. The login role is dropped unless it belongs to
    other roles too (e.g. another database's team); returns whether it was dropped.
    The grader row and everything graded stay."""
    require_postgres(db)
    with db.engine.begin() as conn:
        _require_role_admin(conn)
        groups = _require_initialised(conn)
        if user not in _memberships(conn, groups):
            raise TeamError(f"{user} is not a member of this database's team")
        for g in groups.values():
            conn.execute(text(f"REVOKE {_q(g)} FROM {_q(user)}"))
        others = conn.execute(
            text(
                "SELECT count(*) FROM pg_auth_members am JOIN pg_roles m ON m.oid = am.member "
                "WHERE m.rolname = :u"
            ),
            {"u": user},
        ).scalar_one()
        if others:
            return False
        conn.execute(text(f"DROP ROLE {_q(user)}"))
        return True


def set_password(db: Database, user: str, password: str) -> None:
    """Set a team member's password (sent to the server as a SCRAM verifier)."""
    require_postgres(db)
    with db.engine.begin() as conn:
        _require_role_admin(conn)
        groups = _require_initialised(conn)
        if user not in _memberships(conn, groups):
            raise TeamError(f"{user} is not a member of this database's team")
        verifier = _password_verifier(conn, user, password)
        conn.exec_driver_sql(f"ALTER ROLE {_q(user)} PASSWORD {_literal(verifier)}")


def members(db: Database) -> list[TeamMember]:
    """The team: every login role with a role in this database, by name."""
    require_postgres(db)
    with db.engine.connect() as conn:
        groups = _require_initialised(conn)
        by_user = _memberships(conn, groups)
        if not by_user:
            return []
        login = {
            str(n): bool(v)
            for n, v in conn.execute(
                text("SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname = ANY(:u)"),
                {"u": list(by_user)},
            )
        }
        graders = {
            str(n)
            for (n,) in conn.execute(
                text("SELECT name FROM grader WHERE kind = 'human' AND name = ANY(:u)"),
                {"u": list(by_user)},
            )
        }
    return [
        TeamMember(u, r, login.get(u, False), u if u in graders else None)
        for u, r in sorted(by_user.items())
    ]


def identity(db: Database) -> Identity | None:
    """Who this session is in the database's team; None on SQLite, for the owner, a
    superuser, or anyone outside the team (they work as in single-user mode)."""
    if db.is_sqlite:
        return None
    with db.engine.connect() as conn:
        row = conn.execute(
            text("SELECT current_user AS u, rolsuper FROM pg_roles WHERE rolname = current_user")
        ).one()
        if row.rolsuper:
            return None
        groups = _groups(conn)
        role = None
        for r, g in groups.items():
            member = conn.execute(
                text(
                    "SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :g) "
                    "THEN pg_has_role(current_user, :g, 'MEMBER') ELSE false END"
                ),
                {"g": g},
            ).scalar()
            if member:
                role = r
    return None if role is None else Identity(str(row.u), role)
