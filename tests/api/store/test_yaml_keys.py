"""The strict loader reads YAML as Cortex's Go decoder (yaml.v2) does: keys as their text,
base-60 numbers as text, explicit tags other than the plain types refused."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from api.store.yaml_keys import (
    DuplicateKey,
    UnreadTag,
    duplicate_key_path,
    node_path,
    strict_keys_loader,
)

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
def test_a_null_key_is_the_empty_text_and_a_binary_one_is_refused(base: Any) -> None:
    # A `!!binary` key was read as its decoded text, with U+FFFD for bytes
    # that are not UTF-8: a tenant ID that was never written.
    assert load("~: a\n", base) == {"": "a"}
    with pytest.raises(UnreadTag) as refused:
        load("!!binary aGVsbG8=: a\n", base)
    assert (refused.value.tag, refused.value.mark.line, refused.value.mark.column) == (
        "!!binary",
        0,
        0,
    )
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


@pytest.mark.parametrize("base", LOADERS)
def test_a_base_60_number_is_read_as_its_text_as_go_reads_it(base: Any) -> None:
    """PyYAML read `1:20` as 80; yaml.v2 reads the text "1:20", a number Cortex refuses."""
    text = "a: 1:20\nb: -1:30.5\nc: 190:20:30\n1:20: d\ne: 0x10\nf: 017\ng: 1_000\nh: 1.5\n"
    assert load(text, base) == {
        "a": "1:20",
        "b": "-1:30.5",
        "c": "190:20:30",
        "1:20": "d",
        "e": 16,
        "f": 15,
        "g": 1000,
        "h": 1.5,
    }


@pytest.mark.parametrize("base", LOADERS)
@pytest.mark.parametrize("text", ["a: !!int 1:20\n", "a: !!float 1:20.5\n"])
def test_a_number_tag_on_a_base_60_number_is_refused_as_go_refuses_it(base: Any, text: str) -> None:
    with pytest.raises(yaml.YAMLError, match="base-60 number"):
        load(text, base)


@pytest.mark.parametrize("base", LOADERS)
@pytest.mark.parametrize(
    ("text", "tag", "line", "column"),
    [
        ("a: !!binary aGk=\n", "!!binary", 0, 3),
        ("a:\n  regex: !!binary /w==\n", "!!binary", 1, 9),
        ("a: !!set {x}\n", "!!set", 0, 3),
        ("a: !!omap [{x: 1}]\n", "!!omap", 0, 3),
        ("a: [!custom x]\n", "!custom", 0, 4),
        ("!!pairs [[a, 1]]\n", "!!pairs", 0, 0),
    ],
)
def test_an_explicit_tag_that_is_not_a_plain_type_is_refused_where_it_stands(
    base: Any, text: str, tag: str, line: int, column: int
) -> None:
    with pytest.raises(UnreadTag) as refused:
        load(text, base)
    assert (refused.value.tag, refused.value.mark.line, refused.value.mark.column) == (
        tag,
        line,
        column,
    )


@pytest.mark.parametrize("base", LOADERS)
def test_plain_tags_and_merges_are_still_read(base: Any) -> None:
    text = "base: &b {x: 1}\nc:\n  <<: *b\n  s: !!str 2\n  i: !!int '3'\n  n: !!null ''\n"
    assert load(text, base) == {"base": {"x": 1}, "c": {"x": 1, "s": "2", "i": 3, "n": None}}


def _refused(text: str) -> UnreadTag:
    with pytest.raises(UnreadTag) as refused:
        load(text, yaml.SafeLoader)
    return refused.value


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("a:\n  b: [1, !!binary aGk=]\n", "a.b[1]"),
        ("a:\n  !!binary aGk=: b\n", "a key of a"),
        ("!!binary aGk=: a\n", "a key of the document"),
        ("!!set {a}\n", "the document"),
        ("a: &x !!binary aGk=\nb: *x\n", "a"),
    ],
)
def test_the_refused_node_is_named_by_its_path(text: str, where: str) -> None:
    assert node_path(text, _refused(text), yaml.SafeLoader) == where


def test_a_duplicate_key_reached_through_an_alias_is_named_where_it_is_written() -> None:
    text = "base: &b {x: 1, x: 2}\nc: *b\n"
    with pytest.raises(DuplicateKey) as refused:
        load(text, yaml.SafeLoader)
    assert duplicate_key_path(text, refused.value, yaml.SafeLoader) == "base.x"
