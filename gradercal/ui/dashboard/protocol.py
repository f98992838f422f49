"""The messages between the dashboard's window and its worker process, typed.

The window (:mod:`gradercal.ui.dashboard.qt_process`) and the worker
(:mod:`gradercal.ui.dashboard.worker`) exchange pickled dicts framed by an 8-byte
big-endian length (:func:`encode`, :class:`FrameReader`, :func:`read_message`). Each
message is one of the ``TypedDict`` classes below, told apart by its ``op`` (window →
worker: :data:`ToWorker`) or its ``type`` (worker → window: :data:`ToWindow`), so mypy
checks every field either side reads or writes.

A result travels as parts, each named by a :class:`Part`: its :class:`PartKind` (a field
of the Dashboard, a prepared table, a chart, the filter options, the first response of
each task) and its name — never a string prefix to slice.

Qt-free and light: the standard library only at run time (the worker answers from its
cache on disk before importing pandas).
"""

from __future__ import annotations

import pickle
import struct
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, BinaryIO, Literal, NotRequired, TypedDict

if TYPE_CHECKING:
    from gradercal.ui.dashboard.data import Request
    from gradercal.ui.dashboard.results import Hypothesis, PickledRequest

__all__ = [
    "MAX_MESSAGE",
    "PROTOCOL",
    "Cancel",
    "Compute",
    "Done",
    "Error",
    "FrameReader",
    "Headline",
    "Hello",
    "Part",
    "PartKind",
    "PartMessage",
    "Prefetch",
    "Prefetched",
    "Progress",
    "Quit",
    "Soon",
    "ToWindow",
    "ToWorker",
    "Wake",
    "Warm",
    "encode",
    "read_message",
]

#: The protocol's version (the worker says it in ``hello``). 2: parts are named by
#: :class:`Part` (1: by ``"dash:<field>"``-style strings).
PROTOCOL = 2
_HEADER = struct.Struct(">Q")
#: Largest message accepted (a sanity bound against a corrupt stream).
MAX_MESSAGE = 1 << 34


class PartKind(StrEnum):
    """What a part of a result holds."""

    #: one field of the :class:`~gradercal.dashboard.Dashboard` (``name``: the field)
    DASH = "dash"
    #: a :class:`~gradercal.ui.dashboard.data.PreparedTable` (``name``: its key in
    #: :data:`~gradercal.ui.dashboard.data.TABLES`)
    TABLE = "table"
    #: a chart: a Figure with its pixels, or a str saying why there is none (``name``: its
    #: figure name)
    FIGURE = "figure"
    #: the values each filter can take (no name)
    OPTIONS = "options"
    #: {task id: its first response id} (no name)
    FIRST_RESPONSE = "first_response"


@dataclass(frozen=True, order=True)
class Part:
    """The name of one part of a result."""

    kind: PartKind
    name: str = ""

    @classmethod
    def dash(cls, name: str) -> Part:
        return cls(PartKind.DASH, name)

    @classmethod
    def table(cls, name: str) -> Part:
        return cls(PartKind.TABLE, name)

    @classmethod
    def figure(cls, name: str) -> Part:
        return cls(PartKind.FIGURE, name)

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}" if self.name else str(self.kind)


# -- window → worker --------------------------------------------------------------------------
class Compute(TypedDict):
    """Compute ``request`` (see :mod:`gradercal.ui.dashboard.worker`)."""

    op: Literal["compute"]
    request: PickledRequest | Request
    url: str
    #: {part: digest} of the result the window shows (equal parts are not sent again)
    have: NotRequired[dict[Part, bytes]]
    #: the adjudication just saved (a prefetch computing it is not cancelled)
    expect: NotRequired[Hypothesis | None]


class Prefetch(TypedDict):
    """Compute ahead, while idle: ``request`` with each of ``hypotheses``, and/or
    ``requests`` on the data as it is."""

    op: Literal["prefetch"]
    url: str
    request: NotRequired[Request]
    hypotheses: NotRequired[list[Hypothesis]]
    requests: NotRequired[list[Request]]


class Warm(TypedDict):
    """Open the database and load the frames now."""

    op: Literal["warm"]
    url: str
    benchmark: str | None


