"""gradercal.dashboard.charts: every builder draws from a dashboard in light and dark themes, saves
PNG and SVG, and says why when there is nothing to draw."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
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
    for legend in fig.legends:
        out += [t.get_text() for t in legend.get_texts()]
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


def _plotted_points(ax: Any) -> np.ndarray:
    """Display coordinates of everything plotted in ``ax``: line vertices, markers,
    interval bars and the corners of bars, cells and patches."""
    out = [np.zeros((0, 2))]
    for line in ax.get_lines():
        xy = np.column_stack(line.get_data()).astype(float)
        out.append(ax.transData.transform(xy[np.isfinite(xy).all(axis=1)]))
    for col in ax.collections:
        offsets = np.asarray(col.get_offsets(), dtype=float)
        if len(offsets):
            out.append(col.get_offset_transform().transform(offsets))
        for path in col.get_paths():
            if len(path.vertices):
                out.append(col.get_transform().transform(path.vertices))
    for patch in ax.patches:
        out.append(patch.get_window_extent().corners())
    for image in ax.images:
        out.append(image.get_window_extent().corners())
    return np.vstack(out)


@pytest.mark.parametrize("dark", [False, True])
def test_chart_legends_never_cover_data(dash: Dashboard, dark: bool) -> None:
    """Every legend of every chart on the demo, drawn at its own size and at the sizes of
    the dashboard's chart pane (1366x768 and 1280x720 windows, a narrow split): its box
    in display coordinates overlaps no axes (so no plotted marker, line, bar or cell)
    and lies inside the figure (nothing clipped). Inside the axes the reliability
    diagram's legend covered 4 of its points and the forest plots' up to 35."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    with_legend = set()
    for size in (None, (600, 520), (540, 470), (420, 360)):
        for name, fig in charts.all_charts(dash, dark=dark).items():
            FigureCanvasAgg(fig)
            if size is not None:
                fig.set_size_inches(size[0] / fig.dpi, size[1] / fig.dpi)
            fig.canvas.draw()
            renderer = fig.canvas.get_renderer()
            legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes)]
            for legend in (leg for leg in legends if leg is not None):
                with_legend.add(name)
                box = legend.get_window_extent(renderer)
                where = f"{name} at {size or 'its own size'}: legend {box.extents.round()}"
                assert fig.bbox.x0 - 1 <= box.x0 and box.x1 <= fig.bbox.x1 + 1, where
                assert fig.bbox.y0 - 1 <= box.y0 and box.y1 <= fig.bbox.y1 + 1, where
                for ax in fig.axes:
                    frame = ax.get_window_extent(renderer)
                    assert not box.overlaps(frame), f"{where} overlaps axes {frame.extents}"
                    p = _plotted_points(ax)
                    inside = (
                        (p[:, 0] >= box.x0)
                        & (p[:, 0] <= box.x1)
                        & (p[:, 1] >= box.y0)
                        & (p[:, 1] <= box.y1)
                    )
                    assert not inside.any(), f"{where} covers {int(inside.sum())} points"
    assert {"reliability", "models"} <= with_legend  # the test saw legends to check
    assert any(name.startswith("forest") for name in with_legend)


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


def test_heatmap_numbers_fit_their_cells_with_seven_raters_and_every_rater_has_a_count() -> None:
    """Issue #33: at 1280×720 with 6–7 raters the numbers overlapped, and a barely-active
    grader had no count. The figure is drawn at the size the dashboard gives it there."""
    from types import SimpleNamespace

    import pandas as pd

    from gradercal.dashboard.charts import pairwise_heatmap

    names = ["expert-ana", "expert-ben", "expert-chloe", "expert-dev", "expert-eli", "j1", "j2"]
    rng = np.random.default_rng(7)
    vals = rng.uniform(-0.2, 1.0, (7, 7))
    vals = (vals + vals.T) / 2
    np.fill_diagonal(vals, 1.0)
    mat = pd.DataFrame(vals, index=names, columns=names)
    counts = dict.fromkeys(names, 384) | {"expert-eli": 3}
    d: Any = SimpleNamespace(
        pairwise_matrix=lambda _stat: mat,
        overview={"judges": ["j1", "j2"], "humans": names[:5], "n_verdicts": counts},
    )
    from matplotlib.backend_bases import ResizeEvent
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = pairwise_heatmap(d)
    canvas = FigureCanvasAgg(fig)
    fig.set_size_inches(4.4, 3.4)  # about what the dashboard gives the chart at 1280×720
    canvas.callbacks.process("resize_event", ResizeEvent("resize_event", canvas))
    canvas.draw()
    ax = fig.axes[0]
    renderer = canvas.get_renderer()
    texts = [t for t in ax.texts if t.get_text()]
    assert len(texts) == 49
    box = ax.get_window_extent(renderer)
    cell_w = box.width / 7
    boxes = [t.get_window_extent(renderer) for t in texts]
    for b in boxes:
        assert b.width <= 0.95 * cell_w, (b.width, cell_w)
    for a_i, a in enumerate(boxes):
        for b in boxes[a_i + 1 :]:
            assert not a.overlaps(b)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert any("expert-eli" in x and "n = 3" in x for x in labels)
    assert all("n = " in x for x in labels)
