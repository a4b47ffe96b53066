"""Properties of the job lifecycle under random interleavings of every worker and tenant operation."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from queueflow.core.errors import InvalidState, LeaseLost
from queueflow.core.types import FINISHED, BackoffPolicy, Job, JobStatus, NewJob
from queueflow.testing import TestClock, make_engine

T = "t"
ACTIONS = st.sampled_from(["complete", "fail", "fatal", "heartbeat"])
R = TypeVar("R")


class JobLifecycle(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.clock = TestClock()
        self.engine = make_engine(clock=self.clock, seed=1)
        self.tokens: dict[str, list[str]] = {}  # every token each job was ever leased with, newest last

    def run(self, coro: Coroutine[Any, Any, R]) -> R:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        self.loop.close()

    def jobs(self) -> list[Job]:
        return self.run(self.engine.list_jobs(T, limit=500)).items

    @rule(max_retries=st.integers(0, 3), timeout=st.sampled_from([None, 20.0]))
    def enqueue(self, max_retries: int, timeout: float | None) -> None:
        new = NewJob(
            task_name="x", max_retries=max_retries, timeout_seconds=timeout, backoff=BackoffPolicy(base_seconds=1)
        )
        self.run(self.engine.enqueue(T, new))

    @rule(n=st.integers(1, 3), lease=st.sampled_from([5.0, 30.0]))
    def lease(self, n: int, lease: float) -> None:
        for job in self.run(self.engine.lease(["default"], max_jobs=n, lease_seconds=lease)):
            assert job.lease_token not in self.tokens.get(job.id, [])
            self.tokens.setdefault(job.id, []).append(job.lease_token or "")

    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), action=ACTIONS)
    def act_with_the_latest_token(self, data: st.DataObject, action: str) -> None:
        job_id = data.draw(st.sampled_from(sorted(self.tokens)))
        self.act(job_id, self.tokens[job_id][-1], action)

    @precondition(lambda self: any(len(tokens) > 1 for tokens in self.tokens.values()))
    @rule(data=st.data(), action=ACTIONS)
    def act_with_an_old_token(self, data: st.DataObject, action: str) -> None:
        job_id = data.draw(st.sampled_from(sorted(j for j, tokens in self.tokens.items() if len(tokens) > 1)))
        self.act(job_id, data.draw(st.sampled_from(self.tokens[job_id][:-1])), action)

    def act(self, job_id: str, token: str, action: str) -> None:
        before = self.run(self.engine.get_job(T, job_id))
        owns = before.status is JobStatus.RUNNING and before.lease_token == token and before.locked_until is not None
        owns = owns and before.locked_until > self.clock.now()  # type: ignore[operator]
        calls = {
            "complete": lambda: self.engine.complete(job_id, token, {"ok": True}),
            "fail": lambda: self.engine.fail(job_id, token, "boom"),
            "fatal": lambda: self.engine.fail(job_id, token, "boom", retryable=False),
            "heartbeat": lambda: self.engine.heartbeat(job_id, token),
        }
        try:
            self.run(calls[action]())
        except LeaseLost:
            assert not owns
            assert self.run(self.engine.get_job(T, job_id)) == before  # a stale token never changes a row
        else:
            assert owns

    @precondition(lambda self: self.tokens)
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        job_id = data.draw(st.sampled_from(sorted(self.tokens)))
        try:
            self.run(self.engine.cancel_job(T, job_id))
        except InvalidState:
            assert self.run(self.engine.get_job(T, job_id)).status in FINISHED

    @rule(seconds=st.sampled_from([1, 6, 31, 120]))
    def time_passes(self, seconds: int) -> None:
        self.clock.advance(seconds=seconds)

    @rule()
    def janitor(self) -> None:
        self.run(self.engine.run_maintenance())

    @invariant()
    def deliveries_are_bounded_by_the_retry_budget(self) -> None:
        for job in self.jobs():
            assert job.delivery_count <= job.max_retries + 1
            assert job.retry_count <= job.max_retries

    @invariant()
    def only_running_jobs_hold_a_lease(self) -> None:
        for job in self.jobs():
            assert (job.lease_token is not None) == (job.status is JobStatus.RUNNING)
            assert (job.completed_at is not None) == (job.status in FINISHED)


TestJobLifecycle = JobLifecycle.TestCase
TestJobLifecycle.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)
