"""Small builders shared by the PostgreSQL-only tests."""

from __future__ import annotations

import random
from typing import Any

from msgspec.structs import replace
from queueflow.clocks import TestClock
from queueflow.core.ids import new_id
from queueflow.core.types import BackoffPolicy, Job, JobStatus
from queueflow.engine import Engine, EngineSettings
from queueflow.ports import JobStore

from tests.moments import START, T

_rng = random.Random(3)


def engine_on(store: JobStore, clock: TestClock, *, seed: int = 11, **settings: Any) -> Engine:
    """An engine with seeded randomness: give engines that insert side by side different seeds (ids differ)."""
    return Engine(store, clock, rng=random.Random(seed), settings=EngineSettings(**settings))


def row(**changes: Any) -> Job:
    """A valid pending job row as the engine would hand it to a store, with `changes` applied."""
    job = Job(
        id=new_id("job", START, _rng),
        tenant_id=T,
        queue_name="default",
        task_name="t",
        payload={},
        status=JobStatus.PENDING,
        priority=0,
        scheduled_at=START,
        max_retries=3,
        backoff=BackoffPolicy(),
        timeout_seconds=None,
        metadata={},
        created_at=START,
    )
    return replace(job, **changes)
