"""The load a chaos run puts on QueueFlow, over HTTP as a user would: jobs in batches across queues, tenants and
priorities; diamond workflows; per-minute schedules; events that start a job and a workflow each. Every request
carries an idempotency key (an event its id), so the driver retries it through server kills and database blips
without enqueuing anything twice."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from typing import Any

import httpx

from tests.chaos.cluster import TENANT_KEYS
from tests.chaos.tasks import TIMEOUT_SECONDS

QUEUES = ("q0", "q1", "q2", "q3")
CRON_QUEUE = "cron"
TENANTS = tuple(TENANT_KEYS)
BACKOFF = {"strategy": "exponential", "base_seconds": 0.1, "max_seconds": 1.0, "jitter": True}
POLICY: dict[str, Any] = {"max_retries": 3, "backoff": BACKOFF, "timeout_seconds": TIMEOUT_SECONDS}
RETRY_FOR = 120.0
"""How long the driver keeps retrying one request while servers or the database are down."""


class Api:
    """Tenant calls spread over every API server, each retried (idempotently) on any server until it lands."""

    def __init__(self, bases: Sequence[str]) -> None:
        self.bases = list(bases)
        self.http = httpx.AsyncClient(timeout=30)
        self.turn = 0

    async def call(self, method: str, path: str, tenant: str, *, key: str | None = None, **kw: Any) -> Any:
        headers = {"Authorization": f"Bearer {TENANT_KEYS[tenant]}"}
        if key is not None:
            headers["Idempotency-Key"] = key
        deadline = time.monotonic() + RETRY_FOR
        while True:
            self.turn += 1
            base = self.bases[self.turn % len(self.bases)]
            try:
                response = await self.http.request(method, base + path, headers=headers, **kw)
            except httpx.TransportError:
                response = None
            if response is not None and response.status_code < 500:
                response.raise_for_status()
                return response.json() if response.content else None
            if time.monotonic() > deadline:
                raise RuntimeError(f"{method} {path} kept failing for {RETRY_FOR} s")
            await asyncio.sleep(0.1)  # back off before the next server; it may be restarting

    async def aclose(self) -> None:
        await self.http.aclose()


SEQUENCES = ("seq-0", "seq-1")
"""Each tenant's sequences: every batch adds `SEQUENCED` jobs to them in turn, on any queue (issue 43)."""
SEQUENCED = 6
UNIQUE_KEYS = ("uniq-0", "uniq-1")
"""Each tenant's unique keys: every batch enqueues `UNIQUE` jobs with them in turn (`skip`, the live states)."""
UNIQUE = 4


