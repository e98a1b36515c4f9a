"""The tenant editor's YAML view: in step with the form, pastes, errors by line, the review."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
import yaml
from django.test import Client

from api.store import selectors, services
from api.store.models import ConfigRevision, Tenant
from tests.config_samples import empty_variants, full_sample, leaves
from tests.dashboard.saving import confirm, review_token
from tests.tenant_form_inputs import inputs

pytestmark = pytest.mark.django_db

URL = "/tenants/acme/"
REGEX = "query_priority.priorities[0].query_attributes[0].regex"
# Inputs of the page that are not the draft.
NOT_DRAFT = re.compile(r"^(csrfmiddlewaretoken|version|view|message|action|reviewed|explain_.*)$")


def draft_inputs(page: str) -> dict[str, str]:
    return {k: v for k, v in inputs(page).items() if not NOT_DRAFT.match(k)}


def yaml_text(page: str) -> str:
    found = re.search(r'<textarea id="yaml-source"[^>]*>(.*?)</textarea>', page, re.S)
    assert found, "no YAML view on the page"
    return html.unescape(found.group(1))


def yaml_post(text: str, action: str, version: int | None = None, **extra: str) -> dict[str, Any]:
    data = {"view": "yaml", "yaml": text, "action": action, **extra}
    if version is not None:
        data["version"] = str(version)
    return data


def to_yaml(client: Client, page: str) -> str:
    """Press YAML on a form page: the YAML view's text."""
    answer = client.post(URL, {**inputs(page), "action": "view-yaml"})
    assert answer.status_code == 200
    return answer.content.decode()


def to_form(client: Client, text: str, version: int) -> str:
    answer = client.post(URL, yaml_post(text, "view-form", version))
    assert answer.status_code == 200
    return answer.content.decode()


@pytest.fixture
def acme(rules: dict[str, Any]) -> Tenant:
    return services.tenant_put(
        tenant_id="acme", config=rules, expected_version=None, author=None, source="cli"
    )


def _store(config: dict[str, Any]) -> Tenant:
    Tenant.objects.filter(tenant_id="acme").delete()
    return services.tenant_put(
        tenant_id="acme", config=config, expected_version=None, author=None, source="cli"
    )


def _form_text(value: Any) -> str:
    if value is True:
        return "on"
    return str(value)


def test_form_to_yaml_to_form_is_the_identity_for_every_field_the_validator_knows(
    editor_client: Client,
) -> None:
    sample = full_sample()
    tenant = _store(sample)
    form_page = editor_client.get(URL).content.decode()
    before = draft_inputs(form_page)
    for path, value in leaves(sample):
        if value not in (None, "", False):
            assert before.get(path) == _form_text(value), f"the form does not show {path}"
    text = yaml_text(to_yaml(editor_client, form_page))
    assert text.startswith("acme:\n")
    assert draft_inputs(to_form(editor_client, text, tenant.version)) == before


@pytest.mark.parametrize(
    ("field", "config"),
    empty_variants(full_sample()),
    ids=[n for n, _ in empty_variants(full_sample())],
)
def test_the_round_trip_keeps_empty_and_null_fields_empty(
    editor_client: Client, field: str, config: dict[str, Any]
) -> None:
    tenant = _store(config)
    form_page = editor_client.get(URL).content.decode()
    text = yaml_text(to_yaml(editor_client, form_page))
    assert draft_inputs(to_form(editor_client, text, tenant.version)) == draft_inputs(form_page)


def test_an_edit_in_the_yaml_view_shows_in_the_form(editor_client: Client, acme: Tenant) -> None:
    text = yaml_text(to_yaml(editor_client, editor_client.get(URL).content.decode()))
    edited = text.replace("regex: up", "regex: edited_in_yaml")
    page = to_form(editor_client, edited, acme.version)
    assert draft_inputs(page)[REGEX] == "edited_in_yaml"
    assert selectors.tenant_get(tenant_id="acme").config == acme.config


