"""``gradercal gui`` on a machine without Qt's X11 libraries: a message naming the Debian/Ubuntu
packages to install, instead of Qt's abort ("Could not load the Qt platform plugin xcb")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gradercal.cli import gui as gui_module
from tests.conftest import ROOT

LDD = """\
\tlinux-vdso.so.1 (0x00007ffd)
\tlibQt6XcbQpa.so.6 => /venv/PySide6/Qt/lib/libQt6XcbQpa.so.6 (0x00007f)
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms.so.1 => not found
\tlibxcb.so.1 => /lib/x86_64-linux-gnu/libxcb.so.1 (0x00007f)
\tlibxcb-icccm.so.4 => not found
\tlibweird.so.9 => not found
"""


def fake_ldd(monkeypatch: pytest.MonkeyPatch, output: str) -> None:
    def run(args: list[str], **_kw: Any) -> subprocess.CompletedProcess[str]:
        assert args[1].endswith("libqxcb.so")
        return subprocess.CompletedProcess(args, 0, output, "")

    monkeypatch.setattr(gui_module.subprocess, "run", run)
    monkeypatch.setattr(gui_module, "_loadable", lambda _lib: True)


def test_missing_libraries_are_read_from_ldd() -> None:
    assert gui_module.missing_libraries(LDD) == [
        "libxcb-icccm.so.4",
        "libxcb-keysyms.so.1",
        "libweird.so.9",
    ]
    assert gui_module.missing_libraries("\tlibc.so.6 => /lib/libc.so.6 (0x1)\n") == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the xcb plugin is Linux's")
def test_the_problem_names_the_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_ldd(monkeypatch, LDD)
    problem = gui_module.xcb_problem({"DISPLAY": ":0"})
    assert problem is not None
    assert "sudo apt-get install libxcb-icccm4 libxcb-keysyms1 libweird.so.9" in problem
    # not asked where Qt would not use xcb
    assert gui_module.xcb_problem({"QT_QPA_PLATFORM": "offscreen"}) is None
    wayland = {"XDG_SESSION_TYPE": "wayland", "WAYLAND_DISPLAY": "wayland-0"}
    assert gui_module.xcb_problem(wayland) is None
    fake_ldd(monkeypatch, "\tlibxcb.so.1 => /lib/libxcb.so.1 (0x1)\n")
    assert gui_module.xcb_problem({"DISPLAY": ":0"}) is None
    monkeypatch.setattr(gui_module, "_loadable", lambda lib: lib != "libxcb-cursor.so.0")
    cursor = gui_module.xcb_problem({"DISPLAY": ":0"})
    assert cursor is not None and "apt-get install libxcb-cursor0" in cursor


def test_the_gui_command_stops_with_the_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(gui_module, "xcb_problem", lambda: "Qt cannot open a window: install X")
    started: list[object] = []
    monkeypatch.setattr("gradercal.ui.qt_app.run", lambda *a, **k: started.append(a) or 0)
    result = CliRunner().invoke(gui_module.gui, ["--db", str(tmp_path / "x.sqlite")])
    assert result.exit_code == 1
    assert "Qt cannot open a window: install X" in result.output
    assert started == []  # Qt was never asked (it would have aborted the process)


def test_the_readme_lists_the_packages() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for package in ("libxcb-cursor0", "libxcb-icccm4", "libxcb-keysyms1", "libxkbcommon-x11-0"):
        assert package in readme


@pytest.mark.parametrize(
    ("view", "early"),
    [("dashboard", True), ("tasks", True), ("next", True), ("grading", False), ("review", False)],
)
def test_a_coordinator_view_starts_the_dashboard_worker_first(
    monkeypatch: pytest.MonkeyPatch, view: str, early: bool
) -> None:
    """#33: on a coordinator view the dashboard's worker starts before the window's
    modules are imported (``qt_process.launch_early``, then ``run``); a grader's window
    has no dashboard and starts none."""
    import gradercal.ui.dashboard.qt_process as qt_process
    import gradercal.ui.qt_app as qt_app
    from gradercal.cli import main

    calls: list[str] = []
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    monkeypatch.setattr(qt_process, "launch_early", lambda: calls.append("launch"))
    monkeypatch.setattr(qt_app, "run", lambda *_a, **_k: calls.append("run") or 0)
    res = CliRunner().invoke(main, ["gui", "--view", view, "--db", "x.sqlite"])
    assert res.exit_code == 0, res.output
    assert calls == (["launch", "run"] if early else ["run"])
