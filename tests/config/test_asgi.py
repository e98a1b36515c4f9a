"""The serving process's own settings, made as `config.asgi` is imported."""

from __future__ import annotations

import autobahn.util

import config.asgi  # noqa: F401 - imported for what it sets up


def test_autobahn_log_arguments_are_plain_text_not_coloured_per_frame() -> None:
    # Coloured, this would wrap the text in terminal escape codes.
    assert autobahn.util.hl("frame", bold=True) == "frame"
    assert autobahn.util.hlval(120) == "120"
