import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from api.store import services
from api.store.exceptions import VersionConflict
from api.store.models import ApiToken, ConfigRevision, SchedulerSettings, Tenant

pytestmark = pytest.mark.django_db


@pytest.fixture
def boss(client: Client) -> Client:
    client.force_login(User.objects.create_superuser("boss", password="pw-boss-123"))
    return client


def add_tenant(client: Client, tenant_id: str, config: Any) -> Any:
    return client.post(
        "/admin/api/tenant/add/", {"tenant_id": tenant_id, "config": json.dumps(config)}
    )


@pytest.mark.parametrize("model", ["tenant", "schedulersettings", "configrevision", "apitoken"])
def test_every_admin_list_page_renders(boss: Client, model: str) -> None:
    assert boss.get(f"/admin/api/{model}/").status_code == 200


def test_adding_a_tenant_in_the_admin_goes_through_the_service(
    boss: Client, rules: dict[str, Any]
) -> None:
    response = add_tenant(boss, "t1", rules)
    assert response.status_code == 302
    revision = ConfigRevision.objects.get()
    assert (revision.source, revision.author_name, revision.after) == ("admin", "boss", rules)
    assert Tenant.objects.get().version == revision.version


def test_an_invalid_tenant_in_the_admin_shows_the_field_path_and_saves_nothing(
    boss: Client,
) -> None:
    response = add_tenant(boss, "t1", {"query_priority": {"enabled": "yes"}})
    assert response.status_code == 200
    assert b"query_priority.enabled" in response.content
    assert not Tenant.objects.exists()


def test_editing_a_tenant_someone_else_changed_is_refused(
    boss: Client, rules: dict[str, Any]
) -> None:
    tenant = services.tenant_put(
        tenant_id="t1", config=rules, expected_version=None, author=None, source="api"
    )
    services.tenant_patch(
        tenant_id="t1",
        changes={"max_queriers_per_tenant": 5},
        expected_version=None,
        author=None,
        source="api",
    )
    response = boss.post(
        f"/admin/api/tenant/{tenant.pk}/change/",
        {"config": json.dumps(rules), "expected_version": tenant.version},
    )
    assert response.status_code == 200
    assert b"Someone else changed this" in response.content
    assert Tenant.objects.get().config["max_queriers_per_tenant"] == 5


def put_t1(rules: dict[str, Any], tenant_id: str = "t1") -> Tenant:
    return services.tenant_put(
        tenant_id=tenant_id, config=rules, expected_version=None, author=None, source="api"
    )


def change_elsewhere(tenant_id: str = "t1") -> None:
    services.tenant_patch(
        tenant_id=tenant_id,
        changes={"max_queriers_per_tenant": 5},
        expected_version=None,
        author=None,
        source="api",
    )


def test_deleting_a_tenant_in_the_admin_records_a_revision(
    boss: Client, rules: dict[str, Any]
) -> None:
    tenant = put_t1(rules)
    page = boss.get(f"/admin/api/tenant/{tenant.pk}/delete/")
    assert f'name="expected_version" value="{tenant.version}"'.encode() in page.content
    response = boss.post(
        f"/admin/api/tenant/{tenant.pk}/delete/",
        {"post": "yes", "expected_version": tenant.version},
    )
    assert response.status_code == 302
    assert ConfigRevision.objects.order_by("-version").first().after is None  # type: ignore[union-attr]
    assert not Tenant.objects.exists()


@pytest.mark.parametrize("shown", ["stale", "missing", "garbage"])
def test_deleting_a_tenant_changed_since_the_confirmation_was_shown_deletes_nothing(
    boss: Client, rules: dict[str, Any], shown: str
) -> None:
    tenant = put_t1(rules)
    change_elsewhere()
    form = {"post": "yes"} | {
        "stale": {"expected_version": str(tenant.version)},
        "missing": {},
        "garbage": {"expected_version": "latest"},
    }[shown]
    url = f"/admin/api/tenant/{tenant.pk}/delete/"
    response = boss.post(url, form, follow=True)
    assert response.redirect_chain == [(url, 302)]
    assert b"Not deleted" in response.content
    # Shown again at the version now current, and the change is kept.
    now = Tenant.objects.get()
    assert now.config["max_queriers_per_tenant"] == 5
    assert f'name="expected_version" value="{now.version}"'.encode() in response.content
    assert ConfigRevision.objects.filter(after__isnull=True).count() == 0


def bulk_delete(boss: Client, tenants: list[Tenant], versions: dict[int, Any]) -> Any:
    form: dict[str, Any] = {
        "action": "delete_tenants",
        "post": "yes",
        "_selected_action": [t.pk for t in tenants],
    }
    form.update({f"version_{pk}": v for pk, v in versions.items()})
    return boss.post("/admin/api/tenant/", form, follow=True)


