"""``map_distinct`` gives exactly the per-row loop's results, once per distinct value."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from gradercal._util.distinct import map_distinct


def _describe(x: Any) -> str:
    if x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x)):
        return f"missing {x!r}"
    return "first " + (str(x[0]) if isinstance(x, tuple) and x else repr(x))


values = st.one_of(
    st.none(),
    st.just(math.nan),
    st.just(pd.NA),
    st.sampled_from(["t1", "t2", "t3", ""]),
    st.tuples(st.sampled_from(["a", "b", "c"])).map(tuple),
    st.lists(st.sampled_from(["a", "b"]), max_size=3).map(tuple),
)


@given(st.lists(values, max_size=40))
def test_map_distinct_is_the_per_row_loop(rows: list[Any]) -> None:
    arr = np.empty(len(rows), dtype=object)
    for i, x in enumerate(rows):
        arr[i] = x
    assert map_distinct(arr, _describe).tolist() == [_describe(x) for x in rows]


def test_map_distinct_calls_once_per_distinct_value() -> None:
    calls: list[Any] = []

    def fn(x: Any) -> str:
        calls.append(x)
        return str(x)

    arr = np.array(["a", "b", "a", None, "b", None], dtype=object)
    assert map_distinct(arr, fn).tolist() == ["a", "b", "a", "None", "b", "None"]
    assert calls == ["a", "b", None, None]  # missing values one by one


def test_map_distinct_unhashable_values_one_by_one() -> None:
    arr = np.empty(3, dtype=object)
    arr[0], arr[1], arr[2] = ["x"], ["y"], ["x"]
    assert map_distinct(arr, lambda v: v[0]).tolist() == ["x", "y", "x"]
    assert map_distinct(np.empty(0, dtype=object), str).tolist() == []
