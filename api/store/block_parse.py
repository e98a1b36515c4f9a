"""A tenant's YAML block read back: the body the scheduler would store, with lines.

`parse_tenant_block` reads a block (pasted from a Cortex runtime-config
file, with or without its tenant key line, or even under its `overrides:`
line) as Cortex's loader reads it (`api.store.yaml_keys`) into the body
the scheduler uses: other Cortex limits are reported as not used here, as
the import does, and each validation error carries the line of the field
its path names (`locate`, `line_for`). Never raises for bad input.
Re-exported by `api.store.config_yaml`, where callers import it from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from api.store.import_plan import misspelt_field
from api.store.yaml_keys import (
    DuplicateKey,
    UnreadTag,
    duplicate_key_path,
    node_path,
    strict_keys_loader,
)
from scheduler_core.bounds import MAX_DOCUMENT_DEPTH
from scheduler_core.errors import FieldError
from scheduler_core.validation import TENANT_KEYS, validate_tenant_config

__all__ = [
    "MAX_BLOCK_BYTES",
    "MAX_BLOCK_NODES",
    "OVERRIDES",
    "BlockParse",
    "LocatedError",
    "LocatedName",
    "line_for",
    "locate",
    "parse_tenant_block",
]

# One tenant block: the REST API's JSON body limit, and far fewer values
# than a whole runtime-config file may hold (aliases counted expanded).
MAX_BLOCK_BYTES = 1024 * 1024
MAX_BLOCK_NODES = 200_000
OVERRIDES = "overrides"

# libyaml's scanner when PyYAML was built with it; the same safe
# constructor either way, so what a document means does not depend on it.
_Loader: Any = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
# Reads YAML as Cortex's Go decoder does: duplicate keys, base-60 numbers
# and explicit tags other than the plain types refused or read as Go reads them.
_StrictLoader: Any = strict_keys_loader(_Loader)


@dataclass(frozen=True, slots=True)
class LocatedError:
    """A validator's `FieldError` with the 1-based line of its field (None: no line)."""

    path: str
    message: str
    line: int | None


@dataclass(frozen=True, slots=True)
class LocatedName:
    """A key of the pasted block the scheduler does not use, and its line."""

    name: str
    line: int | None


@dataclass(frozen=True, slots=True)
class BlockParse:
    """What a pasted block means.

    `config` is the tenant body the scheduler uses (None when the text is
    not a mapping at all); `syntax` is set when the text is not YAML, and
    then nothing else is. `pasted_tenant` is the ID on the block's key
    line, when it had one; `ignored` the Cortex limits not used here
    (never saved, always reported); `errors` the validator's, with lines.
    """

    config: dict[str, Any] | None
    pasted_tenant: str | None = None
    ignored: list[LocatedName] = field(default_factory=list)
    errors: list[LocatedError] = field(default_factory=list)
    syntax: LocatedError | None = None
    lines: dict[str, int] = field(default_factory=dict, repr=False)

    @property
    def problems(self) -> list[LocatedError]:
        """Every problem with a line, the syntax error first."""
        return ([self.syntax] if self.syntax else []) + self.errors

    @property
    def ok(self) -> bool:
        return self.config is not None and not self.problems


def _problem(path: str, message: str, line: int | None) -> BlockParse:
    return BlockParse(config=None, syntax=LocatedError(path, message, line))


def _syntax_error(exc: yaml.YAMLError) -> BlockParse:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    parts = [getattr(exc, "context", None), getattr(exc, "problem", None)]
    text = ", ".join(str(p) for p in parts if p) or str(exc)
    line = mark.line + 1 if mark is not None else None
    return _problem("(yaml)", f"YAML syntax: {text}", line)


def _depth_over(node: yaml.Node, limit: int) -> bool:
    """Whether mappings/lists nest deeper than `limit` (walked without recursion).

    Aliases are followed, so run it after `_expanded_size` bounded the walk.
    """
    stack = [(node, 0)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, yaml.MappingNode | yaml.SequenceNode):
            continue
        if depth >= limit:
            return True
        children = (
            [v for pair in item.value for v in pair]
            if isinstance(item, yaml.MappingNode)
            else item.value
        )
        stack.extend((child, depth + 1) for child in children)
    return False


def _expanded_size(node: yaml.Node, budget: int) -> int:
    """Nodes counting every alias expansion (an alias "bomb" is tiny as text)."""
    count, stack = 0, [node]
    while stack and count <= budget:
        item = stack.pop()
        count += 1
        if isinstance(item, yaml.MappingNode):
            for key, value in item.value:
                stack.extend((key, value))
        elif isinstance(item, yaml.SequenceNode):
            stack.extend(item.value)
    return count


