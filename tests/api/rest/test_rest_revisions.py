"""`revisions/`: history, one revision's diff, rollback as a new revision."""

from __future__ import annotations

import pytest

from api.rest.views import revisions as revisions_view
from api.store.models import ConfigRevision

URL = "/api/v1/tenants/t1/"


def _two_versions(client, rules) -> tuple[dict, dict]:
    first = client.put(URL, rules, format="json")
    second = client.patch(
        URL, {"max_queriers_per_tenant": 7}, format="json", HTTP_IF_MATCH=first["ETag"]
    )
    return first.json(), second.json()


def test_revisions_list_newest_first_and_filter_by_tenant(editor_api, rules):
    _two_versions(editor_api, rules)
    editor_api.put("/api/v1/tenants/t2/", rules, format="json")
    listed = editor_api.get("/api/v1/revisions/").json()
    assert listed["count"] == 3
    assert [r["key"] for r in listed["results"]] == ["t2", "t1", "t1"]
    assert listed["results"][0]["author"] == "token:editor-bot"
    assert listed["results"][0]["source"] == "api"
    only_t1 = editor_api.get("/api/v1/revisions/", {"key": "t1", "kind": "tenant"}).json()
    assert only_t1["count"] == 2


def _keys(client, **params) -> list[str]:
    response = client.get("/api/v1/revisions/", params)
    assert response.status_code == 200, response.content
    return [r["key"] for r in response.json()["results"]]


@pytest.fixture
def acme_and_others(editor_api, rules) -> None:
    for tenant in ("acme", "Acme-EU", "acme10", "other"):
        editor_api.put(f"/api/v1/tenants/{tenant}/", rules, format="json")
    editor_api.patch("/api/v1/settings/", {"layout": "component-first"}, format="json",
                     HTTP_IF_MATCH="*")  # fmt: skip


def test_key_still_keeps_only_that_tenant_id_exactly(editor_api, acme_and_others):
    assert _keys(editor_api, key="acme") == ["acme"]
    assert _keys(editor_api, key="ACME") == []
    assert _keys(editor_api, key="acm") == []


@pytest.mark.parametrize("search", ["acm", "ACME", "cMe"])
def test_search_keeps_every_tenant_id_containing_it_in_any_case(
    editor_api, acme_and_others, search
):
    assert _keys(editor_api, search=search) == ["acme10", "Acme-EU", "acme"]
    assert _keys(editor_api, search=search, kind="settings") == []


def test_search_and_key_together_keep_the_revisions_matching_both(editor_api, acme_and_others):
    assert _keys(editor_api, search="ACM", key="acme10") == ["acme10"]
    assert _keys(editor_api, search="eu", key="acme") == []


def test_an_empty_search_keeps_every_revision(editor_api, acme_and_others):
    assert _keys(editor_api, search="") == ["", "other", "acme10", "Acme-EU", "acme"]


@pytest.mark.parametrize(
    ("search", "message"),
    [
        ("acme eu", "invalid characters ' '"),
        ("acmé", "invalid characters 'é'"),
        (" acme", "invalid characters ' '"),
        ("a" * 151, "at most 150 characters"),
    ],
)
def test_a_search_no_tenant_id_can_contain_is_400_naming_search(editor_api, search, message):
    response = editor_api.get("/api/v1/revisions/", {"search": search})
    assert response.status_code == 400
    assert list(response.json()) == ["search"]
    assert response.json()["search"][0].startswith(message)


def test_one_revision_shows_before_after_and_the_changed_fields(editor_api, rules):
    before, after = _two_versions(editor_api, rules)
    newest = editor_api.get("/api/v1/revisions/", {"limit": 1}).json()["results"][0]
    detail = editor_api.get(f"/api/v1/revisions/{newest['id']}/").json()
    assert detail["before"] == before and detail["after"] == after
    assert detail["diff"] == [{"path": "max_queriers_per_tenant", "before": 3, "after": 7}]


def test_rollback_restores_the_previous_state_as_a_new_revision(editor_api, rules):
    before, _ = _two_versions(editor_api, rules)
    newest = editor_api.get("/api/v1/revisions/", {"limit": 1}).json()["results"][0]
    response = editor_api.post(f"/api/v1/revisions/{newest['id']}/rollback/")
    assert response.status_code == 201
    body = response.json()
    assert body["changed"] is True and body["revision"]["source"] == "rollback"
    assert editor_api.get(URL).json() == before
    again = editor_api.post(f"/api/v1/revisions/{newest['id']}/rollback/")
    assert again.status_code == 200
    assert again.json() == {"changed": False, "revision": None}


