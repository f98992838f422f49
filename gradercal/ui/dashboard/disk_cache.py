"""Computed dashboards kept on disk, so that opening the dashboard again on the same data
reads a file instead of computing (issue #18).

The worker (:mod:`gradercal.ui.dashboard.worker`) writes each dashboard it sends — its
parts as sent: pickled Dashboard fields, prepared tables, drawn charts — into one file
under :func:`disk_key`: what was asked (:func:`~gradercal.ui.dashboard.results.request_key`),
the database (its URL without the password), the database's fingerprint of the data
(``Repository.data_revision``: the database's own id, every part, the adjudications
included, a digest of every verdict's values) and the code that
computed it (:func:`code_fingerprint`: gradercal's source files and the versions of the
libraries the numbers and the charts come from). Any change of the data, of gradercal or
of those libraries is a different key: nothing stale is ever shown, the old file is
simply not asked for again and goes when the directory holds more than
:data:`MAX_FILES` files or :data:`MAX_BYTES` bytes (least recently used first).

A result may answer other keys too (:meth:`DiskCache.put`'s ``aliases``: a request
without a judge also answers the same request naming the judge it resolved to): those
names are hard links to its file, evicted with it.

A file that cannot be read whole (cut short, written by another version, not ours) is
deleted and counts as absent. Files are written to a temporary name and renamed, so a
reader never sees half a file.

Nothing is unpickled that this user did not write. The directory must be the user's own
and writable by nobody else (mode 0700 when created here): one that another user could
write to (a shared 0777 or 1777 directory, another owner) is refused — nothing read from
it, nothing written, and a note on stderr once. A file not owned by the user, or not a
regular file, is absent. Each file carries an HMAC-SHA256, under a secret key of the
user's (:func:`secret_key`), of the key it was written under and of its bytes; it is
checked before anything is unpickled, and a file failing it is deleted as damaged.

Where: ``$GRADERCAL_DASHBOARD_CACHE`` when set (``off`` turns the cache off), else
``dashboard/`` in the user cache directory (platformdirs); the secret key in
``$GRADERCAL_DASHBOARD_KEY`` when set, else ``dashboard-cache.key`` in the user data
directory (32 random bytes, mode 0600, made on first use; never in the cache directory).
Qt-free, pandas-free: the worker answers from here before importing the engines.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import os
import pickle
import secrets
import stat
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gradercal.ui.dashboard.protocol import Part
from gradercal.ui.dashboard.results import StoredResult, request_key

if TYPE_CHECKING:
    from gradercal.ui.dashboard.data import Request
    from gradercal.ui.dashboard.results import PickledRequest

__all__ = [
    "ENV",
    "ENV_KEY",
    "MAX_BYTES",
    "MAX_FILES",
    "DiskCache",
    "cache_dir",
    "code_fingerprint",
    "data_key",
    "disk_key",
    "secret_key",
]

#: The environment variable naming the directory (``off``: no cache on disk).
ENV = "GRADERCAL_DASHBOARD_CACHE"
#: The environment variable naming the file of the secret key the files are signed with.
ENV_KEY = "GRADERCAL_DASHBOARD_KEY"
#: Files kept at most, and their total size.
MAX_FILES = 16
MAX_BYTES = 1 << 30
#: A file: this line, the HMAC (:data:`_MAC_SIZE` bytes), then the pickle.
#: The files' format: 3 names parts by :class:`~gradercal.ui.dashboard.protocol.Part`
#: (2: by ``"dash:<field>"``-style strings); a file of another format is absent.
_MAGIC = b"gradercal dashboard 3\n"
_MAC_SIZE = 32
_KEY_SIZE = 32
_SUFFIX = ".dash"
_ALIAS = ".alias"
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


def key_file() -> Path:
    """Where the secret key is kept (:data:`ENV_KEY`, else the user data directory)."""
    value = os.environ.get(ENV_KEY)
    if value:
        return Path(value).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("gradercal", appauthor=False)) / "dashboard-cache.key"


def secret_key(path: Path | None = None) -> bytes:
    """The user's secret key for the files' HMAC, made (32 random bytes, mode 0600, its
    directory 0700 when made here) if there is none yet.

    Raises:
        OSError: it cannot be read or made, or it is not the user's alone (another owner,
            readable or writable by others, not a regular file): no cache then.
    """
    path = key_file() if path is None else path
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # made meanwhile by another process: read that one
            return secret_key(path)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(_KEY_SIZE))
        return secret_key(path)
    with os.fdopen(fd, "rb") as f:
        problem = _not_private(os.fstat(f.fileno()), directory=False)
        if problem:
            raise PermissionError(f"{path}: the dashboard cache's key {problem}")
        key = f.read(_KEY_SIZE + 1)
    if len(key) != _KEY_SIZE:
        raise OSError(f"{path}: the dashboard cache's key is not {_KEY_SIZE} bytes")
    return key


def _not_private(st: os.stat_result, directory: bool) -> str | None:
    """Why a file or directory is not the user's alone (None: it is)."""
    kind = "a directory" if directory else "a regular file"
    if not (stat.S_ISDIR(st.st_mode) if directory else stat.S_ISREG(st.st_mode)):
        return f"is not {kind}"
    getuid = getattr(os, "getuid", None)
    if getuid is None:  # no POSIX owners and modes (Windows): the HMAC alone
        return None
    if st.st_uid != getuid():
        return f"is owned by another user (uid {st.st_uid})"
    others = 0o022 if directory else 0o077
    if st.st_mode & others:
        what = "writable" if directory else "readable or writable"
        return f"is {what} by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


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


