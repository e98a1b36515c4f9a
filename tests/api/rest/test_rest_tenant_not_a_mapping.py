"""A stored tenant row that holds no mapping (an old release's or a hand edit's).

The scheduler runs such a tenant under the default limits
(`selectors.tenant_limits_stored`); the export, rule-stats and dry run
must answer for it too, not 500.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from api.store.models import Tenant

NOT_MAPPINGS = [["x"], "text", 5]


@pytest.fixture
def broken(editor_api: Any) -> str:
    for tenant_id in ("broken", "fine"):
        assert (
            editor_api.put(
                f"/api/v1/tenants/{tenant_id}/", {"max_queriers_per_tenant": 2}, format="json"
            ).status_code
            == 201
        )
    return "broken"


def _store(tenant_id: str, value: Any) -> None:
    Tenant.objects.filter(tenant_id=tenant_id).update(config=value)


@pytest.mark.parametrize("stored", NOT_MAPPINGS)
@pytest.mark.parametrize("query", ["", "?format=json", "?cortex_version=1.17"])
def test_the_runtime_config_export_writes_a_non_mapping_block_as_stored(
    viewer_api: Any, broken: str, stored: Any, query: str
) -> None:
    _store(broken, stored)
    response = viewer_api.get(f"/api/v1/runtime-config/{query}")
    assert response.status_code == 200, response.content
    exported = response.json() if "json" in query else yaml.safe_load(response.content)
    assert exported["overrides"][broken] == stored
    assert exported["overrides"]["fine"] == {"max_queriers_per_tenant": 2}


@pytest.mark.parametrize("stored", NOT_MAPPINGS)
def test_rule_stats_of_a_non_mapping_block_count_under_the_defaults(
    viewer_api: Any, broken: str, stored: Any
) -> None:
    _store(broken, stored)
    response = viewer_api.get(f"/api/v1/tenants/{broken}/rule-stats/")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["tenant"] == broken
    assert body["version"] == Tenant.objects.get(tenant_id=broken).version
    assert body["priorities"] == [] and body["rejection"] == []


@pytest.mark.parametrize("stored", NOT_MAPPINGS)
def test_a_dry_run_over_a_non_mapping_block_compares_with_the_defaults(
    editor_api: Any, broken: str, stored: Any
) -> None:
    _store(broken, stored)
    response = editor_api.post(
        f"/api/v1/tenants/{broken}/dry-run/", {"max_queriers_per_tenant": 1}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["sample"] == 0
    assert Tenant.objects.get(tenant_id=broken).config == stored
