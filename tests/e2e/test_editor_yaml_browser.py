"""The tenant editor's YAML view, Save's review and the History diffs in Chromium.

One server, browser and login for the module. The editor's tests work on
acme: an edit in the YAML view seen in the form, a broken regex seen at its
line and fixed, Save's diff and verdict before it saves. History's tests read
a tenant of their own whose regex the module changed once (`revised`): the
line diff, two revisions compared, a rollback after seeing its diff. Then
one whole edit of gold with the keyboard alone.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Dialog, Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import full_page_screenshot, one_rule, put_tenant

REGEX = "query_priority.priorities[0].query_attributes[0].regex"
# acme's block in the YAML view: the regex is on this line.
REGEX_LINE = 8


@pytest.fixture(scope="module")
def revised(server: DaphneProcess) -> str:
    """A tenant made as acme is, then saved once with its regex "special" instead of
    "^never$": History holds its two revisions, the change the newest."""
    put_tenant(server, "revised", one_rule("^never$"))
    put_tenant(server, "revised", one_rule("special"), replace=True)
    return "revised"


def editor_line(page: Page, number: int):
    return page.locator("#yaml-editor .cm-line").nth(number - 1)


def open_acme_with_an_unsaved_special_regex(page: Page) -> None:
    """acme's editor in the YAML view, its regex edited from "^never$" to "special", unsaved."""
    page.goto("/tenants/acme/")
    page.locator(f'[name="{REGEX}"]').fill("special")
    page.get_by_role("button", name="YAML", exact=True).click()
    expect(editor_line(page, REGEX_LINE)).to_have_text("      - regex: special")


def test_an_edit_in_the_yaml_view_shows_in_the_form(page: Page) -> None:
    page.goto("/tenants/acme/")
    page.get_by_role("button", name="YAML", exact=True).click()
    expect(page.locator("#yaml-editor")).to_be_visible()
    expect(page.locator("#yaml-editor .cm-lineNumbers")).to_be_visible()
    expect(editor_line(page, 1)).to_have_text("acme:")
    line = editor_line(page, REGEX_LINE)
    expect(line).to_have_text("      - regex: ^never$")
    # Highlighted as YAML: the key and the value are spans of their own.
    expect(line.locator("span")).not_to_have_count(0)
    line.click()
    page.keyboard.press("End")
    for _ in "^never$":
        page.keyboard.press("Backspace")
    page.keyboard.type("special")
    expect(line).to_have_text("      - regex: special")
    page.get_by_role("button", name="Form", exact=True).click()
    expect(page.locator(f'[name="{REGEX}"]')).to_have_value("special")


def test_a_broken_regex_shows_at_its_line_then_fixing_it_clears_it(page: Page) -> None:
    open_acme_with_an_unsaved_special_regex(page)
    line = editor_line(page, REGEX_LINE)
    line.click()
    page.keyboard.press("End")
    for _ in "special":
        page.keyboard.press("ArrowLeft")
    page.keyboard.type("(")
    problem = page.locator("#yaml-problems li")
    expect(problem).to_have_count(1)
    expect(problem).to_contain_text(f"line {REGEX_LINE}: {REGEX}: RE2 rejects this regex")
    expect(page.locator("#yaml-editor .cm-lint-marker-error")).to_have_count(1)
    full_page_screenshot(page, "tenant-yaml-view.png")
    page.keyboard.press("Backspace")
    expect(problem).to_have_count(0)
    expect(page.locator("#yaml-editor .cm-lint-marker-error")).to_have_count(0)


def test_save_shows_the_diff_and_the_verdict_then_a_second_click_saves(page: Page) -> None:
    open_acme_with_an_unsaved_special_regex(page)
    page.get_by_label("Query (PromQL or match[] selectors)").fill('special_query{job="x"}')
    page.get_by_role("button", name="Explain").click()
    expect(page.locator("#explain-priority")).to_have_text("5")
    page.locator("#save").click()
    review = page.locator("#review")
    expect(review).to_be_visible()
    diff = page.locator("#review-diff")
    expect(diff.locator(".yl.removed")).to_have_count(1)
    expect(diff.locator(".yl.added")).to_have_count(1)
    expect(diff.locator(".yl.added mark")).to_have_text("special")
    expect(page.locator("#verdict-draft")).to_have_text("5")
    expect(page.locator("#verdict-saved")).to_have_text("0")
    expect(page.locator("#confirm-save")).to_be_focused()
    full_page_screenshot(page, "tenant-save-review.png")
    page.locator("#confirm-save").click()
    expect(page.locator(".msg-success")).to_contain_text("Saved acme")
    expect(page.locator(f'[name="{REGEX}"]')).to_have_value("special")


def test_history_shows_the_line_diff_of_the_change(page: Page, revised: str) -> None:
    page.goto(f"/history/?key={revised}")
    newest = page.locator(".revision").first
    expect(newest).to_contain_text(revised)
    expect(newest.locator(".ydiff .yl.removed mark")).to_have_text("^never$")
    expect(newest.locator(".ydiff .yl.added mark")).to_have_text("special")
    expect(newest.locator(".paths")).to_contain_text("rule 1 › attribute 1 › regex")
    page.get_by_role("link", name="Side by side").click()
    expect(page.locator(".revision").first.locator(".ydiff.split .yl.changed")).to_have_count(1)
    full_page_screenshot(page, "history-diff.png")


