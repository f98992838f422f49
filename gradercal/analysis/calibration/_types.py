"""The calibration methods and the types shared by the modules of the package.

The four methods (see :mod:`gradercal.analysis.calibration`) work at one of two levels:
``threshold`` and ``leniency`` correct criterion verdicts (``"criterion"``), ``isotonic``
and ``platt`` map response scores (``"response"``).
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np
import numpy.typing as npt

__all__ = [
    "CRITERION_METHODS",
    "METHODS",
    "RESPONSE_METHODS",
    "FloatArray",
    "Method",
    "ThresholdMetric",
]

FloatArray = npt.NDArray[np.float64]
Method = Literal["threshold", "leniency", "isotonic", "platt"]
METHODS: tuple[Method, ...] = get_args(Method)
#: Methods that correct criterion verdicts (the rest map response scores).
CRITERION_METHODS: tuple[Method, ...] = ("threshold", "leniency")
RESPONSE_METHODS: tuple[Method, ...] = ("isotonic", "platt")
ThresholdMetric = Literal["kappa", "f1", "balanced_f1"]


def calibration_level(method: str) -> Literal["criterion", "response"]:
    """Whether ``method`` calibrates criterion verdicts or response scores; ValueError if unknown."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    return "criterion" if method in CRITERION_METHODS else "response"


#: How each figure of a calibration report is named to people (the command's table, the
#: window's calibrate dialog); a figure without an entry is shown by its key.
FIGURE_LABELS: dict[str, str] = {
    "cohen_kappa": "Cohen's kappa",
    "balanced_f1": "balanced F1",
    "percent_agreement": "agreement",
    "leniency_bias": "leniency bias",
    "brier": "Brier score",
    "ece": "expected calibration error",
    "mean_score_bias": "mean score bias",
    "mae": "mean absolute error",
    "rmse": "RMSE",
    "pass_rate_bias": "pass-rate bias",
    "pass_kappa": "pass/fail kappa",
    "pass_agreement": "pass/fail agreement",
}
