"""The revised criteria of a benchmark and the era of each verdict on them
(:class:`VerdictEras`), read by :mod:`gradercal.db.eras` and compared by
:mod:`gradercal.analysis.versions`.

A module of its own so that reading a benchmark (every dashboard reads its eras) does not
import the agreement engines and their scipy. It imports pandas, numpy and gradercal's
frames only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from gradercal.frame_rows import EraRows
from gradercal.frames import ADJUDICATION_DTYPES, JUDGMENT_DTYPES, make_frame

__all__ = ["VerdictEras", "eras_from_rows"]


@dataclass(frozen=True)
class VerdictEras:
    """The revised criteria and the era of each verdict on them.

    Attributes:
        revised: ``(task_id, criterion_id) → (1, v₂, …)``: the task versions at which
            each era of the criterion began, ascending; the last is its current one.
        judgments: the ``judgments`` frame's columns and ``era`` (int): one row per
            judgment on a revised criterion and era it was given in, with its value then.
        adjudications: the ``adjudications`` frame's columns and ``era``: the same for
            adjudications.
    """

    revised: Mapping[tuple[str, str], tuple[int, ...]]
    judgments: pd.DataFrame
    adjudications: pd.DataFrame

    @classmethod
    def empty(cls) -> VerdictEras:
        """No criterion was revised."""
        judgments = make_frame(JUDGMENT_DTYPES)
        judgments["era"] = pd.Series([], dtype=np.int64)
        adjudications = make_frame(ADJUDICATION_DTYPES)
        adjudications["era"] = pd.Series([], dtype=np.int64)
        return cls({}, judgments, adjudications)

    def __bool__(self) -> bool:
        return bool(self.revised)


def _with_era(dtypes: Mapping[str, Any], rows: list[Any]) -> pd.DataFrame:
    """The frame of ``rows`` (a verdict frame's columns, then the era) with ``era``."""
    frame = make_frame(dtypes, (tuple(r[:-1]) for r in rows))
    frame["era"] = np.fromiter((r[-1] for r in rows), dtype=np.int64, count=len(rows))
    return frame


def eras_from_rows(rows: EraRows | None) -> VerdictEras:
    """The :class:`VerdictEras` of rows read by :func:`gradercal.db.frames_fetch.fetch_eras`
    (None: no criterion was revised)."""
    if rows is None:
        return VerdictEras.empty()
    return VerdictEras(
        revised=rows.revised,
        judgments=_with_era(JUDGMENT_DTYPES, rows.judgments),
        adjudications=_with_era(ADJUDICATION_DTYPES, rows.adjudications),
    )
