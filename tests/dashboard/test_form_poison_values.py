"""Poison values in the pages' forms and query strings: an answer, never a 500.

Texts of thousands of digits (past what int() converts), digits `isdigit`
accepts but int() refuses ("²"), and a form naming both a field and a
sub-field of it; each once reached an exception.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

HUGE = "9" * 5000
RULE = "query_priority.priorities[0]"


@pytest.mark.parametrize(
    "fields",
    [
        {"max_queriers_per_tenant": HUGE},
        {"query_priority.default_priority": HUGE},
        {f"{RULE}.priority": HUGE},
        {f"query_priority.priorities[{HUGE}].priority": "1"},
        {f"{RULE}.priority": "1", "action": "remove-rule:\u00b2"},
        {f"{RULE}.priority": "1", "action": f"remove-rule:{HUGE}"},
        {
            f"{RULE}.priority": "1",
            f"{RULE}.query_attributes[0].time_window": "5m",
            f"{RULE}.query_attributes[0].time_window.start": "1h",
        },
        {"version": "\u00b2"},
    ],
    ids=[
        "huge limit",
        "huge default",
        "huge priority",
        "huge index",
        "superscript action",
        "huge action",
        "field and sub-field",
        "superscript version",
    ],
)
@pytest.mark.parametrize("url", ["/tenants/new/", "/tenants/t1/"])
def test_a_poisoned_tenant_form_is_answered_not_a_server_error(
    editor_client: Client, url: str, fields: dict[str, Any]
) -> None:
    response = editor_client.post(url, {"tenant_id": "t1", **fields})
    assert response.status_code < 500


def test_a_huge_number_in_a_form_field_is_named_as_that_fields_error(
    editor_client: Client,
) -> None:
    response = editor_client.post(
        "/tenants/new/", {"tenant_id": "t1", "max_queriers_per_tenant": HUGE}
    )
    assert response.status_code < 500
    assert b"must be an integer" in response.content


@pytest.mark.parametrize(
    "field", ["max_outstanding_requests_per_tenant", "max_queue_hierarchy_levels"]
)
def test_a_huge_setting_is_answered_not_a_server_error(editor_client: Client, field: str) -> None:
    assert editor_client.post("/settings/", {field: HUGE}).status_code < 500


@pytest.mark.parametrize(
    "url",
    [
        f"/?page={HUGE}",
        "/?page=\u00b2",
        f"/history/compare/?from={HUGE}&to=1",
        "/history/compare/?from=\u00b2&to=1",
    ],
)
def test_a_poisoned_query_string_is_answered_not_a_server_error(
    editor_client: Client, url: str
) -> None:
    assert editor_client.get(url).status_code < 500
