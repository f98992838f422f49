"""Inspect AI eval logs: ``.eval`` and ``.json`` logs, or a folder of them.

The logs are read with inspect_ai's own log API (:func:`inspect_ai.log.read_eval_log`),
imported only when a log is read: inspect_ai is the optional ``inspect`` extra. Recognising
a log needs no inspect_ai (a ``.eval`` file is one by its name, whose reader says what is
wrong with a broken one; a ``.json`` log starts ``{"version": …, "status": …, "eval": {``), so an unrecognised file's
message lists this format, and a recognised log without the extra says what to install.

Imported as (docs/formats.md has the whole mapping):

* each **sample** (each epoch of it) becomes a **response** to the task whose id is the
  sample's ``metadata["task_id"]``, else the sample's id: a task already stored, or one
  made from the sample's ``metadata["rubric"]`` (gradercal's exported samples carry it);
  a sample that matches no task and carries no rubric is a problem. Its model is the
  eval's model, its text the output's completion, and its transcript (the sample's
  messages: role, text, tool calls) is kept as the response's structured answer
  ``{"transcript": […]}``. A sample that replays one of gradercal's exported responses
  (the exported judge's ``replay_response`` solver, with ``metadata["response_id"]``) is
  that response, not a new one;
* each **per-criterion score** becomes a **judge judgment** of grader ``judge:<model>``:
  the exported gradercal judge's (``Score.metadata["criteria"]``: ``id``, ``met``,
  ``p_met``, ``explanation``), or a score whose value maps criterion ids of the task to
  verdicts (``True``/``False``, ``1``/``0``, ``"C"``/``"I"``). Scores of the whole sample
  are not verdicts: they are left out, and the import's notes say so.

Every problem is reported with the log's file name and the sample; nothing is half-read.
"""

from __future__ import annotations

import math
import os
import re
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from gradercal.errors import Problem, ValidationError
from gradercal.formats._lines import Recognised, check_schema
from gradercal.formats.healthbench import render_conversation
from gradercal.formats.v1 import (
    ADJUDICATIONS_FILE,
    JUDGMENTS_FILE,
    RESPONSES_FILE,
    TASKS_FILE,
    Catalog,
)
from gradercal.model import (
    AutoRule,
    Benchmark,
    BenchmarkData,
    Criterion,
    GraderKind,
    Judgment,
    Response,
    Task,
)

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample
    from inspect_ai.scorer import Score

__all__ = [
    "FORMAT_NAME",
    "INSTALL_HINT",
    "JUDGE_PREFIX",
    "LOOKS_FOR",
    "REPLAY_MODEL",
    "log_files",
    "read_inspect",
    "recognise",
    "unavailable",
]

FORMAT_NAME = "inspect"
#: What to install when inspect_ai is missing.
INSTALL_HINT = "pip install 'gradercal[inspect]'"
#: Prefix of the judge graders made from scores.
JUDGE_PREFIX = "judge:"
#: The output model of the exported judge's ``replay_response`` solver.
REPLAY_MODEL = "gradercal/replay"
#: What the recogniser looks for (said when no format reads a file).
LOOKS_FOR = (
    'a .eval file, a .json file starting {"version": …, "status": …, "eval": {, or a '
    "folder of such logs without tasks.jsonl"
)
#: Bytes of a .json file read to recognise it.
_SNIFF_BYTES = 4096
_JSON_LOG = re.compile(
    rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:\s*"[a-z_]*"\s*,'
    rb'\s*"eval"\s*:\s*\{'
)
#: Inspect's log file names: ``<ISO time>_<task>_<22-character id>``.
_LOG_NAME = re.compile(r"\A\d{4}-\d{2}-\d{2}T[0-9:+-]+_(?P<task>.+)_[A-Za-z0-9]{22}\Z")
#: Sample fields the reader does not need (left unread in ``.eval`` logs).
_UNREAD = {"events", "store"}
#: Largest uncompressed member of a ``.eval`` log read (its samples are one JSON file each).
MAX_MEMBER_BYTES = 256 * 2**20
#: Largest uncompressed total of a ``.eval`` log's members.
MAX_TOTAL_BYTES = 2 * 2**30
#: Largest compression ratio of a member above :data:`_RATIO_FLOOR` bytes: Inspect's JSON
#: compresses about 5–30×, a zip bomb a thousand times and more.
MAX_RATIO = 200
_RATIO_FLOOR = 2**20
_CHUNK = 2**20
#: Score values read as a verdict on one criterion.
_VERDICTS: dict[str, bool] = {"C": True, "I": False}


