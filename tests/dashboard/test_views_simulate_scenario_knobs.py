"""The Simulate page tells its script what a scenario's blank Duration and Queriers mean."""

from __future__ import annotations

import re


def test_each_scenario_option_carries_its_own_duration_and_queriers(viewer_client):
    html = viewer_client.get("/simulate/").content.decode()
    seed = re.search(r'<option value="scenario:cortex-seed"[^>]*>', html)
    mimir = re.search(r'<option value="scenario:mimir-slow-consumer"[^>]*>', html)
    assert seed and mimir
    assert 'data-duration="300"' in seed[0] and 'data-queriers="4"' in seed[0]
    # No duration of its own: every request arrives at once (the box is hidden).
    assert "data-duration" not in mimir[0] and 'data-queriers="8"' in mimir[0]


def test_recent_traffics_words_are_the_boxes_labels_as_the_page_opens(viewer_client):
    html = viewer_client.get("/simulate/").content.decode()
    assert '<span class="blank-means">(blank: the window)</span>' in html
    assert '<span class="blank-means">(blank: as connected)</span>' in html
    assert 'id="duration-field"' in html


def test_the_service_factors_sit_in_a_group_named_by_its_legend(viewer_client):
    html = viewer_client.get("/simulate/").content.decode()
    group = html[
        html.index('<fieldset class="factors">') : html.index(
            "</fieldset>", html.index('<fieldset class="factors">')
        )
    ]
    assert "<legend" in group and "Service time × per component" in group
    for component in ("ingester", "store-gateway", "ingester-and-store-gateway", "unknown"):
        assert f'id="factor-{component}"' in group
