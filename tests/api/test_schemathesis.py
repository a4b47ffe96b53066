"""The app against its own spec: schemathesis generates requests from `/schema/openapi.json` and checks every
answer (no 500s, documented status codes, content types and bodies matching their schemas, auth enforced).

Credentials come from config files (`tests/schemathesis/tenant.toml` for every route but the worker routes,
`worker.toml` for those), not from headers here, so negative auth cases stay negative.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, settings
from queueflow.api import create_app
from queueflow.clocks import TestClock
from queueflow.resolver import StaticResolver
from queueflow.runtime.wakeups import Wakeups
from queueflow.settings import Settings
from queueflow.stores.memory import InMemoryJobStore
from schemathesis.config import SchemathesisConfig

import tests.schemathesis.hooks  # noqa: F401 - registers the hooks

CONFIGS = Path(__file__).parent.parent / "schemathesis"
KEYS = Settings(
    api_keys={"test-tenant-key": "tenant-a"},
    worker_keys={"test-worker-key": None},
    lease_wait_limit=0.01,  # generated long-polls end at once instead of after up to a minute
)
WORKER_ROUTES = "^/v1/worker/"

wakeups = Wakeups()
app = create_app(
    KEYS,
    store=InMemoryJobStore(wakeups=wakeups),
    clock=TestClock(datetime(2026, 3, 1, tzinfo=UTC)),
    wakeups=wakeups,
    rng=random.Random(1),
    # Generated push endpoints name hosts no DNS knows: here every name is a public address.
    resolver=StaticResolver(default=["93.184.215.14"]),
)


def load(config: str) -> schemathesis.schemas.BaseSchema:
    return schemathesis.openapi.from_asgi(
        "/schema/openapi.json", app, config=SchemathesisConfig.from_path(CONFIGS / config)
    )


tenant_schema = load("tenant.toml").exclude(path_regex=WORKER_ROUTES)
worker_schema = load("worker.toml").include(path_regex=WORKER_ROUTES)
EXAMPLES = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))


@tenant_schema.parametrize()
@EXAMPLES
def test_tenant_and_operations_routes_keep_the_spec(case: schemathesis.Case) -> None:
    case.call_and_validate()


@worker_schema.parametrize()
@EXAMPLES
def test_worker_routes_keep_the_spec(case: schemathesis.Case) -> None:
    case.call_and_validate()
