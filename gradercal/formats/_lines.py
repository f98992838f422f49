"""Reading JSON Lines with precise, per-line error reports, and what every format shares."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema_rs
import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError as SchemaError

from gradercal.errors import Problem

#: Lines longer than this are refused (protects memory against garbage input).
MAX_LINE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Recognised:
    """What a format's recogniser says of a path it can read.

    Attributes:
        format: The format's name (``"v1"``, ``"healthbench"``).
        kind: What the path holds (``"folder"``, ``"tasks"``, ``"responses"``,
            ``"judgments"``, ``"healthbench"``), None when no format recognised it.
        benchmark: The benchmark it belongs to when ``--benchmark`` is not given; None:
            the database's benchmark (files that add to one, e.g. more judgments).
        threshold_from_file: The path carries the benchmark's settings (its pass
            threshold replaces the stored one).
        new_benchmark: With ``benchmark`` None, the benchmark to make when the database
            holds none yet (files that can stand alone, e.g. Inspect logs); None: such a
            database is an error.
    """

    format: str
    kind: str | None
    benchmark: str | None
    threshold_from_file: bool = False
    new_benchmark: str | None = None


def first_record(path: Path) -> dict[str, Any] | None:
    """The first non-blank line of a JSONL file as an object; None if there is none, it
    does not parse or is not an object (the reader reports such problems later)."""
    try:
        with path.open("rb") as fh:
            for raw in fh:
                if raw.strip():
                    first = json.loads(raw.decode("utf-8", errors="replace"))
                    break
            else:
                return None
    except (OSError, json.JSONDecodeError):
        return None
    return first if isinstance(first, dict) else None


def read_jsonl(path: Path, display: str, problems: list[Problem]) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line of a JSONL file.

    Undecodable or unparsable lines are recorded in ``problems`` and skipped, so a
    caller sees every bad line of a file in one pass.
    """
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if len(raw) > MAX_LINE_BYTES:
                problems.append(Problem(display, lineno, None, "line is longer than 64 MiB"))
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                problems.append(
                    Problem(display, lineno, None, f"invalid UTF-8 at byte {exc.start + 1}")
                )
                continue
            if lineno == 1 and text.startswith("\ufeff"):
                text = text[1:]
            if not text.strip():
                continue
            if "\\u0000" in text and _has_nul(_loads_or_none(text)):
                problems.append(
                    Problem(
                        display,
                        lineno,
                        None,
                        "contains a NUL character (\\u0000), which databases cannot store",
                    )
                )
                continue
            try:
                value = orjson.loads(text)
            except orjson.JSONDecodeError as exc:
                problems.append(
                    Problem(display, lineno, None, f"invalid JSON: {exc.msg} (column {exc.colno})")
                )
                continue
            yield lineno, value


def read_json(path: Path, display: str, problems: list[Problem]) -> Any:
    """Read one JSON document, recording a problem (and returning None) when it is bad."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(Problem(display, None, None, f"invalid UTF-8 at byte {exc.start + 1}"))
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        problems.append(
            Problem(display, exc.lineno, None, f"invalid JSON: {exc.msg} (column {exc.colno})")
        )
        return None


def _loads_or_none(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _has_nul(value: Any) -> bool:
    """True when any string (key or value) inside ``value`` holds a NUL character."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


@cache
def schema(name: str) -> dict[str, Any]:
    """``gradercal/schemas/<name>.schema.json``, parsed."""
    text = resources.files("gradercal").joinpath(f"schemas/{name}.schema.json").read_text("utf-8")
    value: dict[str, Any] = json.loads(text)
    return value


@cache
def validator(name: str) -> Draft202012Validator:
    """The pure-Python validator: slow, but its errors make the clearest messages."""
    Draft202012Validator.check_schema(schema(name))
    return Draft202012Validator(schema(name))


@cache
def fast_validator(name: str) -> Any:
    """The compiled (Rust) validator of the same schema: decides validity quickly."""
    return jsonschema_rs.validator_for(schema(name))


def field_path(parts: Any) -> str:
    """Render a jsonschema path deque as ``rubric[3].points``."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _friendly(err: SchemaError) -> tuple[str, str]:
    path = list(err.absolute_path)
    if err.validator == "required":
        missing = str(err.message).split("'")[1] if "'" in err.message else err.message
        field = field_path([*path, missing])
        return field, "is required"
    field = field_path(path) or "(line)"
    if err.validator == "type":
        expected: Any = err.validator_value
        names = [str(n) for n in (expected if isinstance(expected, list) else [expected])]
        pretty = " or ".join(
            "null" if n == "null" else f"{'an' if n[0] in 'aeiou' else 'a'} {n}" for n in names
        )
        return field, f"must be {pretty}, got {_show(err.instance)}"
    if err.validator == "oneOf" and path and "artifacts" in [str(p) for p in path]:
        return field, 'must be {"path": …} or {"url": …} (exactly one)'
    if err.validator == "enum":
        choices: Any = err.validator_value
        allowed = ", ".join(repr(v) for v in choices)
        return field, f"must be one of {allowed}, got {_show(err.instance)}"
    if err.validator == "const":
        return field, f"must be {err.validator_value!r}, got {_show(err.instance)}"
    if err.validator == "minItems":
        return field, "must not be empty"
    if err.validator == "minLength":
        return field, "must not be empty"
    if err.validator == "additionalProperties":
        return field, str(err.message)
    return field, str(err.message)


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "…"


def check_schema(
    name: str, value: Any, display: str, lineno: int | None, problems: list[Problem]
) -> bool:
    """Validate ``value`` against a named schema; record each error; True when valid."""
    if not isinstance(value, dict):
        problems.append(
            Problem(display, lineno, None, f"must be a JSON object, got {_show(value)}")
        )
        return False
    if fast_validator(name).is_valid(value):
        return True
    errors = sorted(validator(name).iter_errors(value), key=lambda e: list(map(str, e.path)))
    for err in errors:
        field, message = _friendly(err)
        problems.append(Problem(display, lineno, field, message))
    return not errors
