"""The API docs' pages (Redoc at /schema, Swagger UI at /schema/swagger) come whole from the server's own package:
every asset they name is on this server, pinned, and none is on another host (issue 17, item 6)."""

from __future__ import annotations

import re

import pytest
from queueflow.dashboard.look import STATIC

from tests.dashboard.conftest import Browser
from tools.vendor import ASSETS, OWN, sha256

ASSET = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url\(\s*["']?([^"')]+)""")
EXTERNAL = re.compile(r"""(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?\s*(?:https?:)?//|@import""")


@pytest.mark.parametrize(
    ("path", "bundle"),
    [
        ("/schema", "/ui/static/redoc.standalone.js"),
        ("/schema/redoc", "/ui/static/redoc.standalone.js"),
        ("/schema/swagger", "/ui/static/swagger-ui-bundle.js"),
    ],
)
async def test_a_docs_page_names_only_assets_of_this_server(browser: Browser, path: str, bundle: str) -> None:
    page = await browser.get(path)  # no sign-in needed: the docs describe the API, they hold no data
    assert page.status_code == 200
    html = page.text
    assert not EXTERNAL.search(html), EXTERNAL.search(html)
    assets = {first or second for first, second in ASSET.findall(html)}
    assert bundle in assets
    for asset in assets:
        assert asset.startswith("/ui/static/"), asset
        assert (await browser.get(asset)).status_code == 200, asset


async def test_swagger_ui_is_set_up_to_try_calls_out_and_ask_nobody_else(browser: Browser) -> None:
    html = (await browser.get("/schema/swagger")).text
    assert "/ui/static/swagger-ui.css" in html
    assert '"validatorUrl":null' in html  # Swagger UI's default sends the spec to validator.swagger.io
    assert '"tryItOutEnabled":true' in html
    assert "persistAuthorization" not in html  # a key given to "Authorize" is not kept in localStorage
    assert '"openapi":"3.1.0"' in html  # the spec is inline: nothing to fetch, not even from this server


async def test_the_vendored_stylesheet_loads_nothing_from_elsewhere(browser: Browser) -> None:
    css = (await browser.get("/ui/static/swagger-ui.css")).text
    assert not EXTERNAL.search(css)


@pytest.mark.parametrize("path", ["/schema/elements", "/schema/rapidoc"])
async def test_the_cdn_only_docs_are_not_served(browser: Browser, path: str) -> None:
    assert (await browser.get(path)).status_code == 404


def test_every_vendored_file_is_the_pinned_one() -> None:
    for asset in ASSETS:
        assert sha256(STATIC / asset.name) == asset.sha256, f"{asset.name} is not {asset.package}'s: `make vendor`"


def test_every_static_file_is_vendored_or_our_own_and_documented() -> None:
    vendored = {asset.name for asset in ASSETS}
    assert sorted(path.name for path in STATIC.iterdir()) == sorted(vendored | set(OWN))
    listing = (STATIC / "VENDORED.md").read_text()
    for asset in ASSETS:
        assert f"`{asset.package}`" in listing, asset.package
        assert asset.name in listing, asset.name


@pytest.mark.parametrize("path", ["/schema", "/schema/swagger", "/schema/openapi.json"])
async def test_the_docs_let_the_browser_fetch_from_this_server_only(browser: Browser, path: str) -> None:
    policy = (await browser.get(path)).headers["content-security-policy"]
    directives = dict(directive.strip().split(" ", 1) for directive in policy.split(";"))
    assert directives["default-src"] == "'self'"
    assert directives["connect-src"] == "'self'"  # Swagger UI's "try it out" calls this server, nothing else
    assert directives["img-src"] == "'self' data:"  # Redoc's footer logo on Redocly's CDN is refused
    assert not re.search(r"https?:|\*", policy), policy
