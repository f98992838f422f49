"""The wheel a user installs carries everything the README's first steps need.

Built here as pip builds it for a user (``pip wheel .``), unpacked into a folder of its own
and run from an empty folder, with no clone of the repository in sight: the demo benchmark
must come out of the installed package (`gradercal samples demo -o DIR`) and import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (found,) = out.glob("gradercal-*.whl")
    return found


def test_the_wheel_ships_the_whole_demo(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    demo = ROOT / "gradercal" / "demo"
    expected = {f"gradercal/demo/{p.relative_to(demo).as_posix()}" for p in demo.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts}  # fmt: skip
    assert len(expected) >= 14
    assert expected <= names, sorted(expected - names)


@pytest.mark.slow
def test_samples_demo_from_the_installed_wheel_in_an_empty_folder(
    wheel: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    work = tmp_path / "empty"
    work.mkdir()
    # the wheel's gradercal first on the path; its dependencies from this environment
    env = {**os.environ, "PYTHONPATH": str(site), "HOME": str(tmp_path / "home")}
    env.pop("GRADERCAL_DB", None)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "gradercal", *args], cwd=work, env=env,
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    probe = subprocess.run(
        [sys.executable, "-c", "import gradercal; print(gradercal.__file__)"],
        cwd=work, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert probe.stdout.strip().startswith(str(site)), probe.stdout
    written = run("samples", "demo", "-o", "demo", "--json")
    assert written.returncode == 0, written.stderr
    assert json.loads(written.stdout)["files"] >= 14
    imported = run("import", "demo", "--db", str(tmp_path / "d.sqlite"), "--json")
    assert imported.returncode == 0, imported.stderr
    scores = run("scores", "--db", str(tmp_path / "d.sqlite"), "--json")
    assert scores.returncode == 0, scores.stderr
    assert {m["model"] for m in json.loads(scores.stdout)["models"]} == {
        "atlas-7b", "borealis-large", "cobalt-pro"
    }  # fmt: skip
