"""The analysis context: the tables that the engines of one report share, each built once.

A report (the dashboard, ``gradercal report``, a command that runs several engines)
computes many figures from the same frames, and every engine starts from the same few
tables: the scoring grid, every grader's level on every judgment unit, the verdict
table, the human consensus of a set of experts, response scores. Called without a
context (``context=None``) each engine builds what it needs afresh — always correct;
given one :class:`AnalysisContext`, created for one :class:`~gradercal.frames.Frames`
and passed to every call on those *same* frames, each table is built on first use and
reused. Tables taken from a context are read-only.

Each kind of table has its own typed slot, filled by the module that owns it
(:mod:`gradercal.analysis.scoring` the grid, levels, consensus and scores;
:mod:`gradercal.analysis.verdicts` the verdicts and their unit positions;
:mod:`gradercal.analysis.agreement` the integer codes of a verdict table). A table handed
out by a context may carry the position of each of its rows among the judgment units
(:class:`UnitIndex`): pairing two such tables is then an array lookup instead of a merge.
``tests/properties/test_dashboard_speed_equivalence.py`` checks that every engine gives the same
numbers with and without a context.

This module imports pandas and numpy only (no SQL, no Qt).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import pandas as pd

__all__ = ["AnalysisContext", "HumanLevels", "JudgmentKeys", "UnitIndex"]

IntArray = npt.NDArray[np.intp]
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass(frozen=True, eq=False)
class HumanLevels:
    """Every grader's effective level on every judgment unit (for the consensus).

    Attributes:
        units: The judgment units of the grid, in grid order: ``response_id``,
            ``criterion_id``, ``top`` (the top level).
        row: For each verdict with a level or met (a grader's duplicates keep the
            last), the row of its unit in ``units``.
        grader: Its grader's code (see ``names``).
        names: Grader name → code.
        eff: Its effective level.
        is_met: Whether that level is the top level.
        adj_level: Each unit's adjudicated level (NaN: none).
        judgment_unit: The row in ``units`` of every judgment row's unit (−1: none).
    """

    units: pd.DataFrame
    row: IntArray
    grader: IntArray
    names: dict[str, int]
    eff: npt.NDArray[np.float64]
    is_met: npt.NDArray[np.bool_]
    adj_level: npt.NDArray[np.float64]
    judgment_unit: IntArray | None = None


@dataclass(frozen=True, eq=False)
class JudgmentKeys:
    """The judgments' unit keys and graders as integer codes, one factorization each
    (:func:`gradercal.analysis.scoring.judgment_keys`).

    Attributes:
        responses: The distinct response ids (a code is a position in it).
        criteria: The distinct criterion ids.
        response: Each judgment row's response code (−1: missing id).
        criterion: Each judgment row's criterion code (−1: missing id).
        grader: Each judgment row's grader code (a missing name has a code of its own).
        n_graders: The number of grader codes.
    """

    responses: pd.Index
    criteria: pd.Index
    response: IntArray
    criterion: IntArray
    grader: IntArray
    n_graders: int


@dataclass(eq=False)
class UnitIndex:
    """Where the rows of one table handed out by a context sit among the judgment units.

    Attributes:
        table: The table (kept alive, checked by identity).
        units: Position of each of its rows among the units; None when unknown.
        n_units: The number of judgment units.
        rows_by_grader: For a verdict table, each grader's rows in order (built on
            first use by :meth:`AnalysisContext.grader_rows`).
    """

    table: pd.DataFrame
    units: IntArray | None
    n_units: int
    rows_by_grader: dict[str, IntArray] | None = None

    def grader_rows(self, grader: str) -> IntArray:
        """Rows of this (verdict) table whose grader is ``grader``, in order."""
        if self.rows_by_grader is None:
            codes, names = pd.factorize(self.table["grader"].to_numpy(object), sort=False)
            order = np.argsort(codes, kind="stable")
            bounds = np.searchsorted(np.asarray(codes)[order], np.arange(len(names) + 1))
            self.rows_by_grader = {
                name: order[bounds[k] : bounds[k + 1]] for k, name in enumerate(names)
            }
        return self.rows_by_grader.get(grader, np.zeros(0, dtype=np.intp))


#: Key of a set of experts: their names in order, or None for every human grader.
HumansKey = tuple[str, ...] | None


@dataclass(eq=False)
class AnalysisContext:
    """The shared tables of the calls of one report on the same frames (see the module
    docstring). Create one per frames; every slot starts empty."""

    #: The scoring grid (responses × criteria of their task).
    grid: pd.DataFrame | None = None
    #: Every grader's level per unit; ``None`` inside when the units are not unique.
    human_levels: tuple[HumanLevels | None] | None = None
    #: The judgments' unit keys and graders as codes.
    judgment_keys: JudgmentKeys | None = None
    #: Consensus with its tie bounds, per set of experts.
    consensus_full: dict[HumansKey, pd.DataFrame] = field(default_factory=dict)
    #: The decided consensus verdicts, per set of experts.
    consensus: dict[HumansKey, pd.DataFrame] = field(default_factory=dict)
    #: Response scores, per (grader, tie policy, experts, include ungraded).
    response_scores: dict[tuple[Any, ...], pd.DataFrame] = field(default_factory=dict)
    #: Every grader's verdicts.
    verdicts: pd.DataFrame | None = None
    #: The verdicts of a set of graders.
    grader_verdicts: dict[tuple[str, ...], pd.DataFrame] = field(default_factory=dict)
    #: Integer unit, grader and task codes of one verdict table (the last one coded).
    codes: tuple[pd.DataFrame, dict[str, npt.NDArray[np.int64]]] | None = None
    _index: dict[int, UnitIndex] = field(default_factory=dict, repr=False)

    @staticmethod
    def once(slot: dict[K, V], key: K, build: Callable[[], V]) -> V:
        """``slot[key]``, built by ``build()`` on first use."""
        if key not in slot:
            slot[key] = build()
        return slot[key]

    def register(self, table: pd.DataFrame, units: IntArray | None, n_units: int) -> UnitIndex:
        """Record where the rows of ``table`` sit among the judgment units."""
        entry = UnitIndex(table, units, n_units)
        self._index[id(table)] = entry
        return entry

    def indexes(self) -> list[UnitIndex]:
        """Every table this context knows the unit positions of."""
        return list(self._index.values())

    def index_of(self, table: pd.DataFrame | None) -> UnitIndex | None:
        """The :class:`UnitIndex` of a table this context handed out; None otherwise."""
        if table is None:
            return None
        hit = self._index.get(id(table))
        return hit if hit is not None and hit.table is table else None
