"""The delete dialog of a tenant whose ID is as long as IDs go, in Chromium.

A 150-character ID has no place to break: the dialog's heading and its
Delete button ran out of the dialog, the button's "Delete" off the left of
the screen where no scroll reached it.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import StorageState, browser_tab, put_tenant

LONG = "t" + "x" * 149


@pytest.mark.parametrize("width", [1280, 400])
def test_the_delete_dialog_of_a_long_id_stays_on_screen(
    browser: Browser, server: DaphneProcess, signed_in: StorageState, width: int
) -> None:
    if width == 1280:
        put_tenant(server, LONG, {"max_queriers_per_tenant": 1})
    with browser_tab(browser, server, width=width, storage_state=signed_in) as page:
        page.goto(f"/tenants/{LONG}/")
        page.get_by_role("button", name="Delete tenant…").click()
        dialog = page.get_by_role("dialog", name=f"Delete tenant {LONG}?")
        expect(dialog).to_be_visible()
        frame = dialog.bounding_box()
        assert frame is not None
        for part in (page.locator("#delete-title"), page.locator("#confirm-delete")):
            box = part.bounding_box()
            assert box is not None
            assert frame["x"] - 1 <= box["x"], (width, box, frame)
            assert box["x"] + box["width"] <= frame["x"] + frame["width"] + 1, (width, box, frame)
        expect(page.locator("#confirm-delete")).to_be_in_viewport(ratio=1)
