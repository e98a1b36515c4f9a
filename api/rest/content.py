"""Request parsers and response renderers of the REST API: size-limited JSON and YAML.

Django's `DATA_UPLOAD_MAX_MEMORY_SIZE` only guards `request.body`, while
DRF parsers read the stream, so every parser here enforces its own limit
and says which limit was hit. YAML is read with the safe loader only, and a
document whose aliases expand beyond `MAX_YAML_NODES` values is refused
before anything walks it (an alias "bomb" is tiny on the wire).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from typing import IO, Any

import yaml
from django.utils.http import parse_header_parameters
from rest_framework import exceptions, parsers, renderers

from api.rest.errors import PayloadTooLarge

# One serialiser for the export, a tenant's YAML view and revision diffs.
from api.store.config_yaml import dump_yaml
from api.store.yaml_keys import (
    DuplicateKey,
    UnreadTag,
    duplicate_key_path,
    node_path,
    strict_keys_loader,
)
from api.wire.bounded_json import MAX_JSON_DEPTH, loads_bounded

__all__ = [
    "MAX_JSON_BODY_BYTES",
    "MAX_YAML_BODY_BYTES",
    "MAX_YAML_NODES",
    "YAML_MEDIA_TYPES",
    "YAML_PARSERS",
    "LimitedJSONParser",
    "MergePatchJSONParser",
    "TextYAMLParser",
    "TextYAMLRenderer",
    "XYAMLParser",
    "XYAMLRenderer",
    "YAMLParser",
    "YAMLRenderer",
    "dump_yaml",
    "load_yaml",
    "parse_body",
    "parse_json",
    "read_limited",
    "refuse_charset",
]

# A tenant with the maximum 100 priorities of 50 attributes fits well within this.
MAX_JSON_BODY_BYTES = 1024 * 1024
# A runtime-config file with thousands of tenants with rules.
MAX_YAML_BODY_BYTES = 32 * 1024 * 1024
MAX_YAML_NODES = 5_000_000
YAML_MEDIA_TYPES = ("application/yaml", "text/yaml", "application/x-yaml")

# libyaml's scanner when PyYAML was built with it (several times
# faster on a big runtime-config); the same safe constructor either way, so
# what a document means, and the alias guard below, do not depend on it.
_BaseLoader: Any = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
# Reads YAML as Cortex's Go decoder does (`strict_keys_loader`): a key given
# twice, a base-60 number and an explicit tag other than the plain types are
# refused or read as Go reads them.
_Loader: Any = strict_keys_loader(_BaseLoader)


def read_limited(stream: IO[bytes] | None, limit: int) -> bytes:
    """At most `limit` bytes of the stream; raises `PayloadTooLarge` past it."""
    if stream is None:
        return b""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise PayloadTooLarge(f"request body is over the limit of {limit} bytes for this endpoint")
    return bytes(data)


def _check_text(text: str) -> None:
    """Refuse text no store can keep: lone surrogates (not Unicode) and NUL."""
    if "\x00" in text:
        raise exceptions.ParseError("text must not contain NUL characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise exceptions.ParseError("text must be valid Unicode (a lone surrogate?)") from exc


def _reason(exc: ValueError) -> str:
    """The error's message without Python's advice to the server's programmer
    (an integer of thousands of digits: "...; use sys.set_int_max_str_digits()")."""
    return str(exc).split("; use sys.", 1)[0]


def _count_nodes(value: Any, budget: int) -> int:
    """Values in `value` counting every alias expansion; stops past `budget`.

    Also checks every string on the way (see `_check_text`), and refuses
    nesting deeper than JSON bodies may (`MAX_JSON_DEPTH`): whatever walks
    the value next (validation messages, copies) must not recurse too deep.
    """
    count, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        count += 1
        if count > budget:
            break
        if isinstance(item, str):
            try:
                _check_text(item)
            except exceptions.ParseError as exc:
                raise exceptions.ParseError(
                    f"{exc.detail} (at {_refused_text_path(value)})"
                ) from exc
        elif isinstance(item, Mapping | list):
            if depth >= MAX_JSON_DEPTH:
                raise exceptions.ParseError(
                    f"document nested deeper than {MAX_JSON_DEPTH} levels, the limit"
                )
            children = [*item.keys(), *item.values()] if isinstance(item, Mapping) else item
            stack.extend((child, depth + 1) for child in children)
    return count


def _refused_text_path(value: Any) -> str:
    """Where the first string `_check_text` refuses is (`overrides.a.b[0].regex`).

    Walked again only once such a string was found, so a good document pays
    nothing for it: "text must not contain NUL characters" alone left the
    operator to search a whole runtime-config file for it.
    """
    stack: list[tuple[Any, str]] = [(value, "")]
    seen: set[int] = set()  # aliases can make a document refer to itself
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            try:
                _check_text(item)
            except exceptions.ParseError:
                return path or "the document's root"
            continue
        if not isinstance(item, Mapping | list) or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, list):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(item))
            continue
        for key, child in item.items():
            # A refused key cannot be printed as part of a path: its parent is named.
            stack.append((key, f"a key of {path or 'the document'}"))
            stack.append((child, f"{path}.{key}" if path else str(key)))
    return "the document"


def load_yaml(text: str | bytes) -> Any:
    """Parse one YAML document safely; raises `ParseError` with the reason."""
    try:
        value = yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
    except DuplicateKey as exc:
        path = duplicate_key_path(text, exc, _BaseLoader)
        mark = exc.mark
        raise exceptions.ParseError(
            f"YAML parse error: duplicate key {path} (line {mark.line + 1}, column "
            f"{mark.column + 1}): a key may appear once in a mapping, as Cortex's loader requires"
        ) from exc
    except UnreadTag as exc:
        mark = exc.mark
        raise exceptions.ParseError(
            f"YAML parse error: {exc.tag} at {node_path(text, exc, _BaseLoader)} (line "
            f"{mark.line + 1}, column {mark.column + 1}): {exc.advice}"
        ) from exc
    except yaml.YAMLError as exc:
        raise exceptions.ParseError(f"YAML parse error: {exc}") from exc
    except ValueError as exc:
        # A scalar its constructor refuses: a date like 2024-13-45, or an
        # integer of thousands of digits (Python's own limit on int()).
        raise exceptions.ParseError(
            f"YAML parse error: a value cannot be read: {_reason(exc)}"
        ) from exc
    if _count_nodes(value, MAX_YAML_NODES) > MAX_YAML_NODES:
        raise exceptions.ParseError(
            f"YAML document expands (through aliases) to over {MAX_YAML_NODES} values"
        )
    return value


# A JSON string (skipped: digits in it are text), or an integer token (not
# the fraction or exponent of a number, which int() never reads).
_STRING_OR_INTEGER = re.compile(
    r'"(?:[^"\\]++|\\.?)*+(?:"|\Z)|(?<![0-9.eE+-])-?[0-9]++(?![.eE0-9])', re.DOTALL
)


def _long_integer_at(data: bytes) -> str | None:
    """Where the first integer over Python's digit limit is, as a JSON parse error says it.

    `int()` refuses it inside the decoder with no position ("Exceeds the
    limit (4300 digits)..."), where every other parse error names its line
    and column; None when that is not what failed.
    """
    limit = sys.get_int_max_str_digits()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    for match in _STRING_OR_INTEGER.finditer(text):
        token = match.group()
        digits = len(token.lstrip("-"))
        if token.startswith('"') or not limit or digits <= limit:
            continue
        pos = match.start()
        line = text.count("\n", 0, pos) + 1
        column = pos - text.rfind("\n", 0, pos)
        return (
            f"an integer of {digits} digits at line {line} column {column} (char {pos}); "
            f"the limit is {limit} digits"
        )
    return None


def parse_json(data: bytes) -> Any:
    """Parse a JSON body; raises `ParseError` with the reason."""
    try:
        # Nested past MAX_JSON_DEPTH: JsonTooDeep, a ValueError naming the limit.
        # A name given twice is refused (DuplicateJsonKey): `json` would keep
        # the last, so a tenant given twice in a runtime-config would quietly
        # mean only its last half. YAML bodies are refused for the same (see
        # `strict_keys_loader`), and JSON is YAML to Cortex's loader.
        value = loads_bounded(data, unique_keys=True)
    except json.JSONDecodeError as exc:
        raise exceptions.ParseError(f"JSON parse error: {_reason(exc)}") from exc
    except ValueError as exc:  # UnicodeDecodeError, JsonTooDeep, DuplicateJsonKey too
        # A plain ValueError is int()'s digit limit, raised without a position.
        where = _long_integer_at(data) if type(exc) is ValueError else None
        reason = _reason(exc) if where is None else where
        raise exceptions.ParseError(f"JSON parse error: {reason}") from exc
    if b"\\u" in data:
        # Only an escape can smuggle a surrogate or NUL past UTF-8 decoding.
        _count_nodes(value, len(data))
    return value


def parse_body(data: bytes, media_type: str) -> Any:
    """A body already read (and size-checked) by its parser's media type.

    For work done away from DRF's request (the import worker process): the
    same parsing and the same guards as the parsers below.
    """
    if media_type == LimitedJSONParser.media_type:
        return parse_json(data)
    if media_type in YAML_MEDIA_TYPES:
        return load_yaml(data)
    raise exceptions.UnsupportedMediaType(media_type)


class _LimitedParser(parsers.BaseParser):
    """Reads at most `max_bytes` (a view may set `max_body_bytes`), then decodes."""

    max_bytes: int

    @staticmethod
    def decode(body: bytes) -> Any:
        raise TypeError("a parser subclass names its decoder")

    def parse(
        self,
        stream: IO[bytes] | None,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        view = (parser_context or {}).get("view")
        request = (parser_context or {}).get("request")
        refuse_charset(getattr(request, "content_type", None) or media_type or "")
        limit = getattr(view, "max_body_bytes", self.max_bytes)
        return self.decode(read_limited(stream, limit))


def refuse_charset(content_type: str) -> None:
    """415 for a `charset=` other than UTF-8: every body is read as UTF-8, so a
    UTF-16 or Latin-1 body was silently misread (or refused as bad JSON)."""
    _, params = parse_header_parameters(content_type)
    charset = params.get("charset", "utf-8").strip().lower()
    if charset not in ("utf-8", "utf8"):
        raise exceptions.UnsupportedMediaType(
            content_type,
            detail=f"charset {charset!r} is not read here: send the body in UTF-8 "
            "(charset=utf-8, or no charset)",
        )


class LimitedJSONParser(_LimitedParser):
    """JSON bodies up to `max_bytes`."""

    media_type = "application/json"
    max_bytes = MAX_JSON_BODY_BYTES
    decode = staticmethod(parse_json)


class MergePatchJSONParser(LimitedJSONParser):
    """A JSON merge patch under RFC 7386's own media type (PATCH only)."""

    media_type = "application/merge-patch+json"


class YAMLParser(_LimitedParser):
    """YAML bodies (`application/yaml`, `text/yaml`, `application/x-yaml`)."""

    media_type = "application/yaml"
    max_bytes = MAX_YAML_BODY_BYTES
    decode = staticmethod(load_yaml)


class TextYAMLParser(YAMLParser):
    """The same YAML under the `text/yaml` media type."""

    media_type = "text/yaml"


class XYAMLParser(YAMLParser):
    """The same YAML under the legacy `application/x-yaml` media type."""

    media_type = "application/x-yaml"


class YAMLRenderer(renderers.BaseRenderer):
    """Renders a response as YAML (runtime-config export)."""

    media_type = "application/yaml"
    format = "yaml"
    charset = "utf-8"

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        if data is None:
            return b""
        return dump_yaml(data).encode("utf-8")


class TextYAMLRenderer(YAMLRenderer):
    """The same YAML for a client that accepts only `text/yaml`."""

    media_type = "text/yaml"


class XYAMLRenderer(YAMLRenderer):
    """The same YAML for a client that accepts only the legacy `application/x-yaml`."""

    media_type = "application/x-yaml"


YAML_PARSERS = (YAMLParser, TextYAMLParser, XYAMLParser)
