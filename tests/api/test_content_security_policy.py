"""Every response carries a Content-Security-Policy the pages really work under."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.http import HttpResponse
from django.test import Client, RequestFactory

from api.middleware import ContentSecurityPolicyMiddleware

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = [*ROOT.glob("templates/**/*.html"), *ROOT.glob("dashboard/templates/**/*.html")]


def directives(response: Any) -> dict[str, str]:
    policy = response["Content-Security-Policy"]
    return dict(part.strip().split(" ", 1) for part in policy.split(";"))


@pytest.mark.parametrize(
    "path",
    ["/", "/tenants/", "/history/", "/settings/", "/simulate/", "/api/v1/tenants/", "/nowhere/"],
)
def test_pages_and_the_api_run_only_this_sites_scripts_and_are_never_framed(
    editor: Any, path: str
) -> None:
    client = Client()
    client.force_login(editor)
    policy = directives(client.get(path))
    assert policy["script-src"] == "'self'"
    assert policy["default-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"
    assert policy["object-src"] == "'none'"


def test_the_login_page_and_refusals_have_it_too() -> None:
    assert directives(Client().get("/login/"))["script-src"] == "'self'"
    refused = Client(enforce_csrf_checks=True).post("/login/", {"username": "x"})
    assert refused.status_code == 403
    assert directives(refused)["script-src"] == "'self'"


def test_the_api_doc_pages_run_under_the_same_policy_with_no_inline_script(editor: Any) -> None:
    client = Client()
    client.force_login(editor)
    for path in ("/api/v1/schema/swagger-ui/", "/api/v1/schema/redoc/"):
        page = client.get(path)
        assert page.status_code == 200
        assert directives(page)["script-src"] == "'self'"
        inline = [
            t for t in re.findall(r"<script\b[^>]*>", page.content.decode()) if "src=" not in t
        ]
        assert inline == [], path
    start = client.get("/api/v1/schema/swagger-ui/?script=")
    assert start.status_code == 200
    assert start["Content-Type"].startswith("application/javascript")


def test_a_response_with_a_policy_of_its_own_keeps_it() -> None:
    own = HttpResponse()
    own["Content-Security-Policy"] = "default-src 'none'"
    middleware = ContentSecurityPolicyMiddleware(lambda request: own)
    response = middleware(RequestFactory().get("/"))
    assert response["Content-Security-Policy"] == "default-src 'none'"


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_template_has_a_script_the_policy_would_block_silently(template: Path) -> None:
    text = template.read_text()
    inline = [tag for tag in re.findall(r"<script\b[^>]*>", text) if "src=" not in tag]
    # A handler may follow a template tag (`{% if %}onclick=`), not only a space.
    handlers = re.findall(r"<[^>]*[\s}]on[a-z]+\s*=", text)
    assert not inline, inline
    assert not handlers, handlers
    assert "javascript:" not in text
