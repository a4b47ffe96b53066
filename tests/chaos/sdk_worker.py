"""`python -m tests.chaos.sdk_worker BASE_URL WORKER_KEY QUEUES CONCURRENCY LEASE_SECONDS`: a Python SDK worker
running the chaos tasks until SIGTERM (it then drains) or SIGKILL (it then leaves its leases to the janitor)."""

from __future__ import annotations

import logging
import sys

from queueflow_client import Worker

from tests.chaos.tasks import registry


def main() -> None:
    base_url, key, queues, concurrency, lease_seconds = sys.argv[1:6]
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s sdk-worker %(levelname)s %(message)s")
    logging.getLogger("queueflow_client.worker").setLevel(logging.INFO)  # its "started" line says it is up
    Worker(
        base_url,
        key,
        registry,
        queues=queues.split(","),
        concurrency=int(concurrency),
        lease_seconds=float(lease_seconds),
    ).run()


if __name__ == "__main__":
    main()
