"""A real Daphne, real protocol clients and Debian's Chromium, for the browser tests.

The server runs in a child process on its own database (loadgen.daphne_process);
frontends and queriers speak the JSON websocket protocol from a background
event loop thread, as any external client would; Playwright drives Chromium.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from playwright.sync_api import (
    Browser,
    Dialog,
    Page,
    Playwright,
    StorageState,
    expect,
    sync_playwright,
)

from loadgen.daphne_process import DaphneProcess, user_code
from loadgen.wsclients import FrontendClient, QuerierClient
from tests.browser import CHROMIUM, CHROMIUM_ARGS

# `make screenshots` refreshes the README's pictures; an ordinary test run
# writes its screenshots to a temporary folder and leaves the tree clean.
SCREENSHOTS = (
    Path(__file__).resolve().parents[2] / "docs" / "screenshots"
    if os.environ.get("UPDATE_SCREENSHOTS") == "1"
    else Path(tempfile.gettempdir()) / "qi-e2e-screenshots"
)
SCREENSHOTS.mkdir(parents=True, exist_ok=True)
# Ten seconds for an expectation to come true, as the contexts' default for
# actions (browser_tab): the suite runs on two workers, each with a server and
# a browser, and on a 2-core machine a dry run's answer has taken over five.
expect.set_options(timeout=10_000)
EDITOR = ("erin", "pw-erin-e2e-123")
T = TypeVar("T")


def log_in(page: Page) -> None:
    """Log in as EDITOR on the login form the page shows (callers check where it lands)."""
    page.get_by_label("User name").fill(EDITOR[0])
    page.get_by_label("Password").fill(EDITOR[1])
    page.get_by_role("button", name="Log in").click()


def full_page_screenshot(page: Page, name: str) -> None:
    """Save the whole page as SCREENSHOTS/`name`, leaving the page as it was.

    Not `page.screenshot(full_page=True)`: after one, Chromium's idea of the
    scroll position can be stale, and the next focus change (the mousedown of
    the following click) puts it right, moving the page under the pointer
    between mousedown and mouseup, so that click is lost. The window is grown
    to the page's height instead, as a real resize, and then put back.
    """
    size = page.viewport_size
    assert size is not None, "the page fixture sets a viewport"
    scrolled = page.evaluate("window.scrollY")
    height = page.evaluate("document.documentElement.scrollHeight")
    page.set_viewport_size({"width": size["width"], "height": max(height, size["height"])})
    page.screenshot(path=str(SCREENSHOTS / name))
    page.set_viewport_size(size)
    page.evaluate("(y) => window.scrollTo(0, y)", scrolled)


RUNNING_VERSION = re.compile(r"^queue_inspector_config_version (\S+)$", re.MULTILINE)


def running_version(server: DaphneProcess) -> int | None:
    """The config version (History's #N) the server's scheduler runs, None before its first."""
    with urllib.request.urlopen(f"{server.base_url}/metrics", timeout=15) as response:
        found = RUNNING_VERSION.search(response.read().decode())
    return None if found is None else int(float(found.group(1)))


def one_rule(regex: str) -> dict[str, object]:
    """A tenant config as SEED's acme: priority 5 for queries matching `regex`, else 0."""
    return {
        "query_priority": {
            "enabled": True,
            "default_priority": 0,
            "priorities": [{"priority": 5, "query_attributes": [{"regex": regex}]}],
        }
    }


def put_tenant(
    server: DaphneProcess, tenant_id: str, config: dict[str, object], *, replace: bool = False
) -> Any:
    """Create a tenant (or with `replace`, replace an existing one's config) through the REST
    API; returns the answer's body once the scheduler runs it.

    The server answers once the block is committed and applies it on its
    loop just after: a request sent in between is judged by the config
    before it. (A block written by another process, as `run_python` does,
    is applied within the reconcile period.)
    """
    headers = {
        "Authorization": f"Bearer {server.shared_token('editor')}",
        "Content-Type": "application/json",
    }
    if replace:
        headers["If-Match"] = "*"
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/tenants/{tenant_id}/",
        data=json.dumps(config).encode(),
        method="PUT",
        headers=headers,
    )
    with urllib.request.urlopen(request, timeout=15) as response:
        assert response.status == (200 if replace else 201)
        version = int(response.headers["ETag"].strip('"'))
        body = json.loads(response.read())
    deadline = time.monotonic() + 10
    while (running_version(server) or 0) < version:
        assert time.monotonic() < deadline, f"the scheduler never ran config #{version}"
        time.sleep(0.05)
    return body


