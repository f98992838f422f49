"""A judge that sees figures: a task's images and PDF pages as image parts of the request.

With the prompt option ``vision`` (:class:`VisionSettings`: ``dpi``, ``max_pages``,
``max_images``), every request about a task carries, after its user message text, the
task's figures as chat-completions image parts (``{"type": "image_url", "image_url":
{"url": "data:image/png;base64,…"}}``), each preceded by a short text part naming it:

* **PNG and JPEG artifacts** as they are stored (their media type from their first
  bytes, not their name); other raster formats PyMuPDF reads (GIF, TIFF, BMP, …) as PNG;
  at most ``max_images`` per task, in artifact order;
* **PDF pages** rendered by PyMuPDF at ``dpi`` (lower for a page that would exceed
  :data:`MAX_SIDE` pixels), at most ``max_pages`` per task counted across its PDFs, in
  artifact then page order. The PDF's text still goes into ``{{artifacts}}`` as without
  vision.

An image artifact larger than :data:`MAX_SIDE` pixels on a side is scaled down to fit,
as the API would do on its side. What was sent and what was left out (over the budget,
unreadable) is recorded in each verdict's provenance (:meth:`ImageSet.provenance`).
Without the option nothing changes: messages stay plain text, byte for byte.

The caller passes the bytes (the database stores them); this module reads no file and
no network. PyMuPDF is imported when a figure is first prepared.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gradercal.errors import Problem
from gradercal.judge.artifacts import ArtifactInput

#: Pixels of the longer side above which a figure is scaled down (PDF pages are rendered
#: at a lower dpi instead); OpenAI's chat models fit every image into 2048 × 2048.
MAX_SIDE = 2048
#: Figures larger than this many bytes once prepared are not sent (OpenAI's limit per image).
MAX_IMAGE_BYTES = 20 * 1024 * 1024
#: The accepted range of ``dpi``.
DPI_RANGE = (36, 600)
#: The accepted range of ``max_pages`` and ``max_images``.
COUNT_RANGE = (0, 100)
_PNG = b"\x89PNG\r\n\x1a\n"
_JPEG = b"\xff\xd8\xff"


@dataclass(frozen=True)
class VisionSettings:
    """How a task's figures are sent (the prompt option ``vision``).

    Attributes:
        dpi: Resolution of rendered PDF pages.
        max_pages: PDF pages sent per task, across all its PDFs (the page budget).
        max_images: Image artifacts sent per task.
    """

    dpi: int = 100
    max_pages: int = 4
    max_images: int = 4

    def to_dict(self) -> dict[str, int]:
        return {"dpi": self.dpi, "max_pages": self.max_pages, "max_images": self.max_images}


#: The settings of ``vision`` keys a prompt leaves out.
DEFAULT_VISION = VisionSettings()


def vision_problems(where: str, value: Any) -> list[Problem]:
    """What is wrong with the value of the prompt option ``vision`` (empty: nothing)."""
    field_ = "options.vision"
    if not isinstance(value, Mapping):
        return [Problem(where, None, field_, "must be an object (dpi, max_pages, max_images)")]
    problems = []
    unknown = set(value) - set(DEFAULT_VISION.to_dict())
    if unknown:
        problems.append(Problem(where, None, field_, f"unknown key(s) {sorted(unknown)}"))
    for key, (lo, hi) in (("dpi", DPI_RANGE), ("max_pages", COUNT_RANGE),
                          ("max_images", COUNT_RANGE)):  # fmt: skip
        if key not in value:
            continue
        x = value[key]
        if not isinstance(x, int) or isinstance(x, bool) or not lo <= x <= hi:
            problems.append(
                Problem(where, None, f"{field_}.{key}", f"must be an integer {lo}–{hi}")
            )
    return problems


def vision_settings(value: Mapping[str, Any]) -> VisionSettings:
    """The settings of a (valid, see :func:`vision_problems`) ``vision`` option, with the
    defaults of :data:`DEFAULT_VISION` for the keys it leaves out."""
    return VisionSettings(**{**DEFAULT_VISION.to_dict(), **{k: int(v) for k, v in value.items()}})


@dataclass(frozen=True)
class ImagePart:
    """One figure sent to the judge.

    Attributes:
        artifact: Position of its artifact among the task's artifacts.
        title: The artifact's title.
        name: The artifact's file name.
        media_type: ``image/png`` or ``image/jpeg``.
        data: The image bytes sent.
        width: Width in pixels.
        height: Height in pixels.
        page: 1-based page number, for a PDF page.
        pages: Pages of that PDF, for a PDF page.
        dpi: Resolution the page was rendered at, for a PDF page.
        scaled_from: ``(width, height)`` of an image artifact scaled down to fit.
    """

    artifact: int
    title: str
    name: str | None
    media_type: str
    data: bytes = field(repr=False)
    width: int
    height: int
    page: int | None = None
    pages: int | None = None
    dpi: int | None = None
    scaled_from: tuple[int, int] | None = None

    @functools.cached_property
    def data_url(self) -> str:
        """The image as a ``data:`` URL (computed once, shared by every request)."""
        return f"data:{self.media_type};base64,{base64.b64encode(self.data).decode('ascii')}"

    def label(self, number: int, total: int) -> str:
        """The text part that precedes the image in the request."""
        what = (
            self.title
            if not self.name or self.name == self.title
            else f"{self.title} ({self.name})"
        )
        if self.page is not None:
            what += f", page {self.page} of {self.pages}, rendered at {self.dpi} dpi"
        return f"[Attachment image {number} of {total}: {what}]"

    def provenance(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "artifact": self.title,
            "name": self.name,
            "media_type": self.media_type,
            "width": self.width,
            "height": self.height,
            "bytes": len(self.data),
            "sha256": hashlib.sha256(self.data).hexdigest(),
        }
        if self.page is not None:
            out.update(page=self.page, pages=self.pages, dpi=self.dpi)
        if self.scaled_from is not None:
            out["scaled_from"] = list(self.scaled_from)
        return out


@dataclass(frozen=True)
class Withheld:
    """A figure (or PDF pages) of the task that was not sent, and why."""

    artifact: int
    title: str
    name: str | None
    reason: str
    pages: tuple[int, ...] = ()

    def provenance(self) -> dict[str, Any]:
        out: dict[str, Any] = {"artifact": self.title, "name": self.name, "reason": self.reason}
        if self.pages:
            out["pages"] = list(self.pages)
        return out


@dataclass(frozen=True)
class ImageSet:
    """The figures of one task under one prompt's :class:`VisionSettings`."""

    settings: VisionSettings
    images: tuple[ImagePart, ...] = ()
    withheld: tuple[Withheld, ...] = ()

    def provenance(self) -> dict[str, Any]:
        """What a verdict records: the settings, every figure sent (no bytes: size and
        sha256) and every one left out with the reason."""
        return {
            **self.settings.to_dict(),
            "images": [x.provenance() for x in self.images],
            "withheld": [x.provenance() for x in self.withheld],
        }

    def notes(self) -> dict[int, str]:
        """Artifact position → what its ``{{artifacts}}`` section says was attached."""
        total = len(self.images)
        shown: dict[int, list[tuple[int, ImagePart]]] = {}
        for number, img in enumerate(self.images, start=1):
            shown.setdefault(img.artifact, []).append((number, img))
        out = {}
        for artifact, entries in shown.items():
            numbers = [n for n, _ in entries]
            span = _span(numbers)
            first = entries[0][1]
            if first.page is None:
                out[artifact] = f"attached as image {span} of {total}"
            else:
                pages = _span([img.page or 0 for _, img in entries])
                word = "page" if len(entries) == 1 else "pages"
                out[artifact] = (
                    f"{word} {pages} of {first.pages} attached as image"
                    f"{'' if len(entries) == 1 else 's'} {span} of {total}"
                )
        return out

    def estimated_tokens(self) -> int:
        """Prompt tokens of the figures (:func:`image_tokens`) and of their labels."""
        from gradercal.judge.artifacts import estimate_tokens

        total = len(self.images)
        return sum(
            image_tokens(img.width, img.height) + estimate_tokens(img.label(i, total))
            for i, img in enumerate(self.images, start=1)
        )


