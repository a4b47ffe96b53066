"""The worker loop on its own, over a scripted `LeaseSource`: what it leases, runs, records and drops."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest
from queueflow_client import JobContext, TaskRegistry
from queueflow_worker.loop import ACK_BATCHES_KEPT, MAX_BATCH, Outcome, WorkerLoop
from queueflow_worker.timing import LEASES_IN_FLIGHT

from tests.monotonic import StepClock


@dataclass
class FakeJob:
    id: str
    task_name: str = "t"
    queue_name: str = "default"
    payload: dict[str, Any] = field(default_factory=dict)
    delivery_count: int = 1
    workflow_id: str | None = None
    workflow_step_id: str | None = None
    deadline: datetime | None = None
    lease_token: str | None = "token"
    timeout_seconds: float | None = None
    claimed_after_seconds: float = 0.0


class Source:
    """Hands out `backlog` on the first lease, then parks until interrupted; records acks and heartbeats."""

    def __init__(
        self, backlog: Sequence[FakeJob], lost: Sequence[str] = (), fail_acks: bool = False, round_trip: float = 0
    ) -> None:
        self.backlog = list(backlog)
        self.round_trip = round_trip
        """How long a lease that finds jobs takes (a network's round trip, simulated)."""
        self.lost = set(lost)
        self.fail_acks = fail_acks
        self.asked: list[int] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.most_parked = 0
        self.parked = 0
        self.acked: list[Outcome] = []
        self.released: list[tuple[str, str]] = []
        self.beats: list[list[str]] = []
        self.beaten = asyncio.Event()
        self.interrupted = asyncio.Event()
        self.more = asyncio.Event()
        self.emptied = asyncio.Event()
        """Set once the backlog was handed out and a lease came back for more."""

    async def lease(self, max_jobs: int) -> list[FakeJob]:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            return await self._lease(max_jobs)
        finally:
            self.in_flight -= 1

    async def _lease(self, max_jobs: int) -> list[FakeJob]:
        self.asked.append(max_jobs)
        if self.backlog:
            await asyncio.sleep(self.round_trip)
            jobs, self.backlog = self.backlog[:max_jobs], self.backlog[max_jobs:]
            return jobs
        self.emptied.set()
        more = asyncio.ensure_future(self.more.wait())
        self.parked += 1
        self.most_parked = max(self.most_parked, self.parked)
        try:
            await asyncio.wait(
                [more, asyncio.ensure_future(self.interrupted.wait())], return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            self.parked -= 1
        if more.done() and not self.interrupted.is_set():
            self.more.clear()
            jobs, self.backlog = self.backlog[:max_jobs], self.backlog[max_jobs:]
            return jobs
        return []

    def deliver(self, *jobs: FakeJob) -> None:
        """Answer the parked lease with `jobs`."""
        self.backlog += jobs
        self.more.set()

    def interrupt(self) -> None:
        self.interrupted.set()

    async def ack(self, outcomes: Sequence[Outcome]) -> list[bool]:
        if self.fail_acks:
            raise ConnectionError("the server is away")
        self.acked += outcomes
        return [True] * len(outcomes)

    async def release(self, leases: Sequence[tuple[str, str]]) -> list[bool]:
        self.released += leases
        return [True] * len(leases)

    async def heartbeat(self, leases: Sequence[tuple[str, str]]) -> list[bool]:
        self.beats.append([job_id for job_id, _ in leases])
        self.beaten.set()
        return [job_id not in self.lost for job_id, _ in leases]


class Started(list[str]):
    """The jobs whose task started, in order; `until(n)` waits for the n-th."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = asyncio.Condition()

    async def add(self, job_id: str) -> None:
        self.append(job_id)
        async with self.changed:
            self.changed.notify_all()

    async def until(self, count: int) -> None:
        async with asyncio.timeout(5), self.changed:
            await self.changed.wait_for(lambda: len(self) >= count)


def gated(gate: asyncio.Event, started: Started) -> TaskRegistry:
    tasks = TaskRegistry()

    @tasks.task("t")
    async def task(payload: dict[str, Any], ctx: JobContext) -> str:
        await started.add(ctx.job_id)
        await gate.wait()
        return ctx.job_id

    return tasks


async def test_a_job_lost_while_it_waits_for_a_slot_is_dropped_and_never_run() -> None:
    gate, started = asyncio.Event(), Started()
    source = Source([FakeJob("a"), FakeJob("b")], lost=["b"])
    loop = WorkerLoop(source, gated(gate, started), concurrency=1, prefetch=1, heartbeat_every=0.01, ack_interval=0)
    await loop.start()
    async with asyncio.timeout(5):
        await source.beaten.wait()  # every held lease in one heartbeat, the waiting one too
    assert source.beats[0] == ["a", "b"]
    assert loop.held == 1
    gate.set()
    await loop.stop()
    assert started == ["a"]
    assert [outcome.job_id for outcome in source.acked] == ["a"]


async def test_a_job_delivered_again_while_its_earlier_delivery_runs_drops_the_earlier_one() -> None:
    # The earlier lease expired and the janitor handed the job out anew, to this same worker: the earlier
    # delivery's lease is lost, so its task is cancelled and only the new delivery's outcome is recorded.
    gate, started = asyncio.Event(), Started()
    first, again = FakeJob("a", lease_token="t1"), FakeJob("a", lease_token="t2", delivery_count=2)
    source = Source([first])
    loop = WorkerLoop(source, gated(gate, started), concurrency=2, prefetch=0, ack_interval=0)
    await loop.start()
    await started.until(1)
    source.deliver(again)
    await started.until(2)
    gate.set()
    await loop.stop()
    assert [(o.job_id, o.lease_token) for o in source.acked] == [("a", "t2")]


async def test_a_job_delivered_again_while_its_earlier_delivery_waits_runs_once() -> None:
    gate, started = asyncio.Event(), Started()
    jobs = [FakeJob("x", lease_token="tx"), FakeJob("a", lease_token="t1"), FakeJob("a", lease_token="t2")]
    source = Source(jobs)
    loop = WorkerLoop(source, gated(gate, started), concurrency=1, prefetch=5, ack_interval=0)
    await loop.start()
    await started.until(1)
    async with asyncio.timeout(5):
        await source.emptied.wait()
    assert loop.held == 2  # x running, and only the new delivery of a waiting
    gate.set()
    await started.until(2)
    await loop.stop()
    assert started == ["x", "a"]
    assert [(o.job_id, o.lease_token) for o in source.acked] == [("x", "tx"), ("a", "t2")]


async def test_a_task_that_outlives_the_drain_is_cancelled_and_its_outcome_not_recorded() -> None:
    never, started = asyncio.Event(), Started()
    source = Source([FakeJob("stuck")])
    loop = WorkerLoop(source, gated(never, started), concurrency=1, prefetch=0, drain_seconds=0, ack_interval=0)
    await loop.start()
    await started.until(1)
    await loop.stop()
    assert source.acked == []
    assert started == ["stuck"]


async def test_outcomes_it_could_not_send_are_left_to_their_leases(caplog: pytest.LogCaptureFixture) -> None:
    gate, started = asyncio.Event(), Started()
    gate.set()
    source = Source([FakeJob("a"), FakeJob("b")], fail_acks=True)
    loop = WorkerLoop(source, gated(gate, started), concurrency=2, ack_interval=0)
    await loop.start()
    await started.until(2)
    await loop.stop()  # returns: the jobs come back to another worker once their leases expire
    assert "could not record" in caplog.text


async def test_short_tasks_make_it_lease_further_ahead() -> None:
    tasks = TaskRegistry()

    @tasks.task("t")
    async def quick(payload: dict[str, Any], ctx: JobContext) -> None:
        return None

    source = Source([FakeJob(f"j{n}") for n in range(200)], round_trip=0.005)
    loop = WorkerLoop(source, tasks, concurrency=2, ack_interval=0)
    assert loop.capacity == 4  # before anything is measured: concurrency, and as many again
    await loop.start()
    async with asyncio.timeout(5):
        await source.emptied.wait()
    await loop.stop()
    assert source.asked[0] == 4
    assert max(source.asked) > 4  # measured tasks are short: more ahead
    assert len(source.acked) + len(source.released) == 200  # what had not started at the stop was given back


def quick_tasks() -> TaskRegistry:
    tasks = TaskRegistry()

    @tasks.task("t")
    async def quick(payload: dict[str, Any], ctx: JobContext) -> None:
        return None

    return tasks


async def test_a_deep_backlog_keeps_two_leases_in_flight_and_an_idle_worker_parks_one() -> None:
    # One claim at a time, each of at most half the places, capped a fast worker at one claim's round trip.
    source = Source([FakeJob(f"j{n}") for n in range(400)], round_trip=0.005)
    loop = WorkerLoop(source, quick_tasks(), concurrency=4, prefetch=40, ack_interval=0)
    await loop.start()
    async with asyncio.timeout(5):
        await source.emptied.wait()
    assert source.most_in_flight == 2
    assert source.parked == 1
    await loop.stop()
    assert source.most_parked == 1
    ran_or_given_back = [o.job_id for o in source.acked] + [job_id for job_id, _ in source.released]
    assert sorted(ran_or_given_back) == sorted(f"j{n}" for n in range(400))
    assert max(source.asked) <= 44  # together the leases never hold more than the places


def test_short_tasks_hold_as_many_ahead_as_the_overlapping_leases_bring() -> None:
    # Capped at one lease's worth (1,000), a worker of short tasks on a deep backlog asked in leases of a quarter of
    # that: a fifth fewer no-op jobs a second for one Python SDK worker (bench/results/2026-12-06-notes.md).
    loop = WorkerLoop(Source([]), quick_tasks(), concurrency=10)
    loop.measures.task_ran("t", 0.000_01)  # 1,000,000 jobs a second through the slots
    loop.measures.lease_answered(0.03, [], full=True)
    assert loop.measures.capacity() == 10 + LEASES_IN_FLIGHT * MAX_BATCH
    loop.measures.task_ran("t", 10.0)  # ... but never more than the slots start within half a lease
    assert loop.measures.capacity() < 10 + LEASES_IN_FLIGHT * MAX_BATCH


async def test_a_worker_with_room_for_more_than_two_leases_asks_again_while_it_holds_jobs() -> None:
    # Half of 3,000 places is more than one lease brings: such a worker asked for nothing more until it held nothing,
    # every slot then waiting a round trip.
    gate, started = asyncio.Event(), Started()
    source = Source([FakeJob(f"j{n}") for n in range(600)])
    loop = WorkerLoop(source, gated(gate, started), concurrency=2, prefetch=3000, ack_interval=0)
    await loop.start()
    async with asyncio.timeout(5):
        await source.emptied.wait()  # the second lease, sent while the first one's 600 jobs are held
    assert source.asked == [MAX_BATCH, MAX_BATCH]
    assert loop.held == 600
    gate.set()
    await loop.stop()
    assert len(source.acked) + len(source.released) == 600


class BusyAnswer(Source):
    """Its lease's answer keeps the worker's event loop busy for `busy` seconds of `clock` right after it is taken
    (as decoding a whole lease answer does), before any task it brings takes its first step."""

    def __init__(self, backlog: Sequence[FakeJob], clock: StepClock, busy: float) -> None:
        super().__init__(backlog)
        self.clock, self.busy = clock, busy

    async def _lease(self, max_jobs: int) -> list[FakeJob]:
        jobs = await super()._lease(max_jobs)
        if jobs:
            asyncio.get_running_loop().call_soon(setattr, self.clock, "time", self.clock.time + self.busy)
        return jobs


async def test_a_task_is_timed_from_its_first_step_not_from_when_the_loop_scheduled_it() -> None:
    # Timed from when it was scheduled, a no-op task took as long as the event loop was busy before it began: a
    # worker of short tasks thought them slow, and held a tenth of the jobs ahead that it holds now.
    clock = StepClock()
    source = BusyAnswer([FakeJob("a")], clock, busy=5.0)
    loop = WorkerLoop(source, quick_tasks(), concurrency=1, ack_interval=0, clock=clock)
    await loop.start()
    async with asyncio.timeout(5):
        await source.emptied.wait()
    await loop.stop()
    assert [o.job_id for o in source.acked] == ["a"]
    assert clock.time == 5.0
    assert loop.measures.task_seconds == 0.0


async def test_a_short_answer_ends_the_overlap() -> None:
    source = Source([FakeJob(f"j{n}") for n in range(3)], round_trip=0.005)
    loop = WorkerLoop(source, quick_tasks(), concurrency=4, prefetch=40, ack_interval=0)
    await loop.start()
    async with asyncio.timeout(5):
        await source.emptied.wait()
    await loop.stop()
    assert source.most_in_flight == 1  # the first answer was short: no lease ever overlapped another
    assert len(source.acked) == 3


class SlowAcks(Source):
    """Its acks answer only once `open` is set."""

    def __init__(self, backlog: Sequence[FakeJob]) -> None:
        super().__init__(backlog)
        self.open = asyncio.Event()
        self.acking = asyncio.Event()

    async def ack(self, outcomes: Sequence[Outcome]) -> list[bool]:
        self.acking.set()
        await self.open.wait()
        return await super().ack(outcomes)


async def test_it_stops_leasing_while_a_whole_capacity_of_outcomes_waits_for_its_acks() -> None:
    # Leasing on while acks lagged filled a slow store with leases the worker could not record in time.
    source = SlowAcks([FakeJob(f"j{n}") for n in range(100)])
    loop = WorkerLoop(source, quick_tasks(), concurrency=2, prefetch=2, ack_interval=0)
    await loop.start()
    async with asyncio.timeout(5):
        await source.acking.wait()
    for _ in range(500):  # the event loop runs on (no clock involved): leases come and go while they may
        await asyncio.sleep(0)
    handed_out = 100 - len(source.backlog)
    assert handed_out <= 2 * loop.capacity  # the outcomes waiting (a capacity), and the places (another)
    source.open.set()
    async with asyncio.timeout(5):
        await source.emptied.wait()
    await loop.stop()
    assert sorted(o.job_id for o in source.acked) == sorted(f"j{n}" for n in range(100))


async def test_after_a_short_lease_it_leases_again_only_once_its_outcomes_are_acked() -> None:
    # Sent beside the acks, each lease of a worker that had taken all there was brought the one or two jobs that came
    # within its round trip, a claim statement each (bench/results/2026-12-06-notes.md).
    source = SlowAcks([FakeJob(f"j{n}") for n in range(3)])
    loop = WorkerLoop(source, quick_tasks(), concurrency=4, prefetch=40, ack_interval=0)
    await loop.start()
    async with asyncio.timeout(5):
        await source.acking.wait()  # j0-j2 ran; their ack waits, and a second lease is parked
    source.deliver(FakeJob("j3"), FakeJob("j4"))  # which comes back short too, while that ack still waits
    for _ in range(500):  # the event loop runs on (no clock involved): a lease would be sent now if it may
        await asyncio.sleep(0)
    assert len(source.asked) == 2
    source.emptied.clear()
    source.open.set()
    async with asyncio.timeout(5):
        await source.emptied.wait()  # acked: the worker leases again, and parks
    assert len(source.asked) == 3
    await loop.stop()
    assert sorted(o.job_id for o in source.acked) == [f"j{n}" for n in range(5)]


class CountedAcks(Source):
    """Sets `all_acked` once every job of its backlog was acked."""

    def __init__(self, backlog: Sequence[FakeJob]) -> None:
        super().__init__(backlog)
        self.expected = len(backlog)
        self.all_acked = asyncio.Event()

    async def ack(self, outcomes: Sequence[Outcome]) -> list[bool]:
        answer = await super().ack(outcomes)
        if len(self.acked) >= self.expected:
            self.all_acked.set()
        return answer


async def test_outcomes_go_at_once_when_leasing_waits_for_them_however_long_the_ack_interval() -> None:
    # A capacity below ack_batch (one slot, one ahead) stalled the worker for the whole ack_interval every two jobs:
    # leasing waited for the acks, and the acks for a batch that could not fill.
    source = CountedAcks([FakeJob(f"j{n}") for n in range(10)])
    loop = WorkerLoop(source, quick_tasks(), concurrency=1, prefetch=1, ack_batch=100, ack_interval=3600)
    await loop.start()
    async with asyncio.timeout(5):
        await source.all_acked.wait()
    assert max(loop.ack_batches) <= loop.capacity
    await loop.stop()


async def test_a_lone_outcome_goes_at_once_when_no_other_job_is_held() -> None:
    source = CountedAcks([FakeJob("j0")])
    loop = WorkerLoop(source, quick_tasks(), concurrency=10, ack_interval=3600)
    await loop.start()
    async with asyncio.timeout(5):
        await source.all_acked.wait()  # not an hour later: nothing else could have joined its batch
    await loop.stop()


async def test_an_outcome_goes_at_once_when_a_short_lease_left_leasing_waiting_for_it() -> None:
    gate, started = asyncio.Event(), Started()
    tasks = gated(gate, started)

    @tasks.task("quick")
    async def quick(payload: dict[str, Any], ctx: JobContext) -> None:
        return None

    source = CountedAcks([FakeJob("slow"), FakeJob("quick", task_name="quick")])
    source.expected = 1
    loop = WorkerLoop(source, tasks, concurrency=10, ack_interval=3600)
    await loop.start()
    async with asyncio.timeout(5):
        await source.all_acked.wait()  # not an hour later, though a job is still held: leasing waits for this ack
    assert [o.job_id for o in source.acked] == ["quick"]
    gate.set()
    await loop.stop()


async def test_it_keeps_the_sizes_of_the_latest_acks_only() -> None:
    source = Source([])
    loop = WorkerLoop(source, quick_tasks())
    for size in range(1, ACK_BATCHES_KEPT + 6):
        await loop.acks.send([Outcome(f"j{n}", "token") for n in range(size % 3 + 1)])
    assert len(loop.ack_batches) == ACK_BATCHES_KEPT  # a worker that runs for days does not grow by one per ack
    assert list(loop.ack_batches)[-3:] == [
        (ACK_BATCHES_KEPT + 3) % 3 + 1,
        (ACK_BATCHES_KEPT + 4) % 3 + 1,
        (ACK_BATCHES_KEPT + 5) % 3 + 1,
    ]
