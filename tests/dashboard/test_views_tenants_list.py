"""The tenants list page: what its columns mean, said on the page."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def _share_header(html: str) -> str:
    (th,) = re.findall(r"<th [^>]*>Default share \(1 h\)</th>", html)
    return th


def test_the_default_share_column_is_explained_under_the_table_and_its_header_points_there(
    viewer_client: Client, team: Any
) -> None:
    html = viewer_client.get("/tenants/").content.decode()
    (help_line,) = re.findall(r'<p class="help" id="default-share-help">(.*?)</p>', html)
    # What the share is of, over what time, and how to read "N% of M".
    assert help_line.startswith(
        "Default share (1 h): of the requests a tenant sent in the last hour, the part given"
        " its default priority because no priority rule matched them"
    )
    assert "“25% of 8” means 2 of 8." in help_line
    assert 'aria-describedby="default-share-help"' in _share_header(html)


def test_an_empty_tenants_list_has_no_share_help_nor_a_header_pointing_at_it(
    viewer_client: Client, team: Any
) -> None:
    html = viewer_client.get("/tenants/", {"search": "nobody-by-this-name"}).content.decode()
    assert "No tenant matches" in html
    assert "default-share-help" not in html
    assert "aria-describedby" not in _share_header(html)
