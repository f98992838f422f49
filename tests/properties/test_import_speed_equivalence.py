"""The import's fast paths give exactly what the plain ones give.

* :func:`gradercal.model.judgment_of` fills a frozen dataclass's ``__dict__`` in one
  update instead of calling its ``__init__``: the object must be equal, hash the same,
  print the same and stay frozen.
* :func:`gradercal.formats._lines.read_jsonl` parses a line's bytes directly and takes
  the old decode-then-parse path only when that fails: for any line (valid or not, with
  a byte order mark, blank, with NUL escapes, broken UTF-8) the values and the problems
  must be those of the slow path alone.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradercal.errors import Problem
from gradercal.formats import _lines
from gradercal.model import GraderKind, Judgment, judgment_of

texts = st.one_of(st.none(), st.text(max_size=20))
stamps = st.one_of(st.none(), st.datetimes(timezones=st.just(UTC)))


@given(
    st.tuples(
        st.text(max_size=10),
        st.text(max_size=10),
        st.text(max_size=10),
        st.sampled_from(list(GraderKind)),
        st.one_of(st.none(), st.booleans()),
        st.one_of(st.none(), st.integers(0, 4)),
        st.one_of(st.none(), st.floats(0, 1)),
        texts,
        st.booleans(),
        texts,
        stamps,
        stamps,
        st.one_of(st.none(), st.integers(1, 9)),  # task_version
    )
)
def test_judgment_of_is_the_constructor(fields: tuple[object, ...]) -> None:
    names = [f.name for f in dataclasses.fields(Judgment)]
    plain = Judgment(**dict(zip(names, fields, strict=True)))  # type: ignore[arg-type]
    fast = judgment_of(*fields)  # type: ignore[arg-type]
    assert fast == plain and hash(fast) == hash(plain) and repr(fast) == repr(plain)
    assert dataclasses.asdict(fast) == dataclasses.asdict(plain)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.met = True  # type: ignore[misc]


def _slow_read(path: Path) -> tuple[list[tuple[int, object]], list[Problem]]:
    """Every line through the old path: decode, then parse (the reference)."""
    problems: list[Problem] = []
    out = []
    for lineno, raw in enumerate(path.read_bytes().splitlines(keepends=True), start=1):
        if len(raw) > _lines.MAX_LINE_BYTES:
            continue
        value = _lines._line_value(raw, lineno, "f.jsonl", problems)
        if value is _lines._SKIP:
            continue
        if _lines.too_deep(raw, value) or _lines.duplicate_key(raw, value) is not None:
            continue
        out.append((lineno, value))
    return out, problems


LINES = [
    b'{"a": 1}\n',
    b"\xef\xbb\xbf" + b'{"bom": true}\n',
    b"\n",
    b"   \t \n",
    "\u00a0\n".encode(),  # a no-break space only: blank for str.strip
    b'{"nul": "x\\u0000y"}\n',
    b'{"escaped": "x\\\\u0000y"}\n',
    b'{"bad": \xff}\n',
    b'{"cut": \n',
    b'{"a": 1, "a": 2}\n',
    b'["deep"]\n',
    '{"ünï": "cödé", "emoji": "\U0001f9ec"}\n'.encode(),
    b'{"lone": "\\ud800"}\n',
    b"[1, 2, 3]\n",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(LINES), min_size=1, max_size=8))
def test_read_jsonl_reads_as_the_slow_path_would(
    tmp_path_factory: object, lines: list[bytes]
) -> None:
    folder = tmp_path_factory.mktemp("lines")  # type: ignore[attr-defined]
    path = folder / "f.jsonl"
    path.write_bytes(b"".join(lines))
    problems: list[Problem] = []
    fast = list(_lines.read_jsonl(path, "f.jsonl", problems))
    want, want_problems = _slow_read(path)
    assert fast == want
    # the structural checks report too: compare only the parse problems
    assert [p for p in problems if "named twice" not in p.message] == want_problems
