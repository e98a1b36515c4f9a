"""`revisions/{id}/` yaml_diff, `revisions/compare/`, and `tenants/{id}/yaml/` (read and parse)."""

from __future__ import annotations

import yaml

from api.store.models import ConfigRevision

URL = "/api/v1/tenants/t1/"


def _put_then_patch(client, rules) -> tuple[int, int]:
    first = client.put(URL, rules, format="json")
    client.patch(URL, {"max_queriers_per_tenant": 7}, format="json", HTTP_IF_MATCH=first["ETag"])
    ids = [r["id"] for r in client.get("/api/v1/revisions/", {"key": "t1"}).json()["results"]]
    return ids[1], ids[0]  # oldest first


def test_a_revision_detail_carries_the_unified_yaml_diff_of_the_tenant_block(editor_api, rules):
    _, patched = _put_then_patch(editor_api, rules)
    detail = editor_api.get(f"/api/v1/revisions/{patched}/").json()
    version = detail["version"]
    assert detail["yaml_diff"] == (
        f"--- before #{version}\n"
        f"+++ after #{version}\n"
        "@@ -1,5 +1,5 @@\n"
        " t1:\n"
        "-  max_queriers_per_tenant: 3\n"
        "+  max_queriers_per_tenant: 7\n"
        "   query_priority:\n"
        "     enabled: true\n"
        "     default_priority: 1\n"
    )


def test_a_creation_diffs_against_nothing_so_every_line_is_added(editor_api, rules):
    created, _ = _put_then_patch(editor_api, rules)
    text = editor_api.get(f"/api/v1/revisions/{created}/").json()["yaml_diff"]
    body = text.splitlines()[3:]
    assert body[0] == "+t1:" and all(line.startswith("+") for line in body)
    assert yaml.safe_load("\n".join(line[1:] for line in body)) == {"t1": rules}


def test_compare_two_revisions_of_a_tenant_diffs_their_after_states(viewer_api, editor_api, rules):
    created, patched = _put_then_patch(editor_api, rules)
    response = viewer_api.get("/api/v1/revisions/compare/", {"from": created, "to": patched})
    assert response.status_code == 200
    body = response.json()
    assert body["scope"] == {"kind": "tenant", "key": "t1", "label": "tenant t1"}
    assert body["diff"] == [{"path": "max_queriers_per_tenant", "before": 3, "after": 7}]
    assert "-  max_queriers_per_tenant: 3\n+  max_queriers_per_tenant: 7\n" in body["yaml_diff"]
    assert body["from"]["id"] == created and body["to"]["id"] == patched
    backwards = viewer_api.get("/api/v1/revisions/compare/", {"from": patched, "to": created})
    assert backwards.json()["diff"] == [
        {"path": "max_queriers_per_tenant", "before": 7, "after": 3}
    ]


def test_compare_across_kinds_covers_the_whole_config_at_each_revision(editor_api, rules):
    created, _ = _put_then_patch(editor_api, rules)
    editor_api.put("/api/v1/tenants/t2/", {"max_queriers_per_tenant": 1}, format="json")
    etag = editor_api.get("/api/v1/settings/")["ETag"]
    editor_api.patch(
        "/api/v1/settings/", {"priority_aging": "10s"}, format="json", HTTP_IF_MATCH=etag
    )
    newest = editor_api.get("/api/v1/revisions/", {"limit": 1}).json()["results"][0]["id"]
    body = editor_api.get("/api/v1/revisions/compare/", {"from": created, "to": newest}).json()
    assert body["scope"]["kind"] == "config"
    assert body["diff"] == [
        {"path": "overrides.t1.max_queriers_per_tenant", "before": 3, "after": 7},
        {"path": "overrides.t2", "before": None, "after": {"max_queriers_per_tenant": 1}},
        {"path": "settings.priority_aging", "before": "0s", "after": "10s"},
    ]
    assert "+  t2:\n+    max_queriers_per_tenant: 1\n" in body["yaml_diff"]
    assert "-  priority_aging: 0s\n+  priority_aging: 10s\n" in body["yaml_diff"]


def test_compare_may_be_narrowed_to_one_tenant_or_widened_to_the_whole_config(editor_api, rules):
    created, patched = _put_then_patch(editor_api, rules)
    whole = editor_api.get(
        "/api/v1/revisions/compare/", {"from": created, "to": patched, "scope": "config"}
    ).json()
    assert whole["diff"] == [
        {"path": "overrides.t1.max_queriers_per_tenant", "before": 3, "after": 7}
    ]
    other = editor_api.get(
        "/api/v1/revisions/compare/", {"from": created, "to": patched, "tenant": "t9"}
    ).json()
    assert other["scope"]["key"] == "t9" and other["diff"] == [] and other["yaml_diff"] == ""


def test_compare_sees_through_a_runtime_config_import_between_the_two(editor_api, rules):
    created, _ = _put_then_patch(editor_api, rules)
    current = editor_api.get("/api/v1/runtime-config/")
    file = "overrides:\n  t1:\n    max_queriers_per_tenant: 9\n    ingestion_rate: 5\n"
    editor_api.put(
        "/api/v1/runtime-config/",
        file,
        content_type="application/yaml",
        HTTP_IF_MATCH=current["ETag"],
    )
    newest = editor_api.get("/api/v1/revisions/", {"limit": 1}).json()["results"][0]["id"]
    body = editor_api.get(
        "/api/v1/revisions/compare/", {"from": created, "to": newest, "tenant": "t1"}
    ).json()
    assert body["diff"][0] == {"path": "max_queriers_per_tenant", "before": 3, "after": 9}
    assert {c["path"] for c in body["diff"]} == {"max_queriers_per_tenant", "query_priority"}


