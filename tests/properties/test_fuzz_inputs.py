"""Fuzzing every door bad input can come through: the importer and the packet reader.

Whatever the bytes, the outcome is either a successful import / merge or a
:class:`gradercal.errors.GradercalError` with a message for people — never another
exception type — and a failed attempt leaves the database exactly as it was.
Example counts are modest so the file runs in well under a minute.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gradercal.db.repo import Repository, benchmark_of
from gradercal.db.session import Database, open_database
from gradercal.errors import GradercalError
from gradercal.formats import read_path
from gradercal.ops.packet_format import DATABASE, EXPORT, MANIFEST
from tests.conftest import DATA, fingerprint

FUZZ = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,
)
FILES = ("tasks.jsonl", "responses.jsonl", "judgments.jsonl", "benchmark.json")

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
    | st.sampled_from(["", "x" * 300, "x" * 100_000, "\x00", "../../etc/passwd", "é" * 250]),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)

PATH_TRICKS = [
    "../outside.txt",
    "../../../../etc/passwd",
    "/etc/passwd",
    "\\\\server\\share\\x.pdf",
    "C:\\Windows\\win.ini",
    "C:relative.txt",
    "artifacts/../../outside.txt",
    "artifacts/./dose.csv/..",
    "artifacts\\..\\..\\outside.txt",
    "artifacts/dose.csv\x00.pdf",
    "artifacts/link-out.txt",
    "artifacts",
    "",
    "~/secret.txt",
    "file:///etc/passwd",
]


def clear_message(exc: BaseException) -> None:
    """A message for people: present, one error's worth, no traceback or repr noise."""
    message = str(exc)
    assert message.strip(), f"{type(exc).__name__} without a message"
    assert "Traceback" not in message
    assert not message.startswith(("<", "(")), message[:200]


