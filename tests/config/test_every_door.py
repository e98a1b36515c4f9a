"""Every route, found by walking the URL configuration, against every kind of caller.

Hand-picked lists of URLs (tests/dashboard/test_views.py,
tests/api/rest/test_rest_auth.py) miss the routes added after them; these
tests take every named route of the pages and of the REST API, so a new view
that forgets its login, role or editor check fails here:
- an anonymous visitor is sent to the login page, or answered 401 by the API;
- a frontend or querier token reads and writes nothing over REST;
- a viewer token writes only where the API says it changes nothing;
- a viewer posting each page the posts that save for an editor changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.test import APIClient

from api.store import selectors, services
from api.store.models import ConfigRevision
from api.store.services import api_token_issue

pytestmark = pytest.mark.django_db

# A value for each route parameter, naming objects the `world` fixture makes.
SAMPLES: dict[str, Any] = {
    "tenant_id": "acme",
    "revision_id": 1,
    "request_id": "ws:frontend-1:1",
    "run_id": "run-1",
}
PUBLIC_PAGES = {"dashboard:login", "dashboard:logout"}
UNSAFE = ("post", "put", "patch", "delete")
# The REST writes any role may make, because they change nothing (api/rest/permissions.py).
VIEWER_WRITES = {
    ("api-v1:explain", "post"),
    ("api-v1:tenant-yaml", "post"),
    ("api-v1:tenant-dry-run", "post"),
    ("api-v1:simulate", "post"),
    ("api-v1:simulate-run", "delete"),
}


def _routes(patterns: list[Any], namespace: str) -> Iterator[tuple[str, URLPattern]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}:{entry.namespace}" if entry.namespace else namespace
            yield from _routes(entry.url_patterns, inner)
        elif entry.name:
            yield f"{namespace}:{entry.name}".lstrip(":"), entry


def routes(app: str) -> dict[str, str]:
    """Every named route of one app's namespace, with its parameters filled in."""
    found = {}
    for name, entry in _routes(get_resolver().url_patterns, ""):
        if name.startswith(f"{app}:"):
            params = entry.pattern.regex.groupindex
            found[name] = reverse(name, kwargs={key: SAMPLES[key] for key in params})
    assert found, f"no routes under {app}"
    return found


PAGES = routes("dashboard")
API = routes("api-v1")


@pytest.fixture
def world(editor: User) -> None:
    """A tenant and a revision, so every route's parameters name something."""
    services.tenant_put(
        tenant_id="acme",
        config={"max_queriers_per_tenant": 3},
        expected_version=None,
        author=editor,
        source="cli",
    )


def token_client(role: str) -> APIClient:
    _, plaintext = api_token_issue(name=f"{role}-sweep", role=role)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    return client


def test_the_sweep_finds_the_pages_and_endpoints_it_is_about() -> None:
    # Guards the walk itself: a sweep over nothing would pass every test below.
    assert {"dashboard:rollback", "dashboard:simulate", "dashboard:tenant-delete"} <= set(PAGES)
    assert {"api-v1:queue-cancel", "api-v1:revision-rollback", "api-v1:simulate-run"} <= set(API)


@pytest.mark.parametrize("name", sorted(set(PAGES) - PUBLIC_PAGES))
@pytest.mark.parametrize("method", ["get", "post"])
def test_every_page_sends_an_anonymous_visitor_to_log_in(
    client: Client, world: None, name: str, method: str
) -> None:
    response = getattr(client, method)(PAGES[name])
    if method == "get" and response.status_code == 405:
        return  # a post-only form: nothing is shown or done
    assert response.status_code == 302, response.content[:300]
    assert response.url.startswith("/login/?next=")


@pytest.mark.parametrize("name", sorted(API))
@pytest.mark.parametrize("method", ["get", *UNSAFE])
def test_every_api_endpoint_answers_an_anonymous_caller_401(
    world: None, name: str, method: str
) -> None:
    response = getattr(APIClient(), method)(API[name], {}, format="json")
    assert response.status_code == 401


@pytest.mark.parametrize("role", ["frontend", "querier"])
def test_a_frontend_or_querier_token_can_use_no_api_endpoint(world: None, role: str) -> None:
    client = token_client(role)
    answered = {
        (name, method): getattr(client, method)(url, {}, format="json").status_code
        for name, url in API.items()
        for method in ("get", *UNSAFE)
    }
    assert {call: status for call, status in answered.items() if status != 403} == {}


def test_a_viewer_token_writes_only_where_the_api_changes_nothing(world: None) -> None:
    client = token_client("viewer")
    let_through = {
        (name, method)
        for name, url in API.items()
        for method in UNSAFE
        if getattr(client, method)(url, {}, format="json").status_code not in (401, 403, 405)
    }
    assert let_through == VIEWER_WRITES


# Every field a page form saves with, at the values that save: the editor's
# run below shows they do.
def _saving_post() -> dict[str, str]:
    settings_row = selectors.settings_get()
    version = str(selectors.config_version_get())
    return {
        "action": "save",
        "confirm": "yes",
        "reviewed": "yes",
        "version": str(settings_row.version),
        "seen_version": version,
        "tenant_id": "newcomer",
        "layout": "component-first",
        "running": selectors.queue_config_get().layout,
        "message": "from the sweep",
        "max_queriers_per_tenant": "4",
    }


def _post_every_page(client: Client) -> None:
    for name, url in PAGES.items():
        if name not in PUBLIC_PAGES:
            client.post(url, _saving_post())


def test_a_viewer_posting_every_page_changes_nothing(world: None, viewer: User) -> None:
    client = Client()
    client.force_login(viewer)
    before = list(ConfigRevision.objects.values_list("pk", flat=True))
    _post_every_page(client)
    assert list(ConfigRevision.objects.values_list("pk", flat=True)) == before


def test_the_same_posts_by_an_editor_do_change_the_config(world: None, editor: User) -> None:
    client = Client()
    client.force_login(editor)
    before = ConfigRevision.objects.count()
    _post_every_page(client)
    assert ConfigRevision.objects.count() > before
