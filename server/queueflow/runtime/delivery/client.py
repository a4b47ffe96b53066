"""What a delivery sends, and how: one aiohttp session per endpoint, over connections made only to checked
addresses.

aiohttp, not httpx: on a local receiver answering 200 at once, aiohttp used 96–127 µs of client CPU per request
where httpx used 0.8–1.8 ms, and drove 8–10× the requests per second (bench/results/2026-12-07-push-client.md).

A new connection asks `CheckedResolver`, which resolves the host once through the engine's `Resolver` port, checks
every address (`Endpoints.addresses`) and hands aiohttp the checked ones, so the connection goes to an address that
was checked, never to what a second lookup says (DNS rebinding). A URL with a literal address never reaches a
resolver in aiohttp, so it is checked before the request. TLS still verifies the certificate for the URL's host,
which is also the `Host` header. Redirects are not followed; a body is read up to `max_body_bytes` and no further.
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from queueflow import __version__
from queueflow.core.endpoints import (
    Endpoint,
    address_refusal,
    delivery_body,
    host_of,
    literal_address,
    signature_header,
)
from queueflow.core.types import Job
from queueflow.engine.endpoints import Endpoints, Refused

CONNECT_TIMEOUT = 10.0
"""The longest a new connection may take, within the request's own bound."""
USER_AGENT = f"QueueFlow/{__version__} (push delivery)"


class CheckedResolver(AbstractResolver):
    def __init__(self, endpoints: Endpoints) -> None:
        self.endpoints = endpoints

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list[ResolveResult]:
        addresses = await self.endpoints.addresses(host, port)
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=port,
                family=socket.AF_INET6 if ":" in address else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for address in addresses
        ]

    async def close(self) -> None:
        pass


@dataclass(frozen=True, slots=True)
class Answer:
    """An endpoint's answer: its status, headers (lower-case names) and body (None: longer than the limit)."""

    status: int
    headers: dict[str, str]
    body: bytes | None


class Sender:
    """One endpoint's HTTP client: its own keep-alive pool, so its connections are nobody else's."""

    def __init__(self, endpoints: Endpoints, *, max_body_bytes: int) -> None:
        self.endpoints = endpoints
        self.max_body_bytes = max_body_bytes
        # No pool limit: the endpoint's slots bound its requests. No DNS cache: every new connection is checked.
        connector = aiohttp.TCPConnector(limit=0, use_dns_cache=False, resolver=CheckedResolver(endpoints))
        self.session = aiohttp.ClientSession(connector=connector, headers={"User-Agent": USER_AGENT})

    async def send(self, endpoint: Endpoint, job: Job, seconds: float) -> Answer:
        """POST `job` to the endpoint, signed with every secret that signs now, answered within `seconds`.
        Raises `Refused`, `TimeoutError` or an `aiohttp.ClientError` when there is no answer."""
        host, _ = host_of(endpoint.url)
        if literal_address(host) and not self.endpoints.allow_private:
            refusal = address_refusal(host)
            if refusal is not None:
                raise Refused(f"{refusal}; private endpoints are not allowed on this server")
        body = delivery_body(job)
        now = self.endpoints.clock.now()
        headers = {
            "Content-Type": "application/json",
            "QueueFlow-Job-Id": job.id,
            "QueueFlow-Delivery": str(job.delivery_count),
            "QueueFlow-Signature": signature_header(endpoint.signing_secrets(now), body, int(now.timestamp())),
        }
        timeout = aiohttp.ClientTimeout(total=seconds, connect=min(CONNECT_TIMEOUT, seconds))
        async with self.session.post(
            endpoint.url, data=body, headers=headers, allow_redirects=False, timeout=timeout
        ) as response:
            return Answer(
                response.status,
                {name.lower(): value for name, value in response.headers.items()},
                await self._body(response),
            )

    async def _body(self, response: aiohttp.ClientResponse) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        while size <= self.max_body_bytes:
            chunk = await response.content.read(self.max_body_bytes + 1 - size)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
        return None  # longer than any result may be: not read further

    async def close(self) -> None:
        await self.session.close()


def describe(exc: BaseException, seconds: float) -> str:
    """A failed delivery's `error_message`: which of refused, timed out or a connection error it was."""
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return f"the endpoint did not answer within {seconds:g} s"
    cause: Any = exc
    while cause is not None and not isinstance(cause, Refused):
        cause = cause.__cause__ or getattr(cause, "os_error", None)
    if isinstance(cause, Refused):
        return f"refused: {cause}"
    return f"connection error: {exc}"
