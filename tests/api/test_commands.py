from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from api.management.commands.issue_token import Command as IssueToken
from api.management.commands.seed_demo_config import DEMO_TENANTS
from api.store.models import ApiToken, ConfigRevision, Tenant
from api.store.roles import role_of
from api.store.selectors import tenant_limits_all
from api.store.services import api_token_authenticate, tenant_delete

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_issue_token_prints_a_working_token_of_the_role() -> None:
    plaintext = run("issue_token", "querier-1", "--role", "querier").strip()
    token = api_token_authenticate(plaintext)
    assert token is not None and (token.name, token.role) == ("querier-1", "querier")


@pytest.mark.parametrize("name", ["x" * 201, " ", "a\x00b"])
def test_issue_token_refuses_a_name_the_store_cannot_keep_and_issues_nothing(name: str) -> None:
    with pytest.raises(CommandError, match="name"):
        run("issue_token", name, "--role", "querier")
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize(
    ("expires_in", "seconds"),
    [("45s", 45), ("90m", 90 * 60), ("12h", 12 * 3600), ("30d", 30 * 86400), (" 1d ", 86400)],
)
def test_issue_token_expires_in_a_duration_of_any_unit(expires_in: str, seconds: int) -> None:
    before = timezone.now()
    err = StringIO()
    out = StringIO()
    call_command(
        "issue_token", "q", "--role", "querier", "--expires-in", expires_in, stdout=out, stderr=err
    )
    after = timezone.now()
    token = api_token_authenticate(out.getvalue().strip())
    assert token is not None and token.expires_at is not None
    delta = timedelta(seconds=seconds)
    assert before + delta <= token.expires_at <= after + delta
    # The lines people and scripts read are unchanged; the expiry is one line more.
    assert err.getvalue().splitlines() == [
        f"It expires at {token.expires_at.isoformat(timespec='seconds')}.",
        f"Issued querier token #{token.pk} 'q'; it is shown once:",
    ]


@pytest.mark.parametrize("at", ["2999-01-31T00:00:00Z", "2999-01-31T02:00:00+02:00"])
def test_issue_token_expires_at_an_iso_time_kept_as_that_instant(at: str) -> None:
    plaintext = run("issue_token", "q", "--role", "querier", "--expires-at", at).strip()
    token = api_token_authenticate(plaintext)
    assert token is not None
    assert token.expires_at == datetime(2999, 1, 31, tzinfo=UTC)


def test_issue_token_without_an_expiry_issues_one_that_never_expires() -> None:
    err = StringIO()
    out = StringIO()
    call_command("issue_token", "q", "--role", "querier", stdout=out, stderr=err)
    token = api_token_authenticate(out.getvalue().strip())
    assert token is not None and token.expires_at is None
    assert err.getvalue() == f"Issued querier token #{token.pk} 'q'; it is shown once:\n"


class _Terminal(StringIO):
    def isatty(self) -> bool:
        return True


def test_issue_token_says_what_it_did_in_plain_text_on_a_terminal() -> None:
    # Django paints stderr red on a terminal; these lines are no errors.
    err = _Terminal()
    command = IssueToken(stdout=StringIO(), stderr=err, force_color=True)
    call_command(command, "q", "--role", "querier", "--expires-in", "1d", force_color=True)
    assert "\x1b[" not in err.getvalue()
    assert err.getvalue().splitlines()[1].startswith("Issued querier token #")


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("--expires-in", "30", "is not a duration"),
        ("--expires-in", "1w", "is not a duration"),
        ("--expires-in", "1.5h", "is not a duration"),
        ("--expires-in", "-1d", "is not a duration"),
        ("--expires-in", "\u0661d", "is not a duration"),  # an Arabic-Indic digit one
        ("--expires-in", "", "is not a duration"),
        ("--expires-in", "0d", "must be longer than 0"),
        ("--expires-in", "999999999999d", "out of range"),
        ("--expires-at", "tomorrow", "is not an ISO-8601 time"),
        ("--expires-at", "2999-01-31", "has no time zone"),
        ("--expires-at", "2999-01-31T00:00:00", "has no time zone"),
        ("--expires-at", "2001-01-01T00:00:00Z", "is not in the future"),
        ("--expires-at", "9999-12-31T23:00:00-05:00", "out of range"),
    ],
)
def test_issue_token_refuses_a_bad_expiry_naming_the_option_and_issues_nothing(
    option: str, value: str, error: str
) -> None:
    with pytest.raises(CommandError, match=f"^{option}: .*{error}"):
        run("issue_token", "q", "--role", "querier", f"{option}={value}")
    assert not ApiToken.objects.exists()


