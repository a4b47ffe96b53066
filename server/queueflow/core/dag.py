"""The shape of a workflow's graph: wrong dependencies, and cycles reported by their path.

An edge points from a step to a step it depends on. Everything here is iterative and O(V + E), so a
1000-step chain costs what ten steps cost and never meets Python's recursion limit.
"""

from __future__ import annotations

from collections.abc import Sequence

from queueflow.core.errors import FieldError


def dependency_errors(names: Sequence[str], depends_on: Sequence[Sequence[str]]) -> list[FieldError]:
    """What is wrong with how the steps `names[i]` (depending on `depends_on[i]`) refer to each other.

    Duplicate names, duplicate or unknown dependencies, self-dependencies and cycles. A cycle is reported once,
    at its first step in the submitted order, with its path: ``cycle: a → b → c → a`` (a depends on b, …).
    """
    errors: list[FieldError] = []
    index: dict[str, int] = {}
    for position, name in enumerate(names):
        if not isinstance(name, str):
            continue  # the step's own checks report it
        if name in index:
            errors.append(
                FieldError(("steps", position, "name"), f"duplicate step name {name!r} (also steps.{index[name]})")
            )
        else:
            index[name] = position
    edges: list[list[int]] = [[] for _ in names]
    for position, dependencies in enumerate(depends_on):
        seen: set[str] = set()
        for item, dependency in enumerate(dependencies):
            loc = ("steps", position, "depends_on", item)
            if not isinstance(dependency, str):
                errors.append(FieldError(loc, "must be a step name"))
            elif dependency in seen:
                errors.append(FieldError(loc, f"{dependency!r} is listed twice"))
            elif dependency == names[position]:
                errors.append(FieldError(loc, f"cycle: {dependency} → {dependency} (a step cannot depend on itself)"))
            elif dependency not in index:
                errors.append(FieldError(loc, f"unknown step {dependency!r}"))
            else:
                edges[position].append(index[dependency])
            if isinstance(dependency, str):
                seen.add(dependency)
    if len(index) == len(names):  # with duplicate names an edge's target is ambiguous: fix those first
        for cycle in find_cycles(edges):
            errors.append(FieldError(("steps", cycle[0], "depends_on"), f"cycle: {_path([names[n] for n in cycle])}"))
    return errors


def _path(cycle: list[str], shown: int = 10) -> str:
    """``a → b → c → a``; a long cycle keeps its ends, so an error never grows with the size of the workflow."""
    if len(cycle) <= shown + 2:
        return " → ".join([*cycle, cycle[0]])
    hidden = len(cycle) - shown - 1
    return " → ".join([*cycle[:shown], f"… {hidden} more …", cycle[-1], cycle[0]])


def find_cycles(edges: Sequence[Sequence[int]]) -> list[list[int]]:
    """Node-disjoint cycles that show why `edges` (node → its dependencies) has no topological order.

    Empty for a DAG. Each cycle starts at its lowest node and follows the edges: ``[a, b, c]`` is a → b → c → a.
    """
    count = len(edges)
    waiting = [len(targets) for targets in edges]
    dependents: list[list[int]] = [[] for _ in range(count)]
    for node, targets in enumerate(edges):
        for target in targets:
            dependents[target].append(node)
    # Kahn's algorithm: peel off every node whose dependencies are all peeled off.
    ready = [node for node in range(count) if waiting[node] == 0]
    while ready:
        node = ready.pop()
        for dependent in dependents[node]:
            waiting[dependent] -= 1
            if waiting[dependent] == 0:
                ready.append(dependent)
    # What is left is stuck: each stuck node depends on another stuck node, so following such edges from any of
    # them must close a cycle. A walk that runs into an earlier walk's nodes found nothing new.
    stuck = [remaining > 0 for remaining in waiting]
    visited = [False] * count
    cycles: list[list[int]] = []
    for start in range(count):
        if not stuck[start] or visited[start]:
            continue
        position: dict[int, int] = {}
        path: list[int] = []
        node = start
        while not visited[node]:
            visited[node] = True
            position[node] = len(path)
            path.append(node)
            node = next(target for target in edges[node] if stuck[target])
        if node in position:
            cycle = path[position[node] :]
            first = cycle.index(min(cycle))
            cycles.append(cycle[first:] + cycle[:first])
    return cycles
