"""Applying a pure function to a column once per distinct value.

Engines map columns of ids or tag tuples through a Python function (a dict lookup, the
primary tag of a tuple): 55,000 rows, a few thousand distinct values. :func:`map_distinct`
calls the function once per distinct value (pandas' hash-table factorization) and spreads
the results by the codes; missing values (None, NaN, pd.NA: code −1) and unhashable ones
go through the function one by one, exactly as a per-row loop would. For a function whose
result depends only on the value (equal values, equal results), the output is the
per-row loop's.

This module imports numpy and pandas only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

__all__ = ["map_distinct"]


def map_distinct(values: npt.NDArray[Any], fn: Callable[[Any], Any]) -> npt.NDArray[np.object_]:
    """``[fn(x) for x in values]`` as an object array, ``fn`` called once per distinct
    value."""
    arr = np.asarray(values, dtype=object)
    out = np.empty(len(arr), dtype=object)
    try:
        codes, uniques = pd.factorize(arr, sort=False, use_na_sentinel=True)
    except TypeError:  # an unhashable value: one by one
        for i, x in enumerate(arr.tolist()):
            out[i] = fn(x)
        return out
    mapped = np.empty(len(uniques), dtype=object)
    for k, u in enumerate(np.asarray(uniques, dtype=object).tolist()):
        mapped[k] = fn(u)
    codes = np.asarray(codes, dtype=np.intp)
    known = codes >= 0
    out[known] = mapped[codes[known]]
    for i in np.flatnonzero(~known).tolist():
        out[i] = fn(arr[i])
    return out
