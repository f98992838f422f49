"""The dashboard as a self-contained HTML report, and as a PDF.

:func:`render_html` turns a :class:`~gradercal.dashboard.Dashboard` into one HTML file
with the sections of the dashboard (:data:`REPORT_SECTIONS`): its charts are embedded
as ``data:`` URIs (SVG by default, or PNG), its tables are HTML tables, and nothing is
loaded from anywhere else (no scripts, no web fonts, no external style sheets). Every
piece of text that comes from the data — criterion texts, grader, model and task names,
notes — is HTML-escaped.

:func:`write_pdf` lays out the same content with PyMuPDF's ``Story`` (HTML → PDF);
Story cannot read ``data:`` URIs, so the PDF's charts are PNGs handed over through a
``pymupdf.Archive``. Long tables (criterion health, disagreements, flips, criterion
agreement) are cut at ``max_rows`` rows with a line saying how many were left out —
``gradercal report --json`` has them all.

This module imports the core, matplotlib (through :mod:`gradercal.dashboard.charts`) and PyMuPDF
(for the PDF only).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import html
import io
import math
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from gradercal._util.numbers import finite_fixed, finite_interval, finite_percent
from gradercal.dashboard.result import EXPERTS, MODEL_SOURCES, Dashboard
from gradercal.dashboard.tables import TABLE_SECTIONS, TableSection
from gradercal.stats.catalogue import FIGURES

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "DEFAULT_MAX_ROWS",
    "REPORT_SECTIONS",
    "preload_charts",
    "render_html",
    "report_charts",
    "report_sections",
    "write_html",
    "write_pdf",
]

#: Rows shown of each long table.
DEFAULT_MAX_ROWS = 50
#: ``(id, heading)`` of every section, in order.
REPORT_SECTIONS: tuple[tuple[str, str], ...] = (
    ("overview", "Overview"),
    ("agreement", "Agreement"),
    ("pairwise", "Pairwise agreement"),
    ("judges", "Judges and prompt versions"),
    ("confusion", "Judge vs expert consensus"),
    ("reliability", "Reliability and calibration"),
    ("models", "Per-model scores"),
    ("alt-test", "Alternative annotator test"),
    *((table.key, table.title) for table in TABLE_SECTIONS),
    ("notes", "Notes"),
)
_HEADING = dict(REPORT_SECTIONS)
#: Table sections that a dashboard may lack (left out of its report then).
_OPTIONAL = frozenset(table.key for table in TABLE_SECTIONS if table.optional)


def report_sections(d: Dashboard) -> list[tuple[str, str]]:
    """The ``(id, heading)`` of the sections the report of ``d`` shows, in order:
    :data:`REPORT_SECTIONS` less the optional table sections ``d`` lacks (the agreement per
    criterion version without a revised criterion)."""
    return [
        (sid, head) for sid, head in REPORT_SECTIONS if sid not in _OPTIONAL or d.has_section(sid)
    ]


_CSS = """
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; font-size: 10pt;
       color: #1a1a1a; max-width: 1100px; margin: 1.5em auto; padding: 0 1em; }
