"""Security: secrets stay out of everything we write, text stays text, paths stay put.

* An API-key canary used by a judge run (with a server that echoes it back) and a
  database password canary never appear in the database, packets, exports, backups,
  command output or logs.
* SQL-injection text typed into every free-text field is stored and read back as plain
  text, and every table is still there.
* Artifact paths and packet entries cannot reach outside their folders.
"""

from __future__ import annotations

import json
import logging
import uuid
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import func, inspect, select
from sqlalchemy.engine import make_url

from gradercal.db import models as m
from gradercal.db.assignments import assign
from gradercal.db.grading import GradingStore, JudgmentValue
from gradercal.db.packets import export_packet, merge_packet, open_packet
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.errors import ValidationError
from gradercal.formats import read_path
from tests.conftest import DATA, write_jsonl
from tests.ops.test_assign import LAZY

KEY_ENV = "GC_SECURITY_JUDGE_KEY"

INJECTIONS = [
    "'; DROP TABLE judgment; --",
    "Robert'); DROP TABLE task;--",
    '" OR 1=1 --',
    "1; DELETE FROM revision WHERE 1=1",
    "%s %(met)s ? :name $1 {0}",
    "') UNION SELECT sha256, data FROM blob --",
    "\\'; ATTACH DATABASE '/tmp/pwn.db' AS pwn; --",
    "<script>alert('x')</script>",
    "ǅ ﷽ 𝕏 \u202e drow",
]


def cli(args: list[str], env: dict[str, str] | None = None) -> Result:
    from gradercal.cli import LazyGroup, main

    saved = dict(LazyGroup.lazy)
    LazyGroup.lazy.update(LAZY)
    try:
        return CliRunner().invoke(main, args, env=env, catch_exceptions=False)
    finally:
        LazyGroup.lazy.clear()
        LazyGroup.lazy.update(saved)


def all_rows_text(db_url: str) -> str:
    db = open_database(db_url)
    try:
        with db.engine.connect() as conn:
            return "\n".join(
                repr(tuple(row))
                for table in m.Base.metadata.sorted_tables
                for row in conn.execute(select(table))
            )
    finally:
        db.dispose()


