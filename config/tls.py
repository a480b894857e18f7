"""The TLS files of ``<sslContext>``: read, parsed and checked with ``cryptography``.

ActiveMQ reads Java key stores; stompd reads PKCS12 (what ``keytool -storetype pkcs12``
and ``openssl pkcs12 -export`` make, and keytool's default since Java 9) and PEM files.
A JKS or JCEKS store is recognised by its magic number and refused with the command that
converts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cryptography import x509
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
    pkcs12,
)

from config.files import FileRefused, read_regular

if TYPE_CHECKING:
    from pathlib import Path

    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

    from config.model import SslContext

_JAVA_STORES = {b"\xfe\xed\xfe\xed": "JKS", b"\xce\xce\xce\xce": "JCEKS"}


class TlsFileError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class KeyMaterial:
    """What a TLS listener needs, as PEM: the certificate chain (leaf first), its private
    key (unencrypted PKCS8, keep it in memory), and the CA certificates that client
    certificates are checked against (None: no trust store configured)."""

    certificate_chain_pem: bytes
    private_key_pem: bytes
    ca_pem: bytes | None


def _read(path: Path, what: str) -> bytes:
    try:
        return read_regular(path)
    except FileRefused as exc:
        raise TlsFileError(f"{what} {path}: {exc}") from None
    except FileNotFoundError:
        raise TlsFileError(f"{what} {path} does not exist") from None
    except PermissionError:
        raise TlsFileError(f"{what} {path} is not readable by this user") from None
    except OSError as exc:
        raise TlsFileError(f"{what} {path}: {exc.strerror or exc}") from None


def _refuse_java_store(data: bytes, path: Path, what: str) -> None:
    kind = _JAVA_STORES.get(data[:4])
    if kind is not None:
        target = path.with_suffix(".p12")
        raise TlsFileError(
            f"{what} {path} is a Java {kind} key store, which stompd cannot read; convert it to "
            f"PKCS12 with: keytool -importkeystore -srckeystore {path} -srcstoretype {kind} "
            f"-destkeystore {target} -deststoretype PKCS12, and name {target} here"
        )


def _pkcs12(path: Path, password: str | None, what: str) -> pkcs12.PKCS12KeyAndCertificates:
    data = _read(path, what)
    _refuse_java_store(data, path, what)
    candidates = [password.encode()] if password is not None else [None, b""]
    for secret in candidates:
        try:
            return pkcs12.load_pkcs12(data, secret)
        except ValueError:
            continue
    raise TlsFileError(f"{what} {path} is not a PKCS12 file, or its password is wrong")


def _pem_certificates(path: Path, what: str) -> list[x509.Certificate]:
    data = _read(path, what)
    _refuse_java_store(data, path, what)
    try:
        certificates = x509.load_pem_x509_certificates(data)
    except ValueError:
        raise TlsFileError(f"{what} {path} holds no PEM certificate") from None
    return certificates


def _pem_key(path: Path, password: str | None) -> PrivateKeyTypes:
    data = _read(path, "keyFile")
    try:
        return load_pem_private_key(data, password.encode() if password is not None else None)
    except TypeError:
        raise TlsFileError(f"keyFile {path} is encrypted: give its password in keyPassword") from None
    except ValueError:
        raise TlsFileError(f"keyFile {path} is not a PEM private key, or keyPassword is wrong") from None


def _public(key: object) -> bytes:
    public_bytes: bytes = key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)  # type: ignore[attr-defined]
    return public_bytes


def read_key_material(ssl: SslContext) -> KeyMaterial:
    """Reads and checks every file ``ssl`` names; raises TlsFileError saying what is wrong."""
    if ssl.key_store is not None:
        store = _pkcs12(ssl.key_store, ssl.key_store_password, "keyStore")
        if store.key is None or store.cert is None:
            raise TlsFileError(f"keyStore {ssl.key_store} holds no private key with its certificate")
        key = store.key
        chain = [store.cert.certificate, *(extra.certificate for extra in store.additional_certs)]
    elif ssl.certificate_file is not None and ssl.key_file is not None:
        chain = _pem_certificates(ssl.certificate_file, "certificateFile")
        key = _pem_key(ssl.key_file, ssl.key_password)
    else:
        raise TlsFileError("needs keyStore, or both certificateFile and keyFile")
    if _public(chain[0].public_key()) != _public(key.public_key()):
        raise TlsFileError("the private key does not belong to the certificate")
    trusted: list[x509.Certificate] | None = None
    if ssl.trust_store is not None:
        trust = _pkcs12(ssl.trust_store, ssl.trust_store_password, "trustStore")
        trusted = [extra.certificate for extra in trust.additional_certs]
        if trust.cert is not None:
            trusted.insert(0, trust.cert.certificate)
        if not trusted:
            raise TlsFileError(f"trustStore {ssl.trust_store} holds no certificate")
    if ssl.ca_file is not None:
        trusted = [*(trusted or []), *_pem_certificates(ssl.ca_file, "caFile")]
    return KeyMaterial(
        certificate_chain_pem=b"".join(cert.public_bytes(Encoding.PEM) for cert in chain),
        private_key_pem=key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()),
        ca_pem=None if trusted is None else b"".join(cert.public_bytes(Encoding.PEM) for cert in trusted),
    )
