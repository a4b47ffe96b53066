"""Named parameters for SQL with many of them: a frozen dataclass declares each parameter once, with its SQL type
beside its Python type, and the order of its fields is the order of the `$n` asyncpg sends. A statement may take
the fields of several such dataclasses, numbered one after the other in the order given.

    @dataclass(frozen=True, slots=True, kw_only=True)
    class Args:
        queues: Annotated[list[str], "text[]"]
        now: Annotated[datetime, "timestamptz"]

    p = Placeholders(Args)           # p.queues == "$1::text[]", p.now == "$2::timestamptz"
    SQL = f"... WHERE queue_name = ANY({p.queues}) AND scheduled_at <= {p.now}"
    await db.fetch(SQL, *values(Args(queues=..., now=...)))

The SQL text is built once, on import, from the placeholders: asyncpg prepares it once per connection and
PostgreSQL caches its plan, exactly as for text written with `$n` by hand.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, get_type_hints


class Placeholders:
    """`$n::type` of each field of the parameters dataclasses `args`, by field name, numbered in field order."""

    def __init__(self, *args: type) -> None:
        every = [parameter for group in args for parameter in _parameters(group)]
        self._refs = {name: f"${n}::{sql_type}" for n, (name, sql_type) in enumerate(every, 1)}
        assert len(self._refs) == len(every), "a parameter's name is given twice"

    def __getattr__(self, name: str) -> str:
        try:
            return self._refs[name]
        except KeyError:
            raise AttributeError(f"no parameter {name!r}") from None


def values(*args: Any) -> list[Any]:
    """The values of `args`, parameters dataclasses, in the order of their placeholders."""
    return [getattr(group, name) for group in args for name, _ in _parameters(type(group))]


def sql_types(*args: type) -> list[str]:
    """The SQL type of each parameter of `args`, in order (for a `PREPARE name(types) AS ...`)."""
    return [sql_type for group in args for _, sql_type in _parameters(group)]


_PARAMETERS: dict[type, tuple[tuple[str, str], ...]] = {}


def _parameters(args: type) -> tuple[tuple[str, str], ...]:
    """Each field of the dataclass `args` with the SQL type its annotation carries, in field order."""
    known = _PARAMETERS.get(args)
    if known is None:
        hints = get_type_hints(args, include_extras=True)
        known = _PARAMETERS[args] = tuple((f.name, hints[f.name].__metadata__[0]) for f in fields(args))
    return known
