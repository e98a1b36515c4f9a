"""The tenant editor, History and Simulate with the keyboard and a screen reader, in Chromium.

The editor's server-side buttons (+ Rule, ↓, remove...) re-render the page:
the focus went back to the top of it, so a keyboard user tabbed through the
whole form again to reach the rule just added. Explain and "Test against
recent traffic" disabled their button while they asked, which dropped the
focus to the page, and their answer replaced a live region whole, which a
screen reader does not read. The diffs' green and the top bar's Log out were
under the 4.5:1 contrast small text needs, and a side by side diff told
changed lines by their colour alone.
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic, put_tenant


def _rules(*priorities: dict[str, object]) -> dict[str, object]:
    return {
        "query_priority": {"enabled": True, "default_priority": 0, "priorities": list(priorities)}
    }


def _press(page: Page, name: str) -> None:
    """Focus the button named `name` and press Enter on it, as the keyboard does."""
    button = page.get_by_role("button", name=name, exact=True)
    button.focus()
    button.press("Enter")


def test_explain_by_its_button_keeps_the_focus_on_it_and_says_the_answer_in_a_status_line(
    page: Page,
) -> None:
    page.goto("/tenants/gold/")
    page.get_by_label("Query (PromQL or match[] selectors)").fill("critical_errors_total")
    _press(page, "Explain")
    expect(page.locator("#explain-priority")).to_have_text("9")
    expect(page.get_by_role("button", name="Explain", exact=True)).to_be_focused()
    status = page.get_by_role("status").filter(has_text="Priority: 9")
    expect(status).to_have_attribute("id", "explain-status")
    expect(status).to_contain_text("Decided by: rule 1, attribute 1")


def test_the_dry_run_by_its_button_keeps_the_focus_on_it_and_says_the_answer_in_a_status_line(
    page: Page, traffic: Traffic, server: DaphneProcess
) -> None:
    put_tenant(server, "a11y-dry", _rules({"priority": 5, "query_attributes": [{"regex": "hot"}]}))
    traffic.enqueue("a11y-dry", query="sum(rate(hot_total[5m]))", count=3)
    page.goto("/tenants/a11y-dry/")
    page.locator('[id="query_priority.priorities[0].priority"]').fill("6")
    _press(page, "Test against recent traffic")
    expect(page.locator("#dry-run-changed")).to_have_text("3")
    expect(page.get_by_role("button", name="Test against recent traffic")).to_be_focused()
    expect(page.locator("#dry-run-status")).to_have_text(
        "Sampled requests: 3, Would change priority: 3, Would be rejected: 0, Unchanged: 0"
    )


def test_adding_a_rule_puts_the_focus_in_the_new_rules_priority_box(page: Page) -> None:
    page.goto("/tenants/acme/")
    _press(page, "+ Rule")
    expect(page.locator('[id="query_priority.priorities[1].priority"]')).to_be_focused()


def test_moving_a_rule_down_keeps_the_focus_on_that_rules_move_button(
    page: Page, server: DaphneProcess
) -> None:
    put_tenant(
        server,
        "a11y-move",
        _rules(
            {"priority": 7, "query_attributes": [{"regex": "first"}]},
            {"priority": 3, "query_attributes": [{"regex": "second"}]},
        ),
    )
    page.goto("/tenants/a11y-move/")
    _press(page, "Move rule 1 down")
    # Now the last rule: its "down" is disabled, so the focus is on its "up".
    expect(page.get_by_role("button", name="Move rule 2 up")).to_be_focused()
    expect(page.locator('[id="query_priority.priorities[1].priority"]')).to_have_value("7")


def test_removing_an_attribute_puts_the_focus_on_the_one_that_takes_its_place(
    page: Page, server: DaphneProcess
) -> None:
    put_tenant(
        server,
        "a11y-attrs",
        _rules({"priority": 4, "query_attributes": [{"regex": "one"}, {"regex": "two"}]}),
    )
    page.goto("/tenants/a11y-attrs/")
    _press(page, "Remove attribute 1 of rule 1")
    regex = page.locator('[id="query_priority.priorities[0].query_attributes[0].regex"]')
    expect(regex).to_be_focused()
    expect(regex).to_have_value("two")


def test_a_draft_refused_for_a_whole_rule_puts_the_focus_on_the_error_summary(
    page: Page, server: DaphneProcess
) -> None:
    put_tenant(server, "a11y-empty", _rules({"priority": 4, "query_attributes": [{"regex": "x"}]}))
    page.goto("/tenants/a11y-empty/")
    _press(page, "Remove attribute 1 of rule 1")
    # The rule has no attribute left: its "+ Attribute" is the neighbour.
    expect(page.get_by_role("button", name="+ Attribute")).to_be_focused()
    _press(page, "Save")
    summary = page.get_by_role("alert")
    expect(summary).to_contain_text("Nothing was saved: 1 problem.")
    expect(summary).to_be_focused()
    expect(page.get_by_role("group", name="Rule 1")).to_have_accessible_description(
        "must not be empty: a priority with no attributes matches nothing"
    )


# The WCAG contrast ratio of an element's text against the first opaque
# background behind it (the page's sheets give every one of these one).
CONTRAST = """(el) => {
  const rgb = (c) => c.match(/[\\d.]+/g).map(Number);
  const lum = (c) => {
    const [r, g, b] = rgb(c).slice(0, 3).map((v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const clear = (node) => (rgb(getComputedStyle(node).backgroundColor)[3] ?? 1) === 0;
  let back = el;
  while (back && clear(back)) back = back.parentElement;
  const bg = back ? getComputedStyle(back).backgroundColor : "rgb(255, 255, 255)";
  const [hi, lo] = [lum(getComputedStyle(el).color), lum(bg)].sort((a, b) => b - a);
  return (hi + 0.05) / (lo + 0.05);
}"""


def test_log_out_and_the_diffs_green_and_red_meet_the_contrast_small_text_needs(
    page: Page, server: DaphneProcess
) -> None:
    put_tenant(server, "a11y-contrast", {"max_queriers_per_tenant": 2})
    page.goto("/history/?search=a11y-contrast")
    page.get_by_text("Changed values").first.click()
    for selector in (
        ".topbar button.link",
        ".ydiff .plus",
        ".ydiff .minus",
        ".ydiff .added .sg",
        "table.diff .after",
    ):
        ratio = page.locator(selector).first.evaluate(CONTRAST)
        assert ratio >= 4.5, f"{selector}: {ratio:.2f}:1"


def test_a_side_by_side_diff_marks_each_changed_side_with_a_sign_not_its_colour_alone(
    page: Page, server: DaphneProcess
) -> None:
    put_tenant(server, "a11y-split", {"max_queriers_per_tenant": 2})
    page.goto("/history/?search=a11y-split&diff=split")
    added = page.locator(".ydiff.split .yl.added .r").first
    sign = added.evaluate("(el) => getComputedStyle(el, '::before').content")
    assert sign.startswith('"+"'), sign
    expect(added.locator(".visually-hidden")).to_have_text("added: ")


def test_a_simulation_refused_at_a_box_describes_that_box_by_its_error(page: Page) -> None:
    page.goto("/simulate/")
    queriers = page.get_by_label("Queriers (blank: as connected)")
    queriers.fill("0")
    page.get_by_role("button", name="Simulate", exact=True).click()
    expect(queriers).to_be_focused()
    expect(queriers).to_have_attribute("aria-invalid", "true")
    expect(queriers).to_have_accessible_description("Queriers: must be >= 1 and <= 1000, got 0")


def test_the_delete_dialog_keeps_the_tab_key_inside_it_until_it_closes(
    page: Page, server: DaphneProcess
) -> None:
    put_tenant(server, "a11y-dialog", {"max_queriers_per_tenant": 2})
    page.goto("/tenants/a11y-dialog/")
    _press(page, "Delete tenant…")
    expect(page.locator("#cancel-delete")).to_be_focused()
    seen = set()
    for _ in range(8):
        page.keyboard.press("Tab")
        # Past its last button the focus may visit the browser's own UI (the
        # document itself), never the page behind the modal dialog.
        seen.add(
            page.evaluate(
                """() => document.activeElement === document.body ? "body"
                  : document.activeElement.closest("#delete-dialog") ? document.activeElement.id
                  : "outside: " + document.activeElement.outerHTML.slice(0, 80)"""
            )
        )
    assert seen <= {"body", "delete-note", "confirm-delete", "cancel-delete"}, seen
    assert {"delete-note", "confirm-delete", "cancel-delete"} <= seen


def test_cancelling_a_simulation_from_the_keyboard_gives_the_focus_back_to_simulate(
    page: Page,
) -> None:
    # Cancel held the focus, and was disabled when the run ended: the
    # keyboard's place was the top of the page.
    page.goto("/simulate/")
    page.get_by_label("Traffic").select_option("scenario:cortex-seed")
    page.get_by_label("Arrivals ×").fill("20")  # a run long enough to cancel
    _press(page, "Simulate")
    cancel = page.get_by_role("button", name="Cancel")
    page.keyboard.press("Tab")
    expect(cancel).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#sim-status")).to_have_text(re.compile(r"^(Cancelled|Done)"))
    expect(page.get_by_role("button", name="Simulate", exact=True)).to_be_focused()
