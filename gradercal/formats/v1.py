"""Benchmark folder format v1: reading with full validation, and writing.

See ``docs/formats.md``. :func:`read_folder` parses and checks *everything* before
returning, so an importer can write in one transaction or not at all.
"""

from __future__ import annotations

import hashlib
import json
import math
import mimetypes
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

from gradercal.errors import Problem, ValidationError
from gradercal.formats._lines import (
    Recognised,
    check_schema,
    first_record,
    read_json,
    read_jsonl,
)
from gradercal.model import (
    DEFAULT_PASS_THRESHOLD,
    FORMAT_VERSION,
    Adjudication,
    Artifact,
    ArtifactKind,
    AutoRule,
    Benchmark,
    BenchmarkData,
    Criterion,
    GraderKind,
    Judgment,
    Response,
    Task,
    artifact_kind_for,
    judgment_of,
)

FORMAT_NAME = "v1"
TASKS_FILE = "tasks.jsonl"
RESPONSES_FILE = "responses.jsonl"
JUDGMENTS_FILE = "judgments.jsonl"
ADJUDICATIONS_FILE = "adjudications.jsonl"
BENCHMARK_FILE = "benchmark.json"

#: Refuse single artifact files above this size (a guard against accidents, not a format rule).
MAX_ARTIFACT_BYTES = 2 * 1024**3


@dataclass
class Catalog:
    """What already exists (in a database) that files may refer to.

    ``criteria`` maps a task id to ``{criterion_id: (kind, levels)}``; ``responses`` maps a
    response id to its task id; ``grader_kinds`` maps grader names to their kind.
    """

    criteria: dict[str, dict[str, tuple[str, int]]] = field(default_factory=dict)
    responses: dict[str, str] = field(default_factory=dict)
    grader_kinds: dict[str, str] = field(default_factory=dict)


def read_folder(folder: str | Path, catalog: Catalog | None = None) -> BenchmarkData:
    """Read and validate a benchmark folder (format v1).

    Args:
        folder: the folder holding ``tasks.jsonl`` and friends. A path to one of the
            ``.jsonl`` files is accepted too: only that file is read, its folder is the root.
        catalog: tasks and responses already stored, which the files may refer to.

    Raises:
        ValidationError: listing every problem found, as ``file:line: field: message``.
    """
    path = Path(folder)
    only: str | None = None
    if path.is_file():
        only, path = path.name, path.parent
    if not path.is_dir():
        raise ValidationError([Problem(str(folder), None, None, "no such folder or file")])
    root = path.resolve()
    reader = _Reader(root, catalog or Catalog())
    if only is None:
        if (
            not (root / TASKS_FILE).exists()
            and not (root / RESPONSES_FILE).exists()
            and not (root / JUDGMENTS_FILE).exists()
            and not (root / ADJUDICATIONS_FILE).exists()
        ):
            raise ValidationError(
                [Problem(str(folder), None, None, f"not a benchmark folder: no {TASKS_FILE}")]
            )
        return reader.read_all()
    return reader.read_one(only)


def read_stream(source: Path, label: str, root: Path, catalog: Catalog | None) -> BenchmarkData:
    """Read one v1 JSONL file kept at ``source`` (e.g. standard input, spooled), reported
    as ``label``, with artifact paths relative to ``root``.

    Raises:
        ValidationError: listing every problem found.
    """
    reader = _Reader(root.resolve(), catalog or Catalog())
    reader.sources[label] = source
    return reader.read_one(label)


def table_reader(root: Path, catalog: Catalog) -> _Reader:
    """A reader whose :meth:`_Reader.judgment_rows` and :meth:`_Reader.adjudication_rows`
    validate records from elsewhere (a table's rows) by this format's rules."""
    return _Reader(root.resolve(), catalog)


