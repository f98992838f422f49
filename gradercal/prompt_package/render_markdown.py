"""The package as a Markdown document, for people (:func:`to_markdown`).

The agreement card with its figure tables, the decision rule, the guidance, the
few-shot examples, the templates and, when the judge has one, its alignment certificate
(``gradercal judge align``: prompt versions compared on held-out tasks). Every text the
package did not write itself goes through :func:`_md` (or :func:`_code`).
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

from gradercal._util.numbers import cell
from gradercal.model import verdict_word
from gradercal.prompt_package.package import PromptPackage

__all__ = ["to_markdown"]


def _num(x: Any, digits: int = 3) -> str:
    if x is None or isinstance(x, bool | int | float):
        return cell(x, digits)
    return _md(x)


def _with_ci(fig: Mapping[str, Any] | None) -> str:
    if not fig or fig.get("value") is None:
        return "—"
    out = _num(fig["value"])
    if fig.get("ci"):
        lo, hi = fig["ci"]
        out += f" [{_num(lo)}, {_num(hi)}]"
    return out


_LABELS = {
    "cohen_kappa": "Cohen's kappa",
    "percent_agreement": "agreement",
    "balanced_f1": "balanced F1",
    "leniency_bias": "leniency bias",
    "mean_score_bias": "mean score bias",
    "mae": "mean absolute error",
    "pass_kappa": "pass/fail kappa",
    "pass_agreement": "pass/fail agreement",
    "pass_rate_bias": "pass-rate bias",
}


#: Markdown's inline punctuation: code spans, emphasis, links and images, table cells.
_MD_PUNCTUATION = re.compile(r"([\\`*_\[\]|~!])")


def _md(value: Any) -> str:
    """Any text the package did not write itself (names, titles, criterion text, notes,
    tags, ids, figures read from the package), safe inline in Markdown and shown as
    written by a CommonMark renderer: HTML is shown as text (``<``, ``>`` and ``&``
    escaped as entities; Markdown renderers pass raw HTML through), Markdown's inline
    punctuation (code spans, emphasis, links, images, table cells) is backslash-escaped,
    and line breaks become spaces (they would end the list item, heading or table row)."""
    text = html.escape(str(value), quote=False)
    text = _MD_PUNCTUATION.sub(r"\\\1", text)
    return re.sub(r"[\r\n\u2028\u2029\x0b\x0c]", " ", text)


def _code(value: Any) -> str:
    """``value`` as an inline code span (its backticks cannot close it; line breaks become
    spaces). Code spans show their content literally: no HTML, no Markdown."""
    text = re.sub(r"[\r\n\u2028\u2029\x0b\x0c]", " ", str(value))
    ticks = "`"
    while ticks in text:
        ticks += "`"
    return f"{ticks} {text} {ticks}"


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}text\n{text}\n{ticks}"


def _figure_table(block: Mapping[str, Any]) -> list[str]:
    out = [
        f"{_md(block.get('n_tasks'))} tasks, {_md(block.get('n_items') or '—')} criterion "
        f"verdicts, {_md(block.get('n_responses'))} responses. 95% CIs, task-clustered "
        "bootstrap.",
        "",
        "| figure | raw judge | calibrated |",
        "|---|---|---|",
    ]
    for level in ("criterion", "response"):
        raw = block[level]["raw"]
        cal = block[level]["calibrated"]
        for k in raw:
            out.append(f"| {_label(k)} | {_with_ci(raw[k])} | {_with_ci(cal.get(k))} |")
    out.append("")
    return out


def _card_markdown(package: PromptPackage) -> list[str]:
    card = package.card
    out = ["## Agreement card", ""]
    out.append(f"- **Prompt version**: {_code(package.prompt_version)}")
    out.append(f"- **Derived from**: {_code(card.get('base_prompt_version'))}")
    j = package.judge
    out.append(f"- **Judge**: {_md(j.get('name'))} (model {_md(j.get('model') or '—')})")
    out.append(f"- **Experts**: {_md(', '.join(card.get('experts') or []) or '—')}")
    prov = card.get("provenance") or {}
    counts = prov.get("counts") or {}
    if counts:
        out.append(
            "- **Data**: "
            + ", ".join(f"{_md(v)} {_md(str(k).replace('_', ' '))}" for k, v in counts.items())
        )
    dates = prov.get("date_range")
    if dates:
        out.append(f"- **Judgments dated**: {_md(dates[0])} to {_md(dates[1])}")
    out.append(f"- **Decision rule**: {_md(package.decision.get('description'))}")
    out.append("")
    held = card.get("held_out")
    if held:
        kind = held.get("kind")  # absent in packages exported before held-out splits
        split = held.get("split") or {}
        if kind == "held_out_tasks":
            out += [
                f"### Held-out agreement with the experts ({_md(held['source'])})",
                "",
                f"{_md(held['scheme'])}.",
                "",
                f"Held-out tasks: {_md(', '.join(split.get('held_out_tasks') or []) or '—')}.",
                "",
            ]
        elif kind is None:
            out += [f"### Held-out agreement with the experts ({_md(held['source'])})", ""]
            out += [f"{_md(held.get('scheme'))}.", ""]
        else:
            out += [
                f"### Out-of-fold agreement with the experts ({_md(held['source'])}; "
                "no task held out)",
                "",
                f"{_md(held['scheme'])}. **No task was held out**: the few-shot examples and the "
                "adjudication notes of this package may come from the same tasks as these "
                "figures, so they may overstate its agreement. Run `gradercal calibrate "
                "--holdout 0.25` and export again for figures on tasks nothing has seen.",
                "",
            ]
        out += _figure_table(held)
        oof = held.get("out_of_fold")
        if oof:
            out += [
                f"For reference, out of fold on the {_md(split.get('n_calibration_tasks'))} "
                f"calibration tasks ({_md(oof['scheme'])}):",
                "",
                *_figure_table(oof),
            ]
    else:
        out += ["### Held-out agreement", "", "**No calibration**: no held-out figures.", ""]
    alld = card.get("all_data")
    if alld:
        out += [
            f"### Judge vs {_md(alld['reference'])} (all data, in-sample)",
            "",
            f"{_md(alld['n_units'])} units on {_md(alld['n_tasks'])} tasks.",
            "",
            "| figure | judge |",
            "|---|---|",
        ]
        out += [f"| {_label(k)} | {_with_ci(v)} |" for k, v in alld["metrics"].items()]
        out.append("")
    rng = card.get("expert_range") or {}
    if rng:
        out += [
            "### Expert–expert range (each expert vs the others' consensus)",
            "",
            "| figure | experts (min – max) | judge (mean, same comparisons) | within |",
            "|---|---|---|---|",
        ]
        for k, v in rng.items():
            e = v.get("experts")
            span = "—" if not e else f"{_num(e[0])} – {_num(e[1])}"
            out.append(
                f"| {_label(k)} | {span} | {_num(v.get('judge'))} | {_num(v.get('within'))} |"
            )
        out.append("")
    alt = card.get("alt_test") or {}
    out += ["### Alternative annotator test", ""]
    if "refused" in alt:
        out.append(f"Not run: {_md(alt['refused'])}")
    else:
        verdict = "**passed**" if alt.get("passed") else "**not passed**"
        out.append(
            f"{verdict}: winning rate {_num(alt.get('winning_rate'))} over "
            f"{_md(alt.get('n_tested', alt.get('n_humans')))} tested of "
            f"{_md(alt.get('n_humans'))} experts, advantage probability "
            f"{_num(alt.get('advantage_probability'))} (ε = {_md(alt.get('epsilon'))}, "
            f"{_md(alt.get('n_items'))} items, {_md(alt.get('test', 'exact score'))} test)."
        )
        out += [f"- {_md(w)}" for w in alt.get("warnings") or []]
    out.append("")
    len_ = card.get("leniency") or {}
    where = "out of fold" if (held or {}).get("kind") == "out_of_fold" else "held out"
    out += [
        "### Leniency (judge met rate − experts' met rate)",
        "",
        f"{where}, raw: {_with_ci(len_.get('held_out_raw'))}; {where}, calibrated: "
        f"{_with_ci(len_.get('held_out_calibrated'))}; all data: {_with_ci(len_.get('all_data'))}",
        "",
    ]
    return out


def to_markdown(package: PromptPackage) -> str:
    """A readable document: card, decision rule, guidance, examples, templates."""
    p = package.prompt
    out = [
        f"# Calibrated judge prompt: {_md(p.name or 'unnamed')}",
        "",
        f"Benchmark: {_md(package.benchmark or '—')} · exported {_md(package.created_at)} · "
        f"package format {_md(package.format_version)} · prompt version "
        f"{_code(package.prompt_version)}",
        "",
    ]
    if package.warnings:
        out += ["> **Warnings**", ">"] + [f"> - {_md(w)}" for w in package.warnings] + [""]
    out += _card_markdown(package)
    out += ["## Rubric guidance", ""]
    g = package.guidance
    if g.get("general"):
        out += ["**In general**", ""] + [f"- {_md(x)}" for x in g["general"]] + [""]
    for t in g.get("tags", []):
        line = (
            f"- **{_md(t['tag'])}**: {_md(t['n_adjudicated'])} adjudicated, judge overruled on "
            f"'met' {_md(t['judge_overruled_met'])}×, on 'not met' "
            f"{_md(t['judge_overruled_not_met'])}×"
        )
        out.append(line + ("".join(f" — {_md(r)}" for r in t["rules"])))
    if g.get("tags"):
        out.append("")
    for c in g.get("criteria", []):
        out.append(
            f"**{_md(c['task_id'])}/{_md(c['criterion_id'])}** — {_md(c['criterion'])} "
            f"({_md(c['n_unclear'])} unclear flag(s), {_md(c['n_adjudication_notes'])} "
            "adjudication note(s))"
        )
        out.append("")
        for n in c["notes"]:
            out.append(
                f"- {_md(n['text'])} — {_md(n['count'])}× by {_md(', '.join(n['authors']))} "
                f"({_md(', '.join(n['sources']))})"
            )
        out.append("")
    if not (g.get("general") or g.get("tags") or g.get("criteria")):
        out += ["No notes from the experts yet.", ""]
    out += ["## Few-shot examples", ""]
    if not package.examples:
        out += ["None.", ""]
    for i, (ex, shot) in enumerate(zip(package.examples, p.few_shot, strict=False), 1):
        verdict = verdict_word(bool(ex["criteria_met"]))
        out.append(
            f"{i}. **{_md(ex['task_id'])}/{_md(ex['criterion_id'])}** on response "
            f"{_md(ex['response_id'])}: **{verdict}** (judge said "
            f"{_verdict_word(ex.get('judge_met'))}; tags {_md(', '.join(ex['tags']) or '—')}) "
            f"— {_md(shot.get('explanation', ''))}"
        )
    out.append("")
    out += _certificate_markdown(package)
    out += ["## System template", "", _fence(p.system), "", "## User template", ""]
    out += [_fence(p.user), ""]
    vision = p.vision
    if vision is not None:
        out += [
            "## Figures",
            "",
            "The judge also sees each task's figures, sent as images after the user message: "
            f"PNG/JPEG artifacts and PDF pages rendered at {_md(vision.dpi)} dpi, at most "
            f"{_md(vision.max_pages)} PDF pages and {_md(vision.max_images)} images per task. The "
            "exported Inspect AI and promptfoo judges send text only, so they refuse this "
            "prompt version.",
            "",
        ]
    return "\n".join(out)


def _interval(ci: Any) -> str:
    if not isinstance(ci, list | tuple) or len(ci) != 2:
        return "—"
    return f"[{_num(ci[0])}, {_num(ci[1])}]"


def _certificate_markdown(package: PromptPackage) -> list[str]:
    """The judge's alignment certificate (``gradercal judge align``), every text escaped."""
    row = package.certificate
    if row is None:
        return []
    cert = row.get("certificate") or {}
    split = cert.get("split") or {}
    base = (cert.get("baseline") or {}).get("prompt_version")
    chosen = (cert.get("chosen") or {}).get("prompt_version")
    cands = list(cert.get("candidates") or [])
    n_held = sum(1 for c in cands if c.get("evaluated_on_held_out"))
    out = [
        "## Alignment certificate",
        "",
        f"Certificate {_md(row.get('id'))} of judge {_md(row.get('judge'))}, "
        f"{_md(row.get('created_at'))} (`gradercal judge align`). It compares the judge's "
        "prompt versions on held-out tasks; it is a record, not part of this package's "
        "prompt (whose version is above).",
        "",
        f"- **Split**: {_md(len(split.get('development') or []))} development and "
        f"{_md(len(split.get('held_out') or []))} held-out tasks (seed {_md(split.get('seed'))}); "
        f"held out: {_md(', '.join(str(t) for t in split.get('held_out') or []) or '—')}",
        f"- **Baseline**: {_code(base)}",
        f"- **Chosen**: {_code(chosen)} — "
        + (
            "**proven better** on the held-out tasks"
            if cert.get("proven_better")
            else "no candidate proven better; the baseline is kept"
        ),
        f"- **Candidates**: {_md(len(cands))}, {_md(n_held)} evaluated on the held-out tasks "
        "(the correction covers all of them)",
    ]
    cost = cert.get("cost") or {}
    out.append(
        f"- **Cost**: {_md(cost.get('requests'))} requests, "
        f"{_md(cost.get('prompt_tokens'))} + {_md(cost.get('completion_tokens'))} tokens, "
        f"USD {_num(cost.get('usd'), 4)}"
    )
    if cert.get("note"):
        out.append(f"- **Note**: {_md(cert['note'])}")
    out += [
        "",
        "| prompt version | role | kappa | balanced accuracy | Δ kappa | 95% CI | corrected CI "
        "| proven better | alt-test |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    alt = cert.get("alt_test") or {}
    for version, h in (cert.get("heldout") or {}).items():
        k = ((h.get("paired") or {}).get("kappa")) or {}
        a = alt.get(version) or {}
        passed = a.get("passed")
        out.append(
            f"| {_code(str(version)[:12])} | {_md(h.get('role'))} | {_num(h.get('kappa'))} "
            f"| {_num(h.get('balanced_accuracy'))} | {_num(k.get('estimate'))} "
            f"| {_interval(k.get('ci'))} | {_interval(k.get('ci_corrected'))} "
            f"| {_num(h.get('proven_better')) if 'proven_better' in h else '—'} "
            f"| {'refused' if passed is None else _num(bool(passed))} |"
        )
    out.append("")
    return out


def _label(key: Any) -> str:
    return _LABELS.get(key) or _md(key)


def _verdict_word(v: Any) -> str:
    return verdict_word(None if v is None else bool(v))
