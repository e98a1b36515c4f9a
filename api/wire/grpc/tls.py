"""TLS and mutual TLS for the gRPC door and for the calls the scheduler makes.

Read from environment variables once, when settings load, with the names and
meanings of Cortex's own flags (`-server.grpc-tls-*` for the door, the gRPC
client's `tls-*` for outgoing calls). Every file is read and checked here,
so a bad path or a key that does not match its certificate stops the
process at start-up with the variable's name, instead of a refused
handshake later. Nothing here falls back to plaintext: asked-for TLS either
loads or raises.

No Django here (the package is tested against a bare runtime): problems are
`TlsSettingError`, which config/settings.py turns into ImproperlyConfigured.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import grpc

__all__ = [
    "CLIENT_AUTH_MODES",
    "REQUIRE_AND_VERIFY",
    "VERIFY_IF_GIVEN",
    "ClientTls",
    "PeerTls",
    "ServerTls",
    "TlsSettingError",
    "client_tls_from_env",
    "dial",
    "load_key_pair",
    "server_tls_from_env",
]

# Go's tls.ClientAuthType names, as Cortex's -server.grpc-tls-client-auth takes them.
REQUIRE_AND_VERIFY = "RequireAndVerifyClientCert"
VERIFY_IF_GIVEN = "VerifyClientCertIfGiven"
CLIENT_AUTH_MODES = (REQUIRE_AND_VERIFY, VERIFY_IF_GIVEN)
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


class TlsSettingError(ValueError):
    """A TLS variable is missing, contradicts another, or names a bad file."""

    def __init__(self, variable: str, problem: str) -> None:
        super().__init__(f"{variable}: {problem}")
        self.variable = variable


@dataclass(frozen=True)
class ServerTls:
    """The door's certificate and key, and the CA its clients' certificates need.

    `client_ca` is None when clients are not asked for certificates.
    """

    certificate_chain: bytes
    private_key: bytes
    client_ca: bytes | None = None
    client_auth: str = REQUIRE_AND_VERIFY

    @property
    def requires_client_cert(self) -> bool:
        return self.client_ca is not None and self.client_auth == REQUIRE_AND_VERIFY

    def credentials(self) -> grpc.ServerCredentials:
        # grpcio can only require-and-verify or not ask at all; not asking is
        # what VerifyClientCertIfGiven becomes (docs/protocol-grpc.md).
        return grpc.ssl_server_credentials(
            [(self.private_key, self.certificate_chain)],
            root_certificates=self.client_ca if self.requires_client_cert else None,
            require_client_auth=self.requires_client_cert,
        )

    def ssl_context(self) -> ssl.SSLContext:
        """The lean door's TLS: HTTP/2 by ALPN, TLS 1.2 or newer, as grpc-go serves.

        Unlike grpcio, the ssl module can ask for a certificate without
        requiring one, so VerifyClientCertIfGiven means what it means in Go:
        a certificate that is shown must verify against the CA.
        """
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["h2"])
        load_key_pair(context, self.certificate_chain, self.private_key)
        if self.client_ca is not None:
            context.load_verify_locations(cadata=self.client_ca.decode("ascii"))
            context.verify_mode = (
                ssl.CERT_REQUIRED if self.client_auth == REQUIRE_AND_VERIFY else ssl.CERT_OPTIONAL
            )
        return context


@dataclass(frozen=True)
class ClientTls:
    """How to dial a TLS peer: whom to trust, which certificate to show.

    `ca` None trusts grpcio's default roots; `server_name` overrides the name
    the peer's certificate is checked against (empty: the dialled host).
    """

    ca: bytes | None = None
    certificate_chain: bytes | None = None
    private_key: bytes | None = None
    server_name: str = ""

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=self.ca,
            private_key=self.private_key,
            certificate_chain=self.certificate_chain,
        )

    def options(self) -> list[tuple[str, str]]:
        if not self.server_name:
            return []
        return [("grpc.ssl_target_name_override", self.server_name)]


@dataclass(frozen=True)
class PeerTls:
    """How a frontend-and-querier of this scheduler's cluster dials and listens.

    Used by the demo clients on loopback: they dial as the scheduler does
    (`dial`, its client settings) and their frontend's QueryResult server
    listens as the door does (`serve`, its certificate), since the scheduler
    will dial it with its client settings. Invariant: both or neither, as a
    Cortex querier has one TLS setting for the scheduler and frontends alike.
    """

    dial: ClientTls | None = None
    serve: ServerTls | None = None

    @classmethod
    def of(cls, server_tls: ServerTls | None, client_tls: ClientTls | None) -> PeerTls:
        if server_tls is None and client_tls is not None:
            raise TlsSettingError(
                "GRPC_TLS_CERT_PATH",
                "is not set but GRPC_CLIENT_TLS_ENABLED is: the demo frontend needs the "
                "scheduler's certificate to serve QueryResult over TLS",
            )
        if server_tls is not None and client_tls is None:
            raise TlsSettingError(
                "GRPC_CLIENT_TLS_ENABLED",
                "is off but the gRPC door uses TLS: set it and GRPC_CLIENT_TLS_CA_PATH (and a "
                "client certificate if the door requires one) so the demo clients can dial it",
            )
        return cls(dial=client_tls, serve=server_tls)


def load_key_pair(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """`load_cert_chain` reads only files: the PEMs go through a private temp dir."""
    with tempfile.TemporaryDirectory(prefix="grpc-tls-") as folder:
        paths = []
        for name, data in (("cert.pem", cert), ("key.pem", key)):
            path = os.path.join(folder, name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            paths.append(path)
        context.load_cert_chain(paths[0], paths[1])


def dial(address: str, tls: ClientTls | None) -> grpc.aio.Channel:
    """A channel to `address`: TLS when `tls` is given, plaintext only when it is None."""
    if tls is None:
        return grpc.aio.insecure_channel(address)
    return grpc.aio.secure_channel(address, tls.credentials(), options=tls.options())


def server_tls_from_env(env: Mapping[str, str]) -> ServerTls | None:
    """GRPC_TLS_CERT_PATH + GRPC_TLS_KEY_PATH (+ GRPC_TLS_CA_PATH, GRPC_TLS_CLIENT_AUTH).

    None when none of them is set: the door is plaintext.
    """
    cert_var, key_var, ca_var, auth_var = (
        "GRPC_TLS_CERT_PATH",
        "GRPC_TLS_KEY_PATH",
        "GRPC_TLS_CA_PATH",
        "GRPC_TLS_CLIENT_AUTH",
    )
    cert_path, key_path, ca_path, auth = (
        _get(env, name) for name in (cert_var, key_var, ca_var, auth_var)
    )
    if not cert_path:
        for name, value in ((key_var, key_path), (ca_var, ca_path), (auth_var, auth)):
            if value:
                raise TlsSettingError(name, f"is set but {cert_var} is not (TLS needs both)")
        return None
    if not key_path:
        raise TlsSettingError(key_var, f"is not set but {cert_var} is (TLS needs both)")
    if auth and auth not in CLIENT_AUTH_MODES:
        raise TlsSettingError(
            auth_var, f"unknown value {auth!r}; use one of {', '.join(CLIENT_AUTH_MODES)}"
        )
    if auth and not ca_path:
        raise TlsSettingError(auth_var, f"is set but {ca_var} (the clients' CA) is not")
    cert, key = _key_pair(cert_var, cert_path, key_var, key_path)
    return ServerTls(
        certificate_chain=cert,
        private_key=key,
        client_ca=_ca(ca_var, ca_path) if ca_path else None,
        client_auth=auth or REQUIRE_AND_VERIFY,
    )


def client_tls_from_env(env: Mapping[str, str]) -> ClientTls | None:
    """GRPC_CLIENT_TLS_ENABLED and its CA, cert, key and server-name variables.

    None when disabled; setting any of the others while it is off is an
    error, because they would be silently ignored and calls go plaintext.
    """
    enabled_var = "GRPC_CLIENT_TLS_ENABLED"
    names = {
        part: f"GRPC_CLIENT_TLS_{part}"
        for part in ("CA_PATH", "CERT_PATH", "KEY_PATH", "SERVER_NAME")
    }
    values = {part: _get(env, name) for part, name in names.items()}
    flag = _get(env, enabled_var).lower()
    if flag not in _TRUE | _FALSE:
        raise TlsSettingError(enabled_var, f"unknown value {flag!r}; use true or false")
    if flag in _FALSE:
        for part, value in values.items():
            if value:
                raise TlsSettingError(names[part], f"is set but {enabled_var} is not true")
        return None
    cert_path, key_path = values["CERT_PATH"], values["KEY_PATH"]
    if bool(cert_path) != bool(key_path):
        missing, present = (
            (names["KEY_PATH"], names["CERT_PATH"])
            if cert_path
            else (names["CERT_PATH"], names["KEY_PATH"])
        )
        raise TlsSettingError(missing, f"is not set but {present} is (a client cert needs both)")
    cert = key = None
    if cert_path:
        cert, key = _key_pair(names["CERT_PATH"], cert_path, names["KEY_PATH"], key_path)
    return ClientTls(
        ca=_ca(names["CA_PATH"], values["CA_PATH"]) if values["CA_PATH"] else None,
        certificate_chain=cert,
        private_key=key,
        server_name=values["SERVER_NAME"],
    )


def _get(env: Mapping[str, str], name: str) -> str:
    return env.get(name, "").strip()


def _read(variable: str, path: str, marker: bytes) -> bytes:
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise TlsSettingError(variable, f"no such file {path!r}") from None
    except OSError as exc:
        raise TlsSettingError(variable, f"cannot read {path!r}: {exc.strerror or exc}") from None
    if b"-----BEGIN " not in data or marker not in data:
        raise TlsSettingError(variable, f"{path!r} holds no PEM {marker.decode().strip('- ')}")
    return data


def _key_pair(cert_var: str, cert_path: str, key_var: str, key_path: str) -> tuple[bytes, bytes]:
    """Both files, after OpenSSL agrees the key is the certificate's."""
    cert = _read(cert_var, cert_path, b"CERTIFICATE-----")
    key = _read(key_var, key_path, b"PRIVATE KEY-----")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_cert_chain(cert_path, key_path, password=_no_password)
    except _EncryptedKey:
        raise TlsSettingError(
            key_var, f"{key_path!r} is encrypted; give an unencrypted key"
        ) from None
    except ssl.SSLError as exc:
        raise TlsSettingError(
            key_var, f"{key_path!r} does not load with the certificate in {cert_var}: {exc}"
        ) from None
    return cert, key


def _ca(variable: str, path: str) -> bytes:
    data = _read(variable, path, b"CERTIFICATE-----")
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=data.decode("ascii"))
    except (ssl.SSLError, UnicodeDecodeError, ValueError) as exc:
        raise TlsSettingError(variable, f"{path!r} is not a usable CA bundle: {exc}") from None
    return data


class _EncryptedKey(Exception):
    """OpenSSL asked for a password: never prompt on a server's terminal."""


def _no_password() -> bytes:
    raise _EncryptedKey
