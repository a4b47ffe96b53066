"""What a request handler may need of the app, as one dependency: every API handler takes `services` and no other.

Litestar resolves several dependencies of one handler concurrently, in a task group it starts per request;
for the worker routes, the hot path, that task group cost more than the handler's own work (py-spy, single-job
drain). With one `services` dependency there is nothing to resolve concurrently. Who is calling is the request's
(`auth.tenant_of`, `auth.worker_scope`), read by the handler, not a second dependency.
"""

from __future__ import annotations

from dataclasses import dataclass

from queueflow.api.observe import Metrics
from queueflow.engine import Engine
from queueflow.runtime.wakeups import Wakeups
from queueflow.settings import Settings


@dataclass(frozen=True, slots=True)
class Services:
    engine: Engine
    metrics: Metrics
    wakeups: Wakeups
    settings: Settings
