"""Resolvers (`ports.Resolver`): what a push endpoint's host name resolves to.

`SystemResolver` asks the operating system (getaddrinfo, in the event loop's executor); `StaticResolver` answers
from a table, so tests can give a name any address without touching DNS (a name it does not know resolves to its
`default`: nothing, unless told).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Mapping, Sequence

from queueflow.core.endpoints import literal_address


class SystemResolver:
    async def resolve(self, host: str, port: int) -> list[str]:
        if literal_address(host):
            return [host]
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError):
            return []
        # IPv4 first: a delivery connects to the first address, and many networks route IPv6 worse or not at all.
        addresses = [str(info[4][0]) for info in infos]
        return sorted(dict.fromkeys(addresses), key=lambda address: ":" in address)


class StaticResolver:
    def __init__(self, table: Mapping[str, Sequence[str]] | None = None, *, default: Sequence[str] = ()) -> None:
        self.table = {host.lower(): list(addresses) for host, addresses in (table or {}).items()}
        self.default = list(default)
        """What a name the table does not know resolves to."""
        self.asked: list[str] = []
        """Every host asked for, in order (tests count resolutions)."""

    async def resolve(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        if literal_address(host):
            return [host]
        return list(self.table.get(host.lower(), self.default))
