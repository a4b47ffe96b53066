"""The worker loop gives back what it will not run: on stop, every held job not started (and what a lease in
flight still brings); a job too close to its lease's end or deadline to start; a task cancelled by the drain's end.
Time moves only through `StepClock`."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from queueflow_client import JobContext, TaskRegistry
from queueflow_worker.loop import LEASE_ANSWER_WAIT, WorkerLoop

from tests.monotonic import StepClock
from tests.sdk.test_loop import FakeJob, Source, Started, gated


def timed(clock: StepClock, seconds: float) -> TaskRegistry:
    """Task "t" takes `seconds` of `clock`'s time."""
    tasks = TaskRegistry()

    @tasks.task("t")
    async def task(payload: dict[str, Any], ctx: JobContext) -> str:
        await clock.sleep(seconds)
        return ctx.job_id

    return tasks


async def test_stop_releases_every_job_not_started_at_once_and_finishes_only_the_running_ones() -> None:
    gate, started, clock = asyncio.Event(), Started(), StepClock()
    source = Source([FakeJob(f"j{n}", lease_token=f"t{n}") for n in range(12)])
    loop = WorkerLoop(source, gated(gate, started), concurrency=2, prefetch=10, ack_interval=0, clock=clock)
    await loop.start()
    await started.until(2)
    assert loop.held == 12
    stopping = asyncio.create_task(loop.stop())
    await clock.advance(0)
    # At once, while the two running jobs still run: the ten others are back on the queue.
    assert sorted(source.released) == sorted((f"j{n}", f"t{n}") for n in range(2, 12))
    assert not stopping.done()
    gate.set()
    await stopping
    assert started == ["j0", "j1"]
    assert sorted(o.job_id for o in source.acked) == ["j0", "j1"]
    assert loop.released == 10


class ClaimInFlight(Source):
    """Its first lease is a claim whose answer is on its way when the loop stops: it answers only after the
    interrupt (a source must never lose what it claimed)."""

    def __init__(self, backlog: Sequence[FakeJob]) -> None:
        super().__init__(backlog)
        self.asking = asyncio.Event()

    async def lease(self, max_jobs: int) -> list[FakeJob]:
        if not self.asked:
            self.asked.append(max_jobs)
            self.asking.set()
            await self.interrupted.wait()
            jobs, self.backlog = self.backlog[:max_jobs], self.backlog[max_jobs:]
            return jobs
        return await super().lease(max_jobs)


async def test_jobs_a_lease_in_flight_brings_after_the_stop_are_released_not_run() -> None:
    started, clock = Started(), StepClock()
    source = ClaimInFlight([FakeJob("a"), FakeJob("b")])
    loop = WorkerLoop(source, gated(asyncio.Event(), started), concurrency=4, ack_interval=0, clock=clock)
    await loop.start()
    async with asyncio.timeout(5):
        await source.asking.wait()
    await loop.stop()
    assert started == []
    assert sorted(source.released) == [("a", "token"), ("b", "token")]


class Unreachable(Source):
    """Its heartbeats fail: the leases it handed out are never extended."""

    async def heartbeat(self, leases: Sequence[tuple[str, str]]) -> list[bool]:
        raise ConnectionError("the server is away")


async def test_a_job_whose_lease_runs_out_while_it_waits_is_released_before_and_never_started() -> None:
    gate, started, clock = asyncio.Event(), Started(), StepClock()
    source = Unreachable([FakeJob("a"), FakeJob("b")])
    loop = WorkerLoop(
        source, gated(gate, started), concurrency=1, prefetch=1, lease_seconds=30, ack_interval=0, clock=clock
    )
    await loop.start()
    await started.until(1)
    await clock.advance(28.5)
    assert source.released == []  # 1.5 s of its lease left: more than the 1 s margin
    await clock.advance(0.5)
    assert source.released == [("b", "token")]  # the margin reached, it goes back before its lease runs out
    gate.set()
    await clock.advance(0)
    await loop.stop()
    assert started == ["a"]
    assert loop.held == 0


async def test_a_job_that_cannot_end_a_typical_run_before_its_deadline_is_released_not_started() -> None:
    # Its deadline counts from its claim, so it runs on while the job waits: with 8 s of timeout, 5 s gone waiting,
    # a 5 s run would pass it, be timed out by the janitor and run again elsewhere.
    clock = StepClock()
    source = Source([FakeJob("a", timeout_seconds=8), FakeJob("b", timeout_seconds=8)])
    loop = WorkerLoop(source, timed(clock, 5), concurrency=1, prefetch=1, ack_interval=0, clock=clock)
    await loop.start()
    await clock.advance(0)
    await clock.advance(5)  # a ran 5 s: that is a typical run now
    assert source.released == [("b", "token")]
    assert [o.job_id for o in source.acked] == ["a"]
    await loop.stop()


async def test_a_job_whose_timeout_is_shorter_than_a_typical_run_still_runs_within_its_deadline() -> None:
    # Released, it would come back no better off (a fresh delivery could not end a typical run either): it runs.
    clock = StepClock()
    source = Source([FakeJob("a", timeout_seconds=4), FakeJob("b", timeout_seconds=4)])
    loop = WorkerLoop(source, timed(clock, 5), concurrency=2, prefetch=0, ack_interval=0, clock=clock)
    await loop.start()
    await clock.advance(0)
    await clock.advance(5)
    await loop.stop()
    assert source.released == []
    assert sorted(o.job_id for o in source.acked) == ["a", "b"]