class _Reader:
    def __init__(self, root: Path, catalog: Catalog) -> None:
        self.root = root
        self.catalog = catalog
        self.problems: list[Problem] = []
        self.benchmark = Benchmark(name=root.name)
        self.tasks: dict[str, Task] = {}
        self.responses: dict[str, Response] = {}
        self.judgments: list[Judgment] = []
        self.adjudications: list[Adjudication] = []
        self.grader_models: dict[str, str] = {}
        self.blobs: dict[str, str] = {}
        self._hash_cache: dict[Path, tuple[str, int]] = {}
        # ids seen on lines that failed validation: references to them are not reported
        # again, so one bad task does not bury its root cause under follow-on errors
        self._bad_tasks: set[str] = set()
        self._bad_responses: set[str] = set()
        self._criteria_of_task: dict[str, dict[str, tuple[str, int]]] = {}
        #: files read from elsewhere than the root, by the name they are reported under
        self.sources: dict[str, Path] = {}

    def _file(self, name: str) -> Path:
        return self.sources.get(name) or self.root / name

    # -- orchestration -------------------------------------------------------------
    def read_all(self) -> BenchmarkData:
        if (self.root / BENCHMARK_FILE).exists():
            self._read_benchmark()
        if (self.root / TASKS_FILE).exists():
            self._read_tasks()
        if (self.root / RESPONSES_FILE).exists():
            self._read_responses()
        if (self.root / JUDGMENTS_FILE).exists():
            self._read_judgments()
        if (self.root / ADJUDICATIONS_FILE).exists():
            self._read_adjudications()
        return self.finish()

    def read_one(self, name: str) -> BenchmarkData:
        source = self._file(name)
        kind = sniff_jsonl(source) if source.name.endswith(".jsonl") else None
        if name == BENCHMARK_FILE:
            self._read_benchmark()
        elif kind == "tasks":
            self._read_tasks(name)
        elif kind == "responses":
            self._read_responses(name)
        elif kind == "judgments":
            self._read_judgments(name)
        elif kind == "adjudications":
            self._read_adjudications(name)
        else:
            self.problems.append(
                Problem(
                    name,
                    None,
                    None,
                    "not a tasks, responses, judgments or adjudications JSONL file",
                )
            )
        return self.finish()

    def finish(self) -> BenchmarkData:
        if self.problems:
            raise ValidationError(self.problems)
        return BenchmarkData(
            benchmark=self.benchmark,
            tasks=list(self.tasks.values()),
            responses=list(self.responses.values()),
            judgments=self.judgments,
            blobs=self.blobs,
            adjudications=self.adjudications,
            grader_models=self.grader_models,
        )

    @staticmethod
    def _remember_bad(value: Any, into: set[str]) -> None:
        if isinstance(value, dict) and isinstance(value.get("id"), str):
            into.add(value["id"])

    # -- benchmark.json ------------------------------------------------------------
    def _read_benchmark(self) -> None:
        value = read_json(self.root / BENCHMARK_FILE, BENCHMARK_FILE, self.problems)
        if value is None or not check_schema(
            "benchmark", value, BENCHMARK_FILE, None, self.problems
        ):
            return
        self.benchmark = Benchmark(
            name=value.get("name") or self.root.name,
            pass_threshold=float(value.get("pass_threshold", DEFAULT_PASS_THRESHOLD)),
            format_version=int(value.get("format_version", FORMAT_VERSION)),
            instructions=(value.get("instructions") or "").replace("\x00", "").strip() or None,
        )

    # -- tasks.jsonl ---------------------------------------------------------------
    def _read_tasks(self, name: str = TASKS_FILE) -> None:
        for lineno, value in read_jsonl(self._file(name), name, self.problems):
            if not check_schema("task", value, name, lineno, self.problems):
                self._remember_bad(value, self._bad_tasks)
                continue
            task_id = value["id"]
            if task_id in self.tasks:
                self.problems.append(Problem(name, lineno, "id", f"duplicate task id {task_id!r}"))
                continue
            criteria = self._criteria(value["rubric"], name, lineno)
            artifacts = self._artifacts(value.get("artifacts", []), name, lineno)
            if criteria is None or artifacts is None:
                self._bad_tasks.add(task_id)
                continue
            self.tasks[task_id] = Task(
                id=task_id,
                prompt=value["prompt"],
                workflow=value.get("workflow"),
                domain=value.get("domain"),
                answer_format=value.get("answer_format"),
                tags=tuple(value.get("tags", ())),
                metadata=dict(value.get("metadata", {})),
                artifacts=tuple(artifacts),
                criteria=tuple(criteria),
                version=int(value.get("version", 1)),
            )

    def _criteria(
        self, items: list[dict[str, Any]], name: str, lineno: int
    ) -> list[Criterion] | None:
        out: list[Criterion] = []
        seen: set[str] = set()
        ok = True
        for i, item in enumerate(items):
            cid = item["id"]
            if cid in seen:
                self.problems.append(
                    Problem(name, lineno, f"rubric[{i}].id", f"duplicate criterion id {cid!r}")
                )
                ok = False
                continue
            seen.add(cid)
            auto = item.get("auto")
            rule = None
            if auto is not None:
                rule = AutoRule(
                    key=auto["key"],
                    target=auto["target"],
                    abs_tol=auto.get("abs_tol"),
                    rel_tol=auto.get("rel_tol"),
                )
                if (rule.abs_tol is not None or rule.rel_tol is not None) and not _is_number(
                    rule.target
                ):
                    self.problems.append(
                        Problem(
                            name,
                            lineno,
                            f"rubric[{i}].auto.target",
                            "must be a number when a tolerance is given",
                        )
                    )
                    ok = False
            out.append(
                Criterion(
                    id=cid,
                    text=item["criterion"],
                    points=int(item["points"]),
                    position=i,
                    tags=tuple(item.get("tags", ())),
                    auto=rule,
                    levels=int(item.get("levels", 2)),
                )
            )
        return out if ok else None

    def _artifacts(
        self, items: list[dict[str, Any]], name: str, lineno: int
    ) -> list[Artifact] | None:
        out: list[Artifact] = []
        ok = True
        for i, item in enumerate(items):
            where = f"artifacts[{i}]"
            if "url" in item:
                out.append(
                    Artifact(
                        kind=ArtifactKind.URL,
                        title=item.get("title") or item["url"],
                        position=i,
                        url=item["url"],
                    )
                )
                continue
            rel = item["path"]
            target = self._safe_path(rel, name, lineno, f"{where}.path")
            if target is None:
                ok = False
                continue
            try:
                digest, size = self._hash(target)
            except OSError as exc:
                self.problems.append(
                    Problem(name, lineno, f"{where}.path", f"cannot read {rel!r}: {exc.strerror}")
                )
                ok = False
                continue
            self.blobs[digest] = str(target)
            kind = ArtifactKind(item["kind"]) if "kind" in item else artifact_kind_for(rel)
            out.append(
                Artifact(
                    kind=kind,
                    title=item.get("title") or PurePosixPath(rel).name,
                    position=i,
                    path=rel,
                    original_name=PurePosixPath(rel).name,
                    sha256=digest,
                    size=size,
                    media_type=mimetypes.guess_type(rel)[0],
                )
            )
        return out if ok else None

    def _safe_path(self, rel: str, name: str, lineno: int, field_name: str) -> Path | None:
        """Resolve an artifact path, refusing anything that leaves the benchmark folder."""
        pure = PurePosixPath(rel.replace("\\", "/"))
        if pure.is_absolute() or rel.startswith(("/", "\\")) or (len(rel) > 1 and rel[1] == ":"):
            self.problems.append(
                Problem(name, lineno, field_name, f"absolute path {rel!r} is not allowed")
            )
            return None
        if ".." in pure.parts:
            self.problems.append(
                Problem(name, lineno, field_name, f"path {rel!r} leaves the benchmark folder (..)")
            )
            return None
        if "\x00" in rel:
            self.problems.append(Problem(name, lineno, field_name, "path contains a NUL byte"))
            return None
        try:
            target = (self.root / pure).resolve()
            inside = target.is_relative_to(self.root)
            exists = inside and target.exists()
            is_file = exists and target.is_file()
        except (OSError, ValueError) as exc:  # e.g. a name longer than the OS allows
            reason = getattr(exc, "strerror", None) or str(exc)
            self.problems.append(
                Problem(name, lineno, field_name, f"unusable path {rel[:80]!r}…: {reason}")
            )
            return None
        if not inside:
            self.problems.append(
                Problem(name, lineno, field_name, f"path {rel!r} resolves outside the folder")
            )
            return None
        if not exists:
            self.problems.append(
                Problem(name, lineno, field_name, f"missing artifact file {rel!r}")
            )
            return None
        if not is_file:
            self.problems.append(Problem(name, lineno, field_name, f"{rel!r} is not a file"))
            return None
        return target

    def _hash(self, target: Path) -> tuple[str, int]:
        cached = self._hash_cache.get(target)
        if cached is not None:
            return cached
        size = target.stat().st_size
        if size > MAX_ARTIFACT_BYTES:
            raise OSError(27, "file is larger than 2 GiB")
        h = hashlib.sha256()
        with target.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
        result = (h.hexdigest(), size)
        self._hash_cache[target] = result
        return result

    # -- responses.jsonl -----------------------------------------------------------
    def _task_of_known(self, task_id: str) -> bool:
        return task_id in self.tasks or task_id in self.catalog.criteria

    def _read_responses(self, name: str = RESPONSES_FILE) -> None:
        for lineno, value in read_jsonl(self._file(name), name, self.problems):
            if not check_schema("response", value, name, lineno, self.problems):
                self._remember_bad(value, self._bad_responses)
                continue
            rid = value["id"]
            if rid in self.responses:
                self.problems.append(Problem(name, lineno, "id", f"duplicate response id {rid!r}"))
                continue
            if value["task_id"] in self._bad_tasks:
                self._bad_responses.add(rid)
                continue
            if not self._task_of_known(value["task_id"]):
                self.problems.append(
                    Problem(name, lineno, "task_id", f"unknown task_id {value['task_id']!r}")
                )
                continue
            self.responses[rid] = Response(
                id=rid,
                task_id=value["task_id"],
                model=value["model"],
                text=value["text"],
                answer=value.get("answer"),
            )

    # -- judgments.jsonl -----------------------------------------------------------
    def _criterion_info(self, response_id: str) -> dict[str, tuple[str, int]] | None:
        resp = self.responses.get(response_id)
        task_id = resp.task_id if resp else self.catalog.responses.get(response_id)
        if task_id is None:
            return None
        cached = self._criteria_of_task.get(task_id)
        if cached is None:
            task = self.tasks.get(task_id)
            if task is not None:
                cached = {c.id: (c.kind.value, c.levels) for c in task.criteria}
            else:
                cached = self.catalog.criteria.get(task_id, {})
            self._criteria_of_task[task_id] = cached
        return cached

    def _read_judgments(self, name: str = JUDGMENTS_FILE) -> None:
        self.judgment_rows(name, read_jsonl(self._file(name), name, self.problems))

    def _criterion_of(self, name: str, lineno: int, rid: str, cid: str) -> tuple[str, int] | None:
        """The (kind, levels) of a judged criterion of a response; None, with the problem
        recorded, when the response or criterion is unknown or the criterion is auto."""
        criteria = self._criterion_info(rid)
        if criteria is None:
            self.problems.append(
                Problem(name, lineno, "response_id", f"unknown response_id {rid!r}")
            )
            return None
        info = criteria.get(cid)
        if info is None:
            self.problems.append(
                Problem(
                    name,
                    lineno,
                    "criterion_id",
                    f"unknown criterion_id {cid!r} for response {rid!r}",
                )
            )
            return None
        if info[0] == "auto":
            self.problems.append(
                Problem(
                    name,
                    lineno,
                    "criterion_id",
                    f"{cid!r} is an auto criterion, graded from the answer, not judged",
                )
            )
            return None
        return info

    def _level_ok(
        self, name: str, lineno: int, level: int | None, met: bool | None, levels: int
    ) -> bool:
        """A level below the criterion's count that agrees with ``met`` (or no level)."""
        if level is None:
            return True
        if level >= levels:
            self.problems.append(
                Problem(
                    name,
                    lineno,
                    "level",
                    f"must be below {levels} (the criterion has {levels} levels)",
                )
            )
            return False
        if met is not None and met != (level == levels - 1):
            self.problems.append(Problem(name, lineno, "met", f"disagrees with level {level}"))
            return False
        return True

    def _stamps(
        self, name: str, lineno: int, value: Mapping[str, Any]
    ) -> tuple[datetime | None, datetime | None] | None:
        """``created_at`` and ``updated_at`` of a record (ISO 8601; UTC when no offset),
        in UTC; None, with the problem recorded, when one does not parse."""
        out: list[datetime | None] = []
        for key in ("created_at", "updated_at"):
            raw = value.get(key)
            if raw is None:
                out.append(None)
                continue
            try:
                stamp = datetime.fromisoformat(raw)
            except (TypeError, ValueError):
                self.problems.append(
                    Problem(name, lineno, key, f"not an ISO 8601 date and time: {raw!r}")
                )
                return None
            out.append(stamp.astimezone(UTC) if stamp.tzinfo else stamp.replace(tzinfo=UTC))
        return out[0], out[1]

    def judgment_rows(self, name: str, rows: Iterable[tuple[int, Any]]) -> None:
        """Validate judgment records (from a JSONL file or a table's rows) into
        :attr:`judgments`; every problem is recorded with its line."""
        seen: set[tuple[str, str, str]] = set()
        kinds: dict[str, str] = dict(self.catalog.grader_kinds)
        # a response's criteria, looked up once per response (the usual file has every
        # grader's verdicts on every criterion: a few hundred thousand lines)
        criteria_of: dict[str, dict[str, tuple[str, int]]] = {}
        human = GraderKind.HUMAN.value
        for lineno, value in rows:
            if not check_schema("judgment", value, name, lineno, self.problems):
                continue
            rid, cid, grader = value["response_id"], value["criterion_id"], value["grader"]
            if rid in self._bad_responses:
                continue
            criteria = criteria_of.get(rid)
            if criteria is None:
                criteria = self._criterion_info(rid)
                if criteria is not None:
                    criteria_of[rid] = criteria
            info = criteria.get(cid) if criteria is not None else None
            if info is None or info[0] == "auto":  # unknown or not judged: say which
                info = self._criterion_of(name, lineno, rid, cid)
                if info is None:
                    continue
            _ckind, levels = info
            key = (grader, rid, cid)
            if key in seen:
                self.problems.append(
                    Problem(
                        name,
                        lineno,
                        "criterion_id",
                        f"duplicate judgment by {grader!r} on {rid!r} / {cid!r}",
                    )
                )
                continue
            seen.add(key)
            kind = value.get("grader_kind", human)
            previous = kinds.setdefault(grader, kind)
            if previous != kind:
                self.problems.append(
                    Problem(
                        name,
                        lineno,
                        "grader_kind",
                        f"grader {grader!r} is a {previous}, not a {kind}",
                    )
                )
                continue
            level = value.get("level")
            met = value["met"]
            if not self._level_ok(name, lineno, level, met, levels):
                continue
            if "created_at" in value or "updated_at" in value:
                stamps = self._stamps(name, lineno, value)
                if stamps is None:
                    continue
            else:
                stamps = (None, None)
            model = value.get("model")
            if model is not None:
                if kind != GraderKind.JUDGE.value:
                    self.problems.append(
                        Problem(name, lineno, "model", f"{grader!r} is not a judge grader")
                    )
                    continue
                known = self.grader_models.setdefault(grader, model)
                if known != model:
                    self.problems.append(
                        Problem(
                            name, lineno, "model", f"judge {grader!r} is {known!r} on other lines"
                        )
                    )
                    continue
            self.judgments.append(
                judgment_of(
                    rid,
                    cid,
                    grader,
                    _KINDS[kind],
                    met,
                    level,
                    value.get("confidence"),
                    value.get("rationale"),
                    bool(value.get("unclear", False)),
                    value.get("unclear_note"),
                    stamps[0],
                    stamps[1],
                    value.get("version"),
                )
            )

    # -- adjudications.jsonl -------------------------------------------------------
    def _read_adjudications(self, name: str = ADJUDICATIONS_FILE) -> None:
        self.adjudication_rows(name, read_jsonl(self._file(name), name, self.problems))

    def adjudication_rows(self, name: str, rows: Iterable[tuple[int, Any]]) -> None:
        """Validate adjudication records into :attr:`adjudications` (one per response and
        criterion; on judged criteria only)."""
        seen: set[tuple[str, str]] = set()
        for lineno, value in rows:
            if not check_schema("adjudication", value, name, lineno, self.problems):
                continue
            rid, cid = value["response_id"], value["criterion_id"]
            if rid in self._bad_responses:
                continue
            info = self._criterion_of(name, lineno, rid, cid)
            if info is None:
                continue
            if (rid, cid) in seen:
                self.problems.append(
                    Problem(
                        name, lineno, "criterion_id", f"duplicate adjudication of {rid!r} / {cid!r}"
                    )
                )
                continue
            seen.add((rid, cid))
            level, met = value.get("level"), value["met"]
            if not self._level_ok(name, lineno, level, met, info[1]):
                continue
            stamps = self._stamps(name, lineno, value)
            if stamps is None:
                continue
            note = value.get("note")
            self.adjudications.append(
                Adjudication(
                    response_id=rid,
                    criterion_id=cid,
                    met=met,
                    adjudicator=value["adjudicator"],
                    note=note if note and note.strip() else None,
                    level=level,
                    created_at=stamps[0],
                    updated_at=stamps[1],
                )
            )


