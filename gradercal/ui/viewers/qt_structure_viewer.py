"""Structures and chemical files (PDB, mmCIF, SDF, MOL, MOL2): a summary plus the text."""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QPlainTextEdit, QSplitter, QTextBrowser, QWidget

from gradercal.model import Artifact
from gradercal.ui.viewers.qt_base import Fetch, QtArtifactViewer, file_label
from gradercal.ui.viewers.structures import MoleculeFile, StructureSummary, summarize

#: Characters of the file shown as text; the summary always covers the whole file.
MAX_TEXT = 5_000_000


def _e(x: object) -> str:
    return html.escape(str(x))


def summary_html(s: StructureSummary | MoleculeFile) -> str:
    if isinstance(s, MoleculeFile):
        n = len(s.molecules)
        parts = [f"<p><b>{s.format.upper()}</b> · {n} molecule{'s' if n != 1 else ''}</p>"]
        parts.append(
            "<table cellspacing='0' cellpadding='3' border='1'>"
            "<tr><th>Molecule</th><th>Atoms</th><th>Bonds</th><th>Formula*</th><th>Data</th></tr>"
        )
        for mol in s.molecules[:500]:
            props = "<br>".join(f"{_e(k)}: {_e(v)}" for k, v in list(mol.properties.items())[:8])
            parts.append(
                f"<tr><td>{_e(mol.name)}</td><td align='right'>{mol.n_atoms}</td>"
                f"<td align='right'>{mol.n_bonds}</td><td>{_e(mol.formula)}</td>"
                f"<td>{props}</td></tr>"
            )
        parts.append("</table>")
        if n > 500:
            parts.append(f"<p>… and {n - 500} more molecules</p>")
        parts.append("<p><small>* explicit atoms only (implicit hydrogens not counted)</small></p>")
        return "".join(parts)
    head = [f"<b>{s.format.upper()}</b>"]
    if s.id:
        head.append(_e(s.id))
    if s.method:
        head.append(_e(s.method))
    if s.resolution:
        head.append(_e(s.resolution))
    parts = [f"<p>{' · '.join(head)}</p>"]
    if s.title:
        parts.append(f"<p>{_e(s.title)}</p>")
    models = f"{s.n_models} models (first shown) · " if s.n_models > 1 else ""
    parts.append(
        f"<p>{models}{len(s.chains)} chain{'s' if len(s.chains) != 1 else ''} · "
        f"{s.n_residues} residues · {s.n_atoms} atoms · {s.n_waters} waters</p>"
    )
    parts.append(
        "<table cellspacing='0' cellpadding='3' border='1'>"
        "<tr><th>Chain</th><th>Residues</th><th>Atoms</th><th>Range</th><th>Sequence</th></tr>"
    )
    for c in s.chains:
        seq = c.sequence if len(c.sequence) <= 80 else c.sequence[:80] + "…"
        parts.append(
            f"<tr><td>{_e(c.chain)}</td><td align='right'>{c.residues}</td>"
            f"<td align='right'>{c.atoms}</td><td>{_e(c.first)}–{_e(c.last)}</td>"
            f"<td><tt>{_e(seq)}</tt></td></tr>"
        )
    parts.append("</table>")
    if s.ligands:
        ligs = ", ".join(f"{_e(k)} × {v}" for k, v in sorted(s.ligands.items()))
        parts.append(f"<p>Ligands and other het groups: {ligs}</p>")
    return "".join(parts)


class QtStructureViewer(QtArtifactViewer):
    def __init__(self, artifact: Artifact, fetch: Fetch | None, parent: QWidget | None = None):
        super().__init__(artifact, fetch, parent)
        self.summary: StructureSummary | MoleculeFile | None = None

    def prepare(self, data: bytes) -> tuple[StructureSummary | MoleculeFile, str]:
        summary = summarize(data, file_label(self.artifact))
        text = data[:MAX_TEXT].decode("utf-8", errors="replace")
        if len(data) > MAX_TEXT:
            text += f"\n… {len(data) - MAX_TEXT:,} more bytes not shown"
        return summary, text

    def present(self, prepared: Any) -> None:
        self.summary, text = prepared
        split = QSplitter(Qt.Orientation.Vertical)
        self.summary_view = QTextBrowser()
        self.summary_view.setOpenLinks(False)
        self.summary_view.setHtml(summary_html(self.summary))
        split.addWidget(self.summary_view)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text.setPlainText(text)
        split.addWidget(self.text)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        self.set_content(split)
