"""Config changes marked on the inspector's charts, each linked to its revision on History."""

from __future__ import annotations

import json
import re
import urllib.request

from playwright.sync_api import Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import put_tenant


def _revision_version(server: DaphneProcess, tenant_id: str) -> int:
    """The global config version (History's #N) of the tenant's newest revision."""
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/revisions/?key={tenant_id}&limit=1",
        headers={"Authorization": f"Bearer {server.issue_token('viewer', 'history')}"},
    )
    with urllib.request.urlopen(request, timeout=15) as response:
        body = json.loads(response.read())
    rows = body["results"] if isinstance(body, dict) else body
    return int(rows[0]["version"])


def test_a_config_change_is_marked_on_the_charts_and_opens_its_revision(
    page: Page, server: DaphneProcess
) -> None:
    page.goto("/")
    expect(page.locator("#live-state")).to_have_text("live")
    # A few seconds of chart before the change (the module's seed may be marked too).
    page.wait_for_function(
        "() => (document.getElementById('chart-queued').plot?.data[0].length ?? 0) >= 2"
    )
    put_tenant(server, "charted", {"max_queriers_per_tenant": 2})
    version = _revision_version(server, "charted")
    link = page.get_by_role("link", name=re.compile(rf"^Config change #{version} at "))
    expect(link).to_be_visible()
    expect(link).to_have_attribute("href", f"/history/#v{version}")
    # The header names the version running, linked to it too.
    expect(page.locator("#config-version")).to_have_text(f"#{version}")
    expect(page.locator("#config-version")).to_have_attribute("href", f"/history/#v{version}")
    expect(page.locator("#chart-changes")).to_contain_text(
        # With its zone, to be matched with History's UTC times.
        re.compile(rf"#{version} at \d\d:\d\d:\d\d UTC")
    )
    link.click()
    expect(page).to_have_url(re.compile(rf"/history/#v{version}$"))
    revision = page.locator(f"#v{version}")
    expect(revision).to_contain_text("charted")
    expect(revision).to_be_in_viewport()
