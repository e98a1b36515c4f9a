"""With METRICS_REQUIRE_LOGIN, /metrics takes a login, or a viewer or editor token as
Prometheus sends one (`authorization` in its scrape config)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import Group, User
from django.contrib.sessions.backends.db import SessionStore
from django.db import DatabaseError, InterfaceError, OperationalError, ProgrammingError
from django.test import AsyncClient
from django.utils import timezone

from api.store.services import api_token_issue, api_token_revoke
from api.wire import metrics_access

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def locked(host: Any, settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.METRICS_REQUIRE_LOGIN = True
    monkeypatch.setattr(metrics_access, "RECENT", metrics_access.RecentScrapers())


def bearer(plaintext: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {plaintext}"}


async def person_in(name: str, group: str | None) -> User:
    user = await User.objects.acreate_user(name, password="pw-ops-123")
    if group is not None:
        await user.groups.aadd((await Group.objects.aget_or_create(name=group))[0])
    return user


@pytest.mark.parametrize("role", ["viewer", "editor"])
async def test_a_viewer_or_editor_token_may_scrape(locked: None, role: str) -> None:
    _, plaintext = await api_token_issue_async(role)
    response = await AsyncClient().get("/metrics", headers=bearer(plaintext))
    assert response.status_code == 200
    assert b"cortex_query_scheduler_queue_length" in response.content


@pytest.mark.parametrize("group", ["viewer", "editor"])
async def test_a_signed_in_viewer_or_editor_may_scrape(locked: None, group: str) -> None:
    client = AsyncClient()
    await client.aforce_login(await person_in("ops", group))
    assert (await client.get("/metrics")).status_code == 200


async def test_a_signed_in_person_without_a_role_may_not_scrape(locked: None) -> None:
    # The pages and the REST API refuse such an account; the tenants and
    # queues the metrics name are no less theirs to hide.
    client = AsyncClient()
    await client.aforce_login(await person_in("ops", None))
    response = await client.get("/metrics")
    assert (response.status_code, response.content.strip()) == (
        403,
        b"this needs the viewer or editor role",
    )


@pytest.mark.parametrize(
    ("headers", "status", "says"),
    [
        ({}, 401, b"login or a viewer token required"),
        (bearer("not-a-token"), 401, b"invalid, revoked or expired token"),
        ({"Authorization": "Bearer"}, 401, b"malformed Authorization header"),
        ({"Authorization": "Basic dXNlcjpwdw=="}, 401, b"malformed Authorization header"),
    ],
)
async def test_a_scrape_without_a_good_token_is_refused_saying_why(
    locked: None, headers: dict[str, str], status: int, says: bytes
) -> None:
    response = await AsyncClient().get("/metrics", headers=headers)
    assert (response.status_code, response.content.strip()) == (status, says)
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'


async def test_a_frontend_or_querier_token_may_not_read_metrics(locked: None) -> None:
    for role in ("frontend", "querier"):
        _, plaintext = await api_token_issue_async(role)
        response = await AsyncClient().get("/metrics", headers=bearer(plaintext))
        assert response.status_code == 403
        assert b"viewer or editor role" in response.content


async def test_a_revoked_token_may_not_scrape(locked: None) -> None:
    token, plaintext = await api_token_issue_async("viewer")
    await database_sync_to_async(api_token_revoke)(token_id=token.pk)
    assert (await AsyncClient().get("/metrics", headers=bearer(plaintext))).status_code == 401


@pytest.mark.parametrize("error", [OperationalError, InterfaceError])
async def test_an_unreachable_database_is_a_503_not_a_bad_token(
    locked: None, monkeypatch: pytest.MonkeyPatch, error: type[DatabaseError]
) -> None:
    def down(plaintext: str) -> None:
        raise error("connection refused")

    monkeypatch.setattr(metrics_access, "api_token_authenticate", down)
    response = await AsyncClient().get("/metrics", headers=bearer("anything"))
    assert (response.status_code, response["Retry-After"]) == (503, "5")
    assert response.content == b"the database is unavailable\n"


async def test_a_login_the_unreachable_database_cannot_check_is_a_503_too(
    locked: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = AsyncClient()
    await client.aforce_login(await person_in("ops", "viewer"))

    async def down(self: SessionStore) -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(SessionStore, "_aget_session_from_db", down)
    response = await client.get("/metrics")
    assert (response.status_code, response["Retry-After"]) == (503, "5")


async def test_another_database_error_is_a_500_not_a_try_again_later(
    locked: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(plaintext: str) -> None:
        raise ProgrammingError("no such table: store_apitoken")

    monkeypatch.setattr(metrics_access, "api_token_authenticate", broken)
    with pytest.raises(ProgrammingError):  # to Django's 500 and the log, as at REST
        await AsyncClient().get("/metrics", headers=bearer("anything"))
    response = await AsyncClient(raise_request_exception=False).get(
        "/metrics", headers=bearer("anything")
    )
    assert response.status_code == 500
    assert not response.has_header("Retry-After")


def _database_goes_down(monkeypatch: pytest.MonkeyPatch) -> None:
    def down(plaintext: str) -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(metrics_access, "api_token_authenticate", down)


async def test_a_token_that_scraped_lately_still_scrapes_while_the_database_is_down(
    locked: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, plaintext = await api_token_issue_async("viewer")
    assert (await AsyncClient().get("/metrics", headers=bearer(plaintext))).status_code == 200
    _database_goes_down(monkeypatch)
    response = await AsyncClient().get("/metrics", headers=bearer(plaintext))
    assert response.status_code == 200
    assert b"cortex_query_scheduler_queue_length" in response.content
    # Another token the database never vouched for is still told to wait.
    assert (await AsyncClient().get("/metrics", headers=bearer("other"))).status_code == 503


async def test_a_token_refused_with_the_database_up_is_not_trusted_when_it_goes_down(
    locked: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    token, plaintext = await api_token_issue_async("viewer")
    assert (await AsyncClient().get("/metrics", headers=bearer(plaintext))).status_code == 200
    await database_sync_to_async(api_token_revoke)(token_id=token.pk)
    assert (await AsyncClient().get("/metrics", headers=bearer(plaintext))).status_code == 401
    _database_goes_down(monkeypatch)
    assert (await AsyncClient().get("/metrics", headers=bearer(plaintext))).status_code == 503


def test_a_scrape_token_is_trusted_for_the_grace_period_only() -> None:
    now = [1000.0]
    recent = metrics_access.RecentScrapers(grace=900, clock=lambda: now[0])
    recent.accepted("t")
    now[0] += 900
    assert recent.still_trusted("t")
    now[0] += 0.001
    assert not recent.still_trusted("t")


def test_a_scrape_token_is_not_trusted_past_its_expiry_while_the_database_is_down() -> None:
    wall = [datetime(2027, 1, 31, 11, 59, tzinfo=UTC)]
    recent = metrics_access.RecentScrapers(grace=900, clock=lambda: 0.0, wall=lambda: wall[0])
    recent.accepted("t", expires_at=datetime(2027, 1, 31, 12, 0, tzinfo=UTC))
    recent.accepted("forever", expires_at=None)
    assert recent.still_trusted("t")
    wall[0] += timedelta(minutes=1)  # noon: within the grace, but the token ran out
    assert (recent.still_trusted("t"), recent.still_trusted("forever")) == (False, True)


async def test_an_expiring_token_that_scraped_is_trusted_only_until_its_expiry(
    locked: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    wall = [timezone.now()]
    monkeypatch.setattr(
        metrics_access, "RECENT", metrics_access.RecentScrapers(wall=lambda: wall[0])
    )
    expires_at = wall[0] + timedelta(hours=1)
    _, plaintext = await database_sync_to_async(api_token_issue)(
        name="scrape-expiring", role="viewer", expires_at=expires_at
    )
    assert (await AsyncClient().get("/metrics", headers=bearer(plaintext))).status_code == 200
    _database_goes_down(monkeypatch)
    assert (await AsyncClient().get("/metrics", headers=bearer(plaintext))).status_code == 200
    wall[0] = expires_at
    assert (await AsyncClient().get("/metrics", headers=bearer(plaintext))).status_code == 503


def test_the_trusted_scrape_tokens_are_bounded_dropping_the_least_recently_accepted() -> None:
    recent = metrics_access.RecentScrapers(size=2, clock=lambda: 0.0)
    for plaintext in ("a", "b", "a", "c"):
        recent.accepted(plaintext)
    assert [recent.still_trusted(t) for t in ("a", "b", "c")] == [True, False, True]


async def test_metrics_stay_open_without_the_setting(host: Any) -> None:
    assert (await AsyncClient().get("/metrics")).status_code == 200


async def api_token_issue_async(role: str) -> Any:
    return await database_sync_to_async(api_token_issue)(name=f"scrape-{role}", role=role)
