"""Charts of the coordinator's dashboard, as matplotlib figures.

Every builder takes a :class:`~gradercal.dashboard.Dashboard` and returns a new
:class:`matplotlib.figure.Figure` made directly (never through ``pyplot``: no global
figure registry, no backend chosen, safe in a worker thread). A Qt front end wraps the
figure in ``FigureCanvasQTAgg``; the report saves it with :func:`save_figure` or
:func:`figure_bytes`. ``dark=True`` draws light text on a dark background; colours are
the Okabe–Ito palette, readable on both and by colour-blind readers. A chart without
data is a figure that says why, never an exception.

Builders: :func:`pairwise_heatmap`, :func:`confusion_chart`, :func:`reliability_chart`,
:func:`models_chart`, :func:`forest_chart`; :func:`all_charts` builds them all.

:data:`CHART_REGISTRY` lists the charts once, one :class:`Chart` each: its builder, its
title and section in the report, its tab and title in the window, whether it is drawn per
grouping and whether the window draws it ahead. The report (:data:`CHART_TITLES`,
:func:`all_charts`) and the window (``gradercal.ui.dashboard.data``) derive their lists
from it: adding a chart takes a builder and an entry.

This module imports matplotlib (lazily, inside the builders), numpy, pandas and
gradercal's core only.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from gradercal.dashboard.result import EXPERTS, MODEL_SOURCES, Dashboard

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from gradercal.analysis.planning import PlanResult

__all__ = [
    "CHART_REGISTRY",
    "CHART_TITLES",
    "DEFAULT_GROUPING",
    "GROUPINGS",
    "GROUPING_LABELS",
    "PLAN_PANELS",
    "SOURCE_LABELS",
    "Chart",
    "ChartStyle",
    "all_charts",
    "chart_figures",
    "chart_style",
    "confusion_chart",
    "figure_bytes",
    "forest_chart",
    "models_chart",
    "pairwise_heatmap",
    "plan_figure",
    "reliability_chart",
    "save_figure",
]

#: Readable names of :data:`gradercal.dashboard.MODEL_SOURCES`.
SOURCE_LABELS: dict[str, str] = {
    "experts": "experts",
    "judge_raw": "raw judge",
    "judge_calibrated": "calibrated judge",
    "estimate": "bias-corrected (PPI++)",
}
_OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")
_SAVE_FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}


@dataclass(frozen=True)
class ChartStyle:
    """Colours of a chart theme.

    Attributes:
        background: Figure and axes face colour.
        foreground: Text, ticks and spines.
        grid: Grid lines.
        muted: Secondary marks (reference diagonals, empty-state text).
        palette: Series colours, in order.
        cmap: Colormap of heatmaps.
    """

    background: str
    foreground: str
    grid: str
    muted: str
    palette: tuple[str, ...] = _OKABE_ITO
    cmap: str = "viridis"


_LIGHT = ChartStyle(background="#ffffff", foreground="#1a1a1a", grid="#d9d9d9", muted="#7f7f7f")
_DARK = ChartStyle(
    background="#1e1f22",
    foreground="#e6e6e6",
    grid="#3c3f44",
    muted="#9a9a9a",
    palette=("#56B4E9", "#E69F00", "#009E73", "#CC79A7", "#0072B2", "#D55E00", "#F0E442"),
)


def chart_style(dark: bool = False) -> ChartStyle:
    """The light or dark theme."""
    return _DARK if dark else _LIGHT


def _figure(st: ChartStyle, size: tuple[float, float]) -> Figure:
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=100, layout="constrained")
    fig.set_facecolor(st.background)
    return fig


def _style(ax: Axes, st: ChartStyle, grid_axis: Literal["x", "y", "both"] | None = "x") -> None:
    ax.set_facecolor(st.background)
    for spine in ax.spines.values():
        spine.set_color(st.muted)
    ax.tick_params(colors=st.foreground, which="both")
    ax.xaxis.label.set_color(st.foreground)
    ax.yaxis.label.set_color(st.foreground)
    ax.title.set_color(st.foreground)
    if grid_axis:
        ax.grid(True, axis=grid_axis, color=st.grid, linewidth=0.6)
        ax.set_axisbelow(True)


def _legend(fig: Figure, axes: Sequence[Axes], st: ChartStyle, *, ncols: int = 1) -> None:
    """The legend of ``axes``' labelled artists, below the plots and outside them.

    A legend inside the axes covered markers and intervals whatever corner it took (the
    data of these charts can be anywhere); outside, under the x-axis label, the
    constrained layout gives it room of its own at any figure size. One entry per label.
    """
    handles: list[Any] = []
    labels: list[str] = []
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    if not handles:
        return
    leg = fig.legend(
        handles,
        labels,
        loc="outside lower center",
        ncols=min(ncols, len(handles)),
        frameon=True,
        fontsize="small",
    )
    leg.get_frame().set_facecolor(st.background)
    leg.get_frame().set_edgecolor(st.muted)
    for t in leg.get_texts():
        t.set_color(st.foreground)


def _empty(title: str, message: str, st: ChartStyle) -> Figure:
    fig = _figure(st, (6.0, 2.2))
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_facecolor(st.background)
    ax.set_title(title, color=st.foreground)
    ax.text(0.5, 0.5, message, ha="center", va="center", color=st.muted, wrap=True)
    return fig


def _finite(x: Any) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _text_color(rgba: Sequence[float]) -> str:
    r, g, b = rgba[:3]
    return "#000000" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "#ffffff"


# ---------------------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------------------


def _fit_cell_texts(fig: Figure, ax: Any, texts: list[Any], n: int) -> None:
    """Size the numbers of an n × n heatmap to its cells, now and whenever the canvas is
    resized (a window at 1280×720 shrinks the figure, not its fonts): "0.00" takes at most
    85% of a cell's width and half its height, between 4 and 10 pt."""

    def fit(_event: Any = None) -> None:
        box = ax.get_window_extent()
        cell_pt = min(box.width, box.height) / max(n, 1) * 72.0 / fig.dpi
        size = max(4.0, min(10.0, 0.34 * cell_pt))
        for t in texts:
            t.set_fontsize(size)

    fit()
    fig.canvas.mpl_connect("resize_event", fit)


