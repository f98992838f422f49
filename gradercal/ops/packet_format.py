"""The grading packet file format (``.gcpkg``): manifest, hashes, seal, safe (un)packing.

A packet is a ZIP archive with exactly three entries::

    manifest.json   what the packet is: format, ids, grader, file hashes, the seal
    export.json     the export record: the assignments handed out and the grader's
                    judgments, task reviews and queue state at export (never changes)
    packet.sqlite   a gradercal database holding only what the grader needs; the grader
                    grades into it (offline), so it changes

``manifest.files`` lists the sha256 and size of ``export.json`` and ``packet.sqlite``;
any mismatch means a damaged or altered file. The **seal** is an HMAC-SHA256, keyed with
a secret that never leaves the exporting database, over the fields fixed at export
(format, ids, grader, benchmark, creation time and the hash of ``export.json``). The
grader's app rewrites ``packet.sqlite`` and the manifest's file list on every save but
cannot forge the seal, so the export record (which assignments, which starting values)
cannot be altered without the merge noticing.

Reading is defensive: only the three known names are accepted (no directories, no
links, no ``..``, no absolute or drive paths, no duplicates), entries must be stored or
deflated and not encrypted, and sizes, counts and compression ratios are limited
(:class:`Limits`) before and while extracting, against archive bombs. Every problem is a
:class:`PacketError` with a message for people.

This module is part of the core: it imports neither SQLAlchemy nor Qt.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import stat
import uuid
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, TypeGuard

from gradercal.errors import GradercalError

__all__ = [
    "DATABASE",
    "EXPORT",
    "FORMAT",
    "FORMAT_VERSION",
    "MANIFEST",
    "SUFFIX",
    "FileEntry",
    "Limits",
    "Manifest",
    "PacketError",
    "canonical_json",
    "compute_seal",
    "decide",
    "read_packet",
    "sha256_file",
    "utc_stamp",
    "verify_seal",
    "write_packet",
]

#: ``format`` field of every manifest.
FORMAT = "gradercal-packet"
#: Version of the packet format written by this release (and the newest it reads).
FORMAT_VERSION = 1
SUFFIX = ".gcpkg"
MANIFEST = "manifest.json"
EXPORT = "export.json"
DATABASE = "packet.sqlite"
#: The only entry names a packet may hold.
ENTRIES = (MANIFEST, EXPORT, DATABASE)

_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_CHUNK = 1 << 20


class PacketError(GradercalError):
    """A packet cannot be written, read or merged; the message says why."""


@dataclass(frozen=True)
class Limits:
    """Bounds checked before and while unpacking a packet."""

    max_entries: int = 16
    max_manifest_bytes: int = 1 << 20
    max_export_bytes: int = 512 << 20
    max_database_bytes: int = 32 << 30
    max_total_bytes: int = 32 << 30
    #: uncompressed ÷ compressed size above which a large entry is refused as a bomb
    max_ratio: float = 200.0
    #: entries smaller than this are never refused for their ratio
    ratio_floor_bytes: int = 8 << 20

    def for_entry(self, name: str) -> int:
        if name == MANIFEST:
            return self.max_manifest_bytes
        if name == EXPORT:
            return self.max_export_bytes
        return self.max_database_bytes


@dataclass(frozen=True)
class FileEntry:
    sha256: str
    size: int


@dataclass(frozen=True)
class Manifest:
    """``manifest.json``: what a packet is and the hashes of its other entries."""

    packet_id: str
    database_id: str
    benchmark: str
    grader: str
    created_at: str
    files: Mapping[str, FileEntry]
    seal: str = ""
    generation: int = 0
    saved_at: str = ""
    gradercal_version: str = ""
    schema_revision: str = ""
    counts: Mapping[str, int] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION

    def sealed_fields(self) -> dict[str, Any]:
        """The fields fixed at export, which the seal covers."""
        export = self.files.get(EXPORT)
        return {
            "format": FORMAT,
            "format_version": self.format_version,
            "packet_id": self.packet_id,
            "database_id": self.database_id,
            "benchmark": self.benchmark,
            "grader": self.grader,
            "created_at": self.created_at,
            "export_sha256": export.sha256 if export else None,
            "export_size": export.size if export else None,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": self.format_version,
            "packet_id": self.packet_id,
            "database_id": self.database_id,
            "benchmark": self.benchmark,
            "grader": self.grader,
            "created_at": self.created_at,
            "generation": self.generation,
            "saved_at": self.saved_at,
            "gradercal_version": self.gradercal_version,
            "schema_revision": self.schema_revision,
            "counts": dict(self.counts),
            "files": {k: {"sha256": v.sha256, "size": v.size} for k, v in self.files.items()},
            "seal": self.seal,
        }

    def to_json(self) -> bytes:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False).encode("utf-8")

    def with_database(self, entry: FileEntry, saved_at: str) -> Manifest:
        """The manifest after the grader saved: new database hash, next generation."""
        files = {**self.files, DATABASE: entry}
        return replace(self, files=files, generation=self.generation + 1, saved_at=saved_at)

    @classmethod
    def from_json(cls, raw: bytes) -> Manifest:
        """Parse and validate ``manifest.json``.

        Raises:
            PacketError: not JSON, not a packet manifest, a newer format, or a bad field.
        """
        try:
            value = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise PacketError(f"{MANIFEST} is not valid JSON ({exc})") from None
        if not isinstance(value, dict):
            raise PacketError(f"{MANIFEST} must hold a JSON object")
        if value.get("format") != FORMAT:
            raise PacketError(f"{MANIFEST}: not a gradercal packet (format is not {FORMAT!r})")
        version = value.get("format_version")
        if not _is_int(version) or version < 1:
            raise PacketError(f"{MANIFEST}: format_version must be a positive whole number")
        if version > FORMAT_VERSION:
            raise PacketError(
                f"packet format version {version} is newer than this gradercal reads "
                f"({FORMAT_VERSION}); upgrade gradercal"
            )
        problems: list[str] = []

        def text(key: str, *, pattern: re.Pattern[str] | None = None, limit: int = 500) -> str:
            v = value.get(key)
            if not isinstance(v, str) or not v or len(v) > limit:
                problems.append(f"{key} must be a non-empty string of at most {limit} characters")
                return ""
            if pattern is not None and not pattern.match(v):
                problems.append(f"{key} is malformed")
            return v

        packet_id = text("packet_id", pattern=_UUID)
        database_id = text("database_id", pattern=_UUID)
        benchmark = text("benchmark")
        grader = text("grader", limit=200)
        created_at = text("created_at", limit=64)
        seal = text("seal", pattern=_HEX64)
        generation = value.get("generation", 0)
        if not _is_int(generation) or generation < 0:
            problems.append("generation must be a whole number ≥ 0")
            generation = 0
        optional: dict[str, str] = {}
        for key in ("saved_at", "gradercal_version", "schema_revision"):
            v = value.get(key, "")
            if not isinstance(v, str) or len(v) > 200:
                problems.append(f"{key} must be a string")
                v = ""
            optional[key] = v
        counts_raw = value.get("counts", {})
        counts: dict[str, int] = {}
        if not isinstance(counts_raw, dict) or len(counts_raw) > 100:
            problems.append("counts must be an object")
        else:
            for k, v in counts_raw.items():
                if not isinstance(k, str) or not _is_int(v) or v < 0:
                    problems.append("counts must map names to whole numbers")
                    break
                counts[k] = v
        files_raw = value.get("files")
        files: dict[str, FileEntry] = {}
        if not isinstance(files_raw, dict) or set(files_raw) != {EXPORT, DATABASE}:
            problems.append(f"files must list exactly {EXPORT} and {DATABASE}")
        else:
            for name, entry in files_raw.items():
                digest = entry.get("sha256") if isinstance(entry, dict) else None
                size = entry.get("size") if isinstance(entry, dict) else None
                if not isinstance(digest, str) or not _HEX64.match(digest):
                    problems.append(f"files.{name}.sha256 must be 64 hex digits")
                elif not _is_int(size) or size < 0:
                    problems.append(f"files.{name}.size must be a whole number ≥ 0")
                else:
                    files[name] = FileEntry(digest, size)
        if problems:
            raise PacketError(f"{MANIFEST} is invalid: " + "; ".join(problems))
        return cls(
            packet_id=packet_id,
            database_id=database_id,
            benchmark=benchmark,
            grader=grader,
            created_at=created_at,
            files=files,
            seal=seal,
            generation=int(generation),
            saved_at=optional["saved_at"],
            gradercal_version=optional["gradercal_version"],
            schema_revision=optional["schema_revision"],
            counts=counts,
            format_version=version,
        )


def _is_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def new_packet_id() -> str:
    return str(uuid.uuid4())


def utc_stamp() -> str:
    """Now, as an ISO 8601 UTC timestamp."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def canonical_json(obj: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8: the form that is hashed and sealed."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def compute_seal(key: bytes, manifest: Manifest) -> str:
    """HMAC-SHA256 of the manifest's sealed fields under the exporting database's key."""
    return hmac.new(key, canonical_json(manifest.sealed_fields()), hashlib.sha256).hexdigest()


