"""Debian's Chromium as the browser tests and the inspector benchmark launch it."""

from __future__ import annotations

import os

__all__ = ["CHROMIUM", "CHROMIUM_ARGS"]

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
# No sandbox (CI runs as root); nothing that would reach the network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-gpu",
    "--disable-component-update",
    "--disable-sync",
]
