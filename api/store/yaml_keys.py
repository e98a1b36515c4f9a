"""The strict YAML loader: a document means here what it means to Cortex's loader.

Cortex loads its runtime-config with Go's yaml.v2 decoder, strictly; a file
that decoder reads otherwise, or refuses, must not import here and quietly
mean something else. Every loader of YAML in this project (the REST import,
a tenant's pasted block) is built by `strict_keys_loader`, so these rules
have one definition:

- A mapping that gives a key twice is refused (`DuplicateKey`), with the
  key's path. PyYAML silently keeps the last; Go's strict decoder refuses
  ("key already set in map"). A key that a merge (`<<: *base`) brings in
  may be overridden by an explicit one, as YAML merge keys allow.
- A plain scalar is what yaml.v2 resolves it to (`api.store.yaml_scalars`),
  not what PyYAML does: `1e3`, `+.5` and `08` are floats, `0o17` and
  `0X1F` integers, `y` and `n` booleans, where PyYAML read text (which
  Cortex's fields then refused); a date and `=` are text, where PyYAML
  built a date (or refused 2024-13-45 outright) and had no constructor
  for `=`. An explicit `!!int`, `!!float`, `!!bool` or `!!null` must be
  what its scalar resolves to (`!!int 1e3` is refused, as Go refuses it).
  A field Cortex declares as an integer (`INT_FIELDS`) takes a float
  holding a whole number as that integer (`1e3` is 1000), as Go does; a
  fraction stays a float, which validation refuses (Go would truncate it).
- A YAML 1.1 base-60 number (`1:20`, `-1:30.5`) is text, not 80: yaml.v2
  deliberately dropped them ("a bad idea, dropped in YAML 1.2"), so
  Cortex reads the text "1:20" and refuses it for a number field, as
  validation here then does at its field. An explicit `!!int 1:20` or
  `!!float 1:20` is refused, as Go refuses it ("cannot decode !!str").
- An explicit tag other than the plain types (`_READ_TAGS`: str, int,
  float, bool, null, timestamp, map, seq and merge) is refused where it
  stands (`UnreadTag`): PyYAML reads `!!binary` as bytes (text with U+FFFD
  for bytes that are not UTF-8), `!!set` and `!!omap` as a set and a list
  of pairs, where Go reads the decoded bytes, a mapping and a list, and it
  cannot read `!custom` at all. Refused, no such value means one thing
  here and another in Cortex.
- A scalar its explicit tag cannot read (`!!int ''`) is a `ConstructorError`
  at its node (see `_UNREADABLE`), never a server error. An explicit
  `!!timestamp` is still PyYAML's date (Go reads it as its text into every
  field here, so either way no field takes it).

Every scalar key is read as its text, as Go's decoder reads a key into a
string (a tenant ID of `overrides`, a struct field's name; `yes:` is the
tenant "yes" and `1e3:` the tenant "1e3", whatever they resolve to): PyYAML made
`0123:` the int 83 and `1.50:` a float, so the tenant "0123" was imported
as "83", merged silently with a tenant "83", and `true:` or `1.50:` could
not be imported at all. So `1` and `"1"` clash and `1` and `01` do not, as
in Cortex. As in Go, a null key (`~:`) is the empty text, and a key its
explicit tag cannot read (`!!int x`) is refused, not taken as its text. So
is the value of a field Cortex declares as a string (`TEXT_FIELDS`):
`panel_id: 0123` is "0123", where PyYAML's 83 made a rule that never
matched what the operator wrote. A null value stays null there.

The checks run while the document is constructed, so they cost a set
lookup per node; the full path of a refused key or node
(`overrides.team-a.query_priority.enabled`) is found only when there is
an error, by walking the composed node tree (`duplicate_key_path`,
`node_path`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from api.store.yaml_scalars import (
    BOOL_TAG,
    FLOAT_TAG,
    INT_FIELDS,
    INT_TAG,
    NULL_TAG,
    STR_TAG,
    Undecodable,
    go_value,
    int_field_value,
    resolve_plain,
    short_tag,
)
from scheduler_core.validation import TEXT_FIELDS

__all__ = [
    "DuplicateKey",
    "UnreadTag",
    "duplicate_key_path",
    "node_path",
    "strict_keys_loader",
]

_TAG = "tag:yaml.org,2002:"
_MERGE_TAG = _TAG + "merge"
_NUMBER_TAGS = (INT_TAG, FLOAT_TAG)
# The scalar tags whose values are Go's (`api.store.yaml_scalars`), not PyYAML's.
_GO_TAGS = (INT_TAG, FLOAT_TAG, BOOL_TAG, NULL_TAG)
# The tags Go's yaml.v2 and PyYAML read alike (the scalars Go resolves, the
# two collections, and the merge key).
_READ_TAGS = frozenset(
    _TAG + name
    for name in ("str", "int", "float", "bool", "null", "timestamp", "map", "seq", "merge")
)
# PyYAML's two base-60 forms (int and float) in one pattern.
_BASE_60 = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?")
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


class UnreadTag(yaml.YAMLError):
    """An explicit tag the loader does not read (`!!binary`); `mark` is where its node starts."""

    # What every caller tells the operator after naming the tag and where it is.
    advice = (
        "an explicit tag Cortex's loader does not read as we would; give plain strings, "
        "numbers, booleans, nulls, timestamps, mappings and lists"
    )

    def __init__(self, tag: str, mark: Any) -> None:
        super().__init__(tag)
        self.tag = tag
        self.mark = mark


def _construct_go_scalar(loader: Any, node: ScalarNode) -> Any:
    """An int, float, bool or null scalar's value as yaml.v2 decodes it."""
    text = loader.construct_scalar(node)
    try:
        return go_value(node.tag, text)
    except Undecodable as exc:
        problem = f"{short_tag(node.tag)} cannot read {text!r}: {exc}"
        raise ConstructorError(None, None, problem, node.start_mark) from exc


