"""Grading in a packet, offline: the working folder beside the packet file, and saving back.

:func:`open_packet` unpacks a packet into a working folder next to it and returns a
:class:`PacketSession` whose ``db`` the app grades into with
:class:`~gradercal.db.grading.GradingStore`; :meth:`PacketSession.save` packs the working
database back into the file (atomically). Every judgment is committed to the working
database at once, so a crash loses nothing: reopening the packet resumes from the
working folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from gradercal._util.scratch import sweep_stale
from gradercal.db.packets._common import finish_sqlite
from gradercal.db.packets.read import connect_packet_db
from gradercal.db.session import open_database
from gradercal.ops.packet_format import (
    DATABASE,
    EXPORT,
    MANIFEST,
    Manifest,
    PacketError,
    read_packet,
    sha256_file,
    utc_stamp,
    write_packet,
)

STATE = "state.json"


class PacketSession:
    """A packet opened for grading: ``db`` is the working database inside ``workdir``.

    Grade into ``db`` with :class:`~gradercal.db.grading.GradingStore` (as grader
    :attr:`grader` in benchmark :attr:`benchmark`); every judgment is committed there at
    once. :meth:`save` packs the working database back into the packet file (atomic
    replace); :meth:`close` saves (by default) and releases the database.
    """

    def __init__(self, path: Path, workdir: Path, manifest: Manifest, warnings: list[str]) -> None:
        self.path = path
        self.workdir = workdir
        self.manifest = manifest
        self.warnings = warnings
        self.db = open_database(workdir / DATABASE)
        self._closed = False

    @property
    def grader(self) -> str:
        return self.manifest.grader

    @property
    def benchmark(self) -> str:
        return self.manifest.benchmark

    def __enter__(self) -> PacketSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def has_unsaved_changes(self) -> bool:
        """True when the working database holds work not yet packed into the file."""
        state = load_state(self.workdir)
        return state is None or state.get("fingerprint") != grading_fingerprint(
            self.workdir / DATABASE
        )

    def save(self) -> Manifest:
        """Pack the working database into the packet file (atomically). Returns the manifest."""
        if self._closed:
            raise PacketError("this packet is closed")
        snap = self.workdir / f".snapshot-{os.getpid()}.sqlite"
        try:
            _snapshot(self.workdir / DATABASE, snap)
            fp = grading_fingerprint(snap)
            manifest = self.manifest.with_database(sha256_file(snap), utc_stamp())
            write_packet(self.path, manifest, self.workdir / EXPORT, snap)
        except (OSError, sqlite3.Error, PacketError) as exc:
            raise PacketError(
                f"could not save {self.path.name}: {exc}. Nothing is lost: every judgment "
                f"is in the working folder {self.workdir}, and saving again will retry."
            ) from None
        finally:
            for p in (snap, snap.with_name(snap.name + "-wal"), snap.with_name(snap.name + "-shm")):
                if p.exists():
                    p.unlink()
        self.manifest = manifest
        _atomic_write(self.workdir / MANIFEST, manifest.to_json())
        _save_state(self.workdir, manifest, fp)
        return manifest

    def close(self, *, save: bool = True) -> None:
        if self._closed:
            return
        try:
            if save and self.has_unsaved_changes():
                self.save()
        finally:
            self.db.dispose()
            self._closed = True


def default_workdir(path: Path) -> Path:
    """The working folder of a packet: next to it, ``NAME.gcpkg.work``.

    When the packet's folder is not writable (a read-only share, a mail attachment
    folder), a folder in the user data directory named after the packet's path instead.
    """
    beside = path.with_name(path.name + ".work")
    if os.access(path.parent, os.W_OK):
        return beside
    from platformdirs import user_data_dir

    tag = hashlib.sha256(str(path).encode("utf-8")).hexdigest()[:12]
    return Path(user_data_dir("gradercal", appauthor=False)) / "packets" / f"{path.stem}-{tag}"


def open_packet(
    path: str | os.PathLike[str], *, workdir: str | os.PathLike[str] | None = None
) -> PacketSession:
    """Open a packet for grading (see :class:`PacketSession`).

    The packet is checked (archive safety, manifest hashes) and unpacked into
    ``workdir`` (default: :func:`default_workdir`). A working folder left by an earlier
    session is reused when the file still holds what that session last saved; work it
    holds that was not packed yet is packed at once. Otherwise (the file was replaced
    or saved elsewhere in the meantime) the old working folder is moved aside
    (``….previous-<time>``, never deleted) and a warning says where.

    Raises:
        PacketError: the packet is damaged or unsafe.
    """
    src = Path(path).expanduser().absolute()
    work = Path(workdir).expanduser().absolute() if workdir is not None else default_workdir(src)
    try:
        return _open_packet(src, work)
    except OSError as exc:
        raise PacketError(
            f"cannot open the packet {src} for grading (working folder {work}): "
            f"{exc.strerror or exc}"
        ) from None


def _open_packet(src: Path, work: Path) -> PacketSession:
    work.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(".incoming-", work.parent)  # left by a killed opening
    incoming = Path(tempfile.mkdtemp(prefix=f".incoming-{os.getpid()}-", dir=work.parent))
    warnings: list[str] = []
    try:
        manifest = read_packet(src, incoming)
        _check_grading_db(incoming / DATABASE)
        fresh = grading_fingerprint(incoming / DATABASE, immutable=True)
        state = load_state(work)
        reuse = False
        if work.exists():
            current = grading_fingerprint(work / DATABASE) if (work / DATABASE).exists() else None
            if (
                state is not None
                and state.get("packet_id") == manifest.packet_id
                and state.get("fingerprint") == fresh
                and current is not None
            ):
                reuse = True
            elif current == fresh:
                shutil.rmtree(work)
            else:
                aside = work.with_name(f"{work.name}.previous-{_stamp()}")
                work.rename(aside)
                warnings.append(
                    f"the working folder of {src.name} did not match the packet file (the "
                    f"file was replaced or saved elsewhere); it was kept in {aside}"
                )
        if reuse:
            manifest = Manifest.from_json((work / MANIFEST).read_bytes())
        else:
            work.mkdir(parents=True)
            for name in (MANIFEST, EXPORT, DATABASE):
                os.replace(incoming / name, work / name)
            _save_state(work, manifest, fresh)
    finally:
        shutil.rmtree(incoming, ignore_errors=True)
    session = PacketSession(src, work, manifest, warnings)
    if reuse and session.has_unsaved_changes():
        session.save()
        warnings.append("grading not yet saved into the packet by an earlier session was recovered")
    return session


def _check_grading_db(path: Path) -> None:
    conn = connect_packet_db(path)
    try:
        result = [r[0] for r in conn.execute("PRAGMA quick_check(3)")]
    except sqlite3.Error as exc:
        raise PacketError(f"the packet's database is damaged: {exc}") from None
    finally:
        conn.close()
    if result != ["ok"]:
        raise PacketError(f"the packet's database is damaged: {'; '.join(map(str, result))[:300]}")


def _snapshot(src: Path, dst: Path) -> None:
    """A consistent copy of a live SQLite database (online backup API), as one file."""
    source = sqlite3.connect(str(src), timeout=30)
    try:
        target = sqlite3.connect(str(dst))
        try:
            source.backup(target)
        finally:
            target.close()
    finally:
        source.close()
    finish_sqlite(dst)


def grading_fingerprint(path: Path, *, immutable: bool = False) -> str:
    """Hash of everything grading writes (judgments, history, queue state, reviews)."""
    flags = "mode=ro&immutable=1" if immutable else "mode=ro"
    conn = sqlite3.connect(f"file:{quote(str(path))}?{flags}", uri=True, timeout=30)
    h = hashlib.sha256()
    try:
        conn.execute("BEGIN")
        for table in ("grader", "assignment", "judgment", "revision", "task_review"):
            h.update(table.encode())
            for row in conn.execute(f'SELECT * FROM "{table}" ORDER BY 1'):
                h.update(repr(row).encode())
        conn.execute("ROLLBACK")
    except sqlite3.Error as exc:
        raise PacketError(f"cannot read the working database {path}: {exc}") from None
    finally:
        conn.close()
    return h.hexdigest()


def load_state(work: Path) -> dict[str, Any] | None:
    try:
        value = json.loads((work / STATE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _save_state(work: Path, manifest: Manifest, fingerprint: str) -> None:
    _atomic_write(
        work / STATE,
        json.dumps(
            {
                "packet_id": manifest.packet_id,
                "generation": manifest.generation,
                "fingerprint": fingerprint,
            }
        ).encode("utf-8"),
    )


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
