"""Inline HTML that models and task writers put in Markdown (``K<sub>D</sub>``, ``<b>``,
``<br>``): which tags are understood, and how they read as plain text. Qt-free.

The Markdown views (:mod:`gradercal.ui.qt_markdown`) never hand HTML to Qt: they parse
the text with HTML off, then give the tags named here their formatting (subscript,
bold, …) and drop the tags themselves, so a grader sees ``K`` with a subscript ``D``,
never ``<sub>``. Anything else that looks like a tag (``<T>``, ``a < b``, an unknown or
scripted element) stays as the text it is. Plain-text places (the rubric list,
messages) use :func:`to_plain`.
"""

from __future__ import annotations

import re

#: Tags whose content gets a format; tag → format name (see qt_markdown).
FORMATS: dict[str, str] = {
    "sub": "sub",
    "sup": "sup",
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "cite": "italic",
    "dfn": "italic",
    "var": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strike",
    "del": "strike",
    "strike": "strike",
    "code": "code",
    "kbd": "code",
    "tt": "code",
    "samp": "code",
    "mark": "mark",
}
#: Tags dropped, their content kept as it is.
PLAIN = frozenset({"span", "font", "a", "abbr", "q", "small", "big", "nobr", "p", "div", "center"})
#: Tags that stand alone: a line break, or nothing.
BREAKS = frozenset({"br"})
EMPTY = frozenset({"wbr"})

_NAMES = "|".join(sorted({*FORMATS, *PLAIN}, key=len, reverse=True))
_PLAIN_NAMES = "|".join(sorted(PLAIN, key=len, reverse=True))
_ATTRS = r"(?:\s[^<>]*)?"
#: An opening tag, its content (no tags of the same name inside) and the closing tag.
PAIRED = re.compile(rf"<({_NAMES}){_ATTRS}>(.*?)</\1\s*>", re.IGNORECASE | re.DOTALL)
#: A tag standing alone: <br>, <br/>, <wbr>, or a wrapper tag (<p>, <span …>) left
#: unpaired. A lone formatting tag ("the <s> token") is text, and stays.
SINGLE = re.compile(rf"<(?:(br|wbr){_ATTRS}/?|/?(?:{_PLAIN_NAMES}){_ATTRS}/?)>", re.IGNORECASE)

LINE_BREAK = "\u2028"

_SUB = str.maketrans("0123456789+-=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ")
_SUP = str.maketrans(
    "0123456789+-=()abcdefghijklmnoprstuvwxyzABDEGHIJKLMNOPRTUVW",
    "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂ",
)


def _script(text: str, table: dict[int, int], mark: str) -> str:
    """``text`` in Unicode sub- or superscript letters, else ``_D`` / ``^(ab)``."""
    done = text.translate(table)
    if all(ord(ch) in table or ch.isspace() for ch in text) and done != text:
        return done
    return f"{mark}{text}" if len(text) == 1 else f"{mark}({text})"


def to_plain(text: str) -> str:
    """``text`` with the understood tags turned into plain text: ``K<sub>D</sub>`` → ``K_D``,
    ``10<sup>6</sup>`` → ``10⁶``, ``<b>x</b>`` → ``x``, ``<br>`` → a space."""
    if "<" not in text:
        return text

    def paired(m: re.Match[str]) -> str:
        kind = FORMATS.get(m.group(1).lower())
        inner = m.group(2)
        if kind == "sub":
            return _script(inner, _SUB, "_")
        if kind == "sup":
            return _script(inner, _SUP, "^")
        return inner

    previous = None
    while previous != text:  # nested tags: the inner ones on the next round
        previous = text
        text = PAIRED.sub(paired, text)
    return SINGLE.sub(lambda m: " " if (m.group(1) or "").lower() in BREAKS else "", text)


__all__ = ["BREAKS", "EMPTY", "FORMATS", "LINE_BREAK", "PAIRED", "PLAIN", "SINGLE", "to_plain"]
