"""The API docs pages in Chromium: reachable from the nav, offline, and read as words.

ReDoc's side menu asked Redocly's CDN for a logo (blocked by the page's
Content-Security-Policy, with a console error) and the page asked for a
/favicon.ico that is not there; both came after the page's load, so only a
browser that waits for the docs to render sees them. Every request each page
makes is recorded until then: all to this server, none failed, no console error.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import ConsoleMessage, Page, Request, Response, expect

from loadgen.daphne_process import DaphneProcess

# A summary from the schema (extend_schema), so a page showing it has
# rendered the operations, and shows them by name rather than operationId.
# ReDoc renders the first operations first, and its headings start with
# their anchor; `explain` is the first tag.
SUMMARY = "Explain a request"
RENDERED = {
    "/api/v1/schema/redoc/": lambda page: page.locator(".api-content").get_by_role(
        "heading", name=re.compile(f"{SUMMARY}$")
    ),
    "/api/v1/schema/swagger-ui/": lambda page: page.locator(
        ".opblock-summary-description"
    ).get_by_text(SUMMARY, exact=True),
}


@pytest.mark.parametrize("path", list(RENDERED))
def test_a_docs_page_renders_its_summaries_fetching_only_from_this_server(
    page: Page, server: DaphneProcess, path: str
) -> None:
    own = urlsplit(server.base_url)
    problems: list[str] = []

    def on_request(request: Request) -> None:
        url = urlsplit(request.url)
        if url.scheme not in ("data", "blob") and (url.scheme, url.netloc) != (
            own.scheme,
            own.netloc,
        ):
            problems.append(f"elsewhere: {request.url}")

    def on_failed(request: Request) -> None:
        problems.append(f"failed: {request.url} ({request.failure})")

    def on_response(response: Response) -> None:
        if response.status >= 400:
            problems.append(f"{response.status}: {response.url}")

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            problems.append(f"console: {message.text}")

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
    listeners = [
        ("request", on_request),
        ("requestfailed", on_failed),
        ("response", on_response),
        ("console", on_console),
    ]
    for event, listener in listeners:
        page.on(event, listener)  # type: ignore[call-overload]
    try:
        response = page.goto(path)
        assert response is not None and response.status == 200
        expect(RENDERED[path](page).first).to_be_visible(timeout=30_000)
        page.wait_for_load_state("networkidle")
        # The logo mounts with the menu; give a late request time to show.
        page.wait_for_timeout(500)
    finally:
        for event, listener in listeners:
            page.remove_listener(event, listener)
        page.unroute("**/*")
    assert problems == [], path
    # Told its language, as every page of the site is (for screen readers).
    assert page.evaluate("document.documentElement.lang") == "en"
    own_origin = f"{own.scheme}://{own.netloc}"
    foreign_images = page.eval_on_selector_all(
        "img",
        "(imgs, own) => imgs.map((i) => i.currentSrc || i.getAttribute('src') || '')"
        ".filter((s) => s && !s.startsWith('data:') && !s.startsWith(own))",
        own_origin,
    )
    assert foreign_images == []


def test_the_nav_links_to_the_api_docs(page: Page) -> None:
    page.goto("/tenants/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="API").click()
    expect(page).to_have_url(re.compile(r"/api/v1/schema/redoc/$"))
    expect(RENDERED["/api/v1/schema/redoc/"](page).first).to_be_visible(timeout=30_000)
    # And back: the docs page has no site bar, but a link home.
    page.get_by_role("navigation", name="Back to the site").get_by_role(
        "link", name="Queue inspector"
    ).click()
    expect(page).to_have_url(re.compile(r"/$"))
