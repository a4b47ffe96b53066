"""The worker loop persists with what it records while the server is away: an ack or a release that fails with a
transient error is made again, with backoff, as long as a lease it carries could still hold — and no longer;
later outcomes wait behind it. Time moves only through `StepClock`."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from queueflow_client import JobContext, TaskRegistry
from queueflow_worker.loop import Outcome, WorkerLoop

from tests.monotonic import StepClock
from tests.sdk.test_loop import FakeJob, Source, Started, gated


class Away(Exception):
    """The server is away: a transient error."""


class Refused(Exception):
    """An answer a repeat cannot change (a 400, say)."""


def transient(exc: Exception) -> bool:
    return isinstance(exc, Away)


class Flaky(Source):
    """Its acks and releases fail with the next of `failures` while there is one, then land; its heartbeats fail
    with `Away` while `reachable` is clear."""

    def __init__(self, backlog: Sequence[FakeJob], failures: Sequence[Exception] = (), beats: bool = True) -> None:
        super().__init__(backlog)
        self.failures = list(failures)
        self.attempts: list[list[str]] = []
        self.answer_lost: set[str] = set()
        """Jobs whose ack is answered lease_lost."""
        self.reachable = asyncio.Event()
        if beats:
            self.reachable.set()

    def _next(self, ids: list[str]) -> None:
        self.attempts.append(ids)
        if self.failures:
            raise self.failures.pop(0)

    async def ack(self, outcomes: Sequence[Outcome]) -> list[bool]:
        self._next([o.job_id for o in outcomes])
        await super().ack(outcomes)
        return [o.job_id not in self.answer_lost for o in outcomes]

    async def release(self, leases: Sequence[tuple[str, str]]) -> list[bool]:
        self._next([job_id for job_id, _ in leases])
        return await super().release(leases)

    async def heartbeat(self, leases: Sequence[tuple[str, str]]) -> list[bool]:
        if not self.reachable.is_set():
            raise Away("heartbeat: the server is away")
        return await super().heartbeat(leases)


def worker(source: Source, started: Started, gate: asyncio.Event, clock: StepClock, **options: object) -> WorkerLoop:
    options = {"concurrency": 1, "prefetch": 0, "ack_interval": 0, "lease_seconds": 10.0, **options}
    return WorkerLoop(source, gated(gate, started), clock=clock, transient=transient, **options)  # type: ignore[arg-type]


async def until(condition: object, clock: StepClock, step: float = 0.1, most: int = 200) -> None:
    """Move the clock by `step` until `condition()` holds."""
    for _ in range(most):
        if condition():  # type: ignore[operator]
            return
        await clock.advance(step)
    raise AssertionError("never happened")


async def test_an_ack_that_fails_while_the_server_is_away_is_made_again_until_it_lands() -> None:
    # Given up at the first failure, the outcome was lost while the lease still held: the job ran again elsewhere.
    gate, started, clock = asyncio.Event(), Started(), StepClock()
    gate.set()
    source = Flaky([FakeJob("a")], [Away(), Away(), Away()])
    loop = worker(source, started, gate, clock)
    await loop.start()
    await started.until(1)
    await until(lambda: source.acked, clock)
    assert [o.job_id for o in source.acked] == ["a"]
    assert source.attempts == [["a"]] * 4
    assert clock.now() < 3  # backoff: a restarting server is back in a second or two, and so is the ack
    await loop.stop()


async def test_it_gives_up_once_no_lease_of_the_batch_could_still_hold(caplog: pytest.LogCaptureFixture) -> None:
    gate, started, clock = asyncio.Event(), Started(), StepClock()
    gate.set()
    source = Flaky([FakeJob("a")], [Away()] * 10_000, beats=False)
    loop = worker(source, started, gate, clock)
    await loop.start()  # leased at 0 for 10 s: no lease of this loop can hold past 10 on its clock
    await started.until(1)
    await until(lambda: clock.now() >= 9.5, clock)
    assert "could not record" not in caplog.text  # still trying while the lease may hold
    await until(lambda: "could not record" in caplog.text, clock)
    assert 10 <= clock.now() < 11
    tries = len(source.attempts)
    await clock.advance(5)
    assert len(source.attempts) == tries  # and then no more
    assert source.acked == []
    await loop.stop()


async def test_a_heartbeat_that_gets_through_keeps_it_trying() -> None:
    # The server answers heartbeats (the leases hold on) but not yet acks: the ack goes on past the first lease.
    gate, started, clock = asyncio.Event(), Started(), StepClock()
    gate.set()
    source = Flaky([FakeJob("a")], [Away()] * 10_000)
    loop = worker(source, started, gate, clock)
    await loop.start()
    await started.until(1)
    await until(lambda: clock.now() >= 25, clock, step=0.5)
    source.failures.clear()
    await until(lambda: source.acked, clock)
    assert [o.job_id for o in source.acked] == ["a"]
    await loop.stop()


async def test_a_lease_lost_answer_or_an_error_a_repeat_cannot_change_is_final() -> None:
    gate, started, clock = asyncio.Event(), Started(), StepClock()
    gate.set()
    source = Flaky([FakeJob("a"), FakeJob("b")], [Refused()])
    source.answer_lost = {"b"}
    loop = worker(source, started, gate, clock)
    await loop.start()
    await started.until(2)
    await until(lambda: len(source.attempts) == 2, clock)
    await clock.advance(5)
    assert source.attempts == [["a"], ["b"]]
    await loop.stop()


async def test_later_outcomes_wait_behind_the_one_being_made_again() -> None:
    gate, clock = asyncio.Event(), StepClock()
    tasks = TaskRegistry()

    @tasks.task("t")
    async def quick(payload: dict[str, Any], ctx: JobContext) -> None:
        pass

    @tasks.task("slow")
    async def slow(payload: dict[str, Any], ctx: JobContext) -> None:
        await gate.wait()

    source = Flaky([FakeJob("a"), FakeJob("b", task_name="slow")], [Away(), Away()])
    loop = WorkerLoop(source, tasks, concurrency=2, ack_interval=0, lease_seconds=10, clock=clock, transient=transient)
    await loop.start()
    await until(lambda: source.attempts, clock, step=0)
    gate.set()  # b ends while a's ack is being made again
    await until(lambda: len(source.acked) == 2, clock)
    assert source.attempts == [["a"], ["a"], ["a"], ["b"]]
    assert [o.job_id for o in source.acked] == ["a", "b"]
    await loop.stop()


async def test_a_release_that_fails_while_the_server_is_away_is_made_again() -> None:
    gate, started, clock = asyncio.Event(), Started(), StepClock()
    source = Flaky([FakeJob("a"), FakeJob("b"), FakeJob("c")], [Away(), Away()])
    loop = worker(source, started, gate, clock, prefetch=2)
    await loop.start()
    await started.until(1)
    stopping = asyncio.create_task(loop.stop())
    await until(lambda: source.released, clock)
    assert sorted(source.released) == [("b", "token"), ("c", "token")]
    assert len(source.attempts) == 3
    gate.set()
    await stopping


async def test_a_quit_gives_up_at_once() -> None:
    gate, started, clock = asyncio.Event(), Started(), StepClock()
    gate.set()
    source = Flaky([FakeJob("a")], [Away()] * 10_000, beats=False)
    loop = worker(source, started, gate, clock)
    await loop.start()
    await started.until(1)
    await until(lambda: source.attempts, clock)
    stopping = asyncio.create_task(loop.stop())
    await clock.advance(0)
    assert not stopping.done()  # the ack still tries: the lease may hold for 10 s
    loop.quit()
    async with asyncio.timeout(5):
        await stopping
    assert clock.now() < 1
