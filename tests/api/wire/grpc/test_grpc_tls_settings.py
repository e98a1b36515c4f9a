"""GRPC_TLS_* and GRPC_CLIENT_TLS_* are checked when settings load, naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization

from api.wire.grpc.tls import (
    REQUIRE_AND_VERIFY,
    VERIFY_IF_GIVEN,
    ClientTls,
    PeerTls,
    ServerTls,
    TlsSettingError,
    client_tls_from_env,
    server_tls_from_env,
)
from tests.api.wire.grpc.certs import Pki, make_pki

BASE_DIR = Path(__file__).resolve().parents[4]
Env = dict[str, str]


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path)


def door(pki: Pki, **extra: str) -> Env:
    return {
        "GRPC_TLS_CERT_PATH": str(pki.server.cert_path),
        "GRPC_TLS_KEY_PATH": str(pki.server.key_path),
        **extra,
    }


def client(pki: Pki, **extra: str) -> Env:
    return {
        "GRPC_CLIENT_TLS_ENABLED": "true",
        "GRPC_CLIENT_TLS_CA_PATH": str(pki.ca.cert_path),
        "GRPC_CLIENT_TLS_CERT_PATH": str(pki.client.cert_path),
        "GRPC_CLIENT_TLS_KEY_PATH": str(pki.client.key_path),
        **extra,
    }


def encrypted_key(pki: Pki) -> Path:
    key = serialization.load_pem_private_key(pki.server.key, password=None)
    path = pki.server.key_path.with_suffix(".enc.key")
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )
    return path


def not_pem(pki: Pki) -> Path:
    path = pki.ca.directory / "notes.txt"
    path.write_text("not a certificate\n")
    return path


def bad_ca(pki: Pki) -> Path:
    path = pki.ca.directory / "broken-ca.crt"
    path.write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    return path


SERVER_PROBLEMS: list[tuple[str, Callable[[Pki], Env], str, str]] = [
    (
        "key alone",
        lambda p: {"GRPC_TLS_KEY_PATH": str(p.server.key_path)},
        "GRPC_TLS_KEY_PATH",
        "GRPC_TLS_CERT_PATH is not",
    ),
    (
        "ca alone",
        lambda p: {"GRPC_TLS_CA_PATH": str(p.ca.cert_path)},
        "GRPC_TLS_CA_PATH",
        "GRPC_TLS_CERT_PATH is not",
    ),
    (
        "cert alone",
        lambda p: {"GRPC_TLS_CERT_PATH": str(p.server.cert_path)},
        "GRPC_TLS_KEY_PATH",
        "is not set",
    ),
    (
        "missing cert",
        lambda p: door(p, GRPC_TLS_CERT_PATH="/nonexistent/tls.crt"),
        "GRPC_TLS_CERT_PATH",
        "no such file '/nonexistent/tls.crt'",
    ),
    (
        "missing key",
        lambda p: door(p, GRPC_TLS_KEY_PATH="/nonexistent/tls.key"),
        "GRPC_TLS_KEY_PATH",
        "no such file",
    ),
    (
        "unreadable cert",
        lambda p: door(p, GRPC_TLS_CERT_PATH=str(p.ca.directory)),
        "GRPC_TLS_CERT_PATH",
        "cannot read",
    ),
    (
        "cert not pem",
        lambda p: door(p, GRPC_TLS_CERT_PATH=str(not_pem(p))),
        "GRPC_TLS_CERT_PATH",
        "no PEM CERTIFICATE",
    ),
    (
        "key not pem",
        lambda p: door(p, GRPC_TLS_KEY_PATH=str(p.server.cert_path)),
        "GRPC_TLS_KEY_PATH",
        "no PEM PRIVATE KEY",
    ),
    (
        "someone else's key",
        lambda p: door(p, GRPC_TLS_KEY_PATH=str(p.client.key_path)),
        "GRPC_TLS_KEY_PATH",
        "does not load with the certificate in GRPC_TLS_CERT_PATH",
    ),
    (
        "encrypted key",
        lambda p: door(p, GRPC_TLS_KEY_PATH=str(encrypted_key(p))),
        "GRPC_TLS_KEY_PATH",
        "is encrypted",
    ),
    (
        "missing ca",
        lambda p: door(p, GRPC_TLS_CA_PATH="/nonexistent/ca.crt"),
        "GRPC_TLS_CA_PATH",
        "no such file",
    ),
    (
        "broken ca",
        lambda p: door(p, GRPC_TLS_CA_PATH=str(bad_ca(p))),
        "GRPC_TLS_CA_PATH",
        "not a usable CA bundle",
    ),
    (
        "unknown auth",
        lambda p: door(
            p, GRPC_TLS_CA_PATH=str(p.ca.cert_path), GRPC_TLS_CLIENT_AUTH="RequireAnyClientCert"
        ),
        "GRPC_TLS_CLIENT_AUTH",
        "unknown value 'RequireAnyClientCert'",
    ),
    (
        "auth without ca",
        lambda p: door(p, GRPC_TLS_CLIENT_AUTH=REQUIRE_AND_VERIFY),
        "GRPC_TLS_CLIENT_AUTH",
        "GRPC_TLS_CA_PATH (the clients' CA) is not",
    ),
]

CLIENT_PROBLEMS: list[tuple[str, Callable[[Pki], Env], str, str]] = [
    (
        "ca while off",
        lambda p: {"GRPC_CLIENT_TLS_CA_PATH": str(p.ca.cert_path)},
        "GRPC_CLIENT_TLS_CA_PATH",
        "GRPC_CLIENT_TLS_ENABLED is not true",
    ),
    (
        "paths while off",
        lambda p: client(p, GRPC_CLIENT_TLS_ENABLED="false"),
        "GRPC_CLIENT_TLS_CA_PATH",
        "is not true",
    ),
    (
        "server name while off",
        lambda p: {"GRPC_CLIENT_TLS_SERVER_NAME": "scheduler"},
        "GRPC_CLIENT_TLS_SERVER_NAME",
        "is not true",
    ),
    (
        "odd flag",
        lambda p: {"GRPC_CLIENT_TLS_ENABLED": "maybe"},
        "GRPC_CLIENT_TLS_ENABLED",
        "unknown value 'maybe'",
    ),
    (
        "cert without key",
        lambda p: client(p, GRPC_CLIENT_TLS_KEY_PATH=""),
        "GRPC_CLIENT_TLS_KEY_PATH",
        "GRPC_CLIENT_TLS_CERT_PATH is",
    ),
    (
        "key without cert",
        lambda p: client(p, GRPC_CLIENT_TLS_CERT_PATH=""),
        "GRPC_CLIENT_TLS_CERT_PATH",
        "GRPC_CLIENT_TLS_KEY_PATH is",
    ),
    (
        "missing ca",
        lambda p: client(p, GRPC_CLIENT_TLS_CA_PATH="/nonexistent/ca.crt"),
        "GRPC_CLIENT_TLS_CA_PATH",
        "no such file",
    ),
    (
        "missing cert",
        lambda p: client(p, GRPC_CLIENT_TLS_CERT_PATH="/nonexistent/c.crt"),
        "GRPC_CLIENT_TLS_CERT_PATH",
        "no such file",
    ),
    (
        "mismatched key",
        lambda p: client(p, GRPC_CLIENT_TLS_KEY_PATH=str(p.server.key_path)),
        "GRPC_CLIENT_TLS_KEY_PATH",
        "does not load",
    ),
]


@pytest.mark.parametrize(
    ("env_of", "variable", "problem"),
    [case[1:] for case in SERVER_PROBLEMS],
    ids=[case[0] for case in SERVER_PROBLEMS],
)
def test_each_bad_door_setting_is_refused_naming_its_variable(
    pki: Pki, env_of: Callable[[Pki], Env], variable: str, problem: str
) -> None:
    with pytest.raises(TlsSettingError) as caught:
        server_tls_from_env(env_of(pki))

    assert caught.value.variable == variable
    assert str(caught.value).startswith(f"{variable}: ")
    assert problem in str(caught.value)


@pytest.mark.parametrize(
    ("env_of", "variable", "problem"),
    [case[1:] for case in CLIENT_PROBLEMS],
    ids=[case[0] for case in CLIENT_PROBLEMS],
)
def test_each_bad_client_setting_is_refused_naming_its_variable(
    pki: Pki, env_of: Callable[[Pki], Env], variable: str, problem: str
) -> None:
    with pytest.raises(TlsSettingError) as caught:
        client_tls_from_env(env_of(pki))

    assert caught.value.variable == variable
    assert str(caught.value).startswith(f"{variable}: ")
    assert problem in str(caught.value)


def test_no_tls_variables_leave_both_sides_plaintext() -> None:
    assert server_tls_from_env({}) is None
    assert client_tls_from_env({"GRPC_CLIENT_TLS_ENABLED": "false"}) is None


def test_a_cert_and_key_make_a_tls_door_that_asks_no_client_certificate(pki: Pki) -> None:
    tls = server_tls_from_env(door(pki))

    assert tls == ServerTls(pki.server.cert, pki.server.key, None, REQUIRE_AND_VERIFY)
    assert not tls.requires_client_cert


def test_a_client_ca_requires_client_certificates_unless_told_verify_if_given(pki: Pki) -> None:
    ca = str(pki.ca.cert_path)
    required = server_tls_from_env(door(pki, GRPC_TLS_CA_PATH=ca))
    if_given = server_tls_from_env(
        door(pki, GRPC_TLS_CA_PATH=ca, GRPC_TLS_CLIENT_AUTH=VERIFY_IF_GIVEN)
    )

    assert required is not None and if_given is not None
    assert (required.client_ca, required.client_auth) == (pki.ca.cert, REQUIRE_AND_VERIFY)
    assert required.requires_client_cert
    assert (if_given.client_ca, if_given.client_auth) == (pki.ca.cert, VERIFY_IF_GIVEN)
    assert not if_given.requires_client_cert


def test_client_settings_carry_the_ca_the_certificate_and_the_server_name(pki: Pki) -> None:
    tls = client_tls_from_env(client(pki, GRPC_CLIENT_TLS_SERVER_NAME="scheduler.internal"))

    assert tls == ClientTls(pki.ca.cert, pki.client.cert, pki.client.key, "scheduler.internal")
    assert tls.options() == [("grpc.ssl_target_name_override", "scheduler.internal")]


def test_client_tls_with_only_the_flag_trusts_default_roots_and_shows_no_certificate() -> None:
    tls = client_tls_from_env({"GRPC_CLIENT_TLS_ENABLED": "1"})

    assert tls == ClientTls()
    assert tls.options() == []


def test_demo_clients_need_tls_on_both_sides_or_neither(pki: Pki) -> None:
    server, peer = server_tls_from_env(door(pki)), client_tls_from_env(client(pki))

    assert PeerTls.of(None, None) == PeerTls()
    assert PeerTls.of(server, peer) == PeerTls(dial=peer, serve=server)
    with pytest.raises(TlsSettingError) as only_door:
        PeerTls.of(server, None)
    with pytest.raises(TlsSettingError) as only_client:
        PeerTls.of(None, peer)
    assert (only_door.value.variable, only_client.value.variable) == (
        "GRPC_CLIENT_TLS_ENABLED",
        "GRPC_TLS_CERT_PATH",
    )


def load_settings(env: Env) -> subprocess.CompletedProcess[str]:
    """Import config.settings in a fresh interpreter with `env` added."""
    code = (
        "import django\n"
        "from django.conf import settings\n"
        "django.setup()\n"
        "tls = settings.GRPC_SERVER_TLS, settings.GRPC_CLIENT_TLS\n"
        "print([type(x).__name__ for x in tls])\n"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GRPC_")}
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_settings_load_refuses_a_bad_tls_variable_with_improperly_configured(pki: Pki) -> None:
    result = load_settings(door(pki, GRPC_TLS_CLIENT_AUTH="NoSuchMode"))

    assert result.returncode != 0
    assert "django.core.exceptions.ImproperlyConfigured: GRPC_TLS_CLIENT_AUTH:" in result.stderr


def test_settings_load_reads_both_tls_sides_from_the_environment(pki: Pki) -> None:
    result = load_settings({**door(pki, GRPC_TLS_CA_PATH=str(pki.ca.cert_path)), **client(pki)})

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['ServerTls', 'ClientTls']"
