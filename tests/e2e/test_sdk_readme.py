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
    "Push endpoints": "completed {'charged': 42}\n1",
    "Deadlines": "0:05:00\nTrue",
    "Workflows that grow and wait": "completed 30\n['map_0', 'map_1', 'map_2', 'map_3']",
    "Workflows that grow and wait#2": "completed invoice 42 approved by ada",
}


def example(section: str) -> str:
    """The Python block of the README section headed `section`: its first, or with `#n` its n-th."""
    heading, _, nth = section.partition("#")
    body = README.read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"```python\n(.*?)```", body, re.DOTALL)
    assert len(found) >= int(nth or 1), f"no Python example {nth or 1} under '## {heading}'"
    return str(found[int(nth or 1) - 1])


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
