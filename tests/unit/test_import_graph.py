"""The house: no import runs upward, no loose flow module beside the packages, the diagram is current."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "tools" / "import_graph.py"
spec = importlib.util.spec_from_file_location("import_graph", TOOL)
assert spec and spec.loader
import_graph = importlib.util.module_from_spec(spec)
spec.loader.exec_module(import_graph)


def test_no_upward_import_and_every_package_declares_its_imports() -> None:
    assert import_graph.problems() == []


def test_no_loose_flow_modules_at_the_top_level() -> None:
    loose = {p.stem for p in import_graph.PACKAGE.glob("*.py")}
    assert loose == import_graph.TOP_LEVEL_MODULES == {"__init__", "api", "errors", "units", "files", "bounds"}
    assert {"request", "model_source", "resolve", "estimate", "plan", "memory"} <= {
        p.stem for p in (import_graph.PACKAGE / "flow").glob("*.py")}


def test_function_level_and_package_imports_are_seen() -> None:
    source = "def f():\n    from rigplan.cli.servers import x\nfrom rigplan import api\nimport rigplan.web.app\n"
    tree = ast.parse(source)
    assert import_graph.imported_units(tree) == {"cli", "api", "web"}


def test_an_upward_import_is_reported(monkeypatch) -> None:
    edges = import_graph.graph()
    edges["estimate"] = {*edges["estimate"], "catalog"}
    monkeypatch.setattr(import_graph, "graph", lambda: edges)
    assert any("estimate (floor 3) imports catalog" in p for p in import_graph.problems())


def test_the_diagram_in_docs_is_current() -> None:
    assert import_graph.rendered_doc() == import_graph.DOC.read_text(encoding="utf-8"), (
        "run python tools/import_graph.py")


def test_every_package_says_what_it_is_for_in_the_floor_table() -> None:
    for unit in import_graph.FLOORS:
        assert len(import_graph.purpose(unit)) > 20, unit
        assert import_graph.purpose(unit) in import_graph.floor_table()


def test_a_package_without_a_purpose_is_reported(monkeypatch) -> None:
    monkeypatch.setattr(import_graph, "purpose", lambda unit: "" if unit == "search" else "x" * 30)
    assert "search: its docstring does not start with what it is for" in import_graph.problems()


def test_modules_stay_small() -> None:
    """No Python module over ~600 lines, no ES module of the page over ~300 (the house's rule of thumb)."""
    big = [f"{p.relative_to(import_graph.PACKAGE)}: {n}" for p in import_graph.PACKAGE.rglob("*.py")
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600]
    static = import_graph.PACKAGE / "web" / "static"
    big += [f"{p.relative_to(import_graph.PACKAGE)}: {n}" for p in static.glob("*.js")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 300]
    assert big == []
