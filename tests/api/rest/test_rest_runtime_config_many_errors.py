"""`runtime-config/` with many bad tenants: answered at once, capped, honest about the cap."""

from __future__ import annotations

import pytest

from api.store.models import Tenant

URL = "/api/v1/runtime-config/"


def _bad_file(tenants: int) -> str:
    lines = ["overrides:"]
    for i in range(tenants):
        # Dotted IDs: the answer must still keep each one whole.
        lines += [f"  team.{i}:", "    max_queriers_per_tenant: nope"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("dry_run", [False, True], ids=["import", "dry_run"])
def test_a_file_of_many_bad_tenants_is_answered_with_the_first_thousand_and_a_count(
    editor_api, dry_run
):
    url = URL + ("?dry_run=1" if dry_run else "")
    response = editor_api.put(url, _bad_file(1500), content_type="application/yaml")
    assert response.status_code == 400
    body = response.json()
    assert len(body["overrides"]) == 1000
    assert "max_queriers_per_tenant" in body["overrides"]["team.0"]
    assert body["non_field_errors"] == [
        "500 more errors were not listed (an answer lists the first 1000); "
        "fix these and send it again to see the rest"
    ]
    assert not Tenant.objects.exists()
