"""The coordinator dashboard: agreement at a glance, and the way into adjudication.

:class:`QtDashboardView` shows what :func:`gradercal.dashboard.compute_dashboard`
computes — overview numbers, agreement with confidence intervals by criterion tag,
workflow, domain and criterion, the rater heatmap, the judge-vs-consensus confusion
matrix, the reliability diagram before and after calibration, per-model scores under
experts / raw judge / calibrated judge / estimate, judges (prompt versions) side by side,
the alt-test verdict, and one tab per table section of
:data:`gradercal.dashboard.tables.TABLE_SECTIONS` (pass ↔ fail flips, criterion health,
the disagreements, task reviews) — recomputed whenever a filter (model, workflow, domain, grader subset) changes.

Computing runs in a separate worker process (:mod:`gradercal.ui.dashboard.worker`, driven
by :class:`gradercal.ui.dashboard.qt_process.QtDashboardProcess`): it opens the database by
URL, keeps the benchmark's frames across recomputations, computes, prepares the tables and
draws the charts; this process only shows the result, so neither the pandas work nor the
garbage collector's walks over large frames stall the window. A progress bar and a Cancel
button show while it runs; a result computed for an older filter set is dropped; errors of
the worker (a bad database, an exception, the process killed) are shown in the window, and
a stopped worker is restarted by the next computation. Charts are the matplotlib figures
of :mod:`gradercal.dashboard.charts` inside ``FigureCanvasQTAgg``, drawn ahead by the worker at the
canvas's size; each is saved as PNG or SVG from its button or context menu. Chart colours
follow the window's light or dark palette (the worker is told which).

The view's parts live beside it: the tables (:mod:`gradercal.ui.dashboard.qt_tables`),
the charts (:mod:`gradercal.ui.dashboard.qt_charts`), the filter drop-downs, tiles and
alt-test line (:mod:`gradercal.ui.dashboard.qt_controls`); the coordinator's stack of
dashboard and adjudication is :mod:`gradercal.ui.dashboard.qt_view`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gradercal.dashboard.result import GROUP_BYS
from gradercal.dashboard.tables import TABLE_SECTIONS
from gradercal.db.adjudication import AdjudicationValue
from gradercal.db.session import Database
from gradercal.ui.dashboard.data import (
    AGREEMENT_BYS,
    CHART_TAB_LABELS,
    CHARTS,
    GROUPING_TABS,
    Computed,
    Request,
    _missing,
    figure_name,
)
from gradercal.ui.dashboard.protocol import Part
from gradercal.ui.dashboard.qt_charts import QtChart, dark_palette
from gradercal.ui.dashboard.qt_controls import (
    QtChoiceButton,
    QtStatCard,
    keep_one_line,
    show_headline,
    stat_cards,
)
from gradercal.ui.dashboard.qt_process import QtDashboardProcess
from gradercal.ui.dashboard.qt_tables import (
    CRITERION_COLUMNS,
    QtFrameTable,
    adjudicated_icon,
    adjudication_note,
)
from gradercal.ui.qt_widgets import QtFlowLayout
from gradercal.ui.shortcuts import keys

if TYPE_CHECKING:
    from gradercal.ui.qt_settings import QtAppSettings


#: Wait this long after a filter changes before recomputing (several clicks → one run).
RECOMPUTE_DELAY_MS = 250
#: Filter sets one click away computed ahead while idle (:meth:`QtDashboardView.read_ahead`).
READ_AHEAD_FILTERS = 6
READ_AHEAD_ENV = "GRADERCAL_DASHBOARD_READ_AHEAD"


#: The steps of :func:`gradercal.dashboard.compute_dashboard` (its progress labels) each
#: table tab waits for: its own progress shows how many are finished. A table section with
#: its own computation waits for that step (its title, lower case).
SECTION_STEPS: dict[str, tuple[str, ...]] = {
    "agreement": (
        "expert agreement",
        "judges",
        *(f"agreement by {by}" for by in GROUP_BYS if by not in ("overall", "criterion")),
        "health",
    ),
    "judges": ("judges", "calibration"),
    "models": ("models",),
    "flips": ("models",),
    "health": ("health",),
    "disagreements": ("health",),
    **{t.key: (t.title.lower(),) for t in TABLE_SECTIONS if t.compute is not None},
}


def read_ahead_default() -> int:
    """:data:`READ_AHEAD_FILTERS`, or ``$GRADERCAL_DASHBOARD_READ_AHEAD`` (0: none)."""
    value = os.environ.get(READ_AHEAD_ENV, "").strip()
    return int(value) if value.isdigit() else READ_AHEAD_FILTERS


#: The table sections whose rows offer "Revise criterion…".
REVISE_TABLES = ("health", "disagreements")


class QtDashboardView(QWidget):
    """The coordinator dashboard of one benchmark."""

    #: A computation finished and everything (tables and charts) is on screen.
    computed = Signal()
    #: A computation failed or was cancelled (the message says which).
    failed = Signal(str)
    #: Open the adjudication of (response id, criterion id).
    adjudicate_requested = Signal(str, str)
    #: Revise (task id, criterion id): the coordinator view opens the edit dialog.
    revise_requested = Signal(str, str)
    #: A short message for the status bar.
    message = Signal(str)

    def __init__(
        self,
        db: Database,
        benchmark: str,
        parent: QWidget | None = None,
        *,
        settings: QtAppSettings | None = None,
        worker: QtDashboardProcess | None = None,
    ) -> None:
        super().__init__(parent)
        self.db = db
        self.benchmark = benchmark
        self.settings = settings
        #: the key the headline judge is remembered under (the database, password hidden)
        self._database_key = db.url.render_as_string(hide_password=True)
        remembered = (
            settings.headline_judge(self._database_key, benchmark) if settings is not None else None
        )
        #: the headline judge as chosen: a name, "" (the judge with the most verdicts,
        #: chosen), or None (not chosen yet: the first result's judge is pinned)
        self.headline: str | None = remembered
        self.result: Computed | None = None
        self.generation = 0
        #: results of older filter sets dropped on arrival (for tests)
        self.dropped = 0
        self.error_text = ""
        #: bootstrap resamples (None: the core's default), seed, calibration params (None:
        #: the core's default method)
        self.n_boot: int | None = None
        self.seed = 0
        self.calibration: dict[str, Any] | None = None
        #: compute ahead the dashboard of the adjudication being read (:meth:`prefetch`)
        #: and of filter sets one click away (:meth:`read_ahead`)
        self.prefetching = True
        #: how many filter sets :meth:`read_ahead` computes ahead ($GRADERCAL_DASHBOARD_READ_AHEAD)
        self.read_ahead_filters = read_ahead_default()
        self._last_chart_size: tuple[int, int] | None = None
        self._request: Request | None = None
        #: the adjudicated (response id, criterion id) pairs, marked in the disagreements
        self.adjudicated: dict[tuple[str, str], AdjudicationValue] = {}
        #: each table section's count as its tab shows it, e.g. "24"
        self._tab_counts: dict[str, str] = {}
        #: tables and charts still to show, one per event-loop turn: (kind, name, value)
        self._charts_pending: list[tuple[str, str, Any]] = []
        #: the generation whose headline (tiles, alt-test line) is on screen
        self.headline_generation: int | None = None
        #: sections (table and chart tabs) of the running computation not filled yet, and
        #: the computation's steps finished so far (their progress labels)
        self._unfilled: set[str] = set()
        self._steps_done: set[str] = set()
        #: each tab's own title, without its progress
        self._tab_titles: dict[QWidget, str] = {}
        #: the worker process (started by the first computation, or ``worker``: started
        #: already, while the window was built)
        if worker is None:
            worker = QtDashboardProcess(db.url.render_as_string(hide_password=False), self)
        else:
            worker.setParent(self)
        self.worker = worker
        self.worker.progress.connect(self._progress)
        self.worker.computed.connect(self._done)
        self.worker.headline.connect(self._headline_ready)
        self.worker.failed.connect(self._failed)
        self.worker.dropped.connect(self._dropped)
        self.worker.restarted.connect(self._restarted)
        self._build()
        for tabs in (self.tables, self.chart_tabs):
            for i in range(tabs.count()):
                tab = tabs.widget(i)
                if tab is not None:
                    self._tab_titles[tab] = tabs.tabText(i)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(RECOMPUTE_DELAY_MS)
        self._timer.timeout.connect(self.recompute)
        self._chart_timer = QTimer(self)
        self._chart_timer.setInterval(0)
        self._chart_timer.timeout.connect(self._next_chart)

    # -- layout -------------------------------------------------------------------------------
    def _build(self) -> None:
        outer = QVBoxLayout(self)
        outer.setContentsMargins(6, 6, 6, 6)
        outer.setSpacing(6)
        bar = QtFlowLayout(spacing=6)  # wraps on a narrow screen (1024 px) instead of widening
        title = QLabel("Coordinator dashboard")
        font = title.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.25)
        title.setFont(font)
        bar.addWidget(title)
        title.setToolTip(self.benchmark)  # the benchmark is in the window title too
        self.models = QtChoiceButton("Models")
        self.workflows = QtChoiceButton("Workflows")
        self.domains = QtChoiceButton("Domains")
        self.graders = QtChoiceButton("Experts")
        for b in (self.models, self.workflows, self.domains, self.graders):
            bar.addWidget(b)
            b.changed.connect(self.schedule_recompute)
        bar.addWidget(QLabel("Judge:"))
        self.judge = QComboBox()
        self.judge.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.judge.addItem("most verdicts", None)
        self.judge.setItemData(
            0,
            "Follows the count: a later judge run with more verdicts would take over",
            Qt.ItemDataRole.ToolTipRole,
        )
        self.judge.setToolTip(
            "The judge the headline numbers, the alt-test and the per-judge charts show; "
            "remembered for this database"
        )
        self.judge.activated.connect(self._judge_chosen)
        bar.addWidget(self.judge)
        self.progress_bar = QProgressBar()
        self.progress_bar.setMaximumWidth(260)
        self.progress_bar.setTextVisible(True)
        bar.addWidget(self.progress_bar)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        bar.addWidget(self.cancel_button)
        self.refresh_button = QPushButton("Recompute")
        self.refresh_button.setToolTip("Read the database again and recompute")
        self.refresh_button.clicked.connect(lambda: self.recompute(reload=True))
        bar.addWidget(self.refresh_button)
        outer.addLayout(bar)

        # After a judge run: new verdicts are in the database, the numbers shown are from
        # before; the coordinator refreshes when ready (nothing recomputes behind them).
        self.refresh_bar = QFrame()
        self.refresh_bar.setObjectName("refreshBar")
        self.refresh_bar.setFrameShape(QFrame.Shape.StyledPanel)
        row = QHBoxLayout(self.refresh_bar)
        row.setContentsMargins(8, 2, 4, 2)
        self.refresh_text = QLabel("")
        self.refresh_text.setWordWrap(True)
        self.refresh_text.setTextFormat(Qt.TextFormat.PlainText)
        row.addWidget(self.refresh_text, 1)
        self.refresh_now = QPushButton("Refresh the dashboard")
        self.refresh_now.setObjectName("refreshNow")
        self.refresh_now.clicked.connect(lambda: self.recompute(reload=True))
        row.addWidget(self.refresh_now)
        dismiss = QToolButton()
        dismiss.setText("✕")
        dismiss.setToolTip("Not now (Recompute reads the database again at any time)")
        dismiss.clicked.connect(self.refresh_bar.hide)
        row.addWidget(dismiss)
        self.refresh_bar.hide()
        outer.addWidget(self.refresh_bar)

        cards = QHBoxLayout()
        cards.setSpacing(6)
        self.cards: dict[str, QtStatCard] = stat_cards(cards)
        outer.addLayout(cards)

        self.verdict = QLabel("")
        self.verdict.setObjectName("altTestVerdict")
        self.verdict.setWordWrap(True)
        self.verdict.setTextFormat(Qt.TextFormat.RichText)
        self.verdict.setContentsMargins(6, 2, 6, 2)
        outer.addWidget(self.verdict)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setChildrenCollapsible(False)
        self.tables = QTabWidget()
        self.tables.setDocumentMode(True)
        self.agreement = QtFrameTable("Filter the groups…")
        self.agreement_by = QComboBox()
        for by in AGREEMENT_BYS:
            self.agreement_by.addItem(f"by {by}", by)
        self.agreement_by.currentIndexChanged.connect(lambda _i: self._show_agreement())
        self.agreement.top.insertWidget(0, self.agreement_by)
        self.tables.addTab(self.agreement, "Agreement")
        self.judges = QtFrameTable("Filter the judges…")
        self.tables.addTab(self.judges, "Judges")
        self.model_table = QtFrameTable("Filter the models…")
        self.tables.addTab(self.model_table, "Models")
        # One tab per table section (gradercal.dashboard.tables), in its order.
        self.section_tables: dict[str, QtFrameTable] = {}
        for table in TABLE_SECTIONS:
            widget = QtFrameTable(table.filter_hint)
            widget.setObjectName(f"table_{table.key}")
            self.section_tables[table.key] = widget
            self.tables.addTab(widget, table.title)
            if table.optional:  # shown when a result has it
                self.tables.setTabVisible(self.tables.indexOf(widget), False)
            if table.opens_adjudication:
                widget.row_activated.connect(self._open_row)
            if table.key in REVISE_TABLES:
                widget.add_row_action("Adjudicate…", self._open_row)
                widget.add_row_action(
                    f"Revise criterion… ({keys('criterion.revise')[0]})",
                    self._revise_row,
                    CRITERION_COLUMNS,
                )
                button = QPushButton("Revise criterion…")
                button.setObjectName(f"revise_{table.key}")
                button.setToolTip(
                    "Edit the selected row's criterion, see the difference and what it "
                    f"changes, save it with a reason ({keys('criterion.revise')[0]})"
                )
                button.clicked.connect(lambda _c=False, w=widget: self._revise_selected(w))
                widget.top.addWidget(button)
        self.splitter.addWidget(self.tables)

        self.chart_tabs = QTabWidget()
        self.chart_tabs.setDocumentMode(True)
        self.charts: dict[str, QtChart] = {}
        for name, chart_title in CHARTS:
            chart = QtChart(chart_title, name)
            chart.message.connect(self.message)
            self.charts[name] = chart
            self.chart_tabs.addTab(chart, CHART_TAB_LABELS[name])
        self.splitter.addWidget(self.chart_tabs)
        self.splitter.setStretchFactor(0, 58)
        self.splitter.setStretchFactor(1, 42)
        self._split_done = False
        outer.addWidget(self.splitter, 1)

        self.notes = QLabel("")
        self.notes.setObjectName("dashboardNotes")
        self.notes.setWordWrap(True)
        self.notes.setTextFormat(Qt.TextFormat.PlainText)
        outer.addWidget(self.notes)
        self.status = QLabel("")
        outer.addWidget(self.status)
        # The labels around the charts keep at least one line's height, text or not: the
        # charts' area then has the same size before and after the first result, and the
        # worker's drawings (made at the size asked for) fit the canvases.
        for label in (self.verdict, self.notes, self.status):
            keep_one_line(label)

        self._set_busy(False)

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        if not self._split_done and self.splitter.width() > 400:
            # Tables 58%, charts 42% on first layout; the user's dragging is kept after.
            self._split_done = True
            w = self.splitter.width()
            self.splitter.setSizes([int(w * 0.58), w - int(w * 0.58)])

    # -- filters ------------------------------------------------------------------------------
    def filters(self) -> Any:
        from gradercal.dashboard import DashboardFilters

        return DashboardFilters(
            models=self.models.selected(),
            workflows=self.workflows.selected(),
            domains=self.domains.selected(),
            graders=self.graders.selected(),
        )

    def selected_judge(self) -> str | None:
        """The judge to compute with: the chosen headline judge (None: most verdicts)."""
        return self.headline or None

    def _judge_chosen(self, index: int) -> None:
        data = self.judge.itemData(index)
        self.set_headline(None if data is None else str(data))
        self.schedule_recompute()

    def set_headline(self, judge: str | None) -> None:
        """Make ``judge`` the headline judge (None: the one with the most verdicts) and
        remember it for this database and benchmark."""
        self.headline = judge or ""
        if self.settings is not None:
            self.settings.set_headline_judge(self._database_key, self.benchmark, judge)
        self._select_headline()

    def _select_headline(self) -> None:
        want = self.headline or None
        for i in range(self.judge.count()):
            if self.judge.itemData(i) == want:
                self.judge.setCurrentIndex(i)
                return

    def offer_refresh(self, text: str) -> None:
        """Say that the database changed (``text``) and offer to recompute; nothing is
        recomputed until the coordinator asks."""
        self.refresh_text.setText(text)
        self.refresh_bar.show()

    def schedule_recompute(self) -> None:
        """Recompute shortly (several filter clicks in a row make one computation)."""
        self._timer.start()

    # -- computing ------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self._request is not None

    def recompute(self, reload: bool = False, expect: Any = None) -> int:
        """Start computing with the current filters (``reload``: read everything from the
        database again, else the worker reads what changed); an older computation is
        cancelled and its result, should it still arrive, dropped. ``expect``: the
        adjudication just saved (see :meth:`prefetch`). Returns the generation."""
        self._timer.stop()
        if reload:
            self.refresh_bar.hide()  # the new verdicts are read now
        self.generation += 1
        request = self._new_request(reload)
        self._request = request
        self.error_text = ""
        self._set_busy(True)
        self.progress_bar.setRange(0, 0)
        self.progress_bar.setFormat("starting…")
        self._steps_done = set()
        self._unfilled = {*SECTION_STEPS, *(f"chart:{name}" for name, _t in CHARTS)}
        self._show_section_progress()
        self.worker.compute(request, expect)  # supersedes (cancels) the one running
        return request.generation

    def prefetch(self, hypotheses: list[tuple[str, str, bool, int | None]]) -> None:
        """Let the worker compute ahead the dashboard with each hypothetical adjudication
        (response id, criterion id, met, level) under the current filters, so that
        returning from that adjudication shows it at once."""
        if self.prefetching and self.result is not None:
            self.worker.prefetch(self._new_request(False), hypotheses)

    def neighbours(self) -> list[Any]:
        """The filter sets one click away that the worker computes ahead while idle: the
        current filters with one model alone (each model), then one workflow alone — at
        most :attr:`read_ahead_filters` of them."""
        import dataclasses

        if self.result is None or self.read_ahead_filters <= 0:
            return []
        current = self.filters()
        out = []
        for name in ("models", "workflows"):  # a filter and its options share the name
            for value in self.result.options.get(name, []):
                if getattr(current, name) != (value,):
                    out.append(dataclasses.replace(current, **{name: (value,)}))
        return out[: self.read_ahead_filters]

    def read_ahead(self) -> None:
        """Let the worker compute ahead, at a lower priority, the dashboards of
        :meth:`neighbours` (a filter change to one of them is then shown at once)."""
        if not self.prefetching:
            return
        import dataclasses

        base = self._new_request(False)  # the charts' size now (the first may differ)
        requests = [dataclasses.replace(base, filters=f) for f in self.neighbours()]
        if requests:
            self.worker.prefetch_requests(requests)

    def _new_request(self, reload: bool) -> Request:
        return Request(
            generation=self.generation,
            benchmark=self.benchmark,
            filters=self.filters(),
            judge=self.selected_judge(),
            dark=dark_palette(self.palette()),
            n_boot=self.n_boot,
            seed=self.seed,
            calibration=self.calibration,
            chart_size=self._chart_size(),
            reload=reload,
        )

    def _chart_size(self) -> tuple[int, int] | None:
        """The size a chart's canvas will have, in physical pixels (None before layout)."""
        chart = self.charts[CHARTS[0][0]]
        area = chart.canvas if chart.canvas is not None else chart.empty
        if not self.isVisible() or area.width() < 50:
            # Hidden (the adjudication view is on top): the size it had when last shown.
            return self._last_chart_size
        ratio = area.devicePixelRatioF()
        self._last_chart_size = int(area.width() * ratio), int(area.height() * ratio)
        return self._last_chart_size

    def cancel(self) -> None:
        """Stop the running computation (the last result stays on screen)."""
        self._timer.stop()
        if self._request is None:
            return
        self.worker.cancel(self._request.generation)
        self._request = None
        self.generation += 1  # whatever still arrives is stale
        self._set_busy(False)
        self._clear_section_progress()
        self.error_text = "cancelled"
        self.status.setText("Computation cancelled; the figures shown are from before.")
        self.failed.emit("cancelled")

    def _progress(self, generation: int, done: int, total: int, label: str) -> None:
        if generation != self.generation or self._request is None:
            return
        if total <= 0:
            self.progress_bar.setRange(0, 0)
        else:
            self.progress_bar.setRange(0, total)
            self.progress_bar.setValue(done)
        self.progress_bar.setFormat(label)
        if label not in self._steps_done:
            self._steps_done.add(label)
            self._show_section_progress()

    def section_progress(self, name: str) -> str | None:
        """What section ``name`` (a table tab: ``agreement``, ``judges``, ``models`` or a
        table section's key; or ``chart:<tab>``) shows of the running computation: its own
        progress, e.g. ``"2/6"`` (steps of the computation it needs that are finished),
        ``"preparing"`` / ``"drawing"`` (computed, not on screen yet); None once filled."""
        if name not in self._unfilled:
            return None
        steps = SECTION_STEPS.get(name)
        if not steps:  # a chart: drawn after the computation
            return "drawing" if "done" in self._steps_done else "computing"
        done = sum(1 for step in steps if step in self._steps_done)
        if done == len(steps) or "done" in self._steps_done:
            return "preparing"
        return f"{done}/{len(steps)}"

    def _section_widget(self, name: str) -> QWidget:
        if name.startswith("chart:"):
            return self.charts[name[6:]]
        return self._table_widget(name)

    def _show_section_progress(self, names: Any = None) -> None:
        """Each tab's title with its own progress (:meth:`section_progress`) while its
        section is not filled."""
        every = names is None
        for name in [*SECTION_STEPS, *(f"chart:{n}" for n, _t in CHARTS)] if every else names:
            if name in self.section_tables:
                self._update_tab(name)
            else:
                self._set_tab_progress(name)

    def _set_tab_progress(self, name: str) -> None:
        widget = self._section_widget(name)
        tabs = self.chart_tabs if name.startswith("chart:") else self.tables
        index = tabs.indexOf(widget)
        title = self._tab_titles.get(widget, tabs.tabText(index))
        state = self.section_progress(name)
        tabs.setTabText(index, title if state is None else f"{title} · {state}")

    def _headline_ready(self, generation: int, headline: dict[str, Any]) -> None:
        """The headline of the running computation, ahead of its other sections: the
        tiles and the alt-test line show it at once."""
        if generation != self.generation or self._request is None:
            return
        self._show_headline(headline["overview"], headline["agreement"], headline["alt_test"])
        self.headline_generation = generation

    def _failed(self, generation: int, kind: str, text: str) -> None:
        """The worker could not compute ``generation``: ``kind`` is ``cancelled``,
        ``error`` (``text`` says why) or ``crashed`` (the process stopped)."""
        if generation != self.generation:
            self.dropped += 1
            return
        self._request = None
        self._set_busy(False)
        self._clear_section_progress()
        if kind in ("cancelled", "superseded"):
            self.error_text = "cancelled"
            self.status.setText("Computation cancelled.")
        elif self.headline and f"no grader {self.headline!r}" in text:
            gone = self.headline
            self.headline = None  # pinned again from the next result
            self.message.emit(f"The headline judge {gone} is no longer in this benchmark.")
            self.recompute()
            return
        else:
            self.error_text = text or kind
            self.status.setText(f"Cannot compute the dashboard: {self.error_text}")
            self.message.emit(f"Dashboard not computed: {self.error_text}")
        self.failed.emit(self.error_text)

    def _dropped(self, _generation: int) -> None:
        self.dropped += 1

    def _restarted(self, text: str) -> None:
        self.status.setText(text)
        self.message.emit(text)

    def _done(self, computed: Computed) -> None:
        if computed.generation != self.generation:
            self.dropped += 1
            return
        self._request = None
        self.result = computed
        self._set_busy(False)
        self._apply(computed)

    def _take_unfilled(self, names: set[str]) -> set[str]:
        """Mark ``names`` filled; returns them (their tabs' titles to show again)."""
        self._unfilled -= names
        return names

    def _clear_section_progress(self) -> None:
        self._show_section_progress(self._take_unfilled(set(self._unfilled)))

    def _set_busy(self, busy: bool) -> None:
        self.progress_bar.setVisible(busy)
        self.cancel_button.setVisible(busy)
        self.refresh_button.setEnabled(not busy)

    # -- showing ------------------------------------------------------------------------------
    def _apply(self, c: Computed) -> None:
        d = c.dashboard
        o = d.overview
        if self.headline is None and d.primary_judge is not None:
            # Never chosen: the judge shown now becomes the choice, so a later run of
            # another judge (a test judge that ties on verdicts) cannot take its place.
            self.set_headline(str(d.primary_judge))
        self._set_options(c.options)
        self._show_headline(o, d.agreement, d.alt_test)
        self.headline_generation = c.generation
        for table in TABLE_SECTIONS:
            self._tab_counts[table.key] = str(table.count(d.table(table.key)))
            self._update_tab(table.key)
            if table.optional:  # e.g. agreement per criterion version: only after a revision
                index = self.tables.indexOf(self.section_tables[table.key])
                self.tables.setTabVisible(index, d.has_section(table.key))
        self.notes.setText(" · ".join(d.notes))
        if c.disk:
            lead = f"Shown in {c.seconds:.1f} s from the results kept on disk (same data)"
        elif c.cached:
            lead = f"Shown in {c.seconds:.1f} s (computed ahead)"
        else:
            lead = f"Computed in {c.seconds:.1f} s"
        self.status.setText(
            f"{lead} · {o.get('filters', '')} · "
            f"{o.get('n_boot', 0)} bootstrap resamples, {100 * float(o.get('ci', 0.95)):.0f}% intervals"
        )
        # One table or chart per event-loop turn keeps the window responsive: the visible
        # table and chart first.
        tables: list[tuple[str, str, Any]] = [("table", "agreement", None)] + [
            ("table", name, c.tables[name]) for name in ("judges", "models", *self.section_tables)
        ]
        current_table = self.tables.currentWidget()
        tables.sort(key=lambda p: self._table_widget(p[1]) is not current_table)
        charts: list[tuple[str, str, Any]] = [
            ("chart", name, c.figures.get(self._figure_key(name))) for name, _t in CHARTS
        ]
        current = self.chart_tabs.currentWidget()
        charts.sort(key=lambda p: self.charts[p[1]] is not current)
        pending = [tables[0], charts[0], *tables[1:], *charts[1:]]
        # After a partial update only what changed is shown again.
        self._charts_pending = [p for p in pending if self._part_changed(c, p[0], p[1])]
        # Sections whose part did not change are on screen already.
        coming = {f"chart:{n}" if k == "chart" else n for k, n, _v in self._charts_pending}
        self._show_section_progress(self._take_unfilled(self._unfilled - coming))
        self._chart_timer.start()

    def _show_headline(
        self, o: dict[str, Any], agreement: pd.DataFrame, alt_test: dict[str, Any] | None
    ) -> None:
        """The tiles and the alt-test line (:func:`show_headline`)."""
        show_headline(self.cards, self.verdict, o, agreement, alt_test)

    def _part_changed(self, c: Computed, kind: str, name: str) -> bool:
        if kind == "chart":
            return c.is_changed(Part.figure(self._figure_key(name)))
        if name == "agreement":
            return c.is_changed(Part.table(f"agreement:{self.agreement_by.currentData()}"))
        shared = {"judges": Part.dash("judges"), "models": None}.get(name, Part.dash("tables"))
        return c.is_changed(Part.table(name)) or (shared is not None and c.is_changed(shared))

    def _table_widget(self, name: str) -> QtFrameTable:
        return {
            "agreement": self.agreement,
            "judges": self.judges,
            "models": self.model_table,
            **self.section_tables,
        }[name]

    def _next_chart(self) -> None:
        """Show the next pending table or chart (one per event-loop turn); when none is
        left, the computation is on screen: :attr:`computed`."""
        if not self._charts_pending:
            self._chart_timer.stop()
            if self._request is None:
                self._clear_section_progress()
            self.computed.emit()
            self.read_ahead()
            return
        kind, name, value = self._charts_pending.pop(0)
        section = f"chart:{name}" if kind == "chart" else name
        if self._request is None and section in self._unfilled:  # not a newer computation's
            self._show_section_progress(self._take_unfilled({section}))
        if kind == "table":
            if name == "agreement":
                self._show_agreement()
            else:
                self._table_widget(name).set_table(value)
            return
        chart = self.charts[name]
        if value is None or isinstance(value, str):
            chart.set_message(value or "Nothing to show.")
        else:
            chart.set_figure(value)

    def _set_options(self, options: dict[str, list[str]]) -> None:
        for button, key in (
            (self.models, "models"),
            (self.workflows, "workflows"),
            (self.domains, "domains"),
            (self.graders, "graders"),
        ):
            button.blockSignals(True)
            button.set_values(options.get(key, []))
            button.blockSignals(False)
        judges = options.get("judges", [])
        have = [self.judge.itemData(i) for i in range(1, self.judge.count())]
        self.judge.blockSignals(True)
        if have != judges:
            while self.judge.count() > 1:
                self.judge.removeItem(1)
            for j in judges:
                self.judge.addItem(j, j)
        self._select_headline()
        self.judge.blockSignals(False)

    def _figure_key(self, name: str) -> str:
        """The figure shown in chart ``name`` (a per-grouping chart follows the agreement table)."""
        return figure_name(name, str(self.agreement_by.currentData()))

    def _show_agreement(self) -> None:
        if self.result is None:
            return
        by = str(self.agreement_by.currentData())
        self.agreement.set_table(self.result.tables[f"agreement:{by}"])
        for name in GROUPING_TABS:
            chart = self.charts[name]
            fig = self.result.figures.get(self._figure_key(name))
            pending = any(p[0] == "chart" and p[1] == name for p in self._charts_pending)
            if not pending and fig is not chart.figure:
                if fig is None or isinstance(fig, str):
                    chart.set_message(fig or "Nothing to show.")
                else:
                    chart.set_figure(fig)

    def show_agreement_by(self, by: str) -> None:
        self.agreement_by.setCurrentIndex(AGREEMENT_BYS.index(by))

    # -- adjudicated disagreements ---------------------------------------------------------------
    def _update_tab(self, key: str) -> None:
        table = next(t for t in TABLE_SECTIONS if t.key == key)
        widget = self.section_tables[key]
        count = self._tab_counts.get(key)
        text = table.title if count is None else f"{table.title} ({count})"
        if key == "disagreements" and count is not None:
            done = widget.model.n_marked
            text = f"{table.title} ({count}, {done:,} adjudicated)" if done else text
        state = self.section_progress(key)
        if state is not None:
            text = f"{text} · {state}"
        self.tables.setTabText(self.tables.indexOf(widget), text)

    def set_adjudicated(self, marks: Mapping[tuple[str, str], AdjudicationValue]) -> None:
        """Mark these (response id, criterion id) pairs adjudicated in the disagreements
        table: a tick in the first column, the final verdict, who and when as the row's
        tooltip, and the count in the tab's title. Kept across recomputations."""
        self.adjudicated = dict(marks)
        self._show_marks()

    def mark_adjudicated(
        self, response_id: str, criterion_id: str, value: AdjudicationValue
    ) -> None:
        """Mark one pair adjudicated now (no database read, no recomputation)."""
        self.adjudicated[(response_id, criterion_id)] = value
        self._show_marks()

    def _show_marks(self) -> None:
        notes: dict[tuple[str, ...], str] = {
            key: adjudication_note(v) for key, v in self.adjudicated.items()
        }
        widget = self.section_tables["disagreements"]
        widget.model.set_marks(notes, adjudicated_icon())
        self._update_tab("disagreements")

    def select_case(self, response_id: str, criterion_id: str) -> bool:
        """Select the disagreement (response id, criterion id) in its table, if shown."""
        widget = self.section_tables["disagreements"]
        row = widget.find_row((response_id, criterion_id))
        if row >= 0:
            widget.select_row(row)
        return row >= 0

    def next_case(self, response_id: str, criterion_id: str) -> tuple[tuple[str, str], bool] | None:
        """The disagreement to adjudicate after (response id, criterion id): the next row
        of the disagreements table as it is shown (its sort and its filter box) that is
        not adjudicated yet, from the top again past the last row. Returns the pair and
        whether the search went round; None when every shown row is adjudicated."""
        widget = self.section_tables["disagreements"]
        n = widget.proxy.rowCount()
        if n == 0:
            return None
        here = widget.find_row((response_id, criterion_id))
        for step in range(1, n + 1):
            row = (here + step) % n
            key = widget.row_key(row)
            if (key[0], key[1]) == (response_id, criterion_id):
                continue
            if (key[0], key[1]) not in self.adjudicated:
                return (key[0], key[1]), here + step >= n and here >= 0
        return None

    # -- drilling down ---------------------------------------------------------------------------
    def case_for_row(self, row: dict[str, Any]) -> tuple[str, str] | None:
        """(response id, criterion id) to adjudicate for a disagreement, flip or health row."""
        if self.result is None:
            return None
        dis = self.result.dashboard.disagreements
        rid, cid, tid = row.get("response_id"), row.get("criterion_id"), row.get("task_id")
        if rid is not None and cid is not None:
            return str(rid), str(cid)
        if rid is not None:  # a flip: the response's first disagreement
            hit = dis.loc[dis["response_id"] == rid] if not dis.empty else dis
            if not hit.empty:
                return str(rid), str(hit.iloc[0]["criterion_id"])
            return None
        if cid is not None and tid is not None:  # a criterion: its first disagreement
            hit = (
                dis.loc[(dis["task_id"] == tid) & (dis["criterion_id"] == cid)]
                if not dis.empty
                else dis
            )
            if not hit.empty:
                return str(hit.iloc[0]["response_id"]), str(cid)
            first = self.result.first_response.get(str(tid))
            if first is not None:
                return first, str(cid)
        return None

    def current_criterion(self) -> tuple[str, str] | None:
        """(task id, criterion id) of the row selected in the table shown, when that row
        names a criterion (criterion health, disagreements)."""
        widget = self.tables.currentWidget()
        if not isinstance(widget, QtFrameTable):
            return None
        row = widget.selected_row()
        if row is None or any(_missing(row.get(c)) for c in CRITERION_COLUMNS):
            return None
        return str(row["task_id"]), str(row["criterion_id"])

    def _revise_row(self, row: dict[str, Any]) -> None:
        if any(_missing(row.get(c)) for c in CRITERION_COLUMNS):
            self.message.emit("This row names no criterion to revise.")
            return
        self.revise_requested.emit(str(row["task_id"]), str(row["criterion_id"]))

    def _revise_selected(self, widget: QtFrameTable) -> None:
        row = widget.selected_row()
        if row is None:
            self.message.emit("Select a criterion's row first, then Revise criterion….")
            return
        self._revise_row(row)

    def _open_row(self, row: dict[str, Any]) -> None:
        case = self.case_for_row(row)
        if case is None:
            self.message.emit("Nothing to adjudicate here: no disagreement on this row.")
            return
        self.adjudicate_requested.emit(*case)

    def shutdown(self) -> None:
        """Stop timers and the worker process (it exits; nothing is left running)."""
        self._timer.stop()
        self._chart_timer.stop()
        self._request = None
        self.worker.stop()