def test_a_rollback_dry_run_shows_its_diff_and_its_etag_guards_the_real_one(editor_api, rules):
    _two_versions(editor_api, rules)
    newest = editor_api.get("/api/v1/revisions/", {"limit": 1}).json()["results"][0]
    url = f"/api/v1/revisions/{newest['id']}/rollback/"
    preview = editor_api.post(f"{url}?dry_run=1")
    assert preview.status_code == 200
    body = preview.json()
    assert body["changed"] is True and body["revision"] is None
    assert body["diff"] == [{"path": "max_queriers_per_tenant", "before": 7, "after": 3}]
    assert "-  max_queriers_per_tenant: 7\n+  max_queriers_per_tenant: 3\n" in body["yaml_diff"]
    count = ConfigRevision.objects.count()
    assert count == 2  # the dry run wrote nothing
    etag = preview["ETag"]
    editor_api.patch(
        "/api/v1/settings/", {"stuck_threshold": "45s"}, format="json", HTTP_IF_MATCH="*"
    )
    stale = editor_api.post(url, HTTP_IF_MATCH=etag)
    assert stale.status_code == 412
    assert ConfigRevision.objects.count() == count + 1  # only the settings change
    fresh = editor_api.post(f"{url}?dry_run=1")["ETag"]
    assert editor_api.post(url, HTTP_IF_MATCH=fresh).status_code == 201


def test_rolling_back_a_creation_deletes_the_tenant(editor_api, rules):
    editor_api.put(URL, rules, format="json")
    created = editor_api.get("/api/v1/revisions/").json()["results"][0]
    assert editor_api.post(f"/api/v1/revisions/{created['id']}/rollback/").status_code == 201
    assert editor_api.get(URL).status_code == 404


def test_unknown_revisions_are_404(editor_api):
    assert editor_api.get("/api/v1/revisions/999/").status_code == 404
    assert editor_api.post("/api/v1/revisions/999/rollback/").status_code == 404


def test_a_rollback_that_no_longer_validates_keeps_dotted_tenant_ids_whole(editor_api):
    """A rolled-back import restores blocks as they were; one that the rules
    now refuse is a 400 at `overrides.<tenant>.<field>`, the tenant's ID whole."""
    runtime_config = "/api/v1/runtime-config/"
    block = "  team.payments: {max_queriers_per_tenant: 2}\n"
    put = editor_api.put(runtime_config, "overrides:\n" + block, content_type="application/yaml")
    emptied = editor_api.put(
        runtime_config, "overrides: {}\n", content_type="application/yaml", HTTP_IF_MATCH="*"
    )
    assert put.status_code == emptied.status_code == 200
    revision = ConfigRevision.objects.get(pk=emptied.json()["revision_id"])
    # What the rules would refuse today (written past the validator, as a
    # tightened rule leaves an old revision).
    revision.before = {"team.payments": {"max_queriers_per_tenant": -1}}
    revision.save(update_fields=["before"])
    count = ConfigRevision.objects.count()
    response = editor_api.post(f"/api/v1/revisions/{revision.pk}/rollback/")
    assert response.status_code == 400
    assert response.json() == {
        "overrides": {"team.payments": {"max_queriers_per_tenant": ["must be >= 0, got -1"]}}
    }
    assert ConfigRevision.objects.count() == count


def test_a_rollback_dry_run_overtaken_by_a_write_answers_the_etag_of_what_it_shows(
    editor_api, rules, monkeypatch
):
    _two_versions(editor_api, rules)
    newest = editor_api.get("/api/v1/revisions/", {"limit": 1}).json()["results"][0]
    url = f"/api/v1/revisions/{newest['id']}/rollback/"
    real = revisions_view.rollback_preview
    writes = [{"stuck_threshold": "45s"}]

    def overtaken(revision):
        preview = real(revision)
        if writes:  # another editor's write commits after this read
            editor_api.patch("/api/v1/settings/", writes.pop(), format="json", HTTP_IF_MATCH="*")
        return preview

    monkeypatch.setattr(revisions_view, "rollback_preview", overtaken)
    preview = editor_api.post(f"{url}?dry_run=1")
    assert not writes  # the write landed during the preview
    assert preview["ETag"] == editor_api.post(f"{url}?dry_run=1")["ETag"]
    assert editor_api.post(url, HTTP_IF_MATCH=preview["ETag"]).status_code == 201
