"""Files the tests make hard to write."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def immutable(path: Path, on: bool) -> bool:
    """``chattr ±i``: a file even root cannot write (file modes do not stop root). False
    when the filesystem or the user cannot (the caller skips)."""
    if shutil.which("chattr") is None:
        return False
    flag = "+i" if on else "-i"
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0
