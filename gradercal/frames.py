"""Long-format pandas tables: the interface between storage and analysis.

Every analysis in gradercal (scoring, agreement, judge calibration) reads a
:class:`Frames` bundle. Two producers build it: :func:`frames_from_data` (from an
in-memory :class:`~gradercal.model.BenchmarkData`, e.g. straight from an importer or
in tests) and the database layer (``gradercal.db``). Both must produce *identical*
frames, so the column names and dtypes are defined once here (``*_COLUMNS`` and
``*_DTYPES``) together with :func:`make_frame` (rows → typed frame) and
:func:`conform_frame` (any frame with the right columns → typed frame, e.g. after
``pd.read_sql``).

Conventions:

* Identifiers are the external string ids of the benchmark files, stored in
  ``object`` columns (not pandas' ``str`` dtype, so frames look the same under
  pandas 2 and 3). Missing text is ``None``.
* Criterion ids are unique only *within a task*: joining judgments to criteria
  must go through the response's task, i.e. on ``(task_id, criterion_id)`` after
  merging ``responses[["response_id", "task_id"]]`` into the judgments.
* ``judgments.met`` uses pandas' nullable ``"boolean"`` dtype (``<NA>`` = not
  answered yet) and ``level`` the nullable ``"Int64"`` dtype.

This module imports only pandas, numpy and the standard library.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal.frame_rows import FrameRows
from gradercal.model import DEFAULT_PASS_THRESHOLD, Adjudication, BenchmarkData

__all__ = [
    "ADJUDICATION_COLUMNS",
    "ADJUDICATION_DTYPES",
    "CRITERION_COLUMNS",
    "CRITERION_DTYPES",
    "JUDGMENT_COLUMNS",
    "JUDGMENT_DTYPES",
    "RESPONSE_COLUMNS",
    "RESPONSE_DTYPES",
    "REVIEW_COLUMNS",
    "TASK_COLUMNS",
    "TASK_DTYPES",
    "DtypeSpec",
    "Frames",
    "conform_frame",
    "empty_frames",
    "frame_from_rows",
    "frames_from_data",
    "frames_from_rows",
    "make_frame",
    "object_frame",
    "reviews_frame",
]

#: dtype spec of a column: a numpy/pandas dtype name, or ``object``.
DtypeSpec = str | type

#: ``tasks``: one row per task.
TASK_DTYPES: Mapping[str, DtypeSpec] = {
    "task_id": object,
    "workflow": object,  # str or None
    "domain": object,  # str or None
    "answer_format": object,  # str or None
    "n_artifacts": "int64",
    "has_artifacts": "bool",
}
#: ``criteria``: one row per rubric item, keyed by ``(task_id, criterion_id)``.
CRITERION_DTYPES: Mapping[str, DtypeSpec] = {
    "task_id": object,
    "criterion_id": object,
    "position": "int64",
    "text": object,
    "points": "int64",
    "kind": object,  # "judgment" | "auto"
    "tags": object,  # tuple[str, ...]
    "levels": "int64",
    "auto_key": object,  # str, None for judgment criteria
    "auto_target": object,  # any JSON value, None for judgment criteria
    "auto_abs_tol": "float64",  # NaN when absent
    "auto_rel_tol": "float64",  # NaN when absent
}
#: ``responses``: one row per model response.
RESPONSE_DTYPES: Mapping[str, DtypeSpec] = {
    "response_id": object,
    "task_id": object,
    "model": object,
    "answer": object,  # parsed JSON value or None
}
#: ``judgments``: one row per (response, criterion, grader) verdict.
JUDGMENT_DTYPES: Mapping[str, DtypeSpec] = {
    "response_id": object,
    "criterion_id": object,
    "grader": object,
    "grader_kind": object,  # "human" | "judge"
    "met": "boolean",  # <NA> = not answered
    "level": "Int64",  # <NA> = no ordinal level given
    "confidence": "float64",  # NaN when absent
    "rationale": object,  # str or None
    "unclear": "bool",
}
#: ``adjudications``: at most one final verdict per (response, criterion).
ADJUDICATION_DTYPES: Mapping[str, DtypeSpec] = {
    "response_id": object,
    "criterion_id": object,
    "met": "bool",
    "level": "Int64",
    "adjudicator": object,
    "note": object,
}

#: Key columns whose strings are interned (:func:`sys.intern`) when a frame is built.
#: A benchmark repeats each id thousands of times (every judgment names its
#: response, criterion and grader); one shared object per distinct id, instead of
#: one per row, lets pandas hash tables (groupby, merge, isin, factorize) match
#: keys by identity before comparing characters: about twice as fast on the
#: dashboard's tables, and the values are unchanged. The set of ids is bounded by
#: the benchmark, so interning them cannot grow without limit; free text
#: (rationales, notes, criterion texts) is never interned.
INTERNED_COLUMNS: frozenset[str] = frozenset(
    {
        "task_id",
        "criterion_id",
        "response_id",
        "grader",
        "grader_kind",
        "model",
        "workflow",
        "domain",
        "answer_format",
        "kind",
        "adjudicator",
    }
)

TASK_COLUMNS: tuple[str, ...] = tuple(TASK_DTYPES)
CRITERION_COLUMNS: tuple[str, ...] = tuple(CRITERION_DTYPES)
RESPONSE_COLUMNS: tuple[str, ...] = tuple(RESPONSE_DTYPES)
JUDGMENT_COLUMNS: tuple[str, ...] = tuple(JUDGMENT_DTYPES)
ADJUDICATION_COLUMNS: tuple[str, ...] = tuple(ADJUDICATION_DTYPES)


def _column(name: str, values: Sequence[Any], dtype: DtypeSpec) -> pd.Series:
    """Build one typed column without letting pandas reinterpret the values.

    The cells are placed one per element of an object array (so tuples, lists and dicts
    stay single cells); missing values (``None``, ``pd.NA``, ``NaT``, float NaN) become
    ``None`` in object columns. In :data:`INTERNED_COLUMNS`, string values are replaced
    by their interned copy (equal value, shared object).

    Raises:
        ValueError: A missing value in a non-nullable column (``int64``/``bool``).
    """
    arr = np.fromiter(values, dtype=object, count=len(values))
    missing = pd.isna(arr)
    if missing.any():
        if dtype in ("int64", "bool"):
            raise ValueError(f"column {name!r} ({dtype}) cannot hold missing values")
        arr[missing] = None
    if dtype is object:
        if name in INTERNED_COLUMNS and len(arr):
            arr = _interned(arr)
        return pd.Series(arr, dtype=object)
    return pd.Series(arr, dtype=dtype)


def _interned(arr: npt.NDArray[np.object_]) -> npt.NDArray[np.object_]:
    """``arr`` with every ``str`` replaced by its :func:`sys.intern` copy (the distinct
    values are interned once; other cells are kept)."""
    try:
        codes, uniques = pd.factorize(arr)
    except TypeError:  # an unhashable cell: one by one
        return np.fromiter(
            (sys.intern(v) if type(v) is str else v for v in arr), dtype=object, count=len(arr)
        )
    table = np.empty(len(uniques) + 1, dtype=object)  # the last slot: code -1, missing
    table[:-1] = [sys.intern(u) if type(u) is str else u for u in uniques]
    table[-1] = None
    out: npt.NDArray[np.object_] = table[codes]
    return out


def make_frame(
    dtypes: Mapping[str, DtypeSpec],
    rows: Iterable[Mapping[str, Any] | Sequence[Any]] = (),
) -> pd.DataFrame:
    """Build a typed frame from rows.

    Args:
        dtypes: One of the ``*_DTYPES`` mappings; it fixes column order and dtypes.
        rows: Mappings keyed by column name (absent keys → missing value) or
            sequences in column order.

    Returns:
        A frame with exactly the columns of ``dtypes`` in order, a fresh
        ``RangeIndex``, and the declared dtypes. Missing values are ``None`` in
        object columns, NaN in float columns and ``<NA>`` in nullable columns.

    Raises:
        ValueError: A sequence row has the wrong length, or a missing value lands
            in a non-nullable column (``int64``/``bool``).
    """
    names = list(dtypes)
    width = len(names)
    listed = rows if isinstance(rows, list) else list(rows)
    cols: dict[str, Sequence[Any]]
    if all(type(row) is tuple and len(row) == width for row in listed):
        # The common case (database rows, importers): transpose in C.
        columns = list(zip(*listed, strict=True)) if listed else [()] * width
        cols = dict(zip(names, columns, strict=True))
    else:
        lists: dict[str, list[Any]] = {name: [] for name in names}
        for row in listed:
            if isinstance(row, Mapping):
                for name in names:
                    lists[name].append(row.get(name))
            else:
                if len(row) != width:
                    raise ValueError(f"row has {len(row)} values, expected {width}: {row!r}")
                for name, value in zip(names, row, strict=True):
                    lists[name].append(value)
        cols = dict(lists)
    out = {name: _column(name, cols[name], dtypes[name]) for name in names}
    return pd.DataFrame(out, columns=names)


def object_frame(columns: Mapping[str, Any]) -> pd.DataFrame:
    """``pd.DataFrame(columns)``, keeping object arrays as ``object`` columns.

    pandas 3 turns an object array of strings into its Arrow-backed ``str`` dtype when a
    frame is built from a dict. Identifiers stay ``object`` in gradercal (see the module
    notes), and converting them back and forth costs more than the work on them in the
    analysis hot paths (a copy into Arrow on the way in, new Python strings on the way
    out, which also undoes :data:`INTERNED_COLUMNS`). Object arrays are wrapped as
    object Series; other values (numbers, booleans) are passed to pandas as is.
    """
    data = {
        name: pd.Series(values, dtype=object, copy=False)
        if isinstance(values, np.ndarray) and values.dtype == object
        else values
        for name, values in columns.items()
    }
    return pd.DataFrame(data, columns=list(columns))


def frame_from_rows(rows: Sequence[Sequence[Any]], columns: Sequence[str]) -> pd.DataFrame:
    """``pd.DataFrame(rows, columns=columns)`` with text columns kept as ``object``.

    Each column is inferred as pandas would (numbers, booleans, missing values),
    except that a column of strings stays ``object`` (see :func:`object_frame`).
    """
    df = pd.DataFrame(list(rows), columns=list(columns), dtype=object)
    data: dict[str, Any] = {}
    for name in columns:
        values = df[name]
        if pd.api.types.infer_dtype(values.to_numpy(), skipna=True) == "string":
            data[name] = values
        else:
            data[name] = values.infer_objects()
    return pd.DataFrame(data, columns=list(columns))


def conform_frame(df: pd.DataFrame, dtypes: Mapping[str, DtypeSpec]) -> pd.DataFrame:
    """Return ``df`` reduced to the columns of ``dtypes``, in order, with their dtypes.

    Meant for frames produced elsewhere (``pd.read_sql``, ``read_parquet``…). Extra
    columns are dropped; the index is reset.

    Raises:
        ValueError: A required column is absent, or cannot be cast.
    """
    missing = [name for name in dtypes if name not in df.columns]
    if missing:
        raise ValueError(f"frame lacks columns: {', '.join(missing)}")
    rows = df.loc[:, list(dtypes)].itertuples(index=False, name=None)
    return make_frame(dtypes, rows)


@dataclass
class Frames:
    """Long-format tables for one benchmark.

    The database layer (``gradercal.db``) builds these; so does
    :func:`frames_from_data`. Columns and dtypes are those of the ``*_DTYPES``
    mappings of this module.

    Attributes:
        pass_threshold: A response passes when its rubric score reaches this value.
        tasks: ``task_id``, ``workflow``, ``domain``, ``answer_format`` (str or None),
            ``n_artifacts`` (int), ``has_artifacts`` (bool).
        criteria: ``task_id``, ``criterion_id``, ``position`` (int), ``text``,
            ``points`` (int, negative = penalty), ``kind`` (``"judgment"`` |
            ``"auto"``), ``tags`` (tuple of str), ``levels`` (int ≥ 2), ``auto_key``,
            ``auto_target`` (object, None for judgment criteria), ``auto_abs_tol``,
            ``auto_rel_tol`` (float, NaN when absent).
        responses: ``response_id``, ``task_id``, ``model``, ``answer`` (parsed JSON
            or None).
        judgments: ``response_id``, ``criterion_id``, ``grader``, ``grader_kind``
            (``"human"`` | ``"judge"``), ``met`` ("boolean", ``<NA>`` = not answered),
            ``level`` ("Int64"), ``confidence`` (float), ``rationale``, ``unclear``
            (bool).
        adjudications: ``response_id``, ``criterion_id``, ``met`` (bool), ``level``
            ("Int64"), ``adjudicator``, ``note``.
    """

    pass_threshold: float
    tasks: pd.DataFrame
    criteria: pd.DataFrame
    responses: pd.DataFrame
    judgments: pd.DataFrame
    adjudications: pd.DataFrame

    def validate(self) -> None:
        """Check that every frame has its required columns.

        Raises:
            ValueError: Naming the frame and the absent columns.
        """
        for name, dtypes in _FRAME_DTYPES.items():
            df: pd.DataFrame = getattr(self, name)
            missing = [c for c in dtypes if c not in df.columns]
            if missing:
                raise ValueError(f"frames.{name} lacks columns: {', '.join(missing)}")


_FRAME_DTYPES: dict[str, Mapping[str, DtypeSpec]] = {
    "tasks": TASK_DTYPES,
    "criteria": CRITERION_DTYPES,
    "responses": RESPONSE_DTYPES,
    "judgments": JUDGMENT_DTYPES,
    "adjudications": ADJUDICATION_DTYPES,
}


def empty_frames(pass_threshold: float = DEFAULT_PASS_THRESHOLD) -> Frames:
    """All five frames with the right columns and dtypes and zero rows."""
    return Frames(
        pass_threshold=pass_threshold,
        tasks=make_frame(TASK_DTYPES),
        criteria=make_frame(CRITERION_DTYPES),
        responses=make_frame(RESPONSE_DTYPES),
        judgments=make_frame(JUDGMENT_DTYPES),
        adjudications=make_frame(ADJUDICATION_DTYPES),
    )


#: Columns of :func:`reviews_frame` (the task review answers).
REVIEW_COLUMNS: tuple[str, ...] = ("task_id", "reviewer", "dimension", "answer")


def reviews_frame(records: Sequence[tuple[str, str, str, int]]) -> pd.DataFrame:
    """The task review answers as a long frame: one row per answered survey item
    (``gradercal.db.calibrations.task_review_records``)."""
    return pd.DataFrame(list(records), columns=list(REVIEW_COLUMNS)).astype(
        {"task_id": object, "reviewer": object, "dimension": object, "answer": "int64"}
    )


def frames_from_rows(rows: FrameRows, ahead: Frames | None = None) -> Frames:
    """The frames of rows read from the database (:mod:`gradercal.db.frames_fetch`): each
    frame made by :func:`make_frame`, the judgments' names taken from the responses,
    criteria and graders (one shared, interned object per name).

    ``ahead``: the frames already made of the same benchmark's rows but the judgments
    (``frames_from_rows`` of them, read ahead): only the judgments of ``rows`` are made
    (its other rows are not read)."""
    if ahead is not None:
        tasks, criteria, responses = ahead.tasks, ahead.criteria, ahead.responses
    else:
        tasks = make_frame(TASK_DTYPES, rows.tasks)
        criteria = make_frame(CRITERION_DTYPES, rows.criteria)
        responses = make_frame(RESPONSE_DTYPES, rows.responses)
    j = rows.judgments
    if isinstance(j, list):
        judgments = make_frame(JUDGMENT_DTYPES, j)
    else:
        graders = _interned(j.grader_names)
        kinds = _interned(j.grader_kinds)
        no_level = np.isnan(j.level)
        level = np.where(no_level, 0.0, j.level).astype(np.int64)
        data = {
            "response_id": responses["response_id"].to_numpy(dtype=object)[j.response_pos],
            "criterion_id": criteria["criterion_id"].to_numpy(dtype=object)[j.criterion_pos],
            "grader": graders[j.grader_pos],
            "grader_kind": kinds[j.grader_pos],
            "met": pd.arrays.BooleanArray(j.met == 1.0, np.isnan(j.met)),
            "level": pd.arrays.IntegerArray(level, no_level),
            "confidence": j.confidence,
            "rationale": j.rationale,
            "unclear": j.unclear,
        }
        assert tuple(data) == JUDGMENT_COLUMNS
        judgments = object_frame(data)
    return Frames(
        pass_threshold=rows.pass_threshold,
        tasks=tasks,
        criteria=criteria,
        responses=responses,
        judgments=judgments,
        adjudications=ahead.adjudications
        if ahead is not None
        else make_frame(ADJUDICATION_DTYPES, rows.adjudications),
    )


def frames_from_data(
    data: BenchmarkData, adjudications: Iterable[Adjudication] | None = None
) -> Frames:
    """Build :class:`Frames` from in-memory benchmark data.

    Rows keep the order of ``data`` (tasks, then each task's rubric in tuple order;
    ``position`` is copied from :attr:`Criterion.position` as is). Nothing is
    validated here: judgments or adjudications naming unknown responses or
    criteria are kept and simply ignored by the scoring functions. Fields with no
    column (prompt, response text, ``unclear_note``, task tags and metadata,
    artifact details) are not carried.

    Args:
        data: The benchmark, e.g. as returned by an importer.
        adjudications: Final verdicts to include; None: the data's own
            (:attr:`BenchmarkData.adjudications`, e.g. a folder's adjudications.jsonl).

    Returns:
        Frames whose ``pass_threshold`` is the benchmark's.
    """
    tasks = make_frame(
        TASK_DTYPES,
        (
            (t.id, t.workflow, t.domain, t.answer_format, len(t.artifacts), t.has_artifacts)
            for t in data.tasks
        ),
    )
    criteria_rows: list[tuple[Any, ...]] = []
    for t in data.tasks:
        for c in t.criteria:
            rule = c.auto
            criteria_rows.append(
                (
                    t.id,
                    c.id,
                    c.position,
                    c.text,
                    c.points,
                    c.kind.value,
                    tuple(c.tags),
                    c.levels,
                    rule.key if rule is not None else None,
                    rule.target if rule is not None else None,
                    rule.abs_tol if rule is not None else None,
                    rule.rel_tol if rule is not None else None,
                )
            )
    responses = make_frame(
        RESPONSE_DTYPES, ((r.id, r.task_id, r.model, r.answer) for r in data.responses)
    )
    judgments = make_frame(
        JUDGMENT_DTYPES,
        (
            (
                j.response_id,
                j.criterion_id,
                j.grader,
                str(j.grader_kind),
                j.met,
                j.level,
                j.confidence,
                j.rationale,
                bool(j.unclear),
            )
            for j in data.judgments
        ),
    )
    adj = make_frame(
        ADJUDICATION_DTYPES,
        (
            (a.response_id, a.criterion_id, bool(a.met), a.level, a.adjudicator, a.note)
            for a in (data.adjudications if adjudications is None else adjudications)
        ),
    )
    return Frames(
        pass_threshold=float(data.benchmark.pass_threshold),
        tasks=tasks,
        criteria=make_frame(CRITERION_DTYPES, criteria_rows),
        responses=responses,
        judgments=judgments,
        adjudications=adj,
    )
