"""`python -m bench.drivers.sdk_worker URL WORKER_KEY QUEUE [CONCURRENCY]`: the Python SDK's `Worker` with its
default settings (but `concurrency`, when given) running the no-op task until SIGTERM."""

from __future__ import annotations

import sys

from queueflow_client import Worker

from bench.drivers.noop import tasks


def main() -> None:
    url, key, queue, *rest = sys.argv[1:]
    options = {"concurrency": int(rest[0])} if rest else {}
    Worker(url, key, tasks, queues=[queue], **options).run()


if __name__ == "__main__":
    main()
