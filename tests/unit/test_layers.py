"""The layer rule, read off every module's imports (those under TYPE_CHECKING and inside functions too), over the
three Python packages: the server (`queueflow`), the SDK (`queueflow_client`) and the worker loop both share
(`queueflow_worker`).

queueflow_worker  imports neither of the others: the SDK and the server both depend on it
queueflow         never imports queueflow_client: the server runs tasks through queueflow_worker alone
queueflow_client  never imports queueflow: the SDK reaches the server only over HTTP
core      imports nothing of QueueFlow outside core: the domain has no I/O and knows no adapter
stores    never import runtime, api or engine: an adapter records, it does not decide or serve
engine    never imports stores, runtime, api or dashboard: it reaches data through the ports, and serves no one
runtime   never imports api or dashboard: the long-running loops sit below what serves HTTP, beside it in a process
api       never imports stores: HTTP reaches data only through the Engine
dashboard never imports stores or api: its pages, too, reach data only through the Engine
and no module of any of them imports itself back, however far round.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]
ROOTS = {
    "queueflow": CHECKOUT / "server",
    "queueflow_client": CHECKOUT / "sdks" / "python",
    "queueflow_worker": CHECKOUT / "sdks" / "worker",
}
"""Each package by the folder it is imported from."""

FORBIDDEN = {
    "queueflow_worker": ("queueflow.", "queueflow_client."),
    "queueflow": ("queueflow_client.",),
    "queueflow_client": ("queueflow.",),
    "queueflow.core": ("queueflow.",),  # everything but core itself, below
    "queueflow.stores": ("queueflow.runtime", "queueflow.api", "queueflow.engine"),
    "queueflow.engine": ("queueflow.stores", "queueflow.runtime", "queueflow.api", "queueflow.dashboard"),
    "queueflow.runtime": ("queueflow.api", "queueflow.dashboard"),
    "queueflow.api": ("queueflow.stores",),
    "queueflow.dashboard": ("queueflow.stores", "queueflow.api"),
}
"""Per layer, the prefixes of what it must not import (a module's own layer excepted); a package's name with a
dot after it stands for the package and all its modules."""


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {
    module_name(root, path): path
    for package, root in ROOTS.items()
    for path in (root / package).rglob("*.py")
    if "migrations" not in path.parts
}


def ours(target: str) -> bool:
    return any(target == package or target.startswith(package + ".") for package in ROOTS)


def imports_of(name: str) -> Iterator[str]:
    """The modules of the three packages that `name` imports; `from package import module` counts as the module."""
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
        yield from (target for target in targets if ours(target))


GRAPH = {name: sorted(set(imports_of(name)) - {name}) for name in MODULES}


def within(name: str, layer: str) -> bool:
    return name == layer or name.startswith(layer + ".")


def forbidden(target: str, prefixes: tuple[str, ...]) -> bool:
    return any(
        within(target, prefix[:-1]) if prefix.endswith(".") else target.startswith(prefix) for prefix in prefixes
    )


def test_the_modules_were_found() -> None:
    assert {
        "queueflow.core.types",
        "queueflow.engine",
        "queueflow.stores.postgres.store",
        "queueflow.api.app",
        "queueflow.runtime.inprocess",
        "queueflow_client.client",
        "queueflow_client.tasks",
        "queueflow_worker.loop",
    } <= set(MODULES)


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_each_layer_imports_only_what_it_may(layer: str) -> None:
    broken = [
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        if within(name, layer)
        for target in targets
        if forbidden(target, FORBIDDEN[layer]) and not within(target, layer)
    ]
    assert broken == []


def test_only_the_engine_reaches_its_workflows() -> None:
    # The Engine's methods are the one way into a workflow (`engine.workflow_facade`): its `Workflows` is its own.
    # The stores hold a `_workflows` of their own (their rows), and never import the engine.
    reached = sorted(
        f"{name}:{node.lineno}"
        for name, path in MODULES.items()
        if not within(name, "queueflow.engine") and not within(name, "queueflow.stores")
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Attribute) and node.attr == "_workflows"
    )
    assert reached == []


def test_the_worker_package_needs_nothing_but_the_standard_library() -> None:
    # Its distribution declares no dependency (sdks/worker/pyproject.toml): the server's tasks extra and the SDK
    # both install it, and neither should bring the other's dependencies (httpx, litestar) along with it.
    outside = sorted(
        f"{name} imports {target}"
        for name, path in MODULES.items()
        if within(name, "queueflow_worker")
        for target in top_level_imports(path)
        if target not in sys.stdlib_module_names and target != "queueflow_worker"
    )
    assert outside == []


def top_level_imports(path: Path) -> set[str]:
    """The top-level names of the absolute imports in `path` (`from __future__` counts as `__future__`)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.partition(".")[0])
    return found


def test_the_rules_catch_a_broken_import() -> None:
    # The rules above are only as good as this: a server module reaching into the SDK, the worker loop into the
    # SDK, and the SDK into the server are each caught; a layer's imports of itself are not.
    assert forbidden("queueflow_client.loop", FORBIDDEN["queueflow"])
    assert forbidden("queueflow_client", FORBIDDEN["queueflow_worker"])
    assert forbidden("queueflow.engine", FORBIDDEN["queueflow_client"])
    assert forbidden("queueflow.api.body", FORBIDDEN["queueflow.runtime"])
    assert forbidden("queueflow.runtime.wakeups", FORBIDDEN["queueflow.engine"])
    assert not forbidden("queueflow_worker.loop", FORBIDDEN["queueflow"])
    assert not forbidden("queueflow_worker", FORBIDDEN["queueflow_client"])


def cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """The modules of each strongly connected component that has a cycle (Tarjan's algorithm)."""
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
