"""``gradercal report``'s forked paths (issue #18): the reading in a child while the engines
are imported, the charts drawn half in a child. Each gives the bytes of the one-process
path, and falls back to it when its child dies."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib
import pytest
from click.testing import CliRunner

import gradercal.cli.report as report_cmd
import gradercal.dashboard.report as report_mod
from gradercal._util.forked import ChildFailed, ForkedCall, fork_available
from gradercal.cli import main
from gradercal.dashboard import Dashboard, compute_dashboard
from gradercal.dashboard.report import render_html
from gradercal.formats import read_path
from gradercal.frames import frames_from_data
from tests.conftest import DEMO

pytestmark = pytest.mark.skipif(not fork_available(), reason="fork is used on Linux only")

_WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fixed_svg_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    # matplotlib salts the ids in an SVG at random unless told a salt
    monkeypatch.setitem(matplotlib.rcParams, "svg.hashsalt", "gradercal-test")


@pytest.fixture(scope="module")
def dash() -> Dashboard:
    return compute_dashboard(frames_from_data(read_path(DEMO)), n_boot=20)


def _died_in_child(fn: Any) -> Any:
    """``fn``, except that in a forked child it kills its process at once."""
    parent = os.getpid()

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if os.getpid() != parent:
            os._exit(3)
        return fn(*args, **kwargs)

    return wrapper


@pytest.fixture
def failures(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ChildFailed of every ForkedCall.result in the test (the fallback was taken)."""
    seen: list[str] = []
    result = ForkedCall.result

    def spy(self: ForkedCall[Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return result(self, *args, **kwargs)
        except ChildFailed as exc:
            seen.append(str(exc))
            raise

    monkeypatch.setattr(ForkedCall, "result", spy)
    return seen


@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_charts_from_a_child_give_the_same_html(dash: Dashboard, fmt: str) -> None:
    one = render_html(dash, image_format=fmt, generated_at=_WHEN)
    seen: list[tuple[int, int]] = []
    two = render_html(
        dash,
        image_format=fmt,
        generated_at=_WHEN,
        processes=2,
        progress=lambda done, total, _label: seen.append((done, total)),
    )
    assert two == one
    assert seen and seen[-1][0] == seen[-1][1] == len(report_mod._report_keys(dash))


def test_the_document_is_written_while_the_child_draws(
    dash: Dashboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#33: the tables of the page are written before waiting for the child's charts
    (their places held by tokens): the same page."""
    one = render_html(dash, generated_at=_WHEN)
    order: list[str] = []
    document, result = report_mod._document, ForkedCall.result

    def written(*args: Any, **kwargs: Any) -> str:
        order.append("document")
        return document(*args, **kwargs)

    def waited(self: ForkedCall[Any], *args: Any, **kwargs: Any) -> Any:
        order.append("the child's charts")
        return result(self, *args, **kwargs)

    monkeypatch.setattr(report_mod, "_document", written)
    monkeypatch.setattr(ForkedCall, "result", waited)
    assert render_html(dash, generated_at=_WHEN, processes=2) == one
    assert order == ["document", "the child's charts"]


def test_a_dead_chart_child_falls_back(
    dash: Dashboard, monkeypatch: pytest.MonkeyPatch, failures: list[str]
) -> None:
    one = render_html(dash, generated_at=_WHEN)
    monkeypatch.setattr(report_mod, "_drawn", _died_in_child(report_mod._drawn))
    assert render_html(dash, generated_at=_WHEN, processes=2) == one
    assert len(failures) == 1 and "without a result" in failures[0]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reportpaths") / "demo.sqlite"
    res = CliRunner().invoke(main, ["import", str(DEMO), "--db", str(path)])
    assert res.exit_code == 0, res.output
    return path


def _report(db: Path, out: Path, *extra: str) -> str:
    res = CliRunner().invoke(
        main, ["report", "--db", str(db), "-o", str(out), "--bootstrap", "20", *extra]
    )
    assert res.exit_code == 0, res.output
    # the timestamp line aside
    return re.sub(r'<p class="meta">Generated [^<]*</p>', "", out.read_text("utf-8"), count=1)


def test_reading_in_a_child_gives_the_same_report(
    demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forked = _report(demo_db, tmp_path / "forked.html")
    monkeypatch.setattr(report_cmd, "_READ_IN_CHILD", False)
    inline = _report(demo_db, tmp_path / "inline.html")
    assert forked == inline
    monkeypatch.setattr(report_cmd, "_READ_IN_CHILD", True)
    assert _report(demo_db, tmp_path / "png.html", "--images", "png") == _report(
        demo_db, tmp_path / "png2.html", "--images", "png"
    )


def test_a_dead_reading_child_falls_back(
    demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failures: list[str]
) -> None:
    expected = _report(demo_db, tmp_path / "a.html")
    assert not failures
    monkeypatch.setattr(report_cmd, "_fetch_request", _died_in_child(report_cmd._fetch_request))
    assert _report(demo_db, tmp_path / "b.html") == expected
    assert len(failures) == 1  # the reading child's; the computing and chart children lived


def test_a_reading_child_dead_after_its_part_ahead_falls_back(
    demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failures: list[str]
) -> None:
    """The child sends everything but the judgments ahead, then dies reading them: the
    part it sent is dropped and the report reads here — the same report."""
    import gradercal.db.frames_fetch as fetch_mod

    expected = _report(demo_db, tmp_path / "a.html")
    sent: list[str] = []
    early = ForkedCall.early

    def spy(self: ForkedCall[Any], *args: Any, **kwargs: Any) -> Any:
        part = early(self, *args, **kwargs)
        sent.append(type(part).__name__)
        return part

    monkeypatch.setattr(ForkedCall, "early", spy)
    monkeypatch.setattr(fetch_mod, "_judgments", _died_in_child(fetch_mod._judgments))
    assert _report(demo_db, tmp_path / "b.html") == expected
    assert sent == ["DashboardRows"] and len(failures) == 1


def test_an_error_of_the_reading_child_is_the_commands_error(demo_db: Path) -> None:
    bad = CliRunner().invoke(
        main, ["report", "--db", str(demo_db), "--json", "--experts", "nobody"]
    )
    assert bad.exit_code == 1 and "no grader 'nobody'" in bad.output


def test_bench_report_help() -> None:
    res = subprocess.run(
        [sys.executable, str(_ROOT / "benchmarks" / "bench_report.py"), "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0 and "--repeat" in res.stdout and "--json" in res.stdout


def test_an_error_before_the_reading_is_taken_ends_the_child(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reading child starts before the options are made into filters; when that (or
    anything before its result is taken) fails, the child is killed, not left behind."""
    killed: list[int] = []
    kill = ForkedCall.kill

    def spy(self: ForkedCall[Any]) -> None:
        killed.append(self.pid)
        kill(self)

    def broken(value: str | None) -> None:
        raise RuntimeError("broken option")

    monkeypatch.setattr(ForkedCall, "kill", spy)
    monkeypatch.setattr(report_cmd, "_names", broken)
    res = CliRunner().invoke(main, ["report", "--db", str(demo_db), "--json"])
    assert res.exit_code != 0 and isinstance(res.exception, RuntimeError)
    assert len(killed) == 1
    with pytest.raises(ChildProcessError):  # reaped: no child of ours is left
        os.waitpid(killed[0], os.WNOHANG)
