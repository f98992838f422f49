"""List functions longer than a limit (issue #31: none over 80 lines in dashboard/ and analysis/).

    python scripts/long_functions.py [--max N] [PATH ...]

PATH defaults to gradercal/analysis and gradercal/dashboard. A function's length is its
lines from ``def`` (decorators excluded) to its last line, docstring and comments
included; nested functions count inside their parent and on their own. Prints
``file:line: name: N lines``, longest first; exit status 0 always (a report, not a gate).
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def long_functions(paths: list[Path], limit: int) -> list[tuple[int, str, int, str]]:
    """``(lines, file, line, qualified name)`` of every function over ``limit`` lines."""
    found: list[tuple[int, str, int, str]] = []
    for base in paths:
        files = sorted(base.rglob("*.py")) if base.is_dir() else [base]
        for path in files:
            tree = ast.parse(path.read_text(encoding="utf-8"))
            stack: list[tuple[ast.AST, str]] = [(tree, "")]
            while stack:
                node, prefix = stack.pop()
                for child in ast.iter_child_nodes(node):
                    name = prefix
                    if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                        name = f"{prefix}{child.name}"
                        if not isinstance(child, ast.ClassDef):
                            size = (child.end_lineno or child.lineno) - child.lineno + 1
                            if size > limit:
                                rel = path.resolve().relative_to(ROOT)
                                found.append((size, str(rel), child.lineno, name))
                        name += "."
                    stack.append((child, name))
    return sorted(found, reverse=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=80)
    parser.add_argument("paths", nargs="*", type=Path)
    args = parser.parse_args()
    paths = args.paths or [ROOT / "gradercal" / "analysis", ROOT / "gradercal" / "dashboard"]
    rows = long_functions(paths, args.max)
    for size, rel, line, name in rows:
        print(f"{rel}:{line}: {name}: {size} lines")
    print(f"{len(rows)} functions over {args.max} lines")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