# -- recognising ------------------------------------------------------------------------
def recognise(path: Path) -> Recognised | None:
    """An Inspect log file (``"log"``) or a folder of logs (``"log-folder"``); None
    otherwise, and for a folder with a tasks, responses or judgments file (format v1).

    Logs add to the database's benchmark; into an empty database they make one named
    after the eval's task (as Inspect's file name spells it) or the folder.
    """
    if path.is_dir():
        if any(
            (path / name).exists()
            for name in (TASKS_FILE, RESPONSES_FILE, JUDGMENTS_FILE, ADJUDICATIONS_FILE)
        ):
            return None
        if next(iter(_logs_in(path)), None) is None:
            return None
        return Recognised(FORMAT_NAME, "log-folder", None, new_benchmark=_name(path))
    if not (path.is_file() and _is_log(path)):
        return None
    return Recognised(FORMAT_NAME, "log", None, new_benchmark=_name(path))


def _name(path: Path) -> str:
    """The benchmark a log (its eval's task, as Inspect's file name spells it, else the
    file's name) or a folder of logs (its name) makes in an empty database."""
    if path.is_dir():
        return path.resolve().name
    match = _LOG_NAME.match(path.stem)
    return match["task"] if match else path.stem


def _is_log(path: Path) -> bool:
    """A ``.eval`` file (its reader says what is wrong with a broken one) or a ``.json``
    file that starts as an Inspect log does."""
    if path.suffix == ".eval":
        return True
    if path.suffix != ".json":
        return False
    try:
        with path.open("rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError:
        return False
    return _JSON_LOG.match(head) is not None


def _logs_in(folder: Path) -> Iterator[Path]:
    for top, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            p = Path(top, name)
            if not name.startswith(".") and p.is_file() and _is_log(p):
                yield p


def log_files(folder: Path) -> list[Path]:
    """The Inspect logs in ``folder`` and its subfolders (hidden ones left out), in name
    order: every ``.eval`` file and every ``.json`` file that is an Inspect log."""
    return sorted(_logs_in(folder))


def unavailable() -> str | None:
    """Why logs cannot be read here (inspect_ai is not installed), or None."""
    try:
        import inspect_ai.log  # noqa: F401
    except ImportError as exc:
        return f"reading Inspect AI logs needs inspect_ai ({exc}): {INSTALL_HINT}"
    return None


# -- reading ----------------------------------------------------------------------------
def read_inspect(path: str | Path, catalog: Catalog | None = None) -> BenchmarkData:
    """Read an Inspect log, or every log of a folder, as responses and judge verdicts.

    Args:
        path: A ``.eval`` or ``.json`` log, or a folder of them.
        catalog: The tasks, responses and graders already stored, which samples attach to.

    Raises:
        ValidationError: every problem found, as ``log: sample …: message``.
    """
    p = Path(path)
    reason = unavailable()
    if reason is not None:
        raise ValidationError([Problem(p.name, None, None, reason)])
    from inspect_ai.log import read_eval_log

    if p.is_dir():
        files = [(f, f.relative_to(p).as_posix()) for f in log_files(p)]
    elif p.is_file():
        files = [(p, p.name)]
    else:
        raise ValidationError([Problem(str(path), None, None, "no such file or folder")])
    reader = _Reader(catalog or Catalog())
    for file, display in files:
        if file.suffix == ".eval" and not zipfile.is_zipfile(file):
            reader.problems.append(
                Problem(
                    display,
                    None,
                    None,
                    "not a readable Inspect AI log: a .eval log is a zip archive, this file "
                    "is not one",
                )
            )
            continue
        if file.suffix == ".eval":
            refused = _zip_refusal(file)
            if refused is not None:
                reader.problems.append(
                    Problem(display, None, None, f"not a readable Inspect AI log: {refused}")
                )
                continue
        try:
            log = read_eval_log(str(file), resolve_attachments=True, exclude_fields=_UNREAD)
        except Exception as exc:  # whatever a broken log raises, said with the file's name
            reader.problems.append(
                Problem(display, None, None, f"not a readable Inspect AI log: {_reason(exc)}")
            )
            continue
        reader.read_log(log, display)
    return reader.finish(_name(p))


def _zip_refusal(file: Path) -> str | None:
    """Why a ``.eval`` archive is not decompressed (None: it may be read).

    First from the zip's directory, before anything is decompressed: a member larger than
    :data:`MAX_MEMBER_BYTES`, members larger than :data:`MAX_TOTAL_BYTES` together, or a
    member compressed more than :data:`MAX_RATIO` times (a zip bomb). Then, since a
    directory can lie, every member is decompressed as a stream, a chunk at a time and
    nothing kept, with the same hard caps on the bytes that actually come out; a member
    whose data does not match its directory entry (size or CRC) is refused by name.
    Memory stays bounded by one chunk; time by the caps.
    """
    mib = 2**20
    current: str | None = None  # the member being decompressed
    try:
        with zipfile.ZipFile(file) as archive:
            infos = archive.infolist()
            total = 0
            for info in infos:
                size, packed = info.file_size, max(info.compress_size, 1)
                if size > MAX_MEMBER_BYTES:
                    return (
                        f"member {info.filename!r} would decompress to {size / mib:,.0f} MiB, "
                        f"over the {MAX_MEMBER_BYTES / mib:,.0f} MiB a member may hold "
                        "(a zip bomb?); nothing was decompressed"
                    )
                if size > _RATIO_FLOOR and size / packed > MAX_RATIO:
                    return (
                        f"member {info.filename!r} is compressed {size / packed:,.0f} times "
                        f"({packed:,} bytes → {size / mib:,.0f} MiB), over the {MAX_RATIO}× "
                        "an Inspect log reaches (a zip bomb?); nothing was decompressed"
                    )
                total += size
            if total > MAX_TOTAL_BYTES:
                return (
                    f"its members would decompress to {total / mib:,.0f} MiB together, over "
                    f"the {MAX_TOTAL_BYTES / mib:,.0f} MiB a log may hold (a zip bomb?); "
                    "nothing was decompressed"
                )
            total = 0
            for info in infos:
                out = 0
                current = info.filename
                with archive.open(info) as member:
                    while chunk := member.read(_CHUNK):
                        out += len(chunk)
                        total += len(chunk)
                        if out > MAX_MEMBER_BYTES or total > MAX_TOTAL_BYTES:
                            return (
                                f"member {info.filename!r} decompresses to more than its "
                                f"directory says ({info.file_size:,} bytes) and past the "
                                "size cap (a zip bomb?); reading stopped there"
                            )
                if out != info.file_size:
                    return (
                        f"member {info.filename!r} decompresses to {out:,} bytes, its "
                        f"directory says {info.file_size:,}"
                    )
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError, zlib.error,
            NotImplementedError) as exc:  # fmt: skip  # NotImplementedError: a compression method
        where = "" if current is None else f"member {current!r}: "
        return f"{where}{_reason(exc)}"
    return None


