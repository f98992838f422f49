"""Run mypy --strict on the installed layout (gradercal, gradercal.db, gradercal.ui).

``--tree-only`` just builds the tree and prints its path (import-linter uses it too).

db/ and ui/ are installed as gradercal.db and gradercal.ui through setuptools'
package-dir mapping, which mypy cannot follow in the source tree. This script builds a
tree of symlinks with the installed layout under build/typecheck/ and checks that.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Packages checked strictly. gradercal.ui joins once the desktop app exists.
STRICT = ("gradercal", "gradercal.db")


def build_tree() -> Path:
    tree = ROOT / "build" / "typecheck"
    pkg = tree / "gradercal"
    if tree.exists():
        for link in sorted(tree.rglob("*"), reverse=True):
            if link.is_symlink() or link.is_file():
                link.unlink()
            elif link.is_dir():
                link.rmdir()
    pkg.mkdir(parents=True, exist_ok=True)
    for entry in (ROOT / "gradercal").iterdir():
        if entry.name != "__pycache__":
            (pkg / entry.name).symlink_to(entry)
    (pkg / "db").symlink_to(ROOT / "db")
    (pkg / "ui").symlink_to(ROOT / "ui")
    return tree


def main() -> int:
    tree = build_tree()
    if sys.argv[1:] == ["--tree-only"]:
        print(tree)
        return 0
    args = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")]
    for name in STRICT:
        args += ["-p", name]
    return subprocess.call([*args, *sys.argv[1:]], cwd=tree)


if __name__ == "__main__":
    sys.exit(main())
