"""Fixtures shared by every test folder: a PostgreSQL database per test session, created on first use."""

from __future__ import annotations

import fcntl
import hashlib
import os
import socket
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres import schema as pgschema

from bench import typescript_build
from tests import pg

pytest_plugins = ["tests.inprocess"]

_embedded = ExitStack()
TYPESCRIPT_SDK = Path(__file__).resolve().parents[1] / "sdks" / "typescript"
DIST_LOCK = Path(tempfile.gettempdir()) / (
    f"queueflow-typescript-dist-{hashlib.sha1(str(TYPESCRIPT_SDK).encode()).hexdigest()[:12]}.lock"
)
"""`_typescript_dist`'s lock: one per checkout (every worktree on a machine has a dist of its own to guard)."""
BUILD_LOCK = DIST_LOCK.with_suffix(".build.lock")
"""Held by the one reader that builds a stale dist (`_typescript_dist`)."""

SLOW_FIRST = {
    "test_schemathesis_finds_no_issue_against_a_live_server",
    "test_a_thousand_step_random_dag_runs_each_step_once_in_dependency_order",
    "test_typescript_sdk",
    "test_every_scenario_runs_in_the_smoke_profile",
    "test_the_endurance_harness_runs_every_phase_and_writes_its_report",
    "test_nothing_is_lost_finished_twice_or_stuck_under_mixed_faults",
    "test_the_previous_python_sdk_suite_passes_against_todays_server",
    "test_the_previous_typescript_suite_passes_against_todays_server",
    "test_todays_typescript_suite_passes_against_the_previous_server",
    "test_todays_python_sdk_live_tests_pass_against_the_previous_server",
    "test_worker_routes_keep_the_spec",
    "test_a_rolling_upgrade_runs_every_job_once_with_no_5xx",
    "test_more_than_10000_steps_are_rejected_and_10000_are_accepted",
}
"""Tests of half a minute or more (by name, so that moving one keeps it here; tests/unit/test_slow_first.py checks
that each still exists). Under `make test`'s workers they start first, one per free worker, rather than last,
alone, behind the hundreds of quick ones."""

BUILDS_TYPESCRIPT_DIST: set[str] = set()
"""Tests that write sdks/typescript/dist while they run: each would hold the dist lock alone (`_typescript_dist`).
None today: the TypeScript suite's package test packs dist as built (`npm pack --ignore-scripts`), where its
prepack used to compile dist again in place beside the suite's other files."""

RUNS_TYPESCRIPT_DIST = {
    "test_every_scenario_runs_in_the_smoke_profile",
    "test_nothing_is_lost_finished_twice_or_stuck_under_mixed_faults",
    "test_typescript_sdk",
    "test_todays_typescript_suite_passes_against_the_previous_server",
}
"""Tests that start TypeScript workers from sdks/typescript/dist or run its suite: they share the dist lock, so
they run side by side once one of them has built a stale dist (their own builds then find nothing to do), but never
beside one that writes dist."""

SHARES_TYPESCRIPT_DIST = BUILDS_TYPESCRIPT_DIST | RUNS_TYPESCRIPT_DIST


def pytest_configure(config: pytest.Config) -> None:
    """Without a test server (none configured, none on 127.0.0.1:5432), run an embedded PostgreSQL for the run.

    Under pytest-xdist this runs in the controller before it starts its workers, which inherit the URL in the
    environment and so join that one server rather than start their own."""
    # Every `queueflow serve` a test starts inherits this. At its default of 10 connections a server, the slow
    # tests that xdist starts together (schemathesis' two servers, the chaos cluster, the bench, the TypeScript
    # suite's server), beside the workers' own pools, went past PostgreSQL's default max_connections of 100.
    os.environ.setdefault("QUEUEFLOW_POOL_SIZE", "4")
    wanted = os.environ.get(pg.ENV)
    if wanted and wanted != "embedded":
        return
    if not wanted and _answers("127.0.0.1", 5432):
        return
    from queueflow.embedded import embedded_postgres

    data = Path(_embedded.enter_context(tempfile.TemporaryDirectory(prefix="queueflow-test-pg-")))
    os.environ[pg.ENV] = _embedded.enter_context(embedded_postgres(data / "postgres"))


def pytest_unconfigure(config: pytest.Config) -> None:
    _embedded.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: getattr(item, "originalname", item.name) not in SLOW_FIRST)


@pytest.fixture(autouse=True)
def _typescript_dist(request: pytest.FixtureRequest) -> Iterator[None]:
    """The tests that use sdks/typescript/dist hold a lock on it while they run, whichever worker runs them
    (`xdist_group` marks did not keep them on one worker under --dist loadgroup here: checked with two marked
    tests, which ran on two workers): a writer alone; the others together, once one of them has built dist if a
    source changed since its last build (`typescript_build`: after it, their own builds find nothing to do)."""
    name = getattr(request.node, "originalname", request.node.name)
    if name not in SHARES_TYPESCRIPT_DIST:
        yield
        return
    with DIST_LOCK.open("w") as lock:  # released when the file closes
        if name in BUILDS_TYPESCRIPT_DIST:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
            return
        # A reader checks under the shared lock, so that it never waits on another reader. When dist is stale, one
        # reader at a time (the build lock) builds it under the exclusive lock; a reader that found it stale too
        # waits for that build, not for the builder's whole test, and finds nothing left to build.
        while True:
            fcntl.flock(lock, fcntl.LOCK_SH)
            if not (TYPESCRIPT_SDK / "node_modules").is_dir() or not typescript_build.stale(TYPESCRIPT_SDK):
                break
            fcntl.flock(lock, fcntl.LOCK_UN)
            with BUILD_LOCK.open("w") as building:
                fcntl.flock(building, fcntl.LOCK_EX)
                if typescript_build.stale(TYPESCRIPT_SDK):
                    fcntl.flock(lock, fcntl.LOCK_EX)
                    typescript_build.build(TYPESCRIPT_SDK)
                    fcntl.flock(lock, fcntl.LOCK_UN)
        yield


def _answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A migrated database of this session's own, dropped at its end."""
    # Work off the event loop's thread: this fixture may first be asked for from inside a running loop.
    url = pg.blocking(pg.create_database)
    try:
        pg.off_loop(lambda: pgschema.upgrade(url))
        yield url
    finally:
        pg.blocking(lambda: pg.drop_database(url))


@pytest.fixture
async def postgres_store(postgres_url: str) -> AsyncIterator[PostgresJobStore]:
    """A store on the session's database, emptied before the test."""
    async with pg.emptied_store(postgres_url) as store:
        yield store
