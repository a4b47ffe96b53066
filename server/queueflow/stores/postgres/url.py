"""Database URLs: users write `postgresql://…`; SQLAlchemy wants the driver named, asyncpg wants it not."""

from __future__ import annotations

_SCHEMES = ("postgresql", "postgres", "postgresql+asyncpg")


def _split(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in _SCHEMES:
        raise ValueError(f"not a PostgreSQL URL (postgresql://user@host:port/db): {url.split('@')[-1]!r}")
    return rest


def sqlalchemy_url(url: str) -> str:
    """`url` for SQLAlchemy's asyncpg dialect (`postgresql+asyncpg://…`)."""
    return f"postgresql+asyncpg://{_split(url)}"


def asyncpg_dsn(url: str) -> str:
    """`url` for `asyncpg.connect` (`postgresql://…`)."""
    return f"postgresql://{_split(url)}"
