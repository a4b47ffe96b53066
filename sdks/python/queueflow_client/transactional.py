"""Enqueue inside your own database transaction, through the connection you already hold.

    async with pool.acquire() as connection, connection.transaction():    # asyncpg
        await connection.execute("INSERT INTO orders (id) VALUES ($1)", 42)
        job_id = await enqueue_in(connection, "send_receipt", {"order": 42}, tenant_id="acme")

    with psycopg.connect(url) as connection:                               # psycopg 3, sync
        connection.execute("INSERT INTO orders (id) VALUES (%s)", (42,))
        job_id = enqueue_in_sync(connection, "send_receipt", {"order": 42}, tenant_id="acme")

The job exists if and only if that transaction commits, and workers wake when it does. Both functions call
`queueflow.enqueue(...)`, the SQL function the server's migrations install (README.md, "Enqueue in your own
transaction"), so they need a database migrated by a QueueFlow server and a role that may execute the function (its
owner, or one granted `queueflow_enqueuer`). The options and their defaults are those of `jobs.enqueue`
(`queueflow_client.options.EnqueueOptions`).

`enqueue_in` takes an asyncpg connection, a psycopg 3 `AsyncConnection` or `AsyncCursor`, or an SQLAlchemy
`AsyncConnection` or `AsyncSession`; `enqueue_in_sync` a psycopg 3 `Connection` or `Cursor`, or an SQLAlchemy
`Connection` or `Session`. None of them is a dependency of this package: the driver is recognised by the module
its connection class comes from. A value the function rejects raises the driver's own error for SQLSTATE 22023
(`invalid_parameter_value`), whose message names every bad field; your transaction is then aborted, as with any
failed statement.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Unpack

from queueflow_client.options import EnqueueOptions
from queueflow_client.types import Backoff, Sequence, Unique

# Parameter → its SQL type. CAST(... AS type) rather than `::type`, which SQLAlchemy's text() does not parse
# after a bind parameter.
_TYPES = {
    "tenant_id": "text",
    "task_name": "text",
    "payload": "jsonb",
    "queue_name": "text",
    "priority": "integer",
    "run_at": "timestamptz",
    "delay_seconds": "double precision",
    "max_retries": "integer",
    "backoff": "jsonb",
    "timeout_seconds": "double precision",
    "metadata": "jsonb",
    "idempotency_key": "text",
    "concurrency_key": "text",
    "unique": "jsonb",
    "expires_at": "timestamptz",
    "expires_in": "double precision",
    "sequence": "jsonb",
}
# An option whose SQL parameter is named otherwise (`unique` is a reserved word in SQL).
_SQL_NAMES = {"unique": "unique_rule"}
# An option the function takes as another parameter, computed in the database: `expires_in` is `expires_at` from
# the database's clock, as the HTTP route counts it from the server's.
_SQL_EXPRESSIONS = {"expires_in": "expires_at => clock_timestamp() + make_interval(secs => {value})"}


async def enqueue_in(
    connection: Any,
    task_name: str,
    payload: Mapping[str, Any] | None = None,
    *,
    tenant_id: str,
    **options: Unpack[EnqueueOptions],
) -> str:
    """Enqueue a job in `connection`'s current transaction (an async driver's); returns the job's id."""
    params = _params(tenant_id, task_name, payload, options)
    driver = _driver(connection)
    if driver == "asyncpg":
        sql, args = _statement(params, lambda index, _name: f"${index}")
        return str(await connection.fetchval(sql, *args))
    if driver == "psycopg":
        sql, args = _statement(params, lambda _index, _name: "%s")
        cursor = await connection.execute(sql, args)
        row = await cursor.fetchone()
        return str(row[0])
    if driver == "sqlalchemy":
        from sqlalchemy import text

        sql, _ = _statement(params, lambda _index, name: f":{name}")
        result = await connection.execute(text(sql), params)
        return str(result.scalar_one())
    raise TypeError(f"enqueue_in takes an asyncpg, psycopg or SQLAlchemy async connection, not {type(connection)!r}")


def enqueue_in_sync(
    connection: Any,
    task_name: str,
    payload: Mapping[str, Any] | None = None,
    *,
    tenant_id: str,
    **options: Unpack[EnqueueOptions],
) -> str:
    """Enqueue a job in `connection`'s current transaction (a sync driver's); returns the job's id."""
    params = _params(tenant_id, task_name, payload, options)
    driver = _driver(connection)
    if driver == "psycopg":
        sql, args = _statement(params, lambda _index, _name: "%s")
        row = connection.execute(sql, args).fetchone()
        return str(row[0])
    if driver == "sqlalchemy":
        from sqlalchemy import text

        sql, _ = _statement(params, lambda _index, name: f":{name}")
        return str(connection.execute(text(sql), params).scalar_one())
    raise TypeError(f"enqueue_in_sync takes a psycopg or SQLAlchemy connection or session, not {type(connection)!r}")


def _driver(connection: Any) -> str:
    return type(connection).__module__.split(".", 1)[0]


def _params(tenant_id: str, task_name: str, payload: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters to send, in the function's order: only those given, so the function's defaults apply."""
    unknown = set(options) - EnqueueOptions.__optional_keys__
    if unknown:
        raise TypeError(f"unknown enqueue option(s): {', '.join(sorted(unknown))}")
    if options.get("expires_at") is not None and options.get("expires_in") is not None:
        raise TypeError("expires_in cannot be combined with expires_at")
    given: dict[str, Any] = {"tenant_id": tenant_id, "task_name": task_name, "payload": payload, **options}
    params: dict[str, Any] = {}
    for name, sql_type in _TYPES.items():
        value: Any = given.get(name)
        if value is None:
            continue
        if isinstance(value, Backoff | Unique | Sequence):
            value = value.to_json()
        if isinstance(value, timedelta):
            value = value.total_seconds()
        if sql_type == "jsonb":
            value = json.dumps(value, ensure_ascii=False, allow_nan=False)
        elif sql_type == "double precision":
            value = float(value)
        params[name] = value
    return params


def _statement(params: Mapping[str, Any], placeholder: Any) -> tuple[str, list[Any]]:
    arguments = ", ".join(
        _SQL_EXPRESSIONS.get(name, f"{_SQL_NAMES.get(name, name)} => {{value}}").format(
            value=f"CAST({placeholder(index, name)} AS {_TYPES[name]})"
        )
        for index, name in enumerate(params, start=1)
    )
    return f"SELECT queueflow.enqueue({arguments})", list(params.values())
