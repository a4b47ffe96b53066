"""The runnable examples of sdks/python/README.md, run as written against a live development server."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.e2e.live import ROOT, live_server

README = ROOT / "sdks" / "python" / "README.md"
URL = "http://127.0.0.1:8000"
EXPECTED = {
    "Quick start": "completed {'sent': True}",
    "Workflows": "completed {'run': 1, 'extract': [1, 2, 3], 'load': 6}\n"
    "[('extract', 'completed'), ('load', 'completed')]",
    "Schedules": "the name is taken\nFalse None 0 3 * * *\n['nightly-report']",
    "Flow control": "True 3\nFalse 1 None",
}


def example(section: str) -> str:
    """The first Python block of the README section headed `section`."""
    body = README.read_text().split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", body, re.DOTALL)
    assert match is not None, f"no Python example under '## {section}'"
    return match.group(1)


@pytest.mark.parametrize("section", sorted(EXPECTED))
def test_the_readme_example_runs_as_written(section: str) -> None:
    with live_server("--database-url", "memory://") as base:
        source = example(section).replace(URL, base)
        done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert EXPECTED[section] in done.stdout


def test_the_client_example_runs_as_written_with_its_tenant_key() -> None:
    with live_server("--database-url", "memory://", "--api-keys", "key1=acme", "--worker-keys", "wkey") as base:
        source = example("The client").replace(URL, base)
        done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