async def test_a_task_that_outlives_the_drain_is_cancelled_and_its_job_released() -> None:
    started, clock = Started(), StepClock()
    source = Source([FakeJob("stuck")])
    loop = WorkerLoop(
        source, gated(asyncio.Event(), started), concurrency=1, drain_seconds=5, ack_interval=0, clock=clock
    )
    await loop.start()
    await started.until(1)
    stopping = asyncio.create_task(loop.stop())
    await clock.advance(4.9)
    assert not stopping.done()
    assert source.released == []
    await clock.advance(0.1)
    await stopping
    assert source.released == [("stuck", "token")]
    assert source.acked == []


async def test_a_quit_cancels_running_tasks_and_releases_their_jobs() -> None:
    started, clock = Started(), StepClock()
    source = Source([FakeJob("a"), FakeJob("b"), FakeJob("c")])
    loop = WorkerLoop(source, gated(asyncio.Event(), started), concurrency=2, prefetch=1, ack_interval=0, clock=clock)
    await loop.start()
    await started.until(2)
    stopping = asyncio.create_task(loop.stop())  # no drain limit: only a quit ends it
    await clock.advance(0)
    loop.quit()
    await stopping
    assert sorted(source.released) == [("a", "token"), ("b", "token"), ("c", "token")]


class LongPoll(Source):
    """Its first lease answers after `wait` seconds of the clock, as a long-poll woken late does."""

    def __init__(self, backlog: Sequence[FakeJob], clock: StepClock, wait: float) -> None:
        super().__init__(backlog)
        self.clock, self.wait = clock, wait

    async def lease(self, max_jobs: int) -> list[FakeJob]:
        if not self.asked:
            await self.clock.sleep(self.wait)
        return await super().lease(max_jobs)


async def test_the_leases_of_a_late_answer_are_extended_at_once() -> None:
    # Counted from when it was sent, a long-poll's answer after 25 s leaves 5 s of its 30 s leases: less than the
    # 10 s until the next heartbeat.
    gate, started, clock = asyncio.Event(), Started(), StepClock()
    source = LongPoll([FakeJob("a"), FakeJob("b")], clock, wait=25)
    loop = WorkerLoop(source, gated(gate, started), concurrency=1, prefetch=1, ack_interval=0, clock=clock)
    await loop.start()
    await clock.advance(25)
    await started.until(1)
    assert source.beats == [["a", "b"]]  # at once, not 10 s on
    await clock.advance(4.5)
    assert source.released == []  # the heartbeat held b's lease: it waits on
    gate.set()
    await started.until(2)
    await loop.stop()


async def test_it_holds_no_more_jobs_than_its_slots_start_within_half_the_shortest_timeout() -> None:
    # 1 s tasks on one slot, 10 s timeouts: 5 jobs ahead start within 5 s; `prefetch=50` would leave most of the
    # 50 to pass their deadlines while they wait.
    clock = StepClock()
    source = Source([FakeJob(f"j{n}", timeout_seconds=10) for n in range(60)])
    loop = WorkerLoop(source, timed(clock, 1), concurrency=1, prefetch=50, ack_interval=0, clock=clock)
    await loop.start()
    await clock.advance(0)
    assert source.asked == [51]  # nothing measured yet
    for _ in range(60):
        await clock.advance(1)
    await loop.stop()
    assert all(asked <= 6 for asked in source.asked[1:]), source.asked
    assert loop.capacity == 1 + 5


class Stuck(Source):
    """Its second lease is a claim stuck on a slow server: it answers nothing, interrupted or not, until cut."""

    def __init__(self, backlog: Sequence[FakeJob]) -> None:
        super().__init__(backlog)
        self.stuck = asyncio.Event()
        self.cut = False

    async def lease(self, max_jobs: int) -> list[FakeJob]:
        if self.asked:
            self.asked.append(max_jobs)
            self.stuck.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cut = True
                raise
        return await super().lease(max_jobs)


async def test_a_stop_cuts_a_lease_still_unanswered_after_a_while() -> None:
    # It waited for the lease's answer as long as the HTTP timeout let it (30 s by default) before finishing.
    gate, started, clock = asyncio.Event(), Started(), StepClock()
    source = Stuck([FakeJob("a")])
    loop = WorkerLoop(source, gated(gate, started), concurrency=1, prefetch=0, ack_interval=0, clock=clock)
    await loop.start()
    await started.until(1)
    gate.set()
    async with asyncio.timeout(5):
        await source.stuck.wait()
    stopping = asyncio.create_task(loop.stop())
    await clock.advance(LEASE_ANSWER_WAIT - 0.1)
    assert not stopping.done()  # its answer may be on its way: it is let to arrive for a while
    await clock.advance(0.1)
    async with asyncio.timeout(5):
        await stopping
    assert source.cut
    assert [o.job_id for o in source.acked] == ["a"]


async def test_a_long_poll_that_waited_longer_than_a_timeout_still_starts_its_jobs() -> None:
    # Counted from the poll's sending alone, a job of a 10 s timeout claimed after a 20 s wait looked past its
    # deadline, and every job of such a poll was released.
    gate, started, clock = asyncio.Event(), Started(), StepClock()
    job = FakeJob("a", timeout_seconds=10, claimed_after_seconds=19.9)
    source = LongPoll([job], clock, wait=20)
    loop = WorkerLoop(source, gated(gate, started), concurrency=1, ack_interval=0, clock=clock)
    await loop.start()
    await clock.advance(20)
    await started.until(1)
    gate.set()
    await loop.stop()
    assert (started, loop.released) == (["a"], 0)
