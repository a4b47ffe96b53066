"""InMemoryJobStore: the whole `Store` contract in a process's memory, for tests and embedding.

It is a real store, not a mock: it validates what it is given before it changes anything, so a call that
fails leaves no trace, and it rejects exactly the values PostgreSQL would reject. Each method runs without
awaiting, so on one event loop every call is atomic. Its parts share one `Tables` (see `state`).
"""

from __future__ import annotations

from queueflow.core.pressure import Pressure
from queueflow.stores.memory.deadlines import MemoryDeadlines
from queueflow.stores.memory.endpoints import MemoryEndpoints
from queueflow.stores.memory.events import MemoryEvents
from queueflow.stores.memory.jobs import MemoryJobs
from queueflow.stores.memory.queues import MemoryQueues
from queueflow.stores.memory.schedules import MemorySchedules
from queueflow.stores.memory.workflows import MemoryWorkflows


class InMemoryJobStore(
    MemoryJobs, MemoryDeadlines, MemoryQueues, MemoryEvents, MemoryWorkflows, MemorySchedules, MemoryEndpoints
):
    """The `Store` in memory. Given `wakeups` (a `WorkSignal`: the server's wake-up hub), it announces inserted work
    as PostgreSQL's NOTIFY trigger does. `rng` (seed it for repeatable ids) makes the ids of steps' jobs."""

    async def store_pressure(self) -> Pressure:
        """No tables to bloat and no transactions to hold a horizon: nothing to report."""
        return Pressure()