h1 { font-size: 18pt; margin-bottom: 0.2em; }
h2 { font-size: 14pt; border-bottom: 1px solid #bbb; margin-top: 1.6em; }
h3 { font-size: 11pt; margin-top: 1.1em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.num { text-align: right; }
p.meta, p.cut { color: #555; font-size: 9pt; }
img.chart { max-width: 100%; }
.pass { color: #007a3d; font-weight: bold; }
.fail { color: #b00020; font-weight: bold; }
"""
_PDF_CSS = """
body { font-family: sans-serif; font-size: 8pt; }
h1 { font-size: 15pt; } h2 { font-size: 12pt; } h3 { font-size: 9.5pt; }
table { border-collapse: collapse; }
th, td { border: 0.5px solid #999; padding: 1px 3px; font-size: 7pt; }
th { font-weight: bold; }
p.meta, p.cut { color: #555555; font-size: 7pt; }
"""


# ---------------------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------------------


def _e(x: Any) -> str:
    """HTML-escaped text of any value (None → em dash)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return html.escape(str(x), quote=True)


_num = finite_fixed
_pct = finite_percent


_ci = finite_interval


def _table(
    header: Sequence[str],
    rows: Sequence[Sequence[tuple[str, bool]]],
    *,
    total: int | None = None,
) -> str:
    """An HTML table; cells are ``(already escaped html, numeric?)``."""
    out = ["<table>", "<tr>" + "".join(f"<th>{_e(h)}</th>" for h in header) + "</tr>"]
    for row in rows:
        out.append(
            "<tr>"
            + "".join(f'<td class="num">{c}</td>' if num else f"<td>{c}</td>" for c, num in row)
            + "</tr>"
        )
    out.append("</table>")
    if total is not None and total > len(rows):
        out.append(
            f'<p class="cut">First {len(rows):,} of {total:,} rows; '
            "<code>gradercal report --json</code> lists them all.</p>"
        )
    return "\n".join(out)


class _Row:
    """Attribute access to one record of a frame (values typed ``Any``)."""

    def __init__(self, record: dict[Any, Any]) -> None:
        self._r = record

    def __getattr__(self, name: str) -> Any:
        try:
            return self._r[name]
        except KeyError:
            raise AttributeError(name) from None


def _rows(df: pd.DataFrame) -> list[_Row]:
    return [_Row(r) for r in df.to_dict("records")]


def _t(x: Any) -> tuple[str, bool]:
    return _e(x), False


def _n(x: str) -> tuple[str, bool]:
    return x, True


# ---------------------------------------------------------------------------------------
# Charts
# ---------------------------------------------------------------------------------------


def report_charts(d: Dashboard) -> dict[str, Figure]:
    """The figures the report embeds (light theme), keyed as in
    :data:`gradercal.dashboard.charts.CHART_TITLES`."""
    from gradercal.dashboard.charts import all_charts

    return all_charts(d, dark=False)


def _charts(images: Mapping[str, str], section: str, grouping: str | None = None) -> str:
    """The images of the charts that open ``section`` (per grouping: ``grouping``'s part
    of it), in the order of :data:`gradercal.dashboard.charts.CHART_REGISTRY`."""
    from gradercal.dashboard.charts import chart_figures

    return "".join(
        images.get(chart.report_key(by), "")
        for chart, by in chart_figures()
        if chart.section == section and by == grouping
    )


def _data_uri(fig: Figure, fmt: str) -> str:
    from gradercal.dashboard.charts import figure_bytes

    mime = "image/svg+xml" if fmt == "svg" else "image/png"
    data = base64.b64encode(figure_bytes(fig, fmt)).decode("ascii")
    return f"data:{mime};base64,{data}"


# ---------------------------------------------------------------------------------------
# Sections
# ---------------------------------------------------------------------------------------


def _overview(d: Dashboard) -> str:
    o = d.overview
    share = o.get("share_graded") or {}
    rows = [
        ("Benchmark", _e(o.get("benchmark"))),
        ("Filters", _e(o.get("filters"))),
        ("Tasks", _e(o.get("n_tasks"))),
        ("Responses", _e(o.get("n_responses"))),
        (
            "Rubric criteria (judgment criteria)",
            f"{_e(o.get('n_criteria'))} ({_e(o.get('n_judgment_criteria'))})",
        ),
        ("Criterion verdicts to give (responses × judgment criteria)", _e(o.get("n_units"))),
        ("Models", _e(", ".join(o.get("models") or []))),
        ("Experts", _e(", ".join(o.get("humans") or []) or None)),
        ("Judges", _e(", ".join(o.get("judges") or []) or None)),
        ("Judge shown in the per-judge sections", _e(o.get("primary_judge"))),
        ("Graded by at least one expert", _pct(share.get("overall"))),
        ("Graded by two or more experts", _pct(share.get("two_or_more"))),
        ("Pass threshold", _pct(o.get("pass_threshold"))),
        ("Adjudications", _e(o.get("n_adjudications"))),
        (
            "Intervals",
            _e(
                f"{o.get('ci', 0.95):.0%} task-clustered bootstrap, {o.get('n_boot')} resamples, "
                f"seed {o.get('seed')}"
                if o.get("n_boot")
                else "none (no bootstrap)"
            ),
        ),
    ]
    if o.get("design") == "active":
        rows.insert(
            0,
            (
                "Design",
                _e(
                    "active design: weighted by inclusion probability (estimates and the "
                    "judges' agreement with the consensus; other figures over the items as "
                    "sampled, not design-weighted)"
                ),
            ),
        )
    body = _table(["", ""], [[_t(k), (v, False)] for k, v in rows])
    per = [
        [_t(g), _n(_pct(share.get(g))), _n(_e((o.get("n_verdicts") or {}).get(g)))]
        for g in o.get("humans") or []
    ]
    per += [
        [
            _t(f"{j} (judge)"),
            _n(_pct((o.get("judge_coverage") or {}).get(j))),
            _n(_e((o.get("n_verdicts") or {}).get(j))),
        ]
        for j in o.get("judges") or []
    ]
    if per:
        body += "<h3>Share graded, per grader</h3>" + _table(
            ["grader", "share of verdicts", "verdicts"], per
        )
    return body


def _stat_labels() -> dict[str, str]:
    """The phrase of every figure of the catalogue (any statistic the agreement table
    shows has one)."""
    return {key: f.phrase for key, f in FIGURES.items()}


def _agreement(d: Dashboard, images: Mapping[str, str], max_rows: int) -> str:
    a = d.agreement
    if a.empty:
        return "<p>No verdicts to compare.</p>"
    parts = []
    if charts := _charts(images, "agreement"):
        parts.append(charts)
    parts.append("<h3>Overall</h3>")
    by_of = a["by"].to_numpy(object)
    rows_of = {by: np.flatnonzero(by_of == by) for by in dict.fromkeys(by_of)}
    none = np.zeros(0, dtype=np.intp)
    parts.append(_agreement_overall(a.iloc[rows_of.get("overall", none)]))
    for by in ("tag", "workflow", "domain"):
        sub = a.iloc[rows_of.get(by, none)]
        if sub.empty:
            continue
        parts.append(f"<h3>By {_e(by)}</h3>")
        if charts := _charts(images, "agreement", by):
            parts.append(charts)
        parts.append(_agreement_by(sub, by, d.primary_judge))
    crit = a.iloc[rows_of.get("criterion", none)]
    if not crit.empty:
        parts += _agreement_by_criterion(crit, d.primary_judge, max_rows)
    return "\n".join(parts)


def _agreement_overall(ov: pd.DataFrame) -> str:
    """Every overall row: each statistic named by its phrase in the catalogue."""
    labels = _stat_labels()
    return _table(
        ["comparison", "statistic", "value [CI]", "items", "tasks", "note"],
        [
            [
                _t(
                    "experts among themselves"
                    if r.comparison == EXPERTS
                    else f"{r.comparison} vs expert consensus"
                ),
                _t(labels.get(r.statistic, r.statistic)),
                _n(_ci(r.value, r.ci_low, r.ci_high)),
                _n(_e(r.n_items)),
                _n(_e(r.n_tasks)),
                _t(r.note),
            ]
            for r in _rows(ov)
        ],
    )


def _agreement_by(sub: pd.DataFrame, by: str, judge: str | None) -> str:
    """One row per group of ``by``: the experts' and the primary judge's main figures."""
    header = [by, "expert items", "experts: % agreement", "experts: Fleiss' kappa"]
    if judge is not None:
        header += [
            f"{judge}: Cohen's kappa",
            f"{judge}: balanced F1",
            f"{judge}: leniency bias",
        ]
    # each (group, comparison, statistic)'s first row, read once (a missing group
    # matches nothing, as an equality test with it would)
    first: dict[tuple[Any, Any, Any], tuple[Any, ...]] = {}
    experts_items: dict[Any, Any] = {}  # each group's first experts row's item count
    for r in sub.loc[
        :, ["group", "comparison", "statistic", "value", "ci_low", "ci_high", "n_items"]
    ].itertuples(index=False, name=None):
        if not pd.isna(r[0]):
            first.setdefault(r[:3], r[3:])
            if r[1] == EXPERTS:
                experts_items.setdefault(r[0], r[6])
    rows = []
    for g in dict.fromkeys(sub["group"]):

        def cell(comp: str, stat: str, g: Any = g) -> str:
            x = first.get((g, comp, stat))
            return "—" if x is None else _ci(x[0], x[1], x[2])

        row = [
            _t(g),
            _n(_e(experts_items.get(g))),
            _n(cell(EXPERTS, "percent_agreement")),
            _n(cell(EXPERTS, "fleiss_kappa")),
        ]
        if judge is not None:
            row += [_n(cell(judge, s)) for s in ("cohen_kappa", "balanced_f1", "leniency_bias")]
        rows.append(row)
    return _table(header, rows)


def _agreement_by_criterion(crit: pd.DataFrame, judge: str | None, max_rows: int) -> list[str]:
    """The criteria with the lowest expert agreement first (no intervals: one cluster)."""
    ex = crit.loc[crit["comparison"] == EXPERTS].sort_values("value", kind="stable")
    jd = crit.loc[crit["comparison"] != EXPERTS].set_index(["task_id", "group"])["value"]
    rows = [
        [
            _t(r.task_id),
            _t(r.group),
            _n(_e(r.n_items)),
            _n(_num(r.value)),
            _n(_num(jd.get((r.task_id, r.group), math.nan)) if judge else "—"),
        ]
        for r in _rows(ex.head(max_rows))
    ]
    header = [
        "task",
        "criterion",
        "responses",
        "experts: % agreement",
        f"{judge or 'judge'}: % agreement",
    ]
    return [
        "<h3>By criterion (lowest expert agreement first)</h3>",
        '<p class="meta">One task is one cluster, so per-criterion figures have no '
        "interval; they rest on the few responses to the task.</p>",
        _table(header, rows, total=len(ex)),
    ]


def _pairwise(d: Dashboard, images: Mapping[str, str]) -> str:
    p = d.pairwise
    if p.empty:
        return "<p>Fewer than two graders.</p>"
    out = [_charts(images, "pairwise")]
    wide = p.pivot_table(
        index=["a", "b", "n_items"],
        columns="statistic",
        values=["value", "ci_low", "ci_high"],
        aggfunc="first",
    )
    rows = []
    for key, r in wide.iterrows():
        k: Any = key
        a, b, n = k[0], k[1], k[2]
        rows.append(
            [
                _t(a),
                _t(b),
                _n(_e(n)),
                _n(
                    _ci(
                        r.get(("value", "percent_agreement")),
                        r.get(("ci_low", "percent_agreement")),
                        r.get(("ci_high", "percent_agreement")),
                    )
                ),
                _n(
                    _ci(
                        r.get(("value", "cohen_kappa")),
                        r.get(("ci_low", "cohen_kappa")),
                        r.get(("ci_high", "cohen_kappa")),
                    )
                ),
            ]
        )
    out.append(
        _table(
            ["grader", "grader", "shared items", "percent agreement [CI]", "Cohen's kappa [CI]"],
            rows,
        )
    )
    return "\n".join(out)


def _judges(d: Dashboard) -> str:
    j = d.judges
    if j.empty or "cohen_kappa" not in j.columns:
        return "<p>No judge graded this benchmark.</p>"
    rows = []
    for r in j.to_dict("records"):
        verdict = r.get("alt_test_passed")
        alt = (
            "—"
            if verdict is None
            else (
                '<span class="pass">passes</span>' if verdict else '<span class="fail">fails</span>'
            )
        )
        rows.append(
            [
                _t(r["judge"] + (" (shown)" if r.get("primary") else "")),
                _n(_e(r["n_items"])),
                _n(_pct(r.get("coverage"))),
                _n(_ci(r["cohen_kappa"], r["cohen_kappa_low"], r["cohen_kappa_high"])),
                _n(f"{_num(r.get('kappa_experts_min'))} – {_num(r.get('kappa_experts_max'))}"),
                _n(_ci(r["balanced_f1"], r["balanced_f1_low"], r["balanced_f1_high"])),
                _n(_ci(r["leniency_bias"], r["leniency_bias_low"], r["leniency_bias_high"])),
                _n(
                    _ci(
                        r.get("calibrated_cohen_kappa"),
                        r.get("calibrated_cohen_kappa_low"),
                        r.get("calibrated_cohen_kappa_high"),
                    )
                ),
                _n(alt),
            ]
        )
    active = d.overview.get("design") == "active"
    return (
        '<p class="meta">Each judge grader is one prompt version. Kappa, balanced F1 and '
        "leniency are against the consensus of all experts; the expert range is each expert "
        "against the consensus of the others; the calibrated kappa is out of fold."
        + (
            " Active design: kappa is weighted by inclusion probability; the other columns "
            "are over the expert-graded items as sampled, not design-weighted."
            if active
            else ""
        )
        + "</p>"
        + _table(
            [
                "judge",
                "items",
                "coverage",
                "Cohen's kappa [CI]",
                "experts' kappa range",
                "balanced F1 [CI]",
                "leniency bias [CI]",
                "calibrated kappa [CI]",
                "alt-test",
            ],
            rows,
        )
    )


def _confusion(d: Dashboard, images: Mapping[str, str]) -> str:
    if not d.confusion:
        return "<p>No judge compared with the expert consensus.</p>"
    rows = []
    for name, m in d.confusion.items():
        (tn, fp), (fn, tp) = m.tolist()
        rows.append([_t(name), _n(_e(tp)), _n(_e(fp)), _n(_e(fn)), _n(_e(tn))])
    return (
        _charts(images, "confusion")
        + '<p class="meta">Rows of the matrix: the expert consensus; columns: the judge. '
        "A false positive is a criterion the judge calls met and the experts not.</p>"
        + _table(
            [
                "judge",
                "met / met (TP)",
                "judge met, experts not (FP)",
                "judge not, experts met (FN)",
                "not / not (TN)",
            ],
            rows,
        )
    )


def _reliability(d: Dashboard, images: Mapping[str, str]) -> str:
    c = d.calibration
    if c is None:
        return "<p>No calibrated judge (needs a judge and expert grades on at least two tasks).</p>"
    info = _table(
        ["", ""],
        [
            [_t("judge"), _t(c.get("judge"))],
            [_t("method"), _t(f"{c.get('method')} ({c.get('level')} level, {c.get('source')})")],
            [
                _t("evaluation"),
                _t(
                    f"out of fold, {c.get('n_splits')}-fold GroupKFold by task over {c.get('n_tasks')} tasks, {c.get('n_items')} items"
                ),
            ],
            [
                _t("Brier score before → after"),
                _n(f"{_num(c.get('brier_before'))} → {_num(c.get('brier_after'))}"),
            ],
            [
                _t("expected calibration error before → after"),
                _n(f"{_num(c.get('ece_before'))} → {_num(c.get('ece_after'))}"),
            ],
        ],
    )
    return _charts(images, "reliability") + info


def _models(d: Dashboard, images: Mapping[str, str]) -> str:
    m = d.models
    if m.empty:
        return "<p>Needs a judge and expert grades.</p>"
    from gradercal.dashboard.charts import SOURCE_LABELS

    present = set(m["source"])
    sources = [s for s in MODEL_SOURCES if s in present]
    parts = [_charts(images, "models")]
    # each (metric, model, source)'s first row, read once
    cols = ["metric", "model", "source", "value", "ci_low", "ci_high"]
    first: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for r in m.loc[:, cols].itertuples(index=False, name=None):
        first.setdefault((r[0], str(r[1]), r[2]), r[3:])
    for metric, label in (("mean_score", "Mean rubric score"), ("pass_rate", "Pass rate")):
        rows = []
        for model in sorted({model for mt, model, _s in first if mt == metric}):
            row = [_t(model)]
            for s in sources:
                x = first.get((metric, model, s))
                row.append(_n(_ci(x[0], x[1], x[2]) if x is not None else "—"))
            rows.append(row)
        parts.append(f"<h3>{_e(label)}</h3>")
        parts.append(_table(["model", *(SOURCE_LABELS[s] for s in sources)], rows))
    parts.append(
        '<p class="meta">Experts, raw and calibrated judge: on the responses all three scored, '
        "task-bootstrap intervals. Bias-corrected: PPI++ over every judge-scored response, "
        "small-sample intervals (t with n−1 df; Agresti–Coull-type for pass rates), "
        "clipped to [0, 1]."
        + (
            " Active design: the bias-corrected figures are weighted by inclusion probability "
            "(as gradercal estimate); experts, raw and calibrated judge are over the "
            "expert-graded responses as sampled, not design-weighted."
            if d.overview.get("design") == "active"
            else ""
        )
        + "</p>"
    )
    return "\n".join(parts)


def _alt(d: Dashboard) -> str:
    a = d.alt_test
    if a is None:
        return "<p>Not run (needs a judge and at least two experts on shared items).</p>"
    verdict = (
        '<span class="pass">passes</span>' if a.get("passed") else '<span class="fail">fails</span>'
    )
    head = (
        f"<p>Judge <b>{_e(a.get('judge'))}</b> {verdict}: winning rate ω = "
        f"{_num(a.get('winning_rate'))} (≥ 0.5 needed), average advantage probability ρ = "
        f"{_num(a.get('advantage_probability'))}; ε = {_e(a.get('epsilon'))}, α = "
        f"{_e(a.get('alpha'))}, {_e(a.get('n_items'))} items; "
        f"{_e(a.get('test', 'exact score'))} test, {_e(a.get('n_tested'))} of "
        f"{_e(a.get('n_humans'))} experts tested."
        + (f" {_e(a['design_note'])}." if a.get("design_note") else "")
        + "</p>"
    )
    rows = [
        [
            _t(x.get("human")),
            _n(_e(x.get("n_items"))),
            _t(x.get("test") if x.get("tested", True) else _not_tested(x.get("note"))),
            _n(_num(x.get("rho_judge"))),
            _n(_num(x.get("rho_human"))),
            _n(_num(x.get("p_adjusted"))),
            _t("yes" if x.get("rejected") else "no"),
        ]
        for x in a.get("annotators") or []
    ]
    return head + _table(
        ["left-out expert", "items", "test", "ρ judge", "ρ expert", "p (BY)", "judge wins"], rows
    )


def _not_tested(note: Any) -> str:
    """An annotator left out of the test: its note, said once ("not tested: …"; the
    analysis's notes already begin so)."""
    text = str(note or "").strip()
    return text if text.lower().startswith("not tested") else f"not tested: {text}".rstrip(": ")


def _table_section(table: TableSection, d: Dashboard, max_rows: int) -> str:
    frame = d.table(table.key)
    if frame.empty:
        return f"<p>{_e(table.empty_text)}</p>"
    shown = table.report(frame, d.overview, max_rows)
    summary = "" if shown.summary is None else f"<p>{_e(shown.summary)}</p>"
    rows = [[(_e(value), numeric) for value, numeric in row] for row in shown.rows]
    return summary + _table(shown.header, rows, total=shown.total)


def _notes(d: Dashboard) -> str:
    if not d.notes:
        return "<p>None.</p>"
    return "<ul>" + "".join(f"<li>{_e(n)}</li>" for n in d.notes) + "</ul>"


# ---------------------------------------------------------------------------------------
# Documents
# ---------------------------------------------------------------------------------------


def _document(
    d: Dashboard,
    images: Mapping[str, str],
    *,
    title: str | None,
    css: str,
    max_rows: int,
    generated_at: datetime | None,
) -> str:
    when = (generated_at or datetime.now(UTC)).isoformat(timespec="seconds")
    bench = d.overview.get("benchmark")
    heading = title or ("Agreement report" + (f": {bench}" if bench else ""))
    from gradercal import __version__

    # The sections with charts place them; the others open with theirs, if any.
    builders: dict[str, Callable[[], str]] = {
        "overview": lambda: _charts(images, "overview") + _overview(d),
        "agreement": lambda: _agreement(d, images, max_rows),
        "pairwise": lambda: _pairwise(d, images),
        "judges": lambda: _charts(images, "judges") + _judges(d),
        "confusion": lambda: _confusion(d, images),
        "reliability": lambda: _reliability(d, images),
        "models": lambda: _models(d, images),
        "alt-test": lambda: _charts(images, "alt-test") + _alt(d),
        **{
            table.key: functools.partial(
                lambda t: _charts(images, t.key) + _table_section(t, d, max_rows), table
            )
            for table in TABLE_SECTIONS
        },
        "notes": lambda: _charts(images, "notes") + _notes(d),
    }
    body = [
        f"<h1>{_e(heading)}</h1>",
        f'<p class="meta">Generated {_e(when)} by gradercal {_e(__version__)}.</p>',
    ]
    for sid, head in report_sections(d):
        body.append(f'<h2 id="{sid}">{_e(head)}</h2>')
        body.append(builders[sid]())
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{_e(heading)}</title>\n<style>{css}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def _img(src: str, title: str, width: int | None = None) -> str:
    w = f' width="{width}"' if width else ""
    return f'<p><img class="chart" src="{_e(src)}" alt="{_e(title)}"{w}></p>'


def render_html(
    d: Dashboard,
    *,
    title: str | None = None,
    image_format: str = "svg",
    max_rows: int = DEFAULT_MAX_ROWS,
    charts: Mapping[str, Figure] | None = None,
    generated_at: datetime | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    processes: int = 1,
    images: Mapping[str, str] | None = None,
) -> str:
    """The self-contained HTML report.

    Args:
        d: The dashboard.
        title: The page title (default: ``"Agreement report: <benchmark>"``).
        image_format: ``"svg"`` or ``"png"`` for the embedded charts.
        max_rows: Rows shown of each long table.
        charts: Figures to embed (default: :func:`report_charts`).
        generated_at: Timestamp printed in the header (default: now, UTC).
        progress: ``progress(done, total, label)`` as charts are encoded.
        processes: 2 (or more): on Linux, and when ``charts`` is not given, a forked
            child draws and encodes every other chart while this process does the rest
            and the tables (:mod:`gradercal._util.forked`; the same bytes; if the child
            fails, its charts are drawn here). 1: one process. Only for a process
            without Qt or other threads a child must not inherit (the report command).
        images: Charts already drawn for this report in ``image_format``
            (:attr:`ChartsAhead.images`, by key): only the others are drawn (when
            ``charts`` is not given).

    Raises:
        ValueError: Unknown ``image_format``.
    """
    if image_format not in ("svg", "png"):
        raise ValueError("image_format must be svg or png")

    def document(images: Mapping[str, str]) -> str:
        return _document(
            d, images, title=title, css=_CSS, max_rows=max_rows, generated_at=generated_at
        )

    if charts is not None:
        return document(_encoded(dict(charts), image_format, progress))
    return _with_chart_images(d, image_format, progress, processes, document, images or {})


def _encoded(
    figs: Mapping[str, Figure],
    fmt: str,
    progress: Callable[[int, int, str], None] | None,
    *,
    done: int = 0,
    total: int | None = None,
) -> dict[str, str]:
    """The ``<img>`` element of each figure, as :func:`render_html` embeds it."""
    from gradercal.dashboard.charts import CHART_TITLES

    images: dict[str, str] = {}
    for i, (key, fig) in enumerate(figs.items()):
        images[key] = _img(_data_uri(fig, fmt), CHART_TITLES.get(key, key))
        if progress:
            progress(done + i + 1, len(figs) if total is None else total, "charts")
    return images


def _drawn(d: Dashboard, keys: Sequence[str], fmt: str) -> dict[str, str]:
    """The ``<img>`` elements of the report charts ``keys``, each figure drawn and
    encoded in turn."""
    from gradercal.dashboard.charts import CHART_TITLES, chart_figures

    wanted = set(keys)
    images: dict[str, str] = {}
    for chart, by in chart_figures():
        key = chart.report_key(by)
        if key in wanted:
            fig = chart.figure(d, by, dark=False)
            images[key] = _img(_data_uri(fig, fmt), CHART_TITLES.get(key, key))
    return images


def _report_keys(d: Dashboard) -> list[str]:
    """The keys of :func:`report_charts`, in its order (without drawing anything)."""
    from gradercal.dashboard.charts import chart_figures

    present = set(d.agreement["by"]) if not d.agreement.empty else set()
    return [chart.report_key(by) for chart, by in chart_figures(present)]


def _with_chart_images(
    d: Dashboard,
    fmt: str,
    progress: Callable[[int, int, str], None] | None,
    processes: int,
    document: Callable[[Mapping[str, str]], str],
    ahead: Mapping[str, str],
) -> str:
    """``document(images)`` with the ``<img>`` element of every report chart (those of
    ``ahead`` as they are); with ``processes`` ≥ 2 on Linux, every other chart to draw
    (the 1st, 3rd, …) comes from a forked child, and the document is written while the
    child draws — its charts' places held by unique tokens, replaced by their images when
    they come (the same text as ``document`` of every image: each place holds exactly
    what ``document`` put there)."""
    from gradercal._util.forked import ChildFailed, ForkedCall, fork_available

    every = _report_keys(d)
    images: dict[str, str] = {k: ahead[k] for k in every if k in ahead}
    keys = [k for k in every if k not in images]

    def one_process() -> str:
        for key in keys:
            images.update(_drawn(d, [key], fmt))
            if progress:
                progress(len(images), len(every), "charts")
        if progress and not keys:  # every chart was drawn ahead
            progress(len(every), len(every), "charts")
        return document(images)

    # (one chart left is still drawn in a child: this process writes the document meanwhile)
    if processes < 2 or not keys or not fork_available():
        return one_process()
    theirs, mine = keys[::2], keys[1::2]
    forked: ForkedCall[dict[str, str]] | None = None
    with contextlib.suppress(ChildFailed, OSError):
        forked = ForkedCall(functools.partial(_drawn, d, theirs, fmt))
    if forked is None:
        return one_process()
    try:
        for key in mine:
            images.update(_drawn(d, [key], fmt))
            if progress:
                progress(len(images), len(every), "charts")
        # (a token of 128 random bits: it occurs nowhere else in the document)
        tokens = {key: f"<!--chart {secrets.token_hex(16)}-->" for key in theirs}
        page = document({**images, **tokens})
        try:
            drawn = forked.result()
        except ChildFailed:  # the child died: its charts are drawn here
            drawn = _drawn(d, theirs, fmt)
    finally:
        forked.kill()  # no-op once its result is in
    for key in theirs:
        page = page.replace(tokens[key], drawn[key])
    if progress:
        progress(len(every), len(every), "charts")
    return page


class ChartsAhead:
    """The report's charts drawn while the dashboard is computed: given as ``partial``
    to :func:`~gradercal.dashboard.compute.compute_dashboard` (a
    :class:`~gradercal.dashboard.compute.PartialWork`), it draws each chart whose numbers
    a process has finished, in that process, while the other still computes; then
    ``render_html(d, images=ahead.images)`` draws only the rest. The same bytes as
    drawing them all afterwards (each chart reads only parts of the dashboard that are
    already final: :meth:`gradercal.dashboard.charts.Chart.drawable`)."""

    def __init__(self, image_format: str = "svg") -> None:
        if image_format not in ("svg", "png"):
            raise ValueError("image_format must be svg or png")
        self.image_format = image_format
        #: the ``<img>`` element of each chart drawn so far, by report key
        self.images: dict[str, str] = {}

    def take(self, d: Dashboard, known: frozenset[str]) -> dict[str, str]:
        """Draw the charts of ``d`` that ``known`` makes final (and not drawn yet)."""
        from gradercal.dashboard.charts import chart_figures

        keys = [
            chart.report_key(by)
            for chart, by in chart_figures()
            if chart.drawable(known, by) and chart.report_key(by) not in self.images
        ]
        return _drawn(d, keys, self.image_format) if keys else {}

    def keep(self, result: dict[str, str]) -> None:
        self.images.update(result)

    def missing(self, d: Dashboard) -> list[str]:
        """The keys of the report charts of ``d`` not drawn yet."""
        return [key for key in _report_keys(d) if key not in self.images]


def preload_charts(*, png: bool = False) -> None:
    """Import now what drawing and encoding the report's charts would import (matplotlib
    and its SVG, or also Agg, back end; the statistics' labels), e.g. while something
    else is read."""
    import importlib

    for name in (
        "matplotlib.figure",
        "matplotlib.backends.backend_svg",
        *(("matplotlib.backends.backend_agg",) if png else ()),
        "gradercal.dashboard.charts",
        "gradercal.stats.registry",
    ):
        importlib.import_module(name)


def write_html(d: Dashboard, path: str | Path, **kwargs: Any) -> Path:
    """Write :func:`render_html` to ``path`` (UTF-8)."""
    p = Path(path)
    p.write_text(render_html(d, **kwargs), encoding="utf-8")
    return p


_SECTION_HEADING = re.compile(r"<(h[23])([ >])")


def _numbered_headings(doc: str) -> tuple[str, int]:
    """Every section heading (h2, h3) marked ``data-k="k"``, k counting from 0 (for the PDF
    layout to find them); returns the document and the number of headings."""
    count = 0

    def mark(m: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return f'<{m.group(1)} data-k="{count - 1}"{m.group(2)}'

    return _SECTION_HEADING.sub(mark, doc), count


def _with_breaks(doc: str, breaks: set[int]) -> str:
    """``doc`` with a page break before each heading numbered in ``breaks``."""
    for k in breaks:
        doc = doc.replace(f'data-k="{k}"', f'data-k="{k}" style="page-break-before: always"', 1)
    return doc


def _render(story: Any, page: Any, where: Any) -> tuple[bytes, list[tuple[int, float, float]]]:
    """Draw ``story`` page by page into PDF bytes; also where each section heading (h2, h3)
    landed, in document order: (page, top, bottom)."""
    from gradercal._util.pdf import import_pymupdf

    pymupdf = import_pymupdf()

    placed: list[tuple[int, float, float]] = []

    def record(pos: Any) -> None:
        if getattr(pos, "heading", 0) in (2, 3) and getattr(pos, "open_close", 0) & 1:
            placed.append((int(pos.page_num), float(pos.rect[1]), float(pos.rect[3])))

    buf = io.BytesIO()
    writer = pymupdf.DocumentWriter(buf, "compress")
    more, n = True, 0
    while more:
        device = writer.begin_page(page)
        more, _ = story.place(where)
        story.element_positions(record, {"page_num": n})
        story.draw(device)
        writer.end_page()
        n += 1
    writer.close()
    return buf.getvalue(), placed


#: Points of a section that must follow its heading at the bottom of a page when the
#: section goes on over the page (about a paragraph and a table's header row and first
#: rows); less, and the heading starts the next page instead.
KEEP_WITH_HEADING = 72.0


#: The blocks of each page of a PDF, as PyMuPDF's ``get_text("dict")`` gives them.
PageBlocks = list[list[dict[str, Any]]]


def page_blocks(pdf: bytes) -> PageBlocks:
    """The text and image blocks of every page of ``pdf`` (read once per layout pass, for
    :func:`headings_alone` and :func:`charts_squeezed`)."""
    from gradercal._util.pdf import import_pymupdf

    pymupdf = import_pymupdf()

    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        return [list(p.get_text("dict")["blocks"]) for p in doc]


def headings_alone(pages: PageBlocks, placed: Sequence[tuple[int, float, float]]) -> set[int]:
    """The headings (numbered as in ``placed``) that keep-with-next leaves stranded at the
    bottom of a page: the page's last block, or followed there by less than
    :data:`KEEP_WITH_HEADING` points of a section that goes on over the page (say its
    introduction and a table's header row, the rows on the next page). Of a run of
    headings with nothing between them (a section and its first subsection), the first
    of the run, which is where the break belongs."""
    bottoms = [max((float(b["bbox"][3]) for b in page), default=0.0) for page in pages]
    tops = [min((float(b["bbox"][1]) for b in page), default=0.0) for page in pages]
    alone: set[int] = set()
    for k, (pg, _top, bottom) in enumerate(placed):
        if pg >= len(bottoms) - 1:
            continue
        below = bottoms[pg] - bottom
        # the section goes on over the page unless the next page opens with the next heading
        following = placed[k + 1] if k + 1 < len(placed) else None
        goes_on = (
            following is None
            or following[0] > pg + 1
            or (following[0] == pg + 1 and following[1] > tops[pg + 1] + 1.0)
        )
        if below <= 1.0 or (goes_on and below < KEEP_WITH_HEADING):
            first = k  # walk back over the headings directly above it
            while (
                first > 0
                and placed[first - 1][0] == pg
                and placed[first][1] - placed[first - 1][2] < 24.0
            ):
                first -= 1
            alone.add(first)
    return alone


#: The PDF's charts: PNGs at this resolution (dots per inch), drawn at this share of their
#: size (capped at the text width).
PDF_CHART_DPI = 110
PDF_CHART_SCALE = 0.75


def chart_width(pixels: float, text_width: float) -> int:
    """The width in points a PDF chart of ``pixels`` columns is given."""
    return int(min(text_width, pixels / PDF_CHART_DPI * 72 * PDF_CHART_SCALE))


def charts_squeezed(
    pages: PageBlocks, placed: Sequence[tuple[int, float, float]], text_width: float
) -> set[int]:
    """The headings (numbered as in ``placed``) whose chart the layout shrank to fit the
    rest of a page (PyMuPDF 1.x draws an image too tall for the space left smaller: a
    thumbnail nobody can read): the heading above such a chart on its page, unless that
    heading already starts the page (a chart taller than a page is drawn as large as a
    page allows)."""
    out: set[int] = set()
    for number, blocks in enumerate(pages):
        first_top = min((b["bbox"][1] for b in blocks), default=0.0)
        for block in blocks:
            x0, top, x1, _bottom = block["bbox"]
            if block.get("type") != 1 or x1 - x0 >= chart_width(block["width"], text_width) - 1:
                continue
            above = [k for k, (pg, _t, low) in enumerate(placed) if pg == number and low <= top]
            if above and placed[above[-1]][1] > first_top + 1.0:
                out.add(above[-1])
    return out


def write_pdf(
    d: Dashboard,
    path: str | Path,
    *,
    title: str | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    charts: Mapping[str, Figure] | None = None,
    generated_at: datetime | None = None,
    paper: str = "a4",
    progress: Callable[[int, int, str], None] | None = None,
) -> Path:
    """Write the report as a PDF laid out by PyMuPDF's ``Story`` (charts as PNG).

    Args:
        d: The dashboard.
        path: The PDF file.
        title, max_rows, charts, generated_at, progress: As :func:`render_html`.
        paper: Page size name for ``pymupdf.paper_rect`` (e.g. ``"a4"``, ``"letter"``).
    """
    from gradercal._util.pdf import import_pymupdf
    from gradercal.dashboard.charts import CHART_TITLES, figure_bytes

    pymupdf = import_pymupdf()
    figs = dict(charts) if charts is not None else report_charts(d)
    archive = pymupdf.Archive()
    images: dict[str, str] = {}
    page = pymupdf.paper_rect(paper)
    where = pymupdf.Rect(page.x0 + 36, page.y0 + 36, page.x1 - 36, page.y1 - 36)
    for i, (key, fig) in enumerate(figs.items()):
        name = f"chart-{key}.png"
        archive.add((figure_bytes(fig, "png", dpi=PDF_CHART_DPI), name))
        w_in, _ = fig.get_size_inches()
        width = chart_width(w_in * PDF_CHART_DPI, where.width)
        images[key] = _img(name, CHART_TITLES.get(key, key), width)
        if progress:
            progress(i + 1, len(figs), "charts")
    doc = _document(d, images, title=title, css="", max_rows=max_rows, generated_at=generated_at)
    doc, _count = _numbered_headings(doc)
    breaks: set[int] = set()
    for _attempt in range(8):  # each pass moves at least one heading; a few suffice
        story = pymupdf.Story(html=_with_breaks(doc, breaks), user_css=_PDF_CSS, archive=archive)
        pdf, placed = _render(story, page, where)
        pages = page_blocks(pdf)
        alone = (
            headings_alone(pages, placed) | charts_squeezed(pages, placed, where.width)
        ) - breaks
        if not alone:
            break
        breaks |= alone
    p = Path(path)
    p.write_bytes(pdf)
    return p
