"""Compare a JSON output with its recorded golden file: structure exactly, floats within a tolerance.

Exact in everything a user or a program reads as structure — the keys and their order, the
lengths of lists, every string (notes, labels, formatted figures), every integer, boolean and
null, and which numbers are integers and which are floats. A float may differ from the recorded
one by at most ``REL_TOL`` of its size (``ABS_TOL`` near zero): the last digits of a sum move
with the summation order of a numpy or pandas release (0.4534412955465586 against
…5585 is a relative difference of 2.4e-16), while any change a user could see in a figure
printed to six digits is more than a million times larger.
"""

from __future__ import annotations

import json
import math
from typing import Any

REL_TOL = 1e-9
ABS_TOL = 1e-12


def json_differences(actual: Any, expected: Any, path: str = "$") -> list[str]:
    """Every place where ``actual`` differs from ``expected`` beyond the tolerance, by JSON path."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {type(actual).__name__}"]
        if list(actual) != list(expected):
            return [f"{path}: keys {list(actual)} != expected {list(expected)}"]
        out: list[str] = []
        for key in expected:
            out += json_differences(actual[key], expected[key], f"{path}.{key}")
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{path}: expected a list, got {type(actual).__name__}"]
        if len(actual) != len(expected):
            return [f"{path}: {len(actual)} items != expected {len(expected)}"]
        out = []
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            out += json_differences(a, e, f"{path}[{i}]")
        return out
    if type(actual) is not type(expected):
        return [f"{path}: {actual!r} ({type(actual).__name__}) != expected {expected!r}"]
    if isinstance(expected, float):
        if math.isclose(actual, expected, rel_tol=REL_TOL, abs_tol=ABS_TOL):
            return []
        return [f"{path}: {actual!r} != expected {expected!r} (beyond rel {REL_TOL:g})"]
    return [] if actual == expected else [f"{path}: {actual!r} != expected {expected!r}"]


def assert_json_matches(actual_text: str, expected_text: str, name: str) -> None:
    """Fail with the first differences (by JSON path) when the two texts differ beyond tolerance."""
    diffs = json_differences(json.loads(actual_text), json.loads(expected_text))
    assert not diffs, f"{name} differs from its golden file:\n  " + "\n  ".join(diffs[:20])
