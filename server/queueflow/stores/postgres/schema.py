"""The PostgreSQL schema's migrations: Alembic, driven from code (`queueflow migrate`, tests, a server's start).

The migration scripts live in `migrations/` beside this module, so they ship inside the wheel and an installed
server can create its schema; they are the schema's single source. The repository's `alembic.ini` points at the
same folder, so `alembic upgrade head` in a checkout does what `queueflow migrate` does.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from queueflow.stores.postgres.url import sqlalchemy_url

MIGRATION_LOCK = 0x51F10_0001  # any constant of our own: the advisory lock that serialises migrations
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def alembic_config(database_url: str | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    # Logging belongs to whoever runs us; Alembic's fileConfig would reconfigure the process.
    config.attributes["configure_logging"] = False
    if database_url is not None:
        # Through attributes, not set_main_option: ConfigParser would read a '%' in a password as interpolation.
        config.attributes["database_url"] = sqlalchemy_url(database_url)
    return config


def upgrade(database_url: str, revision: str = "head") -> None:
    """Migrate the schema up to `revision`. Not from inside a running event loop: use `upgrade_async` there."""
    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(database_url), revision)


async def upgrade_async(database_url: str, revision: str = "head") -> None:
    """`upgrade`, for callers already inside an event loop (a server's lifespan)."""
    await _run_async(database_url, lambda config: command.upgrade(config, revision))


async def downgrade_async(database_url: str, revision: str = "base") -> None:
    await _run_async(database_url, lambda config: command.downgrade(config, revision))


def migration_engine(url: str) -> AsyncEngine:
    """An engine for one migration run: no pool, and prepared statements named uniquely. Behind a transaction-mode
    pooler (PgBouncer) a server connection outlives its clients with their statements still prepared: asyncpg's
    default names (`__asyncpg_stmt_1__`, counted per connection) then collided when servers started together
    ("prepared statement already exists")."""
    return create_async_engine(
        url,
        poolclass=NullPool,
        connect_args={"prepared_statement_name_func": lambda: f"__queueflow_migrate_{uuid.uuid4().hex}__"},
    )


async def _run_async(database_url: str, run: Callable[[Config], None]) -> None:
    engine = migration_engine(sqlalchemy_url(database_url))
    try:
        async with engine.connect() as connection:
            # Processes that start together migrate one at a time; the lock ends with the migration's transaction.
            await connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})

            def on_connection(sync_connection: Connection) -> None:
                config = alembic_config(database_url)
                config.attributes["connection"] = sync_connection
                run(config)

            await connection.run_sync(on_connection)
            await connection.commit()
    finally:
        await engine.dispose()
