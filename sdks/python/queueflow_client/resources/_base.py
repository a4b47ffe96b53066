"""What every resource class shares: the transport it sends calls through, and paging."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

from queueflow_client._transport import Call
from queueflow_client._waiting import chunk_for
from queueflow_client.types import Page

T = TypeVar("T")
DEFAULT_PAGE = 100


class Resource:
    """One resource of the API over a transport: a sync resource's `_send` answers, an async one's is awaited."""

    def __init__(self, send: Callable[[Call[Any]], Any]) -> None:
        self._send = send
        self._chunk = chunk_for(send)
        """How long one long-poll of `wait` may last through this transport."""


def pages(fetch: Callable[[str | None], Page[T]]) -> Iterator[T]:
    """Every item, fetching the next page (`fetch(cursor)`) as the iteration needs it."""
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        yield from page.items
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


async def apages(fetch: Callable[[str | None], Awaitable[Page[T]]]) -> AsyncIterator[T]:
    """`pages` for an async resource (`async for`)."""
    cursor: str | None = None
    while True:
        page = await fetch(cursor)
        for item in page.items:
            yield item
        if page.next_cursor is None:
            return
        cursor = page.next_cursor