def test_bulk_deleting_tenants_shows_each_version_and_deletes_them_all_at_those_versions(
    boss: Client, rules: dict[str, Any]
) -> None:
    tenants = [put_t1(rules, "t1"), put_t1(rules, "t2")]
    page = boss.post(
        "/admin/api/tenant/",
        {"action": "delete_tenants", "_selected_action": [t.pk for t in tenants]},
    )
    for tenant in tenants:
        assert f'name="version_{tenant.pk}" value="{tenant.version}"'.encode() in page.content
    # Django's own bulk delete, which carried no versions, is not offered.
    assert b'value="delete_selected"' not in boss.get("/admin/api/tenant/").content

    response = bulk_delete(boss, tenants, {t.pk: t.version for t in tenants})
    assert b"Deleted 2 tenant(s)." in response.content
    assert not Tenant.objects.exists()
    assert ConfigRevision.objects.filter(after__isnull=True).count() == 2


def test_a_bulk_delete_with_one_tenant_changed_since_deletes_none_of_them(
    boss: Client, rules: dict[str, Any]
) -> None:
    tenants = [put_t1(rules, "t1"), put_t1(rules, "t2")]
    change_elsewhere("t2")
    response = bulk_delete(boss, tenants, {t.pk: t.version for t in tenants})
    assert b"Nothing deleted: t2: version conflict" in response.content
    assert sorted(Tenant.objects.values_list("tenant_id", flat=True)) == ["t1", "t2"]
    assert ConfigRevision.objects.filter(after__isnull=True).count() == 0


def test_changing_settings_in_the_admin_is_validated_and_versioned(boss: Client) -> None:
    url = "/admin/api/schedulersettings/1/change/"
    bad = boss.post(url, {"config": json.dumps({"layout": "diagonal"}), "expected_version": 0})
    assert bad.status_code == 200 and b"layout" in bad.content
    good = boss.post(
        url, {"config": json.dumps({"layout": "component-first"}), "expected_version": 0}
    )
    assert good.status_code == 302
    assert SchedulerSettings.objects.get().config["layout"] == "component-first"


def test_a_tenant_change_without_the_version_it_was_loaded_at_saves_nothing(
    boss: Client, rules: dict[str, Any]
) -> None:
    tenant = services.tenant_put(
        tenant_id="t1", config=rules, expected_version=None, author=None, source="api"
    )
    response = boss.post(f"/admin/api/tenant/{tenant.pk}/change/", {"config": "{}"})
    assert response.status_code == 200
    assert b"lacks the version it was loaded at" in response.content
    assert Tenant.objects.get().config == rules


def test_a_setting_deleted_from_the_admins_text_is_set_back_to_its_default(
    boss: Client,
) -> None:
    services.settings_update(
        changes={"layout": "component-first", "max_outstanding_requests_per_tenant": 7},
        expected_version=None,
        author=None,
        source="api",
    )
    row = SchedulerSettings.objects.get()
    edited = {k: v for k, v in row.config.items() if k != "max_outstanding_requests_per_tenant"}
    response = boss.post(
        "/admin/api/schedulersettings/1/change/",
        {"config": json.dumps(edited), "expected_version": row.version},
    )
    assert response.status_code == 302
    config = SchedulerSettings.objects.get().config
    assert config["layout"] == "component-first"
    assert config["max_outstanding_requests_per_tenant"] == 100


def test_revisions_are_read_only_and_can_be_rolled_back_from_the_admin(
    boss: Client, rules: dict[str, Any]
) -> None:
    tenant = services.tenant_put(
        tenant_id="t1", config=rules, expected_version=None, author=None, source="api"
    )
    revision = ConfigRevision.objects.get()
    page = boss.get(f"/admin/api/configrevision/{revision.pk}/change/")
    assert page.status_code == 200 and b"max_queriers_per_tenant" in page.content
    assert boss.get("/admin/api/configrevision/add/").status_code == 403
    boss.post(
        "/admin/api/configrevision/",
        {"action": "roll_back", "_selected_action": [revision.pk]},
    )
    assert not Tenant.objects.filter(pk=tenant.pk).exists()
    assert ConfigRevision.objects.order_by("-version").first().source == "admin"  # type: ignore[union-attr]


def test_adding_a_token_in_the_admin_shows_the_plaintext_once_never_in_a_cookie(
    boss: Client,
) -> None:
    response = boss.post("/admin/api/apitoken/add/", {"name": "ci", "role": "editor"})
    token = ApiToken.objects.get()
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    plaintext = response.context["plaintext"]
    assert f'value="{plaintext}"' in response.content.decode()
    assert services.api_token_authenticate(plaintext) == token
    assert all(plaintext not in morsel.value for morsel in response.cookies.values())
    assert plaintext not in boss.get("/admin/api/apitoken/").content.decode()


