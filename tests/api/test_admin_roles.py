"""The admin answers to the viewer/editor roles, with Django's model permissions on top.

Model permissions alone let a staff account without the editor role mint an
editor token, and one with only view permissions roll the config back and
revoke tokens through the list pages' actions.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client

from api.store import services
from api.store.models import ApiToken, ConfigRevision, Tenant

pytestmark = pytest.mark.django_db

EVERY = [
    f"{verb}_{model}"
    for verb in ("view", "add", "change", "delete")
    for model in ("tenant", "schedulersettings", "configrevision", "apitoken")
]


def staff(client: Client, role: str | None, codenames: list[str]) -> Client:
    user = User.objects.create_user(f"staff-{role}", password="pw-staff-123", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    if role is not None:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    client.force_login(user)
    return client


def _rollback(client: Client) -> int:
    revision = ConfigRevision.objects.get()
    return client.post(
        "/admin/api/configrevision/", {"action": "roll_back", "_selected_action": [revision.pk]}
    ).status_code


def _revoke(client: Client, token: ApiToken) -> int:
    return client.post(
        "/admin/api/apitoken/", {"action": "revoke", "_selected_action": [token.pk]}
    ).status_code


@pytest.mark.parametrize("role", [None, "viewer"])
def test_an_account_without_the_editor_role_changes_nothing_whatever_its_permissions(
    client: Client, role: str | None
) -> None:
    services.tenant_put(tenant_id="t1", config={}, expected_version=None, author=None, source="api")
    token, plaintext = services.api_token_issue(name="ci", role="viewer")
    admin = staff(client, role, EVERY)
    minted = admin.post("/admin/api/apitoken/add/", {"name": "escalate", "role": "editor"})
    assert minted.status_code == 403 and not ApiToken.objects.filter(name="escalate").exists()
    assert (
        admin.post("/admin/api/tenant/add/", {"tenant_id": "t2", "config": "{}"}).status_code == 403
    )
    # Refused (403), or for a viewer the list shown without those actions.
    assert _rollback(admin) in (200, 403)
    assert _revoke(admin, token) in (200, 403)
    assert Tenant.objects.filter(tenant_id="t1").exists() and ConfigRevision.objects.count() == 1
    assert services.api_token_authenticate(plaintext) == token
    listing = admin.get("/admin/api/tenant/").status_code
    assert listing == (403 if role is None else 200)  # a viewer may look


def test_an_editor_with_the_permissions_uses_the_admin_as_a_superuser_does(client: Client) -> None:
    services.tenant_put(tenant_id="t1", config={}, expected_version=None, author=None, source="api")
    token, plaintext = services.api_token_issue(name="ci", role="viewer")
    admin = staff(client, "editor", EVERY)
    assert (
        admin.post("/admin/api/apitoken/add/", {"name": "ops", "role": "viewer"}).status_code == 200
    )
    assert ApiToken.objects.filter(name="ops").exists()
    _revoke(admin, token)
    assert services.api_token_authenticate(plaintext) is None
    _rollback(admin)
    assert not Tenant.objects.filter(tenant_id="t1").exists()


def test_an_editor_without_model_permissions_is_still_refused(client: Client) -> None:
    admin = staff(client, "editor", [])
    assert (
        admin.post("/admin/api/apitoken/add/", {"name": "x", "role": "editor"}).status_code == 403
    )


def test_an_account_without_the_editor_role_cannot_make_itself_an_editor(client: Client) -> None:
    admin = staff(client, "viewer", ["view_user", "change_user", "change_group", "add_group"])
    me = User.objects.get(username="staff-viewer")
    editors = Group.objects.get_or_create(name="editor")[0]
    page = admin.get(f"/admin/auth/user/{me.pk}/change/")
    assert page.status_code == 200 and b'name="groups"' not in page.content  # shown read-only
    admin.post(
        f"/admin/auth/user/{me.pk}/change/",
        {"username": me.username, "groups": [editors.pk], "is_active": "on", "is_staff": "on"},
    )
    assert not me.groups.filter(name="editor").exists()
    assert admin.post("/admin/auth/group/add/", {"name": "x"}).status_code == 403
