"""Table files (CSV, TSV, XLSX/XLS, Parquet) into pandas DataFrames. Qt-free; runs in workers."""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING

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