# -- secrets ------------------------------------------------------------------------------------
@pytest.fixture
def judged(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """mini, judged by a run that used (and had echoed back) the canary key."""
    from gradercal.cli.judge import judge
    from tests.support.judge_server import Fault, JudgeServer, ServerConfig

    canary = f"sk-canary-{uuid.uuid4().hex}"
    monkeypatch.setenv(KEY_ENV, canary)
    db = open_database(db_url)
    try:
        Repository(db).import_data(read_path(DATA / "mini"))
    finally:
        db.dispose()
    config = ServerConfig(
        require_key=canary,
        faults=[
            Fault("Notes the premature stop codon", ["echo_key"]),
            Fault("Suggests re-sequencing", ["echo_key_500", "ok"]),
        ],
    )
    with JudgeServer(config) as srv:
        args = ["run", "--db", db_url, "--judge", "jx", "--model", "gpt-4o-mini"]
        args += ["--base-url", srv.base_url, "--api-key-env", KEY_ENV, "--json"]
        result = CliRunner().invoke(judge, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert srv.stats.auth_headers == {f"Bearer {canary}"}
    return canary


def test_api_key_canary_never_in_database_packets_exports_backups_or_logs(
    judged: str,
    db_url: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    canary = judged
    caplog.set_level(logging.DEBUG)
    outputs: list[str] = []
    steps = [
        ["assign", "--db", db_url, "--graders", "sec-a,sec-b", "--overlap", "1", "--seed", "1"],
        ["packet", "export", "--db", db_url, "-g", "sec-a", "-o", str(tmp_path / "a.gcpkg")],
        ["export", "judgments", "--db", db_url, "-o", str(tmp_path / "j.jsonl")],
        ["export", "judgments", "--db", db_url, "-o", str(tmp_path / "j.csv")],
        ["export", "responses", "--db", db_url, "-o", str(tmp_path / "r.jsonl")],
        ["check", "--db", db_url, "--json"],
    ]
    if "://" not in db_url:
        steps.append(["backup", "--db", db_url, "-o", str(tmp_path / "b.sqlite"), "--json"])
    for args in steps:
        res = cli(args)
        assert res.exit_code == 0, (args, res.output)
        outputs.append(res.output)
    with open_packet(tmp_path / "a.gcpkg", workdir=tmp_path / "work") as session:
        store = GradingStore(session.db)
        for item in store.queue("sec-a"):
            task = store.load_item("sec-a", item.assignment_id).task
            for c in task.criteria:
                if c.kind.value == "judgment":
                    store.save_judgment(item.assignment_id, c.id, JudgmentValue(met=True))
    res = cli(["packet", "merge", str(tmp_path / "a.gcpkg"), "--db", db_url, "--json"])
    assert res.exit_code == 0 and json.loads(res.output)["judgments_added"] > 0
    outputs.append(res.output)
    captured = capfd.readouterr()
    for text in (*outputs, caplog.text, captured.out, captured.err):
        assert canary not in text
    assert canary not in all_rows_text(db_url)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    if "://" not in db_url:
        files += list(Path(db_url).parent.glob(Path(db_url).name + "*"))
    assert len(files) >= 6
    for path in files:
        data = path.read_bytes()
        assert canary.encode() not in data, path
        if path.suffix == ".gcpkg":
            with zipfile.ZipFile(path) as zf:
                for name in zf.namelist():
                    assert canary.encode() not in zf.read(name), (path, name)


@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_database_password_never_in_output_packets_or_backups(
    db_url: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The server trusts local connections, so any password works: it is our canary."""
    secret = f"pw-canary-{uuid.uuid4().hex}"
    url = make_url(db_url).set(password=secret).render_as_string(hide_password=False)
    db = open_database(url)
    try:
        Repository(db).import_data(read_path(DATA / "mini"))
    finally:
        db.dispose()
    outputs = [
        cli(["assign", "--db", url, "--graders", "pw-a", "--overlap", "1", "--seed", "0"]),
        cli(["packet", "export", "--db", url, "-g", "pw-a", "-o", str(tmp_path / "p.gcpkg")]),
        cli(["packet", "merge", str(tmp_path / "p.gcpkg"), "--db", url]),
        cli(["check", "--db", url]),
        cli(["backup", "--db", url, "-o", str(tmp_path / "team.dump")]),
        cli(["packet", "merge", str(tmp_path / "missing.gcpkg"), "--db", url]),  # an error
        cli(
            [
                "assign",
                "--db",
                url.replace(secret, secret + "x") + "_nope",
                "--graders",
                "a",
                "--overlap",
                "1",
                "--seed",
                "0",
            ]
        ),
    ]
    assert [r.exit_code for r in outputs] == [0, 0, 0, 0, 0, 1, 1]
    captured = capfd.readouterr()
    for text in [r.output for r in outputs] + [captured.out, captured.err]:
        assert secret not in text
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


# -- SQL injection ------------------------------------------------------------------------------
def _injected_folder(folder: Path) -> Path:
    folder.mkdir()
    (folder / "benchmark.json").write_text(json.dumps({"name": INJECTIONS[0]}), "utf-8")
    (folder / "notes.txt").write_text("artifact", "utf-8")
    tasks, responses, judgments = [], [], []
    for i, text in enumerate(INJECTIONS):
        tasks.append(
            {
                "id": f"T{i}-{text}"[:200],
                "prompt": text,
                "workflow": text,
                "domain": text,
                "answer_format": text,
                "tags": [text],
                "metadata": {text: text},
                "artifacts": [{"path": "notes.txt", "title": text}],
                "rubric": [
                    {"id": f"c-{text}"[:200], "criterion": text, "points": 1, "tags": [text]}
                ],
            }
        )
        responses.append(
            {
                "id": f"R{i}-{text}"[:200],
                "task_id": f"T{i}-{text}"[:200],
                "model": text,
                "text": text,
                "answer": {text: text},
            }
        )
        judgments.append(
            {
                "response_id": f"R{i}-{text}"[:200],
                "criterion_id": f"c-{text}"[:200],
                "grader": f"g {text}"[:200],
                "met": True,
                "rationale": text,
                "unclear": True,
                "unclear_note": text,
            }
        )
    write_jsonl(folder / "tasks.jsonl", tasks)
    write_jsonl(folder / "responses.jsonl", responses)
    write_jsonl(folder / "judgments.jsonl", judgments)
    return folder


def test_sql_injection_text_is_stored_as_plain_text_everywhere(db_url: str, tmp_path: Path) -> None:
    db = open_database(db_url)
    try:
        repo = Repository(db)
        data = read_path(_injected_folder(tmp_path / "inj"))
        repo.import_data(data)
        tables_before = set(inspect(db.engine).get_table_names())
        bench = repo.benchmark(INJECTIONS[0])
        assert bench.name == INJECTIONS[0]
        tasks = {t.id: t for t in repo.load_tasks(bench.name)}
        for i, text in enumerate(INJECTIONS):
            t = tasks[f"T{i}-{text}"[:200]]
            assert (t.prompt, t.workflow, t.domain, t.answer_format) == (text,) * 4
            assert t.tags == (text,) and t.metadata == {text: text}
            assert t.criteria[0].text == text and t.artifacts[0].title == text
        by_id = {r.id: r for r in repo.load_responses(bench.name)}
        for i, text in enumerate(INJECTIONS):
            r = by_id[f"R{i}-{text}"[:200]]
            assert (r.model, r.text, r.answer) == (text, text, {text: text})
        recs = {
            (r["grader"], r["rationale"], r["unclear_note"])
            for r in repo.judgment_records(bench.name)
        }
        assert recs == {(f"g {t}"[:200], t, t) for t in INJECTIONS}

        # the grading app's free text: grader names, rationale, notes, skip reasons, reviews
        names = [f"sec {t}"[:200] for t in INJECTIONS[:4]]
        assign(db, names, 1, seed=INJECTIONS[1], benchmark=bench.name)
        store = GradingStore(db)
        for n, name in enumerate(names):
            queue = store.queue(name, bench.name)
            for k, item in enumerate(queue):
                text = INJECTIONS[(n + k) % len(INJECTIONS)]
                crit = store.load_item(name, item.assignment_id).task.criteria[0].id
                store.save_judgment(
                    item.assignment_id,
                    crit,
                    JudgmentValue(met=False, rationale=text, unclear=True, unclear_note=text),
                )
                store.skip(item.assignment_id, text)
                store.save_task_review(name, bench.name, item.task_id, {"grounded": 3}, text)
                assert store.load_item(name, item.assignment_id).judgments[crit].rationale == text
                assert store.queue_item(item.assignment_id).skip_reason == text.strip()
                assert store.load_review(name, bench.name, item.task_id).review.comment == text
        # a packet round trip keeps them too
        path = tmp_path / "inj.gcpkg"
        export_packet(db, names[0], path, benchmark=bench.name)
        with open_packet(path, workdir=tmp_path / "w") as session:
            ps = GradingStore(session.db)
            item = ps.queue(session.grader, session.benchmark)[0]
            crit = ps.load_item(session.grader, item.assignment_id).task.criteria[0].id
            ps.save_judgment(
                item.assignment_id, crit, JudgmentValue(met=True, rationale=INJECTIONS[5])
            )
        assert merge_packet(db, path).judgments_updated == 1
        assert (
            store.load_item(names[0], item.assignment_id).judgments[crit].rationale == INJECTIONS[5]
        )
        # every table is still there and nothing was deleted
        assert set(inspect(db.engine).get_table_names()) == tables_before
        with db.read() as s:
            assert s.scalar(select(func.count()).select_from(m.Judgment)) == len(INJECTIONS) * 2
            assert s.scalar(select(func.count()).select_from(m.Task)) == len(INJECTIONS)
    finally:
        db.dispose()


def _first(store: GradingStore, grader: str) -> tuple[int, str]:
    item = store.queue(grader)[0]
    crit = next(
        c.id
        for c in store.load_item(grader, item.assignment_id).task.criteria
        if c.kind.value == "judgment"
    )
    return item.assignment_id, crit


def test_nul_bytes_typed_in_the_app_are_dropped_on_both_backends(db_url: str) -> None:
    """PostgreSQL text cannot hold NUL; whatever a grader or adjudicator types is stored
    without it, identically on SQLite and PostgreSQL."""
    db = open_database(db_url)
    try:
        repo = Repository(db)
        repo.import_data(read_path(DATA / "mini"))
        assign(db, ["nul"], 1, seed=0)
        store = GradingStore(db)
        assert store.create_grader("ad\x00a").name == "ad a"
        aid, crit = _first(store, "nul")
        value = JudgmentValue(
            met=True, rationale="before\x00after", unclear=True, unclear_note="\x00"
        )
        store.save_judgment(aid, crit, value)
        kept = store.load_item("nul", aid).judgments[crit]
        assert kept.rationale == "beforeafter"
        assert kept.unclear_note is None  # nothing but NUL is blank
        response = repo.load_responses()[0]
        task = next(t for t in repo.load_tasks() if t.id == response.task_id)
        repo.adjudicate(
            None,
            response.id,
            task.criteria[0].id,
            met=False,
            adjudicator="x\x00y",
            note="a\x00b",
        )
        with db.read() as s:
            row = s.execute(select(m.Adjudication.note, m.Adjudication.adjudicator)).one()
        assert (row.note, row.adjudicator) == ("ab", "xy")
    finally:
        db.dispose()


def test_nul_bytes_in_a_packet_merge_cleanly(db_url: str, tmp_path: Path) -> None:
    """A packet graded offline (SQLite keeps NUL) merges into PostgreSQL without it."""
    db = open_database(db_url)
    try:
        Repository(db).import_data(read_path(DATA / "mini"))
        assign(db, ["nul"], 1, seed=0)
        path = tmp_path / "nul.gcpkg"
        export_packet(db, "nul", path)
        with open_packet(path, workdir=tmp_path / "w") as session:
            ps = GradingStore(session.db)
            aid, crit = _first(ps, "nul")
            ps.save_judgment(aid, crit, JudgmentValue(met=True, rationale="placeholder"))
            ps.skip(aid, "placeholder")
            # an older app (or a pasted control character) left NUL in the packet
            with session.db.engine.begin() as conn:
                conn.exec_driver_sql("UPDATE judgment SET rationale = 'a' || char(0) || 'b'")
                conn.exec_driver_sql("UPDATE assignment SET skip_reason = 's' || char(0) || 'r'")
        report = merge_packet(db, path)
        assert report.judgments_added == 1
        kept = GradingStore(db).load_item("nul", aid).judgments[crit].rationale
        assert kept == ("ab" if "://" in db_url else "a\x00b")
        assert merge_packet(db, path).changed is False
    finally:
        db.dispose()


# -- paths --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path",
    ["../secret.txt", "../../../../etc/passwd", "/etc/passwd", "C:\\boot.ini", "link.txt"],
)
def test_artifact_paths_stay_inside_the_benchmark_folder(tmp_path: Path, path: str) -> None:
    folder = tmp_path / "bench"
    folder.mkdir()
    (tmp_path / "secret.txt").write_text("TOP-SECRET", "utf-8")
    (folder / "link.txt").symlink_to(tmp_path / "secret.txt")
    write_jsonl(
        folder / "tasks.jsonl",
        [
            {
                "id": "T",
                "prompt": "p",
                "artifacts": [{"path": path}],
                "rubric": [{"id": "c", "criterion": "x", "points": 1}],
            }
        ],
    )
    with pytest.raises(ValidationError, match=r"not allowed|leaves the benchmark|outside"):
        read_path(folder)


def test_packet_files_stay_in_their_folders(tmp_path: Path) -> None:
    """Export writes one file; opening writes only the working folder; merging writes nothing."""
    db_path = tmp_path / "coord" / "c.sqlite"
    db = open_database(db_path)
    try:
        Repository(db).import_data(read_path(DATA / "mini"))
        assign(db, ["pth"], 1, seed=0)
        out_dir = tmp_path / "out"
        out_dir.mkdir()
        export_packet(db, "pth", out_dir / "p.gcpkg")
        assert [p.name for p in out_dir.iterdir()] == ["p.gcpkg"]
        with zipfile.ZipFile(out_dir / "p.gcpkg") as zf:
            assert sorted(zf.namelist()) == ["export.json", "manifest.json", "packet.sqlite"]
        before = sorted(p for p in tmp_path.rglob("*"))
        with open_packet(out_dir / "p.gcpkg", workdir=out_dir / "w") as session:
            assert session.workdir == out_dir / "w"
        after = sorted(p for p in tmp_path.rglob("*"))
        new = [p for p in after if p not in before]
        assert new and all(p.is_relative_to(out_dir / "w") for p in new)
        before = sorted(p for p in tmp_path.rglob("*"))
        merge_packet(db, out_dir / "p.gcpkg")
        assert sorted(p for p in tmp_path.rglob("*")) == before
    finally:
        db.dispose()


def _zip(path: Path, entries: dict[str, Any]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return path


@pytest.mark.parametrize(
    "name",
    [
        "../escape.txt",
        "../../escape.txt",
        "/tmp/escape.txt",
        "C:\\escape.txt",
        "a/../../escape.txt",
    ],
)
def test_packet_entries_cannot_escape(tmp_path: Path, name: str) -> None:
    from gradercal.ops.packet_format import PacketError, read_packet

    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    bad = _zip(inner / "bad.gcpkg", {name: b"pwned", "manifest.json": b"{}"})
    with pytest.raises(PacketError, match="outside the packet folder"):
        read_packet(bad, inner / "dest")
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "a" / "escape.txt").exists()
    assert not Path("/tmp/escape.txt").exists() or Path("/tmp/escape.txt").read_bytes() != b"pwned"
