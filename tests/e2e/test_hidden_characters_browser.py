"""Bidi controls and other invisible characters in clients' text, in Chromium.

A query text, an actor path and a querier ID are the clients' own, and a
U+202E RIGHT-TO-LEFT OVERRIDE among them turns the rest of the string
around on screen (Trojan Source): `{a="\u202egnp.exe"}` reads as `{a="exe.png"}`.
The inspector writes each such character out as a marked "⟨U+202E⟩" and
isolates the string, so what an operator reads is what the scheduler holds,
in its logical order.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.e2e.conftest import Traffic
from tests.e2e.drill_pages import open_row, treeitem

RLO = "\u202e"
QUERY = f'count(up{{job="{RLO}gnp.exe"}})'
SHOWN_QUERY = 'count(up{job="⟨U+202E⟩gnp.exe"})'
ACTOR = f"team{RLO}zyx"
QUERIER = f"q{RLO}evil"
HEBREW_QUERIER = "\u05e9\u05dc\u05d5\u05dd-7"  # right-to-left letters, then "-7"

# The on-screen boxes of an element's characters, in logical (DOM) order.
CHAR_BOXES = """(el) => {
  const boxes = [];
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.data.length; i++) {
      const range = document.createRange();
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const r = range.getBoundingClientRect();
      if (r.width > 0) boxes.push([Math.round(r.top), r.left, node.data[i]]);
    }
  }
  return boxes;
}"""


def assert_reads_in_logical_order(element: Locator) -> None:
    """Each character is drawn after the one before it: right of it on its line, or lower."""
    boxes = element.evaluate(CHAR_BOXES)
    assert boxes, "nothing drawn"
    for (top, left, char), (next_top, next_left, next_char) in zip(boxes, boxes[1:], strict=False):
        same_line = abs(next_top - top) <= 2
        assert (next_left > left) if same_line else (next_top > top), (
            f"{next_char!r} is drawn before {char!r}: "
            + "".join(c for _, _, c in sorted(boxes, key=lambda b: (b[0], b[1])))
        )


@pytest.fixture(scope="module", autouse=True)
def _bidi_queued(traffic: Traffic) -> None:
    """One request of tenant bidi, its query and actor path holding a U+202E, queued."""
    traffic.enqueue("bidi", query=QUERY, headers={"X-Loki-Actor-Path": f"{ACTOR}|joe"})


def test_a_bidi_override_in_a_query_and_an_actor_is_written_out_in_logical_order(
    page: Page,
) -> None:
    page.goto("/")
    expect(page.locator("#live-state")).to_have_text("live")

    open_row(page, "bidi: 1 queued")
    open_row(page, "ingester: 1 queued")
    actor = treeitem(page, "actor team⟨U+202E⟩zyx: 1 queued")
    name = actor.locator(":scope > .row .name")
    expect(name).to_have_text("team⟨U+202E⟩zyx")
    expect(name).to_have_attribute("title", "team⟨U+202E⟩zyx")
    expect(name.locator(".hidden-char")).to_have_text("⟨U+202E⟩")
    assert_reads_in_logical_order(name)

    page.get_by_role("button", name="Requests of bidi").click()
    row = page.locator("#drill-rows .drill-row")
    expect(row).to_have_count(1)
    line = row.locator(".q")
    expect(line).to_have_text(SHOWN_QUERY)
    expect(line).to_have_attribute("dir", "ltr")
    assert_reads_in_logical_order(line)
    expect(row.locator(".meta-text")).to_contain_text("actor team⟨U+202E⟩zyx|joe")
    assert_reads_in_logical_order(row.locator(".meta-text"))

    row.locator(".expand").click()
    full = row.locator(".full pre")
    expect(full).to_have_text(SHOWN_QUERY)
    assert_reads_in_logical_order(full)

    # A search for the control itself marks its escape, as it marks any match.
    page.locator("#drill-search").fill(RLO)
    expect(line.locator("mark")).to_have_text("⟨U+202E⟩")
    expect(page.locator("#drill-title")).to_have_text(
        "Requests of tenant bidi whose query contains “⟨U+202E⟩”"
    )
    page.locator("#drill-search").fill("")


def test_a_querier_id_is_written_out_and_isolated_from_its_card(
    page: Page, traffic: Traffic
) -> None:
    page.goto("/")
    page.get_by_role("button", name="Requests of bidi").click()
    expect(page.locator("#drill-rows .drill-row")).to_have_count(1)
    with traffic.queriers(QUERIER, 1, workers=4, latency=lambda _: 30.0):
        card = page.locator(f'article.querier[data-querier="{QUERIER}-0"]')
        qid = card.locator(".qid")
        expect(qid).to_have_text("q⟨U+202E⟩evil-0")
        assert_reads_in_logical_order(qid)
        expect(card).to_have_attribute("aria-label", re.compile(r"^querier q⟨U\+202E⟩evil-0: "))
        # The module's queued request runs there now.
        expect(card.locator(".w-busy")).to_have_text(re.compile(r"^#\d+ busy · bidi / "))
        row = page.locator("#drill-rows .drill-row")
        expect(row.locator(".meta-text")).to_contain_text("on q⟨U+202E⟩evil-0 worker")
        longest = page.locator("#longest li").first
        expect(longest).to_contain_text("q⟨U+202E⟩evil-0")
        assert_reads_in_logical_order(longest)

        longest.locator(".open-request").click()
        dialog = page.locator("#request-dialog")
        expect(dialog.locator("#request-query")).to_have_text(SHOWN_QUERY)
        assert_reads_in_logical_order(dialog.locator("#request-query"))
        expect(dialog.locator("#request-facts")).to_contain_text("running on q⟨U+202E⟩evil-0")
        expect(dialog.locator("#request-facts")).to_contain_text("team⟨U+202E⟩zyx|joe")
        dialog.get_by_role("button", name="Close").click()


def test_a_right_to_left_querier_id_is_isolated_from_the_words_around_it(
    page: Page, traffic: Traffic
) -> None:
    page.goto("/")
    with traffic.queriers(HEBREW_QUERIER, 1, workers=4, latency=lambda _: 0.01):
        card = page.locator(f'article.querier[data-querier="{HEBREW_QUERIER}-0"]')
        # In a sentence or a name, a first-strong isolate (U+2068 … U+2069):
        # "-0" and ": idle" stay on their sides of it.
        expect(card).to_have_attribute(
            "aria-label", re.compile(rf"^querier \u2068{HEBREW_QUERIER}-0\u2069: ")
        )
        # In markup, a <bdi>: the state badge after it stays after it.
        bdi = card.locator(".qid bdi")
        expect(bdi).to_have_text(f"{HEBREW_QUERIER}-0")
        # The card's header is re-parsed whenever its markup changes (the querier
        # takes the module's bidi request and ends it, "0/4 busy" -> "1/4" -> "0/4"):
        # read it with retrying assertions, and the two boxes in one evaluation.
        expect(bdi).to_have_css("unicode-bidi", "isolate")
        page.wait_for_function(
            """(id) => {
              const card = [...document.querySelectorAll("article.querier")]
                .find((el) => el.dataset.querier === id);
              const qid = card?.querySelector(".qid");
              const badge = card?.querySelector("header .badge");
              if (!qid || !badge) return false;
              const q = qid.getBoundingClientRect(), b = badge.getBoundingClientRect();
              return q.width > 0 && b.width > 0 && b.left >= q.right - 1;
            }""",
            arg=f"{HEBREW_QUERIER}-0",
        )
