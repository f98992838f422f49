"""The ``threshold`` and ``leniency`` cross-fits without scikit-learn (#33).

A cross-fit of those two methods — the dashboard's and ``gradercal report``'s default
calibration — computes what the estimators compute on plain arrays
(:mod:`gradercal.analysis.calibration.thresholds`), so that a report imports no
scikit-learn (≈ 1 s with scipy.stats). These tests hold it to the estimators' numbers:
the task folds are ``GroupKFold``'s on any groups (Hypothesis, many ties), every
out-of-fold and held-out prediction, table, design and fitted attribute equals the
estimator path's (``crossfit._ESTIMATOR_FREE`` off), saved parameters are the same and
still rebuild the estimator, input the estimators refuse still meets their error, and a
report, start to exit, never imports scikit-learn.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradercal.analysis import calibration as cal
from gradercal.analysis.calibration import crossfit
from gradercal.analysis.calibration.thresholds import task_folds
from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from tests.conftest import DEMO


@pytest.fixture(scope="module")
def demo() -> Frames:
    return frames_from_data(read_path(DEMO))


JUDGE = "judge-gpt"


@pytest.fixture
def with_estimators(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``compute(fn)``: ``fn()`` computed on the estimators' path."""

    def compute(fn: Any) -> Any:
        with monkeypatch.context() as m:
            m.setattr(crossfit, "_ESTIMATOR_FREE", False)
            return fn()

    return compute


def _reference_folds(groups: list[str], k: int) -> dict[str, int]:
    from sklearn.model_selection import GroupKFold

    arr = np.asarray(groups, dtype=object)
    out: dict[str, int] = {}
    for f, (_, test) in enumerate(GroupKFold(n_splits=k).split(arr, groups=arr)):
        for t in arr[test]:
            out[str(t)] = f
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(1, 4), min_size=2, max_size=60),
    names=st.sampled_from(["t{}", "task-{:03d}", "{}", "é{}x"]),
    k=st.integers(2, 7),
    seed=st.integers(0, 2**16),
)
def test_task_folds_are_those_of_group_kfold(
    sizes: list[int], names: str, k: int, seed: int
) -> None:
    """Any groups (sizes 1–4: many ties; names whose sorted order is not numeric), any
    number of folds up to the number of groups: the fold of every group is the one
    ``GroupKFold`` puts it in; the rows come in any order."""
    k = min(k, len(sizes))
    groups = [names.format(i) for i, n in enumerate(sizes) for _ in range(n)]
    rows = np.random.default_rng(seed).permutation(len(groups))
    shuffled = [groups[i] for i in rows]
    got = task_folds(shuffled, k)
    assert got == _reference_folds(shuffled, k)
    assert list(got.values()) == sorted(got.values())  # in fold order


def test_task_folds_refuse_more_folds_than_groups() -> None:
    with pytest.raises(ValueError, match="n_splits=3 greater than the number of groups: 2"):
        task_folds(["a", "b", "a"], 3)


def test_the_row_folds_are_group_kfold_s(demo: Frames) -> None:
    """``crossfit._task_folds`` (each calibration task's fold and each row's) against
    ``GroupKFold`` on the demo's items, some rows outside the calibration tasks."""
    items = cal.item_table(demo, JUDGE)
    tasks = items["task_id"].to_numpy(object)
    calib = np.isfinite(items["human_met"].to_numpy(np.float64))
    calib &= tasks != sorted(set(tasks))[0]
    for k in (2, 3, 5):
        folds, rows = crossfit._task_folds(tasks, calib, k)
        assert folds == _reference_folds(list(tasks[calib]), k)
        expected = np.array([folds.get(str(t), -1) for t in tasks])
        np.testing.assert_array_equal(rows, expected)


def _same_estimator(a: Any, b: Any) -> None:
    assert type(a) is type(b)
    assert a.get_params() == b.get_params()
    va, vb = vars(a), vars(b)
    assert sorted(va) == sorted(vb)
    for key, value in va.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, vb[key])
            assert value.dtype == vb[key].dtype
        else:
            assert value == vb[key], key


def _same_design(a: Any, b: Any) -> None:
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
        else:
            assert x == y, f.name


CASES: list[tuple[cal.Method, dict[str, Any]]] = [
    ("threshold", {}),
    ("threshold", {"per_group": True, "metric": "f1", "tag_prefix": "axis:"}),
    ("threshold", {"metric": "balanced_f1", "holdout": 0.3, "seed": 4}),
    ("threshold", {"per_group": True, "holdout": 0.25, "seed": 2, "n_splits": 3}),
    ("leniency", {}),
    ("leniency", {"per_group": False, "holdout": 0.3, "seed": 4}),
    ("leniency", {"tag_prefix": "axis:", "n_splits": 2}),
]


