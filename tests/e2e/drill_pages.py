"""What the drill-down's browser modules share: acme's four requests, opening the panel.

Each module runs its own server (tests/e2e/conftest.py); one that lists
acme's requests imports `queue_acme`, the module fixture `acme_queued`.
"""

from __future__ import annotations

import json
import re
import urllib.request

import pytest
from playwright.sync_api import Locator, Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic

__all__ = [
    "SLOW",
    "away_from_the_list",
    "cancel_matching",
    "no_horizontal_scroll",
    "open_drill",
    "open_row",
    "queue_acme",
    "treeitem",
]

SLOW = "sum by (job) (rate(needle_seconds_total[5m]))\n  / on (job) group_left\n  up"


def away_from_the_list(page: Page) -> None:
    """Pointer and focus off the list, which then stops holding its rows (drill_list.js)."""
    page.mouse.move(5, 5)
    page.locator("#drill-search").focus()


def cancel_matching(server: DaphneProcess, tenant: str, search: str) -> int:
    """Cancels `tenant`'s queued requests whose query holds `search`, over REST; how many were."""
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/queue/cancel/",
        data=json.dumps({"tenant": tenant, "search": search}).encode(),
        method="POST",
        headers={
            "Authorization": f"Bearer {server.shared_token('editor')}",
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=15) as response:
        return int(json.loads(response.read())["cancelled"])


def treeitem(page: Page, label: str) -> Locator:
    """The inspector tree's row whose name starts with `label` ("acme: 4 queued")."""
    return page.get_by_role("treeitem", name=re.compile(rf"^{re.escape(label)}"))


def open_row(page: Page, label: str) -> None:
    """Expands the tree's row starting with `label`, unless it already is."""
    item = treeitem(page, label)
    expect(item).to_be_visible()
    if item.get_attribute("aria-expanded") == "false":
        item.locator(":scope > .row").click()
    expect(item).to_have_attribute("aria-expanded", "true")


WIDEST = """() => Array.from(document.querySelectorAll("body *"))
  .filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
  .slice(0, 8).map((el) => `${el.tagName}#${el.id}.${el.className}`)"""


def no_horizontal_scroll(page: Page, width: int) -> tuple[int, str]:
    """(pixels the page is wider than the window, what sticks out) at `width`."""
    page.set_viewport_size({"width": width, "height": 1000})
    page.wait_for_timeout(300)  # let layout settle after the resize
    scroll, client = page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    return scroll - client, " ".join(page.evaluate(WIDEST))


@pytest.fixture(scope="module", name="acme_queued")
def queue_acme(traffic: Traffic) -> None:
    """acme's four requests, the module's first (client ids 1 to 4): two alike, a long one, and
    a short one."""
    traffic.enqueue("acme", "rate(http_requests_total[1m])", count=2)
    traffic.enqueue("acme", SLOW)
    traffic.enqueue("acme", "count(up)")


def open_drill(page: Page, tenant: str) -> None:
    """The inspector, freshly loaded, with the drill-down open on `tenant`."""
    page.goto("/")
    expect(page.locator("#live-state")).to_have_text("live")
    page.get_by_role("button", name=f"Requests of {tenant}", exact=True).click()
    expect(page.locator("#drill-title")).to_have_text(f"Requests of tenant {tenant}")
