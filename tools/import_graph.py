"""rigplan's import graph between its packages, checked against the floors of the house, drawn as Mermaid.

    python tools/import_graph.py            # rewrite the floor table and the diagram in docs/house.md
    python tools/import_graph.py --check    # exit 1 if docs/house.md is stale or an import runs upward

A package may import only packages on lower floors (FLOORS), and only those its `__init__` docstring
names on its "May import:" line; that docstring starts with what the package is for (the floor table of
docs/house.md is those first paragraphs). tests/unit/test_import_graph.py runs the same checks.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "rigplan"
DOC = ROOT / "docs" / "house.md"

FLOORS: dict[str, int] = {
    "errors": 0, "i18n": 0, "units": 1, "files": 1, "domain": 2, "bounds": 2,
    "estimate": 3, "reliab": 3,
    "search": 4, "catalog": 4, "calibration": 4,
    "servers": 5, "cost": 6, "flow": 7, "lint": 8, "measure": 8, "export": 8, "api": 9, "report": 10,
    "validation": 11, "web": 11, "cli": 12,
}
"""Lower floors are imported by higher ones, never the reverse; a floor's packages do not import each other."""

TOP_LEVEL_MODULES = {"__init__", "api", "errors", "units", "files", "bounds"}
"""The only modules allowed beside the packages: the facade and the base modules (errors, units, files: every
file read, size-capped; bounds: the allowed range of every quantity a user gives)."""

BEGIN, END = "<!-- import-graph:begin (tools/import_graph.py) -->", "<!-- import-graph:end -->"
TABLE_BEGIN, TABLE_END = "<!-- floors:begin (tools/import_graph.py) -->", "<!-- floors:end -->"


def unit_of(path: Path) -> str:
    """The package (or top-level module) a source file belongs to."""
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imported_units(tree: ast.AST) -> set[str]:
    """Every rigplan package or top-level module a module imports, at any depth (function-level too)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            if parts[0] != "rigplan":
                continue
            if len(parts) > 1:
                found.add(parts[1])
            else:
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "rigplan" and len(parts) > 1:
                    found.add(parts[1])
    return found


def graph() -> dict[str, set[str]]:
    """unit -> the other units it imports."""
    edges: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        unit = unit_of(path)
        if unit == "__init__":
            continue
        edges.setdefault(unit, set()).update(imported_units(ast.parse(path.read_text(encoding="utf-8"))) - {unit})
    return edges


def docstring(unit: str) -> str:
    init = PACKAGE / unit / "__init__.py"
    source = init if init.exists() else PACKAGE / f"{unit}.py"
    return ast.get_docstring(ast.parse(source.read_text(encoding="utf-8"))) or ""


def purpose(unit: str) -> str:
    """What a package is for: the first paragraph of its docstring, on one line."""
    return " ".join(docstring(unit).strip().split("\n\n")[0].split())


def declared_imports(unit: str) -> set[str] | None:
    """The units named on the "May import:" line of a package's docstring (None: no such line)."""
    doc = docstring(unit)
    match = re.search(r"^May import:(.*?)(?:\.\s*$|\n\s*\n|\Z)", doc, re.M | re.S)
    if match is None:
        return None
    text = match.group(1)
    if text.strip().lower().startswith("nothing"):
        return set()
    return {w for w in re.findall(r"[a-z_][a-z_0-9]*", text) if w in FLOORS}


def problems() -> list[str]:
    found = []
    for path in sorted(PACKAGE.glob("*.py")):
        if path.stem not in TOP_LEVEL_MODULES:
            found.append(f"rigplan/{path.name}: a loose module beside the packages (move it into one)")
    edges = graph()
    for unit, targets in sorted(edges.items()):
        if unit not in FLOORS:
            found.append(f"{unit}: not on any floor of tools/import_graph.py FLOORS")
            continue
        for target in sorted(targets):
            if target not in FLOORS:
                found.append(f"{unit} imports {target}, which is on no floor")
            elif FLOORS[target] >= FLOORS[unit]:
                found.append(f"{unit} (floor {FLOORS[unit]}) imports {target} (floor {FLOORS[target]}): upward or "
                             "sideways")
        if not purpose(unit):
            found.append(f"{unit}: its docstring does not start with what it is for")
        declared = declared_imports(unit)
        if declared is None:
            found.append(f"{unit}: its docstring has no 'May import:' line")
        else:
            for target in sorted(targets - declared):
                found.append(f"{unit} imports {target}, which its 'May import:' line does not name")
    return found


def mermaid() -> str:
    edges = graph()
    lines = ["```mermaid", "flowchart BT"]
    by_floor: dict[int, list[str]] = {}
    for unit, floor in FLOORS.items():
        by_floor.setdefault(floor, []).append(unit)
    for floor in sorted(by_floor):
        lines.append(f"  subgraph floor{floor}[floor {floor}]")
        lines.extend(f"    {u}" for u in sorted(by_floor[floor]))
        lines.append("  end")
    for unit in sorted(edges):
        lines.extend(f"  {unit} --> {target}" for target in sorted(edges[unit]))
    lines.append("```")
    return "\n".join(lines)


def floor_table() -> str:
    """The floors of the house, lowest first: each package and the first line of its docstring."""
    lines = ["| floor | package | what it is for (its docstring) |", "|---|---|---|"]
    for unit, floor in sorted(FLOORS.items(), key=lambda item: (item[1], item[0])):
        name = f"`{unit}/`" if (PACKAGE / unit).is_dir() else f"`{unit}.py`"
        lines.append(f"| {floor} | {name} | {purpose(unit).replace('|', '/')} |")
    return "\n".join(lines)


def _between(text: str, begin: str, end: str, body: str) -> str:
    start, stop = text.index(begin) + len(begin), text.index(end)
    return text[:start] + "\n" + body + "\n" + text[stop:]


def rendered_doc() -> str:
    text = DOC.read_text(encoding="utf-8")
    return _between(_between(text, TABLE_BEGIN, TABLE_END, floor_table()), BEGIN, END, mermaid())


def main(argv: list[str]) -> int:
    found = problems()
    for line in found:
        print(f"import graph: {line}", file=sys.stderr)
    if "--check" in argv:
        stale = rendered_doc() != DOC.read_text(encoding="utf-8")
        if stale:
            print("import graph: docs/house.md is stale; run python tools/import_graph.py", file=sys.stderr)
        return 1 if found or stale else 0
    DOC.write_text(rendered_doc(), encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
