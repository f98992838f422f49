"""Table files (CSV, TSV, XLSX/XLS, Parquet) into pandas DataFrames. Qt-free; runs in workers.

:func:`read_table` reads a file whole; :func:`read_table_preview` (what the viewer shows)
reads at most ``max_rows`` rows of each sheet and says how many there are (exactly, or
at least). A workbook whose sheets are small is read by pandas as :func:`read_table`
does; a sheet larger than :data:`XLSX_STREAM_BYTES` uncompressed is streamed from its XML
and reading stops after the first rows, so a million-row sheet costs what its first rows
cost (its cells are shown as stored: numbers, text, booleans; dates as their serial
numbers).
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any
from xml.etree import ElementTree

if TYPE_CHECKING:
    import pandas as pd


class TableParseError(ValueError):
    """The bytes are not a readable table; the message says why."""


def _delimiter(sample: str, default: str) -> str:
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        return default


def read_table(data: bytes, name: str | None = None) -> dict[str, pd.DataFrame]:
    """Sheet name → frame (``""`` for single-table formats), in file order."""
    import pandas as pd

    lower = (name or "").lower()
    try:
        if lower.endswith((".xlsx", ".xlsm", ".xls")) or data[:4] == b"PK\x03\x04":
            if not data.startswith(b"PK\x03\x04") and not lower.endswith(".xls"):
                raise TableParseError("not an Excel workbook (no ZIP signature)")
            sheets = pd.read_excel(io.BytesIO(data), sheet_name=None)
            if not sheets:
                raise TableParseError("the workbook has no sheets")
            return {str(k): v for k, v in sheets.items()}
        if lower.endswith(".parquet") or data[:4] == b"PAR1":
            return {"": pd.read_parquet(io.BytesIO(data))}
        if b"\x00" in data[:65536]:
            raise TableParseError("binary data (NUL bytes): not a CSV or TSV text table")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = data.decode("latin-1")
        if not text.strip():
            raise TableParseError("the file is empty")
        default = "\t" if lower.endswith((".tsv", ".tab")) else ","
        sep = default if lower.endswith((".tsv", ".tab")) else _delimiter(text[:65536], default)
        return {"": pd.read_csv(io.StringIO(text), sep=sep, engine="c", low_memory=False)}
    except TableParseError:
        raise
    except Exception as exc:  # pandas / openpyxl / pyarrow raise many kinds
        kind = type(exc).__name__
        raise TableParseError(f"cannot read the table ({kind}: {exc})") from exc


#: Rows of each sheet the viewer shows.
PREVIEW_ROWS = 1000
#: A workbook sheet larger than this (uncompressed XML) is streamed, not read by pandas.
XLSX_STREAM_BYTES = 8 * 2**20

_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_CELL_REF = re.compile(r"([A-Z]+)(\d*)")


@dataclass(frozen=True)
class SheetPreview:
    """The first rows of a sheet and how many it has.

    ``rows`` is the number of data rows of the sheet when known exactly, ``at_least``
    a number of data rows it is known to have at least (``rows`` when exact)."""

    frame: pd.DataFrame
    rows: int | None
    at_least: int

    @property
    def complete(self) -> bool:
        return self.rows is not None and self.rows == len(self.frame)

    def describe(self) -> str:
        """``"3 rows × 2 columns"``, or ``"first 1,000 of ≥ 1,000,000 rows × 2 columns"``."""
        cols = f"{self.frame.shape[1]:,} columns"
        if self.complete:
            return f"{len(self.frame):,} rows × {cols}"
        total = f"{self.rows:,}" if self.rows is not None else f"≥ {self.at_least:,}"
        return f"first {len(self.frame):,} of {total} rows × {cols} (sorting sorts these)"


def read_table_preview(
    data: bytes, name: str | None = None, max_rows: int = PREVIEW_ROWS
) -> dict[str, SheetPreview]:
    """Sheet name → its first ``max_rows`` rows and how many rows it has (see the module
    docstring); the same sheets and errors as :func:`read_table`."""
    lower = (name or "").lower()
    if data.startswith(b"PK\x03\x04") and not lower.endswith(".xls"):
        try:
            big = _big_sheets(data)
        except (zipfile.BadZipFile, KeyError, ElementTree.ParseError, ValueError) as exc:
            raise TableParseError(
                f"cannot read the workbook ({type(exc).__name__}: {exc})"
            ) from exc
        if big:
            try:
                return _stream_workbook(data, max_rows)
            except (zipfile.BadZipFile, KeyError, ElementTree.ParseError, ValueError) as exc:
                kind = type(exc).__name__
                raise TableParseError(f"cannot read the workbook ({kind}: {exc})") from exc
    out = {}
    for sheet, frame in read_table(data, name).items():
        n = len(frame)
        out[sheet] = SheetPreview(frame.iloc[:max_rows], n, n)
    return out


def _sheet_paths(archive: zipfile.ZipFile) -> list[tuple[str, str]]:
    """(sheet name, its member in the archive), in workbook order."""
    book = ElementTree.fromstring(archive.read("xl/workbook.xml"))
    rels = ElementTree.fromstring(archive.read("xl/_rels/workbook.xml.rels"))
    targets = {r.get("Id"): r.get("Target") or "" for r in rels}
    out = []
    for sheet in book.iter(f"{_MAIN}sheet"):
        target = targets[sheet.get(f"{_REL}id")]
        path = target.lstrip("/") if target.startswith("/") else "xl/" + target
        out.append((sheet.get("name") or "", path))
    return out


def _big_sheets(data: bytes) -> bool:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return any(
            archive.getinfo(path).file_size > XLSX_STREAM_BYTES
            for _name, path in _sheet_paths(archive)
        )


def _column(ref: str, fallback: int) -> int:
    m = _CELL_REF.match(ref or "")
    if not m:
        return fallback
    n = 0
    for ch in m.group(1):
        n = n * 26 + ord(ch) - 64
    return n - 1


def _rows(archive: zipfile.ZipFile, path: str, limit: int) -> tuple[list[list[Any]], int | None]:
    """The first ``limit`` rows of a sheet (cells as stored; shared strings as their
    index, tagged) and its row count from its ``<dimension>`` (None when absent)."""
    rows: list[list[Any]] = []
    declared: int | None = None
    with archive.open(path) as fh:
        for _event, el in ElementTree.iterparse(fh, events=("end",)):
            tag = el.tag
            if tag == f"{_MAIN}dimension":
                last = (el.get("ref") or "").split(":")[-1]
                m = _CELL_REF.match(last)
                declared = int(m.group(2)) if m and m.group(2) else None
            elif tag == f"{_MAIN}row":
                row: list[Any] = []
                for c in el.iter(f"{_MAIN}c"):
                    col = _column(c.get("r") or "", len(row))
                    row.extend([None] * (col - len(row)))
                    row.append(_value(c))
                rows.append(row)
                el.clear()
                if len(rows) >= limit:
                    break
    return rows, declared


class _Shared(int):
    """The index of a shared string (resolved once the rows are read)."""


def _value(c: ElementTree.Element) -> Any:
    kind = c.get("t")
    if kind == "inlineStr":
        return "".join(t.text or "" for t in c.iter(f"{_MAIN}t"))
    v = c.find(f"{_MAIN}v")
    text = None if v is None else v.text
    if text is None:
        return None
    if kind == "s":
        return _Shared(int(text))
    if kind == "b":
        return text == "1"
    if kind in ("str", "e"):
        return text
    number = float(text)
    return int(number) if number.is_integer() and "." not in text and "E" not in text else number


def _shared_strings(archive: zipfile.ZipFile, needed: set[int]) -> dict[int, str]:
    """The shared strings of the given indexes (reading stops after the last one)."""
    out: dict[int, str] = {}
    if not needed or "xl/sharedStrings.xml" not in archive.namelist():
        return out
    last = max(needed)
    with archive.open("xl/sharedStrings.xml") as fh:
        i = 0
        for _event, el in ElementTree.iterparse(fh, events=("end",)):
            if el.tag == f"{_MAIN}si":
                if i in needed:
                    out[i] = "".join(t.text or "" for t in el.iter(f"{_MAIN}t"))
                el.clear()
                i += 1
                if i > last:
                    break
    return out


def _stream_workbook(data: bytes, max_rows: int) -> dict[str, SheetPreview]:
    import pandas as pd

    out = {}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for sheet, path in _sheet_paths(archive):
            rows, declared = _rows(archive, path, max_rows + 2)  # header, rows, one more
            needed: set[int] = {int(v) for r in rows for v in r if isinstance(v, _Shared)}
            strings = _shared_strings(archive, needed)
            rows = [[strings.get(v, "") if isinstance(v, _Shared) else v for v in r] for r in rows]
            header, body = (rows[0], rows[1:]) if rows else ([], [])
            width = max((len(r) for r in rows), default=0)
            names = [
                str(header[j]) if j < len(header) and header[j] is not None else f"Unnamed: {j}"
                for j in range(width)
            ]
            shown = [r + [None] * (width - len(r)) for r in islice(body, max_rows)]
            frame = pd.DataFrame(shown, columns=names, dtype=object).infer_objects()
            more = len(body) > max_rows
            if not more:
                out[sheet] = SheetPreview(frame, len(frame), len(frame))
                continue
            at_least = max(len(body), (declared or 0) - 1)
            out[sheet] = SheetPreview(frame, None, at_least)
    return out
