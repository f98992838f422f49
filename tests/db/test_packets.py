"""Grading packets: export, grade offline (GradingStore on the unpacked packet), merge.

The round trip runs on SQLite and PostgreSQL; rejected packets (tampered, foreign,
truncated, path tricks, archive bombs) must leave the database exactly as it was.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import stat
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from gradercal.db import models as m
from gradercal.db.assignments import assign
from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.packets import (
    CONFLICT_ENTITY,
    PacketSession,
    export_packet,
    list_conflicts,
    merge_packet,
    open_packet,
)
from gradercal.db.repo import Repository
from gradercal.db.session import Database, database_id, open_database
from gradercal.formats import read_path
from gradercal.ops.packet_format import (
    DATABASE,
    EXPORT,
    MANIFEST,
    Limits,
    Manifest,
    PacketError,
    decide,
    read_packet,
    sha256_file,
)
from tests.conftest import DEMO, DatabaseTemplates, fingerprint
from tests.ops.test_assign import LAZY

GRADERS = ("p-ana", "p-ben", "p-chloe")
MODEL_WORDS = ("atlas", "borealis", "cobalt")
ADJ_NOTE = "ADJUDICATION-NOTE-coordinator-only"


def _open(db_url: str) -> Database:
    return open_database(db_url)


def _build_coordinator(url: str) -> None:
    db = _open(url)
    try:
        Repository(db).import_data(read_path(DEMO))
        assign(db, list(GRADERS), 2, calibration_fraction=0.2, stratify=["model"], seed="pk")
        Repository(db).adjudicate(
            None, "T01-atlas", "c1", met=True, adjudicator="lead", note=ADJ_NOTE
        )
    finally:
        db.dispose()


@pytest.fixture
def coordinator(db_url: str, db_templates: DatabaseTemplates) -> Iterator[Database]:
    """The demo benchmark with three new graders assigned (overlap 2, 20 % calibration),
    built once per backend and copied by each test."""
    db = _open(db_templates.fill(db_url, "packets coordinator", _build_coordinator))
    try:
        yield db
    finally:
        db.dispose()


sqlite_only = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


def verdict(grader: str, aid: int, crit: str, salt: str = "") -> bool:
    digest = hashlib.sha256(f"{grader}|{aid}|{crit}|{salt}".encode()).digest()
    return digest[0] % 3 != 0


def grade_everything(
    session: PacketSession, *, salt: str = "", limit: int = 8
) -> dict[tuple[int, str], bool]:
    """Answer every judgment criterion of the first ``limit`` items in the packet, submit them.

    The first items of every queue are the calibration responses (six), graded by all.
    """
    store = GradingStore(session.db)
    entered: dict[tuple[int, str], bool] = {}
    for item in store.queue(session.grader, session.benchmark)[:limit]:
        loaded = store.load_item(session.grader, item.assignment_id)
        for c in loaded.task.criteria:
            if c.kind.value != "judgment":
                continue
            met = verdict(session.grader, item.assignment_id, c.id, salt)
            store.save_judgment(
                item.assignment_id, c.id, JudgmentValue(met=met, rationale=f"offline {salt}")
            )
            entered[(item.assignment_id, c.id)] = met
        store.submit(item.assignment_id)
    return entered


def current_judgments(db: Database, grader: str) -> dict[tuple[int, str], Any]:
    with db.read() as s:
        rows = s.execute(
            select(m.Assignment.id, m.Criterion.external_id, m.Judgment)
            .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
            .join(
                m.Assignment,
                (m.Assignment.grader_id == m.Judgment.grader_id)
                & (m.Assignment.response_id == m.Judgment.response_id),
            )
            .join(m.Criterion, m.Criterion.id == m.Judgment.criterion_id)
            .where(m.Grader.name == grader)
        ).all()
    return {(aid, crit): j for aid, crit, j in rows}


def first_judgment_criterion(store: GradingStore, grader: str, aid: int) -> str:
    item = store.load_item(grader, aid)
    return next(c.id for c in item.task.criteria if c.kind.value == "judgment")


# -- the round trip ------------------------------------------------------------------------------
def test_round_trip_three_packets_merge_twice_with_conflicts(
    coordinator: Database, db_url: str, tmp_path: Path
) -> None:
    db = coordinator
    store = GradingStore(db)
    ana_queue = store.queue("p-ana")
    # before the export, p-ana already graded two criteria online
    a0, a1 = ana_queue[0].assignment_id, ana_queue[1].assignment_id
    c0 = first_judgment_criterion(store, "p-ana", a0)
    c1 = first_judgment_criterion(store, "p-ana", a1)
    store.save_judgment(a0, c0, JudgmentValue(met=True, rationale="online before export"))
    store.save_judgment(a1, c1, JudgmentValue(met=True, rationale="online before export"))

    paths = {g: tmp_path / f"{g}.gcpkg" for g in GRADERS}
    for g, p in paths.items():
        report = export_packet(db, g, p)
        assert report.assignments == 22 and report.responses == 22
        assert report.judgments == (2 if g == "p-ana" else 0)

    # after the export, the same two judgments are changed in the database (online)
    store.save_judgment(a0, c0, JudgmentValue(met=False, rationale="changed online"))
    store.save_judgment(a1, c1, JudgmentValue(met=True, rationale="online before export"))

    entered: dict[str, dict[tuple[int, str], bool]] = {}
    for i, (g, p) in enumerate(paths.items()):
        with open_packet(p, workdir=tmp_path / f"work{i}") as session:
            assert session.grader == g
            assert [x.name for x in GradingStore(session.db).graders()] == [g]
            entered[g] = grade_everything(session)
            if g == "p-ana":
                # offline: a0/c0 set twice (history), a1/c1 left as exported
                pstore = GradingStore(session.db)
                pstore.save_judgment(a0, c0, JudgmentValue(met=True, rationale="offline v1"))
                pstore.save_judgment(a0, c0, JudgmentValue(met=True, rationale="offline v2"))
                pstore.save_judgment(
                    a1, c1, JudgmentValue(met=True, rationale="online before export")
                )
                pstore.save_task_review(
                    g, None, ana_queue[0].task_id, {"real_research": 4}, "good task"
                )

    before_merge = fingerprint(db_url)
    reports = {g: merge_packet(db, p) for g, p in paths.items()}
    assert fingerprint(db_url) != before_merge
    ana = reports["p-ana"]
    n_ana = len(entered["p-ana"])
    # a0/c0 changed on both sides: a conflict, the database keeps its value
    assert [(c.kind, c.criterion_id, c.new) for c in ana.conflicts] == [("judgment", c0, True)]
    assert ana.conflicts[0].database["rationale"] == "changed online"
    assert ana.conflicts[0].packet["rationale"] == "offline v2"
    assert ana.judgments_added == n_ana - 2  # a1/c1 was restored to its exported value
    assert ana.judgments_unchanged == 1 and ana.reviews_added == 1
    assert ana.assignments_updated == 8
    for g in ("p-ben", "p-chloe"):
        r = reports[g]
        assert r.judgments_added == len(entered[g]) and not r.conflicts

    # what is in the database now: every offline verdict, the conflict kept beside
    for g in GRADERS:
        now = current_judgments(db, g)
        for key, met in entered[g].items():
            if g == "p-ana" and key in {(a0, c0), (a1, c1)}:
                continue
            assert now[key].met is met and now[key].source == "packet", (g, key)
    assert current_judgments(db, "p-ana")[(a0, c0)].rationale == "changed online"
    assert current_judgments(db, "p-ana")[(a1, c1)].rationale == "online before export"
    stored = list_conflicts(db)
    assert len(stored) == 1 and stored[0]["packet"]["rationale"] == "offline v2"
    assert [h["value"]["rationale"] for h in stored[0]["packet_history"]] == [
        "offline ",
        "offline v1",
    ]
    statuses = [q.status for q in GradingStore(db).queue("p-ben")]
    assert statuses == ["submitted"] * 8 + ["pending"] * 14

    # merging again changes nothing at all; the conflict is reported, not recorded twice
    before = fingerprint(db_url)
    for g, p in paths.items():
        again = merge_packet(db, p)
        assert not again.changed, g
        assert again.judgments_already == (n_ana - 2 if g == "p-ana" else len(entered[g]))
        assert [c.new for c in again.conflicts] == ([False] if g == "p-ana" else [])
    assert fingerprint(db_url) == before

    # agreement can be computed on what came back: every calibration response has 3 graders
    frames = Repository(db).load_frames()
    human = frames.judgments[frames.judgments["grader"].isin(GRADERS)]
    per_response = human.groupby("response_id")["grader"].nunique()
    assert (per_response == 3).sum() == 6 and set(per_response) <= {1, 2, 3}


@sqlite_only
def test_grading_continues_after_a_merge_without_false_conflicts(
    coordinator: Database, tmp_path: Path
) -> None:
    db = coordinator
    path = tmp_path / "ben.gcpkg"
    export_packet(db, "p-ben", path)
    work = tmp_path / "work"
    with open_packet(path, workdir=work) as session:
        entered = grade_everything(session)
    assert merge_packet(db, path).judgments_added == len(entered)
    # the grader keeps working in the same packet and changes their mind twice
    (aid, crit), met = next(iter(entered.items()))
    with open_packet(path, workdir=work) as session:
        store = GradingStore(session.db)
        store.save_judgment(aid, crit, JudgmentValue(met=not met, rationale="second thoughts"))
        store.save_judgment(aid, crit, JudgmentValue(met=not met, rationale="final answer"))
    report = merge_packet(db, path)
    assert (report.judgments_updated, report.conflicts, report.history_added) == (1, [], 1)
    row = current_judgments(db, "p-ben")[(aid, crit)]
    assert row.met is (not met) and row.rationale == "final answer"
    history = Repository(db).judgment_history(row.id)
    assert [h["rationale"] for h in history] == ["offline ", "second thoughts"]
    assert row.revision == 3


@sqlite_only
def test_packet_holds_only_the_graders_share_blinded(coordinator: Database, tmp_path: Path) -> None:
    db = coordinator
    store = GradingStore(db)
    # another grader's judgment and a judge verdict exist on the same responses
    ben_first = store.queue("p-ben")[0]
    crit = first_judgment_criterion(store, "p-ben", ben_first.assignment_id)
    store.save_judgment(
        ben_first.assignment_id, crit, JudgmentValue(met=True, rationale="BEN-SECRET")
    )
    path = tmp_path / "ana.gcpkg"
    export_packet(db, "p-ana", path)
    out = tmp_path / "x"
    manifest = read_packet(path, out)
    assert manifest.database_id == database_id(db)
    assert manifest.grader == "p-ana" and manifest.format_version == 1
    raw = (
        (out / DATABASE).read_bytes() + (out / EXPORT).read_bytes() + (out / MANIFEST).read_bytes()
    )
    lowered = raw.lower()
    for word in (
        *MODEL_WORDS,
        b"judge-gpt",
        b"expert-ben",
        b"ben-secret",
        ADJ_NOTE.lower(),
        b"p-ben",
    ):
        word_b = word if isinstance(word, bytes) else word.encode()
        assert word_b not in lowered, word_b
    conn = sqlite3.connect(out / DATABASE)
    try:

        def count(table: str) -> int:
            return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

        assert count("grader") == 1
        for table in ("adjudication", "judge_run", "prompt_version", "revision", "calibration"):
            assert count(table) == 0, table
        assert count("judgment") == 0 and count("assignment") == 22
        models = {r[0] for r in conn.execute("SELECT model FROM response")}
        assert models <= {"Response A", "Response B", "Response C"}
        ids = [r[0] for r in conn.execute("SELECT external_id FROM response ORDER BY id")]
        assert ids == [f"r{i:05d}" for i in range(1, 23)]
        keys = {r[0] for r in conn.execute("SELECT key FROM database_info")}
        assert "packet_key" not in keys and "assignment_design:1" not in keys
        n_blobs = count("blob")
    finally:
        conn.close()
    assert n_blobs == manifest.counts["blobs"] > 0


@sqlite_only
def test_a_crashed_session_is_recovered_from_the_working_folder(
    coordinator: Database, tmp_path: Path
) -> None:
    path = tmp_path / "chloe.gcpkg"
    export_packet(coordinator, "p-chloe", path)
    work = tmp_path / "w"
    session = open_packet(path, workdir=work)
    store = GradingStore(session.db)
    aid = store.queue("p-chloe")[0].assignment_id
    crit = first_judgment_criterion(store, "p-chloe", aid)
    store.save_judgment(aid, crit, JudgmentValue(met=False, rationale="before the crash"))
    session.db.dispose()  # the app dies: nothing was packed into the file
    assert json.loads(zipfile.ZipFile(path).read(MANIFEST))["generation"] == 0
    again = open_packet(path, workdir=work)
    try:
        assert any("recovered" in w for w in again.warnings)
        assert again.manifest.generation == 1  # packed at once
        assert not again.has_unsaved_changes()
    finally:
        again.close()
    report = merge_packet(coordinator, path)
    assert report.judgments_added == 1
    assert current_judgments(coordinator, "p-chloe")[(aid, crit)].rationale == "before the crash"


@sqlite_only
def test_an_older_copy_of_a_packet_is_refused_after_a_newer_one(
    coordinator: Database, tmp_path: Path
) -> None:
    """Save 1 of a packet copied aside, then save 2 merged: merging the old copy would
    roll save 2's verdict back, so it is refused and the database keeps save 2."""
    import shutil

    path = tmp_path / "ana.gcpkg"
    export_packet(coordinator, "p-ana", path)
    session = open_packet(path, workdir=tmp_path / "w")
    store = GradingStore(session.db)
    aid = store.queue("p-ana")[0].assignment_id
    crit = first_judgment_criterion(store, "p-ana", aid)
    store.save_judgment(aid, crit, JudgmentValue(met=True, rationale="first look"))
    assert session.save().generation == 1
    old = tmp_path / "ana-monday.gcpkg"
    shutil.copy(path, old)
    store.save_judgment(aid, crit, JudgmentValue(met=False, rationale="on second thought"))
    assert session.save().generation == 2
    session.close()
    assert merge_packet(coordinator, path).judgments_added == 1
    before = current_judgments(coordinator, "p-ana")[(aid, crit)]
    with pytest.raises(PacketError, match=r"older copy .* save 1 of it, but save 2 was merged"):
        merge_packet(coordinator, old)
    after = current_judgments(coordinator, "p-ana")[(aid, crit)]
    assert (
        (after.met, after.rationale)
        == (before.met, before.rationale)
        == (False, "on second thought")
    )
    assert merge_packet(coordinator, path).judgments_added == 0  # the newest again: a no-op


