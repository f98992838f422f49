"""Judgments and adjudications from plain tables: CSV, TSV, Excel and Parquet.

A table holds one judgment (or one final verdict) per row, under gradercal's field names
(:data:`JUDGMENT_FIELDS`, :data:`ADJUDICATION_FIELDS`: the columns ``gradercal export
judgments|adjudications`` writes) or under the user's own, named with a column map
(``gradercal import FILE --map response_id=item --map grader=rater``). Which of the two a
table holds follows from its columns: a ``grader`` column makes it judgments, an
``adjudicator`` column without one adjudications. Cells are read as text and converted
per field (verdicts accept true/false, 1/0, yes/no, met/not met, pass/fail), then checked
by exactly the rules of format v1's JSONL files, so a problem is reported as
``file:row: field: message`` with the row as a spreadsheet numbers it (the header is row
1). Columns the table has beyond the known fields are ignored. A CSV or TSV cell that
starts with ``'`` followed by a formula character is read without the quote: that is how
gradercal's CSV exports keep spreadsheets from running text as formulas.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import date, datetime
from functools import cache
from pathlib import Path
from typing import Any

from gradercal.errors import Problem, ValidationError
from gradercal.formats._lines import Recognised
from gradercal.formats.v1 import Catalog, table_reader
from gradercal.model import BenchmarkData, read_verdict_word

FORMAT_NAME = "table"
#: File suffixes read as tables, and how pandas reads each.
SUFFIXES = (".csv", ".tsv", ".xlsx", ".xlsm", ".parquet")

_TEXT = "text"  # free text: kept exactly
_NAME = "name"  # ids and names: surrounding blanks dropped
_VERDICT = "verdict"
_FLAG = "flag"
_INT = "integer"
_NUMBER = "number"
_TIME = "time"

#: The fields of a judgments table and the kind of value each holds.
JUDGMENT_FIELDS: dict[str, str] = {
    "response_id": _NAME,
    "criterion_id": _NAME,
    "grader": _NAME,
    "grader_kind": _NAME,
    "met": _VERDICT,
    "level": _INT,
    "confidence": _NUMBER,
    "rationale": _TEXT,
    "unclear": _FLAG,
    "unclear_note": _TEXT,
    "model": _NAME,
    "created_at": _TIME,
    "updated_at": _TIME,
}
#: The fields of an adjudications table.
ADJUDICATION_FIELDS: dict[str, str] = {
    "response_id": _NAME,
    "criterion_id": _NAME,
    "met": _VERDICT,
    "level": _INT,
    "adjudicator": _NAME,
    "note": _TEXT,
    "created_at": _TIME,
    "updated_at": _TIME,
}
_REQUIRED = {
    "judgments": ("response_id", "criterion_id", "grader", "met"),
    "adjudications": ("response_id", "criterion_id", "met", "adjudicator"),
}


#: What makes a spreadsheet read a cell as a formula (OWASP's CSV-injection list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise_cell(value: Any) -> Any:
    """A text cell that a spreadsheet would run as a formula, prefixed with ``'`` (so is
    one that already starts with quotes before a formula character: the import takes
    exactly one quote off, and every text comes back as it was)."""
    if isinstance(value, str) and value.lstrip("'").startswith(FORMULA_STARTS):
        return "'" + value
    return value


def write_rows_csv(
    path: str | os.PathLike[str], keys: Sequence[str], rows: Iterable[Mapping[str, Any]]
) -> None:
    """Plain rows as a CSV file (header ``keys``; None as an empty cell; formula-safe text
    cells, see :func:`neutralise_cell`)."""
    import csv

    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(keys)
        for row in rows:
            w.writerow(["" if row.get(k) is None else neutralise_cell(row[k]) for k in keys])


def _restore_cell(value: str) -> str:
    """The inverse of :func:`neutralise_cell` on a CSV/TSV cell."""
    if value.startswith("'") and value.lstrip("'").startswith(FORMULA_STARTS):
        return value[1:]
    return value


def recognise(path: Path) -> Recognised | None:
    """A table file (by its suffix); its rows add to the database's benchmark."""
    if path.is_file() and path.suffix.lower() in SUFFIXES:
        return Recognised(FORMAT_NAME, "table", None)
    return None


