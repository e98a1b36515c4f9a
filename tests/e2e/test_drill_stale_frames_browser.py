"""A drill-down frame still on its way when the panel moves to another node is not applied.

The inspector's frames reach Chromium through a Playwright websocket route
that can hold the server's frames back, so a frame built for the node the
panel showed before arrives after the panel moved on, as it does now and
then on a busy server (tests/e2e/conftest.py: a real Daphne and real
websocket frontends).
"""

from __future__ import annotations

import re
import time

from playwright.sync_api import Page, WebSocketRoute, expect

from tests.e2e.conftest import Traffic


class HeldFrames:
    """Forwards the inspector socket both ways; while `holding`, keeps the server's frames."""

    def __init__(self) -> None:
        self.holding = False
        self.held: list[str | bytes] = []
        self.page_side: WebSocketRoute | None = None

    def route(self, ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        self.page_side = ws
        ws.on_message(server.send)
        server.on_message(self._from_server)

    def _from_server(self, message: str | bytes) -> None:
        if self.holding:
            self.held.append(message)
        elif self.page_side is not None:
            self.page_side.send(message)

    def wait_for_held(self, page: Page, text: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in str(m) for m in self.held):
            assert time.monotonic() < deadline, f"no frame with {text!r} was held"
            page.wait_for_timeout(50)  # Playwright delivers the route's messages meanwhile

    def release(self) -> None:
        self.holding = False
        assert self.page_side is not None
        for message in self.held:
            self.page_side.send(message)
        self.held.clear()


def test_the_oldest_link_focuses_the_oldest_row_though_a_frame_for_the_tenant_came_after(
    page: Page, traffic: Traffic
) -> None:
    frames = HeldFrames()
    page.route_web_socket(re.compile(r"/ws/inspector/"), frames.route)
    page.goto("/")
    expect(page.locator("#live-state")).to_have_text("live")
    traffic.enqueue("acme", "first_asked", count=3)
    page.get_by_role("button", name="Requests of acme").click()
    rows = page.locator("#drill-rows > li")
    expect(rows).to_have_count(3)
    link = page.locator("#oldest-link")
    expect(link).to_have_text("acme / ingester")

    # A frame for the tenant's drill-down, with a new row in full and the
    # others as references, is on its way when the oldest link is clicked.
    frames.holding = True
    traffic.enqueue("acme", "asked_while_the_frame_was_on_its_way")
    frames.wait_for_held(page, "asked_while_the_frame_was_on_its_way")
    page.evaluate("window.scrollTo(0, 0)")
    link.click()
    frames.release()

    expect(page.locator("#drill-title")).to_have_text("Requests of tenant acme / ingester")
    expect(rows).to_have_count(4)
    marked = page.locator("#drill-rows > li.oldest")
    expect(marked).to_have_count(1)
    expect(marked.locator(".q")).to_have_text("first_asked")
    expect(marked.locator(".meta")).to_contain_text(re.compile(r"· id 1 ·"))
    expect(marked).to_be_focused()
