"""Hostile text in the HTML report: every user text of the benchmark — every text column
of every analysis table (ids, grader names, criterion text, tags, models, rationales,
adjudicators, notes), not a hand-picked one — and the benchmark's name carry raw HTML;
the report must show it as text: no element or attribute of it survives parsing."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pandas as pd

from gradercal.dashboard import compute_dashboard
from gradercal.dashboard.report import render_html
from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from tests.conftest import DEMO

#: Columns whose values are a fixed vocabulary the analyses branch on, not user text.
VOCABULARY = {"kind", "grader_kind"}
EVIL = '<img src=x onerror="alert(1)"><script>alert(2)</script><a href="javascript:x">'


def _hostile(value: Any) -> Any:
    if isinstance(value, str):
        return value + EVIL
    if isinstance(value, tuple):
        return tuple(_hostile(v) for v in value)
    return value


def hostile_frames(frames: Frames) -> tuple[Frames, list[str]]:
    """``frames`` with :data:`EVIL` appended to every string of every text column."""
    tables = {}
    touched = []
    for name in ("tasks", "criteria", "responses", "judgments", "adjudications"):
        df: pd.DataFrame = getattr(frames, name).copy()
        for col in df.columns:
            text = df[col].dtype == object and col not in VOCABULARY
            if text and df[col].map(lambda v: isinstance(v, str | tuple)).any():
                df[col] = df[col].map(_hostile).astype(object)
                touched.append(f"{name}.{col}")
        tables[name] = df
    out = Frames(
        frames.pass_threshold,
        tables["tasks"],
        tables["criteria"],
        tables["responses"],
        tables["judgments"],
        tables["adjudications"],
    )
    return out, touched


class _Markup(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.bad: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "a", "iframe"):
            self.bad.append(tag)
        for name, value in attrs:
            if name.startswith("on") or (value or "").startswith("javascript:"):
                self.bad.append(f"{tag} {name}")
            if tag == "img" and not (value or "").startswith("data:") and name == "src":
                self.bad.append(f"img src={value!r}")


def test_every_text_column_and_the_benchmark_name_render_as_text() -> None:
    frames, touched = hostile_frames(frames_from_data(read_path(DEMO)))
    for col in ("judgments.grader", "criteria.text", "criteria.tags", "tasks.task_id"):
        assert col in touched
    d = compute_dashboard(frames, n_boot=0, benchmark="demo" + EVIL)
    html = render_html(d)
    p = _Markup()
    p.feed(html)
    assert p.bad == []
    assert "&lt;img src=x onerror=" in html
