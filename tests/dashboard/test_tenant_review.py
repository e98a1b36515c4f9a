"""The first Save's review: the verdict on the last query tried says what admission will do."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from api.store import services
from api.store.models import ConfigRevision

pytestmark = pytest.mark.django_db

PRIORITY = {
    "enabled": True,
    "default_priority": 1,
    "priorities": [{"priority": 5, "query_attributes": [{"regex": "errors"}]}],
}

URL = "/tenants/acme/"
SAVED = """acme:
  query_priority:
    enabled: true
    default_priority: 1
    priorities:
      - priority: 5
        query_attributes:
          - regex: errors
"""
REJECTING = (
    SAVED
    + """  query_rejection:
    enabled: true
    query_attributes:
      - regex: "^sum\\\\(rate\\\\(errors"
"""
)


def _review(client: Client, text: str, version: int, **explain: str) -> str:
    """The review of saving `text` with `explain` in the explain box (default: an instant query)."""
    tried = explain or {"query": "sum(rate(errors_total[5m]))", "api_type": "query"}
    answer = client.post(
        URL,
        {
            "view": "yaml",
            "yaml": text,
            "action": "save",
            "version": str(version),
            **{f"explain_{key}": value for key, value in tried.items()},
        },
    )
    assert answer.status_code == 200 and 'id="review"' in answer.content.decode()
    return answer.content.decode()


def _verdict(page: str, side: str) -> str:
    found = re.search(rf'<strong id="verdict-{side}">([^<]*)</strong> \(([^)]*)\)', page)
    assert found, f"no {side} verdict in the review"
    return f"{found.group(1)} ({found.group(2)})"


def test_a_draft_that_rejects_the_last_query_tried_says_rejected_not_a_priority(
    editor_client: Client,
) -> None:
    saved = services.tenant_put(
        tenant_id="acme",
        config={"query_priority": PRIORITY},
        expected_version=None,
        author=None,
        source="cli",
    )
    page = _review(editor_client, REJECTING, saved.version)
    # Admission judges rejection first: the request is answered 422, never queued.
    assert _verdict(page, "draft") == "rejected (HTTP 422) (query rejection attribute 1)"
    assert "never queued" in page
    assert _verdict(page, "saved") == "5 (rule 1, attribute 1)"
    assert ConfigRevision.objects.count() == 1


def test_a_draft_that_lifts_a_rejection_says_what_the_saved_config_does(
    editor_client: Client,
) -> None:
    saved = services.tenant_put(
        tenant_id="acme",
        config={
            "query_priority": PRIORITY,
            "query_rejection": {
                "enabled": True,
                "query_attributes": [{"regex": "^sum\\(rate\\(errors"}],
            },
        },
        expected_version=None,
        author=None,
        source="cli",
    )
    page = _review(editor_client, SAVED, saved.version)
    assert _verdict(page, "draft") == "5 (rule 1, attribute 1)"
    assert _verdict(page, "saved") == "rejected (HTTP 422) (query rejection attribute 1)"


def test_a_metadata_call_given_by_its_selectors_alone_gets_its_verdict(
    editor_client: Client,
) -> None:
    saved = services.tenant_put(
        tenant_id="acme",
        config={},
        expected_version=None,
        author=None,
        source="cli",
    )
    page = _review(
        editor_client,
        SAVED,
        saved.version,
        query="",
        matchers='up\r\n{__name__="errors_total"}',
        api_type="series",
        start="1h",
        end="0s",
        step="",
    )
    assert _verdict(page, "draft") == "5 (rule 1, attribute 1)"


def _save_review(client: Client, posted: dict[str, str]) -> tuple[dict[str, Any], str]:
    """The review context and page of a first Save of `posted`."""
    answer = client.post(URL, posted)
    assert answer.status_code == 200 and answer.context["review"] is not None
    return answer.context["review"], answer.content.decode()


@pytest.fixture
def saved_without_default() -> int:
    """acme saved with rules and no `default_priority`; its version."""
    rules = {key: value for key, value in PRIORITY.items() if key != "default_priority"}
    saved = services.tenant_put(
        tenant_id="acme",
        config={"query_priority": rules},
        expected_version=None,
        author=None,
        source="cli",
    )
    return saved.version


def test_a_pasted_default_priority_of_0_the_saved_block_lacks_is_named_as_left_out(
    editor_client: Client, saved_without_default: int
) -> None:
    pasted = SAVED.replace("default_priority: 1", "default_priority: 0")
    review, page = _save_review(
        editor_client,
        {"view": "yaml", "yaml": pasted, "action": "save", "version": str(saved_without_default)},
    )
    assert review["left_out"] == ["query_priority.default_priority"]
    # Nothing else changes, and the page says why the pasted line is not saved.
    assert 'id="review-nothing"' in page
    assert (
        "Left out, at their default (as unset): <code>query_priority.default_priority</code>"
        in page
    )
    assert ConfigRevision.objects.count() == 1


def test_a_block_left_out_whole_is_named_once_beside_the_change_that_is_saved(
    editor_client: Client, saved_without_default: int
) -> None:
    pasted = (
        SAVED.replace("default_priority: 1", "default_priority: 3")
        + "  query_rejection:\n    enabled: false\n"
    )
    review, page = _save_review(
        editor_client,
        {"view": "yaml", "yaml": pasted, "action": "save", "version": str(saved_without_default)},
    )
    assert [c.path for c in review["paths"]] == ["query_priority.default_priority"]
    assert review["left_out"] == ["query_rejection"]
    assert 'id="confirm-save"' in page and 'id="review-left-out"' in page


def test_the_form_s_unset_boxes_are_not_listed_as_left_out(
    editor_client: Client, saved_without_default: int
) -> None:
    # The form posts every box it shows: a 0 there was never typed as a change.
    posted = {
        "action": "save",
        "version": str(saved_without_default),
        "max_queriers_per_tenant": "0",
        "query_priority.enabled": "on",
        "query_priority.default_priority": "4",
        "query_priority.priorities[0].priority": "5",
        "query_priority.priorities[0].query_attributes[0].regex": "errors",
    }
    review, page = _save_review(editor_client, posted)
    assert [c.path for c in review["paths"]] == ["query_priority.default_priority"]
    assert review["left_out"] == [] and 'id="review-left-out"' not in page
