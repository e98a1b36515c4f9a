"""Dashboard pages: login, roles, editor validation and versions, explain, history, settings."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.utils.html import escape

from api.store import selectors, services
from api.store.models import ConfigRevision, Tenant
from dashboard.forms import SETTINGS_FIELDS
from dashboard.settings_text import SETTINGS_TEXT
from tests.dashboard.saving import confirm

pytestmark = pytest.mark.django_db

REGEX = "query_priority.priorities[0].query_attributes[0].regex"


def form(version: int | None, regex: str, **extra: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "action": "save",
        "max_queriers_per_tenant": "3",
        "query_priority.enabled": "on",
        "query_priority.default_priority": "1",
        "query_priority.priorities[0].priority": "5",
        REGEX: regex,
    }
    if version is not None:
        data["version"] = str(version)
    data.update(extra)
    return data


@pytest.fixture
def acme(rules: dict[str, Any]) -> Tenant:
    return services.tenant_put(
        tenant_id="acme", config=rules, expected_version=None, author=None, source="cli"
    )


@pytest.mark.parametrize("url", ["/", "/tenants/", "/tenants/acme/", "/history/", "/settings/"])
def test_every_page_needs_login(client: Client, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 302 and response.url.startswith("/login/")


def test_login_page_logs_in_and_lands_on_the_inspector(client: Client, viewer: Any) -> None:
    response = client.post("/login/", {"username": "victor", "password": "pw-victor-123"})
    assert response.status_code == 302 and response.url == "/"
    page = client.get("/")
    assert b'role="tree"' in page.content and b"victor" in page.content


def test_logging_out_says_so_and_a_refused_password_starts_again_in_the_password(
    client: Client, viewer: Any
) -> None:
    client.post("/login/", {"username": "victor", "password": "pw-victor-123"})
    out = client.post("/logout/", follow=True)
    assert out.redirect_chain[-1][0] == "/login/?logged_out=1"
    assert "You are logged out." in out.content.decode()
    assert "You are logged out." not in client.get("/login/").content.decode()
    refused = client.post("/login/", {"username": "victor", "password": "wrong"}).content.decode()
    assert 'type="password" autocomplete="current-password" autofocus' in refused
    assert 'autocomplete="username" autofocus' not in refused


def test_viewer_sees_pages_but_cannot_save(viewer_client: Client, acme: Tenant) -> None:
    for url in ["/", "/tenants/", "/tenants/acme/", "/history/", "/settings/"]:
        assert viewer_client.get(url).status_code == 200
    response = viewer_client.post("/tenants/acme/", form(acme.version, "down"))
    assert response.status_code == 403
    assert selectors.tenant_get(tenant_id="acme").config == acme.config


def test_bad_regex_is_shown_on_its_field_and_nothing_is_saved(
    editor_client: Client, acme: Tenant
) -> None:
    response = editor_client.post("/tenants/acme/", form(acme.version, "(unclosed"))
    assert response.status_code == 400
    html = response.content.decode()
    assert f'id="{REGEX}-err"' in html and "RE2 rejects this regex" in html
    assert f'name="{REGEX}" value="(unclosed" aria-invalid="true"' in html
    assert ConfigRevision.objects.count() == 1


def test_good_save_creates_a_revision_by_the_editor(editor_client: Client, acme: Tenant) -> None:
    response = confirm(editor_client, "/tenants/acme/", form(acme.version, "down", message="tune"))
    assert response.status_code == 302
    saved = selectors.tenant_get(tenant_id="acme")
    assert saved.config["query_priority"]["priorities"][0]["query_attributes"] == [
        {"regex": "down"}
    ]
    revision = ConfigRevision.objects.first()
    assert revision is not None
    assert (revision.author_name, revision.source, revision.message) == ("erin", "ui", "tune")


def test_stale_edit_is_refused_with_a_clear_message(editor_client: Client, acme: Tenant) -> None:
    services.tenant_patch(
        tenant_id="acme",
        changes={"max_queriers_per_tenant": 1},
        expected_version=None,
        author=None,
        source="api",
    )
    response = editor_client.post("/tenants/acme/", form(acme.version, "typed-draft"), follow=True)
    html = response.content.decode()
    assert response.status_code == 409
    assert "Someone saved a change since you loaded this page" in html
    assert selectors.tenant_get(tenant_id="acme").config["max_queriers_per_tenant"] == 1
    # The draft is kept. The answer is a POST's: the browser's reload sends
    # the form again at the old version, refused again, so "reload to see
    # their change" sent the operator round in a circle.
    assert 'value="typed-draft"' in html
    assert "reload to see" not in html
    assert "open the page again from its link to see their change" in html


def test_structural_buttons_edit_the_draft_without_saving(
    editor_client: Client, acme: Tenant
) -> None:
    response = editor_client.post("/tenants/acme/", form(acme.version, "up", action="add-rule"))
    html = response.content.decode()
    assert 'name="query_priority.priorities[1].priority"' in html
    assert selectors.tenant_get(tenant_id="acme").version == acme.version


def test_explain_uses_the_unsaved_draft(editor_client: Client, acme: Tenant) -> None:
    data = form(None, "rate", explain_query="sum(rate(x[5m]))", explain_api_type="query")
    response = editor_client.post("/tenants/acme/explain/", data)
    html = response.content.decode()
    assert '<dd id="explain-priority" class="big">5</dd>' in html
    assert "rule 1, attribute 1" in html
    data[REGEX] = "nomatch"
    html = editor_client.post("/tenants/acme/explain/", data).content.decode()
    assert '<dd id="explain-priority" class="big">1</dd>' in html
    assert "not found in query" in html


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"explain_step": "5x"}, "Step: "),
        ({"explain_start": "soon"}, "Start (ago): "),
        ({"explain_end": "-"}, "End (ago): "),
        ({"explain_query": "  "}, "Type a query to explain."),
    ],
)
def test_explain_names_the_field_it_cannot_read(
    editor_client: Client, acme: Tenant, fields: dict[str, str], problem: str
) -> None:
    data = {**form(None, "rate", explain_query="up", explain_api_type="query_range"), **fields}
    html = editor_client.post("/tenants/acme/explain/", data).content.decode()
    assert f'<p class="error">{problem}' in html


def test_explain_says_when_a_query_does_not_parse_and_reads_whole_seconds(
    editor_client: Client, acme: Tenant
) -> None:
    data = form(None, "rate", explain_query="sum(rate(foo[5m]", explain_api_type="query")
    html = editor_client.post("/tenants/acme/explain/", data).content.decode()
    assert 'id="explain-unparsed"' in html
    data = form(None, "rate", explain_query="up", explain_start="1h", explain_end="0s")
    html = editor_client.post("/tenants/acme/explain/", {**data, "explain_step": "30s"})
    text = html.content.decode()
    assert 'id="explain-unparsed"' not in text
    assert "ms ago" not in text


def test_new_tenant_is_created_and_a_duplicate_is_refused(
    editor_client: Client, acme: Tenant
) -> None:
    response = confirm(editor_client, "/tenants/new/", form(None, "x", tenant_id="fresh"))
    assert response.status_code == 302
    assert Tenant.objects.filter(tenant_id="fresh").exists()
    again = editor_client.post("/tenants/new/", form(None, "x", tenant_id="acme"))
    assert again.status_code == 409


def test_saving_a_tenant_deleted_meanwhile_says_it_was_deleted(
    editor_client: Client, acme: Tenant
) -> None:
    """It said "now version None"."""
    services.tenant_delete(tenant_id="acme", expected_version=None, author=None, source="api")
    answer = editor_client.post("/tenants/acme/", form(acme.version, "x")).content.decode()
    assert "Someone deleted this tenant" in answer and "version None" not in answer
    assert not Tenant.objects.filter(tenant_id="acme").exists()


def test_a_new_tenant_with_no_limits_of_its_own_is_offered_and_created(
    editor_client: Client,
) -> None:
    """Saved without a field set, it said "Nothing to save" and was never created."""
    data = {
        "action": "save",
        "tenant_id": "plain",
        "max_queriers_per_tenant": "0",
        "query_priority.default_priority": "0",
    }
    review = editor_client.post("/tenants/new/", data).content.decode()
    assert 'id="confirm-save"' in review and "no limits of its own" in review
    response = confirm(editor_client, "/tenants/new/", data)
    assert response.status_code == 302
    assert selectors.tenant_get(tenant_id="plain").config == {}


@pytest.mark.parametrize("tenant_id", ["a/b", "bad id/with space", "..", "x" * 151])
def test_a_new_tenant_id_no_url_can_carry_is_refused_on_its_field(
    editor_client: Client, tenant_id: str
) -> None:
    for action in ("save", "explain"):
        data = form(None, "x", tenant_id=tenant_id, action=action, explain_query="up")
        response = editor_client.post("/tenants/new/", data)
        assert response.status_code in (200, 400)
    saved = editor_client.post("/tenants/new/", form(None, "x", tenant_id=tenant_id))
    assert saved.status_code == 400
    assert 'id="tenant_id-err"' in saved.content.decode()
    assert not Tenant.objects.exists()


def test_a_taken_tenant_id_is_marked_on_its_field(editor_client: Client, acme: Tenant) -> None:
    again = editor_client.post("/tenants/new/", form(None, "x", tenant_id="acme"))
    page = again.content.decode()
    assert again.status_code == 409
    assert 'id="tenant_id-err">a tenant with this ID already exists<' in page


def test_the_change_note_typed_before_save_is_kept_on_the_review_step(
    editor_client: Client, acme: Tenant
) -> None:
    data = form(acme.version, "y", message="page the on-call <b>less</b>")
    review = editor_client.post("/tenants/acme/", data).content.decode()
    assert 'value="page the on-call &lt;b&gt;less&lt;/b&gt;"' in review
    settings = editor_client.post(
        "/settings/", {"layout": "component-first", "message": "try it", "version": "0"}
    )
    assert 'value="try it"' in settings.content.decode()


def test_rollback_from_history_writes_a_new_revision(editor_client: Client, acme: Tenant) -> None:
    confirm(editor_client, "/tenants/acme/", form(acme.version, "down"))
    latest = ConfigRevision.objects.first()
    assert latest is not None
    page = editor_client.get("/history/").content.decode()
    assert f"Roll back revision {latest.version}" in page
    asked = editor_client.post(f"/history/{latest.pk}/rollback/").content.decode()
    assert 'id="rollback-diff"' in asked
    assert selectors.tenant_get(tenant_id="acme").config != acme.config
    seen = re.search(r'name="seen_version" value="(\d+)"', asked)
    assert seen is not None
    response = editor_client.post(
        f"/history/{latest.pk}/rollback/",
        {"confirm": "yes", "seen_version": seen.group(1)},
        follow=True,
    )
    assert "Rolled back" in response.content.decode()
    assert selectors.tenant_get(tenant_id="acme").config == acme.config
    assert ConfigRevision.objects.first().source == "rollback"  # type: ignore[union-attr]


def test_viewer_cannot_roll_back(viewer_client: Client, acme: Tenant) -> None:
    revision = ConfigRevision.objects.get()
    assert viewer_client.post(f"/history/{revision.pk}/rollback/").status_code == 403
    assert ConfigRevision.objects.count() == 1


def test_settings_save_is_validated_and_version_checked(editor_client: Client) -> None:
    version = selectors.settings_get().version
    bad = editor_client.post("/settings/", {"version": version, "querier_forget_delay": "soon"})
    assert bad.status_code == 400 and "not a valid duration" in bad.content.decode()
    good = confirm(editor_client, "/settings/", {"version": version, "querier_forget_delay": "30s"})
    assert good.status_code == 302
    assert selectors.queue_config_get().querier_forget_delay == 30.0
    stale = editor_client.post("/settings/", {"version": version, "priority_aging": "10s"})
    assert stale.status_code == 409


def test_a_settings_post_without_its_version_saves_nothing(editor_client: Client) -> None:
    # With no version the stale check had nothing to compare, and the review
    # was skipped: the change was saved at once over whatever was current.
    before = selectors.settings_get().version
    for posted in ({}, {"version": "abc"}):
        answer = editor_client.post("/settings/", {**posted, "querier_forget_delay": "30s"})
        assert answer.status_code == 400
        assert "came without its version" in answer.content.decode()
    assert selectors.settings_get().version == before
    assert selectors.queue_config_get().querier_forget_delay != 30.0


@pytest.mark.parametrize(
    ("name", "words"),
    [("stuck_threshold", "not a valid duration"), ("actor_path_header", "must not be empty")],
)
def test_a_settings_box_cleared_is_refused_at_it_not_taken_as_unchanged(
    editor_client: Client, name: str, words: str
) -> None:
    """It answered "Nothing to save" and put the running value back in the box."""
    version = selectors.settings_get().version
    answer = editor_client.post("/settings/", {"version": version, name: " "})
    assert answer.status_code == 400 and words in answer.content.decode()
    assert selectors.settings_get().version == version


def test_every_setting_is_labelled_and_says_what_it_does(viewer_client: Client) -> None:
    page = viewer_client.get("/settings/").content.decode()
    for name in SETTINGS_FIELDS:
        label, help_text = SETTINGS_TEXT[name]
        assert f'{label} <code class="muted">{name}</code></label>' in page
        assert f'<p class="help">{escape(help_text)}</p>' in page


def test_each_range_field_suggests_a_value_of_its_own_kind(
    editor_client: Client, acme: Tenant
) -> None:
    page = editor_client.get("/tenants/acme/").content.decode()
    for suggestion in ("e.g. 1h", "e.g. 0s", "e.g. 6h", "e.g. 7d", "e.g. 1m", "e.g. 5m"):
        assert f'placeholder="{suggestion}"' in page


def test_a_blank_outstanding_limit_shows_the_settings_value_it_stands_for(
    editor_client: Client, acme: Tenant
) -> None:
    services.settings_update(
        changes={"max_outstanding_requests_per_tenant": 250},
        expected_version=None,
        author=None,
        source=ConfigRevision.Source.CLI,
    )
    listing = editor_client.get("/tenants/").content.decode()
    assert "default (250)" in listing
    editor = editor_client.get("/tenants/acme/").content.decode()
    assert "Max outstanding requests (blank = the setting, now 250)" in editor


def test_layout_switch_asks_to_confirm_then_switches(editor_client: Client) -> None:
    switch = {"layout": "component-first", "running": "tenant-first"}
    ask = editor_client.post("/layout/", switch)
    assert "Switch the running layout to component-first?" in ask.content.decode()
    assert 'name="running" value="tenant-first"' in ask.content.decode()
    assert selectors.queue_config_get().layout == "tenant-first"
    editor_client.post("/layout/", {**switch, "confirm": "yes"})
    assert selectors.queue_config_get().layout == "component-first"


def test_a_layout_switch_from_a_page_open_across_other_settings_changes_still_switches(
    editor_client: Client,
) -> None:
    """The page sent the settings version it was rendered at: any change made it stale."""
    switch = {"layout": "component-first", "running": "tenant-first", "confirm": "yes"}
    services.settings_update(
        changes={"stuck_threshold": "45s"}, expected_version=None, author=None, source="api"
    )
    editor_client.post("/layout/", switch)
    assert selectors.queue_config_get().layout == "component-first"


def test_a_layout_switch_made_meanwhile_elsewhere_is_said_and_changes_nothing(
    editor_client: Client,
) -> None:
    services.settings_update(
        changes={"layout": "component-first"}, expected_version=None, author=None, source="api"
    )
    count = ConfigRevision.objects.count()
    stale = {"layout": "component-first", "running": "tenant-first", "confirm": "yes"}
    answer = editor_client.post("/layout/", stale, follow=True).content.decode()
    assert "switched meanwhile" in answer
    assert selectors.queue_config_get().layout == "component-first"
    assert ConfigRevision.objects.count() == count


def test_the_layout_switch_opened_as_a_page_is_the_inspector(editor_client: Client) -> None:
    response = editor_client.get("/layout/")
    assert response.status_code == 302 and response["Location"] == "/"


def test_viewer_gets_no_layout_switch(viewer_client: Client) -> None:
    assert b"layout-form" not in viewer_client.get("/").content
    response = viewer_client.post("/layout/", {"layout": "component-first", "confirm": "yes"})
    assert response.status_code == 403
