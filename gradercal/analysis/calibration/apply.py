"""A judge's headline figures under its saved calibration.

When a judge has an *active* calibration (fitted by ``gradercal calibrate`` and stored
with its version; see :mod:`gradercal.analysis.calibration`), its verdicts — including those of
runs made after the fit — are read through it: each response's calibrated rubric score
is :func:`gradercal.analysis.calibration.apply_calibration`'s, and per model

* ``mean_score`` is the mean of the calibrated scores of the scored responses (those
  whose judge grading is complete), ``raw_mean_score`` the same of the raw judge scores
  of the same responses;
* ``pass_rate`` is the share of those responses whose calibrated score reaches the
  benchmark's pass threshold (``score ≥ threshold − PASS_EPSILON``, as in
  :mod:`gradercal.analysis.scoring`), ``raw_pass_rate`` the same for the raw scores.

Nothing is written: the stored verdicts stay the judge's own, so refitting or
deactivating a calibration changes the figures and nothing else. Core code: pandas and
numpy only; :mod:`gradercal.db.calibrations` loads the calibration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from gradercal.frames import Frames

__all__ = ["calibrated_report"]


def _rate(values: np.ndarray[Any, Any]) -> float | None:
    return None if values.size == 0 else float(values.mean())


def calibrated_report(frames: Frames, judge: str, calibration: Mapping[str, Any]) -> dict[str, Any]:
    """Per-model raw and calibrated mean score and pass rate of ``judge``.

    Args:
        frames: The benchmark frames holding the judge's verdicts.
        judge: The judge's grader name.
        calibration: The saved calibration: ``params`` (the fitted values) and for the
            report ``id``, ``method``, ``version``, ``created_at`` (e.g.
            ``SavedCalibration.to_dict(full=True)``).

    Returns:
        ``{"judge", "pass_threshold", "calibration": {"id", "method", "version",
        "created_at"}, "models": [{"model", "n_responses", "n_scored", "mean_score",
        "pass_rate", "raw_mean_score", "raw_pass_rate"}], "responses": [{"response_id",
        "model", "score", "raw_score", "passed"}]}``; rates are None for a model with no
        scored response.
    """
    from gradercal.analysis.calibration.fit import apply_calibration
    from gradercal.analysis.scoring import PASS_EPSILON

    params = dict(calibration["params"])
    applied = apply_calibration(frames, judge, params)
    bar = float(frames.pass_threshold) - PASS_EPSILON
    score = applied["score"].to_numpy(np.float64)
    raw = applied["judge_score"].to_numpy(np.float64)
    scored = np.isfinite(score) & np.isfinite(raw)
    models = []
    for model in sorted(set(applied["model"].astype(str))):
        mine = applied["model"].astype(str).to_numpy() == model
        ok = mine & scored
        models.append(
            {
                "model": model,
                "n_responses": int(mine.sum()),
                "n_scored": int(ok.sum()),
                "mean_score": _rate(score[ok]),
                "pass_rate": _rate((score[ok] >= bar).astype(np.float64)),
                "raw_mean_score": _rate(raw[ok]),
                "raw_pass_rate": _rate((raw[ok] >= bar).astype(np.float64)),
            }
        )
    ids = applied["response_id"].astype(str).tolist()
    names = applied["model"].astype(str).tolist()

    def value(x: float) -> float | None:
        return float(x) if np.isfinite(x) else None

    responses = [
        {
            "response_id": ids[i],
            "model": names[i],
            "score": value(score[i]) if scored[i] else None,
            "raw_score": value(raw[i]) if scored[i] else None,
            "passed": bool(score[i] >= bar) if scored[i] else None,
        }
        for i in range(len(ids))
    ]
    return {
        "judge": judge,
        "pass_threshold": float(frames.pass_threshold),
        "calibration": {
            "id": calibration.get("id"),
            "method": calibration.get("method", params.get("method")),
            "version": calibration.get("version"),
            "created_at": calibration.get("created_at"),
        },
        "models": models,
        "responses": responses,
    }
