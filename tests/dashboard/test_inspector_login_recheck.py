"""An open inspector ends once its login no longer holds: a role removed, the
user deactivated, the password changed, the session gone. A login that holds
keeps it open."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import Group, User
from django.contrib.sessions.models import Session
from django.test import Client

from dashboard.consumers import CLOSE_UNAUTHORISED
from dashboard.live import Broadcaster
from tests.dashboard.installed import installed
from tests.dashboard.test_consumers import QueueSource
from tests.dashboard.test_inspector_logout import inspector

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def broadcaster(settings: Any) -> Iterator[Broadcaster]:
    settings.INSPECTOR_LOGIN_RECHECK_SECONDS = 0.05
    with installed(Broadcaster(QueueSource(), autostart=False)) as instance:
        yield instance


def viewer_client(username: str) -> Client:
    user = User.objects.create_user(username, password="pw-recheck-123")
    user.groups.add(Group.objects.get(name="viewer"))
    client = Client()
    client.force_login(user)
    return client


def remove_roles(name: str) -> None:
    User.objects.get(username=name).groups.clear()


def deactivate(name: str) -> None:
    User.objects.filter(username=name).update(is_active=False)


def change_password(name: str) -> None:
    # As an operator resets a stolen login: the session row stays, and
    # Django refuses it only at its next page, which a socket never asks for.
    user = User.objects.get(username=name)
    user.set_password("pw-reset-456")
    user.save()


def end_sessions(name: str) -> None:
    Session.objects.all().delete()


@pytest.mark.parametrize("change", [remove_roles, deactivate, change_password, end_sessions])
async def test_an_inspector_whose_login_no_longer_holds_is_closed(
    change: Callable[[str], None], broadcaster: Broadcaster
) -> None:
    client = await database_sync_to_async(viewer_client)("carol")
    socket = await inspector(client)
    assert await socket.receive_nothing(timeout=0.3)  # rechecked several times: still fine
    await database_sync_to_async(change)("carol")
    closed = await socket.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": CLOSE_UNAUTHORISED}
    assert len(broadcaster.viewers) == 0


async def test_an_inspector_stays_open_across_a_secret_key_rotation_with_the_old_key_kept(
    settings: Any, broadcaster: Broadcaster
) -> None:
    # Its session's password hash was made with the old key: Django still
    # takes it from SECRET_KEY_FALLBACKS, and so must the re-check.
    client = await database_sync_to_async(viewer_client)("dave")
    socket = await inspector(client)
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-rotated-secret-key-" + "x" * 40
    assert await socket.receive_nothing(timeout=0.3)
    assert len(broadcaster.viewers) == 1