@sqlite_only
def test_a_replaced_packet_file_never_discards_the_old_working_folder(
    coordinator: Database, tmp_path: Path
) -> None:
    path = tmp_path / "ana.gcpkg"
    export_packet(coordinator, "p-ana", path)
    session = open_packet(path)
    assert session.workdir == tmp_path / "ana.gcpkg.work"
    store = GradingStore(session.db)
    aid = store.queue("p-ana")[0].assignment_id
    store.save_judgment(aid, first_judgment_criterion(store, "p-ana", aid), JudgmentValue(met=True))
    session.db.dispose()  # unsaved work in the working folder
    export_packet(coordinator, "p-ana", path)  # the coordinator sends a new packet
    fresh = open_packet(path)
    try:
        assert any("kept in" in w for w in fresh.warnings)
        kept = [p for p in tmp_path.iterdir() if p.name.startswith("ana.gcpkg.work.previous-")]
        assert len(kept) == 1 and (kept[0] / DATABASE).exists()
    finally:
        fresh.close()


# -- rejected packets leave the database unchanged ------------------------------------------------
def rewrite(src: Path, dst: Path, change: Callable[[dict[str, bytes]], dict[str, bytes]]) -> Path:
    with zipfile.ZipFile(src) as zf:
        entries = {n: zf.read(n) for n in zf.namelist()}
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in change(entries).items():
            out.writestr(name, data)
    return dst