def test_a_bad_regex_is_shown_at_its_line_in_yaml_and_at_its_field_in_the_form(
    editor_client: Client, acme: Tenant
) -> None:
    text = yaml_text(to_yaml(editor_client, editor_client.get(URL).content.decode()))
    broken = text.replace("regex: up", "regex: (up")
    line = broken.splitlines().index("      - regex: (up") + 1
    page = editor_client.post(URL, yaml_post(broken, "view-yaml", acme.version)).content.decode()
    diagnostics = json.loads(
        re.search(r'id="yaml-diagnostics" type="application/json">(.*?)</script>', page).group(1)
    )
    assert [(d["path"], d["line"]) for d in diagnostics] == [(REGEX, line)]
    assert f'data-line="{line}">line {line}</a>' in page
    form_page = to_form(editor_client, broken, acme.version)
    assert f'id="{REGEX}-err"' in form_page and "RE2 rejects this regex" in form_page


def test_text_that_is_not_yaml_stays_in_the_yaml_view_with_its_line(
    editor_client: Client, acme: Tenant
) -> None:
    text = "acme:\n  query_priority: [\n"
    response = editor_client.post(URL, yaml_post(text, "view-form", acme.version))
    page = response.content.decode()
    assert yaml_text(page) == text
    assert "YAML syntax" in page and 'data-line="3"' in page
    saving = editor_client.post(URL, yaml_post(text, "save", acme.version))
    assert saving.status_code == 400
    assert selectors.tenant_get(tenant_id="acme").config == acme.config


def test_a_pasted_cortex_block_loads_and_names_each_limit_not_used_here(
    editor_client: Client, acme: Tenant
) -> None:
    pasted = (
        "tenant-from-prod:\n"
        "  ingestion_rate: 350000\n"
        "  max_queriers_per_tenant: 6\n"
        "  max_series_per_metric: 0\n"
    )
    page = editor_client.post(URL, yaml_post(pasted, "view-yaml", acme.version)).content.decode()
    notice = re.search(r'id="unused-limits".*?</div>', page, re.S).group(0)
    assert "<code>ingestion_rate</code> (line 2)" in notice
    assert "<code>max_series_per_metric</code> (line 4)" in notice
    assert "tenant <code>tenant-from-prod</code>" in page
    form_page = to_form(editor_client, pasted, acme.version)
    assert draft_inputs(form_page)["max_queriers_per_tenant"] == "6"
    assert "ingestion_rate" in form_page  # still reported after the switch
    saved = confirm(editor_client, URL, yaml_post(pasted, "save", acme.version))
    assert saved.status_code == 302
    assert selectors.tenant_get(tenant_id="acme").config == {"max_queriers_per_tenant": 6}


def test_a_new_tenant_takes_its_id_from_a_pasted_key_line(editor_client: Client) -> None:
    pasted = "fresh-from-paste:\n  max_queriers_per_tenant: 2\n"
    response = confirm(editor_client, "/tenants/new/", yaml_post(pasted, "save"))
    assert response.status_code == 302
    assert selectors.tenant_get(tenant_id="fresh-from-paste").config == {
        "max_queriers_per_tenant": 2
    }


def test_the_first_save_shows_the_yaml_diff_and_saves_nothing(
    editor_client: Client, acme: Tenant
) -> None:
    text = yaml_text(to_yaml(editor_client, editor_client.get(URL).content.decode()))
    edited = text.replace("max_queriers_per_tenant: 3", "max_queriers_per_tenant: 4")
    data = yaml_post(edited, "save", acme.version, explain_query="up", explain_api_type="query")
    first = editor_client.post(URL, data)
    page = first.content.decode()
    assert first.status_code == 200 and 'id="review"' in page
    assert '<div class="yl removed"><span class="ln">2</span><span class="ln"></span>' in page
    assert "max_queriers_per_tenant: <mark>3</mark>" in page
    assert "max_queriers_per_tenant: <mark>4</mark>" in page
    assert (
        '1 changed field: <code title="max_queriers_per_tenant">max_queriers_per_tenant</code>'
        in page
    )
    assert 'id="verdict-draft">5<' in page and 'id="verdict-saved">5<' in page
    assert ConfigRevision.objects.count() == 1
    token = review_token(page)
    saved = editor_client.post(URL, {**data, "reviewed": token})
    assert saved.status_code == 302
    assert selectors.tenant_get(tenant_id="acme").config["max_queriers_per_tenant"] == 4


def test_a_draft_changed_after_its_review_is_reviewed_again_not_saved(
    editor_client: Client, acme: Tenant
) -> None:
    text = yaml_text(to_yaml(editor_client, editor_client.get(URL).content.decode()))
    first = editor_client.post(URL, yaml_post(text.replace(": 3", ": 4"), "save", acme.version))
    token = review_token(first.content.decode())
    other = yaml_post(text.replace(": 3", ": 9"), "save", acme.version, reviewed=token or "")
    again = editor_client.post(URL, other)
    assert again.status_code == 200 and 'id="review"' in again.content.decode()
    assert selectors.tenant_get(tenant_id="acme").version == acme.version