def _key_text(node: yaml.Node) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else "?"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _path_lines(node: yaml.Node, path: str, out: dict[str, int]) -> None:
    """The 1-based line of each field path under `node` (a key's own line)."""
    out.setdefault(path or "(root)", node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = _join(path, _key_text(key))
            out.setdefault(child, key.start_mark.line + 1)
            _path_lines(value, child, out)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _path_lines(item, f"{path}[{index}]", out)


def line_for(path: str, lines: Mapping[str, int]) -> int | None:
    """The line of `path`, else of its nearest ancestor present in the text."""
    while path:
        if path in lines:
            return lines[path]
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ""
    return lines.get("(root)")


def _child(node: yaml.Node, key: str) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value in node.value:
            if _key_text(key_node) == key:
                return value
    return None


def _is_tenant_line(value: Any) -> bool:
    """A one-key mapping whose key is no tenant field and holds a mapping: `team-a:`."""
    if not isinstance(value, Mapping) or len(value) != 1:
        return False
    ((key, inner),) = value.items()
    # `query_priorty:` alone is a misspelt field, not tenant "query_priorty".
    return (
        key != ""  # a null key: no tenant ID
        and str(key) not in TENANT_KEYS
        and not misspelt_field(key)
        and (inner is None or isinstance(inner, Mapping))
    )


def _unwrap(value: Any, node: yaml.Node) -> tuple[Any, yaml.Node | None, str | None, str | None]:
    """(body, body node, pasted tenant ID, problem) of a parsed block."""
    if isinstance(value, Mapping) and len(value) == 1 and OVERRIDES in value:
        inner = value[OVERRIDES]
        inner_node = _child(node, OVERRIDES)
        if isinstance(inner, Mapping) and len(inner) == 1 and inner_node is not None:
            value, node = inner, inner_node
        elif isinstance(inner, Mapping):
            count = len(inner)
            return None, None, None, f"an overrides: section of {count} tenants; paste one block"
    if _is_tenant_line(value):
        ((key, body),) = value.items()
        return body, _child(node, str(key)), str(key), None
    if _several_tenants(value):
        names = ", ".join(str(key) for key in list(value)[:5])
        more = ", ..." if len(value) > 5 else ""
        problem = f"{len(value)} tenants' blocks ({names}{more}); paste one tenant's block"
        return None, None, None, problem
    return value, node, None, None


def _several_tenants(value: Any) -> bool:
    """Two or more key lines (`team-a:`, `team-b:`), some block under them setting our fields.

    Read as one block, every tenant was "a Cortex limit not used here": the
    draft was empty and Save proposed to wipe the tenant's config. Key lines
    whose blocks set none of our fields cannot be told from limits that hold
    mappings (Mimir's `active_series_custom_trackers`); such a block uses
    nothing here and is refused as that (`parse_tenant_block`).
    """
    if not isinstance(value, Mapping) or len(value) < 2:
        return False
    if any(str(key) in TENANT_KEYS or misspelt_field(key) for key in value):
        return False
    if not all(isinstance(inner, Mapping) for inner in value.values()):
        return False
    return any(
        str(field) in TENANT_KEYS or misspelt_field(field)
        for inner in value.values()
        for field in inner
    )


def parse_tenant_block(text: str) -> BlockParse:
    """Read one tenant's YAML block into the body the scheduler would store.

    Never raises for bad input: the answer says what is wrong and where.
    """
    if "\x00" in text:
        return _problem("(yaml)", "the text contains a NUL character", None)
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return _problem("(yaml)", "the text is not valid Unicode (a lone surrogate?)", None)
    if size > MAX_BLOCK_BYTES:
        return _problem("(yaml)", f"a tenant block is at most {MAX_BLOCK_BYTES} bytes", None)
    try:
        node = yaml.compose(text, Loader=_Loader)
        if node is not None and _expanded_size(node, MAX_BLOCK_NODES) > MAX_BLOCK_NODES:
            return _problem("(yaml)", f"the block expands to over {MAX_BLOCK_NODES} values", None)
        if node is not None and _depth_over(node, MAX_DOCUMENT_DEPTH):
            # Walking it (field lines, messages) would recurse too deep.
            message = f"the block nests deeper than {MAX_DOCUMENT_DEPTH} levels, the limit"
            return _problem("(yaml)", message, None)
        value = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a safe loader
    except DuplicateKey as exc:
        path = duplicate_key_path(text, exc, _Loader)
        message = f"duplicate key {path}: a key may appear once, as Cortex's loader requires"
        return _problem(path, message, exc.mark.line + 1)
    except UnreadTag as exc:
        path = node_path(text, exc, _Loader)
        return _problem(path, f"{exc.tag} at {path}: {exc.advice}", exc.mark.line + 1)
    except yaml.YAMLError as exc:
        return _syntax_error(exc)
    except ValueError as exc:  # a scalar its constructor refuses, e.g. 2024-13-45
        reason = str(exc).split("; use sys.", 1)[0]
        return _problem("(yaml)", f"a value cannot be read: {reason}", None)
    if node is None or value is None:
        return BlockParse(config={})
    body, body_node, pasted, problem = _unwrap(value, node)
    if problem is not None:
        return _problem("(root)", problem, node.start_mark.line + 1)
    lines: dict[str, int] = {}
    if body_node is not None:
        _path_lines(body_node, "", lines)
    if body is None:
        return BlockParse(config={}, pasted_tenant=pasted, lines=lines)
    if not isinstance(body, Mapping):
        message = f"a tenant block must be a mapping of limits, got {type(body).__name__}"
        return _problem("(root)", message, line_for("", lines))
    # A misspelt field stays in the draft, for the validator to refuse at its line.
    used = {str(key) for key in body if str(key) in TENANT_KEYS or misspelt_field(key)}
    ignored = [
        LocatedName(str(key), line_for(str(key), lines)) for key in body if str(key) not in used
    ]
    config = {str(key): val for key, val in body.items() if str(key) in used}
    if ignored and not config:
        # Every key ignored: saved, the draft would clear the tenant (as two
        # tenants' blocks of other limits, `team_x:` and `team_y:`, did).
        names = ", ".join(n.name for n in ignored[:5]) + (", ..." if len(ignored) > 5 else "")
        message = (
            f"no limit this scheduler uses, only others ({names}): paste the tenant's "
            f"block (it sets at least one of {', '.join(TENANT_KEYS)})"
        )
        return _problem("(root)", message, line_for("", lines))
    errors = locate(validate_tenant_config(config), lines)
    return BlockParse(config, pasted, ignored, errors, None, lines)


def locate(errors: list[FieldError], lines: Mapping[str, int]) -> list[LocatedError]:
    """Validator errors with the line of each one's field in the text `lines` maps."""
    return [LocatedError(e.path, e.message, line_for(e.path, lines)) for e in errors]
