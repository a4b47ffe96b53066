"""Alembic's environment for QueueFlow: async (asyncpg), or on a connection the caller already holds.

The URL comes from, in order: `config.attributes["database_url"]`, `QUEUEFLOW_DATABASE_URL`, `sqlalchemy.url`.
A caller that is already inside an event loop (a server's lifespan, a test) opens the connection itself and
passes it as `config.attributes["connection"]` from `AsyncConnection.run_sync` — `asyncio.run` would fail there.
"""

from __future__ import annotations

import asyncio
import os
from logging.config import fileConfig

from alembic import context
from queueflow.stores.postgres.schema import migration_engine
from queueflow.stores.postgres.url import sqlalchemy_url
from sqlalchemy.engine import Connection

config = context.config

if config.config_file_name is not None and config.attributes.get("configure_logging", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def database_url() -> str:
    url = config.attributes.get("database_url") or os.environ.get("QUEUEFLOW_DATABASE_URL")
    url = url or config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("no database URL: pass --database-url or set QUEUEFLOW_DATABASE_URL")
    return sqlalchemy_url(url)


def run_on(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=None, transaction_per_migration=True)
    with context.begin_transaction():
        context.run_migrations()


async def run_async() -> None:
    engine = migration_engine(database_url())
    try:
        async with engine.connect() as connection:
            await connection.run_sync(run_on)
            await connection.commit()
    finally:
        await engine.dispose()


def run_offline() -> None:
    context.configure(url=database_url(), target_metadata=None, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
elif isinstance(given := config.attributes.get("connection"), Connection):
    run_on(given)
else:
    asyncio.run(run_async())
