"""One rule for turning results into strict JSON data.

:func:`json_safe` makes a copy of a result (nested mappings, sequences, numpy arrays and
scalars, pandas missing values, datetimes, …) that ``json.dumps(..., allow_nan=False)``
accepts and that prints the same numbers: every ``--json`` output of the CLI
(:func:`gradercal.cli.common.emit_json`), the dashboard's JSON form, the score reports'
records and the prompt package's body go through it.

The rules, in order:

* ``None``, ``pandas.NA``, ``pandas.NaT`` → ``None``;
* ``bool``, ``int``, ``str`` → kept (as the plain Python type);
* ``float`` → kept when finite, ``None`` for NaN and ±inf (strict JSON has no NaN);
* mappings → ``dict`` with ``str(key)`` keys, values converted;
* lists, tuples, sets, frozensets and numpy arrays → ``list``, items converted;
* numpy scalars → the Python scalar (``.item()``), then converted by these rules
  (``np.float64("nan")`` → ``None``); one without a Python equivalent
  (``np.longdouble``) → ``default(obj)``;
* ``datetime``, ``date`` and ``time`` → ``isoformat()`` with ``iso_datetimes=True``,
  else ``default(obj)`` like anything else;
* anything else → ``default(obj)`` (``str`` unless told otherwise; its result is taken
  as it is, so a ``default`` must return JSON data).

numpy and pandas are never imported here: a value can only be a numpy scalar or a
pandas missing value if something else has loaded them already (the CLI's data
commands and the grading app run without them).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from datetime import date, datetime, time
from typing import Any

__all__ = ["json_safe"]


def json_safe(obj: Any, *, default: Callable[[Any], Any] = str, iso_datetimes: bool = False) -> Any:
    """A strict-JSON copy of ``obj`` (see the module docstring for the rules).

    Args:
        obj: Any value; containers are copied, never changed.
        default: What becomes of a value no rule covers (``str`` by default).
        iso_datetimes: Datetimes, dates and times as ``isoformat()`` (the prompt package)
            instead of ``default(obj)`` (``str(dt)``: a space between date and time).

    Converting the result again changes nothing, and ``json.dumps(json_safe(x),
    allow_nan=False)`` never fails for a ``default`` that returns JSON data.
    """
    # the common cases first: this runs once per cell of a table
    if obj is None or isinstance(obj, bool):
        return obj
    if isinstance(obj, str):
        return obj if type(obj) is str else str.__str__(obj)
    if isinstance(obj, int):
        return obj if type(obj) is int else int(obj)
    if isinstance(obj, float):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {
            str(k): json_safe(v, default=default, iso_datetimes=iso_datetimes)
            for k, v in obj.items()
        }
    if isinstance(obj, list | tuple | set | frozenset):
        return [json_safe(v, default=default, iso_datetimes=iso_datetimes) for v in obj]
    np = sys.modules.get("numpy")
    if np is not None:
        if isinstance(obj, np.generic):
            item = obj.item()
            if isinstance(item, np.generic):  # np.longdouble: no Python equivalent
                return default(obj)
            return json_safe(item, default=default, iso_datetimes=iso_datetimes)
        if isinstance(obj, np.ndarray):
            return json_safe(obj.tolist(), default=default, iso_datetimes=iso_datetimes)
    pd = sys.modules.get("pandas")
    if pd is not None and (obj is pd.NA or obj is pd.NaT):
        return None
    if iso_datetimes and isinstance(obj, datetime | date | time):
        return obj.isoformat()
    return default(obj)
