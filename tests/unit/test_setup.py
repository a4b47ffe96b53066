"""The README's quick start is the whole set-up: `make test` installs everything a test needs (Python, Node and
Debian packages) as its own prerequisites, and CI (`.ci/run`) adds nothing to it but starting PostgreSQL — so a
green CI cannot hide an install step that a fresh clone's `make test` would miss (issue 41: CI installed the
TypeScript SDK's Node modules on the side, and a clean clone's `make test` failed two tests)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALLERS = re.compile(r"\b(apt-get|apt|npm|npx|pip|pip3|uv|python3? -m pip)\b")


def _commands(script: str) -> list[str]:
    return [line.strip() for line in script.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_ci_installs_nothing_of_its_own_and_runs_make_ci() -> None:
    commands = _commands((ROOT / ".ci" / "run").read_text())
    assert [command for command in commands if INSTALLERS.search(command)] == []
    assert any(re.fullmatch(r"make( -j\d+)? ci", command) for command in commands)


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_test_installs_python_node_and_debian_packages_before_it_runs_pytest() -> None:
    # -n prints the recipes without running them; -B as on a fresh clone, where nothing is built yet.
    plan = subprocess.run(
        ["make", "-nB", "test"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    steps = {
        "the project's .venv": "uv pip install",
        "the TypeScript SDK's Node modules": "npm ci",
        "Debian's packages": "apt-get install",
        "the tests": "pytest",
    }
    where = {name: plan.find(marker) for name, marker in steps.items()}
    assert all(at >= 0 for at in where.values()), where
    assert where["the tests"] == max(where.values()), "pytest runs after every install step"
    for package in ("chromium", "pgbouncer", "postgresql-client"):
        assert package in plan
