"""The editor's boxes made in Python: escaped, labelled, and tied to their errors."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

from django.template import Context

from dashboard.forms import editor_model
from dashboard.templatetags.editor_tags import attribute, field
from scheduler_core.validation import FieldError

HOSTILE = "\"><script>alert('x')</script>&"
ATTR = "query_priority.priorities[0].query_attributes[0]"


class _Elements(HTMLParser):
    """Every element's attributes, by tag, and the page's text."""

    def __init__(self, markup: str) -> None:
        super().__init__()
        self.tags: dict[str, list[dict[str, str | None]]] = {}
        self.text: list[str] = []
        self.feed(markup)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.setdefault(tag, []).append(dict(attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _attribute_html(attr: dict[str, Any], errors: list[FieldError], **context: Any) -> _Elements:
    config = {
        "query_priority": {
            "enabled": True,
            "priorities": [{"priority": 1, "query_attributes": [attr]}],
        }
    }
    model = editor_model(config, errors)["rules"][0]["attributes"][0]
    ctx = Context({"api_types": ["query", "query_range"], **context})
    return _Elements(attribute(ctx, model))


def test_a_box_escapes_its_value_and_label_and_names_its_error() -> None:
    box = {"name": "max_query_capacity", "value": HOSTILE, "errors": ["too <big>"]}
    page = _Elements(field(box, "Cap <share>", readonly="readonly", mono=True, placeholder="e.g."))
    (element,) = page.tags["input"]
    assert element["value"] == HOSTILE
    assert element["aria-invalid"] == "true"
    assert element["aria-describedby"] == "max_query_capacity-err"
    assert "readonly" in element and element["class"] == "mono"
    assert "Cap <share>" in page.text and "too <big>" in page.text
    assert "script" not in page.tags


def test_an_editor_sees_boxes_and_a_remove_button_a_viewer_a_disabled_select_and_its_value() -> (
    None
):
    attr = {"regex": HOSTILE, "api_type": "query_range"}
    editor = _attribute_html(attr, [], is_editor=True)
    viewer = _attribute_html(attr, [], is_editor=False)
    assert editor.tags["input"][0]["value"] == HOSTILE
    assert "script" not in editor.tags
    assert [b["aria-label"] for b in editor.tags["button"]] == ["Remove attribute 1 of rule 1"]
    assert "disabled" not in editor.tags["select"][0]
    assert "button" not in viewer.tags and "disabled" in viewer.tags["select"][0]
    hidden = [i for i in viewer.tags["input"] if i.get("type") == "hidden"]
    assert hidden == [{"type": "hidden", "name": f"{ATTR}.api_type", "value": "query_range"}]
    assert all("readonly" in i for i in viewer.tags["input"] if i.get("type") != "hidden")


def test_a_pairs_error_describes_both_its_boxes_and_a_boxs_own_error_comes_first() -> None:
    errors = [
        FieldError(f"{ATTR}.time_window", "start must be before end"),
        FieldError(f"{ATTR}.time_window.start", "not a duration"),
    ]
    page = _attribute_html({"time_window": {"start": "zz", "end": "1h"}}, errors, is_editor=True)
    start, end = (i for i in page.tags["input"] if i["name"].startswith(f"{ATTR}.time_window"))
    assert start["aria-describedby"] == f"{ATTR}.time_window.start-err {ATTR}.time_window-err"
    assert end["aria-describedby"] == f"{ATTR}.time_window-err"
    ids = {p["id"] for p in page.tags["p"] if p.get("class") == "field-error"}
    assert ids == {f"{ATTR}.time_window.start-err", f"{ATTR}.time_window-err"}
