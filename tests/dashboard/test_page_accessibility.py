"""What assistive technology reads on the operator pages, as the server renders them.

Every box in error is marked invalid and described by its error (a duration
pair's error by both its boxes), the groups whose boxes share labels
("Priority", "start") are named, the headings form an outline and a diff says
in words which lines it added and removed.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import pytest
from django.test import Client

from api.store import services

pytestmark = pytest.mark.django_db

ATTR = "query_priority.priorities[0].query_attributes[0]"


class _Page(HTMLParser):
    """Each element's tag and attributes (also by id), each id'd element's text, the headings."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.elements: list[dict[str, str | None]] = []
        self.by_id: dict[str, dict[str, str | None]] = {}
        self.text: dict[str, str] = {}
        self.headings: list[tuple[int, str]] = []
        self._open: list[tuple[str, str | None]] = []  # (tag, id) of each open element
        self._heading: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs, tag=tag)
        self.elements.append(a)
        ident = a.get("id")
        if ident:
            self.by_id[ident] = a
            self.text[ident] = ""
        if re.fullmatch(r"h[1-6]", tag):
            self._heading = []
        if tag not in ("input", "br", "meta", "link", "img"):
            self._open.append((tag, ident))

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            open_tag, _ = self._open.pop()
            if open_tag == tag:
                break
        if re.fullmatch(r"h[1-6]", tag) and self._heading is not None:
            self.headings.append((int(tag[1]), " ".join("".join(self._heading).split())))
            self._heading = None

    def handle_data(self, data: str) -> None:
        for _, ident in self._open:
            if ident:
                self.text[ident] += data
        if self._heading is not None:
            self._heading.append(data)

    def description(self, ident: str) -> str:
        """The text of the elements `ident`'s aria-describedby names, in order."""
        refs = (self.by_id[ident].get("aria-describedby") or "").split()
        assert refs, f"#{ident} is described by nothing"
        return " ".join(" ".join(self.text[r].split()) for r in refs)

    def labelled_by(self, ident: str) -> dict[str, str | None]:
        """The one element whose aria-labelledby is `ident`."""
        (found,) = [a for a in self.elements if a.get("aria-labelledby") == ident]
        return found


@pytest.fixture
def acme(db: None, rules: dict[str, Any]) -> None:
    """Tenant acme, configured with `rules`."""
    services.tenant_put(
        tenant_id="acme", config=rules, expected_version=None, author=None, source="cli"
    )


def _refused_draft(client: Client, **fields: str) -> _Page:
    post = {"action": "save", "tenant_id": "acme", "query_priority.enabled": "on", **fields}
    response = client.post("/tenants/new/", post)
    assert response.status_code == 400
    return _Page(response.content.decode())


def test_a_refused_time_window_marks_both_its_boxes_and_describes_each_by_its_error(
    editor_client: Client,
) -> None:
    page = _refused_draft(
        editor_client,
        **{
            "query_priority.priorities[0].priority": "5",
            f"{ATTR}.time_window.start": "2h",
            f"{ATTR}.time_window.end": "3h",
        },
    )
    for end in ("start", "end"):
        box = f"{ATTR}.time_window.{end}"
        assert page.by_id[box].get("aria-invalid") == "true"
        assert "start (2h) must be greater than end (3h)" in page.description(box)


def test_a_duration_pairs_boxes_are_grouped_under_the_pairs_name(
    editor_client: Client, acme: None
) -> None:
    page = _Page(editor_client.get("/tenants/acme/").content.decode())
    for key, name in (
        ("time_window", "Time window (before now)"),
        ("time_range_limit", "Time range limit"),
        ("query_step_limit", "Query step limit"),
    ):
        label = f"{ATTR}.{key}-label"
        assert page.labelled_by(label)["role"] == "group"
        assert page.text[label] == name