class Soon(TypedDict):
    """A ``compute`` follows once the window is built (``url`` empty: the window does not
    know its database yet)."""

    op: Literal["soon"]
    url: str
    benchmark: str | None


class Cancel(TypedDict):
    """Stop ``generation`` (and any older one)."""

    op: Literal["cancel"]
    generation: int


class Quit(TypedDict):
    """Exit now."""

    op: Literal["quit"]


class Wake(TypedDict):
    """(The worker's own, from its input thread) prefetches are queued."""

    op: Literal["wake"]


ToWorker = Compute | Prefetch | Warm | Soon | Cancel | Quit | Wake


# -- worker → window --------------------------------------------------------------------------
class Hello(TypedDict):
    type: Literal["hello"]
    pid: int
    protocol: int
    #: whether any Qt module is loaded in the worker (never)
    qt: bool


class Progress(TypedDict):
    type: Literal["progress"]
    generation: int
    done: int
    total: int
    label: str


class Headline(TypedDict):
    """The pickled :func:`~gradercal.dashboard.headline_of` dict, before the parts."""

    type: Literal["headline"]
    generation: int
    payload: bytes


class PartMessage(TypedDict):
    """One part: its pickle (unpickled by the window one part per event-loop turn)."""

    type: Literal["part"]
    generation: int
    key: Part
    digest: bytes
    payload: bytes


class Done(TypedDict):
    """Every part of the result is sent (see :mod:`gradercal.ui.dashboard.worker`)."""

    type: Literal["done"]
    generation: int
    keys: list[Part]
    #: the parts not sent: the window has them (by ``have``)
    reused: list[Part]
    seconds: float
    phases: dict[str, float]
    pid: int
    qt: bool
    loaded: bool
    refreshed: list[str]
    cached: bool
    disk: bool
    preloaded: bool
    imported: list[str]


class Prefetched(TypedDict):
    type: Literal["prefetched"]
    hypothesis: Hypothesis | None
    request: Request | None
    cached: bool
    seconds: float


class Error(TypedDict):
    type: Literal["error"]
    generation: int
    #: ``cancelled``, ``superseded`` or ``error``
    kind: str
    message: str
    error_type: str
    traceback: str


ToWindow = Hello | Progress | Headline | PartMessage | Done | Prefetched | Error


# -- framing ----------------------------------------------------------------------------------
def encode(message: ToWorker | ToWindow) -> bytes:
    """One framed message."""
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(body)) + body


class FrameReader:
    """Splits the worker's byte stream into messages; :meth:`feed` returns the complete
    ones."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._start = 0

    def feed(self, data: bytes) -> list[ToWindow]:
        self._buffer += data
        out: list[ToWindow] = []
        buf = self._buffer
        while len(buf) - self._start >= _HEADER.size:
            (n,) = _HEADER.unpack_from(buf, self._start)
            if n > MAX_MESSAGE:
                raise ValueError(f"corrupt message stream (a message of {n} bytes)")
            begin = self._start + _HEADER.size
            if len(buf) - begin < n:
                break
            message: ToWindow = pickle.loads(memoryview(buf)[begin : begin + n])
            out.append(message)
            self._start = begin + n
        if self._start and (self._start == len(buf) or self._start > (1 << 20)):
            del buf[: self._start]  # drop what was read (rarely: a memmove of the rest)
            self._start = 0
        return out

    @property
    def pending(self) -> int:
        """Bytes received but not yet part of a complete message."""
        return len(self._buffer) - self._start


def read_message(stream: BinaryIO) -> ToWorker | None:
    """The next message from a blocking stream (the window's, read by the worker); None at
    its end."""
    head = _read_exactly(stream, _HEADER.size)
    if head is None:
        return None
    (n,) = _HEADER.unpack(head)
    if n > MAX_MESSAGE:
        raise ValueError(f"corrupt message stream (a message of {n} bytes)")
    body = _read_exactly(stream, n)
    if body is None:
        return None
    message: ToWorker = pickle.loads(body)
    return message


def _read_exactly(stream: BinaryIO, n: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < n:
        chunk = stream.read(n - len(chunks))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)
