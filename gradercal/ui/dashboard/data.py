"""What the dashboard shows, prepared without Qt: tables, charts and the computed result.

This module is imported by both sides of the dashboard: by the worker process
(:mod:`gradercal.ui.dashboard.worker`), which computes and prepares everything, and by the
window (:mod:`gradercal.ui.dashboard.qt_view`), which only shows it. It imports numpy and pandas
and the chart registry of :mod:`gradercal.dashboard.charts` (matplotlib lazily), never Qt or
SQLAlchemy, so the worker process stays light. Its chart tabs and figure names are derived
from that registry.

A :class:`PreparedTable` keeps every cell's text of a column in one string with an array
of end offsets (:class:`TextColumn`) and its sort keys as float arrays: a table of tens of
thousands of rows unpickles in milliseconds and adds a handful of objects, not hundreds of
thousands, to the window process's heap (its garbage collector pauses stay short).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from gradercal.dashboard.charts import CHART_REGISTRY, DEFAULT_GROUPING, GROUPINGS, chart_figures
from gradercal.dashboard.tables import TABLE_SECTIONS
from gradercal.stats.catalogue import view

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from gradercal.dashboard import Dashboard, DashboardFilters, DashboardRequest
    from gradercal.ui.dashboard.protocol import Part


# -- formatting -------------------------------------------------------------------------------
def _missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float | np.floating) and math.isnan(float(value))


def _is_p(column: str) -> bool:
    return "p_value" in column or column.startswith("p_") or column == "p"


def _float_text(f: float, p: bool) -> str:
    if p:
        return f"{f:.2g}" if f < 0.001 else f"{f:.3f}"
    if f.is_integer() and abs(f) >= 100:
        return f"{int(f):,}"
    return f"{f:.3f}"


def format_value(value: Any, column: str = "") -> str:
    """A cell as text: 3 decimals for fractions, counts as integers, lists joined."""
    if _missing(value):
        return ""
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    if isinstance(value, float | np.floating):
        return _float_text(float(value), _is_p(column))
    if isinstance(value, tuple | list | set | frozenset):
        return ", ".join(format_value(v) for v in value)
    return str(value)


def format_column(series: pd.Series, column: str = "") -> list[str]:
    """Every cell of ``series`` as :func:`format_value` writes it (fast paths for plain
    float, integer and boolean columns; anything else cell by cell)."""
    dtype = series.dtype
    if dtype == np.float64 or dtype == np.float32:
        p = _is_p(column)
        # One text per distinct bit pattern (so 0.0 and -0.0 stay apart), then a take.
        values = np.ascontiguousarray(series.to_numpy(dtype=np.float64))
        codes, uniques = pd.factorize(values.view(np.int64))
        floats = np.asarray(uniques, dtype=np.int64).view(np.float64).tolist()
        texts = ["" if f != f else _float_text(f, p) for f in floats]
        return _take_texts(texts, codes)
    if dtype.kind in "iu" and isinstance(dtype, np.dtype):
        codes, uniques = pd.factorize(series.to_numpy())
        return _take_texts([f"{v:,}" for v in uniques.tolist()], codes)
    if dtype == np.bool_:
        return ["yes" if v else "no" for v in series.to_numpy().tolist()]
    # Text columns: a str is its own text (the type test is much cheaper than the call);
    # a tuple of strings (tags) is joined once per distinct tuple.
    joined: dict[tuple[str, ...], str] = {}
    out: list[str] = []
    for v in series.to_numpy(dtype=object):
        if type(v) is str:
            out.append(v)
        elif type(v) is tuple and v in joined:
            out.append(joined[v])
        else:
            text = _cell(v, column)
            if type(v) is tuple and all(type(x) is str for x in v):
                joined[v] = text
            out.append(text)
    return out


def _take_texts(texts: list[str], codes: np.ndarray[Any, Any]) -> list[str]:
    """``[texts[c] for c in codes]``, in numpy."""
    if not len(codes):
        return []
    table = np.empty(len(texts), dtype=object)
    table[:] = texts
    out: list[str] = table[codes].tolist()
    return out


def _cell(value: Any, column: str) -> str:
    if type(value) is tuple and all(type(x) is str for x in value):
        return ", ".join(value)
    return format_value(value, column)


def _sort_key(value: Any) -> Any:
    if _missing(value):
        return float("-inf")
    if isinstance(value, bool | np.bool_):
        return int(bool(value))
    if isinstance(value, int | np.integer | float | np.floating):
        return float(value)
    if isinstance(value, tuple | list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _key_text(value: Any) -> str:
    if type(value) is tuple and all(type(x) is str for x in value):
        return ", ".join(value)
    return str(_sort_key(value))


#: Suffix pairs that mark the bounds of a confidence interval around a column.
CI_SUFFIXES = (("_low", "_high"), ("_lo", "_hi"))


def ci_columns(frame: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """{column: (lower column, upper column)} for every estimate with an interval:
    ``x`` with ``x_low``/``x_high``, and ``value`` with ``ci_low``/``ci_high``."""
    out: dict[str, tuple[str, str]] = {}
    cols = set(map(str, frame.columns))
    for c in map(str, frame.columns):
        for lo, hi in CI_SUFFIXES:
            if f"{c}{lo}" in cols and f"{c}{hi}" in cols:
                out[c] = (f"{c}{lo}", f"{c}{hi}")
                break
    if "value" in cols and {"ci_low", "ci_high"} <= cols:
        out["value"] = ("ci_low", "ci_high")
    return out


def header_text(column: str) -> str:
    return column.replace("_", " ")


@dataclass(frozen=True)
class TextColumn:
    """The texts of one column (or one per row) in a single string: cell ``i`` is
    ``text[ends[i-1]:ends[i]]``. Pickles as two objects whatever the row count."""

    text: str
    ends: np.ndarray[Any, Any]  # int64, cumulative

    @classmethod
    def of(cls, cells: Sequence[str]) -> TextColumn:
        ends = np.cumsum(np.fromiter(map(len, cells), dtype=np.int64, count=len(cells)))
        return cls("".join(cells), ends)

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, i: int) -> str:
        end = int(self.ends[i])
        start = int(self.ends[i - 1]) if i > 0 else 0
        return self.text[start:end]

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))


@dataclass(frozen=True)
class PreparedTable:
    """A DataFrame made ready for display, off the window's process: every cell's text,
    sort keys per column and one lower-case text per row for the filter box.

    Building this for tens of thousands of rows takes a second, so the worker process
    does it; showing it in the window is then only a model reset. (``frame`` is None only
    on the way from the worker, for the tables of :data:`SHARED_FRAMES`.)
    """

    frame: pd.DataFrame | None
    columns: tuple[str, ...]
    headers: tuple[str, ...]
    texts: tuple[TextColumn, ...]  # per column
    keys: tuple[np.ndarray[Any, Any], ...]  # per column, float64 (strings: their rank)
    numeric: tuple[bool, ...]
    haystack: TextColumn  # per row

    def __len__(self) -> int:
        return len(self.haystack)


def prepare_table(frame: pd.DataFrame, hide: Sequence[str] = ()) -> PreparedTable:
    """Format ``frame`` for the window's table model (estimates with intervals in one
    column: ``0.812  [0.744, 0.871]``)."""
    frame = frame.reset_index(drop=True)
    cis = ci_columns(frame)
    hidden = {b for pair in cis.values() for b in pair} | set(hide)
    columns = [str(c) for c in frame.columns if str(c) not in hidden]
    cells_by_column: list[list[str]] = []
    keys: list[np.ndarray[Any, Any]] = []
    numeric: list[bool] = []
    for c in columns:
        cells = format_column(frame[c], c)
        ci = cis.get(c)
        if ci is not None:
            lows = format_column(frame[ci[0]], c)
            highs = format_column(frame[ci[1]], c)
            cells = [
                f"{t}  [{lo}, {hi}]" if t and lo and hi else t
                for t, lo, hi in zip(cells, lows, highs, strict=True)
            ]
        is_num = pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(
            frame[c]
        )
        if is_num:
            key = pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=np.float64)
        elif frame[c].dtype == np.bool_:
            key = frame[c].to_numpy(dtype=np.float64)  # no before yes
        else:
            strings = np.array(
                [v if type(v) is str else _key_text(v) for v in frame[c].to_numpy(dtype=object)],
                dtype=object,
            )
            key = _text_ranks(strings)
        cells_by_column.append(cells)
        keys.append(key)
        numeric.append(bool(is_num))
    n = len(frame)
    haystack = [" ".join(row).lower() for row in zip(*cells_by_column, strict=True)]
    if not columns:
        haystack = [""] * n
    headers = tuple(header_text(c) + (" [95% CI]" if c in cis else "") for c in columns)
    return PreparedTable(
        frame,
        tuple(columns),
        headers,
        tuple(TextColumn.of(cells) for cells in cells_by_column),
        tuple(keys),
        tuple(numeric),
        TextColumn.of(haystack),
    )


def _text_ranks(strings: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Each string's rank among the distinct strings in sorted order, as float64 (what
    ``np.unique(strings, return_inverse=True)[1]`` gives, sorting only the distinct
    values instead of every row)."""
    if not len(strings):
        return np.zeros(0, dtype=np.float64)
    codes, uniques = pd.factorize(strings, sort=False)
    order = np.argsort(np.asarray(uniques, dtype=object), kind="stable")
    rank_of_code = np.empty(len(order), dtype=np.float64)
    rank_of_code[order] = np.arange(len(order), dtype=np.float64)
    out: np.ndarray[Any, Any] = rank_of_code[codes]
    return out


