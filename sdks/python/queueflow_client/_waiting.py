"""`jobs.wait`, `jobs.run` and `workflows.wait`: long-polling `GET …?wait_seconds=` until the object finishes.

The server answers as soon as the object finishes (README.md, "A job's life with curl"), so nothing here polls on a
timer: each request waits server-side for up to `chunk` seconds, a little less than the HTTP read timeout (and at
most the server's 60), and a caller's longer `timeout` (or none) is spent in as many requests as it takes.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

FINISHED_JOB = frozenset({"completed", "dead_letter", "cancelled"})
MAX_WAIT = 60.0
READ_MARGIN = 5.0


def chunk_for(transport: Any) -> float:
    """The longest one request may wait server-side before its transport's read timeout ends it."""
    timeout = getattr(getattr(transport, "http", None), "timeout", None)
    read = getattr(timeout, "read", None)
    if read is None:
        return MAX_WAIT
    return max(0.5, min(MAX_WAIT, float(read) - READ_MARGIN))


class _Deadline:
    def __init__(self, timeout: float | None, chunk: float) -> None:
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must not be negative")
        self.timeout = timeout
        self.chunk = chunk
        self.end = None if timeout is None else time.monotonic() + timeout

    def next_wait(self) -> float:
        if self.end is None:
            return self.chunk
        return max(0.0, min(self.chunk, self.end - time.monotonic()))

    def passed(self) -> bool:
        return self.end is not None and time.monotonic() >= self.end


def wait(fetch: Callable[[float], T], done: Callable[[T], bool], timeout: float | None, chunk: float, what: str) -> T:
    deadline = _Deadline(timeout, chunk)
    while True:
        current = fetch(deadline.next_wait())
        if done(current):
            return current
        if deadline.passed():
            raise TimeoutError(f"{what} has not finished after {timeout:g} s")


async def async_wait(
    fetch: Callable[[float], Awaitable[T]], done: Callable[[T], bool], limit: float | None, chunk: float, what: str
) -> T:
    deadline = _Deadline(limit, chunk)
    while True:
        current = await fetch(deadline.next_wait())
        if done(current):
            return current
        if deadline.passed():
            raise TimeoutError(f"{what} has not finished after {limit:g} s")
