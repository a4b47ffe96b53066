"""Procrastinate's side of `python -m bench.endurance.footprint --system procrastinate`: its schema installed, then
N jobs with the endurance payload deferred and run to `succeeded` through its job manager, the calls its worker makes
(`fetch_job` with a registered worker's id, `finish_job`; finished jobs kept, the worker's default), in rounds of a
batch deferred then every job fetched and finished, from several pipelines at once. The sizes are read by the caller.

    python -m bench.peers.procrastinate_footprint URL JOBS BATCH PIPELINES
"""

from __future__ import annotations

import asyncio
import sys

from procrastinate import jobs

from bench.endurance import wire
from bench.peers.procrastinate_endurance import TASK, install, make_app


async def push(url: str, count: int, batch: int, pipelines: int) -> None:
    await install(url)
    app = make_app(url)
    state = {"sent": 0, "done": 0}
    async with app.open_async():
        task = app.tasks[TASK]
        manager = app.job_manager
        worker_id = await manager.register_worker()

        async def pipeline() -> None:
            while state["done"] < count:
                if state["sent"] < count:
                    first = state["sent"]
                    state["sent"] = min(count, first + batch)
                    await task.batch_defer_async(*(wire.payload(n, 0.0) for n in range(first, state["sent"])))
                fetched = 0
                while (job := await manager.fetch_job(queues=None, worker_id=worker_id)) is not None:
                    await manager.finish_job(job, jobs.Status.SUCCEEDED, delete_job=False)
                    state["done"] += 1
                    fetched += 1
                if not fetched:
                    await asyncio.sleep(0.01)

        await asyncio.gather(*(pipeline() for _ in range(pipelines)))
        await manager.unregister_worker(worker_id)


if __name__ == "__main__":
    url, count, batch, pipelines = sys.argv[1], *map(int, sys.argv[2:5])
    asyncio.run(push(url, count, batch, pipelines))