_KINDS = {k.value: k for k in GraderKind}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def sniff_jsonl(path: Path) -> str | None:
    """Guess what a JSONL file holds from its first non-blank line.

    Returns ``"tasks"``, ``"responses"``, ``"judgments"``, ``"adjudications"`` or None
    (not a v1 file).
    """
    first = first_record(path)
    if first is None:
        return None
    if "rubric" in first:
        return "tasks"
    if "criterion_id" in first and "adjudicator" in first and "grader" not in first:
        return "adjudications"
    if "criterion_id" in first:
        return "judgments"
    if "task_id" in first and "text" in first:
        return "responses"
    return None


def recognise(path: Path) -> Recognised | None:
    """A v1 folder (``"folder"``) or one of its JSONL files; None otherwise.

    A folder's benchmark is the ``name`` of its benchmark.json (else the folder's name),
    and its pass threshold comes from that file when there is one; a tasks.jsonl file
    names its folder's benchmark; responses and judgments files add to the database's
    benchmark (``benchmark=None``).
    """
    if path.is_dir():
        has_settings = (path / BENCHMARK_FILE).is_file()
        name = _peek_name(path) or path.resolve().name
        return Recognised(FORMAT_NAME, "folder", name, threshold_from_file=has_settings)
    if not path.is_file():
        return None
    kind = sniff_jsonl(path)
    if kind is None:
        return None
    if kind in ("responses", "judgments", "adjudications"):
        return Recognised(FORMAT_NAME, kind, None)
    return Recognised(FORMAT_NAME, kind, _peek_name(path.parent) or path.parent.resolve().name)


