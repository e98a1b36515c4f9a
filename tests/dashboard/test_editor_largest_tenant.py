"""The largest tenant the validator allows can be edited and saved in its own editor.

Every box of the form is a field of its post: 100 rules of 50 attributes
post some 55,000, past Django's default limit of 1,000 (80 rules of one
attribute already failed with a bare "400 Bad request", the draft lost).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.test import Client

from api.store import services
from api.store.models import Tenant
from dashboard.views_tenants import _attribute_count
from scheduler_core.validation import MAX_ATTRIBUTES_PER_PRIORITY, MAX_PRIORITIES
from tests.dashboard.saving import confirm
from tests.tenant_form_inputs import inputs

pytestmark = pytest.mark.django_db

URL = "/tenants/big/"


def _store(rules: int, attributes: int) -> Tenant:
    Tenant.objects.filter(tenant_id="big").delete()
    priorities = [
        {
            "priority": i + 1,
            "query_attributes": [{"regex": f"q{i}_{j}"} for j in range(attributes)],
        }
        for i in range(rules)
    ]
    config: dict[str, Any] = {
        "query_priority": {"enabled": True, "default_priority": 0, "priorities": priorities}
    }
    return services.tenant_put(
        tenant_id="big", config=config, expected_version=None, author=None, source="cli"
    )


def _post(client: Client, rules: int, attributes: int) -> tuple[int, int]:
    """The editor's post for a tenant of that size: its fields and its bytes."""
    _store(rules, attributes)
    fields = inputs(client.get(URL).content.decode())
    return len(fields), len(urlencode(fields))


def test_the_largest_tenants_form_posts_fewer_fields_than_the_server_reads(
    editor_client: Client,
) -> None:
    # The form's fields grow by a rule's and an attribute's own (rendering the
    # largest tenant itself takes seconds): measured, then counted up.
    one = _post(editor_client, 1, 1)
    per_rule = [b - a for a, b in zip(one, _post(editor_client, 2, 1), strict=True)]
    per_attribute = [b - a for a, b in zip(one, _post(editor_client, 1, 2), strict=True)]
    fields, size = (
        base
        + (MAX_PRIORITIES - 1) * rule
        + MAX_PRIORITIES * (MAX_ATTRIBUTES_PER_PRIORITY - 1) * attribute
        for base, rule, attribute in zip(one, per_rule, per_attribute, strict=True)
    )
    assert per_attribute[0] >= 10  # the measure measured something
    # The review's confirming post carries the same fields and its token; the
    # boxes' own text (a regex each, up to its limit) comes on top of the names.
    assert fields + 10 <= settings.DATA_UPLOAD_MAX_NUMBER_FIELDS, fields
    assert 2 * size <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE, size


def test_a_tenant_of_a_hundred_rules_saves_from_the_form(editor_client: Client) -> None:
    tenant = _store(MAX_PRIORITIES, 1)
    page = editor_client.get(URL).content.decode()
    rule = "query_priority.priorities[0].query_attributes[0].regex"
    answer = confirm(editor_client, URL, {**inputs(page), rule: "changed"})
    assert answer.status_code == 302, answer.content[:300]
    saved = Tenant.objects.get(tenant_id="big")
    assert saved.version > tenant.version
    assert saved.config["query_priority"]["priorities"][0]["query_attributes"] == [
        {"regex": "changed"}
    ]


def test_a_tenant_past_the_forms_size_opens_in_the_yaml_view_and_the_form_is_a_button_away(
    editor_client: Client,
) -> None:
    _store(MAX_PRIORITIES, 6)  # 600 attributes: some 6,600 boxes
    page = editor_client.get(URL).content.decode()
    assert "This tenant has 600 query attributes" in page
    assert 'aria-pressed="true" id="view-yaml"' in page
    assert "query_priority.priorities[0].query_attributes[0].regex" not in page
    _store(MAX_PRIORITIES, 5)  # 500: still the form
    page = editor_client.get(URL).content.decode()
    assert 'aria-pressed="true" id="view-form"' in page
    assert "query_priority.priorities[0].query_attributes[0].regex" in page
    assert "query attributes, about" not in page


@pytest.mark.parametrize(
    ("config", "count"),
    [
        ({}, 0),
        ({"query_priority": {"priorities": 5}}, 0),  # stored before validation tightened
        ({"query_priority": {"priorities": [7, {"query_attributes": "x"}]}}, 0),
        (
            {
                "query_priority": {"priorities": [{"query_attributes": [{}, {}]}]},
                "query_rejection": {"query_attributes": [{}]},
            },
            3,
        ),
    ],
)
def test_attributes_are_counted_in_any_stored_shape(config: dict[str, Any], count: int) -> None:
    assert _attribute_count(config) == count
