"""The number formatters (``gradercal._util.numbers``): what each writes, and that no
module writes a number or a percentage its own way."""

from __future__ import annotations

import math
import re

import numpy as np

from gradercal._util.numbers import (
    DASH,
    cell,
    finite_fixed,
    finite_interval,
    finite_percent,
    fixed,
    percent,
    trimmed,
)
from tests.conftest import ROOT


def test_fixed_and_percent_take_none_as_missing() -> None:
    assert fixed(0.12345) == "0.123" and fixed(2, 1) == "2.0" and fixed(None) == DASH == "—"
    assert fixed(None, missing="") == "" and fixed(math.nan) == "nan"
    assert percent(0.12345) == "12.3%" and percent(0.5, 0) == "50%" and percent(None) == "—"
    assert percent(None, missing="") == ""
    assert fixed(np.float64(0.5), 2) == "0.50"


def test_the_finite_family_takes_every_non_number_as_missing() -> None:
    for missing in (None, math.nan, math.inf, "x", object()):
        assert finite_fixed(missing) == finite_percent(missing) == "—"
    assert finite_fixed("0.25", 2) == "0.25" and finite_percent(np.float32(0.5)) == "50.0%"
    assert finite_interval(0.5, 0.25, 0.75) == "0.500 [0.250, 0.750]"
    assert finite_interval(0.5, math.nan, 0.75, 2) == "0.50"
    assert finite_interval(None, 0.1, 0.2) == "—"


def test_cell_and_trimmed() -> None:
    assert [cell(None), cell(True), cell(False), cell(3), cell(0.5, 1), cell("a")] == [
        "—",
        "yes",
        "no",
        "3.000",
        "0.5",
        "a",
    ]
    assert [trimmed(0.5), trimmed(2.0), trimmed(0.12345), trimmed(math.inf)] == [
        "0.5",
        "2",
        "0.123",
        "inf",
    ]


#: ``"—" if x is None else f"{x:.3f}"`` (or ``:.1%``), written out by hand.
_BY_HAND = re.compile(r'"[^"]*" if ([\w.\[\]\'"]+) is None else f"\{\1:\.(\d|\{\w+\})[f%]\}"')
#: Modules other changes of issue #31 own this round.
_OWNED = ("gradercal/ui/dashboard/", "gradercal/dashboard/compute.py", "gradercal/synth/")


def test_no_module_formats_a_number_by_hand() -> None:
    found = []
    for path in sorted((ROOT / "gradercal").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(_OWNED):
            continue
        for m in _BY_HAND.finditer(path.read_text("utf-8")):
            found.append(f"{rel}: {m.group(0)}")
    assert not found, "use gradercal._util.numbers:\n" + "\n".join(found)
