"""The site-wide templates (templates/): the base layout and our error pages."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.template.loader import render_to_string
from django.test import Client

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("code", "title"),
    [(400, "Bad request"), (403, "Not allowed"), (404, "Not found"), (500, "Server error")],
)
def test_each_error_page_renders_in_the_site_layout_without_a_request(code: int, title: str):
    # Django renders 500.html with no request and no context processors, so
    # the layout must not need either.
    html = render_to_string(f"{code}.html")
    assert f"{code} · {title}" in html
    assert "site.css" in html
    assert 'class="topbar"' in html


@pytest.mark.django_db
def test_an_unknown_address_answers_our_404_page(client: Client):
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    assert b"404 \xc2\xb7 Not found" in response.content


@pytest.mark.django_db
def test_the_login_page_uses_the_site_layout_and_not_the_dashboard_sheet(client: Client):
    html = client.get("/login/").content.decode()
    assert "site.css" in html
    assert "dashboard/dashboard.css" not in html


def test_the_site_folders_hold_no_placeholder_files():
    for folder in ("templates", "static"):
        files = [p for p in (ROOT / folder).rglob("*") if p.is_file()]
        assert files, f"{folder}/ is empty"
        assert [p for p in files if p.name.startswith(".") or not p.stat().st_size] == []