def parse_column_map(items: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``("response_id=item", "grader=rater,met=verdict")`` as ``{field: column}``.

    Raises:
        ValidationError: for an item that is not ``FIELD=COLUMN``, an unknown field, or a
            field mapped twice.
    """
    known = JUDGMENT_FIELDS.keys() | ADJUDICATION_FIELDS.keys()
    out: dict[str, str] = {}
    problems: list[Problem] = []
    for item in (part for raw in items for part in raw.split(",") if part.strip()):
        field, sep, column = item.partition("=")
        field, column = field.strip(), column.strip()
        if not sep or not field or not column:
            problems.append(Problem("--map", None, None, f"{item!r} is not FIELD=COLUMN"))
        elif field not in known:
            problems.append(
                Problem("--map", None, field, f"unknown field; fields: {', '.join(sorted(known))}")
            )
        elif field in out:
            problems.append(Problem("--map", None, field, "mapped twice"))
        else:
            out[field] = column
    if problems:
        raise ValidationError(problems)
    return out


def table_rows(
    path: Path, column_map: Mapping[str, str] | None = None
) -> tuple[str, Iterator[tuple[int, dict[str, Any]]]]:
    """What a table holds (``"judgments"`` or ``"adjudications"``) and its rows as
    records under gradercal's field names, each with its spreadsheet row number.

    Raises:
        ValidationError: when the file cannot be read, a mapped column is missing, or the
            columns fit neither kind.
    """
    frame = _load(path)
    name = path.name
    columns = [str(c) for c in frame.columns]
    mapping = dict(column_map or {})
    problems = [
        Problem(
            name, 1, field, f"--map {field}={col}: no column {col!r} (columns: {_list(columns)})"
        )
        for field, col in mapping.items()
        if col not in columns
    ]
    if problems:
        raise ValidationError(problems)
    taken = set(mapping.values())
    source = {  # field -> column: the map first, then columns already named like a field
        **{c: c for c in columns if c in JUDGMENT_FIELDS or c in ADJUDICATION_FIELDS},
        **mapping,
    }
    source = {f: c for f, c in source.items() if f in mapping or c not in taken}
    kind = (
        "judgments" if "grader" in source else "adjudications" if "adjudicator" in source else None
    )
    if kind is None:
        raise ValidationError(
            [
                Problem(
                    name,
                    1,
                    None,
                    "neither judgments (columns response_id, criterion_id, grader, met) nor "
                    "adjudications (response_id, criterion_id, met, adjudicator); name yours "
                    f"with --map FIELD=COLUMN (columns: {_list(columns)})",
                )
            ]
        )
    fields = JUDGMENT_FIELDS if kind == "judgments" else ADJUDICATION_FIELDS
    missing = [f for f in _REQUIRED[kind] if f not in source]
    if missing:
        raise ValidationError(
            [
                Problem(
                    name,
                    1,
                    f,
                    f"a table of {kind} needs this column (or --map {f}=COLUMN; "
                    f"columns: {_list(columns)})",
                )
                for f in missing
            ]
        )
    used = {f: c for f, c in source.items() if f in fields}
    first_row = 2 if path.suffix.lower() != ".parquet" else 1
    cells = {f: frame[c].tolist() for f, c in used.items()}

    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        for i in range(len(frame)):
            record: dict[str, Any] = {}
            for f, values in cells.items():
                value = _convert(values[i], fields[f])
                if value is not None or fields[f] == _VERDICT:
                    record[f] = value
            if all(v is None for v in record.values()):
                continue  # a blank row
            yield i + first_row, record

    return kind, rows()


def _load(path: Path) -> Any:
    import pandas as pd

    suffix = path.suffix.lower()
    try:
        if suffix in (".csv", ".tsv"):
            frame = pd.read_csv(
                path,
                sep="\t" if suffix == ".tsv" else ",",
                dtype=str,
                keep_default_na=False,
                encoding="utf-8-sig",
            )
            return frame.map(_restore_cell)
        if suffix in (".xlsx", ".xlsm"):
            return pd.read_excel(path, dtype=object)
        return pd.read_parquet(path)
    except ImportError as exc:
        extra = " (pip install 'gradercal[parquet]')" if suffix == ".parquet" else ""
        raise ValidationError(
            [
                Problem(
                    path.name, None, None, f"reading {suffix} files needs {exc.name or exc}{extra}"
                )
            ]
        ) from exc
    except UnicodeDecodeError:
        raise ValidationError([Problem(path.name, None, None, "not UTF-8 text")]) from None
    except Exception as exc:  # pandas, openpyxl and pyarrow raise many kinds
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValidationError(
            [Problem(path.name, None, None, f"cannot read as a {suffix[1:]} table: {reason}")]
        ) from None


def _list(columns: list[str]) -> str:
    return ", ".join(columns[:20]) + (" …" if len(columns) > 20 else "") if columns else "none"


@cache
def _pandas_missing() -> tuple[Any, ...]:
    """pandas' missing-value singletons (looked up once, not per cell)."""
    import pandas as pd

    return (pd.NA, pd.NaT)


def _blank(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    if isinstance(value, str) and not value.strip():
        return True
    return any(value is m for m in _pandas_missing())


def _convert(value: Any, kind: str) -> Any:
    """A cell as the JSON value format v1 expects; values that do not convert are passed
    through unchanged, so the schema check names the field and what it got."""
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item() if getattr(value, "ndim", 0) == 0 else value  # numpy scalars
    if _blank(value):
        return False if kind == _FLAG else None
    if kind == _NAME:
        if isinstance(value, float) and value.is_integer():
            return str(int(value))  # an id a spreadsheet turned into a number
        return str(value).strip() if isinstance(value, str | int | float) else value
    if kind == _TEXT:
        return value if isinstance(value, str) else str(value)
    if kind in (_VERDICT, _FLAG):
        if isinstance(value, bool):
            return value
        if isinstance(value, int | float) and value in (0, 1):
            return bool(value)
        said = read_verdict_word(str(value))
        return value if said is None else said
    if kind == _INT:
        number = _number(value)
        return int(number) if number is not None and number.is_integer() else value
    if kind == _NUMBER:
        number = _number(value)
        return number if number is not None else value
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value).strip()


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def read_table(
    path: Path, catalog: Catalog | None, column_map: Mapping[str, str] | None = None
) -> BenchmarkData:
    """Read a table of judgments or adjudications, validated as format v1's files are."""
    kind, rows = table_rows(path, column_map)
    reader = table_reader(path.parent, catalog if catalog is not None else Catalog())
    if kind == "judgments":
        reader.judgment_rows(path.name, rows)
    else:
        reader.adjudication_rows(path.name, rows)
    return reader.finish()
