"""The adjudication view: one response and one criterion, every grader's verdict, a final decision.

Opened from the coordinator dashboard (a disagreement, a flip, a criterion-health
entry). It shows the task and the response (Markdown), the task's artifacts (the
grading view's panel and viewers), the criterion, every expert's verdict and rationale,
each judge's verdict and explanation, and the earlier adjudications. The adjudicator
chooses the final verdict (M, N, P for criteria with a partial level), writes a note and
saves with Ctrl+Return, or saves and asks for the next disagreement with
Ctrl+Shift+Return ("Save and next"; the coordinator view picks it); Esc goes back to
the dashboard. The header names the adjudicator. The decision is stored as an
adjudication (:class:`gradercal.db.adjudication.AdjudicationStore`); the graders'
judgments are never changed.

This view unblinds models and graders: it exists only in a coordinator window.
"""

from __future__ import annotations

import contextlib
import json

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gradercal._util.numbers import fixed
from gradercal.db.adjudication import (
    AdjudicationCase,
    AdjudicationStore,
    AdjudicationValue,
    GraderVerdict,
    StaleAdjudicationError,
    value_to_verdict,
)
from gradercal.errors import GradercalError, ValidationError
from gradercal.ui import qt_workers
from gradercal.ui.inline_html import to_plain
from gradercal.ui.qt_markdown import QtMarkdownView
from gradercal.ui.qt_widgets import QtElidedLabel
from gradercal.ui.shortcuts import keys
from gradercal.ui.viewers.qt_artifact_panel import QtArtifactPanel

VERDICT_WORDS = {"met": "Met", "partial": "Partial", "not_met": "Not met", None: "—"}


def _bold(label: QLabel, scale: float = 1.0) -> QLabel:
    font = label.font()
    font.setBold(True)
    if scale != 1.0:
        font.setPointSizeF(font.pointSizeF() * scale)
    label.setFont(font)
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


def _titled(title: str, body: QWidget) -> tuple[QWidget, QLabel]:
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(2)
    label = _bold(QtElidedLabel(title))  # a long task title never widens the window
    label.setContentsMargins(6, 4, 6, 0)
    layout.addWidget(label)
    layout.addWidget(body, 1)
    return box, label


def _when(value: object) -> str:
    if value is None:
        return ""
    text = value.isoformat(sep=" ", timespec="minutes") if hasattr(value, "isoformat") else value
    return str(text)[:16].replace("T", " ")


def response_markdown(case: AdjudicationCase) -> str:
    text = case.response_text or "*(empty response)*"
    if case.answer is not None:
        pretty = json.dumps(case.answer, indent=2, ensure_ascii=False)
        text += f"\n\n---\n\n**Structured answer**\n\n```json\n{pretty}\n```\n"
    return text


