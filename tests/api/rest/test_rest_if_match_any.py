"""`If-Match: *` means "whatever version is current when the write runs".

Each test lands another editor's write between the view's read and the
service's transaction, as two concurrent requests do. Before the fix the
view turned `*` into the version it had read, so the later of two
concurrent unconditional writes was a 412.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from api.store import services
from api.store.models import SchedulerSettings, Tenant

URL = "/api/v1/tenants/t1/"
# The other editor's writes, taken before any test replaces them.
TENANT_PATCH, TENANT_DELETE, SETTINGS_UPDATE = (
    services.tenant_patch,
    services.tenant_delete,
    services.settings_update,
)


def _with_a_write_first(monkeypatch: Any, name: str, write: Callable[[], object]) -> None:
    """Make `services.<name>` run `write` (another editor) before its own work."""
    original = getattr(services, name)

    def raced(**kwargs: Any) -> Any:
        write()
        return original(**kwargs)

    monkeypatch.setattr(services, name, raced)


def _other_editor_sets(field: str, value: int) -> Callable[[], object]:
    return lambda: TENANT_PATCH(
        tenant_id="t1", changes={field: value}, expected_version=None, author=None, source="api"
    )


@pytest.fixture
def tenant(editor_api: Any) -> None:
    assert editor_api.put(URL, {"max_queriers_per_tenant": 1}, format="json").status_code == 201


@pytest.mark.usefixtures("tenant")
def test_a_star_patch_applies_over_a_write_that_landed_after_the_view_read(editor_api, monkeypatch):
    _with_a_write_first(
        monkeypatch, "tenant_patch", _other_editor_sets("max_queriers_per_tenant", 7)
    )
    response = editor_api.patch(
        URL, {"max_outstanding_requests_per_tenant": 12}, format="json", HTTP_IF_MATCH="*"
    )
    assert response.status_code == 200, response.content
    config = Tenant.objects.get(tenant_id="t1").config
    assert config == {"max_queriers_per_tenant": 7, "max_outstanding_requests_per_tenant": 12}


@pytest.mark.usefixtures("tenant")
def test_a_star_put_replaces_whatever_version_exists_by_then(editor_api, monkeypatch):
    _with_a_write_first(monkeypatch, "tenant_put", _other_editor_sets("max_queriers_per_tenant", 7))
    response = editor_api.put(URL, {"max_queriers_per_tenant": 3}, format="json", HTTP_IF_MATCH="*")
    assert response.status_code == 200, response.content
    assert Tenant.objects.get(tenant_id="t1").config == {"max_queriers_per_tenant": 3}


@pytest.mark.usefixtures("tenant")
def test_a_star_put_is_412_when_the_tenant_was_deleted_meanwhile(editor_api, monkeypatch):
    delete = lambda: TENANT_DELETE(  # noqa: E731
        tenant_id="t1", expected_version=None, author=None, source="api"
    )
    _with_a_write_first(monkeypatch, "tenant_put", delete)
    response = editor_api.put(URL, {"max_queriers_per_tenant": 3}, format="json", HTTP_IF_MATCH="*")
    assert response.status_code == 412
    assert not Tenant.objects.filter(tenant_id="t1").exists()


@pytest.mark.usefixtures("tenant")
def test_a_star_delete_deletes_over_a_write_that_landed_after_the_view_read(
    editor_api, monkeypatch
):
    _with_a_write_first(
        monkeypatch, "tenant_delete", _other_editor_sets("max_queriers_per_tenant", 7)
    )
    assert editor_api.delete(URL, HTTP_IF_MATCH="*").status_code == 204
    assert not Tenant.objects.filter(tenant_id="t1").exists()


@pytest.mark.usefixtures("tenant")
def test_a_named_etag_is_still_412_when_a_write_landed_after_the_view_read(editor_api, monkeypatch):
    etag = editor_api.get(URL)["ETag"]
    _with_a_write_first(
        monkeypatch, "tenant_patch", _other_editor_sets("max_queriers_per_tenant", 7)
    )
    response = editor_api.patch(
        URL, {"max_outstanding_requests_per_tenant": 12}, format="json", HTTP_IF_MATCH=etag
    )
    assert response.status_code == 412
    assert Tenant.objects.get(tenant_id="t1").config == {"max_queriers_per_tenant": 7}


def test_a_star_settings_patch_applies_over_a_write_that_landed_after_the_view_read(
    editor_api, monkeypatch
):
    other = lambda: SETTINGS_UPDATE(  # noqa: E731
        changes={"max_outstanding_requests_per_tenant": 300},
        expected_version=None,
        author=None,
        source="api",
    )
    _with_a_write_first(monkeypatch, "settings_update", other)
    response = editor_api.patch(
        "/api/v1/settings/", {"querier_forget_delay": "10s"}, format="json", HTTP_IF_MATCH="*"
    )
    assert response.status_code == 200, response.content
    assert response.json()["max_outstanding_requests_per_tenant"] == 300
    assert SchedulerSettings.objects.get().config["querier_forget_delay"] == "10s"