# -- the agreement and model tables ------------------------------------------------------------
@functools.cache
def _stat_labels() -> dict[str, str]:
    """Short labels of the agreement statistics, for column headers: each statistic's
    ``short`` in gradercal.stats.registry. Read on first use (the module attribute
    ``STAT_LABELS``), by the worker, which has loaded the statistics anyway: importing this
    module must not load them (scipy) into the window process."""
    from gradercal.stats.registry import STATISTICS

    return {key: s.short for key, s in STATISTICS.items() if s.short is not None}


def __getattr__(name: str) -> Any:
    # STAT_LABELS: the short labels of the agreement statistics, derived on first use
    if name == "STAT_LABELS":
        return _stat_labels()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Order of the agreement table's statistic columns (the first ones fit on screen) and
#: the experts' statistics shown first: the catalogue's views.
STAT_ORDER = view("columns")
EXPERT_HEADLINE = view("headline")
AGREEMENT_BYS = ("tag", "workflow", "domain", "criterion", "overall")


def agreement_wide(agreement: pd.DataFrame, by: str) -> pd.DataFrame:
    """The long agreement table of one grouping as one row per group: for each of the
    experts and each judge, the statistics with their interval columns (``…_low``/``…_high``).

    Rows in the order groups first appear; columns: the keys, ``items`` and ``tasks`` (the
    experts' counts), then the experts' headline statistics (α, % agreement), each judge's
    statistics (judges in order of appearance), the experts' other statistics — each
    ``<who> <statistic>`` with ``…_low`` and ``…_high``. A statistic given twice for a
    group keeps its last value.
    """
    sub = agreement.loc[agreement["by"] == by].reset_index(drop=True)
    if sub.empty:
        return pd.DataFrame({"group": pd.Series([], dtype=object)})
    keys = ["group", "task_id"] if by == "criterion" else ["group"]
    key_frame = pd.DataFrame({k: sub[k] for k in keys})
    row = key_frame.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
    n_rows = int(row.max()) + 1
    comparisons = sub["comparison"].to_numpy(dtype=object)
    statistics = sub["statistic"].to_numpy(dtype=object)
    who = [c if c == "experts" else str(c) for c in comparisons]
    labels = _stat_labels()
    names = [f"{w} {labels.get(s, s)}" for w, s in zip(who, statistics, strict=True)]
    # Column order: a key per column, from who (judges ranked by first appearance) and
    # the statistic; ties keep the order of first appearance.
    order = {s: i for i, s in enumerate(STAT_ORDER)}
    who_rank: dict[str, int] = {}
    column_key: dict[str, tuple[int, int, int]] = {}
    for w, s, name in zip(who, statistics, names, strict=True):
        if name in column_key:
            continue
        who_rank.setdefault(w, 0 if w == "experts" else len(who_rank) + 1)
        rank = order.get(s, 99)
        if w == "experts":
            column_key[name] = (0, rank, 0) if s in EXPERT_HEADLINE else (2, rank, 0)
        else:
            column_key[name] = (1, who_rank[w], rank)
    ordered = sorted(column_key, key=lambda n: column_key[n])
    long = pd.DataFrame(
        {
            "row": row,
            "name": names,
            "value": sub["value"].to_numpy(),
            "low": sub["ci_low"].to_numpy(),
            "high": sub["ci_high"].to_numpy(),
        }
    ).drop_duplicates(["row", "name"], keep="last")
    wide = long.pivot(index="row", columns="name").reindex(range(n_rows))
    first = pd.Series(np.arange(len(row))).groupby(row).first().to_numpy()
    out: dict[str, Any] = {k: key_frame[k].to_numpy(dtype=object)[first] for k in keys}
    experts = np.asarray([w == "experts" for w in who])
    for count, column in (("items", "n_items"), ("tasks", "n_tasks")):
        values = pd.Series(sub[column].to_numpy()[experts]).groupby(row[experts]).max()
        out[count] = values.reindex(range(n_rows)).to_numpy()
    for n in ordered:
        out[n] = wide[("value", n)].to_numpy()
        out[f"{n}_low"] = wide[("low", n)].to_numpy()
        out[f"{n}_high"] = wide[("high", n)].to_numpy()
    cols = [*keys, "items", "tasks"]
    for n in ordered:
        cols += [n, f"{n}_low", f"{n}_high"]
    frame = pd.DataFrame({c: out[c] for c in cols})
    if by == "criterion":
        frame = frame.rename(columns={"group": "criterion"})
        frame = frame.loc[:, ["task_id", "criterion", *cols[2:]]]
    return frame