def _reason(exc: BaseException) -> str:
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "…"


@dataclass
class _Notes:
    """What was read but not imported, said in the import's summary."""

    whole_scores: Counter[str] = field(default_factory=Counter)
    errored: int = 0
    no_verdict: int = 0
    auto: int = 0
    logs: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = list(self.logs)
        if self.whole_scores:
            names = ", ".join(
                f"{k} ({_count(n, 'sample')})" for k, n in sorted(self.whole_scores.items())
            )
            out.append(
                f"scores of whole samples are not per criterion and were not imported as "
                f"verdicts: {names}"
            )
        if self.errored:
            out.append(f"{_count(self.errored, 'sample')} that ended in an error left out")
        if self.no_verdict:
            out.append(
                f"{_count(self.no_verdict, 'criterion', 'criteria')} the judge gave no "
                "verdict on left out"
            )
        if self.auto:
            out.append(
                f"{_count(self.auto, 'verdict')} on auto criteria left out (they are graded "
                "from the answer)"
            )
        return out


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


class _Reader:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.problems: list[Problem] = []
        self.tasks: dict[str, Task] = {}
        self.criteria: dict[str, dict[str, tuple[str, int]]] = {}
        self.responses: dict[str, Response] = {}
        self.judgments: dict[tuple[str, str, str], Judgment] = {}
        self.notes = _Notes()

    def finish(self, name: str) -> BenchmarkData:
        if self.problems:
            raise ValidationError(self.problems)
        return BenchmarkData(
            benchmark=Benchmark(name=name),
            tasks=list(self.tasks.values()),
            responses=list(self.responses.values()),
            judgments=list(self.judgments.values()),
            notes=self.notes.lines(),
        )

    # -- one log ------------------------------------------------------------------------
    def read_log(self, log: EvalLog, display: str) -> None:
        spec = log.eval
        samples = log.samples or []
        if not samples:
            self.notes.logs.append(f"{display}: the log holds no samples; nothing read from it")
            return
        if log.status != "success":
            self.notes.logs.append(
                f"{display}: the eval's status is {log.status}: read the {len(samples)} "
                "samples it holds"
            )
        scorer_models: dict[str, str] = {}
        for s in spec.scorers or []:
            model = (s.options or {}).get("model")
            if isinstance(model, str) and model:
                scorer_models[s.name] = model
        epochs = max([spec.config.epochs or 1, *(s.epoch for s in samples)])
        for sample in samples:
            _Sample(self, sample, display, spec.model, spec.eval_id, epochs, scorer_models).read()

    # -- tasks ----------------------------------------------------------------------------
    def add_task(self, task: Task, display: str, where: str) -> dict[str, tuple[str, int]]:
        old = self.tasks.get(task.id)
        if old is not None and old.content_hash() != task.content_hash():
            self.problems.append(
                Problem(
                    display,
                    None,
                    where,
                    f"its rubric or prompt for task {task.id!r} differs from another sample's",
                )
            )
        self.tasks.setdefault(task.id, task)
        return self.criteria.setdefault(
            task.id, {c.id: (c.kind.value, c.levels) for c in task.criteria}
        )

    # -- responses and judgments ------------------------------------------------------------
    def add_response(self, response: Response, display: str, where: str) -> None:
        old = self.responses.get(response.id)
        if old is not None and old != response:
            self.problems.append(
                Problem(
                    display, None, where, f"response {response.id!r} is read twice, differently"
                )
            )
            return
        self.responses[response.id] = response

    def add_judgment(self, j: Judgment, display: str, where: str) -> None:
        kind = self.catalog.grader_kinds.get(j.grader)
        if kind is not None and kind != GraderKind.JUDGE.value:
            self.problems.append(
                Problem(display, None, where, f"grader {j.grader!r} is stored as a {kind}")
            )
            return
        key = (j.response_id, j.criterion_id, j.grader)
        old = self.judgments.get(key)
        if old is not None and old != j:
            self.problems.append(
                Problem(
                    display,
                    None,
                    where,
                    f"two verdicts by {j.grader!r} on criterion {j.criterion_id!r} of response "
                    f"{j.response_id!r}",
                )
            )
            return
        self.judgments[key] = j


