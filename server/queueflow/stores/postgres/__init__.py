"""The PostgreSQL store: `PostgresJobStore`, its schema's migrations (`schema`, `migrations/`)."""

from queueflow.stores.postgres.store import PostgresJobStore

__all__ = ["PostgresJobStore"]
