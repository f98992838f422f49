"""Run mypy --strict on the installed layout of gradercal and gradercal.db.

db/ and ui/ are installed as gradercal.db and gradercal.ui through setuptools'
package-dir mapping, which mypy (and import-linter) cannot follow in the source tree.
This script builds a tree of symlinks with the installed layout under build/ and
checks that.

``--tree-only`` builds the full layout (with gradercal.ui) under build/layout and
prints its path; tests/test_layering.py runs import-linter there.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build_tree(dest: Path, *, include_ui: bool) -> Path:
    """Link gradercal/*, db/ (as gradercal/db) and optionally ui/ (as gradercal/ui) under dest."""
    if dest.exists():
        shutil.rmtree(dest)
    pkg = dest / "gradercal"
    pkg.mkdir(parents=True)
    for entry in (ROOT / "gradercal").iterdir():
        if entry.name != "__pycache__":
            (pkg / entry.name).symlink_to(entry)
    (pkg / "db").symlink_to(ROOT / "db")
    if include_ui:
        (pkg / "ui").symlink_to(ROOT / "ui")
    return dest


def main() -> int:
    if sys.argv[1:] == ["--tree-only"]:
        print(build_tree(ROOT / "build" / "layout", include_ui=True))
        return 0
    tree = build_tree(ROOT / "build" / "typecheck", include_ui=False)
    args = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")]
    return subprocess.call([*args, "-p", "gradercal", *sys.argv[1:]], cwd=tree)


if __name__ == "__main__":
    sys.exit(main())