def models_wide(models: pd.DataFrame) -> pd.DataFrame:
    """One row per model and metric; one estimate-with-interval column per source."""
    if models.empty:
        return pd.DataFrame({"model": pd.Series([], dtype=object)})
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for rec in models.itertuples(index=False):
        row = out.setdefault(
            (str(rec.model), str(rec.metric)),
            {"model": rec.model, "metric": str(rec.metric).replace("_", " ")},
        )
        name = str(rec.source).replace("judge_", "judge ")
        row[name], row[f"{name}_low"], row[f"{name}_high"] = rec.value, rec.ci_low, rec.ci_high
        row["responses"] = rec.n_responses
    return pd.DataFrame(list(out.values()))


#: The tables the window shows, each built from the dashboard.
def _agreement_table(by: str) -> Callable[[Dashboard], pd.DataFrame]:
    return lambda d: agreement_wide(d.agreement, by)


def _section_table(key: str) -> Callable[[Dashboard], pd.DataFrame]:
    return lambda d: d.table(key)


#: The window's tables shown as the dashboard holds them (``judges`` and every table
#: section of :data:`gradercal.dashboard.tables.TABLE_SECTIONS`, by key): the worker
#: sends them without their frame and the window puts the Dashboard's back
#: (:func:`share_frames`), so a large frame is unpickled — and held — once.
SHARED_FRAMES: tuple[str, ...] = ("judges", *(table.key for table in TABLE_SECTIONS))

