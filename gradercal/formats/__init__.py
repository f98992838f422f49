"""Benchmark files in and out: the registry of import formats, and format v1's writers.

Each import format is one module here with a ``recognise(path)`` (does it read this path,
and which benchmark does it belong to?) and a reader; :data:`FORMATS` lists them in the
order they are asked. ``gradercal import`` calls :func:`recognise`, :func:`check_ready`
(before it opens a database) then :func:`read_path`, and knows nothing of any format.
Adding a format: write its module (recogniser, reader, a fixture made by the upstream
tool in the tests) and add one entry to :data:`FORMATS`; a format that needs an optional
extra says so in its ``unavailable``.
Format v1 (docs/formats.md) is also what the exporters write and the fallback whose
reader explains what is wrong with an unrecognised path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gradercal._util.collector import collections_paused
from gradercal.errors import GradercalError, Problem, ValidationError
from gradercal.formats import healthbench, healthbench_meta, inspect_log, tables, v1
from gradercal.formats._lines import Recognised
from gradercal.formats.healthbench import read_healthbench
from gradercal.formats.v1 import (
    Catalog,
    judgment_record,
    read_folder,
    response_record,
    sniff_jsonl,
    task_record,
    write_jsonl,
)
from gradercal.model import BenchmarkData

__all__ = [
    "FORMATS",
    "Catalog",
    "ImportFormat",
    "Recognised",
    "check_ready",
    "judgment_record",
    "read_folder",
    "read_healthbench",
    "read_path",
    "recognise",
    "response_record",
    "sniff_jsonl",
    "task_record",
    "write_jsonl",
]


def _ready() -> str | None:
    return None


@dataclass(frozen=True)
class ImportFormat:
    """One import format: its name, how it recognises a path, and its reader."""

    name: str
    description: str
    recognise: Callable[[Path], Recognised | None]
    read: Callable[[Path, Catalog | None], BenchmarkData]
    #: What its recogniser looks for (said when no format recognises a file).
    looks_for: str = ""
    #: Its reader taking a column map (``--map FIELD=COLUMN``), for formats whose
    #: files name their own columns; None: the format's fields are fixed.
    read_mapped: Callable[[Path, Catalog | None, Mapping[str, str]], BenchmarkData] | None = None
    #: Why its reader cannot run here (an optional extra is not installed), or None.
    unavailable: Callable[[], str | None] = _ready


def _read_healthbench(path: Path, _catalog: Catalog | None) -> BenchmarkData:
    return read_healthbench(path)


def _read_healthbench_meta(path: Path, _catalog: Catalog | None) -> BenchmarkData:
    return healthbench_meta.read_healthbench_meta(path)


#: The import formats, asked in this order (the first that recognises a path reads it).
FORMATS: tuple[ImportFormat, ...] = (
    ImportFormat(
        healthbench_meta.FORMAT_NAME,
        "HealthBench meta-evaluation JSONL (physicians' binary labels per completion and "
        "rubric criterion)",
        healthbench_meta.recognise,
        _read_healthbench_meta,
        "a .jsonl file whose lines have binary_labels, anonymized_physician_ids, rubric "
        "and completion",
    ),
    ImportFormat(
        healthbench.FORMAT_NAME,
        "HealthBench-style JSONL (prompt, rubrics, optional completion per line)",
        healthbench.recognise,
        _read_healthbench,
        "a .jsonl file whose lines have prompt and rubrics",
    ),
    ImportFormat(
        inspect_log.FORMAT_NAME,
        "Inspect AI eval logs (.eval, .json, or a folder of them): samples as responses, "
        "per-criterion scores as judge verdicts; needs the inspect extra",
        inspect_log.recognise,
        inspect_log.read_inspect,
        inspect_log.LOOKS_FOR,
        unavailable=inspect_log.unavailable,
    ),
    ImportFormat(
        tables.FORMAT_NAME,
        "judgments or adjudications as a CSV, TSV, Excel or Parquet table (gradercal's own "
        "exports, or any table with --map FIELD=COLUMN)",
        tables.recognise,
        tables.read_table,
        "a " + "/".join(tables.SUFFIXES) + " file",
        read_mapped=tables.read_table,
    ),
    ImportFormat(
        v1.FORMAT_NAME,
        "gradercal benchmark folder v1 (tasks, responses, judgments, adjudications JSONL; "
        "docs/formats.md)",
        v1.recognise,
        read_folder,
        "a folder with tasks.jsonl, or one tasks, responses, judgments or adjudications "
        ".jsonl file (docs/formats.md)",
    ),
)
_FALLBACK = FORMATS[-1]


def recognise(path: str | Path) -> Recognised:
    """What ``path`` is, by the first format that recognises it; else format v1 with
    ``kind=None`` (its reader then says what is wrong), named after the folder."""
    p = Path(path)
    for fmt in FORMATS:
        found = fmt.recognise(p)
        if found is not None:
            return found
    folder = p if not p.is_file() else p.parent
    return Recognised(_FALLBACK.name, None, folder.resolve().name)


def check_ready(found: Recognised) -> None:
    """Raise when the format that recognised a path cannot read it here (its optional
    extra is not installed): one line saying what to install.

    Raises:
        GradercalError: the reason, e.g. ``pip install 'gradercal[inspect]'``.
    """
    reason = _format(found).unavailable()
    if reason is not None:
        raise GradercalError(f"{found.format} format: {reason}")


def _format(found: Recognised) -> ImportFormat:
    return next(f for f in FORMATS if f.name == found.format)


def read_path(
    path: str | Path,
    catalog: Catalog | None = None,
    column_map: Mapping[str, str] | None = None,
) -> BenchmarkData:
    """Read whatever ``gradercal import`` was given, with the format that recognises it.

    ``column_map`` (``{field: column}``) names the columns of a table whose headers are
    not gradercal's field names; formats with fixed fields refuse one.

    Raises:
        ValidationError: with every problem found; nothing is returned half-read.
    """
    p = Path(path)
    if not p.exists():
        raise ValidationError([Problem(str(path), None, None, "no such file or folder")])
    found = recognise(p)
    if found.kind is None and p.is_file():
        tried = "; ".join(f"{f.name} needs {f.looks_for}" for f in FORMATS)
        raise ValidationError(
            [Problem(p.name, None, None, f"no import format reads this file (tried {tried})")]
        )
    fmt = _format(found)
    if column_map:
        if fmt.read_mapped is None:
            mapped = ", ".join(f.name for f in FORMATS if f.read_mapped is not None)
            raise ValidationError(
                [
                    Problem(
                        p.name,
                        None,
                        None,
                        f"--map applies to tables ({mapped}); this is a {fmt.name} "
                        "file, whose fields are fixed",
                    )
                ]
            )
        return _explained(fmt, p, lambda: fmt.read_mapped(p, catalog, column_map))  # type: ignore[misc]
    return _explained(fmt, p, lambda: fmt.read(p, catalog))


def _explained(fmt: ImportFormat, path: Path, read: Callable[[], BenchmarkData]) -> BenchmarkData:
    """``read()``; a file's problems close with the format that took it and the others
    (a file taken for the wrong format then says so)."""
    try:
        with collections_paused():  # hundreds of thousands of records, no cycles
            return read()
    except ValidationError as exc:
        if not path.is_file() or exc.hint:
            raise
        others = ", ".join(f.name for f in FORMATS if f is not fmt)
        raise ValidationError(
            exc.problems,
            hint=f"(read as {fmt.name}: {fmt.description}; if it is another kind of file, "
            f"gradercal also reads {others}: see docs/formats.md)",
        ) from None
