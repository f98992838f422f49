"""Computed dashboards kept on disk, so that opening the dashboard again on the same data
reads a file instead of computing (issue #18).

The worker (:mod:`gradercal.ui.dashboard.worker`) writes each dashboard it sends — its
parts as sent: pickled Dashboard fields, prepared tables, drawn charts — into one file
under :func:`disk_key`: what was asked (:func:`~gradercal.ui.dashboard.results.request_key`),
the database (its URL without the password), the database's fingerprint of the data
(``Repository.data_revision``: every part, the adjudications included) and the code that
computed it (:func:`code_fingerprint`: gradercal's source files and the versions of the
libraries the numbers and the charts come from). Any change of the data, of gradercal or
of those libraries is a different key: nothing stale is ever shown, the old file is
simply not asked for again and goes when the directory holds more than
:data:`MAX_FILES` files or :data:`MAX_BYTES` bytes (least recently used first).

A file that cannot be read whole (cut short, written by another version, not ours) is
deleted and counts as absent. Files are written to a temporary name and renamed, so a
reader never sees half a file; the directory is the user's own (mode 0700).

Where: ``$GRADERCAL_DASHBOARD_CACHE`` when set (``off`` turns the cache off), else
``dashboard/`` in the user cache directory (platformdirs). Qt-free, pandas-free: the
worker answers from here before importing the engines.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gradercal.ui.dashboard.results import StoredResult, request_key

__all__ = [
    "ENV",
    "MAX_BYTES",
    "MAX_FILES",
    "DiskCache",
    "cache_dir",
    "code_fingerprint",
    "data_key",
    "disk_key",
]

#: The environment variable naming the directory (``off``: no cache on disk).
ENV = "GRADERCAL_DASHBOARD_CACHE"
#: Files kept at most, and their total size.
MAX_FILES = 16
MAX_BYTES = 1 << 30
_MAGIC = b"gradercal dashboard 1\n"
_SUFFIX = ".dash"
#: The libraries a result's numbers, tables or charts depend on.
_LIBRARIES = (
    "numpy",
    "pandas",
    "scipy",
    "scikit-learn",
    "matplotlib",
    "krippendorff",
    "SQLAlchemy",
)
_OFF = ("", "0", "off", "no", "false", "none")


def cache_dir() -> Path | None:
    """The directory results are kept in (None: the cache is off)."""
    value = os.environ.get(ENV)
    if value is not None:
        return None if value.strip().lower() in _OFF else Path(value).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("gradercal", appauthor=False)) / "dashboard"


@functools.cache
def code_fingerprint() -> str:
    """A digest of gradercal's source files and of the Python and library versions: a
    result computed by other code is never taken for this code's."""
    from importlib import metadata

    import gradercal

    h = hashlib.blake2b(digest_size=16)
    h.update(sys.version.encode())
    for name in _LIBRARIES:
        try:
            h.update(f"{name}={metadata.version(name)};".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{name}=-;".encode())
    root = Path(gradercal.__file__).resolve().parent
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def data_key(url: str, revision: Mapping[str, str]) -> str:
    """What a result was computed on: this code, the database at ``url`` (its password
    left out) and its data of ``revision`` — a digest, the first part of a file's name."""
    from gradercal.db.session import resolve_url

    where = resolve_url(url).render_as_string(hide_password=True)
    return _digest(repr((code_fingerprint(), where, sorted(revision.items()))))[:12].hex()


def disk_key(request: Any, url: str, revision: Mapping[str, str]) -> str:
    """The key of ``request`` computed on the data of ``revision`` in the database at
    ``url`` by this code: ``<data key>/<what was asked>``."""
    return f"{data_key(url, revision)}/{request_key(request)}"


def _digest(key: str) -> bytes:
    return hashlib.blake2b(key.encode(), digest_size=32).digest()


class DiskCache:
    """The results kept in one directory (created on the first write)."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        max_files: int = MAX_FILES,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self.directory = Path(directory)
        self.max_files = max_files
        self.max_bytes = max_bytes

    @classmethod
    def from_env(cls) -> DiskCache | None:
        """The cache :func:`cache_dir` names (None: off)."""
        where = cache_dir()
        return None if where is None else cls(where)

    def path(self, key: str) -> Path:
        data, _, _asked = key.partition("/")
        return self.directory / f"{data}-{_digest(key)[:12].hex()}{_SUFFIX}"

    def has_data(self, data: str) -> bool:
        """Whether any result computed on the data of :func:`data_key` ``data`` is kept
        (none: a first open computes whatever is asked)."""
        return any(self.directory.glob(f"{data}-*{_SUFFIX}"))

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.path(key).is_file()

    def get(self, key: str) -> StoredResult | None:
        """The result kept under ``key``, or None (absent or unreadable: then deleted)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        try:
            if not data.startswith(_MAGIC):
                raise ValueError("not a dashboard file")
            body = memoryview(data)[len(_MAGIC) :]
            stored = pickle.loads(body)
            if stored.get("key") != _digest(key):
                raise ValueError("another key")
            parts = [(k, p, d) for k, p, d in stored["parts"]]
            if not all(isinstance(p, bytes) and isinstance(d, bytes) for _k, p, d in parts):
                raise ValueError("not parts")
            result = StoredResult(
                parts=parts,
                phases=dict(stored.get("phases", {})),
                seconds=float(stored.get("seconds", 0.0)),
            )
        except Exception:  # cut short, another version's, not ours: absent
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: evicted last
        return result

    def put(self, key: str, stored: StoredResult) -> Path | None:
        """Keep ``stored`` under ``key`` (None: it could not be written; a cache only)."""
        body = {
            "key": _digest(key),
            "parts": stored.parts,
            "phases": stored.phases,
            "seconds": stored.seconds,
        }
        path = self.path(key)
        tmp: str | None = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, tmp = tempfile.mkstemp(prefix=".part-", dir=self.directory)
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC)
                pickle.dump(body, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
            tmp = None
        except OSError:
            return None
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        self.evict()
        return path

    def evict(self) -> None:
        """Drop the least recently used files beyond :attr:`max_files` / :attr:`max_bytes`."""
        files: list[tuple[float, int, Path]] = []
        for path in self.directory.glob("*" + _SUFFIX):
            with contextlib.suppress(OSError):
                st = path.stat()
                files.append((st.st_mtime, st.st_size, path))
        files.sort(reverse=True)  # newest first
        total = 0
        for i, (_mtime, size, path) in enumerate(files):
            total += size
            if i >= self.max_files or (i > 0 and total > self.max_bytes):
                with contextlib.suppress(OSError):
                    path.unlink()

    def clear(self) -> int:
        """Delete every kept result; returns how many."""
        n = 0
        for path in self.directory.glob("*" + _SUFFIX):
            with contextlib.suppress(OSError):
                path.unlink()
                n += 1
        return n
