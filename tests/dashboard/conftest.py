"""An app with two tenants and a worker key (tests/api's), and a browser-like client that can sign in."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from httpx import ASGITransport, AsyncClient, Response
from litestar import Litestar

from tests.api.conftest import SETTINGS, TENANT_A, TENANT_B, WORKER, app, settings

__all__ = ["SETTINGS", "TENANT_A", "TENANT_B", "WORKER", "app", "settings"]

CSRF = re.compile(r'name="_csrf" value="([0-9a-f]+)"')


class Browser:
    """An httpx client that keeps cookies, remembers the CSRF token of the last page, and submits forms."""

    def __init__(self, client: AsyncClient) -> None:
        self.client = client
        self.csrf = ""

    async def get(self, path: str, **kwargs: Any) -> Response:
        response = await self.client.get(path, **kwargs)
        if found := CSRF.search(response.text):
            self.csrf = found.group(1)
        return response

    async def submit(self, path: str, **fields: str) -> Response:
        """POST a form with the CSRF token the last page carried (fetch a page first)."""
        return await self.client.post(path, data={"_csrf": self.csrf, **fields})

    async def sign_in(self, key: str) -> Response:
        await self.get("/ui/sign-in")
        return await self.submit("/ui/sign-in", key=key)


@pytest.fixture
async def browser(app: Litestar) -> AsyncIterator[Browser]:
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://testserver") as client:
        yield Browser(client)


@pytest.fixture
async def signed_in(browser: Browser) -> Browser:
    """Signed in as tenant-a."""
    response = await browser.sign_in("key-a")
    assert response.status_code == 303, response.text
    return browser


async def api(browser: Browser, method: str, path: str, headers: dict[str, str] = TENANT_A, **body: Any) -> Any:
    """Call the JSON API beside the dashboard (its cookies are scoped to /ui, so none go along)."""
    response = await browser.client.request(method, path, json=body or None, headers=headers)
    assert response.status_code < 300, response.text
    return response.json() if response.content else None