def test_two_revisions_compare_when_picked(page: Page, revised: str) -> None:
    page.goto(f"/history/?key={revised}")
    rows = page.locator(".revision")
    expect(rows).to_have_count(2)
    rows.nth(1).get_by_label(re.compile("Compare from revision")).click()
    rows.nth(0).get_by_label(re.compile("Compare to revision")).click()
    page.get_by_role("button", name="Compare selected").click()
    expect(page.locator("#compare-what")).to_contain_text(f"Tenant {revised}")
    expect(page.locator("#compare-diff .yl.added mark")).to_have_text("special")


def test_rollback_shows_its_diff_before_it_applies(page: Page, revised: str) -> None:
    page.goto(f"/history/?key={revised}")
    page.locator(".revision").first.get_by_role("button", name=re.compile("Roll back")).click()
    expect(page.locator("#rollback-diff .yl.removed mark")).to_have_text("special")
    expect(page.locator("#rollback-diff .yl.added mark")).to_have_text("^never$")
    page.locator("#confirm-rollback").click()
    expect(page.locator(".msg-success")).to_contain_text("Rolled back")
    page.goto(f"/tenants/{revised}/")
    expect(page.locator(f'[name="{REGEX}"]')).to_have_value("^never$")


def _tab_to(page: Page, selector: str, limit: int = 80) -> None:
    """Press Tab until the element matching `selector` holds the focus."""
    for _ in range(limit):
        if page.evaluate(f"document.activeElement.matches({selector!r})"):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {selector}")


def test_one_whole_edit_with_the_keyboard_alone(page: Page) -> None:
    page.goto("/tenants/gold/")
    _tab_to(page, "#view-yaml")
    page.keyboard.press("Enter")
    expect(page.locator("#yaml-editor")).to_be_visible()
    _tab_to(page, "#yaml-editor .cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("End")
    page.keyboard.type("|urgent")
    expect(page.locator("#yaml-editor .cm-line").nth(8)).to_have_text(
        "      - regex: critical|urgent"
    )
    page.keyboard.press("Escape")  # CodeMirror's Tab indents until Esc
    _tab_to(page, "#save")
    page.keyboard.press("Enter")
    expect(page.locator("#confirm-save")).to_be_focused()
    expect(page.locator("#review-diff .yl.added mark")).to_have_text("|urgent")
    page.keyboard.press("Enter")
    expect(page.locator(".msg-success")).to_contain_text("Saved gold")
    expect(page.locator(f'[name="{REGEX}"]')).to_have_value("critical|urgent")


def test_the_inspector_charts_label_their_axes_and_show_values_under_the_cursor(
    page: Page,
) -> None:
    page.goto("/")
    chart = page.locator("#chart-wait")
    expect(chart.locator("canvas")).to_have_count(1)
    expect(chart.locator(".u-axis")).to_have_count(2)
    labels = page.evaluate(
        "['chart-queued', 'chart-wait'].map("
        "id => document.getElementById(id).plot.axes.map(a => a.label))"
    )
    assert labels == [["time", "requests"], ["time", "seconds"]]
    legend = chart.locator(".u-legend .u-series")
    expect(legend).to_have_text(
        [re.compile(r"^time"), re.compile(r"^oldest queued"), re.compile(r"^p99 wait")]
    )
    page.wait_for_timeout(1_500)  # a few chart points (the inspector adds one a second)
    box = page.locator("#chart-queued .u-over").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] - 4, box["y"] + box["height"] / 2)
    expect(page.locator("#chart-queued .u-legend .u-series").nth(1)).to_have_text(
        re.compile(r"queued\s*\d")
    )


def test_an_edit_button_keeps_the_editors_place_and_leaving_with_edits_asks_first(
    page: Page,
) -> None:
    page.set_viewport_size({"width": 1280, "height": 600})
    page.goto("/tenants/acme/")
    add = page.get_by_role("button", name="+ Attribute").first
    add.scroll_into_view_if_needed()
    before = page.evaluate("window.scrollY")
    assert before > 0
    with page.expect_navigation():
        add.click()
    expect(page.get_by_role("group", name=re.compile("^Attribute 2"))).to_be_attached()
    assert abs(page.evaluate("window.scrollY") - before) <= 2
    asked: list[str] = []

    def stay(dialog: Dialog) -> None:
        asked.append(dialog.type)
        dialog.dismiss()

    page.once("dialog", stay)
    page.get_by_role("link", name="History").click()
    page.wait_for_timeout(300)  # a dismissed leave leaves the page where it is
    expect(page).to_have_url(re.compile(r"/tenants/acme/$"))
    assert asked == ["beforeunload"]
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("link", name="History").click()
    expect(page).to_have_url(re.compile(r"/history/"))
    page.set_viewport_size({"width": 1500, "height": 1000})
