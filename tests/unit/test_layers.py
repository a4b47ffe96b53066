"""The layer rule, read off every module's imports (those under TYPE_CHECKING and inside functions too).

core      imports nothing of QueueFlow outside core: the domain has no I/O and knows no adapter
stores    never import runtime, api or engine: an adapter records, it does not decide or serve
api       never imports stores: HTTP reaches data only through the Engine
dashboard never imports stores or api: its pages, too, reach data only through the Engine
and no module of server/queueflow imports itself back, however far round.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "server"
PACKAGE = ROOT / "queueflow"

FORBIDDEN = {
    "queueflow.core": ("queueflow.",),  # everything but core itself, below
    "queueflow.stores": ("queueflow.runtime", "queueflow.api", "queueflow.engine"),
    "queueflow.api": ("queueflow.stores",),
    "queueflow.dashboard": ("queueflow.stores", "queueflow.api"),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py") if "migrations" not in path.parts}


def imports_of(name: str) -> Iterator[str]:
    """The QueueFlow modules `name` imports; `from package import module` counts as the module."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        yield from (target for target in targets if target == "queueflow" or target.startswith("queueflow."))


GRAPH = {name: sorted(set(imports_of(name)) - {name}) for name in MODULES}


def layer_of(name: str) -> str | None:
    return next((layer for layer in FORBIDDEN if name == layer or name.startswith(layer + ".")), None)


def test_the_modules_were_found() -> None:
    assert {"queueflow.core.types", "queueflow.engine", "queueflow.stores.postgres.store", "queueflow.api.app"} <= set(
        MODULES
    )


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_each_layer_imports_only_what_it_may(layer: str) -> None:
    broken = [
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        if layer_of(name) == layer
        for target in targets
        if target.startswith(FORBIDDEN[layer]) and layer_of(target) != layer
    ]
    assert broken == []


def cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """One cycle through each strongly connected component that has one (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, []):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_back() -> None:
    assert cycles(GRAPH) == []


def test_the_cycle_finder_finds_cycles() -> None:
    # The check above is only as good as this: a cycle of three, and a clean chain beside it.
    graph = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["e"], "e": []}
    assert cycles(graph) == [["a", "b", "c"]]
