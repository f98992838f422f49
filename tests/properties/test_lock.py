"""The dependency locks cover what pyproject.toml declares.

``scripts/test.sh`` installs the suite's dependencies from ``requirements/dev.lock`` (hashes
required) and gradercal itself without dependencies, so a dependency added to
``pyproject.toml`` without refreshing the lock (``bash scripts/lock.sh``) would be missing
from CI's environment, or pinned outside its declared range. This test says which.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)\s*(?:;\s*([^\\]+?))?\s*\\?$")


def _pins(lock: Path) -> dict[str, list[tuple[str, str]]]:
    """Each locked name with its (version, environment marker) pairs."""
    pins: dict[str, list[tuple[str, str]]] = {}
    for line in lock.read_text("utf-8").splitlines():
        m = PIN.match(line)
        if m:
            pins.setdefault(canonicalize_name(m[1]), []).append((m[2], (m[3] or "").strip()))
    return pins


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    names = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    return [Requirement(r) for r in names]


def _problems(lock: Path, declared: list[Requirement]) -> list[str]:
    pins = _pins(lock)
    problems = []
    for req in declared:
        locked = pins.get(canonicalize_name(req.name))
        if not locked:
            problems.append(f"{req.name}: declared in pyproject.toml, not in {lock.name}")
            continue
        for version, marker in locked:
            if not req.specifier.contains(version, prereleases=True):
                problems.append(f"{req.name}=={version} ({marker or 'any'}) is outside {req}")
    return problems


def test_every_declared_dependency_is_locked_within_its_range() -> None:
    problems = _problems(ROOT / "requirements" / "dev.lock", _declared())
    assert not problems, "run `bash scripts/lock.sh`:\n" + "\n".join(problems)


def test_every_pin_carries_hashes() -> None:
    for lock in sorted((ROOT / "requirements").glob("*.lock")):
        text = lock.read_text("utf-8")
        entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 1)[1])
        for entry in entries:
            if "==" in entry:
                assert "--hash=sha256:" in entry, (
                    f"{lock.name}: {entry.splitlines()[0]} has no hash"
                )


def test_the_check_notices_a_missing_or_stale_pin(tmp_path: Path) -> None:
    lock = tmp_path / "dev.lock"
    lock.write_text(
        "# header\nnumpy==1.20.0 ; python_full_version < '3.12' \\\n    --hash=sha256:00\n", "utf-8"
    )
    problems = _problems(lock, [Requirement("numpy>=1.26"), Requirement("pandas>=2.2")])
    assert problems == [
        "numpy==1.20.0 (python_full_version < '3.12') is outside numpy>=1.26",
        "pandas: declared in pyproject.toml, not in dev.lock",
    ]
