"""What the tenant form posts is saved as typed (spaces in a regex, numbers in exponent
form), and its "+" buttons stop where a save would refuse."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from api.store import services
from api.store.models import Tenant
from dashboard.forms import EditorAction, apply_action, editor_model, tenant_config_from_post
from scheduler_core.validation import MAX_ATTRIBUTES_PER_PRIORITY, MAX_PRIORITIES
from tests.dashboard.saving import confirm
from tests.tenant_form_inputs import inputs

pytestmark = pytest.mark.django_db

URL = "/tenants/acme/"
ATTR = "query_priority.priorities[0].query_attributes[0]"


def _store(config: dict[str, Any]) -> Tenant:
    return services.tenant_put(
        tenant_id="acme", config=config, expected_version=None, author=None, source="cli"
    )


def _rule(**attribute: Any) -> dict[str, Any]:
    return {
        "query_priority": {
            "enabled": True,
            "default_priority": 0,
            "priorities": [{"priority": 1, "query_attributes": [attribute]}],
        }
    }


@pytest.mark.parametrize("key", ["regex", "user_agent_regex", "dashboard_uid", "panel_id"])
def test_an_attribute_text_keeps_its_spaces(key: str) -> None:
    posted = tenant_config_from_post({f"{ATTR}.{key}": " by (job) "})
    assert posted["query_priority"]["priorities"][0]["query_attributes"] == [{key: " by (job) "}]


def test_a_text_of_spaces_alone_is_kept_and_only_an_empty_box_is_blank() -> None:
    # The API stores a regex of blanks; read as blank, the form's next save of
    # that tenant said "no field set" until the operator found and fixed it.
    posted = tenant_config_from_post(
        {f"{ATTR}.regex": "   ", f"{ATTR}.api_type": "query", f"{ATTR}.panel_id": ""}
    )
    assert posted["query_priority"]["priorities"][0]["query_attributes"] == [
        {"regex": "   ", "api_type": "query"}
    ]


def test_saving_untouched_a_tenant_whose_regex_is_blanks_changes_nothing(
    editor_client: Client,
) -> None:
    tenant = _store(_rule(regex=" "))
    page = editor_client.get(URL).content.decode()
    answer = editor_client.post(URL, {**inputs(page), "action": "save"})
    assert 'id="review-nothing"' in answer.content.decode()
    assert Tenant.objects.get(tenant_id="acme").version == tenant.version


def test_a_regex_typed_with_spaces_is_saved_with_them(editor_client: Client) -> None:
    tenant = _store(_rule(regex="up"))
    page = editor_client.get(URL).content.decode()
    typed = " sum\\(ñ\\)€ "
    answer = confirm(editor_client, URL, {**inputs(page), f"{ATTR}.regex": typed})
    assert answer.status_code == 302
    saved = Tenant.objects.get(tenant_id="acme")
    assert saved.version > tenant.version
    assert saved.config["query_priority"]["priorities"][0]["query_attributes"] == [{"regex": typed}]


def test_saving_the_form_untouched_leaves_a_regex_with_spaces_as_it_was(
    editor_client: Client,
) -> None:
    tenant = _store(_rule(regex=" by ", panel_id=" 7"))
    page = editor_client.get(URL).content.decode()
    answer = editor_client.post(URL, {**inputs(page), "action": "save"})
    assert 'id="review-nothing"' in answer.content.decode()
    assert Tenant.objects.get(tenant_id="acme").version == tenant.version


@pytest.mark.parametrize(("typed", "value"), [("1e-05", 1e-05), ("2.5E-3", 0.0025), (".5", 0.5)])
def test_a_number_in_exponent_form_is_read_as_that_number(typed: str, value: float) -> None:
    assert tenant_config_from_post({"max_query_capacity": typed})["max_query_capacity"] == value


def test_a_small_share_saved_through_the_api_saves_again_from_the_form(
    editor_client: Client,
) -> None:
    """The box shows 0.00001 as Python writes it, "1e-05"; posted back, that was refused."""
    tenant = _store({**_rule(regex="up"), "max_query_capacity": 0.00001})
    page = editor_client.get(URL).content.decode()
    assert inputs(page)["max_query_capacity"] == "1e-05"
    answer = confirm(editor_client, URL, {**inputs(page), "max_queriers_per_tenant": "4"})
    assert answer.status_code == 302, answer.content.decode()
    saved = Tenant.objects.get(tenant_id="acme")
    assert saved.version > tenant.version
    assert saved.config["max_query_capacity"] == 0.00001
    assert saved.config["max_queriers_per_tenant"] == 4


def test_the_plus_buttons_stop_at_the_limits_a_save_enforces(editor_client: Client) -> None:
    full = [{"regex": f"r{n}"} for n in range(MAX_ATTRIBUTES_PER_PRIORITY)]
    config = _rule(regex="r")
    config["query_priority"]["priorities"][0]["query_attributes"] = full
    config["query_rejection"] = {"enabled": True, "query_attributes": full}
    _store(config)
    page = editor_client.get(URL).content.decode()
    assert 'value="add-attr:0"' not in page and 'value="add-reject-attr"' not in page
    assert "A rule holds at most 50 attributes." in page
    assert "Rejection holds at most 50 attributes." in page
    assert 'value="add-rule"' in page
    # A stale page's "+" (or a hand-made post) adds nothing either.
    for action in ("add-attr:0", "add-reject-attr"):
        answer = editor_client.post(URL, {**inputs(page), "action": action}).content.decode()
        assert "priorities[0].query_attributes[49]" in answer
        assert "rejection.query_attributes[49]" in answer
        assert ".query_attributes[50]" not in answer


def test_rules_stop_at_the_limit_too() -> None:
    draft: dict[str, Any] = {"query_priority": {"priorities": [{}] * (MAX_PRIORITIES - 1)}}
    apply_action(draft, EditorAction("add-rule"))
    apply_action(draft, EditorAction("add-rule"))
    assert len(draft["query_priority"]["priorities"]) == MAX_PRIORITIES
    assert editor_model(draft, [])["rules_full"]
