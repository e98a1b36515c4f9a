"""What a login made by a command must be: a name and a password the login form takes.

Shared by `create_demo_user` and `create_user`; each error names the option
(or environment variable) the value came from, given as `source`.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from api.store.tokens import unprintable_character, valid_utf8

__all__ = ["login_name", "login_password"]


def login_name(raw: str, source: str) -> str:
    """The name as the login form will look it up, or CommandError saying why it cannot be one.

    get_or_create skips the model's validation, and the login form
    NFKC-normalises what is typed (as create_user does): a name the form cannot
    reproduce (blank, spaces, too long for the column) would make a login
    that never works.
    """
    if not valid_utf8(raw):
        # Else refused as "'\udcff': Enter a valid username", which hides why.
        raise CommandError(f"{source}: not valid UTF-8")
    model = get_user_model()
    field = model._meta.get_field(model.USERNAME_FIELD)
    name = model.normalize_username(raw)
    try:
        field.clean(name, None)
    except ValidationError as exc:
        raise CommandError(f"{source}: {raw!r}: {' '.join(exc.messages)}") from None
    return str(name)


def login_password(raw: str, source: str) -> str:
    """The password, or CommandError saying why no one could sign in with it."""
    if not raw:
        # The login form requires a password, so this login could never be used.
        raise CommandError(f"{source}: must not be empty")
    if not valid_utf8(raw):
        # Hashing it would fail on the surrogates that stand for the bytes.
        raise CommandError(f"{source}: not valid UTF-8")
    # The characters token names refuse: printed, they split or garble the
    # one-line login (or reorder it, so what is read is not what to type),
    # and a password field drops line breaks as they are pasted, so such a
    # password could never be typed in. Named by position and code point:
    # the password itself stays off the screen.
    unprintable = unprintable_character(raw)
    if unprintable is not None:
        raise CommandError(
            f"{source}: must not contain control characters or line breaks ({unprintable})"
        )
    return raw
