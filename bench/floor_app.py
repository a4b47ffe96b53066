"""`queueflow serve` with one route more, for the bench alone: the per-request floor of issue 46.

`GET /bench/floor/{id}` runs one prepared one-row `SELECT` by primary key on `queueflow.jobs` and answers the row as
JSON: the "single query" shape of web-framework benchmarks. It is served by the very app `queueflow serve` builds
(`api.create_app`, through `serve`'s own wiring: settings, uvicorn's config, the pool, the lifespan's loops, the
access log and metrics around every request), so a route's CPU ÷ this one is what the route costs beyond one
statement and one JSON answer. What it shares with the API's routes, and how:

- the pool: the store's own (`_connection`, the checkout, error translation and return every store method takes),
  so the statement is prepared once per connection by asyncpg's statement cache, as every store statement is;
- authentication: the tenant key, checked by the API's own `authenticator` hook (a keyring of its own, built from the
  same settings: one digest and one dictionary probe, as on `/v1`), so the floor pays what every tenant route pays;
- the path parameter: declared as `GET /v1/jobs/{id}`'s is (`JobIdPath`, its pattern checked);
- the answer: a msgspec Struct returned from the handler, encoded by Litestar as the API's are.

It reads by id alone (not by tenant as well, as `GET /v1/jobs/{id}` does): one index probe on the primary key.
The route is left out of the OpenAPI document and exists only in this process: the product has no such route.

    python -m bench.floor_app serve [the flags of `queueflow serve`]
"""

from __future__ import annotations

import sys
from typing import Any

import msgspec
from litestar import Litestar, Router, get
from litestar.exceptions import NotFoundException
from queueflow.api import create_app
from queueflow.api.auth import TENANT, Keyring, authenticator
from queueflow.api.schemas.common import JobIdPath
from queueflow.cli import main as queueflow_main
from queueflow.settings import Settings, SettingsError
from queueflow.stores.postgres import PostgresJobStore

from bench.server import FLOOR_PATH

FLOOR_SELECT = "SELECT id, queue_name, task_name, status, priority FROM queueflow.jobs WHERE id = $1"


class FloorRow(msgspec.Struct, frozen=True):
    id: str
    queue_name: str
    task_name: str
    status: str
    priority: int


def floor_router(settings: Settings, store: PostgresJobStore) -> Router:
    """The floor's one route, behind the tenant key as the API's tenant routes are."""

    @get("/{job_id:str}", opt=TENANT, include_in_schema=False)
    async def floor(job_id: JobIdPath) -> FloorRow:
        async with store._connection() as db:
            row = await db.fetchrow(FLOOR_SELECT, job_id)
        if row is None:
            raise NotFoundException(f"no job {job_id}")
        return FloorRow(row[0], row[1], row[2], row[3], row[4])

    return Router(path=FLOOR_PATH, route_handlers=[floor], before_request=authenticator(Keyring(settings)))


def create_floor_app(settings: Settings, *, store: Any, **ports: Any) -> Litestar:
    """`api.create_app(settings, store=store, **ports)` with the floor's route added (a `serve.AppFactory`)."""
    if not isinstance(store, PostgresJobStore):
        raise SettingsError("the floor route runs SQL: it needs a PostgreSQL database URL")
    app = create_app(settings, store=store, **ports)
    app.register(floor_router(settings, store))
    return app


if __name__ == "__main__":
    raise SystemExit(queueflow_main(sys.argv[1:], app_factory=create_floor_app))
