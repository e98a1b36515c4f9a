"""What the tenant editor's form would post, read from its page as a browser builds it.

Only the standard library, so benchmarks that drive a real server without
Django set up (tests/load/editor_memory_bench.py) read forms the same way.
"""

from __future__ import annotations

from html.parser import HTMLParser

__all__ = ["inputs"]


class _Inputs(HTMLParser):
    """What the tenant form would post, as a browser builds it (successful controls)."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, str] = {}
        self.inside = False
        self.select: str | None = None
        self.first_option: str | None = None
        self.textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "form" and a.get("id") == "tenant-form":
            self.inside = True
        if not self.inside or "disabled" in a:
            return
        name = a.get("name") or ""
        if tag == "input" and name and a.get("type") not in ("submit", "button"):
            if a.get("type") == "checkbox":
                if "checked" in a:
                    self.values[name] = a.get("value") or "on"
            else:
                self.values[name] = a.get("value") or ""
        elif tag == "select":
            self.select, self.first_option = name, None
        elif tag == "option" and self.select:
            value = a.get("value") or ""
            if self.first_option is None:
                self.first_option = value
                self.values.setdefault(self.select, value)
            if "selected" in a:
                self.values[self.select] = value
        elif tag == "textarea" and name:
            self.textarea = name
            self.values[name] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False
        elif tag == "select":
            self.select = None
        elif tag == "textarea":
            self.textarea = None

    def handle_data(self, data: str) -> None:
        if self.textarea:
            self.values[self.textarea] += data


def inputs(page: str) -> dict[str, str]:
    parser = _Inputs()
    parser.feed(page)
    return parser.values
