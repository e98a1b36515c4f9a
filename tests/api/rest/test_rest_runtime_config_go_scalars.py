"""`runtime-config/` reads YAML scalars as Cortex v1.15.3's yaml.v2 does, and its export
reads back to the same values (`api.store.yaml_scalars`)."""

from __future__ import annotations

from api.rest.content import load_yaml
from api.store.models import Tenant

URL = "/api/v1/runtime-config/"

# Tenant IDs yaml.v2 would resolve as a boolean or a number, and values in
# the forms PyYAML read as text but Cortex reads as numbers and booleans.
GO_FORMS = """\
overrides:
  yes:
    max_queriers_per_tenant: 1e3
  1e3:
    max_outstanding_requests_per_tenant: 0o17
  0o17:
    max_queriers_per_tenant: 0X1F
  y:
    query_priority:
      enabled: Y
      default_priority: 1.
      priorities:
        - priority: 08
          reserved_queriers: +.5
          query_attributes:
            - regex: 1e3
              panel_id: 0o17
"""

STORED = {
    "yes": {"max_queriers_per_tenant": 1000},
    "1e3": {"max_outstanding_requests_per_tenant": 15},
    "0o17": {"max_queriers_per_tenant": 31},
    "y": {
        "query_priority": {
            "enabled": True,
            "default_priority": 1,
            "priorities": [
                {
                    "priority": 8,
                    "reserved_queriers": 0.5,
                    "query_attributes": [{"regex": "1e3", "panel_id": "0o17"}],
                }
            ],
        }
    },
}


def _put(client, text: str):
    return client.put(URL, text, content_type="application/yaml", HTTP_IF_MATCH="*")


def test_a_file_in_forms_only_cortex_read_imports_with_cortexs_values(editor_api):
    response = _put(editor_api, GO_FORMS)
    assert response.status_code == 200, response.content
    assert {t.tenant_id: t.config for t in Tenant.objects.all()} == STORED


def test_the_export_of_such_a_file_reads_back_to_the_same_tenants_and_values(editor_api):
    _put(editor_api, GO_FORMS)
    exported = editor_api.get(URL)
    assert load_yaml(exported.content) == {"overrides": STORED}
    again = editor_api.put(
        URL, exported.content, content_type="application/yaml", HTTP_IF_MATCH=exported["ETag"]
    )
    assert again.status_code == 200, again.content
    assert again.json()["applied"] is False
    assert sorted(again.json()["unchanged"]) == sorted(STORED)


def test_a_value_cortex_refuses_for_its_field_is_refused_naming_it_and_nothing_is_stored(
    editor_api,
):
    # yaml.v2: `1` is an !!int, which Go cannot unmarshal into a bool; `1e400`
    # overflows, so it is the text "1e400".
    text = (
        "overrides:\n  yes:\n    max_queriers_per_tenant: 1e400\n"
        "    query_priority:\n      enabled: 1\n"
    )
    response = _put(editor_api, text)
    assert response.status_code == 400, response.content
    assert response.json()["overrides"]["yes"] == {
        "max_queriers_per_tenant": ["must be an integer, got '1e400'"],
        "query_priority": {"enabled": ["must be true or false, got 1"]},
    }
    assert not Tenant.objects.exists()
