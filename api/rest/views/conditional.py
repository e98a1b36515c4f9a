"""ETag / If-Match / If-None-Match handling shared by the versioned endpoints.

An ETag is the object's version (the global config version of its last
change), quoted. Versions never repeat, so a stale ETag can never match a
newer object, not even one deleted and created again. The check here is
only a fast answer for the caller: the service re-checks the version in the
same transaction as the write, so a race still ends in 412, never in a
silent overwrite.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rest_framework.request import Request

from api.rest.errors import PreconditionRequired
from api.store.exceptions import VersionConflict
from api.store.services import ANY_VERSION, AnyVersion
from scheduler_core.bounds import parse_decimal

__all__ = [
    "NamesConflicts",
    "Preconditions",
    "conflict_detail",
    "expected_for_existing",
    "expected_if_given",
    "expected_for_put",
    "expected_for_replace_all",
    "not_modified",
    "preconditions",
]

ANY = "*"


@dataclass(frozen=True, slots=True)
class Preconditions:
    """The parsed conditional headers; `if_match` None means the header is absent.

    Entity tags that are not one of our versions (foreign values; weak
    tags in If-Match) are kept as None entries: they can never match.
    If-None-Match compares weakly (RFC 9110 13.1.2), so there `W/"17"` is 17.
    """

    if_match: tuple[int | None, ...] | None
    if_match_any: bool
    if_none_match: tuple[int | None, ...]
    if_none_match_any: bool


def _tags(header: str | None, *, weak: bool) -> tuple[tuple[int | None, ...] | None, bool]:
    if header is None:
        return None, False
    if header.strip() == ANY:
        return (), True
    versions: list[int | None] = []
    for raw in header.split(","):
        tag = raw.strip()
        if weak and tag.startswith("W/"):
            tag = tag[2:]
        quoted = len(tag) >= 2 and tag[0] == tag[-1] == '"'
        versions.append(_version(tag[1:-1]) if quoted else None)
    return tuple(versions), False


def _version(opaque: str) -> int | None:
    """The version an entity tag's text names, or None.

    Only as we write it: tags compare character by character (RFC 9110
    8.8.3.2), so "0017" is not our "17" (it used to be read as 17).
    """
    version = parse_decimal(opaque)
    return version if version is not None and str(version) == opaque else None


def preconditions(request: Request) -> Preconditions:
    """Read `If-Match` and `If-None-Match` from the request."""
    if_match, match_any = _tags(request.META.get("HTTP_IF_MATCH"), weak=False)
    if_none_match, none_any = _tags(request.META.get("HTTP_IF_NONE_MATCH"), weak=True)
    return Preconditions(if_match, match_any, if_none_match or (), none_any)


def _refuse_none_match(cond: Preconditions, current: int) -> None:
    """412 for a write whose If-None-Match names the existing object (`*` or its version).

    RFC 9110 13.1.2: such a write must not be done. It used to go ahead:
    `If-None-Match: *` with `If-Match: *` replaced an existing tenant.
    """
    if cond.if_none_match_any or current in cond.if_none_match:
        raise VersionConflict(current)


def _checked(request: Request, current: int) -> Preconditions:
    """The request's preconditions, once they let a write to an object at
    `current` through: 412 when an If-Match names no `current` or an
    If-None-Match names it (RFC 9110's order: If-Match first)."""
    cond = preconditions(request)
    if cond.if_match is not None and not cond.if_match_any and current not in cond.if_match:
        raise VersionConflict(current)
    _refuse_none_match(cond, current)
    return cond


def expected_for_existing(request: Request, current: int) -> int | None:
    """The version to hand the service for a write to an existing object.

    None (unconditional) for `If-Match: *`: handing the service `current`
    instead, the version read before its transaction, made concurrent
    `*` writes 412 each other. Raises `VersionConflict` (412) when no
    If-Match tag matches `current` or If-None-Match names it (RFC 9110's
    order: If-Match first), else `PreconditionRequired` (428) without If-Match.
    """
    cond = _checked(request, current)
    if cond.if_match is None:
        raise PreconditionRequired()
    return None if cond.if_match_any else current


def expected_if_given(request: Request, current: int) -> int | None:
    """The version an optional If-Match asks for: None without one (or `*`).

    Raises `VersionConflict` (412) when no tag matches `current`, or when
    If-None-Match names it (a rollback went ahead with `If-None-Match: *`).
    """
    cond = _checked(request, current)
    return None if cond.if_match is None or cond.if_match_any else current


def expected_for_put(request: Request, current: int | None) -> int | AnyVersion | None:
    """The version for a create-or-replace; None asks the service to create.

    No If-Match creates a missing object but is refused (428) for an existing
    one; `If-None-Match: *` always means create-only; If-Match never creates
    (`If-Match: *` is `ANY_VERSION`, "whatever exists").
    """
    cond = preconditions(request)
    if cond.if_none_match_any:
        if current is not None:
            raise VersionConflict(current)
        return None
    if current is not None:
        _refuse_none_match(cond, current)
    if cond.if_match is None:
        if current is not None:
            raise PreconditionRequired()
        return None
    if current is None:
        raise VersionConflict(None)
    expected = expected_for_existing(request, current)
    return ANY_VERSION if expected is None else expected


def expected_for_replace_all(
    request: Request, current: int, exists: bool, *, required: bool = True
) -> tuple[int | None, bool]:
    """(expected version, require empty) for a write that replaces a whole set.

    As `expected_for_put`, with the set "existing" while it has a member:
    no If-Match is 428 for a non-empty set (unless not `required`, as for a
    dry run) and otherwise means "only while still empty"; `If-None-Match: *`
    always means that; `If-Match: *` is unconditional; a tag must name
    `current` (412 otherwise).
    """
    cond = preconditions(request)
    if cond.if_none_match_any:
        if exists:
            raise VersionConflict(current)
        return None, True
    _refuse_none_match(cond, current)
    if cond.if_match is None:
        if exists and required:
            raise PreconditionRequired()
        return None, not exists
    if cond.if_match_any:
        return None, False
    if current in cond.if_match:
        return current, False
    raise VersionConflict(current)


def not_modified(request: Request, current: int) -> bool:
    """True when a GET's If-None-Match already names the current version (304)."""
    cond = preconditions(request)
    return cond.if_none_match_any or current in cond.if_none_match


def _sent(request: Request) -> str:
    """The conditional headers as sent (at most 60 characters each), for a 412's text."""
    sent = []
    for header, meta in (("If-Match", "HTTP_IF_MATCH"), ("If-None-Match", "HTTP_IF_NONE_MATCH")):
        value = request.META.get(meta)
        if value is not None:
            sent.append(f"{header}: {value[:60]}")
    return ", ".join(sent) or "no If-Match"


def conflict_detail(
    request: Request, exc: VersionConflict, subject: str, again: str, exists: str = "it exists"
) -> str:
    """A 412's text naming what conflicted: `subject`, its version now, what was sent.

    "the current version is 17" left the client to guess which version (the
    tenant's, the tenant set's or the global config's) had moved, and why
    its header did not match. `again` says what to do next; `exists` how to
    say that a create-only write found the subject there.
    """
    sent = _sent(request)
    if exc.current_version is None:
        return f"{subject} does not exist (any more), and If-Match never creates ({sent})"
    now = f"{subject} is at version {exc.current_version} (this answer's ETag)"
    cond = preconditions(request)
    if cond.if_none_match_any:
        return f"{now}: {exists}, and If-None-Match: * only creates"
    if exc.current_version in cond.if_none_match:
        return f"{now}, a version your If-None-Match names ({sent}): nothing was written"
    if cond.if_match is None:
        return f"{now}: {exists} now, and a write without If-Match only creates; {again}"
    if cond.if_match and all(tag is None for tag in cond.if_match):
        # `If-Match: 17` (quotes lost in a shell) or a weak `W/"17"` can never
        # match; "it changed since" sent the client to re-read an object that
        # had not changed, to fail again the same way.
        return (
            f"{now}; {sent} names no version: send the ETag as it came, quotes "
            f'included (If-Match: "{exc.current_version}"), or If-Match: *'
        )
    return f"{now}, not the version you sent ({sent}): it changed since; {again}"


class NamesConflicts:
    """A view mixin: its 412s name what conflicted (`api.rest.errors` asks for
    `version_conflict_detail`), declared rather than written out per view.

    `conflict_subject` is formatted with the URL's arguments ("tenant
    {tenant_id!r}"), `conflict_next` says what to do next, `conflict_exists`
    how a create-only write that found the subject reads.
    """

    conflict_subject: str
    conflict_next: str
    conflict_exists = "it exists"

    def version_conflict_detail(self, exc: VersionConflict) -> str:
        view: Any = self  # an APIView: its request and URL arguments
        subject = self.conflict_subject.format(**view.kwargs)
        return conflict_detail(view.request, exc, subject, self.conflict_next, self.conflict_exists)
