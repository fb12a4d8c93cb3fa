"""The harness's layers, read from its source and held to docs/architecture.md's table: every
import (in functions and under TYPE_CHECKING too) points to its own row of the table or one
below, no two packages import each other, no import circle has more than two modules; and a
probe kind is named by its own module under harness/probes/ only."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from harness.probes import registry

pytestmark = pytest.mark.unit

HARNESS = Path(__file__).resolve().parent.parent / "harness"
ARCHITECTURE = HARNESS.parent / "docs" / "architecture.md"


def _module(path: Path) -> str:
    parts = path.relative_to(HARNESS.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _trees() -> dict[str, tuple[Path, ast.Module]]:
    return {_module(p): (p, ast.parse(p.read_text(), str(p))) for p in HARNESS.rglob("*.py")}


def _known(name: str, modules: set[str]) -> str | None:
    """The module of harness/ that `name` (a module or a name in one) is, or lives in."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path, tree: ast.Module, modules: set[str]) -> set[str]:
    """The modules of harness/ it imports anywhere (in functions and TYPE_CHECKING too)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(m for a in node.names if (m := _known(a.name, modules)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package
                package = module.split(".")[: None if path.name == "__init__.py" else -1]
                package = package[: len(package) - node.level + 1]
                base = ".".join([*package, *([base] if base else [])])
            for alias in node.names:
                found = _known(f"{base}.{alias.name}", modules) or _known(base, modules)
                if found:
                    out.add(found)
    out.discard(module)
    return out


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@functools.cache
def _graph() -> dict[str, set[str]]:
    """Every module of harness/ and the modules of harness/ it imports."""
    trees = _trees()
    modules = set(trees)
    return {m: _imports(m, path, tree, modules) for m, (path, tree) in trees.items()}


def _package(module: str) -> str:
    """A module's package under harness/ (`harness.run`); a top-level module is its own."""
    return ".".join(module.split(".")[:2])


def _layers() -> list[set[str]]:
    """The rows of docs/architecture.md's Layers table, top first: the packages (`run/`) and
    top-level modules (`cli.py`) each names in its first column."""
    section = ARCHITECTURE.read_text().split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    return [
        {
            "harness." + name.removesuffix("/").removesuffix(".py")
            for name in re.findall(r"`([^`]+)`", row)
        }
        for row in rows
    ]


def _package_edges() -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package): the imports between them."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module, deps in _graph().items():
        for dep in deps:
            if module != "harness" and dep != "harness" and _package(module) != _package(dep):
                edges.setdefault((_package(module), _package(dep)), []).append(f"{module} -> {dep}")
    return edges


def test_the_layers_table_names_every_package_once() -> None:
    layers = _layers()
    named = [name for layer in layers for name in layer]
    on_disk = {_package(m) for m in _graph() if m != "harness"}
    assert len(named) == len(set(named)), "a package in two rows"
    assert set(named) == on_disk, (
        f"not in the table: {sorted(on_disk - set(named))}; "
        f"not in harness/: {sorted(set(named) - on_disk)}"
    )


def test_imports_point_down_the_layers() -> None:
    row = {name: i for i, layer in enumerate(_layers()) for name in layer}
    edges = _package_edges()
    unplaced = {package for edge in edges for package in edge} - set(row)
    assert not unplaced, f"not in docs/architecture.md's Layers table: {sorted(unplaced)}"
    up = sorted(
        line
        for (importer, imported), lines in edges.items()
        if row[imported] < row[importer]
        for line in lines
    )
    assert not up, f"imports up the layers of docs/architecture.md: {up}"


def test_no_import_circle_between_packages() -> None:
    graph: dict[str, set[str]] = {}
    for importer, imported in _package_edges():
        graph.setdefault(importer, set()).add(imported)
        graph.setdefault(imported, set())
    assert not _circles(graph), f"packages importing each other: {_circles(graph)}"


def test_imports_are_read_in_functions_and_under_type_checking() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from harness.run.plan import Plan\n"
        "def draw() -> None:\n"
        "    from harness.charts import run\n"
        "    import harness.format.numbers\n"
    )
    modules = {"harness.x", "harness.run.plan", "harness.charts.run", "harness.format.numbers"}
    found = _imports("harness.x", HARNESS / "x.py", ast.parse(source), modules)
    assert found == {"harness.run.plan", "harness.charts.run", "harness.format.numbers"}


def test_no_import_circle_of_more_than_two_modules() -> None:
    graph = _graph()
    too_big = [c for c in _circles(graph) if len(c) > 2]
    assert not too_big, f"import circles of more than two modules: {too_big}"


def test_kind_names_appear_outside_probes_in_at_most_two_modules() -> None:
    """A string literal that is a kind's name (or alias) outside harness/probes/: the kind's
    own module (`NAME`) is where the rest of the harness takes it from."""
    names = {*registry.names(), *registry.ALIASES, registry.BPFTRACE.name}
    naming = {
        str(path.relative_to(HARNESS.parent))
        for module, (path, tree) in _trees().items()
        if not module.startswith("harness.probes")
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in names
    }
    assert len(naming) <= 2, f"modules naming probe kinds: {sorted(naming)}"
