"""HealthBench meta-evaluation JSONL: physicians' labels of completions, one criterion a line.

HealthBench's meta-evaluation (how well a grader agrees with physicians) ships one line
per (completion, rubric criterion)::

    {"prompt_id", "prompt": [{"role", "content"}, …], "completion_id", "completion",
     "rubric": "criterion text", "category": "…", "binary_labels": [true, false, …],
     "anonymized_physician_ids": ["…", …]}

Some distributed copies hold ``prompt``, ``binary_labels`` and
``anonymized_physician_ids`` as stringified Python literals (``"[True, False]"``,
``"[{'role': 'user', …}]"``); those are read with :func:`ast.literal_eval` (literals
only, never code). Imported as

* one **task** per ``prompt_id`` (the conversation as its prompt), whose criteria are
  the distinct rubric texts of its lines (ids ``c1``, ``c2`` … in order of first
  appearance, 1 point each: the meta-evaluation has no points; the line's ``category``
  as the criterion's tag ``category:<name>``);
* one **response** per ``completion_id`` (model ``completion``);
* one **human judgment** per physician label: grader ``physician:<id>``, ``met`` the
  label.

Every bad line is reported as ``file:line: field: message``; nothing is half-read.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from gradercal.errors import Problem, ValidationError
from gradercal.formats._lines import Recognised, first_record, read_jsonl
from gradercal.formats.healthbench import render_conversation
from gradercal.model import (
    Benchmark,
    BenchmarkData,
    Criterion,
    GraderKind,
    Judgment,
    Response,
    Task,
)

__all__ = ["CATEGORY_TAG", "FORMAT_NAME", "PHYSICIAN", "read_healthbench_meta", "recognise"]

FORMAT_NAME = "healthbench-meta"
#: Prefix of the graders made from physician ids.
PHYSICIAN = "physician:"
#: Prefix of the criterion tag holding the line's ``category``.
CATEGORY_TAG = "category:"
#: The keys that make a line a meta-evaluation line.
_KEYS = ("binary_labels", "anonymized_physician_ids", "rubric", "completion")


def recognise(path: Path) -> Recognised | None:
    """A ``.jsonl`` file whose first record has physicians' ``binary_labels`` for a
    ``rubric`` criterion of a ``completion``; its benchmark is named after the file."""
    if not (path.is_file() and path.suffix == ".jsonl"):
        return None
    first = first_record(path)
    if first is None or not all(k in first for k in _KEYS):
        return None
    return Recognised(FORMAT_NAME, "healthbench-meta", path.stem)


def _literal(value: Any) -> Any:
    """A stringified Python/JSON list or dict as the value it spells; others unchanged."""
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            return ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
    return value


def read_healthbench_meta(path: str | Path, name: str | None = None) -> BenchmarkData:
    """Read a HealthBench meta-evaluation file, validating every line.

    Raises:
        ValidationError: Every bad line as ``file:line: field: message``.
    """
    p = Path(path)
    display = p.name
    problems: list[Problem] = []
    if not p.is_file():
        raise ValidationError([Problem(str(path), None, None, "no such file")])
    prompts: dict[str, str] = {}
    criteria: dict[str, dict[str, Criterion]] = {}  # prompt id → text → criterion
    responses: dict[str, Response] = {}
    judgments: dict[tuple[str, str, str], Judgment] = {}
    for lineno, value in read_jsonl(p, display, problems):
        _line(value, display, lineno, problems, prompts, criteria, responses, judgments)
    if problems:
        raise ValidationError(problems)
    tasks = [
        Task(id=pid, prompt=prompts[pid], criteria=tuple(criteria[pid].values())) for pid in prompts
    ]
    return BenchmarkData(
        benchmark=Benchmark(name=name or p.stem),
        tasks=tasks,
        responses=list(responses.values()),
        judgments=list(judgments.values()),
    )


def _line(
    value: Any,
    display: str,
    lineno: int,
    problems: list[Problem],
    prompts: dict[str, str],
    criteria: dict[str, dict[str, Criterion]],
    responses: dict[str, Response],
    judgments: dict[tuple[str, str, str], Judgment],
) -> None:
    def err(field: str, message: str) -> None:
        problems.append(Problem(display, lineno, field, message))

    if not isinstance(value, dict):
        err("(line)", "must be a JSON object")
        return
    before = len(problems)
    pid, cid = value.get("prompt_id"), value.get("completion_id")
    for name, v in (("prompt_id", pid), ("completion_id", cid)):
        if not isinstance(v, str) or not v.strip():
            err(name, "is required (a non-empty string)")
    prompt = render_conversation(_literal(value.get("prompt")), display, lineno, problems)
    completion = value.get("completion")
    if isinstance(completion, list):
        completion = _literal(completion)
        last = completion[-1] if completion and isinstance(completion[-1], dict) else None
        completion = last.get("content") if last is not None else None
    if not isinstance(completion, str):
        err("completion", "must be a string (or a list of messages)")
    rubric = value.get("rubric")
    if not isinstance(rubric, str) or not rubric.strip():
        err("rubric", "must be the criterion's text (a non-empty string)")
    category = value.get("category")
    if category is not None and not isinstance(category, str):
        err("category", "must be a string")
    labels = _literal(value.get("binary_labels"))
    ids = _literal(value.get("anonymized_physician_ids"))
    if not isinstance(labels, list) or not all(isinstance(x, bool) for x in labels):
        err("binary_labels", f"must be a list of booleans, got {value.get('binary_labels')!r}")
    if not isinstance(ids, list) or not all(isinstance(x, str | int) for x in ids):
        err("anonymized_physician_ids", "must be a list of ids")
    elif isinstance(labels, list) and len(ids) != len(labels):
        err(
            "anonymized_physician_ids",
            f"has {len(ids)} ids for {len(labels)} binary_labels (one id per label)",
        )
    if len(problems) != before or prompt is None:
        return
    pid, cid = str(pid), str(cid)
    if pid in prompts and prompts[pid] != prompt:
        err("prompt", f"differs from an earlier line's prompt of prompt_id {pid!r}")
        return
    old = responses.get(cid)
    if old is not None and (old.task_id != pid or old.text != completion):
        err("completion", f"completion_id {cid!r} appears with another prompt or text")
        return
    prompts.setdefault(pid, prompt)
    own = criteria.setdefault(pid, {})
    text = str(rubric).strip()
    crit = own.get(text)
    if crit is None:
        tags = (f"{CATEGORY_TAG}{category}",) if category else ()
        crit = Criterion(id=f"c{len(own) + 1}", text=text, points=1, position=len(own), tags=tags)
        own[text] = crit
    responses.setdefault(
        cid, Response(id=cid, task_id=pid, model="completion", text=str(completion))
    )
    for grader, met in zip(ids, labels, strict=True):
        key = (cid, crit.id, f"{PHYSICIAN}{grader}")
        if key in judgments and judgments[key].met != met:
            err("binary_labels", f"physician {grader!r} labels this criterion twice, differently")
            continue
        judgments[key] = Judgment(
            response_id=cid,
            criterion_id=crit.id,
            grader=f"{PHYSICIAN}{grader}",
            grader_kind=GraderKind.HUMAN,
            met=bool(met),
        )
