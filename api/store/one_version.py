"""A read of several rows answered with the version it was read at.

A preview or an export is read in more than one statement, beside the
version its ETag names. Read one after the other, a write committed in
between gave a body of one version under the tag of another: a GitOps
client then held a tag that did not describe what it had. `at_one_version`
reads the version, then the body, then the version again, and reads again
until the two agree, so the tag names exactly the state read.

Writes bump the version in the same transaction as their rows
(`services_record`), so an unchanged version means no write landed between.
Imports only the standard library.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["ATTEMPTS", "at_one_version"]

T = TypeVar("T")

# A store written to more often than a read takes would keep moving: after
# these many tries the body is answered with the version read before it,
# which is older than it may be, so a precondition made from it fails (412)
# rather than passing against a state its sender never saw.
ATTEMPTS = 5


def at_one_version(version_of: Callable[[], int], read: Callable[[], T]) -> tuple[int, T]:
    """`read()` and the version it was read at (see the module)."""
    before = version_of()
    for _ in range(ATTEMPTS):
        body = read()
        after = version_of()
        if after == before:
            return before, body
        before = after
    return before, read()
