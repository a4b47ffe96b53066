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


def written_versions() -> dict[str, str]:
    """Every place a version is written, by where."""
    found = {
        f"{path}": tomllib.loads((ROOT / path).read_text())["project"]["version"]
        for path in ("pyproject.toml", "sdks/python/pyproject.toml", "sdks/worker/pyproject.toml")
    }
    found["sdks/typescript/package.json"] = json.loads((ROOT / "sdks/typescript/package.json").read_text())["version"]
    lock = json.loads((ROOT / "sdks/typescript/package-lock.json").read_text())
    found["sdks/typescript/package-lock.json"] = lock["packages"][""]["version"]
    match = re.search(r'export const VERSION = "([^"]+)"', (ROOT / "sdks/typescript/src/version.ts").read_text())
    assert match is not None
    found["sdks/typescript/src/version.ts"] = match.group(1)
    found["spec/openapi.json"] = json.loads((ROOT / "spec/openapi.json").read_text())["info"]["version"]
    found["queueflow.__version__"] = queueflow.__version__
    found["queueflow_client.__version__"] = queueflow_client.__version__
    found["queueflow_worker.__version__"] = queueflow_worker.__version__
    return found


def test_every_artifact_carries_one_version() -> None:
    versions = written_versions()
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