def pairwise_heatmap(d: Dashboard, statistic: str = "cohen_kappa", *, dark: bool = False) -> Figure:
    """Grader × grader heatmap (experts then judges) of Cohen's kappa or percent agreement.

    Cells show the value on the units both graders rated; the diagonal is 1; empty cells
    had no shared unit or an undefined value.
    """
    st = chart_style(dark)
    label = "Cohen's kappa" if statistic == "cohen_kappa" else "percent agreement"
    title = f"Pairwise agreement ({label})"
    mat = d.pairwise_matrix(statistic)
    if mat.empty or len(mat) < 2:
        return _empty(title, "fewer than two graders", st)
    from matplotlib import colormaps

    n = len(mat)
    side = max(3.8, 0.75 * n + 2.2)
    fig = _figure(st, (side + 1.0, side))
    ax = fig.add_subplot()
    values = mat.to_numpy(np.float64)
    cmap = colormaps[st.cmap].with_extremes(bad=st.grid)
    lo = min(0.0, float(np.nanmin(values))) if np.isfinite(values).any() else 0.0
    im = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=lo, vmax=1.0)
    names = [str(x) for x in mat.index]
    judges = set(d.overview.get("judges", []))
    counts = d.overview.get("n_verdicts") or {}

    def tick(x: str) -> str:  # every rater with its count, however few verdicts it gave
        name = f"{x} (judge)" if x in judges else x
        return f"{name}\nn = {int(counts.get(x) or 0):,}"

    ax.set_xticks(range(n), [tick(x) for x in names])
    ax.set_yticks(range(n), [tick(x) for x in names])
    ax.tick_params(axis="x", labelrotation=35)
    for lab in ax.get_xticklabels():
        lab.set_horizontalalignment("right")
    cells = []
    for i in range(n):
        for j in range(n):
            v = values[i, j]
            if math.isfinite(v):
                cells.append(
                    ax.text(
                        j,
                        i,
                        f"{v:.2f}",
                        ha="center",
                        va="center",
                        color=_text_color(cmap((v - lo) / (1.0 - lo) if lo < 1 else 1.0)),
                    )
                )
    _fit_cell_texts(fig, ax, cells, n)
    _style(ax, st, grid_axis=None)
    ax.set_title(title)
    cb = fig.colorbar(im, ax=ax, shrink=0.8)
    cb.ax.tick_params(colors=st.foreground)
    cb.outline.set_edgecolor(st.muted)
    return fig