def _construct_merge_text(loader: Any, node: ScalarNode) -> Any:
    # A `<<` that is not a mapping's key (`a: <<`, `[<<]`) is text to Go;
    # PyYAML has no constructor for it. Merge keys never get here: the
    # mapping they stand in consumes them (`flatten_mapping`).
    return loader.construct_scalar(node)


def strict_keys_loader(base: Any) -> Any:
    """A subclass of the loader class `base` reading YAML by the module's rules."""

    class StrictKeysLoader(base):  # type: ignore[misc,valid-type]
        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            if kind is ScalarNode and implicit[0]:
                # A plain scalar: its tag is the one yaml.v2 resolves. A
                # plain `<<` is a merge key where Go merges (`isMerge`).
                return _MERGE_TAG if value == "<<" else resolve_plain(value)[0]
            return super().resolve(kind, value, implicit)

        def construct_object(self, node: Node, deep: bool = False) -> Any:
            if node.tag not in _READ_TAGS:
                raise UnreadTag(short_tag(node.tag), node.start_mark)
            if (
                node.tag in _NUMBER_TAGS
                and isinstance(node, ScalarNode)
                and _BASE_60.fullmatch(node.value)
            ):
                problem = (
                    f"{short_tag(node.tag)} cannot read {node.value!r}: a base-60 number, "
                    "which Cortex's loader does not read"
                )
                raise ConstructorError(None, None, problem, node.start_mark)
            try:
                return super().construct_object(node, deep)
            except _UNREADABLE as exc:
                # The innermost node that failed is the one named: outer
                # levels see a YAMLError and let it through.
                problem = f"{short_tag(node.tag)} cannot read {node.value!r}"
                raise ConstructorError(None, None, problem, node.start_mark) from exc

        def text_key(self, node: Node) -> Node:
            """A scalar key node as a string node of its text (see the module's docstring)."""
            if not isinstance(node, ScalarNode) or node.tag in (_MERGE_TAG, STR_TAG):
                return node
            self.construct_object(node)  # raises for what its tag cannot read
            text = "" if node.tag == NULL_TAG else node.value
            return ScalarNode(STR_TAG, text, node.start_mark, node.end_mark, node.style)

        def text_keys(self, node: MappingNode) -> None:
            # In place, and only where a pair changes: every mapping of a
            # large runtime-config file passes here twice.
            pairs = node.value
            for i, (key, value) in enumerate(pairs):
                if not isinstance(key, ScalarNode):
                    continue
                text = key if key.tag == STR_TAG else self.text_key(key)
                read = value
                if text.value in TEXT_FIELDS:
                    read = self.text_value(value)
                elif text.value in INT_FIELDS:
                    read = self.int_value(value)
                if text is not key or read is not value:
                    pairs[i] = (text, read)

        def int_value(self, node: Node) -> Node:
            """An integer field's float scalar that holds a whole number, as that int."""
            if not isinstance(node, ScalarNode) or node.tag != FLOAT_TAG:
                return node
            try:
                number = int_field_value(go_value(FLOAT_TAG, node.value))
            except Undecodable:
                return node  # refused where it is constructed, with its reason
            if number is None:
                return node
            return ScalarNode(INT_TAG, str(number), node.start_mark, node.end_mark, node.style)

        def text_value(self, node: Node) -> Node:
            """A string field's scalar as its text; null stays null (Go leaves it empty)."""
            if isinstance(node, ScalarNode) and node.tag == NULL_TAG:
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

    for tag in _GO_TAGS:
        StrictKeysLoader.add_constructor(tag, _construct_go_scalar)
    StrictKeysLoader.add_constructor(_MERGE_TAG, _construct_merge_text)
    return StrictKeysLoader


