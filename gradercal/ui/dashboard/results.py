"""Computed dashboards kept by the worker process, keyed by the data they were computed on.

The worker (:mod:`gradercal.ui.dashboard.worker`) sends a result as parts (pickled bytes:
each Dashboard field, each prepared table, each chart). It keeps the parts of its recent
results in a :class:`ResultCache` under a :func:`result_key`: what was asked
(:func:`request_key`: filters, judge, bootstrap, calibration, chart size and theme) and
what it was computed on — the database's fingerprint of everything except the
adjudications (``Repository.data_revision``), and a digest of the adjudications' content
(:func:`adjudications_digest`). The same request on the same data is then answered from
the cache; a changed judgment, task, response, grader or task review changes the key, and
so does an adjudication.

The adjudications are keyed by content rather than by the database's stamps so that a
result can be computed *before* the adjudication is saved: while the coordinator reads a
case, the worker computes the dashboard with each verdict the case could be given
(:func:`with_adjudication`), and returning from the adjudication finds the result of the
verdict saved. What the dashboard reads of an adjudication is its unit, ``met`` and
``level`` — not who adjudicated, the note or the rows' order (tested:
``tests/properties/test_dashboard_speed_equivalence.py``) — so the digest covers exactly
those.

Qt-free; pandas is imported by the functions that read a frame, not by this module (the
worker answers from its cache on disk, :mod:`gradercal.ui.dashboard.disk_cache`, before
importing it).
"""

from __future__ import annotations

import hashlib
import pickle
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from gradercal.ui.dashboard.data import Request
    from gradercal.ui.dashboard.protocol import Part

__all__ = [
    "MAX_RESULTS",
    "MAX_RESULT_BYTES",
    "Hypothesis",
    "PickledRequest",
    "ResultCache",
    "StoredResult",
    "adjudications_digest",
    "digest",
    "request_key",
    "result_key",
    "with_adjudication",
]

#: Results kept at most, and their parts' total size (the oldest go first).
MAX_RESULTS = 8
MAX_RESULT_BYTES = 600 << 20

#: An adjudication that may be saved: (response id, criterion id, met, level).
Hypothesis = tuple[str, str, bool, int | None]


def digest(payload: bytes) -> bytes:
    """A part's fingerprint (the window sends those it holds; equal parts are not resent)."""
    return hashlib.blake2b(payload, digest_size=16).digest()


@dataclass(frozen=True)
class PickledRequest:
    """A :class:`~gradercal.ui.dashboard.data.Request` as the window sends it: pickled,
    beside what the worker reads before unpickling it — which imports pandas and the
    dashboard package (≈ 0.7 s), not needed when the answer is on disk."""

    payload: bytes
    generation: int
    benchmark: str
    #: :func:`request_key` of the request
    key: str
    reload: bool = False

    @classmethod
    def of(cls, request: Request) -> PickledRequest:
        return cls(
            pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL),
            int(request.generation),
            str(request.benchmark),
            request_key(request),
            bool(request.reload),
        )

    def load(self) -> Request:
        """The Request."""
        request: Request = pickle.loads(self.payload)
        return request


def request_key(request: PickledRequest | Request) -> str:
    """What a :class:`~gradercal.ui.dashboard.data.Request` asks, without its generation
    and ``reload`` (two requests with equal keys want the same parts)."""
    if isinstance(request, PickledRequest):
        return request.key
    return repr(
        (
            request.benchmark,
            request.filters,
            request.judge,
            request.dark,
            request.n_boot,
            request.seed,
            request.calibration,
            request.chart_size,
        )
    )


def adjudications_digest(adjudications: pd.DataFrame) -> str:
    """A digest of what the dashboard reads of the adjudications: each unit's ``met`` and
    ``level``, in no particular order (the rows are sorted first)."""
    import pandas as pd

    rows = sorted(
        (
            str(r),
            str(c),
            None if pd.isna(met) else bool(met),
            None if pd.isna(level) else int(level),
        )
        for r, c, met, level in zip(
            adjudications["response_id"],
            adjudications["criterion_id"],
            adjudications["met"],
            adjudications["level"],
            strict=True,
        )
    )
    return hashlib.blake2b(repr(rows).encode(), digest_size=16).hexdigest()


def result_key(
    request: PickledRequest | Request, revision: Mapping[str, str], adjudications: pd.DataFrame
) -> str:
    """The cache key of ``request`` computed on data of ``revision`` with ``adjudications``."""
    others = sorted((k, v) for k, v in revision.items() if k != "adjudications")
    return repr((request_key(request), others, adjudications_digest(adjudications)))


def with_adjudication(
    adjudications: pd.DataFrame, hypothesis: Hypothesis, adjudicator: str = ""
) -> pd.DataFrame:
    """``adjudications`` as they would be once ``hypothesis`` is saved: the unit's row
    revised (met, level) or, if it has none, a new last row."""
    import pandas as pd

    from gradercal.frames import ADJUDICATION_DTYPES, make_frame

    response_id, criterion_id, met, level = hypothesis
    at = (adjudications["response_id"] == response_id) & (
        adjudications["criterion_id"] == criterion_id
    )
    if at.any():
        out = adjudications.copy()
        out.loc[at, "met"] = bool(met)
        out.loc[at, "level"] = pd.NA if level is None else int(level)
        return out
    row = make_frame(
        ADJUDICATION_DTYPES, [(response_id, criterion_id, bool(met), level, adjudicator, None)]
    )
    return pd.concat([adjudications, row], ignore_index=True) if len(adjudications) else row


@dataclass
class StoredResult:
    """The parts of one computed dashboard, as sent: ``(part, payload, digest)`` each."""

    parts: list[tuple[Part, bytes, bytes]] = field(default_factory=list)
    #: seconds per phase when it was computed
    phases: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def size(self) -> int:
        return sum(len(p) for _k, p, _d in self.parts)


class ResultCache:
    """The worker's recent results by :func:`result_key` (least recently used go first)."""

    def __init__(self, max_results: int = MAX_RESULTS, max_bytes: int = MAX_RESULT_BYTES) -> None:
        self.max_results = max_results
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, StoredResult] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def get(self, key: str) -> StoredResult | None:
        stored = self._items.get(key)
        if stored is not None:
            self._items.move_to_end(key)
        return stored

    def put(self, key: str, stored: StoredResult) -> None:
        self._items[key] = stored
        self._items.move_to_end(key)
        total = sum(s.size for s in self._items.values())
        while len(self._items) > 1 and (
            len(self._items) > self.max_results or total > self.max_bytes
        ):
            _old, dropped = self._items.popitem(last=False)
            total -= dropped.size

    def clear(self) -> None:
        self._items.clear()

    def keys(self) -> Iterable[str]:
        return list(self._items)
