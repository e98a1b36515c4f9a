import hashlib
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory, force_authenticate
from rest_framework.views import APIView

from api.store import services
from api.store.models import ApiToken
from api.store.roles import TokenUser, role_of, token_from_header

pytestmark = pytest.mark.django_db


class Echo(APIView):
    """Uses the project's default authentication and permission classes."""

    def get(self, request: Request) -> Response:
        return Response({"user": str(request.user), "token": getattr(request.auth, "pk", None)})

    def post(self, request: Request) -> Response:
        return Response({"ok": True})


def call(method: str, header: str | None = None) -> Any:
    factory = APIRequestFactory()
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    return Echo.as_view()(getattr(factory, method)("/echo", **extra))


def test_an_issued_token_is_stored_only_as_its_hash() -> None:
    token, plaintext = services.api_token_issue(name="ci", role="editor")
    assert token.token_hash == hashlib.sha256(plaintext.encode()).hexdigest()
    assert plaintext not in {token.token_hash, token.prefix}
    assert plaintext.startswith(token.prefix)


def test_issuing_a_token_with_an_unknown_role_fails() -> None:
    with pytest.raises(ValueError):
        services.api_token_issue(name="x", role="admin")


def test_authenticate_finds_a_live_token_and_stamps_its_use() -> None:
    token, plaintext = services.api_token_issue(name="ci", role="viewer")
    found = services.api_token_authenticate(plaintext)
    assert found == token
    assert found is not None and found.last_used_at is not None


def test_authenticate_refuses_unknown_empty_and_revoked_tokens() -> None:
    token, plaintext = services.api_token_issue(name="ci", role="viewer")
    assert services.api_token_authenticate("qi_nope") is None
    assert services.api_token_authenticate("") is None
    services.api_token_revoke(token_id=token.pk)
    assert services.api_token_authenticate(plaintext) is None


def test_last_used_is_written_at_most_once_a_minute() -> None:
    token, plaintext = services.api_token_issue(name="ci", role="viewer")
    recent = timezone.now() - timedelta(seconds=5)
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=recent)
    services.api_token_authenticate(plaintext)
    assert ApiToken.objects.get(pk=token.pk).last_used_at == recent


def test_last_used_is_refreshed_once_a_minute_has_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    from api.store import tokens

    token, plaintext = services.api_token_issue(name="ci", role="viewer")
    stamped = timezone.now()
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=stamped)
    clock = {"now": stamped + timedelta(seconds=59)}
    monkeypatch.setattr(tokens.timezone, "now", lambda: clock["now"])
    services.api_token_authenticate(plaintext)
    assert ApiToken.objects.get(pk=token.pk).last_used_at == stamped
    clock["now"] = stamped + timedelta(seconds=61)
    found = services.api_token_authenticate(plaintext)
    assert found is not None and found.last_used_at == stamped + timedelta(seconds=61)
    assert ApiToken.objects.get(pk=token.pk).last_used_at == stamped + timedelta(seconds=61)


def test_token_from_header_accepts_bearer_and_token_keywords() -> None:
    assert token_from_header("Bearer abc") == "abc"
    assert token_from_header("token abc") == "abc"
    assert token_from_header("Basic abc") is None
    assert token_from_header("Bearer") is None


def test_a_bearer_token_authenticates_a_rest_request_as_its_token() -> None:
    token, plaintext = services.api_token_issue(name="ci", role="viewer")
    response = call("get", f"Bearer {plaintext}")
    assert response.status_code == 200
    assert response.data == {"user": "token:ci", "token": token.pk}


def test_a_wrong_token_is_refused_with_401_and_a_bearer_challenge() -> None:
    response = call("get", "Token qi_wrong")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_no_credentials_at_all_is_401() -> None:
    assert call("get").status_code == 401


def test_a_viewer_token_may_read_but_not_write() -> None:
    _, plaintext = services.api_token_issue(name="v", role="viewer")
    assert call("get", f"Bearer {plaintext}").status_code == 200
    assert call("post", f"Bearer {plaintext}").status_code == 403


def test_an_editor_token_may_write() -> None:
    _, plaintext = services.api_token_issue(name="e", role="editor")
    assert call("post", f"Bearer {plaintext}").status_code == 200


def test_querier_and_frontend_tokens_have_no_rest_role() -> None:
    _, plaintext = services.api_token_issue(name="q", role="querier")
    assert call("get", f"Bearer {plaintext}").status_code == 403
    frontend, _ = services.api_token_issue(name="f", role="frontend")
    assert role_of(frontend) is None


def test_role_of_users_comes_from_groups_and_superusers_are_editors(
    editor: User, viewer: User
) -> None:
    nobody = User.objects.create_user("nobody")
    boss = User.objects.create_superuser("boss", password="pw-boss-123")
    assert [role_of(u) for u in (editor, viewer, nobody, boss, AnonymousUser(), None)] == [
        "editor",
        "viewer",
        None,
        "editor",
        None,
        None,
    ]


def test_role_of_a_token_user_is_its_token_role_until_revoked() -> None:
    token, _ = services.api_token_issue(name="e", role="editor")
    assert role_of(TokenUser(token)) == "editor"
    token.revoked = True
    assert role_of(token) is None


def test_an_inactive_user_has_no_role(editor: User) -> None:
    editor.is_active = False
    assert role_of(editor) is None


def test_people_read_and_write_by_the_role_of_their_group(editor: User, viewer: User) -> None:
    factory = APIRequestFactory()

    def status(method: str, user: User) -> int:
        request = getattr(factory, method)("/echo")
        force_authenticate(request, user=user)
        return int(Echo.as_view()(request).status_code)

    assert (status("get", viewer), status("post", viewer)) == (200, 403)
    assert (status("get", editor), status("post", editor)) == (200, 200)


@pytest.mark.parametrize("name", ["ci\nforged log line", "tab\there", "esc\x1b[31mred", "nul\x00"])
def test_a_token_name_with_a_control_character_is_refused(name):
    with pytest.raises(ValueError, match="no control characters"):
        services.api_token_issue(name=name, role="viewer")
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("ci\u2028forged", "U+2028 at character 3"),  # line separator
        ("ci\u2029", "U+2029 at character 3"),  # paragraph separator
        ("ci\x85", "U+0085 at character 3"),  # next line (C1)
        ("\u202eic", "U+202E at character 1"),  # right-to-left override
        ("ci\u2066x\u2069", "U+2066 at character 3"),  # left-to-right isolate
        ("ci\u200f", "U+200F at character 3"),  # right-to-left mark
        ("ci\u061c", "U+061C at character 3"),  # Arabic letter mark
    ],
)
def test_a_token_name_with_a_separator_or_bidi_control_is_refused_naming_the_character(
    name: str, found: str
) -> None:
    with pytest.raises(ValueError) as raised:
        services.api_token_issue(name=name, role="viewer")
    assert str(raised.value) == (
        "a token name may hold no control characters, line or paragraph separators "
        f"or bidi controls ({found})"
    )
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize(
    "name",
    [
        "frontend-1",
        "ci \u00e9t\u00e9",
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",  # Persian: a zero-width non-joiner
        "\U0001f469\u200d\U0001f4bb ops",  # an emoji sequence: a zero-width joiner
    ],
)
def test_a_token_name_in_any_script_with_its_joiners_is_issued(name: str) -> None:
    token, _ = services.api_token_issue(name=name, role="viewer")
    assert ApiToken.objects.get(pk=token.pk).name == name