def verify_seal(key: bytes, manifest: Manifest) -> bool:
    return hmac.compare_digest(compute_seal(key, manifest), manifest.seal)


def sha256_file(path: Path) -> FileEntry:
    h = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return FileEntry(h.hexdigest(), size)


# -- writing ------------------------------------------------------------------------------
def write_packet(out_path: Path, manifest: Manifest, export_file: Path, database: Path) -> None:
    """Write a packet atomically: a temporary file next to ``out_path``, fsynced, then renamed.

    A crash at any moment leaves either the old file or the new one, never half of one.
    ``manifest.files`` must already hold the entries' hashes.
    """
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(f".{out_path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with tmp.open("wb") as raw:
            with zipfile.ZipFile(raw, "w", compression=zipfile.ZIP_DEFLATED) as zf:
                zf.writestr(_info(MANIFEST), manifest.to_json(), compresslevel=6)
                zf.write(export_file, arcname=EXPORT, compresslevel=6)
                zf.write(database, arcname=DATABASE, compresslevel=1)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, out_path)
    except OSError as exc:
        raise PacketError(f"cannot write {out_path}: {exc.strerror or exc}") from exc
    finally:
        if tmp.exists():
            tmp.unlink()
    _fsync_dir(out_path.parent)


def _info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=datetime.now(UTC).timetuple()[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (stat.S_IFREG | 0o644) << 16
    return info


def _fsync_dir(folder: Path) -> None:
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -- reading ------------------------------------------------------------------------------
def check_entry_name(name: str) -> None:
    """Refuse any entry name but the three known ones, explaining path tricks.

    Raises:
        PacketError: the name escapes the folder, is absolute, or is not a packet entry.
    """
    shown = name if len(name) <= 80 else name[:77] + "…"
    if "\x00" in name:
        raise PacketError(f"packet entry {shown!r} contains a NUL byte")
    posix = PurePosixPath(name.replace("\\", "/"))
    if (
        name.startswith(("/", "\\"))
        or PureWindowsPath(name).drive
        or posix.is_absolute()
        or ".." in posix.parts
    ):
        raise PacketError(f"packet entry {shown!r} would be written outside the packet folder")
    if name not in ENTRIES:
        raise PacketError(
            f"unexpected packet entry {shown!r} (a packet holds only {', '.join(ENTRIES)})"
        )


def read_packet(path: Path, dest: Path, limits: Limits | None = None) -> Manifest:
    """Check a packet and extract its three entries into the folder ``dest``.

    Returns the manifest, after checking that ``export.json`` and ``packet.sqlite``
    match its hashes. The seal is *not* checked here (that needs the exporting
    database's key); see :func:`verify_seal`.

    Raises:
        PacketError: unreadable, truncated, not a packet, unsafe, too large, or not
            matching its manifest. Nothing outside ``dest`` is written.
    """
    lim = limits or Limits()
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise PacketError(f"cannot read packet {path}: {exc.strerror or exc}") from None
    if not path.is_file():
        raise PacketError(f"{path} is not a file")
    if size == 0:
        raise PacketError(f"{path} is empty")
    if size > lim.max_total_bytes:
        raise PacketError(f"{path} is larger than the packet limit ({lim.max_total_bytes} bytes)")
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise PacketError(
            f"{path} is not a gradercal packet, or it is truncated or damaged (not a ZIP archive)"
        ) from None
    except Exception as exc:  # zipfile raises OSError, ValueError, EOFError … on garbage
        raise PacketError(f"{path} cannot be read as a packet: {_describe(exc)}") from None
    with zf:
        infos = _checked_infos(zf, lim)
        dest.mkdir(parents=True, exist_ok=True)
        got: dict[str, FileEntry] = {}
        for info in infos:
            got[info.filename] = _extract(zf, info, dest, lim)
    missing = [n for n in ENTRIES if n not in got]
    if missing:
        raise PacketError(f"packet lacks {', '.join(missing)}; it is not a complete packet")
    manifest = Manifest.from_json((dest / MANIFEST).read_bytes())
    for name in (EXPORT, DATABASE):
        want, have = manifest.files[name], got[name]
        if want != have:
            raise PacketError(
                f"{name} does not match the packet's manifest (sha256 or size differs): "
                "the packet is damaged or was altered"
            )
    return manifest


def _checked_infos(zf: zipfile.ZipFile, lim: Limits) -> list[zipfile.ZipInfo]:
    try:
        infos = zf.infolist()
    except Exception as exc:
        raise PacketError(f"packet index is unreadable: {_describe(exc)}") from None
    if len(infos) > lim.max_entries:
        raise PacketError(f"packet has {len(infos)} entries; at most {lim.max_entries} allowed")
    seen: set[str] = set()
    total = 0
    for info in infos:
        name = info.filename
        check_entry_name(name)
        if name in seen:
            raise PacketError(f"packet entry {name!r} appears twice")
        seen.add(name)
        mode = (info.external_attr >> 16) & 0o170000
        if info.is_dir() or mode not in (0, stat.S_IFREG):
            raise PacketError(f"packet entry {name!r} is not a regular file")
        if info.flag_bits & 0x1:
            raise PacketError(f"packet entry {name!r} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise PacketError(f"packet entry {name!r} uses an unsupported compression method")
        limit = lim.for_entry(name)
        if info.file_size > limit:
            raise PacketError(
                f"packet entry {name!r} would unpack to {info.file_size} bytes; "
                f"the limit is {limit}"
            )
        total += info.file_size
        if total > lim.max_total_bytes:
            raise PacketError(f"packet would unpack to more than {lim.max_total_bytes} bytes")
        if info.file_size > lim.ratio_floor_bytes and info.file_size > lim.max_ratio * max(
            info.compress_size, 1
        ):
            raise PacketError(
                f"packet entry {name!r} is compressed {info.file_size / max(info.compress_size, 1):.0f}:1; "
                "refused as a likely archive bomb"
            )
    return infos


def _extract(zf: zipfile.ZipFile, info: zipfile.ZipInfo, dest: Path, lim: Limits) -> FileEntry:
    """Stream one entry to ``dest/<name>``, counting bytes against the declared size."""
    target = dest / info.filename  # the name is one of ENTRIES: no path components
    limit = min(info.file_size, lim.for_entry(info.filename))
    h = hashlib.sha256()
    written = 0
    try:
        with zf.open(info) as src, target.open("wb") as out:
            while chunk := src.read(_CHUNK):
                written += len(chunk)
                if written > limit:
                    raise PacketError(
                        f"packet entry {info.filename!r} is larger than it declares; refused"
                    )
                h.update(chunk)
                out.write(chunk)
    except PacketError:
        raise
    except Exception as exc:  # BadZipFile (CRC), zlib.error, EOFError on truncation …
        raise PacketError(
            f"packet entry {info.filename!r} is damaged or truncated: {_describe(exc)}"
        ) from None
    if written != info.file_size:
        raise PacketError(f"packet entry {info.filename!r} is truncated")
    return FileEntry(h.hexdigest(), written)


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "…"


# -- merge decisions ------------------------------------------------------------------------
def decide(base: Any, packet: Any, current: Any, *, current_is_ours: bool = False) -> str:
    """What a merge does with one value, given three versions of it.

    ``base`` is the value at export (None: there was none), ``packet`` the value in the
    packet now, ``current`` the value in the database now (None: none).
    ``current_is_ours`` says the database value was written by an earlier merge of this
    same packet (so replacing it loses nothing).

    Returns:
        ``"unchanged"`` (the grader did not change it: nothing to do), ``"same"`` (the
        database already holds the packet's value), ``"apply"`` (write the packet's
        value), or ``"conflict"`` (both changed since the export: keep both).
    """
    if packet == base:
        return "unchanged"
    if packet == current:
        return "same"
    if current is None or current == base or current_is_ours:
        return "apply"
    return "conflict"
