"""Throwaway PKI for the TLS tests: a CA, a server certificate, client certificates.

Certificates are valid for a day from a fixed clock-independent start (one
hour ago), keys are EC P-256 (fast to make), and every file is PEM, as
operators hand them to Cortex and to us.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["Authority", "Pki", "make_pki"]


@dataclass(frozen=True)
class Issued:
    """A certificate and its key, written as PEM files."""

    cert_path: Path
    key_path: Path

    @property
    def cert(self) -> bytes:
        return self.cert_path.read_bytes()

    @property
    def key(self) -> bytes:
        return self.key_path.read_bytes()


class Authority:
    """A self-signed CA that issues leaf certificates into `directory`."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self.name = name
        self._key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self._subject = subject
        self.certificate = (
            _builder(subject, subject, self._key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )
        self.cert_path = directory / f"{name}.crt"
        self.cert_path.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))

    @property
    def cert(self) -> bytes:
        return self.cert_path.read_bytes()

    def issue(self, name: str, *, server: bool) -> Issued:
        """A leaf for `name`: server ones carry SANs 127.0.0.1 and localhost."""
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = _builder(subject, self._subject, key.public_key()).add_extension(
            x509.ExtendedKeyUsage([usage]), critical=False
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [
                        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                        x509.DNSName("localhost"),
                    ]
                ),
                critical=False,
            )
        certificate = builder.sign(self._key, hashes.SHA256())
        issued = Issued(self.directory / f"{name}.crt", self.directory / f"{name}.key")
        issued.cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        issued.key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return issued


@dataclass(frozen=True)
class Pki:
    """One CA with a server and a client certificate, plus an unrelated CA's client."""

    ca: Authority
    server: Issued
    client: Issued
    stranger: Issued


def make_pki(directory: Path) -> Pki:
    ca = Authority(directory, "test-ca")
    other = Authority(directory, "other-ca")
    return Pki(
        ca=ca,
        server=ca.issue("scheduler", server=True),
        client=ca.issue("querier", server=False),
        stranger=other.issue("stranger", server=False),
    )


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    start = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=1))
    )
