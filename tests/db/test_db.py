"""The database layer on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, select

from gradercal.analysis.scoring import response_scores
from gradercal.db import models as m
from gradercal.db.repo import Repository, benchmark_of
from gradercal.db.session import (
    DatabaseError,
    head_revision,
    make_engine,
    open_database,
    resolve_url,
)
from gradercal.errors import ConflictError, NotFoundError
from gradercal.formats import read_folder, read_path
from gradercal.frames import frames_from_data
from tests.conftest import DATA, ROOT, fingerprint, read_jsonl, write_jsonl


def test_migrations_produce_exactly_the_models_schema(db_url: str) -> None:
    db = open_database(db_url)
    try:
        with db.engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            diff = compare_metadata(ctx, m.Base.metadata)
        assert diff == []
        assert set(inspect(db.engine).get_table_names()) == {
            *m.Base.metadata.tables,
            "alembic_version",
        }
    finally:
        db.dispose()


def test_a_sqlite_database_is_read_without_the_postgresql_dialect(tmp_path: Path) -> None:
    """Opening and reading an existing SQLite database (as ``report`` and the window do)
    loads no PostgreSQL dialect: a ``postgresql_*`` option in the models would import it
    with them (≈ 50 ms of every command's start; the partial index's PostgreSQL clause
    lives in its migration)."""
    path = str(tmp_path / "g.sqlite")
    open_database(path, create=True).dispose()
    code = (
        "import sys\n"
        "from gradercal.cli.common import open_repo\n"
        f"print(open_repo({path!r}).benchmarks())\n"
        "print(sorted(m for m in sys.modules if m.startswith('sqlalchemy.dialects.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    loaded = out.strip().splitlines()[-1]
    assert "sqlalchemy.dialects.sqlite" in loaded
    assert "postgresql" not in loaded


def test_import_is_one_transaction_and_idempotent(
    repo: Repository, mini: Path, db_url: str
) -> None:
    data = read_folder(mini)
    report = repo.import_data(data)
    assert (report.tasks_added, report.responses_added, report.judgments_added) == (2, 4, 30)
    assert (report.artifacts_added, report.blobs_added) == (3, 2)
    assert sorted(report.graders_added) == ["ana", "ben", "judge-x"]
    before = fingerprint(db_url)
    again = repo.import_data(read_folder(mini))
    assert not again.changed
    assert (again.tasks_unchanged, again.responses_unchanged, again.judgments_unchanged) == (
        2,
        4,
        30,
    )
    assert fingerprint(db_url) == before


def test_frames_from_the_database_equal_frames_from_the_files(repo: Repository, mini: Path) -> None:
    data = read_folder(mini)
    repo.import_data(data)
    stored = repo.load_frames("mini")
    direct = frames_from_data(data)
    for name in ("tasks", "criteria", "responses", "judgments", "adjudications"):
        a = (
            getattr(stored, name)
            .sort_values(list(getattr(stored, name).columns[:3]))
            .reset_index(drop=True)
        )
        b = (
            getattr(direct, name)
            .sort_values(list(getattr(direct, name).columns[:3]))
            .reset_index(drop=True)
        )
        pd.testing.assert_frame_equal(a, b, check_like=False, obj=name)
    assert stored.pass_threshold == 0.7


def test_scores_from_the_database(repo: Repository, mini: Path) -> None:
    repo.import_data(read_folder(mini))
    frames = repo.load_frames()
    ana = response_scores(frames, grader="ana").set_index("response_id")
    # M1-a under ana: c1 +6, c2 +3 met, c3 (-4) not met, c4 +1 met → 10 / 10 = 1.0
    assert ana.loc["M1-a", "score"] == pytest.approx(1.0)
    # M1-b under ana: only the penalty c3 met → -4/10 clipped to 0
    assert ana.loc["M1-b", "score"] == 0.0
    # M2-a: ec50 4.0 within 20% of 4.3 (+5), "4PL" exact (+3), c1 met (+2) → 10/10
    assert ana.loc["M2-a", "score"] == pytest.approx(1.0)
    # M2-b: ec50 9.5 out, "Hill" != "4PL", c1 not met under ana → 0/10
    assert ana.loc["M2-b", "score"] == 0.0
    cons = response_scores(frames).set_index("response_id")
    # consensus of ana and ben ties on M1-a/c2 and M2-b/c1: those responses are incomplete
    assert not cons.loc["M1-a", "complete"] and not cons.loc["M2-b", "complete"]
    assert cons.loc["M1-b", "score"] == 0.0


def test_changed_task_is_a_conflict_and_nothing_is_written(
    repo: Repository, mini: Path, db_url: str
) -> None:
    repo.import_data(read_folder(mini))
    before = fingerprint(db_url)
    tasks = read_jsonl(mini / "tasks.jsonl")
    tasks[0]["rubric"][0]["points"] = 7
    write_jsonl(mini / "tasks.jsonl", tasks)
    with pytest.raises(ConflictError, match="M1: task differs from the one already stored"):
        repo.import_data(read_folder(mini))
    assert fingerprint(db_url) == before


def test_changed_response_is_a_conflict(repo: Repository, mini: Path, db_url: str) -> None:
    repo.import_data(read_folder(mini))
    before = fingerprint(db_url)
    rows = read_jsonl(mini / "responses.jsonl")
    rows[1]["text"] = "edited"
    write_jsonl(mini / "responses.jsonl", rows)
    with pytest.raises(ConflictError, match="M1-b: response differs"):
        repo.import_data(read_folder(mini))
    assert fingerprint(db_url) == before


def test_changed_judgment_is_updated_and_the_old_value_kept(repo: Repository, mini: Path) -> None:
    repo.import_data(read_folder(mini))
    rows = read_jsonl(mini / "judgments.jsonl")
    assert rows[0]["grader"] == "ana" and rows[0]["met"] is True
    rows[0]["met"] = False
    rows[0]["rationale"] = "on second reading, no"
    write_jsonl(mini / "judgments.jsonl", rows)
    report = repo.import_data(read_folder(mini))
    assert (report.judgments_updated, report.judgments_unchanged) == (1, 29)
    with repo.db.read() as s:
        row = s.scalars(select(m.Judgment).where(m.Judgment.revision == 2)).one()
        assert row.met is False and row.rationale == "on second reading, no"
        jid = row.id
    history = repo.judgment_history(jid)
    assert [(h["revision"], h["met"], h["rationale"]) for h in history] == [(1, True, None)]


def test_new_responses_and_judgments_add_to_a_benchmark(repo: Repository, mini: Path) -> None:
    repo.import_data(read_folder(mini))
    extra = mini / "extra.jsonl"
    write_jsonl(extra, [{"id": "M1-c", "task_id": "M1", "model": "gamma", "text": "new"}])
    data = benchmark_of(read_path(extra, repo.catalog("mini")), "mini")
    report = repo.import_data(data, threshold_from_file=False)
    assert report.responses_added == 1 and report.tasks_added == 0
    assert len(repo.load_responses("mini")) == 5


def test_artifact_bytes_live_in_the_database(repo: Repository, mini: Path) -> None:
    repo.import_data(read_folder(mini))
    task = repo.load_tasks()[0]
    fasta = task.artifacts[0]
    assert fasta.sha256 is not None
    assert repo.read_blob(fasta.sha256) == (mini / "artifacts/construct.fasta").read_bytes()
    with pytest.raises(NotFoundError):
        repo.read_blob("0" * 64)


def test_tasks_round_trip_through_domain_objects(repo: Repository, mini: Path) -> None:
    data = read_folder(mini)
    repo.import_data(data)
    assert repo.load_tasks() == data.tasks
    assert repo.load_responses() == data.responses


def test_adjudication_overrides_consensus_and_keeps_history(repo: Repository, mini: Path) -> None:
    repo.import_data(read_folder(mini))
    repo.adjudicate(
        None, "M1-a", "c2", met=True, adjudicator="lead", note="junction check suffices"
    )
    repo.adjudicate(None, "M1-a", "c2", met=False, adjudicator="lead", note="changed my mind")
    frames = repo.load_frames()
    adj = frames.adjudications
    assert list(adj["met"]) == [False] and list(adj["note"]) == ["changed my mind"]
    with repo.db.read() as s:
        revs = s.scalars(select(m.Revision).where(m.Revision.entity == "adjudication")).all()
        assert [r.data["met"] for r in revs] == [True]
    cons = response_scores(frames).set_index("response_id")
    # c2 now settled as not met: 6 + 1 = 7 of 10 → 0.7 → passes at 0.7
    assert cons.loc["M1-a", "score"] == pytest.approx(0.7)
    assert bool(cons.loc["M1-a", "passed"])


def test_no_benchmark_yet_is_a_clear_error(repo: Repository) -> None:
    with pytest.raises(NotFoundError, match="holds no benchmark yet"):
        repo.load_frames()


def test_sqlite_runs_in_wal_mode_with_foreign_keys(tmp_path: Path) -> None:
    db = open_database(tmp_path / "x.sqlite")
    try:
        with db.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
    finally:
        db.dispose()


def test_default_location_comes_from_platformdirs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("GRADERCAL_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    url = resolve_url(None)
    assert url.database == str(tmp_path / "xdg" / "gradercal" / "gradercal.sqlite")
    monkeypatch.setenv("GRADERCAL_DB", str(tmp_path / "env.sqlite"))
    assert resolve_url(None).database == str(tmp_path / "env.sqlite")


def test_a_foreign_sqlite_file_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("create table notes (x)")
    con.commit()
    con.close()
    before = path.read_bytes()
    with pytest.raises(DatabaseError, match="not a gradercal database"):
        open_database(path)
    assert path.read_bytes() == before


def test_a_database_from_a_newer_gradercal_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    open_database(path).dispose()
    con = sqlite3.connect(path)
    con.execute("update alembic_version set version_num = '9999'")
    con.commit()
    con.close()
    with pytest.raises(
        DatabaseError, match="revision 9999, which this version of gradercal does not know"
    ):
        open_database(path)


def test_a_garbage_file_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "garbage.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(DatabaseError, match="cannot open database"):
        open_database(path)


def test_an_older_database_is_backed_up_then_upgraded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Simulate a release with a second migration; the 0001 fixture file must upgrade."""
    import gradercal.db.session as session_mod

    old = tmp_path / "old.sqlite"
    shutil.copy(DATA / "db-0001.sqlite", old)
    scripts = tmp_path / "migrations"
    shutil.copytree(Path(session_mod.__file__).parent / "migrations", scripts)
    head = head_revision()
    (scripts / "versions" / "9001_probe.py").write_text(
        '"""probe"""\n'
        "import sqlalchemy as sa\nfrom alembic import op\n"
        f"revision = '9001'\ndown_revision = '{head}'\nbranch_labels = None\ndepends_on = None\n"
        "def upgrade() -> None:\n"
        "    op.create_table('probe', sa.Column('id', sa.Integer, primary_key=True))\n"
        "def downgrade() -> None:\n    op.drop_table('probe')\n"
    )
    real_config = session_mod.alembic_config

    def patched(engine: Any = None) -> Any:
        cfg = real_config(engine)
        cfg.set_main_option("script_location", str(scripts))
        return cfg

    monkeypatch.setattr(session_mod, "alembic_config", patched)
    db = open_database(old)
    try:
        assert session_mod.current_revision(db.engine) == "9001"
        assert "probe" in inspect(db.engine).get_table_names()
        assert Repository(db).benchmarks()[0].n_judgments == 30
    finally:
        db.dispose()
    backups = list(tmp_path.glob("old.sqlite.before-9001-*.bak"))
    assert len(backups) == 1
    con = sqlite3.connect(backups[0])
    assert con.execute("select version_num from alembic_version").fetchone() == ("0001",)
    assert con.execute("select count(*) from judgment").fetchone() == (30,)
    con.close()


