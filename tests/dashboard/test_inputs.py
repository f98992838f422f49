"""The dashboard's inputs as one typed value (issue #31): :class:`DashboardInputs` gives the
numbers of the keyword form, a section reads the data it was given through
``SectionInputs.data`` filtered like the frames, and the bootstrap travels as one
:class:`BootSettings`."""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd
import pytest

from gradercal.dashboard import (
    DashboardData,
    DashboardFilters,
    DashboardInputs,
    DashboardRequest,
    compute_dashboard,
)
from gradercal.dashboard import tables as tables_mod
from gradercal.dashboard.tables import SectionInputs, TableSection
from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from gradercal.stats.boot_settings import BootSettings
from tests.conftest import DEMO


@pytest.fixture(scope="module")
def demo() -> Frames:
    return frames_from_data(read_path(DEMO))


def _json(d: Any) -> dict[str, Any]:
    out: dict[str, Any] = d.to_json()
    out.pop("elapsed", None)
    return out


def test_the_inputs_object_gives_the_numbers_of_the_keyword_form(demo: Frames) -> None:
    model = str(demo.responses["model"].iloc[0])
    filters = DashboardFilters(models=(model,))
    old = compute_dashboard(demo, filters=filters, n_boot=25, seed=4, ci=0.9, bar=0.8)
    new = compute_dashboard(
        DashboardInputs(
            DashboardData(demo),
            DashboardRequest(filters=filters, bar=0.8, boot=BootSettings(25, seed=4, ci=0.9)),
        )
    )
    assert _json(new) == _json(old)
    assert {k: new.overview[k] for k in ("n_boot", "seed", "ci")} == {
        "n_boot": 25,
        "seed": 4,
        "ci": 0.9,
    }
    assert DashboardInputs.of(demo, n_boot=25, seed=4, ci=0.9, filters=filters, bar=0.8) == (
        DashboardInputs(
            DashboardData(demo),
            DashboardRequest(filters=filters, bar=0.8, boot=BootSettings(25, 4, 0.9)),
        )
    )


def test_options_beside_an_inputs_object_are_refused(demo: Frames) -> None:
    with pytest.raises(TypeError, match="n_boot"):
        compute_dashboard(DashboardInputs(DashboardData(demo)), n_boot=10)


@pytest.mark.parametrize(
    ("boot", "message"),
    [
        (BootSettings(10, ci=1.0), "ci must be between 0 and 1"),
        (BootSettings(-1), "n_boot must be ≥ 0"),
    ],
)
def test_bootstrap_settings_out_of_range_are_refused(
    demo: Frames, boot: BootSettings, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        compute_dashboard(DashboardInputs(DashboardData(demo), DashboardRequest(boot=boot)))
    assert BootSettings(7, 1, 0.8).kwargs() == {"n_boot": 7, "seed": 1, "ci": 0.8}


def test_a_section_reads_its_data_and_the_bootstrap_from_section_inputs(
    demo: Frames, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new section needs no other change than its entry and a field of the data: it is
    given the data (the frames filtered, the task reviews of the kept experts) and the
    request's bootstrap."""
    seen: list[SectionInputs] = []

    def compute(inputs: SectionInputs) -> pd.DataFrame:
        seen.append(inputs)
        return pd.DataFrame({"n_tasks": [len(inputs.data.frames.tasks)]})

    probe = TableSection(
        key="probe",
        title="Probe",
        filter_hint="",
        empty_text="",
        report=tables_mod.TABLE_SECTIONS[0].report,
        compute=compute,
    )
    monkeypatch.setattr(tables_mod, "TABLE_SECTIONS", (*tables_mod.TABLE_SECTIONS, probe))
    domain = str(demo.tasks["domain"].dropna().iloc[0])
    expert = sorted(set(demo.judgments.loc[demo.judgments["grader_kind"] == "human", "grader"]))
    reviews = pd.DataFrame(
        {
            "task_id": [demo.tasks["task_id"].iloc[0]] * 2,
            "reviewer": [expert[0], "someone else"],
            "dimension": ["clarity", "clarity"],
            "answer": [4, 5],
        }
    )
    boot = BootSettings(12, seed=3, ci=0.8)
    filters = DashboardFilters(domains=(domain,), graders=tuple(expert))
    d = compute_dashboard(
        DashboardInputs(
            DashboardData(demo, reviews=reviews),
            DashboardRequest(filters=filters, boot=boot),
        )
    )
    (given,) = seen
    assert given.boot == boot and given.data.frames is given.frames
    assert set(given.frames.tasks["domain"]) == {domain}
    assert given.data.reviews is not None and list(given.data.reviews["reviewer"]) == [expert[0]]
    assert d.tables["probe"]["n_tasks"].tolist() == [len(given.frames.tasks)]
    assert dataclasses.is_dataclass(given.data) and given.data.versions is None