def disk_key(request: PickledRequest | Request, url: str, revision: Mapping[str, str]) -> str:
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
        key: bytes | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.max_files = max_files
        self.max_bytes = max_bytes
        #: the secret key the files are signed with (None: :func:`secret_key`, on first use)
        self._key = key
        #: why the cache is not used, once said (None: it is)
        self._refused: str | None = None

    def usable(self) -> bool:
        """Whether the directory (if it exists) is the user's alone and the secret key
        can be had; the first refusal is said on stderr. Asked before every read and
        write: a directory opened to others later is refused from then on."""
        problem = None
        try:
            st = os.stat(self.directory)
        except FileNotFoundError:
            pass
        except OSError as exc:
            problem = f"{self.directory}: {exc.strerror or exc}"
        else:
            why = _not_private(st, directory=True)
            problem = None if why is None else f"{self.directory} {why}"
        if problem is None and self._key is None:
            try:
                self._key = secret_key()
            except OSError as exc:
                problem = str(exc)
        if problem is not None:
            if self._refused != problem:
                print(f"gradercal: dashboard cache not used: {problem}", file=sys.stderr)
            self._refused = problem
            return False
        self._refused = None
        return True

    def _mac(self, body: bytes | memoryview) -> bytes:
        """The HMAC of a file's pickle (which names the keys it answers)."""
        assert self._key is not None
        mac = hmac.new(self._key, _MAGIC, hashlib.sha256)
        mac.update(body)
        return mac.digest()

    @classmethod
    def from_env(cls) -> DiskCache | None:
        """The cache :func:`cache_dir` names (None: off)."""
        where = cache_dir()
        return None if where is None else cls(where)

    def path(self, key: str, suffix: str = _SUFFIX) -> Path:
        """The file of ``key`` (``suffix`` :data:`_ALIAS`: its other name, a hard link
        to the file of the key it was written under)."""
        data, _, _asked = key.partition("/")
        return self.directory / f"{data}-{_digest(key)[:12].hex()}{suffix}"

    def has_data(self, data: str) -> bool:
        """Whether any result computed on the data of :func:`data_key` ``data`` is kept
        (none: a first open computes whatever is asked)."""
        return self.usable() and any(self.directory.glob(f"{data}-*{_SUFFIX}"))

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and (
            self.path(key).is_file() or self.path(key, _ALIAS).is_file()
        )

    def _read(self, path: Path) -> bytes | None:
        """The bytes of ``path`` if it is a regular file of the user's (not a link)."""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                return None
            if hasattr(os, "getuid") and st.st_uid != os.getuid():
                return None
            return f.read()

    def get(self, key: str) -> StoredResult | None:
        """The result kept under ``key``, or None (absent or unreadable: then deleted;
        nothing is read from a directory that is not the user's alone)."""
        if not self.usable():
            return None
        path = self.path(key)
        data = self._read(path)
        if data is None:
            path = self.path(key, _ALIAS)
            data = self._read(path)
        if data is None:
            return None
        try:
            head = len(_MAGIC) + _MAC_SIZE
            if len(data) < head or not data.startswith(_MAGIC):
                raise ValueError("not a dashboard file")
            body = memoryview(data)[head:]
            # Before anything is unpickled: written by this user.
            if not hmac.compare_digest(data[len(_MAGIC) : head], self._mac(body)):
                raise ValueError("not signed with this user's key")
            stored = pickle.loads(body)
            if _digest(key) not in stored.get("keys", ()):
                raise ValueError("another key")
            parts = [(k, p, d) for k, p, d in stored["parts"]]
            if not all(
                isinstance(k, Part) and isinstance(p, bytes) and isinstance(d, bytes)
                for k, p, d in parts
            ):
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

    def put(self, key: str, stored: StoredResult, aliases: Sequence[str] = ()) -> Path | None:
        """Keep ``stored`` under ``key`` (None: it could not be written; a cache only),
        and under each of ``aliases`` (keys known to want the very same parts) by a hard
        link: one file, evicted as one (where links cannot be made: under ``key`` only)."""
        body = {
            "keys": [_digest(k) for k in (key, *aliases)],
            "parts": stored.parts,
            "phases": stored.phases,
            "seconds": stored.seconds,
        }
        path = self.path(key)
        tmp: str | None = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not self.usable():
                return None
            data = pickle.dumps(body, protocol=pickle.HIGHEST_PROTOCOL)
            fd, tmp = tempfile.mkstemp(prefix=".part-", dir=self.directory)
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC)
                f.write(self._mac(data))
                f.write(data)
            for alias in aliases:
                other = self.path(alias, _ALIAS)
                with contextlib.suppress(OSError):
                    other.unlink(missing_ok=True)
                    os.link(tmp, other)
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
        if not self.usable():
            return
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
        for path in self.directory.glob("*" + _ALIAS):
            with contextlib.suppress(OSError):
                if path.stat().st_nlink < 2:  # its file is gone (or was replaced)
                    path.unlink()

    def clear(self) -> int:
        """Delete every kept result; returns how many (none from a refused directory)."""
        n = 0
        if not self.usable():
            return n
        for path in self.directory.glob("*" + _SUFFIX):
            with contextlib.suppress(OSError):
                path.unlink()
                n += 1
        for path in self.directory.glob("*" + _ALIAS):
            with contextlib.suppress(OSError):
                path.unlink()
        return n