def confusion_chart(d: Dashboard, judge: str | None = None, *, dark: bool = False) -> Figure:
    """The judge's 2×2 confusion matrix against the expert consensus.

    Rows: the consensus (not met, met); columns: the judge. Each cell shows its count and
    its share of all compared units.
    """
    st = chart_style(dark)
    name = judge or d.primary_judge
    title = f"{name or 'Judge'} vs expert consensus"
    if name is None or name not in d.confusion:
        return _empty(title, "no judge compared with the expert consensus", st)
    from matplotlib import colormaps

    m = np.asarray(d.confusion[name], dtype=np.float64)
    total = float(m.sum())
    fig = _figure(st, (4.8, 4.0))
    ax = fig.add_subplot()
    cmap = colormaps["Blues"]
    share = m / total if total else m
    ax.imshow(share, cmap=cmap, vmin=0.0, vmax=max(float(share.max()), 1e-9))
    labels = (("true negative", "false positive"), ("false negative", "true positive"))
    for i in range(2):
        for j in range(2):
            pct = f"{m[i, j] / total:.1%}" if total else "—"
            ax.text(
                j,
                i,
                f"{int(m[i, j]):,}\n{pct}\n{labels[i][j]}",
                ha="center",
                va="center",
                color=_text_color(cmap(share[i, j] / max(float(share.max()), 1e-9))),
                fontsize="small",
            )
    ax.set_xticks([0, 1], ["not met", "met"])
    ax.set_yticks([0, 1], ["not met", "met"])
    ax.set_xlabel(f"judge {name}")
    ax.set_ylabel("expert consensus")
    _style(ax, st, grid_axis=None)
    ax.set_title(title)
    return fig


def reliability_chart(d: Dashboard, judge: str | None = None, *, dark: bool = False) -> Figure:
    """Reliability diagram: mean observed (consensus) against mean predicted probability
    per bin, for the raw judge and the out-of-fold calibrated judge; marker area ∝ count.
    """
    st = chart_style(dark)
    name = judge or d.primary_judge
    title = "Reliability before and after calibration"
    rel = d.reliability.get(name) if name is not None else None
    if rel is None or rel.empty:
        return _empty(title, "no calibration: needs a judge and expert grades on ≥ 2 tasks", st)
    fig = _figure(st, (5.6, 4.6))
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], linestyle="--", color=st.muted, linewidth=1, label="perfect")
    attrs = rel.attrs
    for key, color, label in (
        ("before", st.palette[1], "raw judge"),
        ("after", st.palette[2], "calibrated (out of fold)"),
    ):
        n = rel[f"n_{key}"].to_numpy(np.float64)
        x = rel[f"mean_predicted_{key}"].to_numpy(np.float64)
        y = rel[f"mean_observed_{key}"].to_numpy(np.float64)
        ok = (n > 0) & np.isfinite(x) & np.isfinite(y)
        ece = attrs.get(f"ece_{key}")
        text = f"{label}" + (f" (ECE {ece:.3f})" if _finite(ece) else "")
        ax.plot(x[ok], y[ok], color=color, linewidth=1.2, label=text)
        size = 20 + 280 * n[ok] / max(float(n.max()), 1.0)
        ax.scatter(x[ok], y[ok], s=size, color=color, alpha=0.8, edgecolors=st.background)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    level = attrs.get("level", "criterion")
    ax.set_xlabel("predicted probability of met" if level == "criterion" else "judge score")
    ax.set_ylabel("observed (expert consensus)")
    _style(ax, st, grid_axis="both")
    method = attrs.get("method")
    ax.set_title(f"{title}" + (f" ({method})" if method else ""))
    _legend(fig, [ax], st)
    return fig


