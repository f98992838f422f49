"""Compare a JSON output with its recorded golden file: structure exactly, floats within a tolerance.

Exact in everything a user or a program reads as structure — the keys and their order, the
lengths of lists, every string (notes, labels, formatted figures), every integer, boolean and
null, and which numbers are integers and which are floats. A float may differ from the recorded
one by at most ``REL_TOL`` of its size (``ABS_TOL`` near zero): the last digits of a sum move
with the summation order of a numpy or pandas release (0.4534412955465586 against
…5585 is a relative difference of 2.4e-16), while any change a user could see in a figure
printed to six digits is more than a million times larger.

**Figures added after the golden file was recorded.** Adding a statistic to the catalogue
(:mod:`gradercal.stats.catalogue`) adds its key to the outputs that report its views
(``gradercal stats`` reports every statistic; ``agreement``, ``report``… the views they
show). A golden file pins exactly the figures it records: a figure key of the catalogue that
appears *nowhere* in the golden file is a *new figure*, and only what names a new figure is
left out of the comparison — an object's key that is a new figure, and an item of a list that
is a new figure's key or an object with a string value that is one (a row
``{"statistic": "<new>", …}``). Everything else stays exact: the keys the golden file has,
their order, every other list item, and every value of every figure it records. A new
figure's values are pinned by its own tests (the catalogue's generic tests and its entry's
``checked_in``), so a golden file needs no editing when a statistic is added; a figure the
golden file records can never vanish or move unnoticed.

**Table sections added after the golden file was recorded** are treated the same way: a key
of :data:`gradercal.dashboard.tables.TABLE_SECTIONS` that the golden file never mentions is
a new section of the dashboard's JSON (and of ``report --json``), pinned by the section's
own test, so adding a section needs no golden edit either (:func:`new_names`).
"""

from __future__ import annotations

import json
import math
from typing import Any

from gradercal.dashboard.tables import TABLE_SECTIONS
from gradercal.stats.catalogue import FIGURES

REL_TOL = 1e-9
ABS_TOL = 1e-12


def _mentioned(value: Any, into: set[str]) -> set[str]:
    """Every string and object key in ``value`` (the names a golden file mentions)."""
    if isinstance(value, dict):
        into.update(value)
        for v in value.values():
            _mentioned(v, into)
    elif isinstance(value, list):
        for v in value:
            _mentioned(v, into)
    elif isinstance(value, str):
        into.add(value)
    return into


def new_figures(expected: Any) -> frozenset[str]:
    """The catalogue's figure keys and the dashboard's table-section keys that
    ``expected`` never mentions (added after it was recorded)."""
    names = frozenset(FIGURES) | {section.key for section in TABLE_SECTIONS}
    return names - _mentioned(expected, set())


def _names_new(item: Any, new: frozenset[str]) -> bool:
    if isinstance(item, str):
        return item in new
    return isinstance(item, dict) and any(isinstance(v, str) and v in new for v in item.values())


def json_differences(
    actual: Any, expected: Any, path: str = "$", new: frozenset[str] | None = None
) -> list[str]:
    """Every place where ``actual`` differs from ``expected`` beyond the tolerance, by JSON path.

    ``new``: the figure keys left out of the comparison (default: :func:`new_figures` of
    ``expected``, see the module docstring).
    """
    if new is None:
        new = new_figures(expected)
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {type(actual).__name__}"]
        if new:
            actual = {k: v for k, v in actual.items() if k not in new}
        if list(actual) != list(expected):
            return [f"{path}: keys {list(actual)} != expected {list(expected)}"]
        out: list[str] = []
        for key in expected:
            out += json_differences(actual[key], expected[key], f"{path}.{key}", new)
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{path}: expected a list, got {type(actual).__name__}"]
        if new:
            actual = [a for a in actual if not _names_new(a, new)]
        if len(actual) != len(expected):
            return [f"{path}: {len(actual)} items != expected {len(expected)}"]
        out = []
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            out += json_differences(a, e, f"{path}[{i}]", new)
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
