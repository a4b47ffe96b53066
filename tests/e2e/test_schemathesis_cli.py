"""The schemathesis CLI (examples, coverage and stateful phases) against a live `queueflow serve`.

Its fuzzing phase is left to tests/api/test_schemathesis.py, which fuzzes every route of the same spec in process
(30 examples each): against a live server it took 80–110 s a side once workflow steps could hold child workflows
(a recursive schema, most of whose generated bodies the hooks drop), and what only a live server on PostgreSQL
shows is what the other phases send: the coverage phase's boundary values and the stateful phase's linked calls.

Each server runs on PostgreSQL (a fresh database per run). Tenant routes are tested with a tenant key, worker
routes with a worker key (tests/schemathesis/*.toml); the hooks keep schema-valid requests within the rules JSON
Schema cannot state.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

from tests import pg
from tests.e2e.live import ROOT, live_server

SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
KEYS = {"QUEUEFLOW_API_KEYS": "test-tenant-key=tenant-a", "QUEUEFLOW_WORKER_KEYS": "test-worker-key"}
RUNS = {
    "tenant": ("tenant.toml", ["--exclude-path-regex", "^/v1/worker/"]),
    "worker": ("worker.toml", ["--include-path-regex", "^/v1/worker/"]),
}
"""The two sides of the API: their config (keys) and the routes each fuzzes."""
RUN_LIMIT = 300
"""Seconds a side may take: each takes 20–30 s alone on a quiet 2-core machine, and runs beside the rest of
`make test` (it starts first), which has made a run several times slower."""


def test_schemathesis_finds_no_issue_against_a_live_server(tmp_path: Path) -> None:
    # The two sides run at once, each against a server and a database of its own: one side keeps about one of the
    # machine's two cores busy, and one after the other they were the suite's longest test (60 + 45 s).
    with ExitStack() as stack:
        runs: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
        for side, (config, selection) in RUNS.items():
            url = pg.blocking(pg.create_database)
            stack.callback(pg.blocking, lambda url=url: pg.drop_database(url))
            # --mode api: no delivery loop, so no endpoint the fuzzer creates is ever POSTed to (their URLs are
            # public addresses, which no test may reach).
            base = stack.enter_context(
                live_server("--database-url", url, "--lease-wait-limit", "0.05", "--mode", "api", env=KEYS)
            )
            workdir = tmp_path / side  # any report or cache schemathesis writes stays out of the work tree
            workdir.mkdir()
            output = workdir / "output.txt"
            with output.open("wb") as sink:  # a file, not a pipe: neither run can block on output unread
                process = subprocess.Popen(
                    [
                        str(SCHEMATHESIS),
                        "--config-file",
                        str(ROOT / "tests" / "schemathesis" / config),
                        "run",
                        f"{base}/schema/openapi.json",
                        *selection,
                        "--seed",
                        "1",
                        "--max-examples",
                        "30",
                        "--phases",
                        "examples,coverage,stateful",
                    ],
                    preexec_fn=_memory_capped,
                    cwd=workdir,
                    env={**os.environ, "SCHEMATHESIS_HOOKS": "tests.schemathesis.hooks", "PYTHONPATH": str(ROOT)},
                    stdin=subprocess.DEVNULL,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                )
            stack.callback(_stopped, process)
            runs[side] = process, output
        failed = {
            side: output.read_text()[-6000:]
            for side, (process, output) in runs.items()
            if process.wait(timeout=RUN_LIMIT) != 0
        }
    assert not failed, "\n\n".join(f"--- {side} ---\n{text}" for side, text in failed.items())


MEMORY_LIMIT = 4 * 1024**3
"""Bytes of address space a run may map: once, generating bodies of the recursive workflow schema, a run grew to
20 GB and the machine's kernel killed it, silently (exit -9 after its coverage phase); capped, a runaway fails
with a MemoryError and its traceback in the output."""


def _memory_capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _stopped(process: subprocess.Popen[bytes]) -> None:
    """Ends a run still going when the test fails early (a server that never started, a timeout)."""
    if process.poll() is None:
        process.kill()
        process.wait()
