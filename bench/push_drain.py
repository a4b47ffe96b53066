"""Push delivery against the SDK worker, in one run (issue 45's figures, smoke form: not part of `make bench`).

Both drains go through a `queueflow serve --mode all` process (the same for both kinds) and the same no-op jobs
seeded in one statement (`bench.scenarios.worker_drains`): first the Python SDK's worker leases and acks them;
then the server pushes them to one endpoint at concurrency 50, a minimal ASGI receiver (uvicorn, its own process)
answering 200 at once. Figures: push jobs/s ÷ SDK jobs/s, and the server's CPU per pushed job ÷ per leased job.
Then, on the idle endpoint, enqueue → delivery received: each job enqueued by `POST /v1/jobs`, the receiver noting
when it arrives (one machine, one wall clock).

    .venv/bin/python -m bench.push_drain [--jobs 2000] [--latency-samples 50]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from bench.database import BenchDatabase
from bench.scenarios import worker_drains
from bench.scenarios.worker_drains import QUEUE, _seed, _until_drained
from bench.server import TENANT_KEY, QueueFlowServer, free_port

RECEIVER = """
import sys, time
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    job = dict(scope["headers"]).get(b"queueflow-job-id", b"").decode()
    print(job, time.time(), flush=True)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b"{}"})
import uvicorn
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), loop="uvloop", http="httptools", log_level="warning",
            access_log=False)
"""


class Receiver:
    """The receiver process, and when each job id arrived (read from its output as it comes)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-c", RECEIVER, str(self.port)], stdout=subprocess.PIPE, text=True
        )
        self.arrived: dict[str, float] = {}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            job, _, when = line.partition(" ")
            self.arrived[job] = float(when)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


async def push_drain(database: BenchDatabase, server: QueueFlowServer, jobs: int) -> tuple[float, float]:
    """(seconds, server CPU seconds) of pushing `jobs` seeded jobs to the receiver."""
    await database.reset_jobs()
    await _seed(database, 1)  # warm: pool, statements, the endpoint's connections
    await _until_drained(database, _Alive(), 60)
    await database.reset_jobs()
    await database.vacuum()
    cpu = server.cpu_seconds()
    await _seed(database, jobs)
    began = time.perf_counter()
    await _until_drained(database, _Alive(), 600)
    seconds = time.perf_counter() - began
    return seconds, server.cpu_seconds() - cpu


class _Alive:
    def check(self) -> None:
        pass


async def main(jobs: int, samples: int) -> None:
    log_dir = Path(tempfile.mkdtemp(prefix="queueflow-push-"))
    async with BenchDatabase("push") as database:
        database.migrate()
        await database.connect()
        server = QueueFlowServer(database.url, log_dir / "server.log", ("--allow-private-endpoints",)).start()
        receiver = Receiver()
        try:
            sdk = await worker_drains.drain("Python SDK", database, jobs, log_dir, server=server)
            print(worker_drains.describe(sdk), flush=True)
            base = f"http://127.0.0.1:{server.port}"
            headers = {"Authorization": f"Bearer {TENANT_KEY}"}
            async with httpx.AsyncClient(base_url=base, headers=headers) as http:
                created = await http.post(
                    "/v1/endpoints",
                    json={"name": "bench", "url": f"http://127.0.0.1:{receiver.port}/", "queues": [QUEUE],
                          "concurrency": 50},
                )  # fmt: skip
                created.raise_for_status()
                await asyncio.sleep(1.5)  # the delivery loop reads the endpoints every second
                seconds, server_cpu = await push_drain(database, server, jobs)
                print(f"push drain: {jobs:,} jobs in {seconds:.2f} s = {jobs / seconds:,.0f} jobs/s;"
                      f" server CPU {server_cpu:.2f} s", flush=True)  # fmt: skip
                print(f"push ÷ SDK drain rate: {(jobs / seconds) / sdk.rate:.2f}  (target ≥ 0.6)")
                print(f"server CPU per pushed job ÷ per leased job: {server_cpu / sdk.server_cpu:.2f}  (target ≤ 1.5)")
                latencies = []
                for _ in range(samples):
                    sent = time.time()
                    job = (await http.post("/v1/jobs", json={"task_name": "noop", "queue_name": QUEUE})).json()
                    while job["id"] not in receiver.arrived:  # noqa: ASYNC110
                        await asyncio.sleep(0.001)  # the receiver is another process: its output is polled
                    latencies.append((receiver.arrived[job["id"]] - sent) * 1000)
                    await asyncio.sleep(0.05)  # idle between samples
                cuts = statistics.quantiles(latencies, n=100)
                print(f"enqueue → delivery received, idle endpoint: p50 {cuts[49]:.1f} ms, p99 {cuts[98]:.1f} ms"
                      "  (targets ≤ 5 / ≤ 20 ms)")  # fmt: skip
        finally:
            receiver.stop()
            server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--latency-samples", type=int, default=50)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.jobs, arguments.latency_samples))
