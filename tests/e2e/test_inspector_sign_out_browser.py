"""An open inspector whose session ended goes to the login page instead of reconnecting forever.

Logging out in another tab closes the inspector's socket (4401); a session
gone some other way (expired, deleted) shows as a refused handshake, which
the page tells from a server that is down by asking for itself.
"""

from __future__ import annotations

import re

from playwright.sync_api import Browser, WebSocketRoute, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import browser_tab, log_in


def test_logging_out_in_another_tab_sends_the_inspector_to_the_login_page(
    browser: Browser, server: DaphneProcess
) -> None:
    with browser_tab(browser, server) as inspector:
        inspector.goto("/login/?next=/")
        log_in(inspector)
        expect(inspector.locator("#live-state")).to_have_text("live")
        other = inspector.context.new_page()
        other.goto("/tenants/")
        other.get_by_role("button", name="Log out").click()
        expect(inspector).to_have_url(re.compile(r"/login/\?next=%2F"))


def test_a_session_gone_while_the_socket_reconnects_sends_it_to_the_login_page(
    browser: Browser, server: DaphneProcess
) -> None:
    with browser_tab(browser, server) as inspector:
        sockets: list[WebSocketRoute] = []

        def first_real_then_refused(socket: WebSocketRoute) -> None:
            sockets.append(socket)
            if len(sockets) == 1:
                socket.connect_to_server()
            else:
                socket.close()  # as the server refuses a handshake with no session

        inspector.route_web_socket(re.compile(r"/ws/inspector/"), first_real_then_refused)
        inspector.goto("/login/?next=/")
        log_in(inspector)
        expect(inspector.locator("#live-state")).to_have_text("live")
        inspector.context.clear_cookies()  # the session expired
        sockets[0].close(code=4000)  # a network blip: the page reconnects
        expect(inspector).to_have_url(re.compile(r"/login/\?next=%2F"))
        assert len(sockets) >= 2
