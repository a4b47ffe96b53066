"""`make bench-smoke` inside the test suite: every benchmark scenario runs, at tiny sizes, and none errors.

It asserts nothing about speed (the machine is shared); it proves the harness still works against the code as it
is, so that `make bench` does not rot between the runs that record figures.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests import pg

ROOT = Path(__file__).resolve().parent.parent.parent
FIGURES = [
    "HTTP batched drain",
    "HTTP batched drain across 100 tenants",
    "HTTP single drain",
    "HTTP batch enqueue",
    "HTTP unique batch enqueue (skip) over 1000 distinct keys",
    "HTTP unique batch enqueue (skip) with a new key per row",
    "debounce burst: 300 enqueues on 100 keys",
    "a sequence of 20 jobs drained by 8 concurrent workers: order violations",
    "a sequence of 20 jobs drained by 8 concurrent workers: overlaps",
    "a sequence of 20 jobs drained by 8 concurrent workers: jobs/s",
    "200 jobs expiring under load: leased after their deadline",
    "200 jobs expiring under load: dead-lettered after the deadline",
    "claim of 100 over 10,000 pending jobs in 100 sequences, each head among the first in claim order",
    "claim of 100 over 10,000 pending jobs in 100 sequences of 100 consecutive ids",
    "server peak RSS",
    "server CPU per job, HTTP batched drain (÷ PostgreSQL's CPU per job in the same drain",
    "wake-up: enqueue",
    "a delayed job",
    "a retried job",
    "HTTP lease 1 latency",
    "server CPU per request, GET /healthz",
    "server CPU per request, GET /bench/floor/{id}, the one-query route",
    "server CPU per request ÷ the one-query route: GET /v1/jobs/{id}",
    "server CPU per request ÷ the one-query route: POST /v1/jobs, one job",
    "server CPU per request ÷ the one-query route: POST /v1/worker/lease, max_jobs 1",
    "server CPU per request ÷ the one-query route: POST /v1/worker/jobs/{id}/complete",
    "server CPU per request ÷ the one-query route: POST /v1/worker/lease on an empty queue, wait_seconds 0",
    "server CPU per request ÷ GET /healthz (history: issue 32's measure): GET /v1/jobs/{id}",
    "server CPU per request, single enqueue, queueflow serve --workers 2 (÷ --workers 1)",
    "new PostgreSQL sessions",
    "TypeScript SDK worker peak RSS, one 400-job drain",
    "TypeScript SDK worker live heap after a full GC, one 400-job drain",
    "5 workflows × a 3-step chain: steps/s",
    "fan-out 1 → 5 → 1: seconds",
    "fan-out 1 → 10 → 1: seconds",
    "5-step chain: ms per step",
    "a parent of 3 child workflows × a 10-step chain: seconds",
    "server CPU per step, fan-out 10 wide (÷ 5 wide)",
    "log–log slope of fan-out time over width, 5 → 10",
    "workflow steps healed by the janitor",
    "a delayed job leased by the in-process runner",
    "adding 20 steps in one call: time (ratio ÷ creating a 20-step workflow)",
    "adding 20 steps in one call: server CPU",
    "adding 10 steps to a 50-step workflow: time",
    "a signal sent to the next step's start (in-process runner), p99",
    "a seconds wait's end (its dependent enqueued) after its due time, p99",
    "one event starting 20 triggers' jobs: time (ratio ÷ a batch enqueue of 20)",
    "events/s, 8 clients, each event matching 2 of 40 triggers",
    "a workflow past its deadline (timeout_seconds 1), ended after it, p99",
    "push drain, one endpoint at concurrency 50",
    "push: server CPU per pushed job",
    "push: an endpoint's drain while another answers after 10 s",
    "push: enqueue (its answer) → delivery received, idle endpoint, p99",
    "push: requests in flight at the receiver over the endpoint's concurrency 5, two servers",
]


def test_every_scenario_runs_in_the_smoke_profile(tmp_path: Path) -> None:
    report = tmp_path / "RESULTS.md"
    run = subprocess.run(
        [sys.executable, "-m", "bench", "--profile", "smoke", "--output", str(report)],
        cwd=ROOT,
        env={**os.environ, "QUEUEFLOW_BENCH_DATABASE_URL": pg.admin_url()},
        capture_output=True,
        text=True,
        # A hang guard, not a speed limit: about a minute on a quiet machine, 200-280 s on one shared by a dozen
        # busy processes (the TypeScript build alone then takes 70 s).
        timeout=420,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    table = report.read_text()
    missing = [figure for figure in FIGURES if f"| {figure}" not in table]
    assert not missing, table
    assert "raw claim 100 + complete 100, 4 clients:" in table, table
    assert "| one tenant:" in table, table
    # CPU per job by party, a row for each drain (PostgreSQL's may read "not measured" where it runs elsewhere).
    parties = table.split("## CPU per job, by party", 1)[-1].split("## How each figure is measured", 1)[0]
    drains = ["HTTP batched drain: lease 100", "HTTP batched drain across 100 tenants", "HTTP single drain",
              "in-process worker drain, default settings", "in-process worker drain, 2 processes",
              "Python SDK worker drain, default settings", "TypeScript SDK worker drain, default settings"]  # fmt: skip
    missing = [drain for drain in drains if f"| {drain}" not in parties]
    assert not missing, parties
