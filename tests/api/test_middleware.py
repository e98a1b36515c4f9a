"""A NUL in a URL is refused with 400 on every view, the REST API and the pages alike.

PostgreSQL cannot hold NUL, so such a request used to answer 500 there
(SQLite just found nothing); `NUL_REQUESTS` is also replayed against a real
Daphne on PostgreSQL (tests/service/test_faults_postgres.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

# (method, path, is the REST API)
NUL_REQUESTS: list[tuple[str, str, bool]] = [
    ("get", "/api/v1/tenants/a%00b/", True),
    ("put", "/api/v1/tenants/a%00b/", True),
    ("patch", "/api/v1/tenants/a%00b/", True),
    ("delete", "/api/v1/tenants/a%00b/", True),
    ("get", "/api/v1/tenants/?search=a%00", True),
    ("get", "/api/v1/revisions/?key=a%00b", True),
    ("get", "/api/v1/revisions/?kind=tenant%00", True),
    ("get", "/api/v1/queue/?search=%00", True),
    ("get", "/tenants/a%00b/", False),
    ("get", "/tenants/?search=a%00", False),
    ("get", "/history/?key=a%00b", False),
    ("get", "/history/?kind=tenant%00", False),
    ("post", "/tenants/a%00b/explain/", False),
    ("post", "/tenants/a%00b/delete/", False),
]


@pytest.fixture
def clients(editor: Any) -> dict[bool, Client]:
    """The REST API by an editor's session, the pages too."""
    client = Client()
    client.force_login(editor)
    return {True: client, False: client}


@pytest.mark.parametrize(("method", "path", "api"), NUL_REQUESTS)
def test_a_nul_in_the_url_is_a_400_before_any_view_runs(
    clients: dict[bool, Client], method: str, path: str, api: bool
) -> None:
    response = getattr(clients[api], method)(path)
    assert response.status_code == 400, (method, path, response.status_code)
    if api:
        assert "NUL" in response.json()["detail"]
    else:
        assert response["Content-Type"].startswith("text/html")


def test_a_url_without_nul_is_served_as_before(clients: dict[bool, Client]) -> None:
    assert clients[True].get("/api/v1/tenants/?search=a").status_code == 200
    assert clients[True].get("/api/v1/tenants/nobody/").status_code == 404
