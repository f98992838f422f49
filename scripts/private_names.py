"""List private names (``_name``) used across module boundaries inside ``gradercal`` (issue #31).

    python scripts/private_names.py [--summary]

A private name is one that starts with a single underscore (dunders are not private).
A use crosses a module boundary when module A

* imports it from another gradercal module B (``from gradercal.b import _x``, relative
  imports included), or
* reads it as an attribute of another gradercal module bound to a name in A
  (``import gradercal.b as b`` or ``from gradercal import b``, then ``b._x``).

The private package ``gradercal._util`` is a layer of the house, not a private name: its
path segments are not counted, only the names imported from it.

Prints one line per use, ``user.py:line: defining.module._name``, sorted, then the count
of uses and of distinct ``(defining module, name)`` pairs; ``--summary`` prints only the
counts. Exit status 0 always: this is a report, not a gate.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gradercal"


@dataclass(frozen=True, order=True)
class PrivateUse:
    """One use of another module's private name."""

    path: str  #: the using file, relative to the repository root
    line: int
    module: str  #: the defining module (dotted)
    name: str


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def module_name(path: Path) -> str:
    """Dotted module name of a file under the repository root (``__init__`` is the package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve_from(current: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def uses_in(path: Path, modules: dict[str, Path]) -> list[PrivateUse]:
    """Every use, in one file, of a private name of another gradercal module."""
    current = module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    rel = str(path.relative_to(ROOT))
    found: list[PrivateUse] = []
    aliases: dict[str, str] = {}  # local name -> gradercal module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("gradercal"):
                    if a.asname:
                        aliases[a.asname] = a.name
                    else:
                        aliases["gradercal"] = "gradercal"
        elif isinstance(node, ast.ImportFrom):
            source = _resolve_from(current, path.name == "__init__.py", node)
            if not source.startswith("gradercal"):
                continue
            for a in node.names:
                sub = f"{source}.{a.name}"
                if sub in modules:
                    aliases[a.asname or a.name] = sub
                if _is_private(a.name) and source != current and sub not in modules:
                    found.append(PrivateUse(rel, node.lineno, source, a.name))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not _is_private(node.attr):
            continue
        dotted = _dotted(node.value)
        if dotted is None:
            continue
        head, _, rest = dotted.partition(".")
        if head not in aliases:
            continue
        target = aliases[head] + (f".{rest}" if rest else "")
        if target in modules and target != current:
            found.append(PrivateUse(rel, node.lineno, target, node.attr))
    return found


def private_uses() -> list[PrivateUse]:
    """Every cross-module use of a private name in the package, sorted by file and line."""
    modules = _modules()
    return sorted(u for p in modules.values() for u in uses_in(p, modules))


def main(argv: list[str]) -> int:
    uses = private_uses()
    if "--summary" not in argv:
        for u in uses:
            print(f"{u.path}:{u.line}: {u.module}.{u.name}")
    names = {(u.module, u.name) for u in uses}
    print(f"{len(uses)} uses of {len(names)} private names across modules")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
