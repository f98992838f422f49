"""Hostile text in the Markdown package: every user text is shown as text by a CommonMark
renderer (markdown-it-py), whatever field it sits in.

The fields are not hand-picked: every string of a real exported package (calibrated demo,
with its card, guidance, examples and templates) gets a payload of raw HTML (``<img
onerror>``, ``<script>``), Markdown links, images, autolinks, emphasis, code spans, table
pipes and line breaks that would start a heading, all at once, in four variants of the
card that take each branch of the renderer; the rendered HTML may then hold only the elements the package writes itself.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

from gradercal.judge.prompts import PromptTemplate
from gradercal.prompt_package import PromptPackage, to_markdown
from tests.prompt_package.test_prompt_package import _package_json, calibrated_db  # noqa: F401

#: Elements (and their attributes) the renderer writes itself.
_PLAIN = "h1 h2 h3 h4 p ul ol li strong em blockquote pre table thead tbody tr th td hr br"
ALLOWED: dict[str, frozenset[str]] = {
    **{t: frozenset() for t in _PLAIN.split()},
    "code": frozenset({"class"}),
}


def payload(marker: str) -> str:
    return (
        f'<img src=x onerror="alert({marker!r})"> [click](javascript:alert(1)) '
        f"![i](http://evil.example/{marker}.png) <https://evil.example/{marker}> "
        "*em* _em_ `code` | cell | ~~del~~ &lt;b&gt;entity&lt;/b&gt; \\<br> "
        "\n# heading\n<script>alert(2)</script>\r\n\u2028<iframe src=x>"
    )


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.bad: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        allowed = ALLOWED.get(tag)
        if allowed is None:
            self.bad.append(f"<{tag}>")
            return
        for name, value in attrs:
            if name not in allowed or (name == "class" and value != "language-text"):
                self.bad.append(f"<{tag} {name}={value!r}>")


def raw_markup(markdown: str) -> list[str]:
    """What a CommonMark renderer (with tables) turns into markup the package did not write:
    raw HTML tokens, and any element or attribute outside :data:`ALLOWED`."""
    md = MarkdownIt("commonmark").enable("table")
    bad = []

    def walk(tokens: Any) -> None:
        for t in tokens:
            if t.type in ("html_inline", "html_block"):
                bad.append(f"{t.type}: {t.content!r}")
            walk(t.children or [])

    walk(md.parse(markdown))
    tags = _Tags()
    tags.feed(md.render(markdown))
    return bad + tags.bad


def string_leaves(obj: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every string in a JSON value."""
    if isinstance(obj, str):
        yield path
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from string_leaves(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from string_leaves(v, (*path, i))


def append_to_leaf(obj: dict[str, Any], path: tuple[Any, ...], suffix: str) -> None:
    """Append ``suffix`` to the string at ``path`` (appended, not replaced: the templates
    keep their placeholders)."""
    node: Any = obj
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] += suffix


def unchecked_package(obj: dict[str, Any]) -> PromptPackage:
    """The package of a JSON form, without its hash check (the test edits it after export)."""
    p = obj["prompt"]
    return PromptPackage(
        prompt=PromptTemplate(
            system=p["system"], user=p["user"], few_shot=tuple(p["few_shot"]),
            options=p["options"], name=p.get("name"), parent_hash=p.get("parent_hash"),
        ),
        judge=obj["judge"], benchmark=obj.get("benchmark"), guidance=obj["guidance"],
        examples=obj["examples"], example_pool=obj["example_pool"], decision=obj["decision"],
        card=obj["card"], warnings=obj.get("warnings", []), created_at=obj["created_at"],
        format_version=obj["format_version"],
    )  # fmt: skip


def test_renderer_check_sees_raw_html() -> None:
    """The check itself: raw HTML, a link and an image are all caught."""
    assert raw_markup("# x <img src=x onerror=y>")
    assert raw_markup("[a](http://x)")
    assert raw_markup("![a](http://x.png)")
    assert not raw_markup("# x &lt;img&gt; \\[a\\]\\(b\\)\n\n| a |\n|---|\n| b |\n")


def _variants(base: dict[str, Any]) -> list[dict[str, Any]]:
    """The exported package, the same with the alt-test refused and without calibration
    figures, so that every branch of the renderer holds user text."""
    refused = copy.deepcopy(base)
    refused["card"]["alt_test"] = {"refused": "too few experts"}
    refused["card"]["held_out"] = None
    oof = copy.deepcopy(base)
    oof["card"]["held_out"]["kind"] = "out_of_fold"
    legacy = copy.deepcopy(base)
    legacy["card"]["held_out"].pop("kind")
    return [base, refused, oof, legacy]


def test_every_user_text_of_the_markdown_package_renders_as_text(
    calibrated_db: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    base = _package_json(calibrated_db, tmp_path)
    base["warnings"] = ["a warning"]
    assert raw_markup(to_markdown(unchecked_package(base))) == []
    n_fields = 0
    for variant in _variants(base):
        leaves = list(string_leaves(variant))
        n_fields = max(n_fields, len(leaves))
        # every string hostile; then every string but the block kinds, whose value picks
        # the card's branch (a hostile kind takes the out-of-fold branch)
        for keep in ((), ("kind",)):
            everything = copy.deepcopy(variant)
            for i, path in enumerate(leaves):
                if path[-1] not in keep:
                    append_to_leaf(everything, path, payload(f"f{i}"))
            text = to_markdown(unchecked_package(everything))
            assert raw_markup(text) == [], text
            assert "onerror" in text  # the payloads are there, shown as text
    # the package's user texts really are in the test: names, criterion text, notes...
    assert n_fields > 100
    body = json.dumps(base)
    assert "expert-ana" in body and "judge-gpt" in body
