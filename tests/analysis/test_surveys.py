"""gradercal.analysis.surveys: shares by hand, ordinal alpha against the krippendorff package,
input validation and bootstrap intervals."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest

from gradercal.analysis.surveys import survey_summary


def _reviews(rows: list[tuple[str, str, str, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["task_id", "reviewer", "dimension", "answer"])


def test_hand_worked_shares() -> None:
    # dimension "grounded": answers 5, 4, 4, 2, 5 → strongly agree 2/5, agree or strongly 4/5,
    # mean 20/5 = 4
    df = _reviews(
        [
            ("t1", "ana", "grounded", 5),
            ("t1", "ben", "grounded", 4),
            ("t2", "ana", "grounded", 4),
            ("t2", "ben", "grounded", 2),
            ("t3", "ana", "grounded", 5),
            ("t3", "ana", "real", 3),
        ]
    )
    rep = survey_summary(df, ["grounded", "real", "absent"])
    g, r, absent = rep["dimensions"]
    assert g["share_strongly_agree"]["value"] == pytest.approx(2 / 5)
    assert g["share_agree_or_strongly_agree"]["value"] == pytest.approx(4 / 5)
    assert g["mean"]["value"] == pytest.approx(4.0)
    assert g["counts"] == {"1": 0, "2": 1, "3": 0, "4": 2, "5": 2}
    assert (g["n_tasks"], g["n_reviewers"], g["n_answers"]) == (3, 2, 5)
    # one reviewer only on "real": alpha undefined, with the reason
    assert r["krippendorff_alpha"]["value"] is None
    assert r["krippendorff_alpha"]["note"]
    assert absent["n_answers"] == 0 and absent["share_strongly_agree"]["value"] is None
    assert rep["n_answers"] == 6 and rep["bootstrap"] is None


def test_ordinal_alpha_equals_the_krippendorff_package() -> None:
    rng = np.random.default_rng(1)
    reviewers = ["a", "b", "c"]
    rows = []
    data = np.full((3, 30), np.nan)
    for t in range(30):
        base = rng.integers(2, 6)
        for k, rev in enumerate(reviewers):
            if rng.random() < 0.8:
                ans = int(np.clip(base + rng.integers(-1, 2), 1, 5))
                rows.append((f"t{t}", rev, "strong_task", ans))
                data[k, t] = ans
    rep = survey_summary(_reviews(rows), n_boot=300, seed=4)
    (d,) = rep["dimensions"]
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
    assert d["krippendorff_alpha"]["value"] == pytest.approx(expected, abs=1e-12)
    lo, hi = d["krippendorff_alpha"]["ci"]
    assert lo < expected < hi
    lo, hi = d["share_agree_or_strongly_agree"]["ci"]
    assert lo <= d["share_agree_or_strongly_agree"]["value"] <= hi
    assert rep["bootstrap"] == {"n_boot": 300, "seed": 4, "ci": 0.95, "cluster": "task"}


def test_validation() -> None:
    with pytest.raises(ValueError, match="1–5"):
        survey_summary(_reviews([("t", "a", "d", 6)]))
    with pytest.raises(ValueError, match="more than once"):
        survey_summary(_reviews([("t", "a", "d", 4), ("t", "a", "d", 5)]))
    with pytest.raises(ValueError, match="lack columns"):
        survey_summary(pd.DataFrame({"task_id": ["t"]}))
    empty = survey_summary(_reviews([]))
    assert empty["dimensions"] == [] and empty["n_answers"] == 0
