"""HealthBench-style JSONL: one example per line, imported as tasks (and responses).

A line looks like ``{"prompt_id", "prompt": [{"role", "content"}, …], "rubrics":
[{"criterion", "points", "tags"}], "example_tags": [...], "completion"?}``. The
conversation becomes the task's Markdown prompt; criteria get ids ``c1``, ``c2`` …;
a ``completion`` becomes a response ``<prompt_id>:completion``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gradercal.errors import Problem, ValidationError
from gradercal.formats._lines import Recognised, first_record, read_jsonl
from gradercal.model import Benchmark, BenchmarkData, Criterion, Response, Task

FORMAT_NAME = "healthbench"
COMPLETION_SUFFIX = ":completion"


def recognise(path: Path) -> Recognised | None:
    """A ``.jsonl`` file whose first record has ``prompt`` and ``rubrics``; its benchmark is
    named after the file (``healthbench_style.jsonl`` → ``healthbench_style``)."""
    if not (path.is_file() and path.suffix == ".jsonl"):
        return None
    first = first_record(path)
    if first is None or "rubrics" not in first or "prompt" not in first:
        return None
    return Recognised(FORMAT_NAME, "healthbench", path.stem)


def read_healthbench(path: str | Path, name: str | None = None) -> BenchmarkData:
    """Read a HealthBench-style JSONL file, validating every line.

    Raises:
        ValidationError: listing every bad line as ``file:line: field: message``.
    """
    p = Path(path)
    display = p.name
    problems: list[Problem] = []
    tasks: dict[str, Task] = {}
    responses: list[Response] = []
    if not p.is_file():
        raise ValidationError([Problem(str(path), None, None, "no such file")])
    for lineno, value in read_jsonl(p, display, problems):
        task, response = _parse_line(value, display, lineno, problems)
        if task is None:
            continue
        if task.id in tasks:
            problems.append(
                Problem(display, lineno, "prompt_id", f"duplicate prompt_id {task.id!r}")
            )
            continue
        tasks[task.id] = task
        if response is not None:
            responses.append(response)
    if problems:
        raise ValidationError(problems)
    return BenchmarkData(
        benchmark=Benchmark(name=name or p.stem), tasks=list(tasks.values()), responses=responses
    )


def _err(problems: list[Problem], display: str, lineno: int, field: str, msg: str) -> None:
    problems.append(Problem(display, lineno, field, msg))


def _parse_line(
    value: Any, display: str, lineno: int, problems: list[Problem]
) -> tuple[Task | None, Response | None]:
    if not isinstance(value, dict):
        _err(problems, display, lineno, "(line)", "must be a JSON object")
        return None, None
    before = len(problems)
    pid = value.get("prompt_id")
    if not isinstance(pid, str) or not pid:
        _err(problems, display, lineno, "prompt_id", "is required (a non-empty string)")
    prompt = render_conversation(value.get("prompt"), display, lineno, problems)
    rubrics = value.get("rubrics")
    criteria: list[Criterion] = []
    if not isinstance(rubrics, list) or not rubrics:
        _err(problems, display, lineno, "rubrics", "must be a non-empty list")
    else:
        for i, item in enumerate(rubrics):
            where = f"rubrics[{i}]"
            if not isinstance(item, dict):
                _err(problems, display, lineno, where, "must be an object")
                continue
            crit_text = item.get("criterion")
            points = item.get("points")
            tags = item.get("tags", [])
            if not isinstance(crit_text, str) or not crit_text.strip():
                _err(problems, display, lineno, f"{where}.criterion", "is required (a string)")
            if isinstance(points, bool) or not isinstance(points, int | float):
                _err(
                    problems,
                    display,
                    lineno,
                    f"{where}.points",
                    f"must be a number, got {points!r}",
                )
            elif points != int(points):
                _err(
                    problems,
                    display,
                    lineno,
                    f"{where}.points",
                    f"must be an integer, got {points}",
                )
            if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
                _err(problems, display, lineno, f"{where}.tags", "must be a list of strings")
            if len(problems) == before:
                criteria.append(
                    Criterion(
                        id=f"c{i + 1}",
                        text=str(crit_text),
                        points=int(points),  # type: ignore[arg-type]
                        position=i,
                        tags=tuple(tags),
                    )
                )
    example_tags = value.get("example_tags", [])
    if not isinstance(example_tags, list) or not all(isinstance(t, str) for t in example_tags):
        _err(problems, display, lineno, "example_tags", "must be a list of strings")
        example_tags = []
    completion = value.get("completion")
    text: str | None = None
    if completion is not None:
        if isinstance(completion, str):
            text = completion
        elif isinstance(completion, list) and completion and isinstance(completion[-1], dict):
            last = completion[-1].get("content")
            text = last if isinstance(last, str) else None
        if text is None:
            _err(problems, display, lineno, "completion", "must be a string or a list of messages")
    if len(problems) != before or prompt is None:
        return None, None
    themes = [t.split(":", 1)[1] for t in example_tags if t.startswith("theme:")]
    metadata = {k: v for k, v in value.items() if k not in {"prompt", "rubrics", "completion"}}
    task = Task(
        id=str(pid),
        prompt=prompt,
        workflow=themes[0] if themes else None,
        tags=tuple(example_tags),
        metadata=metadata,
        criteria=tuple(criteria),
    )
    response = None
    if text is not None:
        model = value.get("model") if isinstance(value.get("model"), str) else "completion"
        response = Response(
            id=f"{pid}{COMPLETION_SUFFIX}", task_id=str(pid), model=str(model), text=text
        )
    return task, response


def render_conversation(
    messages: Any, display: str, lineno: int, problems: list[Problem]
) -> str | None:
    if isinstance(messages, str) and messages.strip():
        return messages
    if not isinstance(messages, list) or not messages:
        _err(problems, display, lineno, "prompt", "must be a non-empty list of {role, content}")
        return None
    parts: list[str] = []
    for i, msg in enumerate(messages):
        if (
            not isinstance(msg, dict)
            or not isinstance(msg.get("role"), str)
            or not isinstance(msg.get("content"), str)
        ):
            _err(
                problems, display, lineno, f"prompt[{i}]", "must be {role: string, content: string}"
            )
            return None
        if len(messages) == 1 and msg["role"] == "user":
            return str(msg["content"])
        parts.append(f"### {msg['role'].capitalize()}\n\n{msg['content']}")
    return "\n\n".join(parts)