@pytest.mark.parametrize("bench", ["demo", "lenient"])
@pytest.mark.parametrize(("method", "options"), CASES)
def test_the_cross_fit_equals_the_estimators(
    request: pytest.FixtureRequest,
    with_estimators: Any,
    bench: str,
    method: cal.Method,
    options: dict[str, Any],
) -> None:
    """Every output of the cross-fit without scikit-learn is the estimators' exactly:
    folds, out-of-fold and held-out predictions, the item and response tables, the
    resampling design and the final calibrator (built on first use)."""
    frames: Frames = request.getfixturevalue(bench)
    judge = JUDGE if bench == "demo" else "judge"
    plain = cal.cross_fit(frames, judge, method, **options)
    ref = with_estimators(lambda: cal.cross_fit(frames, judge, method, **options))
    assert plain.fitted is not None and ref.fitted is None
    assert plain.folds == ref.folds
    assert (plain.method, plain.level, plain.groups) == (ref.method, ref.level, ref.groups)
    assert (plain.held_out, plain.n_train) == (ref.held_out, ref.n_train)
    assert plain.items is not None and ref.items is not None
    pd.testing.assert_frame_equal(plain.items, ref.items, check_exact=True)
    pd.testing.assert_frame_equal(plain.responses, ref.responses, check_exact=True)
    assert np.isfinite(plain.items["oof"]).any()
    if options.get("holdout"):
        assert np.isfinite(plain.items["test"]).any()
    _same_design(plain.design, ref.design)
    _same_estimator(plain.estimator, ref.estimator)


@pytest.mark.parametrize("method", ["threshold", "leniency"])
def test_fit_calibration_and_its_saved_parameters_are_unchanged(
    demo: Frames, with_estimators: Any, method: str
) -> None:
    """``fit_calibration`` (its figures, intervals, split and saved parameters) is the
    same either way, and the saved parameters rebuild a calibrator that predicts as the
    fitted one."""
    kw: dict[str, Any] = {"n_boot": 40, "holdout": 0.3, "seed": 3, "tag_prefix": "axis:"}
    plain = cal.fit_calibration(demo, JUDGE, method, **kw)  # type: ignore[arg-type]
    ref = with_estimators(lambda: cal.fit_calibration(demo, JUDGE, method, **kw))  # type: ignore[arg-type]
    a, b = plain.to_dict(), ref.to_dict()
    for d in (a, b):
        d["provenance"].pop("fitted_at")
    assert a == b
    assert "sklearn_params" in a["params"]
    _same_estimator(plain.estimator, ref.estimator)
    rebuilt = cal.calibrator_from_params(json.loads(json.dumps(a["params"])))
    X = np.column_stack([np.linspace(0, 1, 21), np.zeros(21)])
    np.testing.assert_array_equal(rebuilt.predict_proba(X), plain.estimator.predict_proba(X))


def test_input_the_estimators_refuse_takes_their_path(demo: Frames) -> None:
    """An unknown metric, a non-finite feature where a fit or prediction sees it, or a
    label other than 0/1: the estimators' path (and its error), never a silent number."""
    with pytest.raises(ValueError, match="metric must be one of"):
        cal.cross_fit(demo, JUDGE, "threshold", metric="bogus")  # type: ignore[arg-type]
    X = np.column_stack([np.linspace(0, 1, 6), np.zeros(6)])
    y = np.array([0.0, 1.0, 0.0, 1.0, np.nan, 1.0])
    calib = np.isfinite(y)
    fold = np.array([0, 1, 0, 1, -1, 0])
    held = np.zeros(6, bool)
    ok = crossfit._plain_threshold_fits
    assert ok("threshold", "kappa", X, y, calib, fold, held)
    assert not ok("isotonic", "kappa", X, y, calib, fold, held)
    assert not ok("threshold", "bogus", X, y, calib, fold, held)
    bad = X.copy()
    bad[1, 0] = np.nan
    assert not ok("leniency", "kappa", bad, y, calib, fold, held)
    outside = X.copy()
    outside[4, 0] = np.inf  # a row nothing fits or predicts
    assert ok("leniency", "kappa", outside, y, calib, fold, held)
    assert not ok("leniency", "kappa", outside, y, calib, fold, held | (np.arange(6) == 4))
    half = y.copy()
    half[0] = 0.5
    assert not ok("threshold", "kappa", X, half, calib, fold, held)
