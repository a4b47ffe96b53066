"""The TypeScript SDK's own suite (sdks/typescript: type checks, drift, live-server tests, the packed tarball),
run from pytest so that `make test` and CI cover it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from queueflow.stores.postgres.url import asyncpg_dsn

from bench import typescript_build

ROOT = Path(__file__).resolve().parent.parent.parent
SDK = ROOT / "sdks" / "typescript"


def npm(*args: str, timeout: float, database_url: str = "") -> subprocess.CompletedProcess[str]:
    # The suite starts `queueflow serve` from this interpreter's environment, wherever that is; its transactional
    # enqueue tests use the session's migrated database.
    env = {
        **os.environ,
        "QUEUEFLOW_BIN": str(Path(sys.executable).parent / "queueflow"),
        "QUEUEFLOW_TEST_PG_URL": database_url,
    }
    return subprocess.run(
        ["npm", *args], cwd=SDK, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def modules_outdated() -> bool:
    """The Makefile's rule: npm ci's hidden lockfile missing, or older than package.json/package-lock.json."""
    stamp = SDK / "node_modules" / ".package-lock.json"
    if not stamp.exists():
        return True
    installed = stamp.stat().st_mtime
    return any((SDK / name).stat().st_mtime > installed for name in ("package.json", "package-lock.json"))


def check(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, f"npm {' '.join(result.args[1:])} failed:\n{result.stdout}\n{result.stderr}"


def test_typescript_sdk(postgres_url: str) -> None:
    assert shutil.which("npm"), "Node 20+ and npm are needed for the TypeScript SDK (sdks/typescript)"
    if modules_outdated():
        check(npm("ci", "--no-audit", "--no-fund", timeout=300))
        (SDK / "node_modules" / ".package-lock.json").touch()
    typescript_build.build(SDK, timeout=120)
    check(npm("test", timeout=240, database_url=asyncpg_dsn(postgres_url)))
