"""Plain scalars are read as Cortex v1.15.3's yaml.v2 reads them (`api.store.yaml_scalars`).

Every expected value below is what gopkg.in/yaml.v2, as vendored by Cortex
v1.15.3, decoded the same text into (`yaml.UnmarshalStrict` of `v: <text>`
into an `interface{}`, an `int` and a `map[string]int` key), observed by
running it, not inferred from its source.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import yaml

from api.store.yaml_keys import strict_keys_loader
from api.store.yaml_scalars import int_field_value, resolve_plain

LOADERS = [yaml.SafeLoader] + ([yaml.CSafeLoader] if yaml.__with_libyaml__ else [])

MIN_INT64 = -(2**63)

# The text of a plain scalar, and what Go decoded it into as an interface{}.
GO_READS: list[tuple[str, Any]] = [
    # Floats PyYAML read as text: an exponent without a sign or a dot, a
    # signed leading dot, a leading zero followed by 8 or 9.
    ("1e3", 1000.0),
    ("1E3", 1000.0),
    ("1.5e-3", 0.0015),
    ("1.5e3", 1500.0),
    ("1.0e+3", 1000.0),
    (".1e3", 100.0),
    (".5", 0.5),
    ("+.5", 0.5),
    ("-.5", -0.5),
    ("08", 8.0),
    ("09", 9.0),
    ("0.1", 0.1),
    ("1.", 1.0),
    ("-0.0", -0.0),
    ("1_000.5", 1000.5),
    ("1__0.5", 10.5),
    ("1e3_0", 1e30),
    ("1e-400", 0.0),
    (".5_0", 0.5),
    (".5e1_0", 5e9),
    (".inf", math.inf),
    ("-.Inf", -math.inf),
    ("+.inf", math.inf),
    # Integers: Go's ParseInt(text, 0, 64) once every `_` is removed.
    ("-1", -1),
    ("+12", 12),
    ("0", 0),
    ("-0", 0),
    ("0x1F", 31),
    ("0X1F", 31),
    ("-0x1F", -31),
    ("0x_1F", 31),
    ("0o17", 15),
    ("0O17", 15),
    ("-0o17", -15),
    ("0o_17", 15),
    ("017", 15),
    ("0_17", 15),
    ("0" * 100 + "17", 15),
    ("0b101", 5),
    ("0B101", 5),
    ("-0b101", -5),
    ("0b-101", -5),
    ("0b+101", 5),
    ("1_000", 1000),
    ("1__0", 10),
    ("1_", 1),
    ("+_1", 1),
    ("-_1", -1),
    ("9223372036854775807", 2**63 - 1),
    # Past int64 but within uint64: still an integer; past that, a float.
    ("9223372036854775808", 2**63),
    ("0x8000000000000000", 2**63),
    ("-0x8000000000000000", MIN_INT64),
    ("18446744073709551615", 2**64 - 1),
    ("0b" + "1" * 64, 2**64 - 1),
    ("18446744073709551616", 18446744073709551616.0),
    ("-9223372036854775809", -9223372036854775809.0),
    ("+9223372036854775808", 9223372036854775808.0),
    # Booleans: y, Y, n and N too.
    ("y", True),
    ("Y", True),
    ("yes", True),
    ("Yes", True),
    ("YES", True),
    ("on", True),
    ("On", True),
    ("ON", True),
    ("true", True),
    ("True", True),
    ("TRUE", True),
    ("n", False),
    ("N", False),
    ("no", False),
    ("off", False),
    ("false", False),
    # Nulls.
    ("~", None),
    ("null", None),
    ("Null", None),
    ("NULL", None),
    # Text: what no rule reads, an overflowing float, a date, and PyYAML's
    # "value" sign, which it could not construct at all.
    ("1:20", "1:20"),
    ("+.nan", "+.nan"),
    ("1e400", "1e400"),
    (".5e999", ".5e999"),
    (".5__0", ".5__0"),
    (".5_", ".5_"),
    ("._5", "._5"),
    (".5_e1", ".5_e1"),
    (".5e_1", ".5e_1"),
    ("-0b-101", "-0b-101"),
    ("0b_", "0b_"),
    ("0x_", "0x_"),
    ("_1", "_1"),
    ("=", "="),
    ("<<", "<<"),
    ("2001-12-14", "2001-12-14"),
    ("2024-13-45", "2024-13-45"),
    ("2001-12-14 21:59:43.10 -5", "2001-12-14 21:59:43.10 -5"),
    ("1h", "1h"),
    ("oN", "oN"),
    ('"1e3"', "1e3"),
    ("'yes'", "yes"),
]


def load(text: str, base: Any) -> Any:
    return yaml.load(text, Loader=strict_keys_loader(base))  # noqa: S506 - a safe loader


def same(got: Any, expected: Any) -> bool:
    """Equal and of the same type (1000 is not 1000.0 here, nor -0.0 0.0)."""
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(got, float) and math.isnan(got)
    if isinstance(expected, float) and expected == 0:
        return isinstance(got, float) and math.copysign(1, got) == math.copysign(1, expected)
    return type(got) is type(expected) and got == expected


@pytest.mark.parametrize("base", LOADERS)
@pytest.mark.parametrize(("text", "expected"), GO_READS, ids=[t for t, _ in GO_READS])
def test_the_loader_reads_a_plain_scalar_as_go_yaml_v2_decodes_it(
    base: Any, text: str, expected: Any
) -> None:
    got = load(f"v: {text}\n", base)["v"]
    assert same(got, expected), (text, got, expected)


@pytest.mark.parametrize("base", LOADERS)
def test_the_not_a_number_words_are_floats_as_in_go(base: Any) -> None:
    values = load("[.nan, .NaN, .NAN]\n", base)
    assert all(isinstance(v, float) and math.isnan(v) for v in values)


# Go's key of each scalar of GO_READS in a map[string]X: its text, "" for a null.
GO_KEYS = [
    (text, "" if value is None else text.strip("'\""))
    for text, value in GO_READS
    if text != "<<"  # a merge key
]


@pytest.mark.parametrize("base", LOADERS)
@pytest.mark.parametrize(("text", "key"), GO_KEYS, ids=[t for t, _ in GO_KEYS])
def test_a_key_is_the_text_go_decodes_into_a_string_key(base: Any, text: str, key: str) -> None:
    """A tenant ID of `yes`, `1e3` or `0o17` is that text, as in Cortex's map[string]*Limits;
    a null one is the empty text."""
    assert load(f"overrides:\n  {text}:\n    max_queriers_per_tenant: 1\n", base) == {
        "overrides": {key: {"max_queriers_per_tenant": 1}}
    }


@pytest.mark.parametrize("base", LOADERS)
def test_keys_that_resolve_alike_stay_apart_by_their_text(base: Any) -> None:
    # Go's map keys are the texts: `yes` and `true` are two tenants.
    text = "yes: 1\ntrue: 2\ny: 3\n1e3: 4\n1000: 5\n0o17: 6\n017: 7\n"
    assert load(text, base) == {
        "yes": 1,
        "true": 2,
        "y": 3,
        "1e3": 4,
        "1000": 5,
        "0o17": 6,
        "017": 7,
    }


@pytest.mark.parametrize("base", LOADERS)
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("!!int 0o17", 15),
        ("!!float 1e3", 1000.0),
        ("!!float 0x1F", 31.0),
        ("!!float 1", 1.0),
        ("!!bool y", True),
        ("!!null ~", None),
        ("!!null ''", None),
        ("!!str 1e3", "1e3"),
        ("!!str y", "y"),
    ],
)
def test_an_explicit_tag_reads_what_go_reads_under_it(base: Any, text: str, expected: Any) -> None:
    assert same(load(f"v: {text}\n", base)["v"], expected)


@pytest.mark.parametrize("base", LOADERS)
@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # Go: "cannot decode !!float `1e3` as a !!int", and so on.
        ("!!int 1e3", "!!int cannot read '1e3': Cortex's loader reads it as !!float"),
        ("!!int 08", "!!int cannot read '08': Cortex's loader reads it as !!float"),
        ("!!bool 1", "!!bool cannot read '1': Cortex's loader reads it as !!int"),
        ("!!null x", "!!null cannot read 'x': Cortex's loader reads it as !!str"),
        (
            "!!float 18446744073709551615",
            "!!float cannot read '18446744073709551615': Cortex's loader reads it as !!int",
        ),
    ],
)
def test_an_explicit_tag_go_cannot_decode_its_scalar_as_is_refused_at_its_line(
    base: Any, text: str, reason: str
) -> None:
    with pytest.raises(yaml.YAMLError) as refused:
        load(f"a: 1\nv: {text}\n", base)
    assert reason in str(refused.value)
    assert refused.value.problem_mark.line == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("base", LOADERS)
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1e3", 1000),
        ("1E3", 1000),
        ("1.", 1),
        ("1.0e+3", 1000),
        ("08", 8),
        ("-0.0", 0),
        ("!!float 0x1F", 31),
        # -2**63 exactly: Go's int64() of it is exact.
        ("-9223372036854775809", MIN_INT64),
    ],
)
@pytest.mark.parametrize(
    "field", ["max_queriers_per_tenant", "max_outstanding_requests_per_tenant", "priority"]
)
def test_an_integer_field_reads_a_float_holding_a_whole_number_as_that_integer(
    base: Any, text: str, expected: int, field: str
) -> None:
    got = load(f"{field}: {text}\n", base)[field]
    assert same(got, expected)
    # A float field (`reserved_queriers`) keeps it a float, as Go does.
    assert isinstance(load(f"reserved_queriers: {text}\n", base)["reserved_queriers"], float)


@pytest.mark.parametrize("base", LOADERS)
@pytest.mark.parametrize(
    "text", ["1.5", "0.1", ".5", "1.5e-3", "-1.5", "9223372036854775808.0", "-1e30", ".inf"]
)
def test_an_integer_field_leaves_a_fraction_or_an_out_of_range_float_for_validation_to_refuse(
    base: Any, text: str
) -> None:
    # Go truncates 1.5 to 1 and 0.5 queriers to 0 (no limit) without a
    # word, and gives whatever the CPU gives past int64; refused instead.
    assert isinstance(load(f"default_priority: {text}\n", base)["default_priority"], float)


def test_resolve_plain_gives_the_tag_go_gives() -> None:
    assert resolve_plain("1e3") == ("tag:yaml.org,2002:float", 1000.0)
    assert resolve_plain("y") == ("tag:yaml.org,2002:bool", True)
    assert resolve_plain("0o17") == ("tag:yaml.org,2002:int", 15)
    assert resolve_plain("") == ("tag:yaml.org,2002:null", None)
    assert resolve_plain("1:20") == ("tag:yaml.org,2002:str", "1:20")


def test_int_field_value_takes_only_whole_numbers_of_the_int64_range() -> None:
    assert int_field_value(1000.0) == 1000
    assert int_field_value(-(2.0**63)) == MIN_INT64
    assert int_field_value(2.0**63) is None
    assert int_field_value(1.5) is None
    assert int_field_value(math.nan) is None
    assert int_field_value(-math.inf) is None