def test_saving_the_saved_config_says_there_is_nothing_to_save(
    editor_client: Client, acme: Tenant
) -> None:
    page = editor_client.get(URL).content.decode()
    answer = editor_client.post(URL, {**inputs(page), "action": "save"}).content.decode()
    assert 'id="review-nothing"' in answer and review_token(answer) is None


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"max_queriers_per_tenant": 2},
        {"query_rejection": {"enabled": False}},
        {
            "query_priority": {
                "enabled": True,
                "priorities": [
                    {"priority": 1, "query_attributes": [{"regex": "", "api_type": "query"}]}
                ],
            }
        },
    ],
    ids=["empty", "limits only", "rejection only", "empty regex saved by the API"],
)
def test_saving_an_untouched_tenant_says_there_is_nothing_to_save(
    editor_client: Client, config: dict[str, Any]
) -> None:
    """It proposed adding a disabled `query_priority` block, or removing a saved empty regex."""
    _store(config)
    page = editor_client.get(URL).content.decode()
    answer = editor_client.post(URL, {**inputs(page), "action": "save"}).content.decode()
    assert 'id="review-nothing"' in answer and review_token(answer) is None


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("acme:\n  query_priorty:\n    enabled: false\n", "did you mean query_priority?"),
        ("acme: {}\nother:\n  max_queriers_per_tenant: 1\n", "paste one tenant&#x27;s block"),
    ],
    ids=["misspelt field", "two tenants"],
)
def test_a_yaml_save_that_would_have_wiped_the_rules_is_refused_saying_why(
    editor_client: Client, acme: Tenant, text: str, words: str
) -> None:
    answer = editor_client.post(URL, yaml_post(text, "save", acme.version))
    assert answer.status_code == 400
    assert words in answer.content.decode()
    assert selectors.tenant_get(tenant_id="acme").version == acme.version


def test_the_live_check_answers_problems_and_unused_limits_by_line(
    viewer_client: Client,
) -> None:
    text = "t:\n  ingestion_rate: 1\n  max_queriers_per_tenant: -1\n"
    body = viewer_client.post("/yaml-check/", {"yaml": text}).json()
    assert body["ignored"] == [{"name": "ingestion_rate", "line": 2}]
    assert [(e["path"], e["line"]) for e in body["errors"]] == [("max_queriers_per_tenant", 3)]
    assert body["pasted_tenant"] == "t"


def test_a_viewer_may_read_the_yaml_view_but_not_save_from_it(
    viewer_client: Client, acme: Tenant
) -> None:
    page = viewer_client.post(URL, {"action": "view-yaml"}).content.decode()
    assert "readonly" in re.search(r'<textarea id="yaml-source"[^>]*>', page).group(0)
    text = yaml_text(page)
    refused = viewer_client.post(URL, yaml_post(text.replace(": 3", ": 4"), "save", acme.version))
    assert refused.status_code == 403


def test_the_settings_page_shows_the_yaml_diff_of_the_settings_before_saving(
    editor_client: Client,
) -> None:
    version = selectors.settings_get().version
    data = {"version": version, "priority_aging": "15s"}
    first = editor_client.post("/settings/", data)
    page = first.content.decode()
    assert first.status_code == 200 and 'id="review-diff"' in page
    assert "priority_aging: <mark>" in page and "1 setting changes" in page
    assert selectors.queue_config_get().priority_aging_seconds == 0
    assert confirm(editor_client, "/settings/", data).status_code == 302
    assert selectors.queue_config_get().priority_aging_seconds == 15


def test_the_yaml_view_of_an_untouched_form_shows_the_block_as_saved(
    editor_client: Client,
) -> None:
    # The form posts every box, query_priority's too: the YAML showed a
    # disabled, empty query_priority the block never had, and Save then
    # reported it as left out.
    saved = {"max_query_capacity": 1e-05, "max_queriers_per_tenant": 0}
    _store(saved)
    text = yaml_text(to_yaml(editor_client, editor_client.get(URL).content.decode()))
    assert "query_priority" not in text
    assert yaml.safe_load(text) == {"acme": saved}
