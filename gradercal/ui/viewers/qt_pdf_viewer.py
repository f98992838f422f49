"""PDF through PyMuPDF: pages rendered lazily off the UI thread and cached.

Only the pages in view are rendered, in one dedicated worker thread (MuPDF is not
safe to call from several threads at once), into ``QImage`` objects kept in a shared
LRU cache; a 500-page PDF opens as fast as a 3-page one. Navigation, zoom, fit width
and text search with highlighted hits.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QRect, QRectF, QSize, Qt, QThreadPool, QTimer, Signal
from PySide6.QtGui import QColor, QImage, QKeySequence, QPainter, QPaintEvent, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QScrollArea,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gradercal._util.pdf import import_pymupdf
from gradercal.model import Artifact
from gradercal.ui import qt_workers
from gradercal.ui.qt_widgets import flow_bar
from gradercal.ui.shortcuts import keys
from gradercal.ui.viewers.qt_base import Fetch, QtArtifactViewer

#: All MuPDF calls happen under this lock, in :func:`pdf_pool`'s single thread.
_MUPDF = threading.Lock()
_POOL: QThreadPool | None = None
#: Rendered pages: (sha256, page, zoom key) → image. Bounded by bytes.
_CACHE: OrderedDict[tuple[str, int, int], QImage] = OrderedDict()
_CACHE_LIMIT_BYTES = 256 * 1024 * 1024
_cache_bytes = 0
#: Page sizes of documents opened before, by sha256 (UI thread only).
_INFOS: OrderedDict[str, PdfInfo] = OrderedDict()
#: Open documents by sha256 (touched only in the PDF thread).
_DOCS: OrderedDict[str, Any] = OrderedDict()
_DOCS_LIMIT = 6

PAGE_GAP = 10
MARGIN = 12
ZOOM_STEPS = (0.25, 0.33, 0.5, 0.67, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0)


#: The width of the last PDF viewport (pixels): prefetching renders at the zoom it will need.
_last_viewport_width = 0


def fit_zoom(viewport_width: int, page_sizes: tuple[tuple[float, float], ...]) -> float:
    """The zoom at which the widest page fills ``viewport_width`` (margins left free)."""
    widest = max((w for w, _h in page_sizes), default=0.0)
    avail = viewport_width - 2 * MARGIN
    return min(max(avail / widest, 0.1), 8.0) if widest > 0 and avail > 50 else 1.0


def prefetch(sha: str, fetch: Fetch) -> None:
    """Read, open and render the first page of a PDF about to be shown (e.g. the next
    task's), in the PDF thread, so that moving on shows it at once."""
    info = _INFOS.get(sha)
    if info is not None and _last_viewport_width > 0:
        zoom = fit_zoom(_last_viewport_width, info.page_sizes)
        if cached_page(sha, 0, zoom) is not None:
            return
    qt_workers.submit(
        open_info,
        sha,
        fetch,
        _last_viewport_width,
        _device_ratio(),
        done=_remember,
        failed=lambda _exc: None,
        pool=pdf_pool(),
    )


def _device_ratio() -> float:
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance()
    screen = app.primaryScreen() if isinstance(app, QGuiApplication) else None
    return float(screen.devicePixelRatio()) if screen is not None else 1.0


def pdf_pool() -> QThreadPool:
    """The one thread all MuPDF work runs in."""
    global _POOL
    if _POOL is None:
        _POOL = QThreadPool()
        _POOL.setMaxThreadCount(1)
        _POOL.setExpiryTimeout(-1)
    return _POOL


def _keys(shortcut_id: str) -> str:
    return " or ".join(keys(shortcut_id))


def _zoom_key(zoom: float) -> int:
    return round(zoom * 1000)


def cached_page(sha: str, page: int, zoom: float) -> QImage | None:
    key = (sha, page, _zoom_key(zoom))
    img = _CACHE.get(key)
    if img is not None:
        _CACHE.move_to_end(key)
    return img


def _cache_put(key: tuple[str, int, int], img: QImage) -> None:
    global _cache_bytes
    if key in _CACHE:
        return
    _CACHE[key] = img
    _cache_bytes += img.sizeInBytes()
    while _cache_bytes > _CACHE_LIMIT_BYTES and len(_CACHE) > 1:
        _k, old = _CACHE.popitem(last=False)
        _cache_bytes -= old.sizeInBytes()


def clear_cache() -> None:
    global _cache_bytes
    _CACHE.clear()
    _cache_bytes = 0


@dataclass(frozen=True)
class PdfInfo:
    sha: str
    page_sizes: tuple[tuple[float, float], ...]  # points
    title: str | None


def _open(sha: str, fetch: Fetch | None) -> Any:
    """The open document (reopened from its bytes when it was closed); call under _MUPDF."""
    doc = _DOCS.get(sha)
    if doc is not None:
        _DOCS.move_to_end(sha)
        return doc
    if fetch is None:
        raise ValueError("the document is no longer open")
    data = fetch()
    pymupdf = import_pymupdf()
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:
        raise ValueError(f"not a readable PDF ({exc})") from exc
    if doc.needs_pass:
        raise ValueError("the PDF is password-protected")
    if doc.page_count == 0:
        raise ValueError("the PDF has no pages")
    _DOCS[sha] = doc
    while len(_DOCS) > _DOCS_LIMIT:
        _DOCS.popitem(last=False)[1].close()
    return doc


@dataclass(frozen=True)
class PdfOpened:
    """What opening a PDF in the worker gives back: its page sizes, and (when the viewport
    width was known) the first page rendered at the zoom that fits that width."""

    info: PdfInfo
    first_zoom: float
    first_page: QImage | None


def open_info(sha: str, fetch: Fetch, width: int = 0, dpr: float = 1.0) -> PdfOpened:
    """Open (or reuse) the document, read its page sizes, render page 1 (PDF thread)."""
    with _MUPDF:
        doc = _open(sha, fetch)
        sizes = []
        for i in range(doc.page_count):
            r = doc[i].rect
            sizes.append((float(r.width), float(r.height)))
        title = (doc.metadata or {}).get("title") or None
    info = PdfInfo(sha, tuple(sizes), title)
    if width <= 0:
        return PdfOpened(info, 0.0, None)
    zoom = fit_zoom(width, info.page_sizes)
    _page, _zoom, img = render_page(sha, 0, zoom, dpr, fetch)
    return PdfOpened(info, zoom, img)


def render_page(
    sha: str, page: int, zoom: float, dpr: float, fetch: Fetch | None = None
) -> tuple[int, float, QImage]:
    """Render one page at ``zoom`` × device pixel ratio (PDF thread)."""
    pymupdf = import_pymupdf()
    with _MUPDF:
        doc = _open(sha, fetch)
        scale = zoom * dpr
        pix = doc[page].get_pixmap(matrix=pymupdf.Matrix(scale, scale), alpha=False)
        img = QImage(
            pix.samples, pix.width, pix.height, pix.stride, QImage.Format.Format_RGB888
        ).copy()
    img.setDevicePixelRatio(dpr)
    return page, zoom, img


def _remember(opened: PdfOpened) -> None:
    """Keep what a worker found (UI thread): page sizes, and the first page if rendered."""
    _INFOS[opened.info.sha] = opened.info
    _INFOS.move_to_end(opened.info.sha)
    while len(_INFOS) > 64:
        _INFOS.popitem(last=False)
    if opened.first_page is not None:
        _cache_put((opened.info.sha, 0, _zoom_key(opened.first_zoom)), opened.first_page)


def search_pdf(
    sha: str, text: str, fetch: Fetch | None = None
) -> tuple[str, list[tuple[int, tuple[float, ...]]]]:
    """Every hit of ``text`` as (page, rect in points), in reading order (PDF thread)."""
    hits: list[tuple[int, tuple[float, ...]]] = []
    with _MUPDF:
        doc = _open(sha, fetch)
        for i in range(doc.page_count):
            for r in doc[i].search_for(text):
                hits.append((i, (float(r.x0), float(r.y0), float(r.x1), float(r.y1))))
    return text, hits


class QtPdfCanvas(QWidget):
    """Paints the pages in view; asks for renders of those not in the cache."""

    def __init__(self, viewer: QtPdfViewer) -> None:
        super().__init__()
        self.viewer = viewer
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, False)
        self.tops: list[int] = []
        self.sizes: list[QSize] = []

    def relayout(self) -> None:
        v = self.viewer
        self.tops, self.sizes = [], []
        y = MARGIN
        width = 0
        for w, h in v.info.page_sizes if v.info else ():
            size = QSize(max(round(w * v.zoom), 1), max(round(h * v.zoom), 1))
            self.tops.append(y)
            self.sizes.append(size)
            y += size.height() + PAGE_GAP
            width = max(width, size.width())
        self.resize(width + 2 * MARGIN, y - PAGE_GAP + MARGIN)
        self.update()

    def page_rect(self, page: int) -> QRect:
        size = self.sizes[page]
        x = max((self.width() - size.width()) // 2, MARGIN)
        return QRect(x, self.tops[page], size.width(), size.height())

    def pages_in(self, top: int, bottom: int) -> list[int]:
        return [
            i for i, t in enumerate(self.tops) if t <= bottom and t + self.sizes[i].height() >= top
        ]

    def paintEvent(self, event: QPaintEvent) -> None:
        v = self.viewer
        if v.info is None:
            return
        painter = QPainter(self)
        area = event.rect()
        painter.fillRect(area, self.palette().dark())
        for page in self.pages_in(area.top(), area.bottom()):
            rect = self.page_rect(page)
            img = cached_page(v.info.sha, page, v.zoom)
            if img is None:
                painter.fillRect(rect, QColor("white"))
                painter.setPen(QColor("#777"))
                painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, f"Page {page + 1}…")
                v.request(page)
                continue
            painter.drawImage(rect, img)
            if page == 0:
                v.first_page_painted()
            for k, (hp, (x0, y0, x1, y1)) in enumerate(v.hits):
                if hp != page:
                    continue
                z = v.zoom
                hit = QRectF(
                    rect.left() + x0 * z, rect.top() + y0 * z, (x1 - x0) * z, (y1 - y0) * z
                )
                color = QColor(255, 140, 0, 110) if k == v.hit_index else QColor(255, 230, 0, 90)
                painter.fillRect(hit, color)
        painter.end()


