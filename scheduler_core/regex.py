"""RE2 patterns compiled once and shared: matching and validation use the same cache.

RE2, never Python's backtracking `re`: a tenant-supplied pattern runs in
linear time, so no rule can stall the scheduler.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

__all__ = ["compile_regex", "regex_error"]


@lru_cache(maxsize=4096)
def compile_regex(pattern: str) -> Any:
    """Compile an RE2 pattern once; raises `re2.error` when RE2 rejects it.

    RE2 runs in linear time, so a tenant-supplied pattern can never stall
    the scheduler the way a backtracking regex could.
    """
    options = re2.Options()
    options.log_errors = False
    return re2.compile(pattern, options)


def regex_error(pattern: str) -> str | None:
    """Why RE2 refuses `pattern`, or None when it compiles."""
    try:
        compile_regex(pattern)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        text = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
        return f"RE2 rejects this regex: {text}"
    return None