def test_compare_names_every_bad_parameter_and_404s_an_unknown_revision(editor_api, rules):
    created, _ = _put_then_patch(editor_api, rules)
    bad = editor_api.get("/api/v1/revisions/compare/", {"to": "x", "scope": "everything"})
    assert bad.status_code == 400
    assert set(bad.json()) == {"from", "to", "scope"}
    missing = editor_api.get("/api/v1/revisions/compare/", {"from": created, "to": 999})
    assert missing.status_code == 404
    spaced = editor_api.get(
        "/api/v1/revisions/compare/", {"from": created, "to": created, "tenant": "a b"}
    )
    assert spaced.status_code == 400 and set(spaced.json()) == {"tenant"}


def test_the_tenant_yaml_is_the_export_block_with_its_etag(viewer_api, editor_api, rules):
    editor_api.put(URL, rules, format="json")
    response = viewer_api.get("/api/v1/tenants/t1/yaml/")
    assert response.status_code == 200
    body = response.json()
    export = yaml.safe_load(editor_api.get("/api/v1/runtime-config/").content)
    assert yaml.safe_load(body["yaml"]) == {"t1": export["overrides"]["t1"]}
    assert response["ETag"] == f'"{body["version"]}"'
    assert viewer_api.get("/api/v1/tenants/nope/yaml/").status_code == 404


def test_a_pasted_cortex_block_parses_with_its_extra_limits_reported(viewer_api):
    pasted = (
        "other-tenant:\n"
        "  ingestion_rate: 10000\n"
        "  max_queriers_per_tenant: 2\n"
        "  max_fetched_series_per_query: 5\n"
        "  query_priority:\n"
        "    enabled: true\n"
        "    priorities:\n"
        "    - priority: 1\n"
        "      query_attributes:\n"
        "      - regex: (oops\n"
    )
    response = viewer_api.post("/api/v1/tenants/t1/yaml/", {"yaml": pasted}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["pasted_tenant"] == "other-tenant" and body["valid"] is False
    assert body["ignored"] == [
        {"name": "ingestion_rate", "line": 2},
        {"name": "max_fetched_series_per_query", "line": 4},
    ]
    assert body["config"]["max_queriers_per_tenant"] == 2
    assert "ingestion_rate" not in body["config"]
    [error] = body["errors"]
    assert error["path"] == "query_priority.priorities[0].query_attributes[0].regex"
    assert error["line"] == 10 and "RE2" in error["message"]
    assert body["yaml"].startswith("t1:\n  max_queriers_per_tenant: 2\n")


def test_a_block_that_is_not_yaml_reports_the_line_of_the_syntax_error(viewer_api):
    response = viewer_api.post(
        "/api/v1/tenants/t1/yaml/", {"yaml": "max_queriers_per_tenant: 1\nx: [\n"}, format="json"
    )
    body = response.json()
    assert body["valid"] is False and body["config"] is None and body["yaml"] == ""
    assert body["errors"][0]["path"] == "(yaml)" and body["errors"][0]["line"] == 3


def test_a_pasted_base_60_number_is_refused_at_its_field_and_nothing_changes(editor_api, rules):
    # PyYAML read `1:20` as 80; Cortex's Go loader reads the text "1:20".
    editor_api.put(URL, rules, format="json")
    pasted = "t1:\n  max_queriers_per_tenant: 1:20\n"
    response = editor_api.post("/api/v1/tenants/t1/yaml/", {"yaml": pasted}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["valid"] is False and body["config"] == {"max_queriers_per_tenant": "1:20"}
    [error] = body["errors"]
    assert (error["path"], error["line"]) == ("max_queriers_per_tenant", 2)
    assert editor_api.get(URL).json()["max_queriers_per_tenant"] == rules["max_queriers_per_tenant"]
    assert ConfigRevision.objects.count() == 1


def test_a_pasted_binary_value_is_refused_with_its_path_and_line_and_nothing_changes(
    editor_api, rules
):
    editor_api.put(URL, rules, format="json")
    pasted = (
        "query_priority:\n  enabled: true\n  priorities:\n    - priority: 1\n"
        "      query_attributes:\n        - regex: !!binary /w==\n"
    )
    response = editor_api.post("/api/v1/tenants/t1/yaml/", {"yaml": pasted}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["valid"] is False and body["config"] is None and body["yaml"] == ""
    [error] = body["errors"]
    path = "query_priority.priorities[0].query_attributes[0].regex"
    assert (error["path"], error["line"]) == (path, 6)
    assert error["message"].startswith(f"!!binary at {path}: an explicit tag")
    assert editor_api.get(URL).json()["query_priority"] == rules["query_priority"]
    assert ConfigRevision.objects.count() == 1


def test_the_yaml_views_need_a_role_and_a_string(anon_api, viewer_api):
    assert anon_api.get("/api/v1/tenants/t1/yaml/").status_code in (401, 403)
    assert anon_api.get("/api/v1/revisions/compare/?from=1&to=1").status_code in (401, 403)
    response = viewer_api.post("/api/v1/tenants/t1/yaml/", {"yaml": 5}, format="json")
    assert response.status_code == 400
    # Named as JSON spells it (it said "got NoneType").
    response = viewer_api.post("/api/v1/tenants/t1/yaml/", {"yaml": None}, format="json")
    assert response.status_code == 400 and "must be a string, got null" in response.content.decode()
