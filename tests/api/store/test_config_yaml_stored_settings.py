"""`settings_canonical` / `settings_yaml` over whatever the settings row holds."""

from __future__ import annotations

from typing import Any

import pytest

from api.store.config_yaml import settings_canonical, settings_yaml
from scheduler_core.model import QueueConfig
from scheduler_core.validation import queue_config_to_dict


@pytest.mark.parametrize("stored", [None, {}])
def test_an_empty_or_missing_row_is_every_default(stored: Any) -> None:
    assert settings_canonical(stored) == queue_config_to_dict(QueueConfig())


@pytest.mark.parametrize("stored", [["tenant-first"], "tenant-first", 5, True])
def test_a_row_holding_no_mapping_is_shown_as_stored(stored: Any) -> None:
    assert settings_canonical(stored) == stored


def test_the_yaml_of_a_row_holding_a_list_is_that_list() -> None:
    assert settings_yaml(["tenant-first"]) == "- tenant-first\n"


def test_settings_that_no_longer_validate_are_shown_as_stored() -> None:
    assert settings_canonical({"layout": "sideways"}) == {"layout": "sideways"}