def test_revoking_tokens_in_the_admin_stops_them_working(boss: Client) -> None:
    token, plaintext = services.api_token_issue(name="ci", role="viewer")
    boss.post("/admin/api/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})
    assert services.api_token_authenticate(plaintext) is None


def test_adding_a_token_with_an_expiry_in_the_admin_issues_it_with_that_expiry(
    boss: Client,
) -> None:
    form = {"name": "ci", "role": "viewer", "expires_at_0": "2999-01-31", "expires_at_1": "12:00"}
    assert boss.post("/admin/api/apitoken/add/", form).status_code == 200  # the token's page
    token = ApiToken.objects.get()
    assert token.expires_at == datetime(2999, 1, 31, 12, 0, tzinfo=UTC)  # the admin's zone


def test_the_admin_refuses_an_expiry_in_the_past_next_to_the_field_and_issues_nothing(
    boss: Client,
) -> None:
    form = {"name": "ci", "role": "viewer", "expires_at_0": "2001-01-31", "expires_at_1": "12:00"}
    response = boss.post("/admin/api/apitoken/add/", form)
    assert response.status_code == 200
    assert "is not in the future" in str(response.context["adminform"].form.errors["expires_at"])
    assert not ApiToken.objects.exists()


def test_the_admin_lists_expired_tokens_as_expired_and_filters_by_state(boss: Client) -> None:
    services.api_token_issue(name="live-one", role="viewer")
    expired, _ = services.api_token_issue(
        name="expired-one", role="viewer", expires_at=timezone.now() + timedelta(hours=1)
    )
    ApiToken.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(hours=1))
    revoked, _ = services.api_token_issue(name="revoked-one", role="viewer")
    services.api_token_revoke(token_id=revoked.pk)

    page = boss.get("/admin/api/apitoken/")
    rows = {t.name: t.state(timezone.now()) for t in page.context["cl"].result_list}
    assert rows == {"live-one": "live", "expired-one": "expired", "revoked-one": "revoked"}
    assert b'<td class="field-state">expired</td>' in page.content
    for state, name in (
        ("live", "live-one"),
        ("expired", "expired-one"),
        ("revoked", "revoked-one"),
    ):
        listed = boss.get(f"/admin/api/apitoken/?state={state}").context["cl"].result_list
        assert [t.name for t in listed] == [name]
    detail = boss.get(f"/admin/api/apitoken/{expired.pk}/change/").content.decode()
    assert re.search(r"<label>State:</label>\s*<div class=\"readonly\">expired</div>", detail)
    assert "<label>Expires at:</label>" in detail


def test_a_token_name_the_listings_would_garble_is_refused_on_the_admin_form(
    boss: Client,
) -> None:
    response = boss.post("/admin/api/apitoken/add/", {"name": "fe\u2028x", "role": "viewer"})
    assert response.status_code == 200  # the form again, not a server error
    assert "U+2028" in str(response.context["adminform"].form.errors["name"])
    assert not ApiToken.objects.exists()


def _refused_under_the_lock(monkeypatch: pytest.MonkeyPatch, name: str, current: int) -> None:
    """The store refuses the admin's write as it does when another writer got in
    after the form's checks (one connection cannot commit beside the view's
    transaction, so the other write is stood for by its outcome)."""

    def refused(**kwargs: Any) -> Any:
        raise VersionConflict(current)

    monkeypatch.setattr(services, name, refused)


@pytest.mark.parametrize("page", ["add", "change"])
def test_a_tenant_save_another_writer_got_in_before_says_so_and_saves_nothing(
    boss: Client, rules: dict[str, Any], monkeypatch: pytest.MonkeyPatch, page: str
) -> None:
    # The form checked the version (or that the ID was free) outside the
    # store's lock; the store refused under it, and the page was a 500.
    if page == "change":
        tenant = put_t1(rules)
        url = f"/admin/api/tenant/{tenant.pk}/change/"
        form = {"config": json.dumps({}), "expected_version": tenant.version}
    else:
        url, form = "/admin/api/tenant/add/", {"tenant_id": "t1", "config": json.dumps(rules)}
    _refused_under_the_lock(monkeypatch, "tenant_put", 7)
    response = boss.post(url, form)
    assert response.status_code == 200  # the form again, as posted: nothing typed is lost
    assert b"Not saved: version conflict: the current version is 7" in response.content
    assert response.context["adminform"].form.data["config"] == form["config"]
    assert [t.config for t in Tenant.objects.all()] == ([rules] if page == "change" else [])


def test_a_settings_save_another_writer_got_in_before_says_so_and_saves_nothing(
    boss: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "/admin/api/schedulersettings/1/change/"
    _refused_under_the_lock(monkeypatch, "settings_update", 3)
    form = {"config": json.dumps({"layout": "component-first"}), "expected_version": 0}
    response = boss.post(url, form)
    assert response.status_code == 200
    assert b"Not saved: version conflict: the current version is 3" in response.content
    assert response.context["adminform"].form.data["config"] == form["config"]
    assert SchedulerSettings.objects.get().config.get("layout") != "component-first"


def test_admin_pages_carry_the_sites_empty_icon_and_keep_their_own_title(client) -> None:
    # Without it the browser asked for /favicon.ico, a 404 in its console.
    page = client.get("/admin/login/").content.decode()
    assert '<link rel="icon" href="data:,">' in page
    # The admin's own blocks are kept: its title and branding come through.
    assert re.search(r"<title>Log in \| [^<]+</title>", page)
    assert 'id="site-name"' in page
