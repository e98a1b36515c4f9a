"""The inspector's socket cap per login, in Chromium, against a real Daphne.

The module's server lets one session hold one inspector: a second tab of the
same login says it has too many, and connects by itself once the first closes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from loadgen.daphne_process import DaphneProcess, user_code
from tests.e2e.conftest import EDITOR, StorageState, browser_tab, module_server


@pytest.fixture(scope="module")
def server() -> Iterator[DaphneProcess]:
    yield from module_server(
        grpc=False,
        code=user_code(*EDITOR, group="editor"),
        env={"INSPECTOR_SOCKETS_PER_SESSION": "1"},
    )


def test_a_tab_past_the_logins_cap_says_so_and_connects_when_another_closes(
    browser: Browser, server: DaphneProcess, signed_in: StorageState, page: Page
) -> None:
    page.goto("/")
    expect(page.locator("#live-state")).to_have_text("live")
    with browser_tab(browser, server, storage_state=signed_in) as second:
        second.goto("/")
        state = second.locator("#live-state")
        expect(state).to_have_text("too many tabs")
        expect(state).to_have_attribute(
            "title", re.compile(r"INSPECTOR_SOCKETS_PER_SESSION = 1\); close one")
        )
        # The first tab is unaffected; once it leaves, the second retries and is let in.
        expect(page.locator("#live-state")).to_have_text("live")
        page.goto("about:blank")
        expect(state).to_have_text("live", timeout=15_000)
        expect(state).not_to_have_attribute("title", re.compile("."))
