"""An import-linter contract type for a naming rule: in the UI, only ``qt_*`` modules use Qt.

The Qt-free parts of :mod:`gradercal.ui` (the dashboard's data and worker, the grading
state, the shortcut table, the sequence/structure/table parsers, the lazy viewer
registry) run in worker processes and in tests without a display, so importing them must
not load Qt. The rule follows the module's name instead of a hand-kept list: a module
whose own name does not start with ``prefix`` may not import a forbidden package, directly
or through other modules. A new module is covered the day it is written.

Registered in pyproject.toml (``contract_types``) and checked by tests/properties/test_layering.py.
"""

from __future__ import annotations

from typing import Any

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


class QtNamingContract(Contract):
    """Modules under ``containers`` not named ``prefix*`` import none of ``forbidden_modules``.

    Options: ``containers`` (packages), ``forbidden_modules`` (external packages), ``prefix``
    (default ``qt_``). Package ``__init__`` modules are judged by the package's name.
    """

    type_name = "qt_naming"

    containers = fields.ListField(subfield=fields.StringField())
    forbidden_modules = fields.ListField(subfield=fields.StringField())
    prefix = fields.StringField(default="qt_")

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        prefix: str = self.prefix  # type: ignore[assignment]
        containers: list[str] = list(self.containers)  # type: ignore[call-overload]
        forbidden: list[str] = list(self.forbidden_modules)  # type: ignore[call-overload]
        checked: list[str] = []
        broken: list[dict[str, Any]] = []
        for container in containers:
            members = {container, *graph.find_descendants(container)}
            for module in sorted(members):
                if module.rsplit(".", 1)[-1].startswith(prefix):
                    continue
                checked.append(module)
                for target in forbidden:
                    if target not in graph.modules:
                        continue
                    chain = graph.find_shortest_chain(importer=module, imported=target)
                    if chain:
                        broken.append({"module": module, "chain": list(chain)})
        output.verbose_print(verbose, f"checked {len(checked)} modules not named {prefix}*")
        return ContractCheck(kept=not broken, metadata={"broken": broken, "checked": checked})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for item in check.metadata["broken"]:
            output.print_error(f"{item['module']} is not named {self.prefix}* but imports Qt:")
            output.indent_cursor()
            output.print_error(" -> ".join(item["chain"]))
            output.new_line()
