"""<sslContext>: PKCS12 and PEM files read and checked at load time; JKS refused with advice."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from config.model import SslContext
from config.tls import read_key_material
from tests.config.helpers import FIRST_BODY_LINE, load_body, one_error, warnings_of

TLS_LISTENER = (
    '<transportConnectors><transportConnector uri="stomp+ssl://127.0.0.1:0"/></transportConnectors>\n'
)
CLIENT_AUTH_LISTENER = TLS_LISTENER.replace(":0", ":0?needClientAuth=true")


def make_cert(common_name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    return key, cert


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tls")
    key, cert = make_cert("broker")
    _, client_ca = make_cert("clients")
    paths = {
        "cert": root / "broker.crt",
        "key": root / "broker.key",
        "key_enc": root / "broker-enc.key",
        "ca": root / "ca.crt",
        "p12": root / "broker.p12",
        "trust": root / "trust.p12",
        "jks": root / "broker.ks",
        "other_key": root / "other.key",
    }
    paths["cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pkcs8 = serialization.PrivateFormat.PKCS8
    paths["key"].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, pkcs8, serialization.NoEncryption())
    )
    paths["key_enc"].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, pkcs8, serialization.BestAvailableEncryption(b"kp"))
    )
    other, _ = make_cert("other")
    paths["other_key"].write_bytes(
        other.private_bytes(serialization.Encoding.PEM, pkcs8, serialization.NoEncryption())
    )
    paths["ca"].write_bytes(client_ca.public_bytes(serialization.Encoding.PEM))
    secret = serialization.BestAvailableEncryption(b"storepass")
    paths["p12"].write_bytes(pkcs12.serialize_key_and_certificates(b"broker", key, cert, None, secret))
    paths["trust"].write_bytes(
        pkcs12.serialize_key_and_certificates(b"trust", None, None, [client_ca], secret)
    )
    paths["jks"].write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02" + b"\x00" * 64)
    return paths


def ssl_body(attrs: str, listener: bool = True, connectors: str = TLS_LISTENER) -> str:
    return (connectors if listener else "") + f"<sslContext><sslContext {attrs}/></sslContext>\n"


def test_pkcs12_key_and_trust_stores(tmp_path: Path, files: dict[str, Path]) -> None:
    config = load_body(
        tmp_path,
        ssl_body(
            f'keyStore="file:{files["p12"]}" keyStorePassword="storepass" '
            f'trustStore="{files["trust"]}" trustStorePassword="${{trust.password}}"',
            connectors=CLIENT_AUTH_LISTENER,
        ),
        defines={"trust.password": "storepass"},
    ).config
    assert config.ssl is not None and config.ssl.key_store == files["p12"]
    assert config.connectors[0].tls and config.connectors[0].need_client_auth
    material = read_key_material(config.ssl)
    assert material.certificate_chain_pem.startswith(b"-----BEGIN CERTIFICATE-----")
    assert b"PRIVATE KEY" in material.private_key_pem
    assert material.ca_pem is not None and material.ca_pem.count(b"BEGIN CERTIFICATE") == 1


def test_pem_files(tmp_path: Path, files: dict[str, Path]) -> None:
    config = load_body(
        tmp_path,
        ssl_body(
            f'certificateFile="{files["cert"]}" keyFile="{files["key_enc"]}" keyPassword="kp" '
            f'caFile="{files["ca"]}"'
        ),
    ).config
    assert config.ssl is not None
    assert read_key_material(config.ssl).ca_pem is not None


@pytest.mark.parametrize(
    ("attrs", "fragment"),
    [
        ('keyStore="{jks}" keyStorePassword="x"', "keytool -importkeystore -srckeystore"),
        ('keyStore="{p12}" keyStorePassword="wrong"', "password is wrong"),
        ('keyStore="{missing}" keyStorePassword="x"', "does not exist"),
        ('keyStore="{p12}" keyStorePassword="storepass" keyStoreType="jks"', "stompd reads PKCS12 stores"),
        ('certificateFile="{cert}" keyFile="{other_key}"', "does not belong to the certificate"),
        ('certificateFile="{cert}" keyFile="{key_enc}"', "is encrypted"),
        ('certificateFile="{cert}"', "go together"),
        ('certificateFile="{key}" keyFile="{key}"', "no PEM certificate"),
        (
            'keyStore="{p12}" keyStorePassword="storepass" certificateFile="{cert}" keyFile="{key}"',
            "not both",
        ),
    ],
)
def test_bad_tls_files_are_errors_when_a_tls_listener_needs_them(
    tmp_path: Path, files: dict[str, Path], attrs: str, fragment: str
) -> None:
    paths = {name: str(path) for name, path in files.items()} | {"missing": str(tmp_path / "nope.p12")}
    error = one_error(tmp_path, ssl_body(attrs.format(**paths)))
    assert fragment in error.reason
    assert error.line == FIRST_BODY_LINE + 1


def test_bad_tls_files_are_warnings_when_no_tls_listener_uses_them(
    tmp_path: Path, files: dict[str, Path]
) -> None:
    loaded = load_body(tmp_path, ssl_body(f'keyStore="{files["jks"]}" keyStorePassword="x"', listener=False))
    assert "Java JKS key store" in warnings_of(loaded)
    assert "no TLS listener uses this sslContext" in warnings_of(loaded)


def test_unreadable_file(tmp_path: Path, files: dict[str, Path]) -> None:
    locked = tmp_path / "locked.p12"
    locked.write_bytes(files["p12"].read_bytes())
    locked.chmod(0)
    try:
        readable = locked.open("rb")
    except PermissionError:
        error = one_error(tmp_path, ssl_body(f'keyStore="{locked}" keyStorePassword="storepass"'))
        assert "not readable" in error.reason
    else:  # running as root: permissions do not stop reads, so check a directory instead
        readable.close()
        error = one_error(tmp_path, ssl_body(f'keyStore="{tmp_path}" keyStorePassword="storepass"'))
        assert "not a regular file (a directory)" in error.reason


def test_key_material_needs_a_key() -> None:
    with pytest.raises(ValueError, match="needs keyStore"):
        read_key_material(SslContext())


def test_client_certificates_need_a_trust_store(tmp_path: Path, files: dict[str, Path]) -> None:
    for option in ("needClientAuth", "wantClientAuth"):
        error = one_error(
            tmp_path,
            ssl_body(
                f'certificateFile="{files["cert"]}" keyFile="{files["key"]}"',
                connectors=CLIENT_AUTH_LISTENER.replace("needClientAuth", option),
            ),
        )
        assert error.line == FIRST_BODY_LINE
        assert "asks for client certificates" in error.reason and "trustStore, or caFile" in error.reason