# -- the importer -------------------------------------------------------------------------------
class Importer:
    """One SQLite database holding ``mini``; each example imports a mutated copy into it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.url = str(root / "fuzz.sqlite")
        self.db = open_database(self.url)
        self.repo = Repository(self.db)
        self.repo.import_data(read_path(DATA / "mini"))
        (root / "outside.txt").write_text("outside the benchmark folder")

    def folder(self) -> Path:
        dst = Path(tempfile.mkdtemp(dir=self.root, prefix="case-"))
        shutil.copytree(DATA / "mini", dst, dirs_exist_ok=True)
        link = dst / "artifacts" / "link-out.txt"
        link.symlink_to(self.root / "outside.txt")
        return dst

    def attempt(self, folder: Path, name: str = "mini") -> None:
        """Import ``folder``; a failure must be a GradercalError and change nothing."""
        before = fingerprint(self.url)
        try:
            data = read_path(folder, self.repo.catalog(name))
            self.repo.import_data(benchmark_of(data, name))
        except GradercalError as exc:
            clear_message(exc)
            assert fingerprint(self.url) == before, "a failed import changed the database"
        finally:
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def importer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Importer]:
    imp = Importer(tmp_path_factory.mktemp("fuzz-import"))
    try:
        yield imp
    finally:
        imp.db.dispose()


@FUZZ
@given(name=st.sampled_from(FILES), content=st.binary(max_size=3000))
def test_random_bytes_in_any_file(importer: Importer, name: str, content: bytes) -> None:
    folder = importer.folder()
    (folder / name).write_bytes(content)
    importer.attempt(folder)


@FUZZ
@given(name=st.sampled_from(FILES), cut=st.floats(0.0, 1.0))
def test_truncated_files(importer: Importer, name: str, cut: float) -> None:
    folder = importer.folder()
    path = folder / name
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * cut)])
    importer.attempt(folder, name="mini-truncated")


def _set(record: Any, path: list[Any], value: Any) -> None:
    target = record
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((*prefix, k))
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append((*prefix, i))
            out.extend(_paths(v, (*prefix, i)))
    return out


@FUZZ
@given(
    name=st.sampled_from(FILES[:3]),
    line=st.integers(0, 20),
    which=st.integers(0, 10**6),
    value=json_values,
    fresh_name=st.booleans(),
)
def test_wrong_types_and_huge_fields(
    importer: Importer, name: str, line: int, which: int, value: Any, fresh_name: bool
) -> None:
    folder = importer.folder()
    path = folder / name
    records = [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]
    record = records[line % len(records)]
    paths = _paths(record)
    _set(record, list(paths[which % len(paths)]), value)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    importer.attempt(folder, name=f"mini-{which % 7}" if fresh_name else "mini")


@FUZZ
@given(trick=st.sampled_from(PATH_TRICKS) | st.text(min_size=1, max_size=40), new_id=st.booleans())
def test_artifact_path_tricks(importer: Importer, trick: str, new_id: bool) -> None:
    folder = importer.folder()
    path = folder / "tasks.jsonl"
    records = [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]
    records[1]["artifacts"][0]["path"] = trick
    if new_id:
        records[1]["id"] = "M2-tricked"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    importer.attempt(folder, name="mini-paths")
    # whatever was accepted, nothing from outside the folder was stored
    with importer.db.read() as s:
        from sqlalchemy import select

        from gradercal.db import models as m

        stored = list(s.scalars(select(m.Blob.data)))
    assert all(b"outside the benchmark folder" not in b for b in stored)
    assert all(b"root:" not in b for b in stored)


def test_an_overlong_artifact_path_is_a_validation_error(importer: Importer) -> None:
    folder = importer.folder()
    path = folder / "tasks.jsonl"
    records = [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]
    records[1]["artifacts"][0]["path"] = "artifacts/" + "a" * 5000
    records[1]["id"] = "M2-long"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    importer.attempt(folder, name="mini-paths")


HUGE = [
    ("benchmark.json", "name", "n" * 501),
    ("tasks.jsonl", "id", "t" * 201),
    ("tasks.jsonl", "workflow", "w" * 201),
    ("tasks.jsonl", "domain", "d" * 201),
    ("tasks.jsonl", "answer_format", "f" * 201),
    ("tasks.jsonl", "rubric.0.points", 2**63),
    ("tasks.jsonl", "rubric.0.points", -(2**63) - 1),
    ("tasks.jsonl", "rubric.0.points", 2**31),
    ("tasks.jsonl", "rubric.0.id", "c" * 201),
    ("responses.jsonl", "id", "r" * 201),
    ("responses.jsonl", "model", "m" * 201),
    ("judgments.jsonl", "grader", "g" * 201),
    ("judgments.jsonl", "level", 2**63),
    ("judgments.jsonl", "rationale", "y" * 2_000_000),
    ("tasks.jsonl", "prompt", "p" * 2_000_000),
    ("tasks.jsonl", "prompt", "nul\x00inside"),
    ("responses.jsonl", "text", "nul\x00inside"),
    ("judgments.jsonl", "rationale", "nul\x00inside"),
]


def _known_bug(backend: str, field: str, value: Any) -> str | None:
    """Cases the importer does not handle yet (reported with a fix). None left."""
    del backend, field, value
    return None


def test_huge_fields_on_both_backends(db_url: str, tmp_path: Path) -> None:
    """Values at and beyond every column's limit: imported whole, or refused cleanly.

    The cases the importer does not handle yet are listed by :func:`_known_bug`; this
    test fails on any *other* crash, and also when a known one is fixed (so that the
    list is kept honest).
    """
    backend = "postgres" if "://" in db_url else "sqlite"
    db = open_database(db_url)
    crashed: dict[str, str] = {}
    try:
        repo = Repository(db)
        repo.import_data(read_path(DATA / "mini"))
        for n, (file, field, value) in enumerate(HUGE):
            case = f"{file}:{field}={str(value)[:12]}"
            folder = tmp_path / f"case{n}"
            shutil.copytree(DATA / "mini", folder)
            path = folder / file
            if file.endswith(".json"):
                record = json.loads(path.read_text("utf-8"))
                _set(record, _keys(field), value)
                path.write_text(json.dumps(record), "utf-8")
            else:
                records = [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]
                _set(records[0], _keys(field), value)
                if file == "tasks.jsonl":
                    for r in records:  # new tasks, so that the value is really written
                        r["id"] = f"{r['id']}-{n}"[-200:] if field != "id" else r["id"]
                    (folder / "responses.jsonl").unlink()
                    (folder / "judgments.jsonl").unlink()
                path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
            before = fingerprint(db_url)
            name = f"huge-{n}"
            try:
                data = read_path(folder, repo.catalog(name))
                repo.import_data(benchmark_of(data, name))
            except GradercalError as exc:
                clear_message(exc)
                assert fingerprint(db_url) == before, case
            except Exception as exc:
                crashed[case] = type(exc).__name__
                assert fingerprint(db_url) == before, case  # still one transaction
    finally:
        db.dispose()
    expected = {
        f"{file}:{field}={str(value)[:12]}"
        for file, field, value in HUGE
        if _known_bug(backend, field, value)
    }
    assert set(crashed) == expected, (
        f"unexpected crashes {sorted(set(crashed) - expected)} "
        f"or fixed known bugs {sorted(expected - set(crashed))}: {crashed}"
    )


def _keys(field: str) -> list[Any]:
    return [int(k) if k.isdigit() else k for k in field.split(".")]


# -- the packet reader -------------------------------------------------------------------------
class Packets:
    """A coordinator database with one exported, graded packet to mutate."""

    def __init__(self, root: Path) -> None:
        from gradercal.db.assignments import assign
        from gradercal.db.grading import GradingStore, JudgmentValue
        from gradercal.db.packets import export_packet, open_packet

        self.root = root
        self.url = str(root / "coordinator.sqlite")
        self.db: Database = open_database(self.url)
        Repository(self.db).import_data(read_path(DATA / "mini"))
        assign(self.db, ["fz"], 1, seed=0)
        self.packet = root / "fz.gcpkg"
        export_packet(self.db, "fz", self.packet)
        with open_packet(self.packet, workdir=root / "work") as session:
            store = GradingStore(session.db)
            for item in store.queue("fz"):
                task = store.load_item("fz", item.assignment_id).task
                for c in task.criteria:
                    if c.kind.value == "judgment":
                        store.save_judgment(item.assignment_id, c.id, JudgmentValue(met=True))
        with zipfile.ZipFile(self.packet) as zf:
            self.entries = {n: zf.read(n) for n in zf.namelist()}

    def attempt(self, data: bytes) -> None:
        from gradercal.db.packets import merge_packet

        path = Path(tempfile.mkstemp(dir=self.root, suffix=".gcpkg")[1])
        path.write_bytes(data)
        before = fingerprint(self.url)
        try:
            merge_packet(self.db, path)
        except GradercalError as exc:
            clear_message(exc)
            assert fingerprint(self.url) == before, "a refused packet changed the database"
        else:  # it merged: then it must be the genuine content, and merge again cleanly
            assert merge_packet(self.db, path).changed is False
        finally:
            path.unlink()

    def zipped(self, entries: dict[str, bytes], *, fix_hashes: bool) -> bytes:
        if fix_hashes and MANIFEST in entries:
            try:
                man = json.loads(entries[MANIFEST])
                for name in (EXPORT, DATABASE):
                    if name in entries and isinstance(man.get("files"), dict):
                        man["files"][name] = {
                            "sha256": hashlib.sha256(entries[name]).hexdigest(),
                            "size": len(entries[name]),
                        }
                entries = {**entries, MANIFEST: json.dumps(man).encode()}
            except (ValueError, TypeError, AttributeError):
                pass
        target = Path(tempfile.mkstemp(dir=self.root, suffix=".zip")[1])
        try:
            with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
                for name, data in entries.items():
                    zf.writestr(name, data)
            return target.read_bytes()
        finally:
            target.unlink()


@pytest.fixture(scope="module")
def packets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Packets]:
    p = Packets(tmp_path_factory.mktemp("fuzz-packets"))
    try:
        yield p
    finally:
        p.db.dispose()


@FUZZ
@given(data=st.binary(max_size=4000))
def test_packet_random_bytes(packets: Packets, data: bytes) -> None:
    packets.attempt(data)


@FUZZ
@given(cut=st.integers(0, 10**9), flip=st.integers(0, 10**9), xor=st.integers(1, 255))
def test_packet_truncated_or_bit_flipped(packets: Packets, cut: int, flip: int, xor: int) -> None:
    raw = bytearray(packets.packet.read_bytes())
    variant = flip % 2
    if variant == 0:
        packets.attempt(bytes(raw[: cut % len(raw)]))
    else:
        raw[flip % len(raw)] ^= xor
        packets.attempt(bytes(raw))


@FUZZ
@given(
    name=st.sampled_from([MANIFEST, EXPORT, DATABASE]),
    how=st.sampled_from(["random", "truncate", "flip", "json"]),
    blob=st.binary(max_size=2000),
    at=st.integers(0, 10**9),
    value=json_values,
    fix_hashes=st.booleans(),
)
def test_packet_entries_mutated(
    packets: Packets,
    name: str,
    how: str,
    blob: bytes,
    at: int,
    value: Any,
    fix_hashes: bool,
) -> None:
    entries = dict(packets.entries)
    data = bytearray(entries[name])
    if how == "random":
        data = bytearray(blob)
    elif how == "truncate":
        data = data[: at % (len(data) + 1)]
    elif how == "flip":
        data[at % len(data)] ^= 0x5A
    else:
        try:
            obj = json.loads(bytes(data))
        except ValueError:
            assume(False)
        paths = _paths(obj)
        assume(paths)
        _set(obj, list(paths[at % len(paths)]), value)
        data = bytearray(json.dumps(obj).encode())
    entries[name] = bytes(data)
    packets.attempt(packets.zipped(entries, fix_hashes=fix_hashes))


NAME_TRICKS = [
    "../manifest.json",
    "/manifest.json",
    "..\\packet.sqlite",
    "C:/packet.sqlite",
    "sub/packet.sqlite",
    "packet.sqlite/",
    "./export.json",
    "manifest.json\x00.txt",
    "MANIFEST.JSON",
    "packet.sqlite ",
]


@pytest.mark.filterwarnings("ignore:Duplicate name")
@FUZZ
@given(trick=st.sampled_from(NAME_TRICKS) | st.text(min_size=1, max_size=30), keep=st.booleans())
def test_packet_entry_name_tricks(packets: Packets, trick: str, keep: bool) -> None:
    assume(trick not in (MANIFEST, EXPORT, DATABASE))
    entries = dict(packets.entries)
    if not keep:
        entries.pop(DATABASE)
    entries[trick] = b"x" * 10
    before = set(packets.root.parent.iterdir())
    try:
        blob = packets.zipped(entries, fix_hashes=False)
    except (ValueError, UnicodeEncodeError):
        assume(False)
    packets.attempt(blob)
    assert set(packets.root.parent.iterdir()) == before  # nothing written outside
