"""The Simulate page: open to viewers, pre-filled from the editor and settings unsaved forms."""

from __future__ import annotations

import json
from typing import Any

from django.test import Client

from api.store import services
from api.store.models import ConfigRevision
from tests.tenant_form_inputs import inputs


def _script(response: Any, script_id: str) -> dict[str, Any]:
    html = response.content.decode()
    opening = f'<script id="{script_id}" type="application/json">'
    start = html.index(opening) + len(opening)
    return dict(json.loads(html[start : html.index("</script>", start)]))


def _proposal(response: Any) -> dict[str, Any]:
    return _script(response, "sim-proposal")


def test_a_viewer_opens_the_page_with_every_workload_and_the_chart_library(viewer_client):
    response = viewer_client.get("/simulate/")
    assert response.status_code == 200
    html = response.content.decode()
    for option in ("recent:300", "recent:900", "recent:3600", "scenario:cortex-seed"):
        assert f'value="{option}"' in html
    assert "scenario:mimir-slow-consumer" in html
    assert "dashboard/simulate.js" in html and "vendor/uplot.css" in html
    assert 'data-url="/api/v1/simulate/"' in html
    assert _proposal(response) == {"settings": {}, "tenants": {}}


def test_the_tenant_editors_unsaved_form_arrives_as_the_proposed_tenant_block(editor_client):
    form = {
        "simulate_from": "tenant:team-b",
        "max_queriers_per_tenant": "3",
        "query_priority.enabled": "on",
        "query_priority.default_priority": "0",
        "query_priority.priorities[0].priority": "3",
        "query_priority.priorities[0].reserved_queriers": "1",
        "query_priority.priorities[0].query_attributes[0].regex": "special",
    }
    revisions = ConfigRevision.objects.count()
    response = editor_client.post("/simulate/", form)
    assert response.status_code == 200
    proposal = _proposal(response)
    block = proposal["tenants"]["team-b"]
    assert block["max_queriers_per_tenant"] == 3
    rule = block["query_priority"]["priorities"][0]
    assert rule["priority"] == 3 and rule["reserved_queriers"] == 1
    assert rule["query_attributes"][0]["regex"] == "special"
    assert "the unsaved editor of tenant team-b" in response.content.decode()
    assert ConfigRevision.objects.count() == revisions


def test_the_yaml_views_unsaved_draft_arrives_as_the_proposed_tenant_block(editor_client):
    yaml = "max_queriers_per_tenant: 2\nquery_priority:\n  enabled: true\n"
    post = {"simulate_from": "tenant:team-b", "view": "yaml", "yaml": yaml}
    proposal = _proposal(editor_client.post("/simulate/", post))
    assert proposal["tenants"]["team-b"] == {
        "max_queriers_per_tenant": 2,
        "query_priority": {"enabled": True},
    }


def test_yaml_that_is_no_tenant_block_carries_nothing_and_says_why(editor_client):
    post = {"simulate_from": "tenant:team-b", "view": "yaml", "yaml": "- a list"}
    response = editor_client.post("/simulate/", post)
    assert _proposal(response)["tenants"] == {}
    assert "its YAML is no tenant block" in response.content.decode()


def test_settings_carry_only_what_differs_from_the_running_ones(viewer_client):
    form = {
        "simulate_from": "settings",
        "layout": "component-first",
        "component_selection": "querier-worker-priority",
        "max_outstanding_requests_per_tenant": "100",
    }
    proposal = _proposal(viewer_client.post("/simulate/", form))
    assert proposal == {
        "settings": {"layout": "component-first", "component_selection": "querier-worker-priority"},
        "tenants": {},
    }


def test_the_editor_and_the_settings_page_offer_the_simulation(editor_client, rules):
    services.tenant_put(
        tenant_id="t1", config=rules, expected_version=None, author=None, source="cli"
    )
    editor = editor_client.get("/tenants/t1/").content.decode()
    assert 'id="simulate-change"' in editor and 'formaction="/simulate/"' in editor
    settings = editor_client.get("/settings/").content.decode()
    assert "Simulate switching layout / component selection" in settings


def test_anonymous_visitors_are_sent_to_log_in():
    response = Client().get("/simulate/")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_the_live_side_shows_the_saved_block_of_each_tenant_the_proposal_changes(
    editor_client: Client, rules: dict[str, Any]
) -> None:
    services.tenant_put(
        tenant_id="team-b", config=rules, expected_version=None, author=None, source="cli"
    )
    carried = {"simulate_from": "tenant:team-b", "max_queriers_per_tenant": "7"}
    live = _script(editor_client.post("/simulate/", carried), "sim-live")
    assert live["tenants"] == {"team-b": rules}
    assert live["settings"]["layout"] == "tenant-first"
    fresh = _script(
        editor_client.post("/simulate/", {"simulate_from": "tenant:new-one"}), "sim-live"
    )
    assert fresh["tenants"] == {}


def test_a_viewers_read_only_editor_offers_to_simulate_a_change_to_the_tenant(
    viewer_client: Client, editor_client: Client, rules: dict[str, Any]
) -> None:
    services.tenant_put(
        tenant_id="t1", config=rules, expected_version=None, author=None, source="cli"
    )
    viewer = viewer_client.get("/tenants/t1/").content.decode()
    # A viewer has no unsaved change to simulate: the button says what it carries.
    assert "Simulate a change to this tenant" in viewer and "Simulate this change" not in viewer
    assert "with this tenant's saved block as the proposal" in viewer
    editor = editor_client.get("/tenants/t1/").content.decode()
    assert "Simulate this change" in editor and "Simulate a change to this tenant" not in editor


def test_the_saved_block_carried_unchanged_is_called_so_and_a_changed_one_unsaved(
    viewer_client: Client, rules: dict[str, Any]
) -> None:
    services.tenant_put(
        tenant_id="t1", config=rules, expected_version=None, author=None, source="cli"
    )
    # What the viewer's read-only form posts, as Chromium builds it.
    page = viewer_client.get("/tenants/t1/").content.decode()
    form = {**inputs(page), "simulate_from": "tenant:t1"}
    response = viewer_client.post("/simulate/", form)
    assert _proposal(response)["tenants"] == {"t1": rules}
    assert _script(response, "sim-live")["tenants"] == {"t1": rules}
    page = response.content.decode()
    assert "tenant t1&#x27;s saved block, unchanged: change it under Proposed" in page
    assert "the unsaved editor" not in page
    changed = {**form, "max_queriers_per_tenant": "2"}
    page = viewer_client.post("/simulate/", changed).content.decode()
    assert "the unsaved editor of tenant t1" in page and "saved block, unchanged" not in page


def test_the_page_offers_to_start_the_proposal_from_the_live_backlog_its_own_by_default(
    viewer_client,
):
    html = viewer_client.get("/simulate/").content.decode()
    form = html[html.index('<form id="sim-form"') : html.index("</form>", html.index("sim-form"))]
    field = form[form.index('id="start-from-field"') :]
    field = field[: field.index("</div>")]
    assert '<label for="sim-start-from">Proposed starts from</label>' in field
    # The values are the API's knobs.start_from, the default first and selected.
    assert '<select id="sim-start-from" name="start_from"' in field
    options = field.split("<option")[1:]
    assert [o.split('"')[1] for o in options] == ["proposal", "live"]
    assert "selected" in options[0] and "selected" not in options[1]
    assert "(apply now)" in options[1] and "as if applied long ago" in options[0]
    assert 'id="start-from-help"' in field
