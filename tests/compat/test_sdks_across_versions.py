"""SDKs and servers of neighbouring versions (docs/compatibility.md): the previous release's SDK test suites
against today's server, and today's SDKs' live-server tests against the previous release's server. Each suite runs
as it does in its own release, in a process of its own; a failure shows that suite's output."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from queueflow.stores.postgres.url import asyncpg_dsn

from bench import typescript_build
from tests.compat.previous import ROOT, previous, sdk_venv, server_venv, tree

TODAY_BIN = Path(sys.executable).parent
"""Today's `queueflow` (this checkout's, installed editable beside the interpreter running the tests)."""


def run(argv: list[str], cwd: Path, timeout: float, **env: str) -> None:
    done = attempt(argv, cwd, timeout, **env)
    assert done.returncode == 0, failure(argv, cwd, done)


def attempt(argv: list[str], cwd: Path, timeout: float, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True, timeout=timeout, check=False
    )


def failure(argv: list[str], cwd: Path, done: subprocess.CompletedProcess[str]) -> str:
    """The failed tests' own reports first (a long suite's tail would not reach them), then the output's tail."""
    failed = "\n".join(block.group(0) for block in FAILED_TEST.finditer(done.stdout))[:8000]
    tail = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return f"{' '.join(argv)} in {cwd} failed:\n{failed}\n\nthe output's tail:\n{tail}"


FAILED_TEST = re.compile(r"^([ ]*)not ok \d+ - .*?^\1[ ][ ]\.\.\.$", re.MULTILINE | re.DOTALL)
"""A failed test's report in node --test's TAP output: its `not ok` line and the YAML block under it."""


FAILED_FILE = re.compile(r"^\s*not ok \d+ - (\S+\.test\.js)\s*$", re.MULTILINE)
"""A test file that failed, in node --test's TAP output (its top level: one line per file)."""


def typescript_suite(
    package: Path, server_bin: Path, postgres_url: str, leave_out: frozenset[str] = frozenset(), *, shipped: bool
) -> None:
    """Build the TypeScript SDK in `package` and run its tests against `server_bin/queueflow`. A `shipped` suite
    (a release's, which can no longer be changed) runs as it shipped, flaky tests included: a file that fails gets
    one more run, alone, and fails the test only if it fails again. Today's suite gets none: its flakes are fixed."""
    assert shutil.which("npm"), "Node 20+ and npm are needed for the TypeScript SDK"
    if not (package / "node_modules" / ".package-lock.json").exists():
        run(["npm", "ci", "--no-audit", "--no-fund"], package, 300)
    typescript_build.build(package, timeout=120)
    files = sorted(
        str(path.relative_to(package))
        for path in (package / "dist-test" / "test").glob("*.test.js")
        if path.name.removesuffix(".js") not in leave_out
    )
    env = {"QUEUEFLOW_BIN": str(server_bin / "queueflow"), "QUEUEFLOW_TEST_PG_URL": asyncpg_dsn(postgres_url)}
    argv = ["node", "--test", "--test-concurrency=2", *files]
    done = attempt(argv, package, 300, **env)
    if done.returncode == 0:
        return
    failed = FAILED_FILE.findall(done.stdout)
    assert shipped, failure(argv, package, done)
    assert failed, failure(argv, package, done)
    again = ["node", "--test", *failed]
    rerun = attempt(again, package, 300, **env)
    assert rerun.returncode == 0, f"{failure(again, package, rerun)}\n\nthe first run:\n{failure(argv, package, done)}"


def test_the_previous_python_sdk_suite_passes_against_todays_server() -> None:
    """Its tests/sdk, run from its tree, with its `queueflow-client` and today's server (the app in-process, as
    that suite runs it; with today's `queueflow-worker`, which today's server imports: one interpreter holds one)."""
    python = sdk_venv() / "python"
    run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "tests/sdk"], tree(), 600)


def test_the_previous_typescript_suite_passes_against_todays_server(postgres_url: str) -> None:
    typescript_suite(tree() / "sdks" / "typescript", TODAY_BIN, postgres_url, shipped=True)


def test_todays_typescript_suite_passes_against_the_previous_server(postgres_url: str) -> None:
    """But for the test files that need what that server lacks (the pin's `newer_typescript_tests`)."""
    leave_out = previous().newer_typescript_tests
    typescript_suite(ROOT / "sdks" / "typescript", server_venv(), postgres_url, leave_out, shipped=False)


def test_todays_python_sdk_live_tests_pass_against_the_previous_server() -> None:
    """tests/e2e/test_sdk_live.py (the client and both kinds of worker against a real server on PostgreSQL), its
    server started with the previous release's Python."""
    run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/e2e/test_sdk_live.py"],
        ROOT,
        600,
        QUEUEFLOW_SERVER_PYTHON=str(server_venv() / "python"),
    )


def test_the_previous_release_is_an_ancestor_of_this_tree() -> None:
    """The pin names a commit of this history (a typo or a rewritten history would test against nothing)."""
    run(["git", "merge-base", "--is-ancestor", previous().commit, "HEAD"], ROOT, 30)
