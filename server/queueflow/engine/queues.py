"""Queue use cases (`Engine.queues`): counts and settings per queue, flow control's settings, what it holds back,
and throughput by minute — read from the store's `QueueStore` port, decided with `core.flow`."""

from __future__ import annotations

from datetime import timedelta

from queueflow.core import flow, validation
from queueflow.core.errors import NotFound
from queueflow.core.flow import ConfigureRequest, QueueSettings, QueueSettingsPatch
from queueflow.core.types import QueueCounts, QueueMinute, QueueStats
from queueflow.ports import Clock, Store


class Queues:
    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    async def stats(self, tenant_id: str) -> list[QueueStats]:
        """Every queue that holds any of the tenant's jobs or that the tenant configured, by name."""
        return await self._stats(tenant_id, None)

    async def get(self, tenant_id: str, name: str) -> QueueStats:
        """One queue's counts and settings; NotFound when the tenant has neither jobs in it nor settings for it."""
        for stats in await self._stats(tenant_id, name):
            return stats
        raise NotFound(f"no queue {name}")

    async def held_back(self) -> dict[tuple[str, str], int]:
        """Due jobs that flow control holds back now, by (queue, reason), summed over tenants (for /metrics)."""
        totals: dict[tuple[str, str], int] = {}
        for backlog in await self.store.queue_backlogs(now=self.clock.now()):
            for reason, count in flow.held_back(backlog).items():
                key = (backlog.queue_name, reason)
                totals[key] = totals.get(key, 0) + count
        return totals

    async def configure(self, tenant_id: str, name: str, patch: QueueSettingsPatch) -> QueueStats:
        """Change some of a queue's flow-control settings (a queue with no jobs yet too); returns the queue."""
        validation.check(validation.name_errors(name, ("name",)) + flow.patch_errors(patch))
        await self.store.queue_configure(
            ConfigureRequest(tenant_id=tenant_id, queue_name=name, patch=patch, now=self.clock.now())
        )
        return await self.get(tenant_id, name)

    async def _stats(self, tenant_id: str, only: str | None) -> list[QueueStats]:
        now = self.clock.now()
        settings, every = await self.store.queue_overview(tenant_id=tenant_id, queue_name=only, now=now)
        counts = {counts.name: counts for counts in every}
        for name in settings.keys() - counts.keys():
            counts[name] = QueueCounts(name=name)
        return [
            QueueStats(
                name=counts.name,
                pending=counts.pending,
                scheduled=counts.scheduled,
                running=counts.running,
                retrying=counts.retrying,
                completed=counts.completed,
                dead_letter=counts.dead_letter,
                cancelled=counts.cancelled,
                oldest_pending_age_seconds=(
                    (now - counts.oldest_due_at).total_seconds() if counts.oldest_due_at is not None else None
                ),
                settings=settings.get(counts.name, QueueSettings()),
            )
            for _, counts in sorted(counts.items())
        ]

    async def throughput(self, tenant_id: str, minutes: int = 60) -> list[QueueMinute]:
        """Per queue and minute of the last `minutes` (the current one included), the jobs that completed or
        dead-lettered in it; minutes without any are left out."""
        since = self.clock.now().replace(second=0, microsecond=0) - timedelta(minutes=minutes - 1)
        return await self.store.queue_throughput(tenant_id=tenant_id, since=since)