def test_an_api_type_the_validator_refuses_is_marked_and_described_by_its_error(
    editor_client: Client,
) -> None:
    page = _refused_draft(
        editor_client,
        **{"query_priority.priorities[0].priority": "5", f"{ATTR}.api_type": "bogus"},
    )
    select = page.by_id[f"{ATTR}.api_type"]
    assert select["tag"] == "select" and select.get("aria-invalid") == "true"
    assert "bogus" in page.description(f"{ATTR}.api_type")


def test_each_rule_is_a_group_named_for_its_rule_and_described_by_its_own_errors(
    editor_client: Client,
) -> None:
    # A rule with no attribute: its error is the whole rule's, at no box.
    page = _refused_draft(editor_client, **{"query_priority.priorities[0].priority": "5"})
    group = page.labelled_by("rule-0-title")
    assert group["role"] == "group"
    assert page.text["rule-0-title"] == "Rule 1"
    assert page.text["rule-0-err"].strip(), "the rule's error is not said at the rule"
    assert group.get("aria-describedby") == "rule-0-err"
    # Nothing else to focus: the summary can take the focus (editor.js).
    assert page.by_id["error-summary"].get("tabindex") == "-1"


def test_an_attribute_is_named_by_its_number_not_its_remove_button(
    editor_client: Client, acme: None
) -> None:
    page = _Page(editor_client.get("/tenants/acme/").content.decode())
    assert page.labelled_by(f"{ATTR}-title")["tag"] == "fieldset"
    assert page.text[f"{ATTR}-title"] == "Attribute 1"


def test_the_editors_headings_are_an_outline_with_no_level_skipped(
    editor_client: Client, rules: dict[str, Any], acme: None
) -> None:
    html = editor_client.post(
        "/tenants/acme/", {"action": "explain", "explain_query": "up", **_form(rules)}
    ).content.decode()
    headings = _Page(html).headings
    assert headings[0] == (1, "Tenant acme")
    assert (2, "Query priority") in headings and (3, "Rule 1") in headings
    assert any(level == 3 and text.startswith("Rule 1 · priority 5") for level, text in headings)
    for (before, _), (after, text) in zip(headings, headings[1:], strict=False):
        assert after <= before + 1, f"{text!r} skips a level after an h{before}"


def _form(rules: dict[str, Any]) -> dict[str, str]:
    """The editor's post for the `rules` fixture's block."""
    return {
        "max_queriers_per_tenant": str(rules["max_queriers_per_tenant"]),
        "query_priority.enabled": "on",
        "query_priority.default_priority": "1",
        "query_priority.priorities[0].priority": "5",
        f"{ATTR}.regex": "up",
    }


def test_a_refused_login_marks_both_boxes_and_describes_them_by_the_refusal(
    client: Client, viewer: Any
) -> None:
    page = _Page(
        client.post("/login/", {"username": "victor", "password": "wrong"}).content.decode()
    )
    for box in ("id_username", "id_password"):
        assert page.by_id[box].get("aria-invalid") == "true"
        assert page.description(box) == (
            "That user name and password do not match an active account."
        )


@pytest.mark.parametrize(
    ("layout", "words"),
    [("unified", ("removed: ", "added: ")), ("split", ("before: ", "after: "))],
)
def test_a_diff_says_in_words_which_lines_it_removed_and_added(
    editor_client: Client, acme: None, layout: str, words: tuple[str, str]
) -> None:
    services.tenant_patch(
        tenant_id="acme",
        changes={"max_queriers_per_tenant": 4},
        expected_version=None,
        author=None,
        source="api",
    )
    html = editor_client.get(f"/history/?diff={layout}").content.decode()
    for word in words:
        assert f'<span class="visually-hidden">{word}</span>' in html


def test_historys_changed_values_have_column_headers(editor_client: Client, acme: None) -> None:
    html = editor_client.get("/history/").content.decode()
    table = re.search(r'<table class="diff compact">.*?</thead>', html, re.DOTALL)
    assert table is not None
    headers = re.findall(r'<th scope="col">([^<]*)</th>', table.group(0))
    assert headers == ["Field", "Before", "After"]
