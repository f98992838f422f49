"""The dashboard's table sections, declared once: what each is, how it is shown.

A *table section* is one long table of the dashboard with a tab in the coordinator's
window and a section in the HTML/PDF report. :data:`TABLE_SECTIONS` lists them in the
order both show them; each :class:`TableSection` says

* ``key`` — its name everywhere: the attribute or :attr:`Dashboard.tables
  <gradercal.dashboard.result.Dashboard.tables>` entry that holds its frame, its key in
  the dashboard's JSON, the window's table and the report's anchor;
* ``title``, ``filter_hint``, ``empty_text`` and ``count`` — how the window labels its
  tab (``title (count)``) and filter box, and what the report says when it is empty;
* ``report`` — the rows the report lists (:class:`ReportTable`: header, cells, a
  summary line), from the frame and the overview;
* ``opens_adjudication`` — its rows name a response and/or a criterion: a double-click
  in the window opens the adjudication of that item;
* ``compute`` — how the section is computed from :class:`SectionInputs`. None for the
  sections the core pipeline of :mod:`gradercal.dashboard.compute` fills itself (flips,
  criterion health and disagreements share its intermediate results); every section
  with a ``compute`` is run by :func:`~gradercal.dashboard.compute.compute_dashboard`
  after the others, stored in :attr:`Dashboard.tables`, written to the JSON, shown by the
  window and rendered by the report without any other change.

So a new table section is one function and one entry here (see docs/architecture.md).
The formatting helpers :func:`fmt_num`, :func:`fmt_pct` and :func:`fmt_ci` are shared with the report.

This module imports pandas and the analysis engines it calls (lazily) only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from gradercal._util.numbers import finite_fixed, finite_interval, finite_percent
from gradercal.model import verdict_word

if TYPE_CHECKING:
    from gradercal.dashboard.inputs import DashboardData
    from gradercal.frames import Frames
    from gradercal.stats.boot_settings import BootSettings

__all__ = [
    "ACCEPTANCE_COLUMNS",
    "REVIEW_COLUMNS",
    "TABLE_SECTIONS",
    "VERSION_COLUMNS",
    "Cell",
    "ReportTable",
    "SectionInputs",
    "TableSection",
    "computed_sections",
    "fmt_ci",
    "fmt_num",
    "fmt_pct",
    "section",
]

#: One report cell: the value (plain text or a number, escaped by the report) and
#: whether it is numeric (right-aligned).
Cell = tuple[Any, bool]


#: The report's number formats (:mod:`gradercal._util.numbers`), under their old names.
fmt_num = finite_fixed
fmt_pct = finite_percent
fmt_ci = finite_interval


@dataclass(frozen=True)
class ReportTable:
    """What the report shows of a table section.

    Attributes:
        header: Column headings.
        rows: The listed rows (already cut to the report's ``max_rows``).
        total: Rows there are in all (the report says how many were left out).
        summary: A sentence above the table, or None.
    """

    header: Sequence[str]
    rows: list[list[Cell]]
    total: int
    summary: str | None = None


@dataclass(frozen=True)
class SectionInputs:
    """What a computed table section is given.

    Attributes:
        frames: The (filtered) benchmark frames.
        data: Everything the dashboard was given
            (:class:`~gradercal.dashboard.inputs.DashboardData`), its ``frames`` the
            filtered ones, its task reviews those of the filtered experts (never None:
            empty when none were given) and its ``versions`` filtered like the frames
            (None when no criterion was revised). A section needing new data reads a new
            field of it (filled by one loader line, ``gradercal.db.dashboard_data``);
            the other fields are the section's own to filter to ``frames``' tasks.
        humans: The human graders (the experts).
        primary: The primary judge, or None.
        boot: The task-clustered bootstrap (``**boot.kwargs()`` for an engine).
    """

    frames: Frames
    data: DashboardData
    humans: Sequence[str]
    primary: str | None
    boot: BootSettings


def _count(frame: pd.DataFrame) -> str:
    return f"{len(frame):,}"


@dataclass(frozen=True)
class TableSection:
    """One table of the dashboard (see the module docstring)."""

    key: str
    title: str
    filter_hint: str
    empty_text: str
    report: Callable[[pd.DataFrame, Mapping[str, Any], int], ReportTable]
    count: Callable[[pd.DataFrame], str] = field(default=_count)
    compute: Callable[[SectionInputs], pd.DataFrame | None] | None = None
    opens_adjudication: bool = False
    #: ``compute`` may return None: the section is then absent from the dashboard (its
    #: JSON, the report and the window's tabs), as if it did not exist
    optional: bool = False
    #: the columns of an absent optional section's (empty) frame
    columns: tuple[str, ...] = ()


#: A report column: its heading and the cell of one record (a dict of the frame's row).
Column = tuple[str, Callable[[dict[str, Any]], Cell]]


def _text(name: str) -> Callable[[dict[str, Any]], Cell]:
    return lambda r: (r[name], False)


def _number(name: str, fmt: Callable[[Any], str] = str) -> Callable[[dict[str, Any]], Cell]:
    return lambda r: (fmt(r[name]), True)


def _listing(
    frame: pd.DataFrame,
    columns: Sequence[Column],
    max_rows: int,
    summary: str | None = None,
) -> ReportTable:
    """The report's table of ``frame``: its first ``max_rows`` records, one cell per column."""
    records: list[dict[str, Any]] = [
        {str(k): v for k, v in r.items()} for r in frame.head(max_rows).to_dict("records")
    ]
    return ReportTable(
        [head for head, _cell in columns],
        [[cell(r) for _head, cell in columns] for r in records],
        len(frame),
        summary,
    )


# -- flips ------------------------------------------------------------------------------------
_FLIP_REPORT: tuple[Column, ...] = (
    ("judge", lambda r: (str(r["source"]).replace("_", " "), False)),
    ("model", _text("model")),
    ("task", _text("task_id")),
    ("response", _text("response_id")),
    ("experts' score", _number("expert_score", fmt_num)),
    ("judge's score", _number("judge_score", fmt_num)),
    ("direction", _text("direction")),
)


def _flips_report(f: pd.DataFrame, _overview: Mapping[str, Any], max_rows: int) -> ReportTable:
    counts = f.groupby(["source", "direction"]).size()
    summary = ", ".join(
        f"{str(k[0]).replace('_', ' ')} {k[1]}: {n}"  # type: ignore[index]
        for k, n in counts.items()
    )
    return _listing(f, _FLIP_REPORT, max_rows, summary)


# -- criterion health -------------------------------------------------------------------------
def _flagged(h: pd.DataFrame) -> pd.DataFrame:
    return h.loc[h["flagged"].astype(bool)] if "flagged" in h else h.iloc[:0]


_HEALTH_REPORT: tuple[Column, ...] = (
    ("rank", _number("rank")),
    ("task", _text("task_id")),
    ("criterion", _text("criterion_id")),
    ("points", _number("points")),
    ("experts agree", _number("human_agreement", fmt_pct)),
    ("judge departs", _number("judge_disagreement", fmt_pct)),
    ("impact", _number("impact", lambda x: fmt_num(x, 2))),
    ("flags", lambda r: ("; ".join(r["flags"]), False)),
    ("text", _text("text")),
)


def _health_report(h: pd.DataFrame, overview: Mapping[str, Any], max_rows: int) -> ReportTable:
    flagged = _flagged(h)
    return _listing(
        flagged,
        _HEALTH_REPORT,
        max_rows,
        f"{len(flagged):,} of {len(h):,} criteria flagged at the bar "
        f"{fmt_pct(overview.get('bar'))}, ranked by impact = |points| × disagreement.",
    )


# -- disagreements ----------------------------------------------------------------------------
def _verdict_text(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return verdict_word(bool(x))


def _verdict(name: str) -> Callable[[dict[str, Any]], Cell]:
    return lambda r: (_verdict_text(r[name]), False)


def _kind(r: dict[str, Any]) -> Cell:
    kinds = (("experts split", r["experts_split"]), ("judge departs", r["judge_departs"]))
    return " and ".join(k for k, on in kinds if on), False


def _disagreements_report(
    t: pd.DataFrame, _overview: Mapping[str, Any], max_rows: int
) -> ReportTable:
    vcols = [str(c) for c in t.columns if str(c).startswith("verdict:")]
    columns: list[Column] = [
        ("task", _text("task_id")),
        ("criterion", _text("criterion_id")),
        ("response", _text("response_id")),
        ("model", _text("model")),
        ("kind", _kind),
        ("consensus", _verdict("consensus")),
        *((c.split(":", 1)[1], _verdict(c)) for c in vcols),
        ("criterion text", _text("text")),
    ]
    return _listing(t, columns, max_rows)


# -- task review surveys ----------------------------------------------------------------------
#: The figures of the task review section, each with ``_low`` / ``_high`` columns.
_REVIEW_FIGURES: tuple[str, ...] = (
    "share_agree_or_strongly_agree",
    "share_strongly_agree",
    "mean",
    "krippendorff_alpha",
)
#: Columns of the task review section's frame.
REVIEW_COLUMNS: tuple[str, ...] = (
    "dimension",
    "statement",
    "n_answers",
    "n_tasks",
    "n_reviewers",
    *(c for fig in _REVIEW_FIGURES for c in (fig, f"{fig}_low", f"{fig}_high")),
    "note",
)


def _reviews(inputs: SectionInputs) -> pd.DataFrame:
    """Per survey statement (:data:`~gradercal.analysis.surveys.REVIEW_DIMENSIONS`, then
    any other dimension answered), the reviewers' answers on the filtered tasks
    (:func:`gradercal.analysis.surveys.survey_summary`, task-bootstrap intervals)."""
    from gradercal.analysis.surveys import REVIEW_DIMENSIONS, survey_summary

    reviews = inputs.data.reviews
    if reviews is None:
        reviews = pd.DataFrame(columns=["task_id", "reviewer", "dimension", "answer"])
    if not reviews.empty:
        reviews = reviews.loc[reviews["task_id"].isin(inputs.frames.tasks["task_id"])]
    if reviews.empty:
        return pd.DataFrame({c: pd.Series([], dtype=object) for c in REVIEW_COLUMNS})
    statements = {d.key: d.statement for d in REVIEW_DIMENSIONS}
    order = list(dict.fromkeys([*statements, *reviews["dimension"]]))
    rep = survey_summary(reviews, order, **inputs.boot.kwargs())
    rows = []
    for d in rep["dimensions"]:
        row: dict[str, Any] = {c: d[c] for c in ("dimension", "n_answers", "n_tasks")}
        row["statement"] = statements.get(d["dimension"], d["dimension"])
        row["n_reviewers"] = d["n_reviewers"]
        notes = []
        for fig in _REVIEW_FIGURES:
            x = d[fig]
            row[fig] = math.nan if x["value"] is None else float(x["value"])
            lo, hi = x["ci"] if x.get("ci") else (math.nan, math.nan)
            row[f"{fig}_low"], row[f"{fig}_high"] = float(lo), float(hi)
            if x.get("note"):
                notes.append(f"{fig.replace('_', ' ')}: {x['note']}")
        row["note"] = "; ".join(notes) or None
        rows.append(row)
    return pd.DataFrame(rows, columns=list(REVIEW_COLUMNS))


def _interval(fig: str) -> Callable[[dict[str, Any]], Cell]:
    return lambda r: (fmt_ci(r[fig], r[f"{fig}_low"], r[f"{fig}_high"]), True)


_REVIEW_REPORT: tuple[Column, ...] = (
    ("statement", _text("statement")),
    ("answers", _number("n_answers")),
    ("tasks", _number("n_tasks")),
    ("reviewers", _number("n_reviewers")),
    ("agree or strongly agree", _interval("share_agree_or_strongly_agree")),
    ("strongly agree", _interval("share_strongly_agree")),
    ("mean (1–5)", _interval("mean")),
    ("ordinal α", _interval("krippendorff_alpha")),
    ("note", _text("note")),
)


def _reviews_report(r: pd.DataFrame, _overview: Mapping[str, Any], max_rows: int) -> ReportTable:
    return _listing(
        r,
        _REVIEW_REPORT,
        max_rows,
        "Reviewers' answers on a 5-point scale (1 strongly disagree … 5 strongly agree); "
        "intervals resample tasks.",
    )


# -- task acceptance --------------------------------------------------------------------------
#: Status columns of the acceptance section (one per task status of gradercal.ops.acceptance).
_STATUS_KEYS: tuple[tuple[str, str], ...] = (
    ("draft", "draft"),
    ("in review", "in_review"),
    ("needs revision", "needs_revision"),
    ("accepted", "accepted"),
    ("rejected", "rejected"),
)
#: Columns of the acceptance section's frame.
ACCEPTANCE_COLUMNS: tuple[str, ...] = (
    "breakdown",
    "group",
    "tasks",
    *(k for _s, k in _STATUS_KEYS),
    "n_measured",
    "statistic",
    "agreement_mean",
    "agreement_min",
    "agreement_max",
)
#: What a round's state counts as in the per-round rows.
_ROUND_STATUS = {
    "open": "in review",
    "closed": "in review",
    "needs_revision": "needs revision",
    "accepted": "accepted",
    "rejected": "rejected",
}


def _acceptance_row(
    breakdown: str, group: str, statuses: Any, agreement: Any, stats: Any
) -> dict[str, Any]:
    counts = pd.Series(statuses).value_counts()
    values = pd.Series(agreement, dtype="float64").dropna()
    row: dict[str, Any] = {"breakdown": breakdown, "group": group, "tasks": len(statuses)}
    for status, key in _STATUS_KEYS:
        row[key] = int(counts.get(status, 0))
    row["n_measured"] = len(values)
    used = sorted({str(x) for x in pd.Series(stats).dropna()})
    row["statistic"] = ", ".join(used) or None
    row["agreement_mean"] = float(values.mean()) if len(values) else math.nan
    row["agreement_min"] = float(values.min()) if len(values) else math.nan
    row["agreement_max"] = float(values.max()) if len(values) else math.nan
    return row


def _acceptance(inputs: SectionInputs) -> pd.DataFrame:
    """Tasks per status: all, per workflow, per domain (each task's status and the
    agreement of its latest measured round); then per round number, the rounds' states
    and the agreement kept when each closed. Only the filtered tasks."""
    rounds = inputs.data.rounds
    if rounds is None or rounds.empty:
        return pd.DataFrame({c: pd.Series([], dtype=object) for c in ACCEPTANCE_COLUMNS})
    rounds = rounds.loc[rounds["task_id"].isin(inputs.frames.tasks["task_id"])]
    measured = rounds.loc[rounds["agreement"].notna()]
    latest = measured.sort_values("round", kind="stable").drop_duplicates("task_id", keep="last")
    per_task = rounds.drop_duplicates("task_id")[["task_id", "workflow", "domain", "status"]]
    per_task = per_task.merge(
        latest[["task_id", "statistic", "agreement"]], on="task_id", how="left"
    )
    rows = [
        _acceptance_row(
            "all", "all tasks", per_task["status"], per_task["agreement"], per_task["statistic"]
        )
    ]
    for key in ("workflow", "domain"):
        groups = per_task[key].astype(object).where(per_task[key].notna(), "(none)")
        for value in sorted(set(groups)):
            g = per_task.loc[groups == value]
            rows.append(
                _acceptance_row(key, str(value), g["status"], g["agreement"], g["statistic"])
            )
    numbered = rounds.loc[rounds["round"].notna()]
    for number in sorted({int(x) for x in numbered["round"]}):
        r = numbered.loc[numbered["round"].astype(int) == number]
        rows.append(
            _acceptance_row(
                "round",
                f"round {number}",
                r["round_state"].map(_ROUND_STATUS),
                r["agreement"],
                r["statistic"],
            )
        )
    return pd.DataFrame(rows, columns=list(ACCEPTANCE_COLUMNS))


def _agreement_range(r: dict[str, Any]) -> Cell:
    if not r["n_measured"]:
        return "—", True
    return (
        f"{fmt_num(r['agreement_mean'])} ({fmt_num(r['agreement_min'])}–"
        f"{fmt_num(r['agreement_max'])})",
        True,
    )


_ACCEPTANCE_REPORT: tuple[Column, ...] = (
    ("by", _text("breakdown")),
    ("group", _text("group")),
    ("tasks", _number("tasks")),
    *((status, _number(key)) for status, key in _STATUS_KEYS),
    ("measured", _number("n_measured")),
    ("agreement mean (min–max)", _agreement_range),
    ("statistic", lambda r: (r["statistic"] or "—", False)),
)


def _acceptance_report(a: pd.DataFrame, _overview: Mapping[str, Any], max_rows: int) -> ReportTable:
    return _listing(
        a,
        _ACCEPTANCE_REPORT,
        max_rows,
        "Task acceptance (gradercal tasks): tasks per status, in all, per workflow and per "
        "domain, with the agreement of each task's latest closed round; then per review "
        "round, the rounds' states and the agreement kept when they closed.",
    )


# -- agreement per criterion version ----------------------------------------------------------
#: Columns of the agreement-per-criterion-version section's frame (one row per revised
#: criterion and version; ``*_low`` / ``*_high`` bound the intervals, NaN when none).
VERSION_COLUMNS: tuple[str, ...] = (
    "task_id",
    "criterion_id",
    "version",
    "current",
    "n_units",
    "n_units_paired",
    "n_ratings",
    "percent_agreement",
    "percent_agreement_low",
    "percent_agreement_high",
    "krippendorff_alpha",
    "krippendorff_alpha_low",
    "krippendorff_alpha_high",
    "judge",
    "judge_n_units",
    "judge_agreement",
    "judge_agreement_low",
    "judge_agreement_high",
    "note",
)


def _boot_cells(prefix: str, b: Any) -> dict[str, float]:
    def num(x: Any) -> float:
        return math.nan if x is None else float(x)

    return {
        prefix: num(b.value if b is not None else None),
        f"{prefix}_low": num(b.ci_low if b is not None else None),
        f"{prefix}_high": num(b.ci_high if b is not None else None),
    }


def _versions(inputs: SectionInputs) -> pd.DataFrame | None:
    """Per revised criterion and version of it, the experts' agreement and the primary
    judge's agreement with their consensus on the verdicts given under that version
    (:func:`gradercal.analysis.versions.agreement_by_version`; intervals resample the
    criterion's responses). None — no section — when no criterion was revised."""
    if inputs.data.versions is None:
        return None
    frames, eras = inputs.data.versions
    if not eras:
        return None
    from gradercal.analysis.versions import agreement_by_version

    rows = agreement_by_version(
        frames,
        eras,
        inputs.humans,
        inputs.primary,
        **inputs.boot.kwargs(),
    )
    out = []
    for r in rows:
        row: dict[str, Any] = {
            "task_id": r.task_id,
            "criterion_id": r.criterion_id,
            "version": r.version,
            "current": r.current,
            "n_units": r.n_units,
            "n_units_paired": r.n_units_paired,
            "n_ratings": r.n_ratings,
        }
        row.update(_boot_cells("percent_agreement", r.statistics["percent_agreement"]))
        row.update(_boot_cells("krippendorff_alpha", r.statistics["krippendorff_alpha"]))
        row["judge"] = r.judge
        row["judge_n_units"] = r.judge_n_units
        row.update(_boot_cells("judge_agreement", r.judge_metrics.get("percent_agreement")))
        notes = [b.note for b in r.statistics.values() if b.note]
        row["note"] = "; ".join(dict.fromkeys(notes)) or None
        out.append(row)
    return pd.DataFrame(out, columns=list(VERSION_COLUMNS))


_VERSION_REPORT: tuple[Column, ...] = (
    ("task", _text("task_id")),
    ("criterion", _text("criterion_id")),
    ("version", lambda r: (f"v{r['version']}" + (" (current)" if r["current"] else ""), False)),
    ("n", _number("n_units_paired")),
    ("experts agree", _interval("percent_agreement")),
    ("Krippendorff's α", _interval("krippendorff_alpha")),
    ("judge n", _number("judge_n_units")),
    ("judge agrees", _interval("judge_agreement")),
)


def _revised_count(v: pd.DataFrame) -> str:
    n = len(v.loc[:, ["task_id", "criterion_id"]].drop_duplicates())
    return f"{n:,} {'criterion' if n == 1 else 'criteria'}"


def _versions_report(v: pd.DataFrame, _overview: Mapping[str, Any], max_rows: int) -> ReportTable:
    return _listing(
        v,
        _VERSION_REPORT,
        max_rows,
        "Each revised criterion, per version of its wording: agreement of the verdicts "
        "given under that version (n: responses with two or more expert verdicts; each "
        "grader's latest verdict in that version, earlier ones from the history). "
        "Intervals resample the criterion's responses.",
    )


#: Every table section, in the order the window's tabs and the report show them.
TABLE_SECTIONS: tuple[TableSection, ...] = (
    TableSection(
        key="flips",
        title="Pass ↔ fail flips",
        filter_hint="Filter the flips… (double-click to adjudicate)",
        empty_text="No response changes between pass and fail.",
        report=_flips_report,
        opens_adjudication=True,
    ),
    TableSection(
        key="health",
        title="Criterion health",
        filter_hint="Filter the criteria… (double-click to adjudicate)",
        empty_text="No criterion has verdicts.",
        report=_health_report,
        count=lambda h: f"{len(_flagged(h)):,} flagged",
        opens_adjudication=True,
    ),
    TableSection(
        key="disagreements",
        title="Disagreements",
        filter_hint="Filter: task, criterion, model, text… (double-click to adjudicate)",
        empty_text="No disagreement.",
        report=_disagreements_report,
        opens_adjudication=True,
    ),
    TableSection(
        key="task_reviews",
        title="Task reviews",
        filter_hint="Filter the statements…",
        empty_text="No task review answers.",
        report=_reviews_report,
        count=lambda r: f"{int(r['n_answers'].sum()) if len(r) else 0:,} answers",
        compute=_reviews,
    ),
    TableSection(
        key="acceptance",
        title="Task acceptance",
        filter_hint="Filter: workflow, domain, round…",
        empty_text="No acceptance data.",
        report=_acceptance_report,
        count=lambda a: f"{int(a['tasks'].iloc[0]) if len(a) else 0:,} tasks",
        compute=_acceptance,
    ),
    TableSection(
        key="criterion_versions",
        title="Agreement per criterion version",
        filter_hint="Filter: task, criterion…",
        empty_text="No revised criterion.",
        report=_versions_report,
        count=_revised_count,
        compute=_versions,
        opens_adjudication=False,
        optional=True,
        columns=VERSION_COLUMNS,
    ),
)
_BY_KEY = {s.key: s for s in TABLE_SECTIONS}


def section(key: str) -> TableSection:
    """The table section named ``key``.

    Raises:
        KeyError: No such section.
    """
    return _BY_KEY[key]


def computed_sections() -> tuple[TableSection, ...]:
    """The sections with their own ``compute`` (stored in ``Dashboard.tables``)."""
    return tuple(s for s in TABLE_SECTIONS if s.compute is not None)
