"""One version per release (docs/compatibility.md): the server, `queueflow-client`, the worker package and
`@queueflow/client` carry the same one everywhere it is written, and each says it — `queueflow --version`, the
spec's `info.version`, each SDK's User-Agent. `make release` (scripts/release.py) sets them all; this test fails
when one is set by hand and the others are not."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx
import queueflow
import queueflow_client
import queueflow_worker
from queueflow_client import QueueFlow

ROOT = Path(__file__).resolve().parents[2]


def written_versions(root: Path = ROOT) -> dict[str, str]:
    """Every place a version is written in the tree at `root`, by where."""
    found = {
        f"{path}": tomllib.loads((root / path).read_text())["project"]["version"]
        for path in ("pyproject.toml", "sdks/python/pyproject.toml", "sdks/worker/pyproject.toml")
    }
    found["sdks/typescript/package.json"] = json.loads((root / "sdks/typescript/package.json").read_text())["version"]
    lock = json.loads((root / "sdks/typescript/package-lock.json").read_text())
    found["sdks/typescript/package-lock.json (top)"] = lock["version"]
    found["sdks/typescript/package-lock.json"] = lock["packages"][""]["version"]
    for path, pattern in (
        ("sdks/typescript/src/version.ts", r'export const VERSION = "([^"]+)"'),
        ("server/queueflow/__init__.py", r'__version__ = "([^"]+)"'),
        ("sdks/python/queueflow_client/_version.py", r'__version__ = "([^"]+)"'),
        ("sdks/worker/queueflow_worker/__init__.py", r'__version__ = "([^"]+)"'),
    ):
        match = re.search(pattern, (root / path).read_text())
        assert match is not None, path
        found[path] = match.group(1)
    return found


def test_every_artifact_carries_one_version() -> None:
    versions = written_versions()
    versions["spec/openapi.json"] = json.loads((ROOT / "spec/openapi.json").read_text())["info"]["version"]
    versions["queueflow.__version__ (imported)"] = queueflow.__version__
    versions["queueflow_client.__version__ (imported)"] = queueflow_client.__version__
    versions["queueflow_worker.__version__ (imported)"] = queueflow_worker.__version__
    assert set(versions.values()) == {queueflow.__version__}, versions


def test_queueflow_version_prints_it() -> None:
    printed = subprocess.run(
        [sys.executable, "-m", "queueflow.cli", "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert printed == f"queueflow {queueflow.__version__}\n"


def test_the_python_sdk_says_which_it_is_in_every_request() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"queues": []})

    http = httpx.Client(transport=httpx.MockTransport(answer))
    with QueueFlow("http://queueflow.test", "key", http_client=http) as client:
        client.queues.list()
    assert [request.headers["user-agent"] for request in seen] == [f"queueflow-python/{queueflow.__version__}"]
