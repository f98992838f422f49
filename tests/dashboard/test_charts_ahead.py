"""The report's charts drawn while the dashboard is computed (#33).

``compute_dashboard(…, partial=ChartsAhead())`` hands each process's sections to the
report as soon as that process has them: the parent draws the pairwise matrix, the
confusion matrix and the forest plots of its groupings while the forked child still
computes; the child draws the reliability and models charts and the forest plot of its
grouping (whose dashed overall lines it receives from the parent, :class:`Handover`)
before it returns. ``render_html`` only writes the document. Each chart reads only parts
of the dashboard that are final (:meth:`Chart.drawable`), so the report is the same,
byte for byte.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib
import pytest

import gradercal.dashboard.compute as compute_mod
import gradercal.dashboard.report as report_mod
from gradercal._util.forked import Handover, fork_available
from gradercal.dashboard import Dashboard, compute_dashboard
from gradercal.dashboard.charts import CHART_REGISTRY
from gradercal.dashboard.report import ChartsAhead, render_html
from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from tests.conftest import DEMO

_WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
_FORK = pytest.mark.skipif(not fork_available(), reason="fork is used on Linux only")


@pytest.fixture(autouse=True)
def _fixed_svg_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    # matplotlib salts the ids in an SVG at random unless told a salt
    monkeypatch.setitem(matplotlib.rcParams, "svg.hashsalt", "gradercal-test")


@pytest.fixture(scope="module")
def demo() -> Frames:
    return frames_from_data(read_path(DEMO))


@pytest.fixture(scope="module")
def plain(demo: Frames) -> Dashboard:
    return compute_dashboard(demo, n_boot=20)


def _tagged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every image drawn names the process that drew it (``<pid> <img …>``)."""
    drawn = report_mod._drawn

    def tagged(d: Dashboard, keys: Any, fmt: str) -> dict[str, str]:
        return {k: f"{os.getpid()} {v}" for k, v in drawn(d, keys, fmt).items()}

    monkeypatch.setattr(report_mod, "_drawn", tagged)


def test_drawable_needs_the_overall_rows_and_the_grouping() -> None:
    chart = {c.key: c for c in CHART_REGISTRY}
    assert chart["forest"].drawable({"agreement:overall", "agreement:tag"}, "tag")
    assert not chart["forest"].drawable({"agreement:tag", "reliability"}, "tag")
    assert not chart["forest"].drawable({"agreement:overall", "agreement:tag"}, "domain")
    assert chart["reliability"].drawable({"reliability"})
    assert not chart["pairwise"].drawable({"agreement:overall", "confusion"})


@pytest.mark.parametrize("processes", [1, pytest.param(2, marks=_FORK)])
@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_charts_drawn_ahead_give_the_same_report(
    demo: Frames, plain: Dashboard, processes: int, fmt: str
) -> None:
    one = render_html(plain, image_format=fmt, generated_at=_WHEN)
    ahead = ChartsAhead(fmt)
    d = compute_dashboard(demo, n_boot=20, processes=processes, partial=ahead)
    keys = report_mod._report_keys(d)
    assert len(keys) == 7  # the demo has every chart, a forest plot per grouping
    assert set(ahead.images) == set(keys) and not ahead.missing(d)
    seen: list[tuple[int, int]] = []
    got = render_html(
        d,
        image_format=fmt,
        generated_at=_WHEN,
        images=ahead.images,
        processes=processes,
        progress=lambda done, total, _label: seen.append((done, total)),
    )
    assert got == one
    assert seen[-1] == (len(keys), len(keys))


@_FORK
def test_each_process_draws_the_charts_of_its_sections(
    demo: Frames, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tagged(monkeypatch)
    ahead = ChartsAhead()
    compute_dashboard(demo, n_boot=20, processes=2, partial=ahead)
    me = os.getpid()
    where = {key: int(img.split(" ", 1)[0]) for key, img in ahead.images.items()}
    mine = {k for k, pid in where.items() if pid == me}
    assert mine == {"pairwise", "confusion", "forest_workflow", "forest_domain"}
    assert {k for k, pid in where.items() if pid != me} == {"reliability", "models", "forest_tag"}
    assert len(set(where.values())) == 2


@_FORK
def test_without_the_overall_rows_the_child_leaves_its_forest_plot(
    demo: Frames, plain: Dashboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The overall rows not handed over (too large for the pipe): the child draws what
    it can, the forest plot of its grouping is drawn with the document — the same page."""
    one = render_html(plain, generated_at=_WHEN)

    def too_large(self: Handover, value: Any) -> bool:
        self.close()
        return False

    monkeypatch.setattr(Handover, "send", too_large)
    ahead = ChartsAhead()
    d = compute_dashboard(demo, n_boot=20, processes=2, partial=ahead)
    assert ahead.missing(d) == ["forest_tag"]
    assert render_html(d, generated_at=_WHEN, images=ahead.images, processes=2) == one


@_FORK
def test_a_dead_section_child_leaves_its_charts_to_this_process(
    demo: Frames, plain: Dashboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = render_html(plain, generated_at=_WHEN)
    parent = os.getpid()
    late = compute_mod._late_sections

    def dies_in_child(*args: Any, **kwargs: Any) -> Any:
        if os.getpid() != parent:
            os._exit(3)
        return late(*args, **kwargs)

    monkeypatch.setattr(compute_mod, "_late_sections", dies_in_child)
    ahead = ChartsAhead()
    d = compute_dashboard(demo, n_boot=20, processes=2, partial=ahead)
    assert set(ahead.images) == set(report_mod._report_keys(d))
    assert render_html(d, generated_at=_WHEN, images=ahead.images, processes=2) == one


def test_an_active_design_gives_the_same_charts(tmp_path: Path) -> None:
    """Under an active design the overall rows are weighted after the fork (in this
    process): the forest plots drawn ahead still show the finished table's rows."""
    from tests.dashboard.test_active_design import _active, _benchmark

    f, chosen = _active(_benchmark(tmp_path, 5, tasks=60), 25, 5)
    kwargs: dict[str, Any] = {
        "judge": "judge",
        "n_boot": 20,
        "design": (chosen, dict.fromkeys(chosen, 1)),
    }
    one = render_html(compute_dashboard(f, **kwargs), generated_at=_WHEN)
    ahead = ChartsAhead()
    processes = 2 if fork_available() else 1
    d = compute_dashboard(f, processes=processes, partial=ahead, **kwargs)
    assert d.overview["design"] == "active" and ahead.images
    assert render_html(d, generated_at=_WHEN, images=ahead.images) == one


def test_charts_ahead_refuses_an_unknown_format() -> None:
    with pytest.raises(ValueError, match="svg or png"):
        ChartsAhead("gif")