async def enqueue_jobs(api: Api, start: int, count: int, rng: random.Random, task_ms: int = 0) -> list[str]:
    """`task_ms`: how long each job's task takes (milliseconds), beyond what its draw makes it do. Beside the
    `count` plain jobs, the batch holds `SEQUENCED` jobs of the tenant's sequences (`on_failure: continue`, so that
    a dead one never holds the rest for good) and `UNIQUE` of its unique keys."""
    tenant = TENANTS[start // max(count, 1) % len(TENANTS)]
    shaped = [
        {
            "task_name": "chaos",
            "queue_name": rng.choice(QUEUES),
            "payload": {"seq": True, **({"ms": task_ms} if task_ms else {})},
            "idempotency_key": f"chaos-seq-{start}-{n}",
            "sequence": {"key": SEQUENCES[n % len(SEQUENCES)], "on_failure": "continue"},
            **POLICY,
        }
        for n in range(SEQUENCED)
    ] + [
        {
            "task_name": "chaos",
            "queue_name": rng.choice(QUEUES),
            "payload": {"unique": n, **({"ms": task_ms} if task_ms else {})},
            "idempotency_key": f"chaos-unique-{start}-{n}",
            "unique": {"key": UNIQUE_KEYS[n % len(UNIQUE_KEYS)]},
            **POLICY,
        }
        for n in range(UNIQUE)
    ]
    items = [
        {
            "task_name": "chaos",
            "queue_name": rng.choice(QUEUES),
            "priority": rng.randint(-5, 5),
            "payload": {"i": start + i, **({"ms": task_ms} if task_ms else {})},
            "idempotency_key": f"chaos-{start + i}",
            **POLICY,
        }
        for i in range(count)
    ]
    body = await api.call("POST", "/v1/jobs/batch", tenant, json={"jobs": items + shaped})
    return [job["id"] for job in body["jobs"]]


GROWING_EVERY = 4
"""Every fourth workflow grows and waits (`create_growing`) instead of being a diamond; of the rest, another in
four is a parent of child workflows (`create_parent`)."""
PARENT_AT = 1
"""The workflows `n` with `n % GROWING_EVERY == PARENT_AT` are parents."""
CHILD_STEPS = ("p0", "p1")
ADDED = ("m0", "m1", "m2")
SIGNAL = "go"


async def create_workflow(api: Api, n: int) -> str:
    """A diamond a → (b, c) → d, with each failure policy somewhere in it; or, every GROWING_EVERY, a workflow
    that grows and waits."""
    if n % GROWING_EVERY == GROWING_EVERY - 1:
        return await create_growing(api, n)
    if n % GROWING_EVERY == PARENT_AT:
        return await create_parent(api, n)
    step = {"task_name": "chaos", "queue_name": QUEUES[n % len(QUEUES)], **POLICY}
    steps = [
        {"name": "a", **step, "on_failure": "continue"},
        {"name": "b", **step, "depends_on": ["a"], "on_failure": "skip"},
        {"name": "c", **step, "depends_on": ["a"], "on_failure": "halt" if n % 2 else "continue"},
        {"name": "d", **step, "depends_on": ["b", "c"]},
    ]
    body = {"name": f"diamond-{n}", "steps": steps}
    workflow = await api.call("POST", "/v1/workflows", TENANTS[n % 2], key=f"wf-{n}", json=body)
    return str(workflow["id"])


async def create_growing(api: Api, n: int) -> str:
    """g (task chaos_grow) adds m0–m2 required by join; w waits for the signal `go` (sent by `send_signal`, early
    or not) after g; join after g and w. Every failure is `continue`: the workflow always reaches join."""
    step = {"task_name": "chaos", "queue_name": QUEUES[n % len(QUEUES)], **POLICY, "on_failure": "continue"}
    added = [{"name": name, **step, "required_by": ["join"]} for name in ADDED]
    steps = [
        {"name": "g", **step, "task_name": "chaos_grow", "payload": {"add": added}},
        {
            "name": "w",
            "depends_on": ["g"],
            "wait": {"signal": SIGNAL, "timeout_seconds": 300},
            "on_failure": "continue",
        },
        {"name": "join", **step, "depends_on": ["g", "w"]},
    ]
    body = {"name": f"growing-{n}", "steps": steps}
    workflow = await api.call("POST", "/v1/workflows", TENANTS[n % 2], key=f"wf-{n}", json=body)
    return str(workflow["id"])


async def create_parent(api: Api, n: int) -> str:
    """p0 and p1 each run a child workflow x → y (issue 44), then `after` runs. Every failure is `continue`, so the
    parent always reaches `after` whichever way its children end; each child step must have made one child, and
    ended as its child did (`checks`)."""
    step = {"task_name": "chaos", "queue_name": QUEUES[n % len(QUEUES)], **POLICY, "on_failure": "continue"}
    child = {"name": f"child-{n}", "steps": [{"name": "x", **step}, {"name": "y", **step, "depends_on": ["x"]}]}
    steps = [
        *({"name": name, "workflow": child, "on_failure": "continue"} for name in CHILD_STEPS),
        {"name": "after", **step, "depends_on": list(CHILD_STEPS)},
    ]
    body = {"name": f"parent-{n}", "steps": steps}
    workflow = await api.call("POST", "/v1/workflows", TENANTS[n % 2], key=f"wf-{n}", json=body)
    return str(workflow["id"])


async def send_signal(api: Api, n: int, workflow_id: str) -> None:
    """The signal the growing workflow `n` waits for; a retry whose first attempt landed finds it delivered."""
    try:
        await api.call("POST", f"/v1/workflows/{workflow_id}/signals/{SIGNAL}", TENANTS[n % 2], json={"payload": n})
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code != 409:
            raise


async def create_schedules(api: Api, count: int) -> None:
    for n in range(count):
        body = {"name": f"minutely-{n}", "cron": "* * * * *", "task_name": "chaos", "queue_name": CRON_QUEUE}
        try:
            await api.call("POST", "/v1/schedules", TENANTS[n % 2], json=body)
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code != 409:  # 409: a retried create whose first attempt landed
                raise


async def delete_schedules(api: Api, count: int) -> None:
    for n in range(count):
        try:
            await api.call("DELETE", f"/v1/schedules/minutely-{n}", TENANTS[n % 2])
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code != 404:  # 404: a retried delete whose first attempt landed
                raise


EVENT_TRIGGERS = ("chaos-event-job", "chaos-event-flow")
"""Each tenant's triggers: every `chaos.*` event starts one job and (`chaos.order`) one workflow."""


async def create_triggers(api: Api) -> None:
    step = {"task_name": "chaos", "queue_name": QUEUES[0], **POLICY}
    triggers = [
        {"name": EVENT_TRIGGERS[0], "event": "chaos.*", "task": step},
        {
            "name": EVENT_TRIGGERS[1],
            "event": "chaos.order",
            "workflow": {"name": "from-event", "steps": [{"name": "a", **step, "on_failure": "continue"}]},
        },
    ]
    for tenant in TENANTS:
        for body in triggers:
            try:
                await api.call("POST", "/v1/triggers", tenant, json=body)
            except httpx.HTTPStatusError as exc:
                if exc.response.status_code != 409:  # 409: a retried create whose first attempt landed
                    raise


async def send_event(api: Api, n: int) -> list[dict[str, str]]:
    """The event `evt-<n>`: a retry whose first attempt landed starts nothing again (the id is idempotent). What it
    started, as the answer names it."""
    body = {"name": "chaos.order", "payload": {"n": n}, "id": f"evt-{n}"}
    accepted = await api.call("POST", "/v1/events", TENANTS[n % 2], json=body)
    started: list[dict[str, str]] = accepted["started"]
    if len(started) != len(EVENT_TRIGGERS):
        raise RuntimeError(f"event evt-{n} started {started!r}")
    return started


async def resend_events(api: Api, first: dict[int, list[dict[str, str]]]) -> list[str]:
    """Every event of `first` (its number → what its first answer named) sent again, while the faults go on: the
    ids whose repeat answered other starts than the first (it must name the same job and workflow, started once)."""
    return [f"evt-{n}" for n, started in first.items() if await send_event(api, n) != started]