def models_chart(d: Dashboard, *, dark: bool = False) -> Figure:
    """Per-model mean rubric score and pass rate for every source, with interval bars."""
    st = chart_style(dark)
    title = "Per-model mean score and pass rate"
    m = d.models
    if m.empty:
        return _empty(title, "needs a judge and expert grades", st)
    models = sorted({str(x) for x in m["model"]})
    sources = [s for s in MODEL_SOURCES if (m["source"] == s).any()]
    height = max(3.2, 0.55 * len(models) * len(sources) / 2 + 1.8)
    fig = _figure(st, (10.0, height))
    axes = fig.subplots(1, 2, sharey=True)
    step = 0.8 / max(len(sources), 1)
    threshold = d.overview.get("pass_threshold")
    for ax, metric, xlabel in (
        (axes[0], "mean_score", "mean rubric score"),
        (
            axes[1],
            "pass_rate",
            f"pass rate (score ≥ {threshold:.0%})" if threshold else "pass rate",
        ),
    ):
        for k, source in enumerate(sources):
            sub = m.loc[(m["metric"] == metric) & (m["source"] == source)].set_index("model")
            ys, xs, lo, hi = [], [], [], []
            for i, model in enumerate(models):
                if model not in sub.index:
                    continue
                row: Any = sub.loc[model]
                v = float(row["value"])
                if not math.isfinite(v):
                    continue
                ys.append(i - 0.4 + step * (k + 0.5))
                xs.append(v)
                lo.append(v - float(row["ci_low"]) if _finite(row["ci_low"]) else 0.0)
                hi.append(float(row["ci_high"]) - v if _finite(row["ci_high"]) else 0.0)
            if xs:
                ax.errorbar(
                    xs,
                    ys,
                    xerr=[lo, hi],
                    fmt="o",
                    color=st.palette[MODEL_SOURCES.index(source)],
                    ecolor=st.palette[MODEL_SOURCES.index(source)],
                    capsize=3,
                    markersize=5,
                    label=SOURCE_LABELS[source],
                )
        ax.set_xlim(-0.03, 1.03)
        ax.set_xlabel(xlabel)
        ax.set_yticks(range(len(models)), models)
        ax.set_ylim(len(models) - 0.5, -0.5)
        _style(ax, st)
    _legend(fig, list(axes), st, ncols=2)
    fig.suptitle(title, color=st.foreground)
    return fig


def forest_chart(
    d: Dashboard,
    by: str = "tag",
    *,
    human_statistic: str = "fleiss_kappa",
    judge_statistic: str = "cohen_kappa",
    dark: bool = False,
) -> Figure:
    """Forest plot of agreement per group (tag, workflow or domain) with intervals.

    Two marks per group: the experts among themselves (``human_statistic``, default
    Fleiss' kappa) and the primary judge against their consensus (``judge_statistic``,
    default Cohen's kappa); the dashed lines are the overall values.
    """
    st = chart_style(dark)
    title = f"Agreement by {by}"
    a = d.agreement
    sub = a.loc[a["by"] == by]
    if sub.empty:
        return _empty(title, f"no {by} groups", st)
    groups = list(dict.fromkeys(str(g) for g in sub["group"]))
    judge = d.primary_judge
    series = [(EXPERTS, human_statistic, f"experts ({human_statistic.replace('_', ' ')})")]
    if judge is not None:
        series.append(
            (judge, judge_statistic, f"{judge} vs consensus ({judge_statistic.replace('_', ' ')})")
        )
    fig = _figure(st, (8.0, max(2.8, 0.42 * len(groups) + 1.6)))
    ax = fig.add_subplot()
    offsets = np.linspace(-0.15, 0.15, len(series)) if len(series) > 1 else np.zeros(1)
    xmin = 0.0
    for k, (comparison, stat, label) in enumerate(series):
        color = st.palette[0 if comparison == EXPERTS else 1]
        s = sub.loc[(sub["comparison"] == comparison) & (sub["statistic"] == stat)]
        s = s.set_index("group")
        xs, ys, lo, hi = [], [], [], []
        for i, g in enumerate(groups):
            if g not in s.index:
                continue
            row: Any = s.loc[g]
            v = float(row["value"])
            if not math.isfinite(v):
                continue
            xs.append(v)
            ys.append(i + offsets[k])
            lo.append(v - float(row["ci_low"]) if _finite(row["ci_low"]) else 0.0)
            hi.append(float(row["ci_high"]) - v if _finite(row["ci_high"]) else 0.0)
            xmin = min(xmin, v - lo[-1])
        if xs:
            ax.errorbar(
                xs,
                ys,
                xerr=[lo, hi],
                fmt="s" if comparison == EXPERTS else "o",
                color=color,
                ecolor=color,
                capsize=3,
                markersize=5,
                label=label,
            )
        overall = a.loc[
            (a["by"] == "overall") & (a["comparison"] == comparison) & (a["statistic"] == stat)
        ]
        if len(overall) and _finite(overall["value"].iloc[0]):
            ax.axvline(float(overall["value"].iloc[0]), color=color, linestyle="--", linewidth=0.9)
    ax.set_yticks(range(len(groups)), groups)
    ax.set_ylim(len(groups) - 0.5, -0.5)
    ax.set_xlim(min(xmin, 0.0) - 0.02, 1.02)
    ax.set_xlabel("agreement (dashed: overall)")
    _style(ax, st)
    ax.set_title(title)
    _legend(fig, [ax], st)
    return fig


# ---------------------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------------------

