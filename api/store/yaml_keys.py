"""The strict YAML loader: what Cortex's loader refuses is refused here, saying where.

Mappings that give a key twice are refused, with the key's path, and so is
a scalar whose explicit tag it cannot be read as (see `_UNREADABLE`).

PyYAML silently keeps the last of two equal keys; Cortex loads its
runtime-config with Go's strict YAML decoder, which refuses them ("key
already set in map"). So a file Cortex would refuse must not import here and
quietly mean something else. A key that a merge (`<<: *base`) brings in may
be overridden by an explicit one, as YAML merge keys allow.

Every scalar key is read as its text, as Go's decoder reads a key into a
string (a tenant ID of `overrides`, a struct field's name): PyYAML made
`0123:` the int 83 and `1.50:` a float, so the tenant "0123" was imported
as "83", merged silently with a tenant "83", and `true:` or `1.50:` could
not be imported at all. So `1` and `"1"` clash and `1` and `01` do not, as
in Cortex. As in Go, a null key (`~:`) is the empty text, a `!!binary` key
its decoded text, and a key its explicit tag cannot read (`!!int x`) is
refused, not taken as its text. So is the value of a field Cortex declares
as a string (`TEXT_FIELDS`): `panel_id: 0123` is "0123", where PyYAML's 83
made a rule that never matched what the operator wrote. A null value stays
null there.

The check runs while the document is constructed, so it costs a set per
mapping; the key's full path (`overrides.team-a.query_priority.enabled`) is
found only when there is an error, by walking the composed node tree.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from scheduler_core.validation import TEXT_FIELDS

__all__ = ["DuplicateKey", "duplicate_key_path", "strict_keys_loader"]

_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_NULL_TAG = "tag:yaml.org,2002:null"
# What PyYAML's safe constructors raise, instead of a YAMLError, for a scalar
# its explicit tag does not fit: `!!int ''` and `!!float ''` (IndexError),
# `!!bool ''` (KeyError), `!!timestamp x` (AttributeError). Left alone they
# escape every caller's `except yaml.YAMLError` as a server error. ValueError
# (`!!int 1x`, a date like 2024-13-45) is not here: callers already report
# it with its own reason.
_UNREADABLE = (IndexError, KeyError, AttributeError)


class DuplicateKey(yaml.YAMLError):
    """A mapping gives the same key twice; `mark` is where the second one starts."""

    def __init__(self, key: Any, mark: Any) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key
        self.mark = mark


def strict_keys_loader(base: Any) -> Any:
    """A subclass of the loader class `base` that raises `DuplicateKey` and bad scalars."""

    class StrictKeysLoader(base):  # type: ignore[misc,valid-type]
        def construct_object(self, node: Node, deep: bool = False) -> Any:
            try:
                return super().construct_object(node, deep)
            except _UNREADABLE as exc:
                # The innermost node that failed is the one named: outer
                # levels see a YAMLError and let it through.
                problem = f"!!{node.tag.rsplit(':', 1)[-1]} cannot read {node.value!r}"
                raise ConstructorError(None, None, problem, node.start_mark) from exc

        def text_key(self, node: Node) -> Node:
            """A scalar key node as a string node of its text (see the module's docstring)."""
            if not isinstance(node, ScalarNode) or node.tag in (_MERGE_TAG, _STR_TAG):
                return node
            value = self.construct_object(node)  # raises for what its tag cannot read
            if node.tag == _NULL_TAG:
                text = ""
            elif isinstance(value, bytes):
                text = value.decode("utf-8", "replace")
            else:
                text = node.value
            return ScalarNode(_STR_TAG, text, node.start_mark, node.end_mark, node.style)

        def text_keys(self, node: MappingNode) -> None:
            # In place, and only where a pair changes: every mapping of a
            # large runtime-config file passes here twice.
            pairs = node.value
            for i, (key, value) in enumerate(pairs):
                if not isinstance(key, ScalarNode):
                    continue
                text = key if key.tag == _STR_TAG else self.text_key(key)
                read = self.text_value(value) if text.value in TEXT_FIELDS else value
                if text is not key or read is not value:
                    pairs[i] = (text, read)

        def text_value(self, node: Node) -> Node:
            """A string field's scalar as its text; null stays null (Go leaves it empty)."""
            if isinstance(node, ScalarNode) and node.tag == _NULL_TAG:
                return node
            return self.text_key(node)

        def flatten_mapping(self, node: MappingNode) -> None:
            # After the merge brought in other mappings' keys, so they are text too.
            super().flatten_mapping(node)
            self.text_keys(node)

        def construct_mapping(self, node: MappingNode, deep: bool = False) -> Any:
            self.text_keys(node)
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG or not isinstance(key_node, ScalarNode):
                    continue
                key = self.construct_object(key_node)
                try:
                    if key in seen:
                        raise DuplicateKey(key, key_node.start_mark)
                    seen.add(key)
                except TypeError:  # an unhashable key cannot be compared this way
                    continue
            return super().construct_mapping(node, deep)

    return StrictKeysLoader


def duplicate_key_path(text: str | bytes, error: DuplicateKey, loader: Any) -> str:
    """The dotted path of the duplicate key (`a.b[2].c`), found in the node tree."""
    root = yaml.compose(text, Loader=loader)  # noqa: S506 - composing builds no objects
    wanted = error.mark.index
    stack: list[tuple[Node, str]] = [(root, "")] if root is not None else []
    visited: set[int] = set()  # aliases share nodes, and may even loop
    while stack:
        node, path = stack.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        if isinstance(node, MappingNode):
            for key_node, value_node in node.value:
                name = key_node.value if isinstance(key_node, ScalarNode) else "?"
                child = f"{path}.{name}" if path else str(name)
                if key_node.start_mark.index == wanted:
                    return child
                stack.append((value_node, child))
        elif isinstance(node, SequenceNode):
            stack.extend((item, f"{path}[{i}]") for i, item in enumerate(node.value))
    return str(error.key)
