"""The config as an operator reads it: YAML, with the line of every field.

One serialiser (`dump_yaml`) writes the runtime-config export, a tenant's
block as it stands under `overrides:` (`tenant_block_yaml`), the scheduler
settings and the whole config, so the editor's YAML view, a revision's diff
and the export always read alike. `unified_yaml_diff` is the text diff of
two such YAML texts. Reading a block back (`parse_tenant_block`, pasted
from a Cortex runtime-config file) lives in `api.store.block_parse` and is
re-exported here, with `block_lines`, the lines of a block this module wrote.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

import yaml

from api.store.block_parse import (
    MAX_BLOCK_BYTES,
    MAX_BLOCK_NODES,
    OVERRIDES,
    BlockParse,
    LocatedError,
    LocatedName,
    line_for,
    locate,
    parse_tenant_block,
)
from api.store.import_plan import block_in_field_order
from scheduler_core.errors import ConfigInvalid
from scheduler_core.model import QueueConfig
from scheduler_core.validation import queue_config_from_dict, queue_config_to_dict

__all__ = [
    "MAX_BLOCK_BYTES",
    "MAX_BLOCK_NODES",
    "BlockParse",
    "LocatedError",
    "LocatedName",
    "block_lines",
    "config_yaml",
    "dump_yaml",
    "line_for",
    "locate",
    "overrides_yaml",
    "parse_tenant_block",
    "settings_canonical",
    "settings_yaml",
    "tenant_block_yaml",
    "unified_yaml_diff",
]

# libyaml's emitter when PyYAML was built with it; the same safe
# representer either way, so what is written does not depend on it.
_BaseDumper: Any = yaml.CSafeDumper if yaml.__with_libyaml__ else yaml.SafeDumper


class _Dumper(_BaseDumper):  # type: ignore[misc,valid-type]
    """The safe dumper, also for str subclasses such as DRF's `ErrorDetail`."""


_Dumper.add_multi_representer(str, lambda dumper, text: dumper.represent_str(str(text)))


def dump_yaml(value: Any) -> str:
    """Block-style YAML keeping key order, as a person would write a runtime-config."""
    return str(
        yaml.dump(
            value, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True
        )
    )


def tenant_block_yaml(tenant_id: str | None, config: Mapping[str, Any] | None) -> str:
    """The tenant's lines under `overrides:`, one level less indented; "" when absent.

    Without a tenant ID (a tenant not named yet) the body alone, at the left.
    """
    if config is None:
        return ""
    body = block_in_field_order(config)
    return dump_yaml({tenant_id: body} if tenant_id else body)


def settings_canonical(config: Any) -> Any:
    """Every scheduler setting, defaults filled in (`{}` is all defaults).

    Settings that no longer validate are shown as stored, so a diff still
    says what the row holds. That includes a row holding no mapping at all
    (an old release's or a hand edit's list or string, which the scheduler
    runs as the defaults): copying it into a dict would fail, and showing
    it as the defaults would make a save of the defaults look like no
    change, so the broken row would never be repaired.
    """
    if config is not None and not isinstance(config, Mapping):
        return config
    raw = dict(config or {})
    try:
        return queue_config_to_dict(queue_config_from_dict(raw, QueueConfig()))
    except ConfigInvalid:
        return raw


def settings_yaml(config: Any) -> str:
    return dump_yaml(settings_canonical(config))


def overrides_yaml(overrides: Mapping[str, Any] | None) -> str:
    """A runtime-config file's `overrides:` section, tenants in ID order."""
    blocks = overrides or {}
    tenants = {tid: block_in_field_order(blocks[tid]) for tid in sorted(blocks)}
    return dump_yaml({OVERRIDES: tenants})


def config_yaml(overrides: Mapping[str, Any] | None, settings: Any) -> str:
    """The whole config: the runtime-config `overrides:` and the scheduler `settings:`."""
    return overrides_yaml(overrides) + dump_yaml({"settings": settings_canonical(settings)})


def unified_yaml_diff(before: str, after: str, from_label: str, to_label: str) -> str:
    """A unified diff (3 lines of context) of two YAML texts; "" when they are equal."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=from_label,
        tofile=to_label,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def block_lines(tenant_id: str | None, config: Mapping[str, Any]) -> dict[str, int]:
    """The field paths' lines in `tenant_block_yaml(tenant_id, config)`."""
    return parse_tenant_block(tenant_block_yaml(tenant_id, config) or "{}").lines
