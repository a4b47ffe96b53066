"""Push delivery (README.md, "Push delivery"): every `worker` / `all` process delivers jobs to the tenants' HTTP
endpoints, as a lessee would take them.

    Deliveries (service)  ──▶ one Pusher per endpoint not paused (`endpoint_deliverable`, read every `refresh` s)
    Pusher                ──▶ takes slots (the endpoint's row lock: at most `concurrency` across processes), claims
                              that many of the tenant's jobs through `Engine.lease`, and delivers each in a task
    Sender (`client`)     ──▶ the endpoint's own aiohttp pool; each new connection resolves its host once, checks
                              every address (`Endpoints.addresses`) and connects to the checked one

An endpoint that is slow or down holds only its own slots, tasks and connections: every request is bounded by the
endpoint's `timeout_seconds` (and the job's deadline), so no other endpoint's deliveries, and no lease of an
ordinary worker, waits for it.
"""

from queueflow.runtime.delivery.service import Deliveries

__all__ = ["Deliveries"]
