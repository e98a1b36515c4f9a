"""Who may see and change what in the browser: login, then the viewer/editor role.

Roles come from `api.store.roles.role_of` (Django groups), the same rule the REST
API uses. Editing is enforced here, on the server, for every write; the
templates only hide controls a viewer could not use anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from asgiref.sync import async_to_sync
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from api.store.roles import EDITOR, role_of
from dashboard.live import Tick, get_broadcaster

__all__ = ["current_tick", "editor_required", "forbidden", "page", "role_required"]

View = Callable[..., HttpResponse]


def role_required(view: View) -> View:
    """Login, then any role; the role is put on `request.role`."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        role = role_of(request.user)
        if role is None:
            return forbidden(request, "Your account has neither the viewer nor the editor role.")
        request.role = role  # type: ignore[attr-defined]
        return view(request, *args, **kwargs)

    return wrapped


def editor_required(view: View) -> View:
    """Login and the editor role, for every request method."""

    @role_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.role != EDITOR:  # type: ignore[attr-defined]
            return forbidden(request, "Changing the configuration needs the editor role.")
        return view(request, *args, **kwargs)

    return wrapped


def page(
    request: HttpRequest, template: str, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    """Render a page with the role the navigation and controls depend on."""
    role = getattr(request, "role", None)
    context = {"role": role, "is_editor": role == EDITOR, **context}
    return render(request, template, context, status=status)


def forbidden(request: HttpRequest, message: str) -> HttpResponse:
    """The 403 page saying what the user lacks."""
    return page(request, "403.html", {"message": message}, status=403)


async def _latest() -> Tick | None:
    return get_broadcaster().latest()


def current_tick() -> Tick | None:
    """The live queue from a sync view, or None before the scheduler started.

    The snapshot must be taken on the runtime's event loop; from a view
    running in Django's sync thread, `async_to_sync` runs it there.
    """
    try:
        return async_to_sync(_latest)()
    except RuntimeError:
        return None
