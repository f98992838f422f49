"""Reading JSON Lines with precise, per-line error reports, and what every format shares."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema_rs
import orjson

from gradercal.errors import Problem

if TYPE_CHECKING:  # the pure-Python jsonschema loads only to word a problem (start-up time)
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError as SchemaError

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
            # The usual line: parsed from its bytes at once (orjson checks the UTF-8
            # itself); anything it refuses takes the slow path, which words the problem.
            body = raw[3:] if lineno == 1 and raw.startswith(_BOM) else raw
            if b"\\u0000" in body:
                value = _line_value(raw, lineno, display, problems)
            else:
                try:
                    value = orjson.loads(body)
                except orjson.JSONDecodeError:
                    value = _line_value(raw, lineno, display, problems)
            if value is _SKIP:
                continue
            if too_deep(raw, value):
                problems.append(Problem(display, lineno, None, _DEEP))
                continue
            twice = duplicate_key(raw, value)
            if twice is not None:
                problems.append(Problem(display, lineno, twice, _TWICE))
                continue
            yield lineno, value


_BOM = "\ufeff".encode()
#: What :func:`_line_value` returns for a line to leave out (blank, or a problem recorded).
_SKIP: Any = object()


def _line_value(raw: bytes, lineno: int, display: str, problems: list[Problem]) -> Any:
    """A line's value the slow way, recording why when it has none (:data:`_SKIP`)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(Problem(display, lineno, None, f"invalid UTF-8 at byte {exc.start + 1}"))
        return _SKIP
    if lineno == 1 and text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        return _SKIP
    if "\\u0000" in text and _has_nul(_loads_or_none(text)):
        problems.append(
            Problem(
                display,
                lineno,
                None,
                "contains a NUL character (\\u0000), which databases cannot store",
            )
        )
        return _SKIP
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        problems.append(
            Problem(display, lineno, None, f"invalid JSON: {exc.msg} (column {exc.colno})")
        )
        return _SKIP


def read_json(path: Path, display: str, problems: list[Problem]) -> Any:
    """Read one JSON document (a UTF-8 byte order mark is allowed, as on the JSONL files),
    recording a problem (and returning None) when it is bad."""
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(Problem(display, None, None, f"invalid UTF-8 at byte {exc.start + 1}"))
        return None
    text = text.removeprefix("\ufeff")
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        problems.append(
            Problem(display, exc.lineno, None, f"invalid JSON: {exc.msg} (column {exc.colno})")
        )
        return None
    if too_deep(raw, value):
        problems.append(Problem(display, None, None, _DEEP))
        return None
    twice = duplicate_key(raw, value)
    if twice is not None:
        problems.append(Problem(display, None, twice, _TWICE))
        return None
    return value


#: Deepest nesting of objects and lists accepted in a file (docs/formats.md).
MAX_DEPTH = 64
_DEEP = f"nested more than {MAX_DEPTH} levels deep (objects and lists inside each other)"


def too_deep(raw: bytes, value: Any) -> bool:
    """Whether ``value`` nests objects and lists more than :data:`MAX_DEPTH` levels (a text
    with fewer brackets than that cannot, so most lines are never walked)."""
    if raw.count(b"{") + raw.count(b"[") <= MAX_DEPTH:
        return False
    level: list[tuple[Any, int]] = [(value, 1)]
    while level:
        item, depth = level.pop()
        if depth > MAX_DEPTH:
            return True
        children = item.values() if isinstance(item, dict) else item
        level.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


_TWICE = "named twice in one object (JSON keeps only the last; give each field once)"


def duplicate_key(raw: bytes, value: Any) -> str | None:
    """Where ``raw`` (the text ``value`` was parsed from) names a key twice in one object,
    as a field path (``rubric[2].points``); None when it does not.

    Parsers keep the last of two equal keys silently. The check is cheap: ``"`` followed
    by ``:`` occurs in JSON text only after a key (inside strings a quote is always
    escaped, and the value written back escapes it the same way), so a text with more of
    them than its value written back lost a key; only then is it parsed again, slowly,
    to name the key.
    """
    if raw.count(b'":') <= orjson.dumps(value).count(b'":'):
        return None
    found: list[tuple[str, dict[str, Any]]] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(items)
        if not found and len(obj) < len(items):
            seen: set[str] = set()
            for key, _ in items:
                if key in seen:
                    found.append((key, obj))
                    break
                seen.add(key)
        return obj

    text = raw.decode("utf-8", errors="replace").removeprefix("\ufeff")
    json.loads(text, object_pairs_hook=pairs)
    if not found:  # pragma: no cover - the count says a key was lost
        return "(line)"
    key, obj = found[0]
    where = _path_to(value, obj)
    return f"{where}.{key}" if where else key


def _path_to(value: Any, target: dict[str, Any], prefix: str = "") -> str | None:
    """The path of the object equal to ``target`` inside ``value`` ("" for ``value``)."""
    if isinstance(value, dict):
        if value == target:
            return prefix
        items: Any = value.items()
    elif isinstance(value, list):
        items = ((f"[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for k, v in items:
        step = k if k.startswith("[") else (f".{k}" if prefix else k)
        found = _path_to(v, target, prefix + step)
        if found is not None:
            return found
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
    from jsonschema import Draft202012Validator

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
    if err.validator == "maxItems":
        count = len(err.instance) if isinstance(err.instance, list) else "more"
        return field, f"has {count} items; at most {err.validator_value} are accepted"
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
