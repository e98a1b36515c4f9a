"""History's compare picks: carried in the URL across pages and filters; one alone refused there."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from api.store import services
from api.store.models import ConfigRevision

pytestmark = pytest.mark.django_db


@pytest.fixture
def revisions() -> list[ConfigRevision]:
    """60 revisions (three pages of 25), oldest first: t0 ... t59 created."""
    for n in range(60):
        services.tenant_put(
            tenant_id=f"t{n}", config={}, expected_version=None, author=None, source="cli"
        )
    return list(ConfigRevision.objects.order_by("version"))


def _pressed(html: str, name: str) -> list[str]:
    """The revisions whose `name` button is pressed (its value empty: pressed again, it unpicks)."""
    return re.findall(
        rf'name="{name}" value="" data-id="(\d+)" data-label="#\d+" aria-pressed="true"', html
    )


def test_a_from_picked_on_one_page_stays_picked_on_another_and_in_its_pager_links(
    viewer_client: Client, revisions: list[ConfigRevision]
) -> None:
    newest = revisions[-1]
    html = viewer_client.get("/history/", {"page": "3", "from": newest.pk}).content.decode()
    assert f'<strong data-pick="from">#{newest.version}</strong>' in html
    assert '<strong data-pick="to">none</strong>' in html
    # Carried in the Compare form, ahead of the rows' buttons (a press submits after it).
    carried = (
        f'<input type="hidden" name="from" value="{newest.pk}" data-label="#{newest.version}">'
    )
    assert carried in html and html.index(carried) < html.index('class="small pick"')
    assert '<input type="hidden" name="to" value="" data-label="" disabled>' in html
    assert _pressed(html, "from") == []  # not on page 3
    assert f"?from={newest.pk}&amp;page=2" in html  # the pager keeps it
    first_page = viewer_client.get("/history/", {"from": newest.pk}).content.decode()
    assert _pressed(first_page, "from") == [str(newest.pk)]
    assert _pressed(first_page, "to") == []
    assert carried in first_page


def test_a_row_button_submits_after_the_carried_pick_so_it_replaces_or_clears_it(
    viewer_client: Client, revisions: list[ConfigRevision]
) -> None:
    """Without the page's script: the form's query string, as a browser builds it."""
    newest, older = revisions[-1], revisions[-2]
    replaced = viewer_client.get(f"/history/?from={newest.pk}&from={older.pk}").content.decode()
    assert _pressed(replaced, "from") == [str(older.pk)]
    assert f'<strong data-pick="from">#{older.version}</strong>' in replaced
    cleared = viewer_client.get(f"/history/?from={newest.pk}&from=").content.decode()
    assert _pressed(cleared, "from") == []
    assert '<strong data-pick="from">none</strong>' in cleared
    # Unpressed buttons name their revision.
    assert (
        f'name="to" value="{older.pk}" data-id="{older.pk}" data-label="#{older.version}" '
        'aria-pressed="false" aria-label="Compare to revision' in cleared
    )


def test_filtering_keeps_the_picks(viewer_client: Client, revisions: list[ConfigRevision]) -> None:
    picked = revisions[3]
    html = viewer_client.get("/history/", {"to": picked.pk, "search": "t5"}).content.decode()
    form = re.search(r'<form method="get" class="history-filter".*?</form>', html, re.DOTALL)
    assert form is not None
    assert f'name="to" value="{picked.pk}" data-pick="to"' in form.group(0)
    assert f'<strong data-pick="to">#{picked.version}</strong>' in html


def test_compare_with_one_pick_stays_on_history_saying_so_at_the_button(
    viewer_client: Client, revisions: list[ConfigRevision]
) -> None:
    picked = revisions[-1]
    answer = viewer_client.get("/history/", {"from": picked.pk, "page": "2", "compare": "1"})
    html = answer.content.decode()
    assert answer.status_code == 400
    assert 'id="compare-problem"' in html and (
        "Pick a To revision as well: the From stays picked as you page and filter." in html
    )
    assert "page 2 of 3" in html
    assert (
        'name="compare" value="1" aria-describedby="compare-picked compare-problem" autofocus'
        in (html)
    )
    # The pager and the layout switch do not ask to compare again.
    assert "compare=1" not in html.replace('name="compare" value="1"', "")
    none = viewer_client.get("/history/", {"compare": "1"}).content.decode()
    assert "Pick two revisions to compare: one as From and one as To." in none


def test_compare_with_two_picks_opens_the_comparison_of_the_filtered_tenant(
    viewer_client: Client, revisions: list[ConfigRevision]
) -> None:
    first, second = revisions[0], revisions[40]
    answer = viewer_client.get(
        "/history/",
        {"from": first.pk, "to": second.pk, "compare": "1", "key": "t0", "diff": "split"},
    )
    assert answer.status_code == 302
    assert answer.url == f"/history/compare/?from={first.pk}&to={second.pk}&tenant=t0&diff=split"
    assert viewer_client.get(answer.url).status_code == 200


def test_a_pick_naming_no_revision_is_refused_at_the_compare_button(
    viewer_client: Client, revisions: list[ConfigRevision]
) -> None:
    answer = viewer_client.get("/history/", {"from": "999999", "to": "x"})
    assert answer.status_code == 400
    html = answer.content.decode()
    assert "From: there is no revision with id “999999”; pick another." in html
    assert "To: there is no revision with id “x”; pick another." in html
    assert '<strong data-pick="from">none</strong>' in html


def test_the_rollback_page_is_a_page_not_a_dialog(
    editor_client: Client, revisions: list[ConfigRevision]
) -> None:
    html = editor_client.get(f"/history/{revisions[-1].pk}/rollback/").content.decode()
    assert 'role="dialog"' not in html
    assert '<h1 id="rollback-title">Roll back revision' in html and '<main id="main">' in html
