"""An import-linter contract type of ours: an allow-list.

import-linter's own contracts forbid what they name, so a module they do not name (the
standard library's ``os``, a package added to the project next month) passes unseen. An
``allowed`` contract names what its source packages may import directly, ours and others'
alike; anything else breaks it:

    [[tool.importlinter.contracts]]
    name = "the codec is the standard library's text and data types only"
    type = "allowed"
    source_modules = ["protocol"]
    allowed_modules = ["__future__", "collections", "dataclasses", "re", "typing"]

An import of a module inside a source package (its own modules) is always allowed; an
allowed name allows its submodules too (``collections`` allows ``collections.abc``).
Registered in pyproject.toml's ``contract_types``; lint-imports runs from the project's
root, which it puts on ``sys.path``, so ``tests`` is importable there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from importlinter import Contract, ContractCheck, fields, output

if TYPE_CHECKING:
    from grimp import ImportGraph


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


class AllowedImportsContract(Contract):
    type_name = "allowed"

    source_modules = fields.ListField(subfield=fields.StringField())
    allowed_modules = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        sources: list[str] = list(self.source_modules)  # type: ignore[call-overload]
        allowed: list[str] = list(self.allowed_modules)  # type: ignore[call-overload]
        missing = [source for source in sources if source not in graph.modules]
        if missing:
            raise ValueError(f"{self.name}: no such module: {', '.join(missing)}")
        broken: list[dict[str, Any]] = []
        for source in sources:
            modules = {source} | graph.find_descendants(source)
            for importer in sorted(modules):
                for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                    if _within(imported, source) or any(_within(imported, a) for a in allowed):
                        continue
                    details = graph.get_import_details(importer=importer, imported=imported)
                    lines = tuple(d["line_number"] for d in details)
                    broken.append({"importer": importer, "imported": imported, "lines": lines})
        return ContractCheck(kept=not broken, metadata={"broken": broken})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for item in check.metadata["broken"]:
            where = ", ".join(f"l.{n}" for n in item["lines"])
            said = f"{item['importer']} imports {item['imported']} ({where}): not on the allow-list"
            output.print_error(said)
            output.new_line()
