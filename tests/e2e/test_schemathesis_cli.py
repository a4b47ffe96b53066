"""The schemathesis CLI (coverage, fuzzing and stateful phases) against a live `queueflow serve`.

The server runs on PostgreSQL (a fresh database per run). Tenant routes are
tested with a tenant key, worker routes with a worker key (tests/schemathesis/*.toml); the hooks keep
schema-valid requests within the rules JSON Schema cannot state.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.live import ROOT, live_server

SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
KEYS = {"QUEUEFLOW_API_KEYS": "test-tenant-key=tenant-a", "QUEUEFLOW_WORKER_KEYS": "test-worker-key"}


@pytest.mark.parametrize(
    ("config", "selection"),
    [
        ("tenant.toml", ["--exclude-path-regex", "^/v1/worker/"]),
        ("worker.toml", ["--include-path-regex", "^/v1/worker/"]),
    ],
)
def test_schemathesis_finds_no_issue_against_a_live_server(
    config: str, selection: list[str], tmp_path: Path, database_url: str
) -> None:
    with live_server("--database-url", database_url, "--lease-wait-limit", "0.05", env=KEYS) as base:
        result = subprocess.run(
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
            ],
            cwd=tmp_path,  # any report or cache schemathesis writes stays out of the work tree
            env={**os.environ, "SCHEMATHESIS_HOOKS": "tests.schemathesis.hooks", "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
