"""A number box given text that is no number, in Chromium: refused at the box, nothing saved.

The editor's and settings page's number boxes are text inputs: an
`<input type=number>` holding "-" reports `value == ""`, a post the server
could not tell from a blank box. Here the "-" reaches the server, which
refuses it at its box; the box takes the focus (the editor's script, the
settings page's `autofocus`) and says why; the stored config is unchanged.
"""

from __future__ import annotations

from playwright.sync_api import Page, expect

from loadgen.daphne_process import DaphneProcess

MESSAGE = "must be an integer, got '-'"


def config_version(server: DaphneProcess) -> str:
    """The global config version, as the server stores it: any save moves it."""
    code = "from api.store import selectors; print(selectors.config_version_get())"
    return server.run_python(code).strip()


def test_a_minus_in_the_editors_number_box_is_refused_at_it(
    page: Page, server: DaphneProcess
) -> None:
    before = config_version(server)
    page.goto("/tenants/acme/")
    box = page.get_by_label("Max queriers per tenant (0 = all: no shuffle shard)")
    box.press_sequentially("-")
    page.locator("#save").click()
    expect(page.locator("#error-summary")).to_contain_text("Nothing was saved: 1 problem.")
    expect(box).to_be_focused()
    expect(box).to_have_value("-")
    expect(box).to_have_attribute("aria-invalid", "true")
    expect(box).to_have_accessible_description(MESSAGE)
    assert config_version(server) == before
    # The refused draft is an unsaved page; leave it without the question.
    page.once("dialog", lambda dialog: dialog.accept())
    page.goto("/tenants/acme/")
    expect(page.get_by_label("Max queriers per tenant (0 = all: no shuffle shard)")).to_have_value(
        ""
    )


def test_a_minus_in_the_settings_number_box_is_refused_at_it(
    page: Page, server: DaphneProcess
) -> None:
    before = config_version(server)
    page.goto("/settings/")
    box = page.locator("#s-max_queue_hierarchy_levels")
    saved = box.input_value()
    box.fill("")
    box.press_sequentially("-")
    page.locator("#save").click()
    summary = page.locator("#error-summary")
    expect(summary).to_contain_text("Nothing was saved: 1 problem.")
    expect(summary.get_by_role("link", name="Max queue hierarchy levels")).to_be_visible()
    expect(box).to_be_focused()
    expect(box).to_have_value("-")
    expect(box).to_have_attribute("aria-invalid", "true")
    expect(box).to_have_accessible_description(MESSAGE)
    assert config_version(server) == before
    page.goto("/settings/")
    expect(page.locator("#s-max_queue_hierarchy_levels")).to_have_value(saved)