class Traffic:
    """Protocol clients on a private event loop thread, driven from sync tests."""

    def __init__(self, server: DaphneProcess) -> None:
        self.frontend_token, self.querier_token = server.issue_tokens("frontend", "querier")
        self.ws_url = server.ws_url
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.replies: list[dict[str, Any]] = []
        self.ids = itertools.count(1)
        self.frontend = FrontendClient(
            f"{self.ws_url}/ws/frontend/", self.frontend_token, self.replies.append
        )
        self.run(self.frontend.start())

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    def enqueue(
        self,
        tenant: str,
        query: str = "up",
        count: int = 1,
        via: FrontendClient | None = None,
        **extra: Any,
    ) -> None:
        """Enqueue from the module's frontend, or from `via` (another frontend)."""
        frontend = via or self.frontend
        now = time.time()
        for _ in range(count):
            message = {
                "type": "enqueue",
                "id": next(self.ids),
                "tenant": tenant,
                "query": query,
                "api_type": "query_range",
                "start": now - 600,
                "end": now,
                "step": 30,
                **extra,
            }
            self.run(frontend.send(message))

    def another_frontend(self, token: str, *, name: str | None = None) -> FrontendClient:
        """A second frontend connection, with its own token, closed by the caller."""
        client = FrontendClient(
            f"{self.ws_url}/ws/frontend/", token, self.replies.append, name=name
        )
        self.run(client.start())
        return client

    def querier(
        self, querier_id: str, *, workers: int = 4, latency: Callable[[dict[str, Any]], float]
    ) -> QuerierClient:
        client = QuerierClient(
            f"{self.ws_url}/ws/querier/",
            self.querier_token,
            querier_id,
            workers=workers,
            latency=latency,
        )
        self.run(client.start())
        return client

    @contextmanager
    def queriers(
        self,
        prefix: str,
        count: int,
        *,
        workers: int = 1,
        latency: Callable[[dict[str, Any]], float],
    ) -> Iterator[list[QuerierClient]]:
        """`count` queriers named `prefix-0`, `prefix-1`, ..., closed on the way out."""
        clients = [
            self.querier(f"{prefix}-{i}", workers=workers, latency=latency) for i in range(count)
        ]
        try:
            yield clients
        finally:
            for client in clients:
                self.close(client)

    def close(self, client: QuerierClient | FrontendClient) -> None:
        self.run(client.close())

    def stop(self) -> None:
        self.run(self.frontend.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


SEED = """
from api.store import services
services.tenant_put(tenant_id="acme", expected_version=None, author=None, source="cli", config={
    "query_priority": {"enabled": True, "default_priority": 0, "priorities": [
        {"priority": 5, "query_attributes": [{"regex": "^never$"}]}]}})
services.tenant_put(tenant_id="gold", expected_version=None, author=None, source="cli", config={
    "query_priority": {"enabled": True, "default_priority": 0, "priorities": [
        {"priority": 9, "reserved_queriers": 1, "query_attributes": [{"regex": "critical"}]}]}})
"""


# The browser tests' servers hash passwords quickly (tests/e2e/quick_hash_settings.py).
QUICK_HASH = {"DJANGO_SETTINGS_MODULE": "tests.e2e.quick_hash_settings"}


def module_server(
    *, grpc: bool, code: str, env: dict[str, str] | None = None
) -> Iterator[DaphneProcess]:
    """A started Daphne for one module, `code` run in its Django first (one
    start-up for the user and any seed: each costs about a second); stopped after.
    `env` adds to the server's environment (a setting the module needs)."""
    daphne = DaphneProcess(grpc=grpc, extra_env={**QUICK_HASH, **(env or {})})
    daphne.start()
    daphne.run_python(code)
    try:
        yield daphne
    finally:
        daphne.cleanup()


@pytest.fixture(scope="module")
def server() -> Iterator[DaphneProcess]:
    yield from module_server(grpc=False, code=user_code(*EDITOR, group="editor") + SEED)


@pytest.fixture(scope="module")
def traffic(server: DaphneProcess) -> Iterator[Traffic]:
    helper = Traffic(server)
    try:
        yield helper
    finally:
        helper.stop()


class _SharedChromium:
    """One Chromium for the browser modules that run one after another (each
    launch costs most of a second); every module still gets fresh contexts.

    Playwright's sync API keeps an event loop running in this thread while it
    is started, and pytest-asyncio cannot run a test under it ("Runner.run()
    cannot be called from a running event loop"). So it is stopped as soon as
    the next test to run is not a browser test (`pytest_runtest_teardown`).
    """

    def __init__(self) -> None:
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None

    def get(self) -> Browser:
        if self._browser is not None and not self._browser.is_connected():
            self.stop()  # a crashed Chromium is not handed to the next module
        if self._browser is None:
            self._playwright = sync_playwright().start()
            self._browser = self._playwright.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS
            )
        return self._browser

    def stop(self) -> None:
        browser, playwright = self._browser, self._playwright
        self._browser = self._playwright = None
        try:
            if browser is not None and browser.is_connected():
                browser.close()
        finally:
            if playwright is not None:
                playwright.stop()


