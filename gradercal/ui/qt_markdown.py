"""Markdown shown read-only through ``QTextBrowser.setMarkdown`` — nothing fetched, no raw HTML.

Qt parses the Markdown with HTML off; afterwards the few inline tags that
:mod:`gradercal.ui.inline_html` understands (``<sub>``, ``<sup>``, ``<b>``, ``<i>``,
``<br>``, …) get their formatting and lose their tags, outside code spans and code blocks
(where a tag is what the author wrote). Nothing else of HTML ever reaches Qt.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QUrl
from PySide6.QtGui import (
    QColor,
    QDesktopServices,
    QFont,
    QTextBlock,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
)
from PySide6.QtWidgets import QTextBrowser, QWidget

from gradercal.ui.inline_html import BREAKS, FORMATS, LINE_BREAK, PAIRED, SINGLE

#: GitHub-flavoured Markdown (tables, task lists, strikethrough, autolinks) with HTML off:
#: Qt never interprets a tag (see :func:`render_inline_html` for the few that are shown).
MARKDOWN_FEATURES = QTextDocument.MarkdownFeature(
    QTextDocument.MarkdownFeature.MarkdownDialectGitHub.value
    | QTextDocument.MarkdownFeature.MarkdownNoHTML.value
)

_STYLE = """
table { border-collapse: collapse; margin: 4px 0; }
th, td { border: 1px solid #8a8a8a; padding: 3px 6px; }
code, pre { font-family: monospace; }
"""


def _format(kind: str) -> QTextCharFormat:
    fmt = QTextCharFormat()
    if kind == "sub":
        fmt.setVerticalAlignment(QTextCharFormat.VerticalAlignment.AlignSubScript)
    elif kind == "sup":
        fmt.setVerticalAlignment(QTextCharFormat.VerticalAlignment.AlignSuperScript)
    elif kind == "bold":
        fmt.setFontWeight(QFont.Weight.Bold)
    elif kind == "italic":
        fmt.setFontItalic(True)
    elif kind == "underline":
        fmt.setFontUnderline(True)
    elif kind == "strike":
        fmt.setFontStrikeOut(True)
    elif kind == "code":
        fmt.setFontFixedPitch(True)
        fmt.setFontFamilies(["monospace"])
    elif kind == "mark":
        fmt.setBackground(QColor(255, 230, 0, 110))
    return fmt


def _in_code(block: QTextBlock, position: int) -> bool:
    """Whether ``position`` is in a code block or a code span (tags there stay text)."""
    bf = block.blockFormat()
    if bf.hasProperty(QTextFormat.Property.BlockCodeFence) or bf.hasProperty(
        QTextFormat.Property.BlockCodeLanguage
    ):
        return True
    cursor = QTextCursor(block.document())
    cursor.setPosition(position + 1)  # the format of the character at ``position``
    cf = cursor.charFormat()
    return cf.fontFixedPitch() or "monospace" in (cf.fontFamilies() or [])


_Tag = tuple[int, int, int, int, str | None]


def _next_tag(block: QTextBlock, start: int) -> _Tag | None:
    """The first understood tag in ``block`` from offset ``start`` outside code: where the
    match starts, its length, where its content starts and its length (-1: a tag standing
    alone), and the content's format (None: plain; ``"br"``: a line break)."""
    text = block.text()
    while True:
        paired = PAIRED.search(text, start)
        single = SINGLE.search(text, start)
        m = min(
            (x for x in (paired, single) if x is not None), key=lambda x: x.start(), default=None
        )
        if m is None:
            return None
        if _in_code(block, block.position() + m.start()):
            start = m.start() + 1
            continue
        if m.re is PAIRED:
            kind = FORMATS.get(m.group(1).lower())
            return m.start(), m.end() - m.start(), m.start(2), len(m.group(2)), kind
        name = (m.group(1) or "").lower()
        return m.start(), m.end() - m.start(), m.start(), -1, "br" if name in BREAKS else None


def render_inline_html(document: QTextDocument) -> None:
    """Give the understood inline tags of ``document`` their format and drop the tags."""
    if "<" not in document.toRawText():
        return
    block = document.begin()
    while block.isValid():
        start = 0
        while (found := _next_tag(block, start)) is not None:
            at, length, inner, inner_length, kind = found
            base = block.position()
            cursor = QTextCursor(document)
            cursor.beginEditBlock()
            if inner_length < 0:  # a tag standing alone
                cursor.setPosition(base + at)
                cursor.setPosition(base + at + length, QTextCursor.MoveMode.KeepAnchor)
                cursor.insertText(LINE_BREAK if kind == "br" else "")
            else:  # the closing tag, then the opening one, then the content's format
                close_at, open_length = inner + inner_length, inner - at
                cursor.setPosition(base + close_at)
                cursor.setPosition(base + at + length, QTextCursor.MoveMode.KeepAnchor)
                cursor.removeSelectedText()
                cursor.setPosition(base + at)
                cursor.setPosition(base + at + open_length, QTextCursor.MoveMode.KeepAnchor)
                cursor.removeSelectedText()
                if kind is not None and inner_length:
                    cursor.setPosition(base + at)
                    cursor.setPosition(base + at + inner_length, QTextCursor.MoveMode.KeepAnchor)
                    cursor.mergeCharFormat(_format(kind))
            cursor.endEditBlock()
            start = at  # tags inside the content come next
        block = block.next()


class QtMarkdownView(QTextBrowser):
    """Read-only Markdown. Links open in the browser only when clicked (http/https/mailto)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.document().setDefaultStyleSheet(_STYLE)
        self.document().setDocumentMargin(10)
        self.document().setUndoRedoEnabled(False)  # read-only: the tag edits need no undo
        self.anchorClicked.connect(self._open_link)

    def set_markdown(self, text: str) -> None:
        self.document().setMarkdown(text or "", MARKDOWN_FEATURES)
        render_inline_html(self.document())

    def loadResource(self, type: int, name: QUrl | str) -> Any:
        # Never load images or style sheets named in a response: not from disk, not
        # from the network.
        return None

    @staticmethod
    def _open_link(url: QUrl) -> None:
        if url.scheme() in ("http", "https", "mailto"):
            QDesktopServices.openUrl(url)
