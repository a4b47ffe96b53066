"""`client.endpoints`: push endpoints, URLs the server POSTs the tenant's jobs to as signed requests, instead of a
worker leasing them (`Endpoints` sync, `AsyncEndpoints` async).

    hook = client.endpoints.create("billing", "https://billing.example.com/queueflow", queues=["billing"])
    hook.secret  # shown in full only now (and by rotate_secret): the receiver verifies deliveries with it
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from queueflow_client import _calls
from queueflow_client._calls.endpoints import UNSET
from queueflow_client.resources._base import DEFAULT_PAGE, Resource, apages, pages
from queueflow_client.types import Endpoint, Page

__all__ = ["AsyncEndpoints", "Endpoints"]


def _created(
    queues: Sequence[str] | None,
    task_names: Sequence[str] | None,
    concurrency: int | None,
    timeout_seconds: int | None,
    paused: bool | None,
) -> dict[str, Any]:
    return {"queues": queues, "task_names": task_names, "concurrency": concurrency,
            "timeout_seconds": timeout_seconds, "paused": paused}  # fmt: skip


def _changes(
    url: Any, queues: Any, task_names: Any, concurrency: Any, timeout_seconds: Any, paused: Any
) -> dict[str, Any]:
    return {"url": url, "queues": queues, "task_names": task_names, "concurrency": concurrency,
            "timeout_seconds": timeout_seconds, "paused": paused}  # fmt: skip


class Endpoints(Resource):
    def create(
        self,
        name: str,
        url: str,
        *,
        queues: Sequence[str] | None = None,
        task_names: Sequence[str] | None = None,
        concurrency: int | None = None,
        timeout_seconds: int | None = None,
        paused: bool | None = None,
    ) -> Endpoint:
        """Create a push endpoint (None: the server's default — queue "default", any task, concurrency 10, 30 s,
        not paused). Its `secret` is in full only in this answer; a name already in use is an InvalidStateError, a
        URL the server may not reach (private addresses, unless allowed) a ValidationError."""
        fields = _created(queues, task_names, concurrency, timeout_seconds, paused)
        result: Endpoint = self._send(_calls.create_endpoint(name, url, fields))
        return result

    def get(self, name: str) -> Endpoint:
        result: Endpoint = self._send(_calls.get_endpoint(name))
        return result

    def list_page(self, *, limit: int = 50, cursor: str | None = None) -> Page[Endpoint]:
        result: Page[Endpoint] = self._send(_calls.list_endpoints(limit, cursor))
        return result

    def list(self, *, page_size: int = DEFAULT_PAGE) -> Iterator[Endpoint]:
        return pages(lambda cursor: self.list_page(limit=page_size, cursor=cursor))

    def update(
        self,
        name: str,
        *,
        url: str = UNSET,
        queues: Sequence[str] = UNSET,
        task_names: Sequence[str] | None = UNSET,
        concurrency: int = UNSET,
        timeout_seconds: int = UNSET,
        paused: bool = UNSET,
    ) -> Endpoint:
        """Change the given fields (the others stay; `task_names=None`: every task). `paused=True` stops new
        deliveries; those in flight finish."""
        fields = _changes(url, queues, task_names, concurrency, timeout_seconds, paused)
        result: Endpoint = self._send(_calls.update_endpoint(name, fields))
        return result

    def rotate_secret(self, name: str) -> Endpoint:
        """A new secret, in full in this answer; for 24 h the previous one signs deliveries too."""
        result: Endpoint = self._send(_calls.rotate_endpoint_secret(name))
        return result

    def delete(self, name: str) -> None:
        self._send(_calls.delete_endpoint(name))


class AsyncEndpoints(Resource):
    """`Endpoints`, awaited."""

    async def create(
        self,
        name: str,
        url: str,
        *,
        queues: Sequence[str] | None = None,
        task_names: Sequence[str] | None = None,
        concurrency: int | None = None,
        timeout_seconds: int | None = None,
        paused: bool | None = None,
    ) -> Endpoint:
        """Create a push endpoint (see `Endpoints.create`); its `secret` is in full only in this answer."""
        fields = _created(queues, task_names, concurrency, timeout_seconds, paused)
        result: Endpoint = await self._send(_calls.create_endpoint(name, url, fields))
        return result

    async def get(self, name: str) -> Endpoint:
        result: Endpoint = await self._send(_calls.get_endpoint(name))
        return result

    async def list_page(self, *, limit: int = 50, cursor: str | None = None) -> Page[Endpoint]:
        result: Page[Endpoint] = await self._send(_calls.list_endpoints(limit, cursor))
        return result

    def list(self, *, page_size: int = DEFAULT_PAGE) -> AsyncIterator[Endpoint]:
        return apages(lambda cursor: self.list_page(limit=page_size, cursor=cursor))

    async def update(
        self,
        name: str,
        *,
        url: str = UNSET,
        queues: Sequence[str] = UNSET,
        task_names: Sequence[str] | None = UNSET,
        concurrency: int = UNSET,
        timeout_seconds: int = UNSET,
        paused: bool = UNSET,
    ) -> Endpoint:
        """Change the given fields (see `Endpoints.update`)."""
        fields = _changes(url, queues, task_names, concurrency, timeout_seconds, paused)
        result: Endpoint = await self._send(_calls.update_endpoint(name, fields))
        return result

    async def rotate_secret(self, name: str) -> Endpoint:
        """A new secret, in full in this answer; for 24 h the previous one signs deliveries too."""
        result: Endpoint = await self._send(_calls.rotate_endpoint_secret(name))
        return result

    async def delete(self, name: str) -> None:
        await self._send(_calls.delete_endpoint(name))