def _peek_name(folder: Path) -> str | None:
    bench = folder / BENCHMARK_FILE
    if not bench.is_file():
        return None
    try:
        value = json.loads(bench.read_text("utf-8"))
    except (OSError, ValueError):
        return None  # the reader reports the problem with its line number
    name = value.get("name") if isinstance(value, dict) else None
    return name if isinstance(name, str) and name else None


# -- writing -------------------------------------------------------------------------
def task_record(task: Task) -> dict[str, Any]:
    """The tasks.jsonl object for a task (artifact paths as they were imported)."""
    rec: dict[str, Any] = {"id": task.id, "prompt": task.prompt}
    for key in ("workflow", "domain", "answer_format"):
        if getattr(task, key) is not None:
            rec[key] = getattr(task, key)
    if task.tags:
        rec["tags"] = list(task.tags)
    if task.metadata:
        rec["metadata"] = task.metadata
    arts: list[dict[str, Any]] = []
    for a in task.artifacts:
        if a.url is not None:
            arts.append({"url": a.url, "title": a.title})
        else:
            arts.append({"path": a.path, "title": a.title, "kind": a.kind.value})
    rec["artifacts"] = arts
    rubric: list[dict[str, Any]] = []
    for c in task.criteria:
        item: dict[str, Any] = {"id": c.id, "criterion": c.text, "points": c.points}
        if c.tags:
            item["tags"] = list(c.tags)
        if c.levels != 2:
            item["levels"] = c.levels
        if c.auto is not None:
            auto: dict[str, Any] = {"key": c.auto.key, "target": c.auto.target}
            if c.auto.abs_tol is not None:
                auto["abs_tol"] = c.auto.abs_tol
            if c.auto.rel_tol is not None:
                auto["rel_tol"] = c.auto.rel_tol
            item["auto"] = auto
        rubric.append(item)
    rec["rubric"] = rubric
    if task.version != 1:  # revised (issue #16); version 1 is left implicit
        rec["version"] = task.version
    return rec


