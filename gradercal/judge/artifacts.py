"""Artifact context for the judge: a task's files as text, cut to a token budget.

The caller passes the bytes (the database stores them); this module never reads files
or the network. PDFs become their text (PyMuPDF), tables their first rows (pandas),
text-like files (sequences, structures, plain text) their beginning; images and links
are named but not sent (a judge that sees figures is sent images and PDF pages as image
parts, :mod:`gradercal.judge.vision`, and their sections say so). Tokens are estimated
as characters / 4, the usual rule of thumb for English text with BPE tokenizers; the
budget is shared evenly between the task's artifacts (what one does not use goes to the
next).
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: Characters per token of the estimate.
CHARS_PER_TOKEN = 4
#: Rows of a table shown to the judge (before the budget cuts them).
TABLE_HEAD_ROWS = 20
_CUT = "\n[… cut to fit the token budget]"


@dataclass(frozen=True)
class ArtifactInput:
    """One artifact as the judge sees it.

    Attributes:
        kind: The artifact kind (``pdf``, ``table``, ``image``, ``url``, ``text``, …).
        title: Its title.
        name: Original file name (its suffix picks the table reader).
        media_type: MIME type, if known.
        url: For links.
        data: The file's bytes (None for links or when not stored).
    """

    kind: str
    title: str
    name: str | None = None
    media_type: str | None = None
    url: str | None = None
    data: bytes | None = None


def estimate_tokens(text: str) -> int:
    """Approximate token count of ``text`` (characters / 4, rounded up)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def cut_to_tokens(text: str, tokens: int) -> str:
    """``text`` shortened to about ``tokens`` tokens, marked when cut."""
    limit = max(tokens, 0) * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text
    keep = max(limit - len(_CUT), 0)
    return text[:keep].rstrip() + _CUT


def artifact_context(
    artifacts: Sequence[ArtifactInput],
    budget_tokens: int,
    attached: Mapping[int, str] | None = None,
) -> str:
    """The text block describing ``artifacts`` for the judge, within ``budget_tokens``.

    Args:
        artifacts: The task's artifacts in order.
        budget_tokens: Token budget for the whole block; 0 gives an empty string.
        attached: Artifact position → what of it is attached as images (e.g. ``pages
            1–2 of 3 attached as images 1–2 of 3``), said in its header; an attached
            image is no longer "not shown".

    Returns:
        One section per artifact (``### title (kind)`` then its content), or ``""``.
    """
    if budget_tokens <= 0 or not artifacts:
        return ""
    remaining = budget_tokens
    parts: list[str] = []
    for i, art in enumerate(artifacts):
        share = remaining // (len(artifacts) - i)
        note = (attached or {}).get(i)
        header = f"### {art.title} ({art.kind})" + (f" [{note}]" if note else "")
        body_budget = max(share - estimate_tokens(header) - 1, 0)
        # one character over the limit, so that a longer text is cut visibly
        text = artifact_text(art, body_budget * CHARS_PER_TOKEN + 1, attached=note is not None)
        section = f"{header}\n{cut_to_tokens(text, body_budget)}"
        remaining -= min(estimate_tokens(section), remaining)
        parts.append(section)
    return "\n\n".join(parts)


def artifact_text(art: ArtifactInput, max_chars: int, *, attached: bool = False) -> str:
    """The text of one artifact (about ``max_chars`` long at most, before the cut mark);
    ``attached``: the judge is sent it as an image too."""
    kind = art.kind
    if kind == "url" or (art.data is None and art.url):
        return f"[link, not opened: {art.url}]"
    if art.data is None:
        return "[file not stored in the database]"
    try:
        if kind == "pdf" or (art.media_type or "").endswith("pdf"):
            return _pdf_text(art.data, max_chars)
        if kind == "table":
            return _table_head(art.data, art.name or "", max_chars)
        if kind == "image":
            shown = "attached below" if attached else "not shown to the judge"
            return f"[image {art.name or art.title}: {shown}]"
    except Exception as exc:  # a corrupt file must not stop the run
        return f"[could not read {art.name or art.title}: {type(exc).__name__}]"
    return art.data[: max_chars * 4 + 16].decode("utf-8", errors="replace")[:max_chars]


def _pdf_text(data: bytes, max_chars: int) -> str:
    from gradercal._util.pdf import import_pymupdf

    pymupdf = import_pymupdf()

    out: list[str] = []
    size = 0
    with pymupdf.open(stream=data, filetype="pdf") as doc:
        for page in doc:
            text = page.get_text()
            out.append(text)
            size += len(text)
            if size >= max_chars:
                break
    return "".join(out).strip()[:max_chars]


def _table_head(data: bytes, name: str, max_chars: int) -> str:
    import pandas as pd

    lower = name.lower()
    buf = io.BytesIO(data)
    if lower.endswith((".xlsx", ".xls")):
        frame = pd.read_excel(buf, nrows=TABLE_HEAD_ROWS)
    elif lower.endswith(".parquet"):
        frame = pd.read_parquet(buf).head(TABLE_HEAD_ROWS)
    else:
        sep = "\t" if lower.endswith(".tsv") else ","
        frame = pd.read_csv(buf, sep=sep, nrows=TABLE_HEAD_ROWS)
    text = frame.to_csv(index=False)
    return text[:max_chars].rstrip()
