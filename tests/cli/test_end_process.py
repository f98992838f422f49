"""The program ends at once when its report is written (``end_process_now``, #33): its
output complete, its ``atexit`` handlers run, the interpreter's teardown skipped — and
only in the program's own process, never in a caller of ``main`` (the tests run on)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

import gradercal._util.program as program
from gradercal.cli import main
from tests.conftest import DEMO

_ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=_ROOT, capture_output=True, text=True, timeout=300
    )


def test_the_atexit_handlers_run_and_the_output_is_flushed() -> None:
    code = (
        "import atexit, sys\n"
        "import gradercal._util.program as c\n"
        "c.OWN_PROCESS = True\n"
        "atexit.register(lambda: print('handler ran', file=sys.stderr, flush=True))\n"
        "sys.stdout.write('written, not flushed')\n"
        "c.end_process_now()\n"
        "print('never reached')\n"
    )
    res = _run("-c", code)
    assert res.returncode == 0
    assert res.stdout == "written, not flushed"
    assert res.stderr == "handler ran\n"


def test_a_caller_of_main_runs_on(tmp_path: Path) -> None:
    db = tmp_path / "d.sqlite"
    assert program.OWN_PROCESS is False
    res = CliRunner().invoke(main, ["import", str(DEMO), "--db", str(db)])
    assert res.exit_code == 0, res.output
    out = tmp_path / "r.html"
    res = CliRunner().invoke(main, ["report", "--db", str(db), "-o", str(out), "--bootstrap", "0"])
    assert res.exit_code == 0, res.output
    assert out.read_text("utf-8").rstrip().endswith("</html>")  # and this test goes on


def test_the_program_writes_its_whole_report_and_leaves(tmp_path: Path) -> None:
    db = tmp_path / "d.sqlite"
    assert _run("-m", "gradercal", "import", str(DEMO), "--db", str(db)).returncode == 0
    html, pdf = tmp_path / "r.html", tmp_path / "r.pdf"
    res = _run(
        "-m", "gradercal", "report", "--db", str(db), "-o", str(html), "--pdf", str(pdf),
        "--bootstrap", "20",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert f"wrote HTML report: {html}" in res.stdout
    assert html.read_text("utf-8").rstrip().endswith("</html>")
    assert pdf.read_bytes().rstrip().endswith(b"%%EOF")
    # the report to standard output: every byte there
    res = _run("-m", "gradercal", "report", "--db", str(db), "-o", "-", "--bootstrap", "20")
    assert res.returncode == 0, res.stderr
    assert res.stdout.rstrip().endswith("</html>") and res.stdout.startswith("<!DOCTYPE html>")