def response_record(resp: Response) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": resp.id,
        "task_id": resp.task_id,
        "model": resp.model,
        "text": resp.text,
    }
    if resp.answer is not None:
        rec["answer"] = resp.answer
    return rec


def judgment_record(j: Judgment) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "response_id": j.response_id,
        "criterion_id": j.criterion_id,
        "grader": j.grader,
        "grader_kind": j.grader_kind.value,
        "met": j.met,
    }
    optional: Mapping[str, Any] = {
        "level": j.level,
        "confidence": j.confidence,
        "rationale": j.rationale,
        "unclear_note": j.unclear_note,
    }
    rec.update({k: v for k, v in optional.items() if v is not None})
    if j.unclear:
        rec["unclear"] = True
    rec.update(_stamp_fields(j.created_at, j.updated_at))
    if j.task_version is not None and j.task_version != 1:
        rec["version"] = j.task_version
    return rec


def adjudication_record(a: Adjudication) -> dict[str, Any]:
    """The adjudications.jsonl object for a final verdict."""
    rec: dict[str, Any] = {
        "response_id": a.response_id,
        "criterion_id": a.criterion_id,
        "met": a.met,
    }
    if a.level is not None:
        rec["level"] = a.level
    rec["adjudicator"] = a.adjudicator
    if a.note is not None:
        rec["note"] = a.note
    rec.update(_stamp_fields(a.created_at, a.updated_at))
    return rec


def _stamp_fields(created: datetime | None, updated: datetime | None) -> dict[str, str]:
    out = {}
    if created is not None:
        out["created_at"] = created.isoformat()
    if updated is not None:
        out["updated_at"] = updated.isoformat()
    return out


def write_jsonl(path: str | Path, records: Iterable[Mapping[str, Any]]) -> int:
    """Write records as UTF-8 JSON Lines; returns the number written."""
    with Path(path).open("w", encoding="utf-8", newline="\n") as fh:
        return dump_jsonl(fh, records)


def dump_jsonl(fh: TextIO, records: Iterable[Mapping[str, Any]]) -> int:
    """Write records as JSON Lines to an open text stream; returns the number written."""
    n = 0
    for rec in records:
        fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=False))
        fh.write("\n")
        n += 1
    return n
