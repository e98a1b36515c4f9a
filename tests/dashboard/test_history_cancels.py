"""The History page lists operators' cancels beside the config revisions."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client

from api.store import services
from api.store.models import ConfigRevision


def test_history_lists_each_cancel_with_who_what_and_the_note_escaped(
    viewer_client: Client, editor: User
) -> None:
    services.operator_cancel_record(
        author=editor,
        source=ConfigRevision.Source.UI,
        request_id="ws:frontend-3:7",
        matched=1,
        cancelled=1,
        note="runaway <script>alert(1)</script>",
        replicas=["replica-a"],
    )
    services.operator_cancel_record(
        author=None,
        source=ConfigRevision.Source.API,
        filter={"tenant": "acme", "regex": "rate\\("},
        matched=12,
        cancelled=11,
    )
    page = viewer_client.get("/history/").content.decode()
    assert "Operator cancels" in page
    assert "Cancelled request <code>ws:frontend-3:7</code>" in page
    assert "by erin via UI" in page and "on replica-a" in page
    assert "runaway &lt;script&gt;" in page and "<script>alert" not in page
    assert "Cancelled 11 of 12 matching" in page
    assert "<code>tenant=acme</code>" in page and "by unknown via API" in page
    assert page.index("ws:frontend-3:7") > page.index("Cancelled 11 of 12")  # newest first


def test_history_says_when_nobody_cancelled_anything(viewer_client: Client) -> None:
    assert (
        "No operator has cancelled a query yet." in viewer_client.get("/history/").content.decode()
    )


def test_a_filter_that_matches_no_revision_says_so_and_the_cancels_say_they_are_all_listed(
    viewer_client: Client,
) -> None:
    services.tenant_put(
        tenant_id="acme", config={}, expected_version=None, author=None, source="cli"
    )
    page = viewer_client.get("/history/?key=nobody").content.decode()
    assert "No revision matches these filters." in page
    assert "No change has been made yet." not in page
    assert "every cancel is listed" in page
    unfiltered = viewer_client.get("/history/").content.decode()
    assert "every cancel is listed" not in unfiltered and 'id="no-revisions"' not in unfiltered


def test_a_cancel_limited_to_a_count_s_instant_shows_that_instant_as_a_utc_time(
    viewer_client: Client,
) -> None:
    services.operator_cancel_record(
        author=None,
        source=ConfigRevision.Source.UI,
        filter={"tenant": "acme", "enqueued_before": 1796597163.290644},
        matched=2,
        cancelled=2,
    )
    services.operator_cancel_record(
        author=None,
        source=ConfigRevision.Source.API,
        filter={"tenant": "beta", "enqueued_before": "2026-12-06T23:00:00Z"},
        matched=1,
        cancelled=1,
    )
    page = viewer_client.get("/history/").content.decode()
    assert "<code>enqueued_before=1796597163.290644 (2026-12-06 22:46:03.290 UTC)</code>" in page
    # Text that is already a time is shown as it was sent.
    assert "<code>enqueued_before=2026-12-06T23:00:00Z</code>" in page
