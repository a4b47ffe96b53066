"""The banner `queueflow serve` prints once it listens: its curl calls, run as printed (the keys a user exports
put in for the placeholders), push a first job through; tenant and worker calls each carry their own kind of key."""

from __future__ import annotations

import random
import shlex
import socket
from typing import Any

import pytest
from httpx import ASGITransport, AsyncClient
from queueflow.api import create_app
from queueflow.clocks import TestClock
from queueflow.serve import listen, walkthrough
from queueflow.settings import Settings, SettingsError
from queueflow.stores.memory import InMemoryJobStore

KEYS = Settings(api_keys={"key-a": "tenant-a"}, worker_keys=("key-w",))


def curl_calls(banner: str) -> list[list[str]]:
    return [shlex.split(line) for line in banner.splitlines() if line.lstrip().startswith("curl ")]


async def run_banner(settings: Settings, env: dict[str, str]) -> list[Any]:
    """Run the banner's curl calls in order against an app with `settings`, as a shell would with `env`
    exported, filling `<id>` and `<lease_token>` from the lease's answer as its comment says."""
    app = create_app(settings, store=InMemoryJobStore(), clock=TestClock(), rng=random.Random(1))
    answers: list[Any] = []
    filled: dict[str, str] = {}
    async with AsyncClient(transport=ASGITransport(app=app), base_url=f"http://127.0.0.1:{settings.port}") as http:
        for argv in curl_calls(walkthrough(settings)):
            headers: dict[str, str] = {}
            data: str | None = None
            words = iter(argv[1:])
            url = ""
            for word in words:
                if word == "-H":
                    name, _, value = next(words).partition(": ")
                    for variable, key in env.items():
                        value = value.replace(f"${variable}", key)
                    headers[name] = value
                elif word == "-d":
                    data = next(words)
                elif not word.startswith("-"):
                    url = word
            for placeholder, value in filled.items():
                url = url.replace(placeholder, value)
                data = data.replace(placeholder, value) if data else data
            assert "$" not in str(headers), headers
            assert "<" not in url + (data or ""), (url, data)
            response = await http.request("POST" if data else "GET", url, content=data, headers=headers)
            assert response.status_code in (200, 201), (argv, response.text)
            answers.append(response.json())
            if "/worker/lease" in url:
                (job,) = response.json()["jobs"]
                filled = {"<id>": job["id"], "<lease_token>": job["lease_token"]}
    return answers


async def test_with_keys_the_tenant_call_and_the_worker_calls_use_their_own_key() -> None:
    banner = walkthrough(KEYS)
    assert "export TENANT_KEY=<a key of --api-keys> WORKER_KEY=<a key of --worker-keys>" in banner
    enqueue, lease, complete = curl_calls(banner)
    assert "Authorization: Bearer $TENANT_KEY" in enqueue
    assert "Authorization: Bearer $WORKER_KEY" in lease
    assert "Authorization: Bearer $WORKER_KEY" in complete
    assert "key-a" not in banner  # keys are secrets: never printed
    assert "key-w" not in banner
    answers = await run_banner(KEYS, {"TENANT_KEY": "key-a", "WORKER_KEY": "key-w"})
    assert answers[-1]["status"] == "completed"
    assert answers[-1]["result"] == {"sent": True}


async def test_in_development_mode_the_calls_need_no_key() -> None:
    settings = Settings()
    banner = walkthrough(settings)
    assert "Authorization" not in banner
    assert "export" not in banner
    assert banner.startswith("QueueFlow is listening on http://127.0.0.1:8000: dashboard http://127.0.0.1:8000/ui")
    answers = await run_banner(settings, {})
    assert answers[-1]["status"] == "completed"


def test_without_worker_keys_the_banner_says_why_nothing_can_lease() -> None:
    banner = walkthrough(Settings(api_keys={"key-a": "tenant-a"}))
    assert len(curl_calls(banner)) == 1
    assert "no worker keys are configured (--worker-keys), so no worker can lease it yet" in banner
    assert "no tenant keys are configured" in walkthrough(Settings(worker_keys=("key-w",)))


def test_an_ipv6_host_is_bracketed_in_urls() -> None:
    assert "http://[::1]:8000/v1/jobs" in walkthrough(Settings(host="::1"))


def test_listen_binds_the_port_before_anything_starts() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    bound = listen(Settings(port=port))
    with bound:
        assert bound.getsockname() == ("127.0.0.1", port)


def test_a_port_in_use_is_one_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SettingsError) as caught:
            listen(Settings(port=port))
    assert str(caught.value) == (
        f"127.0.0.1:{port} is already in use (another QueueFlow?): stop it, or choose another --port"
    )