class _Sample:
    """One sample of one log: its task, its response and its verdicts."""

    def __init__(
        self,
        reader: _Reader,
        sample: EvalSample,
        display: str,
        model: str,
        eval_id: str,
        epochs: int,
        scorer_models: Mapping[str, str],
    ) -> None:
        self.r = reader
        self.s = sample
        self.display = display
        self.model = model
        self.eval_id = eval_id
        self.epochs = epochs
        self.scorer_models = scorer_models
        self.meta: dict[str, Any] = dict(sample.metadata or {})
        self.sid = str(sample.id)
        self.where = f"sample {self.sid!r}" + (f" epoch {sample.epoch}" if epochs > 1 else "")

    def problem(self, message: str) -> None:
        self.r.problems.append(Problem(self.display, None, self.where, message))

    def read(self) -> None:
        if self.s.error is not None:
            self.r.notes.errored += 1
            return
        task_id = self.meta.get("task_id")
        task_id = task_id if isinstance(task_id, str) and task_id else self.sid
        criteria = self.r.catalog.criteria.get(task_id)
        if criteria is None:  # made from the rubric (every sample of the task has it)
            criteria = self._task_from_rubric(task_id)
            if criteria is None:
                return
        rid, suffix = self._response(task_id)
        if rid is None:
            return
        for name, score in (self.s.scores or {}).items():
            self._verdicts(name, score, rid, task_id, criteria, suffix)

    # -- the task -----------------------------------------------------------------------
    def _task_from_rubric(self, task_id: str) -> dict[str, tuple[str, int]] | None:
        rubric = self.meta.get("rubric")
        if rubric is None and task_id in self.r.criteria:  # made from another sample's
            return self.r.criteria[task_id]
        if rubric is None:
            self.problem(
                f"its task {task_id!r} (metadata.task_id, else the sample id) is not stored, "
                "and the sample has no metadata.rubric to make the task from"
            )
            return None
        prompt = self.meta.get("task_prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            prompt = self._input_text()
        record = {"id": task_id, "prompt": prompt, "rubric": _rubric_items(rubric)}
        found: list[Problem] = []
        if prompt is None or not check_schema("task", record, self.display, None, found):
            for p in found:
                self.problem(f"{_sample_field(p.field)}: {p.message}" if p.field else p.message)
            if prompt is None:
                self.problem("its input has no text to make the task's prompt from")
            return None
        criteria = self._criteria(record["rubric"])
        if criteria is None:
            return None
        task = Task(id=task_id, prompt=prompt, criteria=tuple(criteria))
        return self.r.add_task(task, self.display, self.where)

    def _input_text(self) -> str | None:
        value = self.s.input
        if isinstance(value, str):
            return value if value.strip() else None
        turns = [{"role": m.role, "content": m.text} for m in value]
        return render_conversation(turns, self.display, 0, [])

    def _criteria(self, items: list[dict[str, Any]]) -> list[Criterion] | None:
        out: list[Criterion] = []
        for i, item in enumerate(items):
            if any(c.id == item["id"] for c in out):
                self.problem(f"metadata.rubric[{i}].id: duplicate criterion id {item['id']!r}")
                return None
            auto = item.get("auto")
            rule = None
            if auto is not None:
                rule = AutoRule(
                    key=auto["key"],
                    target=auto["target"],
                    abs_tol=auto.get("abs_tol"),
                    rel_tol=auto.get("rel_tol"),
                )
            out.append(
                Criterion(
                    id=item["id"],
                    text=item["criterion"],
                    points=int(item["points"]),
                    position=i,
                    tags=tuple(item.get("tags", ())),
                    auto=rule,
                    levels=int(item.get("levels", 2)),
                )
            )
        return out

    # -- the response ---------------------------------------------------------------------
    def _response(self, task_id: str) -> tuple[str | None, str]:
        """The response's id (None after a problem) and the suffix of its graders' names."""
        stored = self.meta.get("response_id")
        epoch = self.s.epoch
        if isinstance(stored, str) and stored and self.s.output.model == REPLAY_MODEL:
            # gradercal's own response, replayed to be judged: epochs judge it again
            known = self.r.catalog.responses.get(stored)
            if known is not None and known != task_id:
                self.problem(f"replays response {stored!r}, which is stored for task {known!r}")
                return None, ""
            if known is None:
                text = self.meta.get("response")
                model = self.meta.get("model")
                response = Response(
                    id=stored,
                    task_id=task_id,
                    model=model if isinstance(model, str) and model else self.model,
                    text=text if isinstance(text, str) else self.s.output.completion,
                    answer=self.meta.get("answer"),
                )
                self.r.add_response(response, self.display, self.where)
            return stored, (f"#{epoch}" if epoch > 1 else "")
        rid = f"{self.sid}@{self.eval_id}" + (f"#{epoch}" if self.epochs > 1 else "")
        if len(rid) > 200:
            self.problem("its id is too long for a response id (200 characters with the eval's)")
            return None, ""
        transcript = _transcript(self.s.messages)
        response = Response(
            id=rid,
            task_id=task_id,
            model=self.model,
            text=self.s.output.completion,
            answer={"transcript": transcript} if transcript else None,
        )
        self.r.add_response(response, self.display, self.where)
        return rid, ""

    # -- the verdicts ---------------------------------------------------------------------
    def _verdicts(
        self,
        name: str,
        score: Score,
        rid: str,
        task_id: str,
        criteria: Mapping[str, tuple[str, int]],
        suffix: str,
    ) -> None:
        items = (score.metadata or {}).get("criteria")
        if _is_gradercal(items):
            grader = JUDGE_PREFIX + self.scorer_models.get(name, self.model) + suffix
            for item in items:
                cid = str(item["id"])
                met, p_met = item.get("met"), item.get("p_met")
                if not self._judgeable(name, cid, task_id, criteria, report_unknown=True):
                    continue
                if not isinstance(met, bool):
                    self.r.notes.no_verdict += 1
                    continue
                why = item.get("explanation")
                self.r.add_judgment(
                    Judgment(
                        response_id=rid,
                        criterion_id=cid,
                        grader=grader,
                        grader_kind=GraderKind.JUDGE,
                        met=met,
                        confidence=_confidence(met, p_met),
                        rationale=why if isinstance(why, str) and why else None,
                    ),
                    self.display,
                    self.where,
                )
            return
        verdicts = _keyed_verdicts(score.value, criteria)
        if verdicts is None:
            self.r.notes.whole_scores[name] += 1
            return
        model = self.scorer_models.get(name)
        grader = JUDGE_PREFIX + (model or name) + suffix
        for cid, met in verdicts.items():
            if self._judgeable(name, cid, task_id, criteria, report_unknown=False):
                self.r.add_judgment(
                    Judgment(
                        response_id=rid,
                        criterion_id=cid,
                        grader=grader,
                        grader_kind=GraderKind.JUDGE,
                        met=met,
                    ),
                    self.display,
                    self.where,
                )

    def _judgeable(
        self,
        scorer: str,
        cid: str,
        task_id: str,
        criteria: Mapping[str, tuple[str, int]],
        *,
        report_unknown: bool,
    ) -> bool:
        info = criteria.get(cid)
        if info is None:
            if report_unknown:
                self.problem(
                    f"scorer {scorer!r} judges criterion {cid!r}, which task {task_id!r} "
                    "does not have"
                )
            return False
        if info[0] == "auto":
            self.r.notes.auto += 1
            return False
        return True


def _sample_field(task_field: str) -> str:
    """Where in the sample a field of the task made from it comes from."""
    if task_field == "prompt":
        return "input"
    if task_field == "id":
        return "metadata.task_id"
    return f"metadata.{task_field}"


def _is_gradercal(items: Any) -> TypeGuard[list[dict[str, Any]]]:
    """The exported gradercal judge's per-criterion verdicts: ``[{"id", "met", …}, …]``."""
    return (
        isinstance(items, list)
        and bool(items)
        and all(isinstance(x, dict) and "id" in x and "met" in x for x in items)
    )


def _keyed_verdicts(value: Any, criteria: Mapping[str, tuple[str, int]]) -> dict[str, bool] | None:
    """A score value mapping criterion ids of the task to verdicts; None for any other."""
    if not isinstance(value, dict) or not value or not all(k in criteria for k in value):
        return None
    out: dict[str, bool] = {}
    for key, v in value.items():
        if isinstance(v, bool):
            out[key] = v
        elif isinstance(v, int | float) and v in (0, 1):
            out[key] = bool(v)
        elif isinstance(v, str) and v in _VERDICTS:
            out[key] = _VERDICTS[v]
        else:
            return None
    return out


def _confidence(met: bool, p_met: Any) -> float | None:
    """The probability of the verdict given, as gradercal's runner records it."""
    if isinstance(p_met, bool) or not isinstance(p_met, int | float):
        return None
    p = float(p_met)
    if not math.isfinite(p) or not 0.0 <= p <= 1.0:
        return None
    return round(p if met else 1.0 - p, 6)


def _rubric_items(rubric: Any) -> Any:
    """A sample's rubric as tasks.jsonl rubric items (the exported samples' ``auto: null``,
    ``levels: 2`` and null tolerances dropped); anything else as it is, for the schema to
    report."""
    if not isinstance(rubric, list):
        return rubric
    out: list[Any] = []
    for item in rubric:
        if not isinstance(item, dict):
            out.append(item)
            continue
        rec = {k: v for k, v in item.items() if k in ("id", "criterion", "points", "tags")}
        if item.get("levels") not in (None, 2):
            rec["levels"] = item["levels"]
        auto = item.get("auto")
        if isinstance(auto, dict):
            rec["auto"] = {k: v for k, v in auto.items() if v is not None or k == "target"}
        elif auto is not None:
            rec["auto"] = auto
        out.append(rec)
    return out


def _transcript(messages: list[Any]) -> list[dict[str, Any]]:
    """A sample's messages as JSON: role and text, plus reasoning, tool calls, the tool's
    function and error, and the kinds of other content (images, audio …) by name."""
    out: list[dict[str, Any]] = []
    for m in messages:
        entry: dict[str, Any] = {"role": m.role, "content": m.text}
        if not isinstance(m.content, str):
            reasoning = [
                c.summary if c.redacted else c.reasoning
                for c in m.content
                if c.type == "reasoning" and (c.summary if c.redacted else c.reasoning)
            ]
            if reasoning:
                entry["reasoning"] = "\n\n".join(reasoning)
            other = sorted({c.type for c in m.content if c.type not in ("text", "reasoning")})
            if other:
                entry["other_content"] = other
        calls = getattr(m, "tool_calls", None)
        if calls:
            entry["tool_calls"] = [
                {"function": c.function, "arguments": c.arguments} for c in calls
            ]
        if m.role == "tool":
            entry["function"] = m.function
            if m.error is not None:
                entry["error"] = m.error.message
        out.append(entry)
    return out
