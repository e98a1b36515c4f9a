"""`revisions/`: history, one revision's diff, rollback as a new revision."""

from __future__ import annotations

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


def test_rolling_back_a_creation_deletes_the_tenant(editor_api, rules):
    editor_api.put(URL, rules, format="json")
    created = editor_api.get("/api/v1/revisions/").json()["results"][0]
    assert editor_api.post(f"/api/v1/revisions/{created['id']}/rollback/").status_code == 201
    assert editor_api.get(URL).status_code == 404


def test_unknown_revisions_are_404(editor_api):
    assert editor_api.get("/api/v1/revisions/999/").status_code == 404
    assert editor_api.post("/api/v1/revisions/999/rollback/").status_code == 404
