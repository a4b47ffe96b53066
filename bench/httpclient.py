"""A minimal HTTP/1.1 keep-alive client on asyncio streams: the load generator's only network code.

On a 2-core machine every CPU cycle the client spends is taken from the server it measures. httpx or aiohttp
cost several times the server's own per-request work in Python; this client sends pre-encoded bytes and parses
only the status line and Content-Length, so the server stays the bottleneck. It speaks just what uvicorn answers
a JSON API with (Content-Length bodies, or chunked ones) and nothing more.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import msgspec

IDLE_LIMIT = 4.0
"""uvicorn closes a keep-alive connection idle for 5 s: one idle longer than this is reopened before a request
(not retried after one, which could repeat a request the server did run)."""

_encode = msgspec.json.encode
_decode = msgspec.json.decode


class HttpError(RuntimeError):
    """A response whose status the caller did not expect."""


class Connection:
    """One keep-alive connection; one request at a time (HTTP/1.1 without pipelining)."""

    def __init__(self, host: str, port: int, token: str) -> None:
        self._host, self._port = host, port
        self._headers = (
            f"Host: {host}:{port}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        ).encode()
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._used = 0.0

    async def open(self) -> Connection:
        self._reader, self._writer = await asyncio.open_connection(self._host, self._port)
        self._used = time.monotonic()
        return self

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(ConnectionError):  # the server may have closed it already
                await self._writer.wait_closed()
            self._writer = self._reader = None

    async def post(self, path: str, body: Any, expect: int = 200, *, decode: bool = True) -> Any:
        """POST `body` (JSON bytes, or a value to encode) to `path`; the decoded answer (None if not `decode`).

        HttpError unless the status is `expect`. Pre-encoded bodies and `decode=False` keep JSON work that the
        measurement does not need out of the client's share of the CPU."""
        status, payload = await self.request("POST", path, body if isinstance(body, bytes) else _encode(body))
        if status != expect:
            raise HttpError(f"POST {path}: {status} {payload[:500]!r}")
        return _decode(payload) if decode else None

    async def get(self, path: str) -> Any:
        status, payload = await self.request("GET", path, None)
        if status != 200:
            raise HttpError(f"GET {path}: {status} {payload[:500]!r}")
        return _decode(payload)

    def encode(self, method: str, path: str, body: bytes | None = None) -> bytes:
        """The whole request as bytes, for `exchange`: a scenario that repeats one request encodes it once."""
        head = f"{method} {path} HTTP/1.1\r\n".encode() + self._headers
        head += f"Content-Length: {len(body)}\r\n\r\n".encode() if body is not None else b"\r\n"
        return head + body if body is not None else head

    async def request(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        return await self.exchange(self.encode(method, path, body))

    async def exchange(self, raw: bytes) -> tuple[int, bytes]:
        """Send one encoded request (`encode`) and read its answer: (status, body)."""
        if self._writer is not None and time.monotonic() - self._used > IDLE_LIMIT:
            await self.close()
        if self._reader is None or self._writer is None:
            await self.open()
        assert self._reader is not None
        assert self._writer is not None
        self._writer.write(raw)
        status_line = await self._reader.readuntil(b"\r\n")
        status = int(status_line.split(b" ", 2)[1])
        length, chunked = 0, False
        while (line := await self._reader.readuntil(b"\r\n")) != b"\r\n":
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
        self._used = time.monotonic()
        if not chunked:
            return status, await self._reader.readexactly(length)
        parts = []
        while size := int((await self._reader.readuntil(b"\r\n")).split(b";")[0], 16):
            parts.append(await self._reader.readexactly(size))
            await self._reader.readexactly(2)
        await self._reader.readuntil(b"\r\n")  # the empty trailer
        return status, b"".join(parts)


async def connections(host: str, port: int, token: str, count: int) -> list[Connection]:
    """`count` open connections, so that connecting never falls inside a measurement."""
    return list(await asyncio.gather(*(Connection(host, port, token).open() for _ in range(count))))


async def close_all(open_connections: list[Connection]) -> None:
    await asyncio.gather(*(connection.close() for connection in open_connections))