def _walk(root: Node | None) -> Iterator[tuple[Node, str, str | None]]:
    """Every node once, in document order, with its dotted path (`a.b[2].c`).

    A key comes just before its value, with the value's path and, third,
    its mapping's path; other nodes have None there. Aliases share nodes,
    and may even loop, so each node is walked under the path it is first
    met at: its anchor's, which comes first in the text.
    """
    stack: list[tuple[Node, str, str | None]] = [(root, "", None)] if root is not None else []
    visited: set[int] = set()
    while stack:
        node, path, key_of = stack.pop()
        yield node, path, key_of
        if key_of is not None or id(node) in visited:
            continue
        visited.add(id(node))
        # Children pushed last first, so they come out in document order.
        if isinstance(node, MappingNode):
            for key, value in reversed(node.value):
                name = key.value if isinstance(key, ScalarNode) else "?"
                child = f"{path}.{name}" if path else str(name)
                stack.append((value, child, None))
                stack.append((key, child, path))
        elif isinstance(node, SequenceNode):
            items = reversed(list(enumerate(node.value)))
            stack.extend((item, f"{path}[{i}]", None) for i, item in items)


def duplicate_key_path(text: str | bytes, error: DuplicateKey, loader: Any) -> str:
    """The dotted path of the duplicate key (`a.b[2].c`), found in the node tree."""
    root = yaml.compose(text, Loader=loader)  # noqa: S506 - composing builds no objects
    wanted = error.mark.index
    for node, path, key_of in _walk(root):
        if key_of is not None and node.start_mark.index == wanted:
            return path
    return str(error.key)


def node_path(text: str | bytes, error: UnreadTag, loader: Any) -> str:
    """Where the node with the unread tag is: its path, "a key of" its mapping's, or
    "the document" (for the whole document, or a node inside a complex key)."""
    root = yaml.compose(text, Loader=loader)  # noqa: S506 - composing builds no objects
    wanted = error.mark.index
    for node, path, key_of in _walk(root):
        # A mapping starts where its first key does: the node is the one with the tag.
        if node.start_mark.index == wanted and node.tag not in _READ_TAGS:
            if key_of is not None:
                return f"a key of {key_of or 'the document'}"
            return path or "the document"
    return "the document"
