"""Properties of flow control under random interleavings of lease, complete, fail, cancel, janitor sweeps and
settings changes (the in-memory store, the reference the store-contract suite holds PostgreSQL to)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Coroutine
from typing import Any, TypeVar

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule
from queueflow.core.flow import QueueSettings, QueueSettingsPatch, RateLimit
from queueflow.core.types import CLAIMABLE, BackoffPolicy, Job, JobStatus, NewJob
from queueflow.testing import TestClock, make_engine

TENANTS = ("a", "b")
KEYS = st.sampled_from([None, "k1", "k2"])
LIMITS = st.sampled_from([None, 1, 2, 3])
PAUSED = st.sampled_from([False, False, False, True])  # mostly running: a paused queue tests little else
R = TypeVar("R")


class FlowControl(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.clock = TestClock()
        self.engine = make_engine(clock=self.clock, seed=3)
        self.settings = dict.fromkeys(TENANTS, QueueSettings())

    def run(self, coro: Coroutine[Any, Any, R]) -> R:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        self.loop.close()

    def jobs(self) -> list[Job]:
        return [job for tenant in TENANTS for job in self.run(self.engine.list_jobs(tenant, limit=500)).items]

    def running(self) -> list[Job]:
        return [job for job in self.jobs() if job.status is JobStatus.RUNNING]

    @rule(tenant=st.sampled_from(TENANTS), key=KEYS, n=st.integers(1, 4))
    def enqueue(self, tenant: str, key: str | None, n: int) -> None:
        new = NewJob(task_name="x", concurrency_key=key, backoff=BackoffPolicy(base_seconds=1, jitter=False))
        self.run(self.engine.enqueue_many(tenant, [new] * n))

    @rule(tenant=st.sampled_from(TENANTS), paused=PAUSED, limit=LIMITS, key_limit=LIMITS)
    def configure(self, tenant: str, paused: bool, limit: int | None, key_limit: int | None) -> None:
        patch = QueueSettingsPatch(paused=paused, concurrency_limit=limit, key_concurrency_limit=key_limit)
        self.settings[tenant] = self.run(self.engine.configure_queue(tenant, "default", patch)).settings

    @rule(n=st.integers(1, 6))
    def lease(self, n: int) -> None:
        before = Counter((job.tenant_id, job.concurrency_key) for job in self.running())
        leased = self.run(self.engine.lease(["default"], max_jobs=n))
        after = Counter((job.tenant_id, job.concurrency_key) for job in self.running())
        for tenant in {job.tenant_id for job in leased}:
            rules = self.settings[tenant]
            assert not rules.paused, "a paused queue's job was leased"
            mine = sum(count for (owner, _), count in after.items() if owner == tenant)
            if rules.concurrency_limit is not None:
                assert mine <= rules.concurrency_limit, "a lease went past the concurrency limit"
            for job in leased:
                if job.tenant_id == tenant and job.concurrency_key is not None and rules.key_concurrency_limit:
                    assert after[tenant, job.concurrency_key] <= rules.key_concurrency_limit
        if len(leased) < n:
            # Liveness: a lease that came back short left nothing it was allowed to take.
            assert not self._leasable(after), "a lease returned fewer jobs than it could have taken"
        assert sum(after.values()) == sum(before.values()) + len(leased)

    def _leasable(self, running: Counter[tuple[str, str | None]]) -> bool:
        now = self.clock.now()
        for job in self.jobs():
            if job.status not in CLAIMABLE or job.scheduled_at > now:
                continue
            rules = self.settings[job.tenant_id]
            mine = sum(count for (owner, _), count in running.items() if owner == job.tenant_id)
            if rules.paused or (rules.concurrency_limit is not None and mine >= rules.concurrency_limit):
                continue
            key_limit = rules.key_concurrency_limit
            keyed = job.concurrency_key is not None and key_limit is not None
            if keyed and running[job.tenant_id, job.concurrency_key] >= key_limit:  # type: ignore[operator]
                continue
            return True
        return False

    @precondition(lambda self: self.running())
    @rule(data=st.data(), action=st.sampled_from(["complete", "fail", "cancel"]))
    def finish(self, data: st.DataObject, action: str) -> None:
        job = data.draw(st.sampled_from(sorted(self.running(), key=lambda job: job.id)))
        token = job.lease_token or ""
        if action == "complete":
            self.run(self.engine.complete(job.id, token))
        elif action == "fail":
            self.run(self.engine.fail(job.id, token, "boom"))
        else:
            self.run(self.engine.cancel_job(job.tenant_id, job.id))

    @rule(seconds=st.sampled_from([1.0, 31.0]))
    def time_passes_and_the_janitor_sweeps(self, seconds: float) -> None:
        self.clock.advance(seconds=seconds)
        self.run(self.engine.run_maintenance())


FlowControl.TestCase.settings = settings(max_examples=120, stateful_step_count=30, deadline=None)
TestFlowControl = FlowControl.TestCase


def test_rate_limit_never_grants_more_than_the_bucket_allows() -> None:
    # The bound over any window: burst + rate × window, for any lease sizes and steps of time.
    loop = asyncio.new_event_loop()
    try:
        clock = TestClock()
        engine = make_engine(clock=clock, seed=5)
        loop.run_until_complete(engine.enqueue_many("a", [NewJob(task_name="x")] * 300))
        rate = RateLimit(jobs=4, per_seconds=2)
        loop.run_until_complete(engine.configure_queue("a", "default", QueueSettingsPatch(rate_limit=rate)))
        leased = 0
        for step, size in enumerate([1, 3, 7, 2, 5] * 20):
            clock.advance(seconds=0.3 * (step % 3))
            leased += len(loop.run_until_complete(engine.lease(["default"], max_jobs=size)))
        total_seconds = sum(0.3 * (step % 3) for step in range(100))
        assert leased <= rate.jobs + total_seconds * rate.jobs / rate.per_seconds + 1e-9
        assert leased >= total_seconds * rate.jobs / rate.per_seconds - 1  # and it does not starve
    finally:
        loop.close()
