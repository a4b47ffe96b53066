"""What a request handler may need of the app, as one object on the app's state: every API handler reads it with
`services_of(request)`.

Not a Litestar dependency: resolving even one dependency costs a request its own steps (the resolution, a cleanup
group entered on an exit stack, one more field of the signature model to convert), 5 µs of a 65 µs `GET
/v1/jobs/{id}` in-process, for a value that never changes; and several dependencies were resolved concurrently, in
a task group started per request, which cost the worker routes more than their own work (py-spy, single-job
drain). Who is calling is the request's (`auth.tenant_of`, `auth.worker_scope`), read by the handler as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from litestar import Request

from queueflow.api.observe import Metrics
from queueflow.engine import Engine
from queueflow.runtime.wakeups import Wakeups
from queueflow.settings import Settings

STATE_KEY = "services"


@dataclass(frozen=True, slots=True)
class Services:
    engine: Engine
    metrics: Metrics
    wakeups: Wakeups
    settings: Settings


def services_of(request: Request[Any, Any, Any]) -> Services:
    """The app's `Services` (put on its state by `create_app`)."""
    services: Services = request.app.state[STATE_KEY]
    return services