def test_issue_token_refuses_both_expiry_options_at_once_and_issues_nothing() -> None:
    with pytest.raises(CommandError, match="--expires-at: not allowed with argument --expires-in"):
        run("issue_token", "q", "--role", "querier", "--expires-in=1d", "--expires-at=2999-01-01Z")
    assert not ApiToken.objects.exists()


def test_revoke_token_revokes_an_expired_token_too() -> None:
    token, _ = _issued("querier-1")
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert run("revoke_token", str(token.pk)) == f"Revoked querier token #{token.pk} 'querier-1'\n"
    assert ApiToken.objects.get(pk=token.pk).state(timezone.now()) == "revoked"


def _issued(name: str, role: str = "querier") -> tuple[ApiToken, str]:
    plaintext = run("issue_token", name, "--role", role).strip()
    token = api_token_authenticate(plaintext)
    assert token is not None
    return token, plaintext


def test_revoke_token_by_id_stops_the_token_working_and_leaves_others() -> None:
    first, first_text = _issued("querier-1")
    second, second_text = _issued("querier-2")
    printed = run("revoke_token", str(first.pk))
    assert printed == f"Revoked querier token #{first.pk} 'querier-1'\n"
    assert api_token_authenticate(first_text) is None
    assert api_token_authenticate(second_text) is not None


def test_revoke_token_by_name_revokes_every_token_of_that_name() -> None:
    texts = [_issued("rotating")[1] for _ in range(2)]
    _, other = _issued("kept")
    assert run("revoke_token", "--name", "rotating").count("Revoked") == 2
    assert [api_token_authenticate(t) for t in texts] == [None, None]
    assert api_token_authenticate(other) is not None


def test_revoke_token_says_which_tokens_were_revoked_already() -> None:
    old, _ = _issued("rotating")
    run("revoke_token", str(old.pk))
    new, new_text = _issued("rotating")
    assert run("revoke_token", "--name", "rotating").splitlines() == [
        f"Revoked querier token #{old.pk} 'rotating' (it was revoked already)",
        f"Revoked querier token #{new.pk} 'rotating'",
    ]
    assert api_token_authenticate(new_text) is None


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((), "give token ids or --name"),
        (("--name", "nobody"), "name: no token named 'nobody'"),
        (("1", "--name", "x"), "give token ids or --name"),
    ],
)
def test_revoke_token_refuses_a_missing_or_doubled_target_and_revokes_nothing(
    args: tuple[str, ...], error: str
) -> None:
    _, text = _issued("x")
    with pytest.raises(CommandError, match=error):
        run("revoke_token", *args)
    assert api_token_authenticate(text) is not None


def test_revoke_token_with_one_unknown_id_among_several_revokes_none() -> None:
    token, text = _issued("querier-1")
    with pytest.raises(CommandError, match=f"ids: no token #{token.pk + 100}"):
        run("revoke_token", str(token.pk), str(token.pk + 100))
    assert api_token_authenticate(text) is not None


def test_create_demo_user_is_idempotent_and_prints_a_working_editor_login() -> None:
    run("create_demo_user", "--password", "first-pass-1")
    printed = run("create_demo_user", "--username", "demo", "--password", "second-pass-2")
    assert "user: demo" in printed and "password: second-pass-2" in printed
    user = authenticate(username="demo", password="second-pass-2")
    assert user is not None and role_of(user) == "editor"


def test_seed_demo_config_creates_valid_tenants_once_and_keeps_later_edits() -> None:
    run("seed_demo_config")
    Tenant.objects.filter(tenant_id="team-c").update(config={"max_queriers_per_tenant": 9})
    run("seed_demo_config")
    assert set(tenant_limits_all()) == set(DEMO_TENANTS)
    assert Tenant.objects.get(tenant_id="team-c").config == {"max_queriers_per_tenant": 9}
    assert ConfigRevision.objects.filter(source="cli").count() == len(DEMO_TENANTS)


def test_seed_demo_config_leaves_a_demo_tenant_deleted_in_the_browser_deleted() -> None:
    run("seed_demo_config")
    tenant_delete(
        tenant_id="team-c", expected_version=None, author=None, source=ConfigRevision.Source.UI
    )
    run("seed_demo_config")
    assert not Tenant.objects.filter(tenant_id="team-c").exists()


def test_the_demo_config_has_a_reserved_querier() -> None:
    run("seed_demo_config")
    reserved = [
        p.reserved_queriers
        for limits in tenant_limits_all().values()
        for p in limits.query_priority.priorities
    ]
    assert any(r >= 1 for r in reserved)
