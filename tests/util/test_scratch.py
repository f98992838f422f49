"""Scratch folders: removed on exit, on SIGTERM, and by the next run after a SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradercal._util.scratch import scratch_dir, sweep_stale
from gradercal.cli import main


def dead_pid() -> int:
    """The id of a process that has ended (and been reaped)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                          capture_output=True, text=True)  # fmt: skip
    return int(proc.stdout)


def test_stale_folders_of_ended_processes_are_swept_and_live_ones_kept(tmp_path: Path) -> None:
    gone = tmp_path / f"gc-x-{dead_pid()}-abc"
    mine = tmp_path / f"gc-x-{os.getpid()}-def"
    other = tmp_path / "gc-x-notapid"
    unrelated = tmp_path / f"keep-{dead_pid()}-abc"
    for folder in (gone, mine, other, unrelated):
        (folder / "sub").mkdir(parents=True)
        (folder / "sub" / "packet.sqlite").write_bytes(b"x" * 100)
    assert sweep_stale("gc-x-", tmp_path) == [gone]
    assert not gone.exists() and mine.exists() and other.exists() and unrelated.exists()
    with scratch_dir("gc-x-", tmp_path) as made:
        assert made.is_dir() and made.name.startswith(f"gc-x-{os.getpid()}-")
    assert not made.exists()


def test_a_stopped_process_removes_its_scratch_folder(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from gradercal._util.scratch import exit_on_sigterm, scratch_dir
        exit_on_sigterm()
        with scratch_dir("gc-term-", Path({str(tmp_path)!r})) as d:
            (d / "packet.sqlite").write_bytes(b"x")
            print(d, flush=True)
            time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    made = Path(proc.stdout.readline().strip())
    assert made.is_dir()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(120) == 143
    assert not made.exists()


def test_the_next_command_cleans_up_after_a_killed_merge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A merge killed with SIGKILL leaves its folder (a packet database inside); the next
    gradercal command removes it, whatever that command then does."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    left = tmp_path / f"gradercal-merge-{dead_pid()}-k1ll"
    left.mkdir()
    (left / "packet.sqlite").write_bytes(b"SQLite format 3\x00" + bytes(4096))
    live = tmp_path / f"gradercal-merge-{os.getpid()}-busy"  # a merge still running
    live.mkdir()
    res = CliRunner().invoke(main, ["packet", "info", str(tmp_path / "missing.gcpkg")])
    assert res.exit_code != 0  # no such packet: the sweep ran all the same
    assert not left.exists() and live.exists()
