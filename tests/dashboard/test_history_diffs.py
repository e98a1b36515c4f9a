"""History as line diffs of the YAML: per revision, any two compared, rollback's diff first."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from api.store import selectors, services
from api.store.models import ConfigRevision

pytestmark = pytest.mark.django_db


def seen_version(page: str) -> str:
    """The config version the rollback's confirm form says its diff was made at."""
    found = re.search(r'name="seen_version" value="(\d+)"', page)
    assert found is not None
    return found.group(1)


def _rules(count: int, last_regex: str) -> dict[str, Any]:
    priorities = [
        {"priority": count - i, "query_attributes": [{"regex": f"rule_{i}"}]}
        for i in range(count - 1)
    ]
    priorities.append({"priority": 100, "query_attributes": [{"regex": last_regex}]})
    return {"query_priority": {"enabled": True, "default_priority": 0, "priorities": priorities}}


@pytest.fixture
def history() -> list[ConfigRevision]:
    """team-a created with 12 rules, then only its last regex changed; team-b created."""
    services.tenant_put(
        tenant_id="team-a",
        config=_rules(12, "old_regex"),
        expected_version=None,
        author=None,
        source="cli",
    )
    services.tenant_patch(
        tenant_id="team-a",
        changes=_rules(12, "new_regex"),
        expected_version=None,
        author=None,
        source="api",
    )
    services.tenant_put(
        tenant_id="team-b",
        config={"max_queriers_per_tenant": 2},
        expected_version=None,
        author=None,
        source="cli",
    )
    return list(ConfigRevision.objects.order_by("version"))


def test_each_revision_shows_its_yaml_line_diff_with_long_unchanged_parts_folded(
    viewer_client: Client, history: list[ConfigRevision]
) -> None:
    page = viewer_client.get("/history/").content.decode()
    assert page.count('class="ydiff unified"') == 3
    assert "regex: <mark>old</mark>_regex" in page and "regex: <mark>new</mark>_regex" in page
    assert '<details class="fold"><summary>⋯ ' in page
    assert (
        "1 changed field: <code"
        ' title="query_priority.priorities[11].query_attributes[0].regex">'
        "rule 12 › attribute 1 › regex</code>" in page
    )


def test_the_side_by_side_layout_pairs_each_changed_line_with_its_new_text(
    viewer_client: Client, history: list[ConfigRevision]
) -> None:
    page = viewer_client.get("/history/?diff=split").content.decode()
    assert page.count('class="ydiff split"') == 3
    assert '<div class="yl changed">' in page
    assert 'aria-current="true">Side by side</a>' in page


def test_two_picked_revisions_compare_as_one_diff(
    viewer_client: Client, history: list[ConfigRevision]
) -> None:
    created, patched, other = history
    page = viewer_client.get(
        "/history/compare/", {"from": str(patched.pk), "to": str(created.pk)}
    ).content.decode()
    assert "Tenant team-a: the state after <strong>#1</strong>" in page  # put in time order
    assert "regex: <mark>old</mark>_regex" in page
    whole = viewer_client.get(
        "/history/compare/", {"from": str(created.pk), "to": str(other.pk)}
    ).content.decode()
    assert "The whole config" in whole and "overrides.team-b" in whole
    only_b = viewer_client.get(
        "/history/compare/", {"from": str(created.pk), "to": str(other.pk), "tenant": "team-b"}
    ).content.decode()
    assert "Tenant team-b" in only_b and "+team-b:" not in only_b
    assert "max_queriers_per_tenant: 2" in only_b


def test_compare_without_two_revisions_says_what_to_pick(viewer_client: Client) -> None:
    response = viewer_client.get("/history/compare/", {"from": "1"})
    assert response.status_code == 400
    assert "Pick two revisions" in response.content.decode()


def test_rollback_shows_the_diff_it_will_apply_and_changes_nothing_until_confirmed(
    editor_client: Client, history: list[ConfigRevision]
) -> None:
    _, patched, _ = history
    asked = editor_client.get(f"/history/{patched.pk}/rollback/")
    page = asked.content.decode()
    assert asked.status_code == 200 and 'id="rollback-diff"' in page
    assert "regex: <mark>new</mark>_regex" in page and "regex: <mark>old</mark>_regex" in page
    assert ConfigRevision.objects.count() == 3
    seen = seen_version(page)
    editor_client.post(f"/history/{patched.pk}/rollback/", {"confirm": "yes", "seen_version": seen})
    config = selectors.tenant_get(tenant_id="team-a").config
    assert config["query_priority"]["priorities"][11]["query_attributes"] == [
        {"regex": "old_regex"}
    ]
    again = editor_client.get(f"/history/{patched.pk}/rollback/").content.decode()
    assert 'id="rollback-nothing"' in again
