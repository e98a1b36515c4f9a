"""`manage.py loadgen_slowdown`: a factor out of range is refused by name, and read as 1."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from loadgen.demo_traffic import slowdown_path


@pytest.fixture(autouse=True)
def var_dir(settings: Any, tmp_path: Path) -> None:
    settings.VAR_DIR = tmp_path


def slowdown(*args: str) -> str:
    out = StringIO()
    call_command("loadgen_slowdown", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.mark.parametrize("factor", ["0", "-1", "nan", "inf", "1000.5"])
def test_a_factor_out_of_range_is_refused_naming_it_and_writes_nothing(factor: str) -> None:
    with pytest.raises(CommandError, match=r"^factor: must be above 0 and at most 1000, not "):
        slowdown(factor)
    assert not slowdown_path().exists()


@pytest.mark.parametrize("written", ["Infinity", "1e308", "NaN", "-2", '"x"'])
def test_a_hand_edited_factor_out_of_range_reads_as_no_slowdown(written: str) -> None:
    slowdown_path().write_text(f'{{"store_gateway_slowdown": {written}}}')
    assert slowdown() == "1\n"


def test_a_factor_set_is_the_one_read_back() -> None:
    assert slowdown("1000").startswith("store-gateway slowdown set to 1000 (")
    assert json.loads(slowdown_path().read_text()) == {"store_gateway_slowdown": 1000.0}
    assert slowdown() == "1000\n"
