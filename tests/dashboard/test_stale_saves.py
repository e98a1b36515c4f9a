"""A save refused as stale keeps the draft and says how to see the other change."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from api.store import services
from api.store.models import Tenant
from tests.dashboard.test_views import form

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme(rules: dict[str, Any]) -> Tenant:
    return services.tenant_put(
        tenant_id="acme", config=rules, expected_version=None, author=None, source="cli"
    )


def test_a_stale_save_keeps_the_draft_and_does_not_advise_the_browsers_reload(
    editor_client: Client, acme: Tenant
) -> None:
    """The answer is a POST's: the browser's reload sends the form again, at the
    old version, and is refused again, so "reload to see their change" sent the
    operator round in a circle."""
    services.tenant_patch(
        tenant_id="acme",
        changes={"max_queriers_per_tenant": 1},
        expected_version=None,
        author=None,
        source="api",
    )
    answer = editor_client.post("/tenants/acme/", form(acme.version, "typed-draft"))
    html = answer.content.decode()
    assert answer.status_code == 409
    assert "reload to see" not in html
    assert "open the page again from its link to see their change" in html
    assert 'value="typed-draft"' in html
