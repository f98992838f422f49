"""gradercal._util.jsonsafe: the one rule that turns results into strict JSON data, rule
by rule, and a property test over nested structures of every kind of value it knows."""

from __future__ import annotations

import enum
import json
import math
import types
from collections import OrderedDict
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradercal._util.jsonsafe import json_safe
from gradercal.cli.common import emit_json, pretty_json

STAMP = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)


class Colour(enum.IntEnum):
    RED = 1


class Label(enum.StrEnum):
    A = "a"


def same(a: Any, b: Any) -> bool:
    """Equal, and of exactly the same types all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


# ------------------------------------------------------------------- plain values


@pytest.mark.parametrize("value", [None, True, False, 0, -7, 2.5, -0.0, 1e308, "", "é ✓"])
def test_plain_json_values_are_kept(value: Any) -> None:
    assert same(json_safe(value), value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_become_none(value: float) -> None:
    assert json_safe(value) is None


def test_subclasses_of_plain_types_become_the_plain_type() -> None:
    assert same(json_safe(Colour.RED), 1)
    assert same(json_safe(Label.A), "a")  # the value, as json.dumps prints it


# ------------------------------------------------------------------ numpy and pandas


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (np.float64(0.1), 0.1),
        (np.float32(0.5), 0.5),
        (np.int64(3), 3),
        (np.int8(-2), -2),
        (np.uint64(2**63), 2**63),
        (np.bool_(True), True),
        (np.bool_(False), False),
        (np.str_("x"), "x"),
        (np.float64("nan"), None),
        (np.float32("inf"), None),
        (np.float64("-inf"), None),
        (np.datetime64("NaT"), None),
    ],
)
def test_numpy_scalars_become_python_scalars(value: Any, expected: Any) -> None:
    assert same(json_safe(value), expected)


def test_a_numpy_scalar_without_python_equivalent_goes_to_default() -> None:
    assert json_safe(np.longdouble(1.5)) == str(np.longdouble(1.5))
    assert json_safe(np.longdouble(1.5), default=lambda _: "other") == "other"


def test_numpy_datetimes_become_datetimes_first() -> None:
    day = np.datetime64("2024-05-06")
    assert json_safe(day) == "2024-05-06"
    assert json_safe(day, iso_datetimes=True) == "2024-05-06"
    second = np.datetime64("2024-05-06T07:08:09")
    assert json_safe(second) == "2024-05-06 07:08:09"
    assert json_safe(second, iso_datetimes=True) == "2024-05-06T07:08:09"


def test_numpy_arrays_become_nested_lists() -> None:
    arr = np.array([[1.0, np.nan], [np.inf, 2.5]])
    assert same(json_safe(arr), [[1.0, None], [None, 2.5]])
    assert same(json_safe(np.array([1, 2], dtype=np.int32)), [1, 2])
    assert same(json_safe(np.array([True])), [True])
    assert same(json_safe(np.array(4.0)), 4.0)  # a 0-d array is its value
    assert same(json_safe(np.array([], dtype=float)), [])


def test_pandas_missing_values_become_none() -> None:
    assert json_safe(pd.NA) is None
    assert json_safe(pd.NaT) is None
    assert json_safe(pd.NaT, iso_datetimes=True) is None
    assert json_safe([pd.NA, pd.NaT, np.nan]) == [None, None, None]


def test_pandas_timestamps_are_datetimes() -> None:
    ts = pd.Timestamp("2024-05-06 07:08:09", tz="UTC")
    assert json_safe(ts) == "2024-05-06 07:08:09+00:00"
    assert json_safe(ts, iso_datetimes=True) == "2024-05-06T07:08:09+00:00"


def test_a_frame_row_from_itertuples() -> None:
    df = pd.DataFrame(
        {
            "n": pd.array([1, None], dtype="Int64"),
            "x": [0.25, np.nan],
            "ok": [True, False],
            "s": ["a", None],
        }
    )
    rows = [json_safe(list(r)) for r in df.itertuples(index=False, name=None)]
    assert rows == [[1, 0.25, True, "a"], [None, None, False, None]]
    assert type(rows[0][0]) is int and type(rows[0][2]) is bool


# ------------------------------------------------------------------ containers


def test_mappings_become_dicts_with_str_keys_in_order() -> None:
    assert same(json_safe({2: "b", 1: "a"}), {"2": "b", "1": "a"})
    assert same(json_safe({("a", 1): 1, None: 2, True: 3}), {"('a', 1)": 1, "None": 2, "True": 3})
    assert same(json_safe(types.MappingProxyType({"k": np.int64(1)})), {"k": 1})
    assert same(json_safe(OrderedDict(z=1, a=2)), {"z": 1, "a": 2})
    assert same(json_safe({np.str_("k"): 1}), {"k": 1})


def test_sequences_and_sets_become_lists() -> None:
    assert same(json_safe((1, (2, 3))), [1, [2, 3]])
    assert same(json_safe({5}), [5])
    assert same(json_safe(frozenset({"x"})), ["x"])
    assert same(json_safe([]), [])


def test_nested_containers_are_converted_all_the_way_down() -> None:
    value = {
        "a": [1, (np.float64(2.5), {"b": np.array([np.nan, 1.0])})],
        "c": {"d": {"e": (pd.NA, np.int64(7), STAMP)}},
    }
    assert same(
        json_safe(value),
        {
            "a": [1, [2.5, {"b": [None, 1.0]}]],
            "c": {"d": {"e": [None, 7, "2024-05-06 07:08:09+00:00"]}},
        },
    )


def test_the_input_is_not_changed() -> None:
    inner: list[Any] = [math.nan, (1, 2)]
    value: dict[Any, Any] = {"x": inner, 3: {"y": np.float64(1.0)}}
    out = json_safe(value)
    assert inner[1] == (1, 2) and math.isnan(inner[0])
    assert list(value) == ["x", 3]
    assert out is not value and out["x"] is not inner


# ------------------------------------------------------------ datetimes, default


def test_datetimes_default_to_str_and_iso_on_request() -> None:
    assert json_safe(STAMP) == "2024-05-06 07:08:09+00:00"  # str(): a space
    assert json_safe(STAMP, iso_datetimes=True) == "2024-05-06T07:08:09+00:00"
    naive = datetime(2024, 5, 6, 7, 8, 9, 123456)
    assert json_safe(naive) == "2024-05-06 07:08:09.123456"
    assert json_safe(naive, iso_datetimes=True) == "2024-05-06T07:08:09.123456"
    assert json_safe(date(2024, 5, 6)) == json_safe(date(2024, 5, 6), iso_datetimes=True)
    assert json_safe(date(2024, 5, 6)) == "2024-05-06"
    assert json_safe(time(7, 8), iso_datetimes=True) == "07:08:00"
    assert json_safe({"at": [STAMP]}, iso_datetimes=True) == {"at": ["2024-05-06T07:08:09+00:00"]}


def test_iso_datetimes_does_not_bypass_default_for_other_values() -> None:
    assert json_safe(Decimal("1.10"), iso_datetimes=True) == "1.10"
    assert json_safe(STAMP, default=lambda _: "D") == "D"
    assert (
        json_safe(STAMP, default=lambda _: "D", iso_datetimes=True) == "2024-05-06T07:08:09+00:00"
    )


def test_anything_else_goes_to_default() -> None:
    class Thing:
        def __str__(self) -> str:
            return "a thing"

    assert json_safe(Thing()) == "a thing"
    assert json_safe(Decimal("1.10")) == "1.10"
    assert json_safe(b"ab") == "b'ab'"
    assert json_safe(1 + 2j) == "(1+2j)"
    assert json_safe([Thing()], default=lambda obj: type(obj).__name__) == ["Thing"]
    assert json_safe({"x": Thing()}, default=lambda _: None) == {"x": None}


# ------------------------------------------------------------------ the emitter


def test_emit_json_prints_strict_json(capsys: pytest.CaptureFixture[str]) -> None:
    emit_json({"x": math.nan, "n": np.int64(2), "at": STAMP, "t": ("é",)})
    out = capsys.readouterr().out
    assert out == (
        '{\n  "x": null,\n  "n": 2,\n  "at": "2024-05-06 07:08:09+00:00",\n  "t": [\n    "é"\n  ]\n}\n'
    )


# ------------------------------------------------------------------ property test

_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.floats(allow_nan=True, allow_infinity=True).map(np.float64),
    st.floats(width=32, allow_nan=True, allow_infinity=True).map(np.float32),
    st.integers(-(2**63), 2**63 - 1).map(np.int64),
    st.booleans().map(np.bool_),
    st.text(max_size=3).map(np.str_),
    st.sampled_from([pd.NA, pd.NaT, np.datetime64("NaT"), Colour.RED, Label.A]),
    st.datetimes(timezones=st.none() | st.just(UTC)),
    st.dates(),
    st.times(),
    st.datetimes().map(pd.Timestamp),
    st.decimals(allow_nan=False, places=3),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=4).map(np.array),
)
_keys = st.one_of(st.text(max_size=4), st.integers(), st.booleans(), st.none(), st.floats())
_hashable = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=3))
_values = st.recursive(
    _leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(_keys, children, max_size=4),
        st.frozensets(_hashable, max_size=4),
        st.sets(_hashable, max_size=4),
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(value=_values, iso=st.booleans())
def test_any_nested_value_converts_to_strict_json_and_stays_put(value: Any, iso: bool) -> None:
    out = json_safe(value, iso_datetimes=iso)
    text = json.dumps(out, allow_nan=False)  # strict JSON: never raises
    assert same(json.loads(text), out)  # already plain JSON data
    assert same(json_safe(out, iso_datetimes=iso), out)  # converting twice changes nothing
    assert same(json_safe(out, iso_datetimes=not iso), out)


_JSON_DATA = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([1e-05, 2.5e-07, 1e-300, 1e16, 1.5e300, -0.0, 0.00012])
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(_JSON_DATA)
@settings(max_examples=400, deadline=None)
def test_pretty_json_is_the_standard_librarys_text(data: object) -> None:
    """The orjson fast path of every --json output writes exactly what json.dumps did."""
    expected = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)
    assert pretty_json(data) == expected


def test_pretty_json_control_characters_and_large_numbers() -> None:
    text = "".join(chr(c) for c in range(0x20)) + '"\\\x7f\u2028é𝄞'
    for data in ({"s": text, "k": [2**63, -(2**63), 2**64, 1e-05]}, [text], {"": {}}):
        assert pretty_json(data) == json.dumps(data, indent=2, ensure_ascii=False)


def test_pretty_json_takes_the_fast_path_on_ordinary_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A float like 10.000000000000002 (the health report's impacts) is not mistaken for
    a small one: the standard library is not called."""
    import gradercal.cli.common as common

    def refuse(*_: object, **__: object) -> str:
        raise AssertionError("fell back to json.dumps")

    data = {"impact": 10.000000000000002, "x": [0.0001, 100.00001, -3.5e16, 1e16]}
    expected = json.dumps(data, indent=2, ensure_ascii=False)
    monkeypatch.setattr(common.json, "dumps", refuse)
    assert pretty_json(data) == expected
