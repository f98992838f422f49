"""gradercal.dashboard.charts: every builder draws from a dashboard in light and dark themes, saves
PNG and SVG, and says why when there is nothing to draw."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from gradercal.dashboard import Dashboard, charts, compute_dashboard
from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from tests.conftest import DEMO


@pytest.fixture(scope="module")
def demo() -> Frames:
    return frames_from_data(read_path(DEMO))


@pytest.fixture(scope="module")
def dash(demo: Frames) -> Dashboard:
    return compute_dashboard(demo, n_boot=30)


def _texts(fig: Figure) -> list[str]:
    out = []
    for ax in fig.axes:
        out.append(ax.get_title())
        out += [t.get_text() for t in ax.texts]
        out += [t.get_text() for t in ax.get_yticklabels()]
        if ax.get_legend() is not None:
            out += [t.get_text() for t in ax.get_legend().get_texts()]
    return out


@pytest.mark.parametrize("dark", [False, True])
def test_every_chart_draws_and_saves(dash: Dashboard, tmp_path: Path, dark: bool) -> None:
    figs = charts.all_charts(dash, dark=dark)
    assert set(figs) == set(charts.CHART_TITLES)
    bg = charts.chart_style(dark).background
    for name, fig in figs.items():
        assert isinstance(fig, Figure)
        assert fig.axes, name
        assert charts.chart_style(dark).foreground
        png = charts.save_figure(fig, tmp_path / f"{name}.png")
        svg = charts.save_figure(fig, tmp_path / f"{name}.svg")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert b"<svg" in svg.read_bytes()[:2000]
        from matplotlib.colors import to_hex

        assert to_hex(fig.get_facecolor()) == bg


def test_chart_contents(dash: Dashboard) -> None:
    heat = charts.pairwise_heatmap(dash)
    texts = _texts(heat)
    kappa = dash.pairwise_matrix()
    assert f"{kappa.loc['expert-ana', 'expert-ben']:.2f}" in texts
    conf = charts.confusion_chart(dash)
    tp = int(dash.confusion["judge-gpt"][1, 1])
    assert any(t.startswith(f"{tp:,}\n") for t in _texts(conf))
    models = charts.models_chart(dash)
    legend = _texts(models)
    assert "experts" in legend and "calibrated judge" in legend
    forest = charts.forest_chart(dash, "workflow")
    wf = set(dash.agreement.loc[dash.agreement["by"] == "workflow", "group"])
    assert wf <= set(_texts(forest))
    rel = charts.reliability_chart(dash)
    assert any("ECE" in t for t in _texts(rel))


def test_empty_dashboard_charts_say_why(demo: Frames) -> None:
    j = demo.judgments
    humans_only = Frames(
        demo.pass_threshold,
        demo.tasks,
        demo.criteria,
        demo.responses,
        j.loc[j["grader_kind"] == "human"].reset_index(drop=True),
        demo.adjudications,
    )
    d = compute_dashboard(humans_only, n_boot=0)
    assert "no judge compared with the expert consensus" in _texts(charts.confusion_chart(d))
    assert any("needs a judge" in t for t in _texts(charts.models_chart(d)))
    assert any("no calibration" in t for t in _texts(charts.reliability_chart(d)))


def test_bad_suffix_is_refused(dash: Dashboard, tmp_path: Path) -> None:
    fig = charts.confusion_chart(dash)
    with pytest.raises(ValueError, match=r"\.png, \.svg or \.pdf"):
        charts.save_figure(fig, tmp_path / "chart.jpg")
    with pytest.raises(ValueError):
        charts.figure_bytes(fig, "gif")


def test_no_pyplot_needed() -> None:
    """The builders never go through pyplot (no global figure registry)."""
    import subprocess

    code = (
        "import sys\n"
        "from gradercal.formats import read_path\n"
        "from gradercal.frames import frames_from_data\n"
        "from gradercal.dashboard import compute_dashboard\n"
        "from gradercal.dashboard import charts\n"
        f"d = compute_dashboard(frames_from_data(read_path({str(DEMO)!r})), n_boot=0)\n"
        "charts.figure_bytes(charts.all_charts(d)['models'], 'png')\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_every_registered_chart_has_a_place_in_the_report_and_the_window() -> None:
    """A chart is added by one registry entry: its report section exists and renders the
    section's charts, and the window derives a tab for it."""
    import inspect

    from gradercal.dashboard import report
    from gradercal.dashboard.charts import CHART_REGISTRY
    from gradercal.ui.dashboard.data import CHART_NAMES, CHARTS

    sections = {key for key, _title in report.REPORT_SECTIONS}
    source = inspect.getsource(report)
    tabs = {name for name, _title in CHARTS}
    for chart in CHART_REGISTRY:
        assert chart.section in sections, chart.key
        assert f'_charts(images, "{chart.section}"' in source, chart.key
        assert chart.tab in tabs, chart.key
        assert any(n == chart.tab or n.startswith(f"{chart.tab}:") for n in CHART_NAMES)
