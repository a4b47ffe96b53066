"""A `WorkerLoop`'s releases: jobs it holds and will not run — not started when it stops, too close to their
leases' end or deadline to start, or cancelled by the drain's end — go back to the queue at once
(`LeaseSource.release`), claimable by another worker, no retry counted. In the background, in calls of up to
`MAX_BATCH`; a stop waits for them. A release whose call fails while the server is away is made again as long as
the leases may hold (`retries`); one that still fails leaves the jobs to their leases' expiry, as before there were
releases."""

from __future__ import annotations

import asyncio
from functools import partial

from queueflow_worker.host import RecordingHost
from queueflow_worker.joblog import log
from queueflow_worker.timing import MAX_BATCH

__all__ = ["Releases"]


class Releases:
    def __init__(self, loop: RecordingHost) -> None:
        self.loop = loop
        self.count = 0
        """Jobs handed back so far."""
        self._in_flight: set[asyncio.Task[None]] = set()

    def give_back(self, leases: list[tuple[str, str]], why: str) -> None:
        """Release these (job id, token) pairs; they are no longer held (or heartbeated) from now on."""
        if not leases:
            return
        loop = self.loop
        for job_id, token in leases:
            loop.settled(job_id, token)
        self.count += len(leases)
        release = asyncio.create_task(self._release(leases, why), name=f"queueflow-{loop.name}-release")
        self._in_flight.add(release)
        release.add_done_callback(self._in_flight.discard)

    async def wait(self) -> None:
        """Until every release given so far has answered."""
        while self._in_flight:
            await asyncio.wait(list(self._in_flight))

    async def _release(self, leases: list[tuple[str, str]], why: str) -> None:
        loop = self.loop
        log.info("%s: releasing %d jobs (%s)", loop.name, len(leases), why)
        for start in range(0, len(leases), MAX_BATCH):
            chunk = leases[start : start + MAX_BATCH]
            try:
                await loop.persist(partial(loop.source.release, chunk))
            except Exception as exc:
                # Left to their leases' expiry: the janitor reclaims them, counting a failed delivery.
                if not loop.is_fatal(exc):
                    log.warning(
                        "%s: could not release %d jobs (they return when their leases expire): %s",
                        loop.name,
                        len(chunk),
                        exc,
                    )
