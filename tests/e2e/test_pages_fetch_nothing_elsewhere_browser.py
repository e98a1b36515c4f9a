"""Every page works offline: in Chromium, none asks any other site for anything.

The brief's rule is "nothing fetched by a page"; a template that links a
web font or a CDN script breaks it without failing any server-side test,
so each page is opened in a real browser and every request it makes is
checked against the server's own origin.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Request

from loadgen.daphne_process import DaphneProcess

PAGES = [
    "/",
    "/tenants/",
    "/tenants/new/",
    "/history/",
    "/settings/",
    "/simulate/",
    "/api/v1/schema/swagger-ui/",
    "/api/v1/schema/redoc/",
]


@pytest.mark.parametrize("path", PAGES)
def test_a_page_requests_nothing_from_another_origin(
    page: Page, server: DaphneProcess, path: str
) -> None:
    own = urlsplit(server.base_url)
    elsewhere: list[str] = []

    def note(request: Request) -> None:
        url = urlsplit(request.url)
        if url.scheme in ("data", "blob"):
            return
        if (url.scheme, url.netloc) != (own.scheme, own.netloc):
            elsewhere.append(request.url)

    # Requests leaving the machine are aborted as well as noted: the test
    # never depends on a network this machine does not have.
    page.route(
        "**/*",
        lambda route: (
            route.abort()
            if urlsplit(route.request.url).netloc not in ("", own.netloc)
            else route.continue_()
        ),
    )
    page.on("request", note)
    try:
        response = page.goto(path)
        assert response is not None and response.status == 200
        page.wait_for_load_state("networkidle")
    finally:
        page.remove_listener("request", note)
        page.unroute("**/*")
    assert elsewhere == [], path
