"""The strict loader reads every scalar key as its text, as Go's decoder does."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from api.store.yaml_keys import DuplicateKey, strict_keys_loader

LOADERS = [yaml.SafeLoader] + ([yaml.CSafeLoader] if yaml.__with_libyaml__ else [])


def load(text: str, base: Any) -> Any:
    return yaml.load(text, Loader=strict_keys_loader(base))  # noqa: S506 - a safe loader


@pytest.mark.parametrize("base", LOADERS)
def test_numbers_booleans_and_dates_as_keys_stay_as_written(base: Any) -> None:
    text = "0123: a\n83: b\ntrue: c\n1.50: d\n0x1F: e\n2024-01-01: f\n!!int 7: g\n"
    assert load(text, base) == {
        "0123": "a",
        "83": "b",
        "true": "c",
        "1.50": "d",
        "0x1F": "e",
        "2024-01-01": "f",
        "7": "g",
    }


@pytest.mark.parametrize("base", LOADERS)
def test_values_keep_their_types(base: Any) -> None:
    assert load("a: 0123\nb: true\nc: 1.5\n", base) == {"a": 83, "b": True, "c": 1.5}


@pytest.mark.parametrize("base", LOADERS)
def test_keys_a_merge_brings_in_are_text_too(base: Any) -> None:
    text = "base: &b {1: x, 2: y}\nm:\n  <<: *b\n  2: z\n"
    assert load(text, base)["m"] == {"1": "x", "2": "z"}


@pytest.mark.parametrize("base", LOADERS)
def test_keys_clash_by_their_text(base: Any) -> None:
    with pytest.raises(DuplicateKey):
        load("1: a\n'1': b\n", base)
    assert load("1: a\n01: b\n", base) == {"1": "a", "01": "b"}


@pytest.mark.parametrize("base", LOADERS)
def test_a_null_key_is_the_empty_text_and_a_binary_one_its_decoded_text(base: Any) -> None:
    assert load("~: a\n", base) == {"": "a"}
    assert load("!!binary aGVsbG8=: a\n", base) == {"hello": "a"}
    with pytest.raises(DuplicateKey):
        load("null: a\n~: b\n", base)


@pytest.mark.parametrize("base", LOADERS)
@pytest.mark.parametrize("text", ["!!int x: a\n", "!!timestamp x: a\n", "!!float y: a\n"])
def test_a_key_its_explicit_tag_cannot_read_is_refused_not_taken_as_text(
    base: Any, text: str
) -> None:
    with pytest.raises((yaml.YAMLError, ValueError)):
        load(text, base)


@pytest.mark.parametrize("base", LOADERS)
def test_a_string_fields_value_is_its_text_as_cortex_reads_it(base: Any) -> None:
    """PyYAML made `panel_id: 0123` the int 83: a rule matching panel "83"."""
    text = "a: [{panel_id: 0123}, {dashboard_uid: 0x1F}, {regex: true}, {panel_id: ~}]\n"
    assert load(text, base) == {
        "a": [
            {"panel_id": "0123"},
            {"dashboard_uid": "0x1F"},
            {"regex": "true"},
            {"panel_id": None},
        ]
    }
    assert load("max_queriers_per_tenant: 0123\n", base) == {"max_queriers_per_tenant": 83}