def test_the_old_version_fixture_is_at_revision_0001() -> None:
    """tests/data/db-0001.sqlite is a database written by the first schema; keep it forever."""
    con = sqlite3.connect(DATA / "db-0001.sqlite")
    try:
        assert con.execute("select version_num from alembic_version").fetchone() == ("0001",)
    finally:
        con.close()
    assert head_revision() >= "0001"


def test_password_never_shown(tmp_path: Path) -> None:
    from gradercal.db.session import display_url

    url = resolve_url("postgresql+psycopg://alice:s3cret-canary@127.0.0.1:1/nodb")
    assert "s3cret-canary" not in display_url(url)
    engine = make_engine(url)
    engine.dispose()
    with pytest.raises(DatabaseError) as info:
        open_database("postgresql+psycopg://alice:s3cret-canary@127.0.0.1:1/nodb")
    assert "s3cret-canary" not in str(info.value)


def test_json_columns_keep_unicode_and_structure(repo: Repository, tmp_path: Path) -> None:
    folder = tmp_path / "uni"
    folder.mkdir()
    write_jsonl(
        folder / "tasks.jsonl",
        [
            {
                "id": "U1",
                "prompt": "Δ-ΔCt für β-Aktin — “quotes”; '; DROP TABLE task; --",
                "metadata": {"nested": {"list": [1, 2.5, None, "ü"]}},
                "rubric": [{"id": "c1", "criterion": "✓ ok", "points": 1, "tags": ["axis:ü"]}],
            }
        ],
    )
    data = read_folder(folder)
    repo.import_data(data)
    (task,) = repo.load_tasks()
    assert task == data.tasks[0]
    assert (
        json.dumps(task.metadata, ensure_ascii=False) == '{"nested": {"list": [1, 2.5, null, "ü"]}}'
    )


def test_every_database_has_its_own_id(db_url: str, tmp_path: Path) -> None:
    from gradercal.db.session import database_id

    first = open_database(db_url)
    second = open_database(tmp_path / "second.sqlite")
    try:
        a, b = database_id(first), database_id(second)
        assert len(a) == 36
        assert a != b
        assert database_id(first) == a  # stable
    finally:
        first.dispose()
        second.dispose()