#: The groupings a per-grouping chart is drawn for, in order (the agreement table's).
GROUPINGS: tuple[str, ...] = ("tag", "workflow", "domain")
#: The grouping a per-grouping chart's window tab shows when the agreement table's
#: grouping has no figure (and the only one the window draws ahead).
DEFAULT_GROUPING = "tag"
#: How the report's titles name the groupings.
GROUPING_LABELS: dict[str, str] = {
    "tag": "criterion tag",
    "workflow": "workflow",
    "domain": "domain",
}


@dataclass(frozen=True)
class Chart:
    """One chart of the dashboard: how it is built, and how the report and the window
    show it.

    Attributes:
        key: The report's key (:data:`CHART_TITLES`, :func:`all_charts`); a per-grouping
            chart's figures are ``<key>_<grouping>``.
        build: ``build(d, dark=…)``; per grouping ``build(d, grouping, dark=…)``.
        title: The report's title of the figure; per grouping, ``{grouping}`` stands for
            the grouping's name in :data:`GROUPING_LABELS`.
        section: The report section (``gradercal.dashboard.report.REPORT_SECTIONS``) the
            figure opens; per grouping, each grouping's part of that section.
        tab: The window's name of the chart's tab; a per-grouping chart's figures are
            ``<tab>:<grouping>`` and its tab follows the agreement table's grouping.
        tab_label: The tab's label.
        window_title: The title above the chart in the window.
        source: The :class:`~gradercal.dashboard.Dashboard` field the figure is drawn
            from (besides the overview); per grouping, the agreement rows of the grouping
            and the overall ones (:meth:`drawable`).
        per_grouping: One figure per grouping of :data:`GROUPINGS` (in the report, those
            present in the agreement table; in the window, all).
        prerender: The window's worker draws the figure's pixels ahead (per grouping: the
            figure of :data:`DEFAULT_GROUPING` only).
    """

    key: str
    build: Callable[..., Figure]
    title: str
    section: str
    tab: str
    tab_label: str
    window_title: str
    source: str
    per_grouping: bool = False
    prerender: bool = True

    def report_key(self, grouping: str | None = None) -> str:
        """The key of the figure (of ``grouping``) in :func:`all_charts`."""
        return f"{self.key}_{grouping}" if self.per_grouping else self.key

    def report_title(self, grouping: str | None = None) -> str:
        """The report's title of the figure (of ``grouping``)."""
        if not self.per_grouping or grouping is None:
            return self.title
        return self.title.format(grouping=GROUPING_LABELS.get(grouping, grouping))

    def figure_name(self, grouping: str | None = None) -> str:
        """The window's name of the figure (of ``grouping``)."""
        return f"{self.tab}:{grouping}" if self.per_grouping else self.tab

    def prerendered(self, grouping: str | None = None) -> bool:
        """Whether the window draws the figure (of ``grouping``) ahead."""
        return self.prerender and (not self.per_grouping or grouping == DEFAULT_GROUPING)

    def drawable(self, known: Collection[str], grouping: str | None = None) -> bool:
        """Whether the figure (of ``grouping``) is drawn the same from a partial dashboard
        whose ``known`` parts are those of the finished one: field names, and for the
        agreement table ``agreement:<by>`` per grouping whose rows are all there
        (``overall`` included). The overview is always known (the charts read only what
        the first step puts in it)."""
        if self.per_grouping:
            return {f"{self.source}:overall", f"{self.source}:{grouping}"} <= set(known)
        return self.source in known

    def figure(self, d: Dashboard, grouping: str | None = None, *, dark: bool = False) -> Figure:
        """The figure (of ``grouping``) of ``d``."""
        if self.per_grouping:
            return self.build(d, grouping, dark=dark)
        return self.build(d, dark=dark)


#: Every chart, in the order the report and the window list them.
CHART_REGISTRY: tuple[Chart, ...] = (
    Chart(
        key="pairwise",
        build=pairwise_heatmap,
        title="Pairwise agreement (Cohen's kappa)",
        section="pairwise",
        tab="pairwise",
        tab_label="Raters",
        window_title="Rater agreement: experts and judges (Cohen's κ)",
        source="pairwise",
    ),
    Chart(
        key="confusion",
        build=confusion_chart,
        title="Judge vs expert consensus",
        section="confusion",
        tab="confusion",
        tab_label="Confusion",
        window_title="Judge vs expert consensus",
        source="confusion",
    ),
    Chart(
        key="reliability",
        build=reliability_chart,
        title="Reliability before and after calibration",
        section="reliability",
        tab="reliability",
        tab_label="Reliability",
        window_title="Judge confidence: reliability before and after calibration",
        source="reliability",
    ),
    Chart(
        key="models",
        build=models_chart,
        title="Per-model mean score and pass rate",
        section="models",
        tab="models",
        tab_label="Models",
        window_title="Models under experts, raw judge, calibrated judge and estimate",
        source="models",
    ),
    Chart(
        key="forest",
        build=forest_chart,
        title="Agreement by {grouping}",
        section="agreement",
        tab="groups",
        tab_label="Groups",
        window_title="Agreement by group, with 95% intervals",
        source="agreement",
        per_grouping=True,
    ),
)


