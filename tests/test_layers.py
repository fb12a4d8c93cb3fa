"""The harness's layers, read from its source: imports point down (no import circle of more
than two modules), and a probe kind is named by its own module under harness/probes/ only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from harness.probes import registry

pytestmark = pytest.mark.unit

HARNESS = Path(__file__).resolve().parent.parent / "harness"


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


def test_no_import_circle_of_more_than_two_modules() -> None:
    trees = _trees()
    modules = set(trees)
    graph = {m: _imports(m, path, tree, modules) for m, (path, tree) in trees.items()}
    assert "harness.rundoc.model" in graph["harness.results"]  # the imports are read
    too_big = [c for c in _circles(graph) if len(c) > 2]
    assert not too_big, f"import circles of more than two modules: {too_big}"


def test_the_probes_import_nothing_of_the_run_pipeline() -> None:
    trees = _trees()
    modules = set(trees)
    above = ("harness.run", "harness.results", "harness.commands", "harness.report")
    climbs = {
        f"{m} -> {dep}"
        for m, (path, tree) in trees.items()
        if m.startswith("harness.probes.")
        for dep in _imports(m, path, tree, modules)
        if any(dep == layer or dep.startswith(f"{layer}.") for layer in above)
    }
    assert not climbs


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