class QtAdjudicationView(QWidget):
    """One adjudication case at a time; :meth:`open_case` loads it off the UI thread."""

    #: The case is on screen (texts, verdicts, decision form).
    case_loaded = Signal()
    #: An adjudication was stored: (response id, criterion id).
    saved = Signal(str, str)
    #: "Save and next" stored this case: open the next disagreement after it.
    next_requested = Signal(str, str)
    #: Esc / the back button.
    back_requested = Signal()
    #: "Revise criterion…": (task id, criterion id).
    revise_requested = Signal(str, str)
    #: A short message for the status bar.
    message = Signal(str)

    def __init__(
        self, store: AdjudicationStore, adjudicator: str = "", parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.store = store
        self.case: AdjudicationCase | None = None
        self.verdict: str | None = None
        self._dirty = False
        self._loading: tuple[str | None, str, str] | None = None
        self._build(adjudicator)
        self._build_shortcuts()

    # -- layout -------------------------------------------------------------------------------
    def _build(self, adjudicator: str) -> None:
        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        outer.setSpacing(4)
        header = QHBoxLayout()
        self.back_button = QPushButton("◀ Dashboard")
        self.back_button.setToolTip("Back to the dashboard (Esc)")
        self.back_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        header.addWidget(self.back_button)
        # one line, cut with "…" on a narrow window (the tooltip has it whole)
        self.title = _bold(QtElidedLabel("Adjudication"), 1.2)
        self.title.setObjectName("adjudicationTitle")
        header.addWidget(self.title, 1)
        self.adjudicator_badge = QLabel("")
        self.adjudicator_badge.setObjectName("adjudicatorBadge")
        self.adjudicator_badge.setTextFormat(Qt.TextFormat.PlainText)
        header.addWidget(self.adjudicator_badge)
        outer.addLayout(header)

        self.pages = QStackedWidget()
        self.notice = QLabel("Choose a disagreement in the dashboard.")
        self.notice.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.notice.setWordWrap(True)
        self.pages.addWidget(self.notice)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setChildrenCollapsible(False)
        texts = QSplitter(Qt.Orientation.Vertical)
        texts.setChildrenCollapsible(False)
        self.prompt_view = QtMarkdownView()
        prompt_box, self.prompt_title = _titled("Task", self.prompt_view)
        texts.addWidget(prompt_box)
        self.response_view = QtMarkdownView()
        response_box, self.response_title = _titled("Response", self.response_view)
        texts.addWidget(response_box)
        texts.setSizes([400, 600])
        self.splitter.addWidget(texts)
        self.artifacts = QtArtifactPanel(self.store.repo.read_blob)
        self.artifacts_box = _titled("Artifacts", self.artifacts)[0]
        self.splitter.addWidget(self.artifacts_box)
        self.splitter.addWidget(self._build_decision())
        self.splitter.setSizes([3000, 3200, 3800])
        self.pages.addWidget(self.splitter)
        outer.addWidget(self.pages, 1)
        self.adjudicator.textChanged.connect(self._show_adjudicator)
        self.adjudicator.setText(adjudicator)
        self._show_adjudicator()
        self.back_button.clicked.connect(self.back)

    def _build_decision(self) -> QWidget:
        box = QWidget()
        layout = QVBoxLayout(box)
        layout.setContentsMargins(4, 0, 0, 0)
        layout.setSpacing(4)
        self.criterion_label = QLabel("")
        self.criterion_label.setWordWrap(True)
        self.criterion_label.setTextFormat(Qt.TextFormat.PlainText)
        self.criterion_label.setObjectName("criterionText")
        self.criterion_facts = QLabel("")
        self.criterion_facts.setWordWrap(True)
        self.criterion_facts.setTextFormat(Qt.TextFormat.PlainText)
        head = QHBoxLayout()
        head.addWidget(_bold(QLabel("Criterion")))
        head.addStretch(1)
        self.revise_button = QPushButton(f"Revise criterion… ({keys('criterion.revise')[0]})")
        self.revise_button.setObjectName("reviseCriterion")
        self.revise_button.setToolTip(
            "Edit this criterion (text, points, levels, tags), see what it changes, and "
            "save it with a reason as a new version of the task"
        )
        self.revise_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.revise_button.clicked.connect(self.request_revision)
        head.addWidget(self.revise_button)
        layout.addLayout(head)
        layout.addWidget(self.criterion_label)
        layout.addWidget(self.criterion_facts)

        layout.addWidget(_bold(QLabel("Verdicts")))
        self.verdicts = QTreeWidget()
        self.verdicts.setObjectName("verdicts")
        self.verdicts.setHeaderLabels(["Grader", "Verdict", "Confidence", "Rationale"])
        self.verdicts.setRootIsDecorated(False)
        self.verdicts.setUniformRowHeights(True)
        self.verdicts.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = self.verdicts.header()
        header.setStretchLastSection(True)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.verdicts.currentItemChanged.connect(self._verdict_selected)
        layout.addWidget(self.verdicts, 2)
        self.rationale = QTextBrowser()
        self.rationale.setObjectName("rationale")
        self.rationale.setPlaceholderText("Select a grader to read the whole rationale.")
        layout.addWidget(self.rationale, 2)

        layout.addWidget(_bold(QLabel("Earlier adjudications")))
        self.history = QTreeWidget()
        self.history.setObjectName("history")
        self.history.setHeaderLabels(["When", "Adjudicator", "Verdict", "Note"])
        self.history.setRootIsDecorated(False)
        self.history.header().setStretchLastSection(True)
        layout.addWidget(self.history, 1)

        layout.addWidget(_bold(QLabel("Final verdict")))
        row = QHBoxLayout()
        self.verdict_group = QButtonGroup(self)
        self.verdict_group.setExclusive(True)
        self.verdict_buttons: dict[str, QPushButton] = {}
        for verdict, sid in (
            ("met", "adjudication.met"),
            ("not_met", "adjudication.not_met"),
            ("partial", "adjudication.partial"),
        ):
            b = QPushButton(f"{VERDICT_WORDS[verdict]} ({keys(sid)[0]})")
            b.setCheckable(True)
            b.setObjectName(f"verdict_{verdict}")
            b.clicked.connect(lambda _c=False, v=verdict: self.set_verdict(v))
            self.verdict_group.addButton(b)
            self.verdict_buttons[verdict] = b
            row.addWidget(b)
        row.addStretch(1)
        layout.addLayout(row)
        form = QFormLayout()
        self.adjudicator = QLineEdit()
        self.adjudicator.setObjectName("adjudicator")
        self.adjudicator.setMaxLength(200)
        self.adjudicator.setPlaceholderText("Your name: asked once, then remembered")
        self.adjudicator.setToolTip(
            "The name your adjudications are recorded under (remembered for next time)"
        )
        form.addRow("Adjudicator", self.adjudicator)
        layout.addLayout(form)
        self.note = QPlainTextEdit()
        self.note.setObjectName("note")
        self.note.setPlaceholderText(
            "Note (required): why this verdict — it becomes guidance for the judge."
        )
        self.note.setTabChangesFocus(True)
        self.note.textChanged.connect(self._touched)
        layout.addWidget(self.note, 1)
        # the refusal gets a whole row (beside the buttons it wrapped one word per line)
        self.error = QLabel("")
        self.error.setObjectName("adjudicationError")
        self.error.setWordWrap(True)
        self.error.setTextFormat(Qt.TextFormat.PlainText)
        layout.addWidget(self.error)
        bottom = QHBoxLayout()
        bottom.addStretch(1)
        self.save_button = QPushButton(f"Save ({keys('adjudication.save')[0]})")
        self.save_button.setObjectName("saveAdjudication")
        self.save_button.setToolTip("Save the adjudication and stay on it")
        self.save_button.clicked.connect(self.save)
        bottom.addWidget(self.save_button)
        self.save_next_button = QPushButton(f"Save and next ({keys('adjudication.save_next')[0]})")
        self.save_next_button.setObjectName("saveNextAdjudication")
        self.save_next_button.setToolTip(
            "Save, then open the next disagreement still to adjudicate, in the order and "
            "filter of the dashboard's Disagreements table"
        )
        self.save_next_button.clicked.connect(self.save_and_next)
        bottom.addWidget(self.save_next_button)
        layout.addLayout(bottom)
        return box

    def _build_shortcuts(self) -> None:
        """M / N / P, Ctrl+Return and Esc, active while this view (or a child) has the focus.

        In the note box letters are typed as text (the text box takes them first); Esc
        there leaves the box, and a second Esc goes back to the dashboard.
        """
        handlers = {
            "adjudication.met": lambda: self.set_verdict("met"),
            "adjudication.not_met": lambda: self.set_verdict("not_met"),
            "adjudication.partial": lambda: self.set_verdict("partial"),
            "adjudication.save": self.save,
            "adjudication.save_next": self.save_and_next,
            "adjudication.back": self._escape,
        }
        self.shortcuts: dict[str, list[QShortcut]] = {}
        for sid, handler in handlers.items():
            made = []
            for key in keys(sid):
                sc = QShortcut(QKeySequence(key), self)
                sc.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
                sc.activated.connect(handler)
                made.append(sc)
            self.shortcuts[sid] = made

    # -- loading ------------------------------------------------------------------------------
    def open_case(self, benchmark: str | None, response_id: str, criterion_id: str) -> None:
        """Load the case in the background; :attr:`case_loaded` is emitted when it is shown."""
        self._loading = (benchmark, response_id, criterion_id)
        self.notice.setText(f"Loading {response_id} · {criterion_id}…")
        self.pages.setCurrentWidget(self.notice)
        self.title.setText(f"Adjudication · {response_id} · {criterion_id}")
        key = self._loading
        qt_workers.submit(
            self.store.case,
            benchmark,
            response_id,
            criterion_id,
            done=lambda case: self._loaded(key, case),
            failed=lambda exc: self._load_failed(key, exc),
        )

    def open_case_now(self, benchmark: str | None, response_id: str, criterion_id: str) -> None:
        """Like :meth:`open_case` on this thread (screenshots, tests)."""
        key = (benchmark, response_id, criterion_id)
        self._loading = key
        try:
            case = self.store.case(benchmark, response_id, criterion_id)
        except Exception as exc:
            self._load_failed(key, exc)
            return
        self._loaded(key, case)

    def _load_failed(self, key: object, exc: BaseException) -> None:
        if key != self._loading:
            return
        self._loading = None
        self.notice.setText(f"Cannot open this case: {exc}")
        self.pages.setCurrentWidget(self.notice)
        self.message.emit(f"Cannot open the adjudication: {exc}")

    def _loaded(self, key: object, case: AdjudicationCase) -> None:
        if key != self._loading:  # a newer case was asked for meanwhile
            return
        self._loading = None
        self.show_case(case)

    def show_case(self, case: AdjudicationCase, *, keep_draft: bool | None = None) -> None:
        """Show ``case``; an unsaved draft on the same case is kept unless ``keep_draft``
        says otherwise."""
        old = self.case
        if keep_draft is None:
            keep_draft = (
                self._dirty
                and old is not None
                and (old.benchmark, old.response_id, old.criterion.id)
                == (case.benchmark, case.response_id, case.criterion.id)
            )
        self.case = case
        t, c = case.task, case.criterion
        facts = [x for x in (t.domain, t.workflow, t.answer_format) if x]
        self.title.setText(
            f"Adjudication · task {t.id} · {case.response_id} ({case.model}) · criterion {c.id}"
        )
        self.prompt_title.setText(f"Task {t.id}" + (f" · {' · '.join(facts)}" if facts else ""))
        self.prompt_view.set_markdown(t.prompt)
        self.response_title.setText(f"Response {case.response_id} · {case.model}")
        self.response_view.set_markdown(response_markdown(case))
        self.artifacts.set_task((case.benchmark, t.id), t.artifacts)
        self.artifacts_box.setVisible(bool(t.artifacts))  # no empty "no artifacts" column
        self.criterion_label.setText(f"{c.id}. {to_plain(c.text)}")
        scale = "met / partial / not met" if case.allows_partial else "met / not met"
        tags = ", ".join(c.tags) if c.tags else "no tags"
        self.criterion_facts.setText(f"{c.points:+d} points · {scale} · {tags}")
        self._fill_verdicts(case)
        self._fill_history(case)
        self.verdict_buttons["partial"].setVisible(case.allows_partial)
        if not keep_draft:
            current = case.current
            self.verdict = (
                value_to_verdict(c, current.met, current.level) if current is not None else None
            )
            self.note.blockSignals(True)
            self.note.setPlainText(current.note or "" if current is not None else "")
            self.note.blockSignals(False)
            self._dirty = False
        self._show_verdict()
        self.error.setText("")
        self.pages.setCurrentWidget(self.splitter)
        self.verdicts.setFocus()
        # Each case opens at its top: now, and once the texts are laid out at the width the
        # page gets (a text view keeps its place through a relayout: a case opened after a
        # scrolled one, or from the "Loading…" page, showed its middle).
        self.scroll_to_top()
        QTimer.singleShot(0, self, self.scroll_to_top)
        self.case_loaded.emit()

    def scroll_to_top(self) -> None:
        """The task, the response, the rationale and the lists at their tops."""
        for view in (self.prompt_view, self.response_view, self.rationale):
            cursor = view.textCursor()
            cursor.movePosition(cursor.MoveOperation.Start)
            view.setTextCursor(cursor)
            view.verticalScrollBar().setValue(0)
        for tree in (self.verdicts, self.history):
            tree.verticalScrollBar().setValue(0)

    def _fill_verdicts(self, case: AdjudicationCase) -> None:
        self.verdicts.clear()
        for v in (*case.experts, *case.judges):
            word = VERDICT_WORDS[value_to_verdict(case.criterion, v.met, v.level)]
            who = f"{v.grader} (judge)" if v.is_judge else v.grader
            conf = fixed(v.confidence, 2, missing="")
            first = (v.rationale or "").strip().splitlines()
            item = QTreeWidgetItem([who, word, conf, first[0] if first else ""])
            item.setData(0, Qt.ItemDataRole.UserRole, v)
            if v.unclear:
                item.setText(1, f"{word} · unclear")
            tip = v.rationale or "(no rationale)"
            item.setToolTip(3, tip)
            self.verdicts.addTopLevelItem(item)
        self._fit_verdicts()
        top = self.verdicts.topLevelItem(0)
        if top is not None:
            self.verdicts.setCurrentItem(top)
        else:
            self.rationale.setPlainText("Nobody has graded this criterion yet.")

    def _fit_verdicts(self) -> None:
        """Every grader's row on screen (up to six, then the list scrolls): on a 720-pixel
        screen the list showed two and a half of four graders."""
        tree = self.verdicts
        rows = min(max(tree.topLevelItemCount(), 1), 6)
        row = tree.sizeHintForRow(0) if tree.topLevelItemCount() else tree.fontMetrics().height()
        head = tree.header().sizeHint().height()
        scroll = tree.horizontalScrollBar().sizeHint().height()
        tree.setMinimumHeight(head + rows * max(row, 1) + 2 * tree.frameWidth() + scroll)

    def _verdict_selected(self, item: QTreeWidgetItem | None, _prev: object = None) -> None:
        if item is None:
            return
        v = item.data(0, Qt.ItemDataRole.UserRole)
        if not isinstance(v, GraderVerdict):
            return
        lines = [f"**{v.grader}**" + (" — LLM judge" if v.is_judge else " — expert")]
        if v.is_judge and (v.model or v.prompt_version):
            lines.append(f"model {v.model or '?'} · prompt {v.prompt_version or '?'}")
        lines.append("")
        lines.append(v.rationale or "*(no rationale written)*")
        if v.unclear:
            lines += ["", f"**Flagged the criterion as unclear:** {v.unclear_note or ''}"]
        if v.updated_at is not None:
            lines += ["", f"*{_when(v.updated_at)}*"]
        self.rationale.setMarkdown("\n\n".join(lines))

    def _fill_history(self, case: AdjudicationCase) -> None:
        self.history.clear()
        values: list[AdjudicationValue] = list(case.history)
        if case.current is not None:
            values.append(case.current)
        for a in reversed(values):
            word = VERDICT_WORDS[value_to_verdict(case.criterion, a.met, a.level)]
            label = "current" if a is case.current else f"revision {a.revision}"
            item = QTreeWidgetItem(
                [f"{_when(a.at)} ({label})", a.adjudicator, word, (a.note or "").replace("\n", " ")]
            )
            item.setToolTip(3, a.note or "")
            self.history.addTopLevelItem(item)
        if not values:
            item = QTreeWidgetItem(["not adjudicated yet", "", "", ""])
            self.history.addTopLevelItem(item)
            item.setFirstColumnSpanned(True)  # whole, not cut to the When column

    # -- deciding ------------------------------------------------------------------------------
    def set_verdict(self, verdict: str) -> None:
        if self.case is None:
            return
        if verdict == "partial" and not self.case.allows_partial:
            self.error.setText("This criterion has no partial level (met or not met).")
            return
        self.verdict = verdict
        self._dirty = True
        self._show_verdict()
        self.error.setText("")

    def _show_verdict(self) -> None:
        # an exclusive group never unchecks its last button: with no verdict chosen (the next
        # case), the previous case's button would stay pressed
        self.verdict_group.setExclusive(False)
        for v, b in self.verdict_buttons.items():
            b.setChecked(v == self.verdict)
        self.verdict_group.setExclusive(True)

    def _touched(self) -> None:
        self._dirty = True

    @property
    def dirty(self) -> bool:
        """A verdict or note was changed and not saved yet."""
        return self._dirty

    def save(self) -> bool:
        """Store the decision; on a problem the message says what, and nothing is written."""
        case = self.case
        if case is None:
            return False
        if self.verdict is None:
            self.error.setText("Choose the final verdict first: M (met) or N (not met).")
            return False
        try:
            fresh = self.store.record(
                case, self.verdict, self.note.toPlainText(), self.adjudicator.text()
            )
        except ValidationError as exc:
            self.error.setText("Not saved: " + "; ".join(p.message for p in exc.problems))
            field = next((p.field for p in exc.problems if p.field), None)
            if field == "note":
                self.note.setFocus()
            elif field == "adjudicator":
                self.adjudicator.setFocus()
                self.adjudicator.selectAll()
            return False
        except StaleAdjudicationError as exc:
            # decided by someone else meanwhile: show their decision (history included)
            # and keep this draft; saving it again replaces theirs on purpose
            with contextlib.suppress(Exception):  # unreadable now: the message says enough
                self.show_case(
                    self.store.case(case.benchmark, case.response_id, case.criterion.id),
                    keep_draft=True,
                )
            self.error.setText(f"Not saved: {exc}. Save again to replace it with yours.")
            return False
        except GradercalError as exc:
            self.error.setText(f"Not saved: {exc}")
            return False
        except Exception as exc:  # database unreachable, locked, …: the window stays
            self.error.setText(f"Not saved (database error): {exc}")
            self.message.emit(f"Adjudication not saved (database error): {exc}")
            return False
        self._dirty = False
        self.show_case(fresh, keep_draft=False)
        self.message.emit(
            f"Adjudicated {case.response_id} · {case.criterion.id}: {VERDICT_WORDS[self.verdict]}."
        )
        self.saved.emit(case.response_id, case.criterion.id)
        return True

    def save_and_next(self) -> bool:
        """:meth:`save`, then ask for the next disagreement (:attr:`next_requested`)."""
        case = self.case
        if case is None or not self.save():
            return False
        self.next_requested.emit(case.response_id, case.criterion.id)
        return True

    def _show_adjudicator(self) -> None:
        name = self.adjudicator.text().strip()
        self.adjudicator_badge.setText(
            f"Adjudicating as {name}" if name else "Adjudicator: not chosen yet"
        )

    def _escape(self) -> None:
        focus = self.focusWidget()
        if focus in (self.note, self.adjudicator):
            self.verdicts.setFocus()
            return
        self.back()

    def back(self) -> None:
        if self._dirty and self.case is not None:
            self.message.emit(
                f"The adjudication of {self.case.response_id} · {self.case.criterion.id} "
                "was not saved (open it again to finish it)."
            )
        self.back_requested.emit()

    def request_revision(self) -> None:
        """Ask the coordinator view to open the edit dialog of this case's criterion."""
        if self.case is not None:
            self.revise_requested.emit(self.case.task.id, self.case.criterion.id)

    def adjudicator_name(self) -> str:
        return self.adjudicator.text().strip()


__all__ = ["QtAdjudicationView", "response_markdown"]