class QtPdfViewer(QtArtifactViewer):
    """Page navigation, zoom, fit width and search for one PDF artifact."""

    first_page_shown = Signal()
    search_done = Signal(int)

    def __init__(self, artifact: Artifact, fetch: Fetch | None, parent: QWidget | None = None):
        super().__init__(artifact, fetch, parent)
        self.pool = pdf_pool()
        self.info: PdfInfo | None = None
        self.zoom = 1.0
        self.fit_width = True
        self.hits: list[tuple[int, tuple[float, ...]]] = []
        self.hit_index = -1
        self._pending: set[tuple[int, int]] = set()
        self._wanted: set[int] = set()
        self._first_shown = False
        self._build()

    # -- widgets ------------------------------------------------------------------------------
    def _build(self) -> None:
        self.body = QWidget()
        outer = QVBoxLayout(self.body)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(2)
        # Three groups (pages, zoom, search) that wrap onto more rows in a narrow pane.
        bar = flow_bar(outer, spacing=8, margins=2)
        group: QHBoxLayout

        def start_group() -> QHBoxLayout:
            box = QWidget()
            layout = QHBoxLayout(box)
            layout.setContentsMargins(0, 0, 0, 0)
            layout.setSpacing(2)
            bar.add_widget(box)
            return layout

        def button(text: str, tip: str) -> QToolButton:
            b = QToolButton()
            b.setText(text)
            b.setToolTip(tip)
            b.setAutoRaise(True)
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            group.addWidget(b)
            return b

        group = start_group()
        self.prev_page = button("◀", f"Previous page ({_keys('artifact.page_previous')})")
        self.page_box = QSpinBox()
        self.page_box.setMinimum(1)
        self.page_box.setKeyboardTracking(False)
        self.page_box.setToolTip("Go to page")
        group.addWidget(self.page_box)
        self.page_count = QLabel("/ –")
        group.addWidget(self.page_count)
        self.next_page = button("▶", f"Next page ({_keys('artifact.page_next')})")
        group = start_group()
        self.zoom_out = button("−", f"Zoom out ({_keys('artifact.zoom_out')} or Ctrl+wheel)")
        self.zoom_label = QLabel("100%")
        self.zoom_label.setMinimumWidth(44)
        self.zoom_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        group.addWidget(self.zoom_label)
        self.zoom_in = button("+", f"Zoom in ({_keys('artifact.zoom_in')} or Ctrl+wheel)")
        self.fit_button = button(
            "Fit", f"Fit the page width to the panel ({_keys('artifact.fit')})"
        )
        self.fit_button.setCheckable(True)
        self.fit_button.setChecked(True)
        group = start_group()
        self.search_box = QLineEdit()
        self.search_box.setPlaceholderText(f"Search ({_keys('artifact.search')})")
        self.search_box.setClearButtonEnabled(True)
        self.search_box.setMinimumWidth(110)
        self.search_box.setMaximumWidth(220)
        group.addWidget(self.search_box)
        self.prev_hit = button("↑", "Previous hit (Shift+Enter)")
        self.next_hit = button("↓", "Next hit (Enter)")
        self.hit_label = QLabel("")
        # Room for "Searching…" and "12 / 345" from the start: the bar never re-flows
        # (nor asks for more width) while a search runs.
        self.hit_label.setMinimumWidth(self.hit_label.fontMetrics().horizontalAdvance("Searching…"))
        group.addWidget(self.hit_label)

        self.scroll_area = QScrollArea()
        self.scroll_area.setWidgetResizable(False)
        self.scroll_area.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        # A fixed viewport width: the fit-width zoom (and the prefetched first page) does
        # not change when the scroll bar appears.
        self.scroll_area.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        self.canvas = QtPdfCanvas(self)
        self.scroll_area.setWidget(self.canvas)
        self.scroll_area.viewport().installEventFilter(self)
        outer.addWidget(self.scroll_area, 1)

        self.prev_page.clicked.connect(lambda: self.go_to_page(self.current_page() - 1))
        self.next_page.clicked.connect(lambda: self.go_to_page(self.current_page() + 1))
        self.page_box.valueChanged.connect(lambda v: self.go_to_page(v - 1))
        self.zoom_in.clicked.connect(lambda: self.step_zoom(+1))
        self.zoom_out.clicked.connect(lambda: self.step_zoom(-1))
        self.fit_button.toggled.connect(self.set_fit_width)
        self.search_box.returnPressed.connect(self._search_or_next)
        self.search_box.textChanged.connect(self._search_text_changed)
        self.next_hit.clicked.connect(lambda: self.step_hit(+1))
        self.prev_hit.clicked.connect(lambda: self.step_hit(-1))
        self.scroll_area.verticalScrollBar().valueChanged.connect(self._scrolled)
        back = QShortcut(QKeySequence("Shift+Return"), self.search_box)
        back.setContext(Qt.ShortcutContext.WidgetShortcut)
        back.activated.connect(lambda: self.step_hit(-1))
        self._resize_timer = QTimer(self)
        self._resize_timer.setSingleShot(True)
        self._resize_timer.setInterval(60)
        self._resize_timer.timeout.connect(self._refit)

    # -- loading ------------------------------------------------------------------------------
    def start(self) -> None:
        if self._started:
            return
        self._started = True
        sha = self.artifact.sha256
        if not sha or self.fetch is None:
            self.show_error("no file is stored for this artifact")
            return
        known = _INFOS.get(sha)
        if known is not None:  # opened before (or prefetched): no worker round trip
            self._on_loaded(PdfOpened(known, 0.0, None))
            return
        qt_workers.submit(
            open_info,
            sha,
            self.fetch,
            _last_viewport_width,
            _device_ratio(),
            done=self._on_loaded,
            failed=self._on_failed,
            pool=self.pool,
        )

    def request_first_page(self) -> None:
        """Ask for page 1 at once (without waiting for a paint) when its image is missing."""
        if self.info is not None and cached_page(self.info.sha, 0, self.zoom) is None:
            self.request(0)

    def present(self, prepared: Any) -> None:
        opened: PdfOpened = prepared
        _remember(opened)
        info = opened.info
        self.info = info
        self.page_box.setMaximum(len(info.page_sizes))
        self.page_count.setText(f"/ {len(info.page_sizes)}")
        self.set_content(self.body)
        layout = self.body.layout()
        if layout is not None:
            layout.activate()
        self._apply_zoom(self._fit_zoom() if self.fit_width else self.zoom)
        self.request_first_page()

    def mark_ready(self) -> None:
        # The viewer is ready when the first page is on screen (or on error).
        if self.error is not None or self._first_shown:
            super().mark_ready()

    def first_page_painted(self) -> None:
        if not self._first_shown:
            self._first_shown = True
            self.first_page_shown.emit()
            super().mark_ready()

    def request(self, page: int) -> None:
        if self.info is None:
            return
        key = (page, _zoom_key(self.zoom))
        self._wanted.add(page)
        if key in self._pending:
            return
        self._pending.add(key)
        dpr = _device_ratio()
        qt_workers.submit(
            self._render_if_wanted,
            self.info.sha,
            page,
            self.zoom,
            dpr,
            done=self._rendered,
            failed=self._render_failed,
            pool=self.pool,
        )

    def _render_if_wanted(self, sha: str, page: int, zoom: float, dpr: float) -> Any:
        if page not in self._wanted or _zoom_key(zoom) != _zoom_key(self.zoom):
            return (page, zoom, None)  # scrolled away or zoom changed before we got here
        return render_page(sha, page, zoom, dpr, self.fetch)

    def _rendered(self, result: tuple[int, float, QImage | None]) -> None:
        page, zoom, img = result
        self._pending.discard((page, _zoom_key(zoom)))
        if img is None or self.info is None:
            return
        _cache_put((self.info.sha, page, _zoom_key(zoom)), img)
        if _zoom_key(zoom) == _zoom_key(self.zoom) and page < len(self.canvas.sizes):
            self.canvas.update(self.canvas.page_rect(page))

    def _render_failed(self, exc: BaseException) -> None:
        self._pending.clear()
        if not self._first_shown:
            self.show_error(f"cannot render the page ({exc})")

    # -- navigation and zoom --------------------------------------------------------------------
    def page_count_value(self) -> int:
        return len(self.info.page_sizes) if self.info else 0

    def current_page(self) -> int:
        if not self.canvas.tops:
            return 0
        y = self.scroll_area.verticalScrollBar().value() + self.scroll_area.viewport().height() // 3
        page = 0
        for i, top in enumerate(self.canvas.tops):
            if top <= y:
                page = i
        return page

    def go_to_page(self, page: int) -> None:
        if not self.canvas.tops:
            return
        page = min(max(page, 0), len(self.canvas.tops) - 1)
        self.scroll_area.verticalScrollBar().setValue(self.canvas.tops[page] - MARGIN)

    def _scrolled(self, _value: int) -> None:
        top = self.scroll_area.verticalScrollBar().value()
        self._wanted = set(self.canvas.pages_in(top, top + self.scroll_area.viewport().height()))
        page = self.current_page() + 1
        if self.page_box.value() != page:
            self.page_box.blockSignals(True)
            self.page_box.setValue(page)
            self.page_box.blockSignals(False)

    def _fit_zoom(self) -> float:
        global _last_viewport_width
        if not self.info:
            return 1.0
        viewport = self.scroll_area.viewport()
        if viewport.isVisible() and viewport.width() > 2 * MARGIN + 50:
            _last_viewport_width = viewport.width()
            width = viewport.width()
        else:  # not laid out yet: the width PDF viewports had so far (refitted on resize)
            width = _last_viewport_width or viewport.width()
        return fit_zoom(width, self.info.page_sizes)

    def set_fit_width(self, on: bool) -> None:
        self.fit_width = on
        if self.fit_button.isChecked() != on:
            self.fit_button.setChecked(on)
        if on:
            self._apply_zoom(self._fit_zoom())

    def step_zoom(self, direction: int) -> None:
        self.set_fit_width(False)
        if direction > 0:
            new = next((z for z in ZOOM_STEPS if z > self.zoom + 1e-6), ZOOM_STEPS[-1])
        else:
            new = next((z for z in reversed(ZOOM_STEPS) if z < self.zoom - 1e-6), ZOOM_STEPS[0])
        self._apply_zoom(new)

    def _apply_zoom(self, zoom: float) -> None:
        page = self.current_page()
        self.zoom = zoom
        self._pending.clear()
        self.zoom_label.setText(f"{zoom * 100:.0f}%")
        self.canvas.relayout()
        self.go_to_page(page)
        self._scrolled(0)

    def _refit(self) -> None:
        if self.fit_width and self.info is not None:
            z = self._fit_zoom()
            if abs(z - self.zoom) > 0.005:
                self._apply_zoom(z)

    def eventFilter(self, obj: Any, event: Any) -> bool:
        from PySide6.QtCore import QEvent

        if obj is self.scroll_area.viewport():
            if event.type() == QEvent.Type.Resize:
                self._resize_timer.start()
            elif (
                event.type() == QEvent.Type.Wheel
                and event.modifiers() & Qt.KeyboardModifier.ControlModifier
            ):
                self.step_zoom(1 if event.angleDelta().y() > 0 else -1)
                return True
        return super().eventFilter(obj, event)

    def step_page(self, direction: int) -> bool:
        if self.info is None:
            return False
        self.go_to_page(self.current_page() + direction)
        return True

    def change_zoom(self, direction: int) -> bool:
        if self.info is None:
            return False
        if direction == 0:
            self.set_fit_width(True)
        else:
            self.step_zoom(direction)
        return True

    # -- search -------------------------------------------------------------------------------
    def focus_search(self) -> bool:
        self.search_box.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search_box.selectAll()
        return True

    def _search_or_next(self) -> None:
        text = self.search_box.text().strip()
        if self.hits and getattr(self, "_last_query", None) == text:
            self.step_hit(+1)
        else:
            self.search(text)

    def _search_text_changed(self, text: str) -> None:
        """An emptied box (its clear button, or the text deleted) ends the search: no count,
        no highlights."""
        if not text.strip() and (self.hits or self.hit_label.text()):
            self.search("")

    def search(self, text: str) -> None:
        self._last_query = text
        self.hits, self.hit_index = [], -1
        if not text or self.info is None:
            self.hit_label.setText("")
            self.canvas.update()
            return
        self.hit_label.setText("Searching…")
        qt_workers.submit(
            search_pdf,
            self.info.sha,
            text,
            self.fetch,
            done=self._search_done,
            failed=lambda exc: self.hit_label.setText(f"Search failed: {exc}"),
            pool=self.pool,
        )

    def _search_done(self, result: tuple[str, list[tuple[int, tuple[float, ...]]]]) -> None:
        text, hits = result
        if text != getattr(self, "_last_query", None):
            return
        self.hits = hits
        self.hit_index = 0 if hits else -1
        self._show_hit()
        self.search_done.emit(len(hits))

    def step_hit(self, direction: int) -> None:
        if not self.hits:
            return
        self.hit_index = (self.hit_index + direction) % len(self.hits)
        self._show_hit()

    def _show_hit(self) -> None:
        if not self.hits:
            self.hit_label.setText("No hits")
            self.canvas.update()
            return
        self.hit_label.setText(f"{self.hit_index + 1} / {len(self.hits)}")
        page, (_x0, y0, _x1, _y1) = self.hits[self.hit_index]
        if page < len(self.canvas.tops):
            y = self.canvas.tops[page] + int(y0 * self.zoom)
            self.scroll_area.ensureVisible(
                self.canvas.width() // 2, y, 0, self.scroll_area.height() // 3
            )
        self.canvas.update()
