"""Fixtures shared by the analysis tests."""

from __future__ import annotations

import pytest

from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from gradercal.synth import SynthConfig, generate


@pytest.fixture(scope="module")
def lenient(tmp_path_factory: pytest.TempPathFactory) -> Frames:
    """A synthetic benchmark whose judge says "met" on 25–30% of the truly unmet
    accuracy and completeness criteria (a fixed leniency)."""
    out = tmp_path_factory.mktemp("lenient") / "bench"
    generate(
        out,
        SynthConfig(
            tasks=40,
            criteria_per_task=12,
            responses_per_task=3,
            human_graders=3,
            artifacts_per_task=0,
            judge_leniency={"axis:completeness": 0.3, "axis:accuracy": 0.25},
            seed=1,
        ),
    )
    return frames_from_data(read_path(out))
