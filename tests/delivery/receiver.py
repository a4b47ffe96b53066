"""A push endpoint for tests: a tiny ASGI app under uvicorn on a free loopback port, in the test's own event loop.

It records every delivery (headers and body), counts how many are in flight at once (`peak`), and answers as the
test says (`answer`): a status, headers and a body, after `hold` is set (default: at once).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn


@dataclass
class Delivery:
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    url: str = ""
    status: int = 200
    headers: list[tuple[bytes, bytes]] = field(default_factory=lambda: [(b"content-type", b"application/json")])
    body: bytes = b'{"ok": true}'
    work_seconds: float = 0.0
    """How long each request takes to answer (a receiver doing work)."""
    hold: asyncio.Event | None = None
    """Answers wait for this, when set."""
    deliveries: list[Delivery] = field(default_factory=list)
    in_flight: int = 0
    peak: int = 0
    arrived: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        headers = {name.decode().lower(): value.decode() for name, value in scope["headers"]}
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            async with self.arrived:
                self.deliveries.append(Delivery(headers, b"".join(chunks)))
                self.arrived.notify_all()
            if self.work_seconds:
                await asyncio.sleep(self.work_seconds)
            if self.hold is not None:
                await self.hold.wait()
        finally:
            self.in_flight -= 1
        await send({"type": "http.response.start", "status": self.status, "headers": self.headers})
        await send({"type": "http.response.body", "body": self.body})

    async def wait_for(self, count: int, within: float = 20) -> None:
        """Until `count` deliveries have arrived."""
        async with asyncio.timeout(within), self.arrived:
            await self.arrived.wait_for(lambda: len(self.deliveries) >= count)


@asynccontextmanager
async def receiving(port: int = 0) -> AsyncIterator[Receiver]:
    """A receiver on `port` (default: a free one)."""
    receiver = Receiver()
    # Bound and listening before uvicorn starts: a delivery that connects at once waits in the backlog.
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restarted receiver takes its port back at once
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    receiver.url = f"http://127.0.0.1:{sock.getsockname()[1]}/hooks"
    config = uvicorn.Config(receiver.app, interface="asgi3", lifespan="off", log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield receiver
    finally:
        if receiver.hold is not None:
            receiver.hold.set()
        server.should_exit = True
        await task
        sock.close()
