"""Test certificates made at test time with `cryptography`: CAs, a loopback server
certificate, client certificates; written as PEM files."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Issued:
    """A certificate and its key, as PEM files."""

    cert: Path
    key: Path
    certificate: x509.Certificate
    private_key: ec.EllipticCurvePrivateKey


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(
    folder: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey
) -> Issued:
    cert_path, key_path = folder / f"{stem}.crt", folder / f"{stem}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    return Issued(cert_path, key_path, cert, key)


def _builder(
    subject: str, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )


def make_ca(folder: Path, stem: str) -> Issued:
    """A self-signed CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(f"{stem} test CA", _name(f"{stem} test CA"), key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    return _write(folder, stem, cert, key)


def issue(folder: Path, ca: Issued, stem: str, *, server: bool) -> Issued:
    """A certificate signed by `ca`: for localhost/127.0.0.1 (server) or a client."""
    key = ec.generate_private_key(ec.SECP256R1())
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        _builder(stem, ca.certificate.subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.private_key.public_key()),
            critical=False,
        )
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    cert = builder.sign(ca.private_key, hashes.SHA256())
    return _write(folder, stem, cert, key)


@dataclass(frozen=True)
class TlsFiles:
    """Everything a TLS test needs: the server's CA and certificate, the client CA, a
    client certificate it signed and one signed by a stranger CA."""

    server_ca: Issued
    server: Issued
    client_ca: Issued
    client: Issued
    stranger_client: Issued
    other_ca: Issued


def make_tls_files(folder: Path) -> TlsFiles:
    folder.mkdir(parents=True, exist_ok=True)
    server_ca = make_ca(folder, "server-ca")
    client_ca = make_ca(folder, "client-ca")
    other_ca = make_ca(folder, "other-ca")
    return TlsFiles(
        server_ca=server_ca,
        server=issue(folder, server_ca, "server", server=True),
        client_ca=client_ca,
        client=issue(folder, client_ca, "client", server=False),
        stranger_client=issue(folder, other_ca, "stranger", server=False),
        other_ca=other_ca,
    )
