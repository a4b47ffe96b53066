"""The Litestar application: `create_app(settings, store=..., clock=...)` wires ports, routes and error handling."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from litestar import Litestar, Router
from litestar.datastructures import State
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme

from queueflow import __version__
from queueflow.api.auth import DEFAULT_TENANT, Keyring, authenticator
from queueflow.api.endpoints import EndpointsController, endpoint_options, endpoints_options
from queueflow.api.jobs import JobsController, QueuesController, jobs_options, queue_options
from queueflow.api.observe import Metrics, Observe
from queueflow.api.openapi import StrictStructSchemaPlugin
from queueflow.api.ops import health, prometheus_metrics, ready
from queueflow.api.problems import EXCEPTION_HANDLERS
from queueflow.api.schedules import SchedulesController, schedule_options, schedules_options
from queueflow.api.sequences import SequencesController
from queueflow.api.services import STATE_KEY, Services
from queueflow.api.tracing import otel_middleware
from queueflow.api.triggers import EventsController, TriggersController, trigger_options, triggers_options
from queueflow.api.worker import WorkerController
from queueflow.api.workflows import WorkflowsController, workflows_options
from queueflow.core.backoff import RandomSource
from queueflow.dashboard import DashboardPlugin
from queueflow.engine import Engine
from queueflow.ports import Clock, Resolver, Store
from queueflow.runtime.wakeups import Wakeups
from queueflow.settings import Settings

SECURITY_SCHEME = "BearerAuth"


def create_app(
    settings: Settings,
    *,
    store: Store,
    clock: Clock,
    wakeups: Wakeups | None = None,
    rng: RandomSource | None = None,
    lifespan: Sequence[Callable[[Litestar], AbstractAsyncContextManager[None]]] = (),
    tracer_provider: Any = None,
    resolver: Resolver | None = None,
) -> Litestar:
    """The HTTP API over `store`. `wakeups` is the hub the store (or its notifier) signals on insert; without
    one, long-polling leases fall back to polling every `settings.safety_poll` seconds. `lifespan` context
    managers run around the app's life (a server process starts its notifier and loops there). With an
    OpenTelemetry `tracer_provider` (the `queueflow[otel]` extra) every request gets a server span. `resolver` answers
    what a push endpoint's host resolves to (default: the operating system's)."""
    engine = Engine(store, clock, rng=rng, settings=settings.engine_settings, resolver=resolver)
    metrics = Metrics()
    hub = wakeups if wakeups is not None else Wakeups()
    keyring = Keyring(settings)

    v1 = Router(
        path="/v1",
        route_handlers=[
            jobs_options,
            JobsController,
            queue_options,
            QueuesController,
            workflows_options,
            WorkflowsController,
            WorkerController,
            schedules_options,
            schedule_options,
            SchedulesController,
            endpoints_options,
            endpoint_options,
            EndpointsController,
            triggers_options,
            trigger_options,
            TriggersController,
            EventsController,
            SequencesController,
        ],
        before_request=authenticator(keyring),
        security=[{SECURITY_SCHEME: []}],
    )
    app = Litestar(
        route_handlers=[v1, health, ready, prometheus_metrics],
        # What the API's handlers use (see `api.services`); the dashboard provides its own (`engine`) on its router.
        state=State({STATE_KEY: Services(engine, metrics, hub, settings)}),
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=list(lifespan),
        plugins=[
            StrictStructSchemaPlugin(),
            DashboardPlugin(engine, settings, clock, keyring, default_tenant=DEFAULT_TENANT),
        ],
        request_max_body_size=settings.max_body_bytes,
        openapi_config=OpenAPIConfig(
            title="QueueFlow",
            version=__version__,
            description="A durable job queue and DAG-workflow engine whose only moving part is PostgreSQL.",
            use_handler_docstrings=True,
            components=Components(
                security_schemes={SECURITY_SCHEME: SecurityScheme(type="http", scheme="bearer")},
            ),
        ),
    )
    # Wrapping the whole ASGI handler (not a route middleware) also observes unrouted 404s and 405s.
    app.asgi_handler = Observe(app.asgi_handler, metrics, access_log=settings.access_log)
    if tracer_provider is not None:
        app.asgi_handler = otel_middleware(app.asgi_handler, tracer_provider)
    return app
