"""Rollback from History takes a change note, recorded as a save's note is."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from api.store import selectors, services
from api.store.models import ConfigRevision
from dashboard.views_history import ROLLBACK_NOTE_MAX

pytestmark = pytest.mark.django_db


@pytest.fixture
def changed(rules: dict[str, Any]) -> ConfigRevision:
    """acme saved, then changed: the change is the revision to roll back."""
    services.tenant_put(
        tenant_id="acme", config=rules, expected_version=None, author=None, source="cli"
    )
    services.tenant_put(
        tenant_id="acme",
        config={**rules, "max_queriers_per_tenant": 7},
        expected_version=selectors.tenant_get(tenant_id="acme").version,
        author=None,
        source="cli",
    )
    latest = ConfigRevision.objects.first()
    assert latest is not None
    return latest


def _seen(client: Client, revision: ConfigRevision) -> str:
    asked = client.post(f"/history/{revision.pk}/rollback/").content.decode()
    found = re.search(r'name="seen_version" value="(\d+)"', asked)
    assert found is not None
    return found.group(1)


def test_the_rollback_page_has_a_change_note_box_for_an_editor(
    editor_client: Client, changed: ConfigRevision
) -> None:
    page = editor_client.post(f"/history/{changed.pk}/rollback/").content.decode()
    assert '<label for="rollback-note">Change note (optional)</label>' in page
    assert f'name="message" value="" maxlength="{ROLLBACK_NOTE_MAX}"' in page


def test_a_rollback_note_is_recorded_after_the_revision_it_rolls_back(
    editor_client: Client, changed: ConfigRevision
) -> None:
    response = editor_client.post(
        f"/history/{changed.pk}/rollback/",
        {
            "confirm": "yes",
            "seen_version": _seen(editor_client, changed),
            "message": " bad deploy ",
        },
        follow=True,
    )
    assert "Rolled back" in response.content.decode()
    restored = ConfigRevision.objects.first()
    assert restored is not None and restored.source == "rollback"
    assert restored.message == f"rollback of revision #{changed.version}: bad deploy"
    assert f"rollback of revision #{changed.version}: bad deploy" in response.content.decode()


def test_a_rollback_without_a_note_keeps_the_default_message(
    editor_client: Client, changed: ConfigRevision
) -> None:
    editor_client.post(
        f"/history/{changed.pk}/rollback/",
        {"confirm": "yes", "seen_version": _seen(editor_client, changed), "message": "  "},
    )
    restored = ConfigRevision.objects.first()
    assert restored is not None
    assert restored.message == f"rollback of revision #{changed.version}"


def test_a_note_too_long_is_refused_at_its_box_and_nothing_is_rolled_back(
    editor_client: Client, changed: ConfigRevision
) -> None:
    before = ConfigRevision.objects.count()
    note = "x" * (ROLLBACK_NOTE_MAX + 1)
    response = editor_client.post(
        f"/history/{changed.pk}/rollback/",
        {"confirm": "yes", "seen_version": _seen(editor_client, changed), "message": note},
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert (
        f"Change note: at most {ROLLBACK_NOTE_MAX} characters (it has {len(note)}); nothing changed"
    ) in page
    assert 'aria-invalid="true" aria-describedby="rollback-note-err" autofocus' in page
    # The note typed is kept, to shorten rather than type again.
    assert f'value="{note}"' in page
    assert ConfigRevision.objects.count() == before
    assert selectors.tenant_get(tenant_id="acme").config["max_queriers_per_tenant"] == 7


def test_a_note_survives_the_review_again_after_a_change_landed(
    editor_client: Client, changed: ConfigRevision, rules: dict[str, Any]
) -> None:
    seen = _seen(editor_client, changed)
    services.tenant_put(
        tenant_id="other", config=rules, expected_version=None, author=None, source="cli"
    )
    response = editor_client.post(
        f"/history/{changed.pk}/rollback/",
        {"confirm": "yes", "seen_version": seen, "message": "bad deploy"},
    )
    assert response.status_code == 409
    assert 'name="message" value="bad deploy"' in response.content.decode()


def test_a_viewer_gets_no_rollback_page_nor_its_note_box(
    viewer_client: Client, changed: ConfigRevision
) -> None:
    response = viewer_client.post(f"/history/{changed.pk}/rollback/")
    assert response.status_code == 403
    assert "rollback-note" not in response.content.decode()


def test_the_rollback_of_a_tenants_creation_says_it_deletes_the_tenant(
    editor_client: Client, changed: ConfigRevision
) -> None:
    created = ConfigRevision.objects.order_by("version").first()
    assert created is not None and created.before is None
    page = editor_client.post(f"/history/{created.pk}/rollback/").content.decode()
    deletes = r'id="rollback-deletes">.*<strong>deletes tenant <span class="mono">acme'
    assert re.search(deletes, page)
    # A change's rollback restores, and says so.
    page = editor_client.post(f"/history/{changed.pk}/rollback/").content.decode()
    assert 'id="rollback-deletes"' not in page and "Rolling back restores" in page