TABLES: dict[str, Callable[[Dashboard], pd.DataFrame]] = {
    **{f"agreement:{by}": _agreement_table(by) for by in AGREEMENT_BYS},
    "judges": lambda d: d.judges,
    "models": lambda d: models_wide(d.models),
    **{table.key: _section_table(table.key) for table in TABLE_SECTIONS},
}


def share_frames(tables: dict[str, PreparedTable], dash: Dashboard) -> dict[str, PreparedTable]:
    """``tables`` with the frames the worker left out (None) taken from ``dash``."""
    out = dict(tables)
    for name in SHARED_FRAMES:
        table = out.get(name)
        if table is not None and table.frame is None:
            frame = dash.judges if name == "judges" else dash.table(name)
            out[name] = replace(table, frame=frame.reset_index(drop=True))
    return out


# -- charts -----------------------------------------------------------------------------------
# Every list below is derived from gradercal.dashboard.charts.CHART_REGISTRY: a chart added
# there gets its tab here.

#: ``(name, title)`` of every chart tab, in order.
CHARTS: tuple[tuple[str, str], ...] = tuple(
    (chart.tab, chart.window_title) for chart in CHART_REGISTRY
)
#: {chart tab: its label}.
CHART_TAB_LABELS: dict[str, str] = {chart.tab: chart.tab_label for chart in CHART_REGISTRY}
#: The chart tabs drawn per grouping (``<tab>:<grouping>``): each shows the agreement
#: table's grouping (:data:`DEFAULT_GROUPING` when it has no figure).
GROUPING_TABS: tuple[str, ...] = tuple(chart.tab for chart in CHART_REGISTRY if chart.per_grouping)
#: The groupings the per-grouping charts are drawn for (the "groups" tab's forest plots).
FOREST_BYS = GROUPINGS
#: Every figure of the dashboard (one per chart tab, one per grouping for "groups"), in
#: the order :func:`build_figures` makes them.
CHART_NAMES: tuple[str, ...] = tuple(chart.figure_name(by) for chart, by in chart_figures())
#: Figures not drawn ahead (shown only when the agreement table's grouping asks for them).
NOT_PRERENDERED: frozenset[str] = frozenset(
    chart.figure_name(by) for chart, by in chart_figures() if not chart.prerendered(by)
)
_BY_TAB = {chart.tab: chart for chart in CHART_REGISTRY}


