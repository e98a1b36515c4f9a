"""The signing key used when `SECRET_KEY` is not set: random, kept in `VAR_DIR`.

A key written into the source would be known to anyone who read it, and
with it anyone could sign a login-device cookie (`dashboard.login_devices`)
naming any user and so skip that user's lockout. So an unset `SECRET_KEY`
means one random key, made the first time any process starts and kept in
`VAR_DIR/secret_key` (mode 0600), which every process sharing the folder
reads: replicas on one machine agree on it, as they must on signed cookies
and sessions. Replicas on several machines still set the same `SECRET_KEY`
everywhere (docs/operations.md).

Imports nothing of the project.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

__all__ = ["FILE_NAME", "kept_secret_key"]

FILE_NAME = "secret_key"


def kept_secret_key(var_dir: Path) -> str:
    """The key kept in `var_dir`, made there first if there is none yet.

    Two processes starting at once must end with one key: the new key is
    written whole to a file of this process's own, then linked into place,
    which fails for the loser, who reads the winner's. An empty or partly
    written key can therefore never be read.
    """
    path = var_dir / FILE_NAME
    try:
        if not path.exists():
            _make(path)
        return _read(path)
    except OSError as exc:
        raise ImproperlyConfigured(
            f"SECRET_KEY is not set and the key kept in VAR_DIR ({str(path)!r}) "
            f"cannot be read or made: {exc.strerror or exc}; set SECRET_KEY"
        ) from None


def _make(path: Path) -> None:
    draft = path.with_name(f".{FILE_NAME}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w") as out:
            out.write(secrets.token_urlsafe(50))
        os.link(draft, path)
    except FileExistsError:
        pass  # another process made it first: theirs is the key
    finally:
        draft.unlink()


def _read(path: Path) -> str:
    key = path.read_text().strip()
    if len(key) < 50:
        raise ImproperlyConfigured(
            f"{str(path)!r} holds no usable key (fewer than 50 characters): "
            "delete it to have a new one made, or set SECRET_KEY"
        )
    return key
