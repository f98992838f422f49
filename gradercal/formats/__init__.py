"""Reading and writing benchmark files: format v1 folders and HealthBench-style JSONL."""

from __future__ import annotations

from pathlib import Path

from gradercal.errors import Problem, ValidationError
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
    "Catalog",
    "judgment_record",
    "read_folder",
    "read_healthbench",
    "read_path",
    "response_record",
    "sniff_jsonl",
    "task_record",
    "write_jsonl",
]


def read_path(path: str | Path, catalog: Catalog | None = None) -> BenchmarkData:
    """Read whatever ``gradercal import`` was given: a v1 folder, one of its JSONL files,
    or a HealthBench-style JSONL file.

    Raises:
        ValidationError: with every problem found; nothing is returned half-read.
    """
    p = Path(path)
    if not p.exists():
        raise ValidationError([Problem(str(path), None, None, "no such file or folder")])
    if p.is_file() and p.suffix == ".jsonl" and sniff_jsonl(p) == "healthbench":
        return read_healthbench(p)
    return read_folder(p, catalog)
