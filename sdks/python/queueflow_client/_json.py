"""The JSON the caller hands the client, checked before a request is built.

A payload that is not an object, or a value JSON cannot carry (a `datetime`, a `set`, NaN), would otherwise fail
deep inside the HTTP layer with a bare `TypeError` that names neither the argument nor the value. Here the
mistake is named by its path (`payload["when"]`) and its type, and says what to send instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from queueflow_client.errors import ArgumentError

_SCALARS = (str, int, bool, type(None))
_HINTS = {
    "datetime": "a string, e.g. value.isoformat()",
    "date": "a string, e.g. value.isoformat()",
    "time": "a string, e.g. value.isoformat()",
    "timedelta": "a number, e.g. value.total_seconds()",
    "set": "a list, e.g. sorted(value)",
    "frozenset": "a list, e.g. sorted(value)",
    "Decimal": "a string or a float",
    "UUID": "a string, e.g. str(value)",
    "bytes": "a string, e.g. value.decode() or base64",
    "bytearray": "a string, e.g. value.decode() or base64",
}


def json_object(value: object, name: str) -> dict[str, Any]:
    """`value` as a dict, if it is a mapping whose every member JSON can carry; else an `ArgumentError`."""
    if not isinstance(value, Mapping):
        raise ArgumentError(f"{name} must be a JSON object (a dict), not {_kind(value)}: {value!r:.80}")
    check_json(value, name)
    return dict(value)


def check_json(value: object, path: str) -> None:
    """Raise `ArgumentError` naming the first member of `value` (at `path`) that JSON cannot carry."""
    # Iterative, so a deep value cannot exhaust the recursion limit before the server's own depth check.
    pending: list[tuple[object, str]] = [(value, path)]
    while pending:
        item, where = pending.pop()
        if isinstance(item, _SCALARS):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                raise ArgumentError(f"{where} is {item}, which JSON cannot carry: send a finite number or None")
        elif isinstance(item, Mapping):
            for key, member in item.items():
                if not isinstance(key, str):
                    raise ArgumentError(
                        f"{where} has the key {key!r} ({_kind(key)}): the keys of a JSON object are strings"
                    )
                pending.append((member, f"{where}[{key!r}]"))
        elif isinstance(item, list | tuple):
            pending.extend((member, f"{where}[{index}]") for index, member in enumerate(item))
        else:
            kind = type(item).__name__
            hint = _HINTS.get(kind, "a dict, list, str, int, float, bool or None")
            raise ArgumentError(f"{where} is {_kind(item)}, which JSON cannot carry: send {hint}")


def _kind(value: object) -> str:
    kind = type(value)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    return f"a {name}" if name[0] not in "aeiouAEIOU" else f"an {name}"