def with_manifest_hashes(entries: dict[str, bytes]) -> dict[str, bytes]:
    """Recompute the manifest's file hashes (what a careless or malicious tool would do)."""
    man = json.loads(entries[MANIFEST])
    for name in (EXPORT, DATABASE):
        man["files"][name] = {
            "sha256": hashlib.sha256(entries[name]).hexdigest(),
            "size": len(entries[name]),
        }
    entries[MANIFEST] = json.dumps(man).encode()
    return entries


def edit_db(entries: dict[str, bytes], sql: str, tmp: Path) -> dict[str, bytes]:
    f = tmp / "edit.sqlite"
    f.write_bytes(entries[DATABASE])
    conn = sqlite3.connect(f)
    conn.execute(sql)
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    entries[DATABASE] = f.read_bytes()
    return entries


@pytest.fixture
def exported(coordinator: Database, tmp_path: Path) -> Path:
    path = tmp_path / "ana.gcpkg"
    export_packet(coordinator, "p-ana", path)
    with open_packet(path, workdir=tmp_path / "w") as session:
        grade_everything(session)
    return path


def _tamper_cases(
    tmp: Path,
) -> dict[str, tuple[Callable[[dict[str, bytes]], dict[str, bytes]], str]]:
    def flip_db_byte(e: dict[str, bytes]) -> dict[str, bytes]:
        data = bytearray(e[DATABASE])
        data[len(data) // 2] ^= 0xFF
        e[DATABASE] = bytes(data)
        return e

    def redirect(e: dict[str, bytes]) -> dict[str, bytes]:
        rec = json.loads(e[EXPORT])
        rec["grader"] = "p-ben"
        e[EXPORT] = json.dumps(rec).encode()
        man = json.loads(e[MANIFEST])
        man["grader"] = "p-ben"
        e[MANIFEST] = json.dumps(man).encode()
        return with_manifest_hashes(e)

    def base_values(e: dict[str, bytes]) -> dict[str, bytes]:
        rec = json.loads(e[EXPORT])
        rec["assignments"][0]["status"] = "submitted"
        e[EXPORT] = json.dumps(rec).encode()
        return with_manifest_hashes(e)

    return {
        "db-byte-flipped": (flip_db_byte, "does not match the packet's manifest"),
        "grader-redirected": (redirect, "was altered"),
        "export-record-edited": (base_values, "was altered"),
        "response-text-edited": (
            lambda e: with_manifest_hashes(
                edit_db(e, "UPDATE response SET text = 'forged' WHERE id = 1", tmp)
            ),
            "response text was changed",
        ),
        "judgment-on-auto-criterion": (
            lambda e: with_manifest_hashes(
                edit_db(
                    e,
                    "INSERT INTO judgment (grader_id, response_id, criterion_id, met, unclear, "
                    "source, revision, created_at, updated_at) SELECT a.grader_id, a.response_id, "
                    "c.id, 1, 0, 'ui', 1, datetime('now'), datetime('now') "
                    "FROM assignment a JOIN response r ON r.id = a.response_id JOIN criterion c "
                    "ON c.task_id = r.task_id WHERE c.kind = 'auto' AND NOT EXISTS (SELECT 1 FROM "
                    "judgment j WHERE j.response_id = a.response_id AND j.criterion_id = c.id) "
                    "LIMIT 1",
                    tmp,
                )
            ),
            "auto criterion",
        ),
        "absurd-time-on-task": (
            lambda e: with_manifest_hashes(
                edit_db(e, "UPDATE assignment SET time_spent_s = 1e15", tmp)
            ),
            "s on task; the app never records more than",
        ),
        "verdict-dated-before-the-export": (
            lambda e: with_manifest_hashes(
                edit_db(
                    e,
                    "UPDATE judgment SET met = NOT met, updated_at = '2020-01-01 00:00:00' "
                    "WHERE id = (SELECT min(id) FROM judgment WHERE met IS NOT NULL)",
                    tmp,
                )
            ),
            "outside the packet's life",
        ),
        "history-from-before-the-export": (
            lambda e: with_manifest_hashes(
                edit_db(
                    e,
                    "INSERT INTO revision (entity, entity_id, revision, data, source, changed_at) "
                    "SELECT 'judgment', j.id, 0, '{\"met\": true}', 'ui', datetime('now') "
                    "FROM judgment j WHERE j.revision >= 1 LIMIT 1",
                    tmp,
                )
            ),
            "carries history from before the export",
        ),
        "submitted-with-nothing-answered": (
            lambda e: with_manifest_hashes(
                edit_db(
                    e,
                    "UPDATE judgment SET met = NULL, level = NULL WHERE response_id = (SELECT "
                    "response_id FROM assignment WHERE status = 'submitted' ORDER BY id LIMIT 1)",
                    tmp,
                )
            ),
            "is marked submitted with .* criteria unanswered",
        ),
        "wrong-type-in-met": (
            lambda e: with_manifest_hashes(
                edit_db(e, "UPDATE judgment SET met = 'yes' WHERE id = 1", tmp)
            ),
            "must be true or false",
        ),
        "manifest-newer-format": (
            lambda e: {
                **e,
                MANIFEST: e[MANIFEST].replace(b'"format_version": 1', b'"format_version": 9'),
            },
            "newer than this gradercal reads",
        ),
        "manifest-not-json": (lambda e: {**e, MANIFEST: b"{nope"}, "not valid JSON"),
        "missing-entry": (
            lambda e: {k: v for k, v in e.items() if k != EXPORT},
            "lacks export.json",
        ),
        "extra-entry": (lambda e: {**e, "notes.txt": b"hi"}, "unexpected packet entry"),
        "path-escape": (lambda e: {**e, "../../escaped.txt": b"x"}, "outside the packet folder"),
        "absolute-path": (lambda e: {**e, "/tmp/abs.txt": b"x"}, "outside the packet folder"),
        "windows-drive": (lambda e: {**e, "C:\\evil.txt": b"x"}, "outside the packet folder"),
    }


def test_tampered_and_malformed_packets_are_rejected_unchanged(
    exported: Path, coordinator: Database, db_url: str, tmp_path: Path
) -> None:
    before = fingerprint(db_url)
    for name, (change, message) in _tamper_cases(tmp_path).items():
        bad = rewrite(exported, tmp_path / f"{name}.gcpkg", change)
        with pytest.raises(PacketError, match=message):
            merge_packet(coordinator, bad)
        assert fingerprint(db_url) == before, name
    assert not (tmp_path.parent / "escaped.txt").exists()
    assert not Path("/tmp/abs.txt").exists()
    # the untouched packet still merges afterwards
    assert merge_packet(coordinator, exported).judgments_added > 0


@sqlite_only
def test_truncated_and_foreign_packets_are_rejected(
    exported: Path, coordinator: Database, db_url: str, tmp_path: Path
) -> None:
    before = fingerprint(db_url)
    data = exported.read_bytes()
    for n in (0, 10, len(data) // 2, len(data) - 30):
        cut = tmp_path / f"cut{n}.gcpkg"
        cut.write_bytes(data[:n])
        with pytest.raises(PacketError, match=r"empty|truncated|damaged|not a gradercal packet"):
            merge_packet(coordinator, cut)
    garbage = tmp_path / "garbage.gcpkg"
    garbage.write_bytes(b"PK\x03\x04" + bytes(range(256)) * 40)
    with pytest.raises(PacketError):
        merge_packet(coordinator, garbage)
    # the same benchmark imported into another database: same content, other id
    other = open_database(str(tmp_path / "other.sqlite"))
    try:
        Repository(other).import_data(read_path(DEMO))
        with pytest.raises(PacketError, match="belongs to another database"):
            merge_packet(other, exported)
        # and a packet exported there does not merge here, even with forged database id
        assign(other, list(GRADERS), 2, calibration_fraction=0.2, stratify=["model"], seed="pk")
        foreign = tmp_path / "foreign.gcpkg"
        export_packet(other, "p-ana", foreign)
    finally:
        other.dispose()
    here = database_id(coordinator)

    def forge(e: dict[str, bytes]) -> dict[str, bytes]:
        man = json.loads(e[MANIFEST])
        man["database_id"] = here
        rec = json.loads(e[EXPORT])
        rec["database_id"] = here
        e[EXPORT] = json.dumps(rec).encode()
        e[MANIFEST] = json.dumps(man).encode()
        return with_manifest_hashes(e)

    forged = rewrite(foreign, tmp_path / "forged.gcpkg", forge)
    with pytest.raises(PacketError, match="was altered"):
        merge_packet(coordinator, forged)
    assert fingerprint(db_url) == before


def test_archive_bombs_and_odd_entries_are_refused(tmp_path: Path) -> None:
    dest = tmp_path / "out"
    # a real deflate bomb: 64 MiB of zeros compress ~1000:1
    bomb = tmp_path / "bomb.gcpkg"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(MANIFEST, b"{}")
        zf.writestr(EXPORT, b"{}")
        with zf.open(DATABASE, "w", force_zip64=True) as fh:
            chunk = bytes(1 << 20)
            for _ in range(64):
                fh.write(chunk)
    with pytest.raises(PacketError, match="archive bomb"):
        read_packet(bomb, dest)
    with pytest.raises(PacketError, match="would unpack to"):
        read_packet(bomb, dest, Limits(max_database_bytes=1 << 20))
    with pytest.raises(PacketError, match="at most 1 allowed"):
        read_packet(bomb, dest, Limits(max_entries=1))
    # a header that lies about the size: more bytes than declared are never written
    liar = tmp_path / "liar.gcpkg"
    with zipfile.ZipFile(liar, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(MANIFEST, b"{}")
        zf.writestr(EXPORT, b"{}")
        zf.writestr(DATABASE, b"x" * 4096)
    raw = bytearray(liar.read_bytes())
    # shrink the declared size of packet.sqlite in its central directory record
    idx = raw.rfind(DATABASE.encode()) - 46
    assert raw[idx : idx + 4] == b"PK\x01\x02"
    raw[idx + 24 : idx + 28] = (16).to_bytes(4, "little")
    liar.write_bytes(bytes(raw))
    with pytest.raises(PacketError):
        read_packet(liar, dest)
    assert not (dest / DATABASE).exists() or (dest / DATABASE).stat().st_size <= 16
    # duplicate names, symlinks and directories
    dup = tmp_path / "dup.gcpkg"
    with zipfile.ZipFile(dup, "w") as zf:
        zf.writestr(MANIFEST, b"{}")
        with pytest.warns(UserWarning, match="Duplicate name"):
            zf.writestr(MANIFEST, b"{}")
    with pytest.raises(PacketError, match="appears twice"):
        read_packet(dup, dest)
    link = tmp_path / "link.gcpkg"
    with zipfile.ZipFile(link, "w") as zf:
        info = zipfile.ZipInfo(DATABASE)
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(PacketError, match="not a regular file"):
        read_packet(link, dest)


def test_merge_decisions() -> None:
    base, mine, theirs = {"met": True}, {"met": False}, {"met": None}
    assert decide(base, base, theirs) == "unchanged"
    assert decide(base, mine, mine) == "same"
    assert decide(base, mine, base) == "apply"
    assert decide(None, mine, None) == "apply"
    assert decide(base, mine, theirs) == "conflict"
    assert decide(base, mine, theirs, current_is_ours=True) == "apply"


@sqlite_only
def test_manifest_round_trips_and_rejects_bad_fields(exported: Path, tmp_path: Path) -> None:
    manifest = read_packet(exported, tmp_path / "m")
    assert Manifest.from_json(manifest.to_json()) == manifest
    assert manifest.files[DATABASE] == sha256_file(tmp_path / "m" / DATABASE)
    bad = manifest.to_dict()
    bad["packet_id"] = "../../etc"
    with pytest.raises(PacketError, match="packet_id is malformed"):
        Manifest.from_json(json.dumps(bad).encode())
    bad = manifest.to_dict()
    bad["files"]["extra"] = bad["files"][EXPORT]
    with pytest.raises(PacketError, match="exactly"):
        Manifest.from_json(json.dumps(bad).encode())


@sqlite_only
def test_export_refuses_unknown_graders_and_odd_names(
    coordinator: Database, tmp_path: Path
) -> None:
    from gradercal.errors import NotFoundError

    with pytest.raises(NotFoundError, match="no human grader"):
        export_packet(coordinator, "judge-gpt", tmp_path / "j.gcpkg")
    with pytest.raises(NotFoundError, match="no assignments"):
        export_packet(coordinator, "expert-ben", tmp_path / "b.gcpkg")
    with pytest.raises(PacketError, match=r"must end in \.gcpkg"):
        export_packet(coordinator, "p-ana", tmp_path / "ana.sqlite")


# -- CLI ----------------------------------------------------------------------------------------
@sqlite_only
def test_cli_export_merge_info_conflicts(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gradercal.cli import LazyGroup, main

    for name, entry in LAZY.items():
        monkeypatch.setitem(LazyGroup.lazy, name, entry)
    run = CliRunner()
    assert run.invoke(main, ["import", str(DEMO), "--db", db_url]).exit_code == 0
    args = ["assign", "--db", db_url, "--graders", ",".join(GRADERS), "--overlap", "2"]
    assert run.invoke(main, [*args, "--seed", "1"]).exit_code == 0
    pkg = tmp_path / "ana.gcpkg"
    res = run.invoke(
        main, ["packet", "export", "--db", db_url, "-g", "p-ana", "-o", str(pkg), "--json"]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["assignments"] == 20
    with open_packet(pkg, workdir=tmp_path / "w") as session:
        n = len(grade_everything(session))
    res = run.invoke(main, ["packet", "merge", str(pkg), "--db", db_url, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["judgments_added"] == n and out["changed"] is True
    res = run.invoke(main, ["packet", "merge", str(pkg), "--db", db_url])
    assert res.exit_code == 0 and "nothing new" in res.output
    info = run.invoke(main, ["packet", "info", str(pkg), "--db", db_url, "--check-seal", "--json"])
    assert info.exit_code == 0 and json.loads(info.output)["verified"] == "hashes and seal"
    assert "seal" not in json.loads(info.output)
    res = run.invoke(main, ["packet", "conflicts", "--db", db_url, "--json"])
    assert res.exit_code == 0 and json.loads(res.output) == []
    bad = tmp_path / "bad.gcpkg"
    bad.write_bytes(pkg.read_bytes()[:1000])
    res = run.invoke(main, ["packet", "merge", str(bad), "--db", db_url])
    assert res.exit_code == 1 and "error:" in res.output and "Traceback" not in res.output


@sqlite_only
def test_cli_merges_several_packets_one_line_each(
    coordinator: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`packet merge a b bad`: each packet merged on its own, one stdout line per packet
    in the order given (what it brought, "nothing new", or why it was refused), details
    on stderr, exit status 1 when one was refused; --json gives a list of the reports
    (one packet: its report, as before). The old command took one file only."""
    from gradercal.cli import LazyGroup, main

    for name, entry in LAZY.items():
        monkeypatch.setitem(LazyGroup.lazy, name, entry)
    url = coordinator.url.render_as_string(hide_password=False)
    packets = []
    entered = {}
    for g in GRADERS[:2]:
        pkg = tmp_path / f"{g}.gcpkg"
        export_packet(coordinator, g, pkg)
        with open_packet(pkg, workdir=tmp_path / f"w-{g}") as session:
            entered[g] = grade_everything(session, limit=3)
        packets.append(pkg)
    bad = tmp_path / "bad.gcpkg"
    bad.write_bytes(packets[0].read_bytes()[:1000])
    before = current_judgments(coordinator, GRADERS[1])
    run = CliRunner()
    res = run.invoke(
        main, ["packet", "merge", str(packets[0]), str(bad), str(packets[1]), "--db", url]
    )
    assert res.exit_code == 1, res.output
    lines = res.stdout.splitlines()
    assert len(lines) == 3, lines
    for line, pkg in zip(lines, (packets[0], bad, packets[1]), strict=True):
        assert line.startswith(f"{pkg}")
    for line, g in ((lines[0], GRADERS[0]), (lines[2], GRADERS[1])):
        assert f"({g!r}): merged: {len(entered[g])} judgments added" in line
        assert "3 queue items updated" in line
    assert ": refused: " in lines[1]
    assert "1 of 3 packets refused" in res.stderr and "bad.gcpkg" in res.stderr
    assert current_judgments(coordinator, GRADERS[1]) != before  # the one after bad merged
    # again: nothing new for either, one line each, exit 0
    res = run.invoke(main, ["packet", "merge", *map(str, packets), "--db", url])
    assert res.exit_code == 0, res.output
    again = res.stdout.splitlines()
    assert len(again) == 2
    assert all("nothing new, the database is unchanged" in line for line in again)
    assert f"({len(entered[GRADERS[0]])} judgments already merged)" in again[0]
    # --json: a list of the reports, in order; a refused packet says why
    res = run.invoke(main, ["packet", "merge", str(packets[1]), str(bad), "--db", url, "--json"])
    assert res.exit_code == 1
    out = json.loads(res.stdout)
    assert [o["path"] for o in out] == [str(packets[1]), str(bad)]
    assert out[0]["changed"] is False and out[0]["grader"] == GRADERS[1]
    assert set(out[1]) == {"path", "error"} and out[1]["error"]
    one = run.invoke(main, ["packet", "merge", str(packets[1]), "--db", url, "--json"])
    assert one.exit_code == 0 and json.loads(one.stdout)["grader"] == GRADERS[1]  # as before


def test_offline_reopenings_merge_once_and_misdated_ones_are_refused(
    coordinator: Database, tmp_path: Path
) -> None:
    """A reopening recorded in a packet joins the database's reopen history on merge (on
    both backends), once; one dated before the packet's export is refused whole."""
    from datetime import datetime

    from gradercal.db.grading import REOPEN_ENTITY

    url = coordinator.url.render_as_string(hide_password=False)
    grader = GRADERS[0]
    pkg = tmp_path / "r.gcpkg"
    export_packet(coordinator, grader, pkg)
    with open_packet(pkg, workdir=tmp_path / "w") as session:
        grade_everything(session, limit=2)
        store = GradingStore(session.db)
        aid = store.queue(session.grader, session.benchmark)[0].assignment_id
        store.reopen(aid)
        store.submit(aid)
        store.reopen(aid)  # left open
        offline = store.reopen_history(aid)
    assert len(offline) == 2
    report = merge_packet(coordinator, pkg)
    assert report.reopens_added == 2
    history = GradingStore(coordinator).reopen_history(aid)
    assert [(h["revision"], h["status"], h["actor"]) for h in history] == [
        (1, "submitted", grader),
        (2, "submitted", grader),
    ]
    assert [h["submitted_at"] for h in history] == [h["submitted_at"] for h in offline]
    assert merge_packet(coordinator, pkg).reopens_added == 0
    assert len(GradingStore(coordinator).reopen_history(aid)) == 2

    bad = tmp_path / "bad.gcpkg"
    export_packet(coordinator, GRADERS[1], bad)
    with open_packet(bad, workdir=tmp_path / "wb") as session:
        grade_everything(session, limit=1)
        store = GradingStore(session.db)
        first = store.queue(session.grader, session.benchmark)[0].assignment_id
        store.reopen(first)
        with session.db.write() as s:
            for r in s.scalars(select(m.Revision).where(m.Revision.entity == REOPEN_ENTITY)):
                r.changed_at = datetime(2001, 1, 1)
    before = fingerprint(url)
    with pytest.raises(PacketError, match=f"a reopening of assignment {first}"):
        merge_packet(coordinator, bad)
    assert fingerprint(url) == before


@sqlite_only
def test_conflict_rows_are_history_not_judgments(coordinator: Database, tmp_path: Path) -> None:
    """A recorded conflict lives in ``revision``; judgment counts and frames are unaffected."""
    db = coordinator
    store = GradingStore(db)
    aid = store.queue("p-ben")[0].assignment_id
    crit = first_judgment_criterion(store, "p-ben", aid)
    store.save_judgment(aid, crit, JudgmentValue(met=True))
    path = tmp_path / "ben.gcpkg"
    export_packet(db, "p-ben", path)
    store.save_judgment(aid, crit, JudgmentValue(met=None))
    with open_packet(path, workdir=tmp_path / "w") as session:
        GradingStore(session.db).save_judgment(aid, crit, JudgmentValue(met=False))
    with db.read() as s:
        n_before = s.scalar(select(func.count()).select_from(m.Judgment))
    report = merge_packet(db, path)
    assert len(report.conflicts) == 1
    with db.read() as s:
        assert s.scalar(select(func.count()).select_from(m.Judgment)) == n_before
        kinds = set(s.scalars(select(m.Revision.entity)))
    assert CONFLICT_ENTITY in kinds