def _span(numbers: Sequence[int]) -> str:
    if len(numbers) > 1 and list(numbers) == list(range(numbers[0], numbers[-1] + 1)):
        return f"{numbers[0]}–{numbers[-1]}"
    return ", ".join(str(n) for n in numbers)


def image_tokens(width: int, height: int) -> int:
    """Prompt tokens of one image at high detail, by OpenAI's published rule: scaled to
    fit 2048 × 2048, then its shorter side to 768 at most; 170 tokens per 512-pixel tile
    plus 85. An estimate for other providers."""
    if width <= 0 or height <= 0:
        return 0
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        w, h = w * 2048 / max(w, h), h * 2048 / max(w, h)
    if min(w, h) > 768:
        w, h = w * 768 / min(w, h), h * 768 / min(w, h)
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def is_pdf(art: ArtifactInput) -> bool:
    return art.kind == "pdf" or (art.media_type or "").endswith("pdf")


def is_image(art: ArtifactInput) -> bool:
    return art.kind == "image"


def image_media_type(data: bytes) -> str | None:
    """``image/png`` or ``image/jpeg`` from the first bytes; None for anything else."""
    if data.startswith(_PNG):
        return "image/png"
    if data.startswith(_JPEG):
        return "image/jpeg"
    return None


def task_images(artifacts: Sequence[ArtifactInput], settings: VisionSettings) -> ImageSet:
    """The figures of a task's ``artifacts`` (in order) sent under ``settings``.

    A PDF or image that cannot be read is withheld (``unreadable: …``), never an error:
    a corrupt file must not stop the run.
    """
    images: list[ImagePart] = []
    withheld: list[Withheld] = []
    pages_left, images_left = settings.max_pages, settings.max_images
    for i, art in enumerate(artifacts):
        name = art.name
        if art.data is None:
            if is_pdf(art) or is_image(art):
                withheld.append(Withheld(i, art.title, name, "file not stored in the database"))
            continue
        try:
            if is_pdf(art):
                sent, rest = _pdf_pages(i, art, settings.dpi, pages_left)
                pages_left -= len(sent)
                images.extend(sent)
                if rest:
                    withheld.append(Withheld(i, art.title, name, "page budget", rest))
            elif is_image(art):
                if images_left <= 0:
                    withheld.append(Withheld(i, art.title, name, "image budget"))
                    continue
                images.append(_image(i, art))
                images_left -= 1
        except _TooLarge as exc:
            withheld.append(Withheld(i, art.title, name, str(exc)))
        except Exception as exc:  # a corrupt file must not stop the run
            withheld.append(Withheld(i, art.title, name, f"unreadable: {type(exc).__name__}"))
    return ImageSet(settings, tuple(images), tuple(withheld))