def figure_name(tab: str, grouping: str) -> str:
    """The figure chart tab ``tab`` shows when the agreement table is grouped by
    ``grouping``: the tab's own, or per grouping that grouping's (else the default's)."""
    chart = _BY_TAB[tab]
    if not chart.per_grouping:
        return chart.figure_name()
    return chart.figure_name(grouping if grouping in GROUPINGS else DEFAULT_GROUPING)


def build_figures(
    dash: Dashboard, dark: bool, only: Collection[str] | None = None
) -> dict[str, Figure | str]:
    """Every chart (or those named in ``only``) as a matplotlib Figure (or the reason
    there is none), in :data:`CHART_NAMES` order.

    The figures come from :mod:`gradercal.dashboard.charts` in its light or dark theme
    (``dark``: the window palette's lightness). ``groups:<by>`` holds one forest chart per
    grouping.
    """
    out: dict[str, Figure | str] = {}
    for chart, by in chart_figures():
        name = chart.figure_name(by)
        if only is not None and name not in only:
            continue
        try:
            out[name] = chart.figure(dash, by, dark=dark)
        except Exception as exc:  # a degenerate table: say why instead of failing it all
            out[name] = f"No chart: {exc}"
    return out


@dataclass(frozen=True)
class Pixels:
    """A figure drawn at ``width`` × ``height`` physical pixels and ``dpi``: RGBA bytes."""

    width: int
    height: int
    dpi: float
    rgba: bytes


