"""Bodies as `api.rest.content` reads them: YAML as Cortex's Go loader reads it (no base-60,
no exotic tags), and only UTF-8."""

from __future__ import annotations

import pytest
from rest_framework.exceptions import ParseError

from api.rest.content import load_yaml
from api.store.models import Tenant

URL = "/api/v1/runtime-config/"


def test_a_base_60_number_is_refused_at_its_field_not_stored_as_sixty_times_more(editor_api):
    # PyYAML read `1:20` as 80; Go's yaml.v2 reads the text "1:20", which
    # Cortex cannot load into a number.
    text = "overrides:\n  t:\n    max_queriers_per_tenant: 1:20\n"
    response = editor_api.put(URL, text, content_type="application/yaml")
    assert response.status_code == 400
    assert "max_queriers_per_tenant" in response.json()["overrides"]["t"]
    assert not Tenant.objects.exists()


def test_base_60_texts_are_read_as_text_and_other_yaml_numbers_as_before():
    text = "a: 1:20\nb: -1:30.5\nc: 0x10\nd: 017\ne: 1_000\nf: 1.5\ng: '1:20'\n"
    assert load_yaml(text) == {
        "a": "1:20",
        "b": "-1:30.5",
        "c": 16,
        "d": 15,
        "e": 1000,
        "f": 1.5,
        "g": "1:20",
    }


def test_a_number_tag_on_a_base_60_number_is_refused_not_stored_as_80(editor_api):
    # Go's yaml.v2 refuses it ("cannot decode !!str `1:20` as a !!int").
    text = "overrides:\n  t:\n    max_queriers_per_tenant: !!int 1:20\n"
    response = editor_api.put(URL, text, content_type="application/yaml")
    assert response.status_code == 400
    assert response.json()["detail"].startswith(
        "YAML parse error: !!int cannot read '1:20': a base-60 number"
    )
    assert not Tenant.objects.exists()


def test_a_binary_value_is_refused_naming_its_path_and_nothing_is_stored(editor_api):
    text = (
        "overrides:\n  t:\n    query_priority:\n      enabled: true\n      priorities:\n"
        "        - priority: 1\n          query_attributes:\n"
        "            - regex: !!binary /w==\n"
    )
    response = editor_api.put(URL, text, content_type="application/yaml")
    assert response.status_code == 400
    assert response.json()["detail"].startswith(
        "YAML parse error: !!binary at "
        "overrides.t.query_priority.priorities[0].query_attributes[0].regex (line 8, column 22)"
    )
    assert not Tenant.objects.exists()


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("!!binary aGk=: a\n", "!!binary at a key of the document (line 1, column 1)"),
        ("a: !!set {x}\n", "!!set at a (line 1, column 4)"),
        ("a: !!omap [{x: 1}]\n", "!!omap at a (line 1, column 4)"),
        ("a: [!custom x]\n", "!custom at a[0] (line 1, column 5)"),
        ("a: &x !!binary aGk=\nb: *x\n", "!!binary at a (line 1, column 4)"),
        ("a:\n  !!binary aGk=: b\n", "!!binary at a key of a (line 2, column 3)"),
    ],
)
def test_an_explicit_tag_that_is_not_a_plain_type_is_refused_saying_where(text, where):
    with pytest.raises(ParseError) as refused:
        load_yaml(text)
    assert str(refused.value.detail).startswith(f"YAML parse error: {where}:")


def test_explicit_plain_tags_and_merges_are_still_read():
    text = "base: &b {x: 1}\nc:\n  <<: *b\n  s: !!str 2\n  i: !!int '3'\n  f: !!float 1\n"
    assert load_yaml(text) == {"base": {"x": 1}, "c": {"x": 1, "s": "2", "i": 3, "f": 1.0}}


@pytest.mark.parametrize("charset", ["utf-16", "latin-1"])
@pytest.mark.parametrize(
    ("url", "media"),
    [("/api/v1/tenants/t1/", "application/json"), (URL, "application/yaml")],
)
def test_a_body_in_a_charset_other_than_utf_8_is_415_naming_it(editor_api, charset, url, media):
    body = '{"overrides": {}}' if url == URL else '{"max_queriers_per_tenant": 2}'
    response = editor_api.put(url, body.encode(charset), content_type=f"{media}; charset={charset}")
    assert response.status_code == 415
    assert f"charset '{charset}'" in response.json()["detail"]
    assert not Tenant.objects.exists()


def test_a_utf_8_charset_in_any_spelling_is_read(editor_api):
    response = editor_api.put(
        "/api/v1/tenants/t1/",
        b'{"max_queriers_per_tenant": 2}',
        content_type="application/json; charset=UTF8",
    )
    assert response.status_code in (200, 201), response.content
