"""API tokens issued for a bounded time: refused from their expiry on, as revoked ones are."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from datetime import timezone as dt_timezone
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIRequestFactory

from api.store import services, tokens
from api.store.models import ApiToken
from tests.api.store.test_tokens_and_auth import Echo

pytestmark = pytest.mark.django_db

HOUR = timedelta(hours=1)


def set_clock(monkeypatch: pytest.MonkeyPatch, now: datetime) -> None:
    """Make the tokens' clock (Django's `timezone.now`) answer `now` from here on."""
    monkeypatch.setattr(tokens.timezone, "now", lambda: now)


def test_a_token_issued_without_an_expiry_works_however_late_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token, plaintext = services.api_token_issue(name="ci", role="viewer")
    assert token.expires_at is None
    set_clock(monkeypatch, timezone.now() + timedelta(days=365 * 50))
    assert services.api_token_authenticate(plaintext) == token
    assert tokens.api_token_ids_by_state([token.pk]).live == {token.pk}


def test_a_token_works_until_its_expiry_and_is_refused_from_that_instant(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    issued = timezone.now()
    token, plaintext = services.api_token_issue(name="ci", role="viewer", expires_at=issued + HOUR)
    set_clock(monkeypatch, issued + HOUR - timedelta(microseconds=1))
    assert services.api_token_authenticate(plaintext) == token
    assert tokens.api_token_ids_by_state([token.pk]).live == {token.pk}
    set_clock(monkeypatch, issued + HOUR)
    assert services.api_token_authenticate(plaintext) is None
    assert tokens.api_token_ids_by_state([token.pk]).live == set()


def test_one_query_sorts_token_ids_into_live_and_expired_leaving_revoked_and_gone_out(
    monkeypatch: pytest.MonkeyPatch, django_assert_num_queries: Any
) -> None:
    issued = timezone.now()
    ran_out, _ = services.api_token_issue(name="a", role="viewer", expires_at=issued + HOUR)
    revoked, _ = services.api_token_issue(name="b", role="viewer", expires_at=issued + HOUR)
    services.api_token_revoke(token_id=revoked.pk)
    never, _ = services.api_token_issue(name="c", role="viewer")
    later, _ = services.api_token_issue(name="d", role="viewer", expires_at=issued + 2 * HOUR)
    at = issued + HOUR
    set_clock(monkeypatch, at)
    ids = [ran_out.pk, revoked.pk, never.pk, later.pk, 999_999]
    with django_assert_num_queries(1):
        states = tokens.api_token_ids_by_state(ids)
    assert states == tokens.TokenIdStates(live={never.pk, later.pk}, expired={ran_out.pk})
    # As the querysets the doors authenticate with answer.
    assert states.live == set(ApiToken.objects.live(at).values_list("pk", flat=True))
    assert states.expired == set(ApiToken.objects.expired(at).values_list("pk", flat=True))
    with django_assert_num_queries(0):
        assert tokens.api_token_ids_by_state([]) == tokens.TokenIdStates(set(), set())


def test_an_expired_token_is_refused_at_rest_exactly_as_a_revoked_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    expiring, expiring_text = services.api_token_issue(
        name="a", role="viewer", expires_at=timezone.now() + HOUR
    )
    revoked, revoked_text = services.api_token_issue(name="b", role="viewer")
    services.api_token_revoke(token_id=revoked.pk)
    set_clock(monkeypatch, timezone.now() + 2 * HOUR)
    answers = []
    for plaintext in (expiring_text, revoked_text):
        request = APIRequestFactory().get("/echo", HTTP_AUTHORIZATION=f"Bearer {plaintext}")
        response = Echo.as_view()(request)
        answers.append((response.status_code, response["WWW-Authenticate"], response.data))
    assert answers[0] == answers[1]
    assert answers[0][0] == 401 and "expired" in str(answers[0][2]["detail"])


def test_an_expiry_given_in_another_time_zone_is_stored_as_the_same_instant_in_utc() -> None:
    plus_two = dt_timezone(timedelta(hours=2))
    asked = datetime(2999, 1, 31, 2, 0, tzinfo=plus_two)
    token, _ = services.api_token_issue(name="ci", role="viewer", expires_at=asked)
    stored = ApiToken.objects.get(pk=token.pk).expires_at
    assert stored == asked and stored.utcoffset() == timedelta(0)


def test_an_expiry_in_the_past_is_refused_with_now_to_the_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    set_clock(monkeypatch, datetime(2026, 12, 6, 6, 13, 51, 460136, tzinfo=UTC))
    with pytest.raises(tokens.TokenExpiryError) as refused:
        services.api_token_issue(
            name="ci", role="viewer", expires_at=datetime(2020, 1, 1, tzinfo=UTC)
        )
    assert "(now 2026-12-06T06:13:51+00:00)" in str(refused.value)


@pytest.mark.parametrize(
    ("expires_at", "error"),
    [
        (datetime(2999, 1, 1), "has no time zone"),
        (datetime(2000, 1, 1, tzinfo=UTC), "is not in the future"),
        (datetime(9999, 12, 31, 23, tzinfo=dt_timezone(timedelta(hours=-5))), "out of range"),
    ],
)
def test_issuing_refuses_an_expiry_that_cannot_be_and_issues_nothing(
    expires_at: datetime, error: str
) -> None:
    with pytest.raises(tokens.TokenExpiryError, match=error):
        services.api_token_issue(name="ci", role="viewer", expires_at=expires_at)
    assert not ApiToken.objects.exists()


def test_expiring_now_is_not_the_future(monkeypatch: pytest.MonkeyPatch) -> None:
    now = timezone.now()
    set_clock(monkeypatch, now)
    with pytest.raises(tokens.TokenExpiryError, match="is not in the future"):
        services.api_token_issue(name="ci", role="viewer", expires_at=now)


def test_a_token_state_and_the_queryset_of_that_state_agree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = timezone.now()
    never, _ = services.api_token_issue(name="never", role="viewer")
    later, _ = services.api_token_issue(name="later", role="viewer", expires_at=now + 2 * HOUR)
    soon, _ = services.api_token_issue(name="soon", role="viewer", expires_at=now + HOUR)
    gone, _ = services.api_token_issue(name="gone", role="viewer", expires_at=now + HOUR)
    services.api_token_revoke(token_id=gone.pk)
    at = now + HOUR  # `soon` expires exactly now; a revoked token stays "revoked"
    states = {t.name: t.state(at) for t in ApiToken.objects.all()}
    assert states == {"never": "live", "later": "live", "soon": "expired", "gone": "revoked"}
    assert set(ApiToken.objects.live(at)) == {never, later}
    assert set(ApiToken.objects.expired(at)) == {soon}