def render_pixels(figure: Figure, size: tuple[int, int]) -> Pixels | None:
    """Draw ``figure`` at ``size`` (physical pixels) with Agg; None when too small.

    The window's canvas takes these pixels for its first paint when its size is the same
    (:func:`attach_pixels`): a chart's first paint then costs a copy, not a layout and
    render on the window's thread (which can take half a second).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    w, h = size
    if w < 50 or h < 50:
        return None
    canvas = FigureCanvasAgg(figure)
    figure.set_size_inches(w / figure.dpi, h / figure.dpi, forward=False)
    canvas.draw()  # type: ignore[no-untyped-call]
    rgba = bytes(canvas.buffer_rgba())  # type: ignore[no-untyped-call]
    return Pixels(w, h, float(figure.dpi), rgba)


def attach_pixels(figure: Figure, pixels: Pixels | None) -> None:
    """Give ``figure`` an Agg renderer holding ``pixels`` for its canvas's first draw."""
    if pixels is None:
        return
    from matplotlib.backends.backend_agg import RendererAgg

    renderer = RendererAgg(pixels.width, pixels.height, pixels.dpi)  # type: ignore[no-untyped-call]
    buffer = np.asarray(renderer.buffer_rgba())  # type: ignore[no-untyped-call]
    buffer[...] = np.frombuffer(pixels.rgba, dtype=np.uint8).reshape(buffer.shape)
    figure._gradercal_prerendered = (  # type: ignore[attr-defined]
        renderer,
        (pixels.width, pixels.height, pixels.dpi),
    )


# -- a request and its result ----------------------------------------------------------------
@dataclass
class Request:
    """One computation the window asks of the worker process."""

    generation: int
    benchmark: str
    filters: DashboardFilters
    judge: str | None
    #: the charts' theme: dark (the window's palette is dark) or light
    dark: bool
    n_boot: int | None = None
    seed: int = 0
    #: a saved calibration's params (None: compute_dashboard's default method)
    calibration: dict[str, Any] | None = None
    #: the charts' canvas size in physical pixels: figures are drawn at it by the worker
    chart_size: tuple[int, int] | None = None
    #: read the database again (otherwise the worker's cached frames are used)
    reload: bool = False

    def dashboard_request(self) -> DashboardRequest:
        """What :func:`~gradercal.dashboard.compute_dashboard` is asked (``n_boot`` None:
        its default; the default confidence level)."""
        from gradercal.dashboard import DEFAULT_N_BOOT, DashboardRequest
        from gradercal.stats.boot_settings import BootSettings

        n_boot = DEFAULT_N_BOOT if self.n_boot is None else self.n_boot
        return DashboardRequest(
            judge=self.judge,
            filters=self.filters,
            calibration=self.calibration,
            benchmark=self.benchmark,
            boot=BootSettings(n_boot, self.seed),
        )


@dataclass
class Computed:
    """What the window shows: the dashboard, tables ready to show, figures."""

    generation: int
    dashboard: Dashboard
    options: dict[str, list[str]]
    tables: dict[str, PreparedTable]
    figures: dict[str, Figure | str]  # name → Figure, or a str saying why there is none
    #: {task id: its first response id} (a criterion-health row without a disagreement
    #: opens that response)
    first_response: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    #: the process that computed it
    pid: int = 0
    #: whether the frames were read from the database for it (else the worker's cache)
    loaded: bool = False
    #: seconds the worker spent per phase (load, compute, send, tables, charts)
    phases: dict[str, float] = field(default_factory=dict)
    #: the parts (:class:`~gradercal.ui.dashboard.protocol.Part`) that differ from the
    #: result shown before; None: all of them
    changed: frozenset[Part] | None = None
    #: answered from the worker's result cache (computed before, or prefetched)
    cached: bool = False
    #: answered from the results kept on disk (:mod:`gradercal.ui.dashboard.disk_cache`)
    disk: bool = False
    #: the parts of the data the worker read again for it (``Repository.data_revision``)
    refreshed: tuple[str, ...] = ()

    def is_changed(self, key: Part) -> bool:
        """Whether part ``key`` differs from the result shown before."""
        return self.changed is None or key in self.changed


__all__ = [
    "AGREEMENT_BYS",
    "CHARTS",
    "CHART_NAMES",
    "CHART_TAB_LABELS",
    "FOREST_BYS",
    "GROUPING_TABS",
    "NOT_PRERENDERED",
    "Computed",
    "Pixels",
    "PreparedTable",
    "Request",
    "TextColumn",
    "agreement_wide",
    "attach_pixels",
    "build_figures",
    "ci_columns",
    "figure_name",
    "format_column",
    "format_value",
    "header_text",
    "models_wide",
    "prepare_table",
    "render_pixels",
]
