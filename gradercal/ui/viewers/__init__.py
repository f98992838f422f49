"""Artifact viewers, one module per kind (``qt_<kind>_viewer.py``), and their Qt-free parsers.

:func:`create_viewer` picks the viewer for an artifact's kind, importing only that
viewer's module (the table viewer brings pandas and numpy, the PDF viewer PyMuPDF).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from gradercal.model import Artifact, ArtifactKind

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

    from gradercal.ui.viewers.qt_base import Fetch, QtArtifactViewer

#: Artifact kind → (module, class) of its viewer.
VIEWERS: dict[ArtifactKind, tuple[str, str]] = {
    ArtifactKind.PDF: ("qt_pdf_viewer", "QtPdfViewer"),
    ArtifactKind.IMAGE: ("qt_image_viewer", "QtImageViewer"),
    ArtifactKind.TABLE: ("qt_table_viewer", "QtTableViewer"),
    ArtifactKind.SEQUENCE: ("qt_sequence_viewer", "QtSequenceViewer"),
    ArtifactKind.STRUCTURE: ("qt_structure_viewer", "QtStructureViewer"),
    ArtifactKind.TEXT: ("qt_text_viewer", "QtTextViewer"),
    ArtifactKind.URL: ("qt_url_viewer", "QtUrlViewer"),
}


def create_viewer(
    artifact: Artifact, fetch: Fetch | None, parent: QWidget | None = None
) -> QtArtifactViewer:
    """The viewer for ``artifact`` (not started: call ``start()`` when it is shown)."""
    kind = ArtifactKind.URL if artifact.url and not artifact.sha256 else artifact.kind
    module, name = VIEWERS.get(kind, VIEWERS[ArtifactKind.TEXT])
    cls: type[QtArtifactViewer] = getattr(
        importlib.import_module(f"gradercal.ui.viewers.{module}"), name
    )
    return cls(artifact, None if kind == ArtifactKind.URL else fetch, parent)


__all__ = ["VIEWERS", "create_viewer"]