def chart_figures(groupings: Collection[str] = GROUPINGS) -> Iterator[tuple[Chart, str | None]]:
    """Every figure of :data:`CHART_REGISTRY` as ``(chart, grouping)``, in order: a
    per-grouping chart once per grouping of :data:`GROUPINGS` that is in ``groupings``,
    any other once with ``None``."""
    for chart in CHART_REGISTRY:
        if not chart.per_grouping:
            yield chart, None
            continue
        for grouping in GROUPINGS:
            if grouping in groupings:
                yield chart, grouping


#: Keys of :func:`all_charts` and their titles.
CHART_TITLES: dict[str, str] = {
    chart.report_key(grouping): chart.report_title(grouping) for chart, grouping in chart_figures()
}


def all_charts(d: Dashboard, *, dark: bool = False) -> dict[str, Figure]:
    """Every chart, keyed as in :data:`CHART_TITLES` (forest plots only for groupings
    present in the agreement table)."""
    present = set(d.agreement["by"]) if not d.agreement.empty else set()
    return {
        chart.report_key(grouping): chart.figure(d, grouping, dark=dark)
        for chart, grouping in chart_figures(present)
    }


# ---------------------------------------------------------------------------------------
# Saving
# ---------------------------------------------------------------------------------------


def figure_bytes(fig: Figure, fmt: str = "png", *, dpi: int = 110) -> bytes:
    """The figure encoded as ``png``, ``svg`` or ``pdf`` (keeps its background colour)."""
    if fmt not in _SAVE_FORMATS.values():
        raise ValueError(f"unsupported chart format {fmt!r}; use png, svg or pdf")
    buf = io.BytesIO()
    meta = {"Date": None} if fmt == "svg" else None
    fig.savefig(buf, format=fmt, dpi=dpi, facecolor=fig.get_facecolor(), metadata=meta)
    return buf.getvalue()


def save_figure(fig: Figure, path: str | Path, *, dpi: int = 150) -> Path:
    """Save the figure; the format follows the suffix (``.png``, ``.svg`` or ``.pdf``).

    Raises:
        ValueError: Another suffix.
    """
    p = Path(path)
    fmt = _SAVE_FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise ValueError(f"{p.name}: save charts as .png, .svg or .pdf")
    p.write_bytes(figure_bytes(fig, fmt, dpi=dpi))
    return p


#: The panels of :func:`plan_figure`, in order: a plan target and its title.
PLAN_PANELS = {
    "pass_rate_half_width": "pass rate (widest model)",
    "mean_score_half_width": "mean score (widest model)",
    "kappa_half_width": "judge–consensus κ",
}


def plan_figure(result: PlanResult, *, width: float = 12.6, height: float = 3.6) -> Figure:
    """Half-width against tasks graded, one line per number of experts per item, the
    targets as dashed lines: one panel per headline figure (``gradercal plan --chart``
    and the window's Plan tab)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")  # laid out at each size
    axes = fig.subplots(1, len(PLAN_PANELS), squeeze=False)[0]
    ks = sorted({d["experts_per_item"] for d in result.designs})
    for ax, key in zip(axes, PLAN_PANELS, strict=True):
        for k in ks:
            rows = [d for d in result.designs if d["experts_per_item"] == k]
            ys = [d["expected_half_width"][key] for d in rows]
            ax.plot(
                [d["tasks"] for d in rows],
                [math.nan if y is None else y for y in ys],
                marker="o",
                label=f"{k} per item",
            )
        goal = result.targets.get(key)
        if goal is not None:
            ax.axhline(goal, color="grey", linestyle="--", linewidth=1)
        ax.set_xlabel("tasks graded")
        ax.set_ylabel("expected half-width")
        ax.set_title(PLAN_PANELS[key], fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(title="experts", fontsize=8)
    return fig
