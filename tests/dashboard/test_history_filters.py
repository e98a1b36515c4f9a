"""The History page's filters: the tenant box matches part of an ID in any case."""

from __future__ import annotations

import re

import pytest
from django.http import HttpResponse
from django.test import Client

from api.store import services

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _tenants() -> None:
    for tenant in ("acme", "Acme-EU", "other"):
        services.tenant_put(
            tenant_id=tenant, config={}, expected_version=None, author=None, source="cli"
        )


def _listed(html: str) -> list[str]:
    """The tenant of each listed revision, newest first."""
    return re.findall(r'<span class="chip">tenant</span> <a href="[^"]+">([^<]+)</a>', html)


@pytest.mark.parametrize("typed", ["acm", "ACME", " cMe "])
def test_the_tenant_box_finds_every_tenant_whose_id_contains_the_text_in_any_case(
    viewer_client: Client, typed: str
) -> None:
    response = viewer_client.get("/history/", {"search": typed})
    assert response.status_code == 200
    html = response.content.decode()
    assert _listed(html) == ["Acme-EU", "acme"]
    assert f'name="search" type="search" value="{typed.strip()}"' in html


def test_the_tenant_box_says_it_matches_part_of_an_id(viewer_client: Client) -> None:
    html = viewer_client.get("/history/").content.decode()
    assert 'aria-describedby="h-search-help"' in html
    assert (
        '<span class="muted" id="h-search-help">matches part of an ID, any case; imports that '
        "changed such a tenant are listed too</span>"
    ) in html


def test_a_tenants_history_lists_the_import_that_deleted_it(viewer_client: Client) -> None:
    # An import's key is empty: the page finds it by the tenants it changed.
    services.runtime_config_import(overrides={"acme": {}, "Acme-EU": {}}, author=None)
    for query in ("?key=other", "?search=OTH"):
        html = viewer_client.get(f"/history/{query}").content.decode()
        # other's creation (no link: the import deleted it), then the import.
        assert 'title="no such tenant now">other</span>' in html, query
        assert html.count('<span class="chip">tenant</span>') == 1, query
        assert html.count('<span class="chip">runtime-config import</span>') == 1, query
    html = viewer_client.get("/history/?key=acme").content.decode()
    assert '<span class="chip">runtime-config import</span>' not in html  # it left acme as it was


def test_a_link_naming_one_tenant_by_key_still_lists_that_tenant_exactly(
    viewer_client: Client,
) -> None:
    assert _listed(viewer_client.get("/history/?key=acme").content.decode()) == ["acme"]
    assert _listed(viewer_client.get("/history/?key=ACME").content.decode()) == []


def _refused_at(response: HttpResponse, tag: str, box_id: str) -> tuple[str, str]:
    """The page (a 400) and the refused box's tag, marked invalid and focused."""
    assert response.status_code == 400
    html = response.content.decode()
    box = re.search(rf'<{tag} id="{box_id}"[^>]*>', html)
    assert box is not None
    assert 'aria-invalid="true"' in box.group() and "autofocus" in box.group()
    return html, box.group()


def test_a_search_no_tenant_id_could_contain_is_refused_at_the_box_and_lists_nothing(
    viewer_client: Client,
) -> None:
    html, box = _refused_at(
        viewer_client.get("/history/", {"search": "acme eu"}), "input", "h-search"
    )
    assert 'aria-describedby="h-search-help h-search-err"' in box
    assert (
        '<p class="field-error" id="h-search-err">Tenant: invalid characters &#x27; &#x27;;' in html
    )
    assert _listed(html) == []
    assert "Nothing is listed until the tenant filter is fixed." in html


def test_an_unknown_kind_is_refused_at_the_kind_select_naming_the_kinds_there_are(
    viewer_client: Client,
) -> None:
    html, select = _refused_at(viewer_client.get("/history/", {"kind": "nope"}), "select", "h-kind")
    assert 'aria-describedby="h-kind-err"' in select
    assert (
        '<p class="field-error" id="h-kind-err">Kind: unknown kind “nope”: the kinds are'
        " tenant, settings, runtime-config</p>" in html
    )
    assert _listed(html) == []
    assert "Nothing is listed until the kind filter is fixed." in html
    # Still a page to filter from: the select offers every kind, with "any" shown.
    options = re.findall(r'<option value="([^"]*)"( selected)?', html)
    assert options == [("", ""), ("tenant", ""), ("settings", ""), ("runtime-config", "")]


def test_a_links_one_tenant_stays_through_filter_and_says_so(viewer_client: Client) -> None:
    html = viewer_client.get("/history/?key=acme&diff=split").content.decode()
    assert '<input type="hidden" name="key" value="acme">' in html
    chip = re.search(r'<span class="chip" id="h-key">tenant acme exactly <a href="\?([^"]*)"', html)
    assert chip is not None and chip.group(1) == "diff=split"
    # Filtering by kind keeps the one tenant.
    html = viewer_client.get("/history/", {"key": "acme", "kind": "tenant"}).content.decode()
    assert _listed(html) == ["acme"]
