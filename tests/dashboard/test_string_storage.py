"""``compute_dashboard`` makes its text columns with pandas' Python-backed strings (#33).

Where pyarrow is installed pandas backs new text columns with Arrow, and the dashboard's
many small operations on them cost more (and the first call loads Arrow's compute
kernels). The numbers do not depend on the storage: the dashboard computed with Arrow
strings is the same.
"""

from __future__ import annotations

import inspect
import json

import pandas as pd
import pytest

from gradercal.dashboard import compute_dashboard
from gradercal.formats import read_path
from gradercal.frames import frames_from_data
from tests.conftest import DEMO


def _text_arrays(d: object) -> list[str]:
    """The class of every text column's array in the dashboard's tables."""
    frames = [v for v in vars(d).values() if isinstance(v, pd.DataFrame)]
    return [
        type(f[c].array).__name__
        for f in frames
        for c in f.columns
        if isinstance(f[c].dtype, pd.StringDtype)
    ]


def test_the_dashboard_is_computed_with_python_strings_and_the_same_numbers() -> None:
    pytest.importorskip("pyarrow")
    frames = frames_from_data(read_path(DEMO))
    d = compute_dashboard(frames, n_boot=20)
    arrays = _text_arrays(d)
    assert arrays and set(arrays) == {"StringArray"}, arrays
    assert pd.get_option("mode.string_storage") == "auto"  # put back afterwards
    bare = inspect.unwrap(compute_dashboard)  # without the decorators (the storage setting)
    with pd.option_context("mode.string_storage", "pyarrow"):
        arrow = bare(frames, n_boot=20)
    assert "ArrowStringArray" in _text_arrays(arrow)
    assert json.dumps(arrow.to_json(), sort_keys=True) == json.dumps(d.to_json(), sort_keys=True)