_CHROMIUM = _SharedChromium()
_HERE = Path(__file__).resolve().parent


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After a browser test's own teardown (its module's contexts closed), stop
    the shared Chromium unless the next test is a browser test too."""
    try:
        return (yield)
    finally:
        if nextitem is None or _HERE not in Path(nextitem.path).resolve().parents:
            _CHROMIUM.stop()


@pytest.fixture(scope="module")
def browser() -> Browser:
    return _CHROMIUM.get()


@contextmanager
def browser_tab(
    browser: Browser,
    server: DaphneProcess,
    *,
    width: int = 1500,
    height: int = 1000,
    storage_state: StorageState | None = None,
) -> Iterator[Page]:
    """A tab on `server` in a browser context of its own, closed on the way out."""
    context = browser.new_context(
        viewport={"width": width, "height": height},
        base_url=server.base_url,
        storage_state=storage_state,
    )
    context.set_default_timeout(10_000)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture(scope="module")
def signed_in(browser: Browser, server: DaphneProcess) -> StorageState:
    """The editor's session on the module's server, logged in once on the login form.

    Each browser context of the module starts from it: no test logs in, so
    one that opens its page itself runs alone (`pytest -k`), in any order.
    """
    with browser_tab(browser, server) as tab:
        tab.goto("/login/")
        log_in(tab)
        expect(tab).not_to_have_url(re.compile(r"/login/"))
        return tab.context.storage_state()


@pytest.fixture(scope="module")
def page(browser: Browser, server: DaphneProcess, signed_in: StorageState) -> Iterator[Page]:
    """The module's window, logged in as the editor, on no page yet."""
    with browser_tab(browser, server, storage_state=signed_in) as tab:
        yield tab


@pytest.fixture
def asked(page: Page) -> Iterator[list[str]]:
    """Each dialog the page opened, by type; every one is dismissed (the page
    stays). After the test the page is left for a blank one, draft or not."""
    seen: list[str] = []

    def stay(dialog: Dialog) -> None:
        seen.append(dialog.type)
        dialog.dismiss()

    def go(dialog: Dialog) -> None:
        dialog.accept()

    page.on("dialog", stay)
    yield seen
    page.remove_listener("dialog", stay)
    page.on("dialog", go)
    page.goto("about:blank")
    page.remove_listener("dialog", go)


def go_to_history(page: Page) -> None:
    """Leave by the nav's History link (a leave the page may ask about)."""
    page.get_by_role("link", name="History", exact=True).click()
    page.wait_for_timeout(300)  # a dismissed leave leaves the page where it is