class _TooLarge(Exception):
    pass


def _checked(data: bytes) -> bytes:
    if len(data) > MAX_IMAGE_BYTES:
        raise _TooLarge(f"larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MB")
    return data


def _pymupdf() -> Any:
    """PyMuPDF, imported on first use without its unused add-ons (its pixmap calls are
    untyped)."""
    from gradercal._util.pdf import import_pymupdf

    return import_pymupdf()


def _pdf_pages(
    index: int, art: ArtifactInput, dpi: int, budget: int
) -> tuple[list[ImagePart], tuple[int, ...]]:
    """(pages sent, numbers of the pages withheld) of one PDF, ``budget`` pages at most."""
    pymupdf = _pymupdf()
    assert art.data is not None
    sent: list[ImagePart] = []
    with pymupdf.open(stream=art.data, filetype="pdf") as doc:
        count = int(doc.page_count)
        for number in range(min(budget, count)):
            page = doc[number]
            longest = max(float(page.rect.width), float(page.rect.height), 1.0)
            page_dpi = max(min(dpi, math.floor(MAX_SIDE * 72 / longest)), 1)
            pix = page.get_pixmap(dpi=page_dpi, alpha=False)
            data = _checked(pix.tobytes("png"))
            sent.append(
                ImagePart(
                    artifact=index,
                    title=art.title,
                    name=art.name,
                    media_type="image/png",
                    data=data,
                    width=int(pix.width),
                    height=int(pix.height),
                    page=number + 1,
                    pages=count,
                    dpi=page_dpi,
                )
            )
    return sent, tuple(range(len(sent) + 1, count + 1))


def _image(index: int, art: ArtifactInput) -> ImagePart:
    """An image artifact as sent: PNG/JPEG as stored, others as PNG, scaled to fit."""
    pymupdf = _pymupdf()
    assert art.data is not None
    data = art.data
    media_type = image_media_type(data)
    pix = pymupdf.Pixmap(data)
    width, height = int(pix.width), int(pix.height)
    scaled_from = None
    if max(width, height) > MAX_SIDE or media_type is None:
        if pix.alpha:
            pix = pymupdf.Pixmap(pix, 0)  # drop the alpha channel
        if pix.colorspace is None or pix.colorspace.n not in (1, 3):
            pix = pymupdf.Pixmap(pymupdf.csRGB, pix)
        if max(width, height) > MAX_SIDE:
            scale = MAX_SIDE / max(width, height)
            new_w, new_h = max(round(width * scale), 1), max(round(height * scale), 1)
            pix = pymupdf.Pixmap(pix, new_w, new_h, None)
            scaled_from = (width, height)
        data, media_type = pix.tobytes("png"), "image/png"
    return ImagePart(
        artifact=index,
        title=art.title,
        name=art.name,
        media_type=media_type,
        data=_checked(data),
        width=int(pix.width),
        height=int(pix.height),
        scaled_from=scaled_from,
    )


def with_images(
    messages: Sequence[Mapping[str, Any]], images: Sequence[ImagePart]
) -> list[dict[str, Any]]:
    """``messages`` with ``images`` added to the last (user) message as image parts.

    The last message's text becomes its first ``text`` part; each image follows as a
    ``text`` part naming it (:meth:`ImagePart.label`) and an ``image_url`` part with its
    ``data:`` URL. Without images the messages are returned as they are.
    """
    out = [dict(m) for m in messages]
    if not images or not out:
        return out
    last = out[-1]
    parts: list[dict[str, Any]] = [{"type": "text", "text": str(last["content"])}]
    total = len(images)
    for number, img in enumerate(images, start=1):
        parts.append({"type": "text", "text": img.label(number, total)})
        parts.append({"type": "image_url", "image_url": {"url": img.data_url}})
    last["content"] = parts
    return out
