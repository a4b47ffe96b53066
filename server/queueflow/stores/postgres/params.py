"""Named parameters for SQL with many of them: a NamedTuple declares each parameter once, with its SQL type beside
its Python type, and the order of its fields is the order of the `$n` asyncpg sends. A statement may take the
fields of several such tuples, numbered one after the other in the order given.

    class Args(NamedTuple):
        queues: Annotated[list[str], "text[]"]
        now: Annotated[datetime, "timestamptz"]

    p = Placeholders(Args)           # p.queues == "$1::text[]", p.now == "$2::timestamptz"
    SQL = f"... WHERE queue_name = ANY({p.queues}) AND scheduled_at <= {p.now}"
    await db.fetch(SQL, *values(Args(queues=..., now=...)))

The SQL text is built once, on import, from the placeholders: asyncpg prepares it once per connection and
PostgreSQL caches its plan, exactly as for text written with `$n` by hand. NamedTuples, not frozen dataclasses:
a claim builds its parameters on every lease, and a tuple is built in C (a frozen dataclass sets each field
through `object.__setattr__`: 13 µs more per claim, measured) and already holds its values in order.
"""

from __future__ import annotations

from typing import Any, NamedTuple, get_type_hints


class Placeholders:
    """`$n::type` of each field of the parameters tuples `args`, by field name, numbered in field order."""

    def __init__(self, *args: type[NamedTuple]) -> None:
        every = [parameter for group in args for parameter in _parameters(group)]
        self._refs = {name: f"${n}::{sql_type}" for n, (name, sql_type) in enumerate(every, 1)}
        assert len(self._refs) == len(every), "a parameter's name is given twice"

    def __getattr__(self, name: str) -> str:
        try:
            return self._refs[name]
        except KeyError:
            raise AttributeError(f"no parameter {name!r}") from None


def values(*args: tuple[Any, ...]) -> list[Any]:
    """The values of `args`, parameters tuples, in the order of their placeholders."""
    return [value for group in args for value in group]


def sql_types(*args: type[NamedTuple]) -> list[str]:
    """The SQL type of each parameter of `args`, in order (for a `PREPARE name(types) AS ...`)."""
    return [sql_type for group in args for _, sql_type in _parameters(group)]


def _parameters(args: type[NamedTuple]) -> list[tuple[str, str]]:
    """Each field of the NamedTuple `args` with the SQL type its annotation carries, in field order."""
    hints = get_type_hints(args, include_extras=True)
    return [(name, hints[name].__metadata__[0]) for name in args._fields]
