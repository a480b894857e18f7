"""Brokers run from activemq.xml ``<transportConnector>``s, and the certificates of TLS tests."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import trustme
from cryptography import x509
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    load_pem_private_key,
    pkcs12,
)

from broker.settings_bridge import broker_options
from config.overrides import Override, apply
from tests.broker_thread import BrokerThread
from tests.config.helpers import load_body


@contextmanager
def broker_from_xml(tmp_path: Path, connectors: str, more: str = "") -> Iterator[BrokerThread]:
    """A broker run from a file with these transportConnectors (and ``more`` elements),
    its data under ``tmp_path`` and its admin server off.  ``.ports`` are the listeners'."""
    body = f"<transportConnectors>{connectors}</transportConnectors>\n{more}"
    config = apply(
        load_body(tmp_path, body).config,
        [Override("data_dir", tmp_path / "data", "--data-dir"), Override("http_port", 0, "--http-port")],
    )
    thread = BrokerThread(broker_options(config)).start()
    try:
        yield thread
    finally:
        thread.stop()


def read_to_eof(sock: socket.socket, timeout: float = 5.0) -> bytes:
    """Everything the broker sends until it closes the socket (TimeoutError if it does not)."""
    deadline = time.monotonic() + timeout
    data = b""
    while True:
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


@dataclass
class Pki:
    """A server certificate for 127.0.0.1, a CA for client certificates, a client
    certificate it issued and one from a CA nobody trusts; PEM files and PKCS12 stores."""

    directory: Path
    server_ca: trustme.CA
    client_ca: trustme.CA

    @classmethod
    def make(cls, directory: Path) -> Pki:
        pki = cls(directory, trustme.CA(), trustme.CA())
        server = pki.server_ca.issue_cert("127.0.0.1", "localhost")
        (directory / "server.crt").write_bytes(b"".join(blob.bytes() for blob in server.cert_chain_pems))
        server.private_key_pem.write_to_path(str(directory / "server.key"))
        pki.server_ca.cert_pem.write_to_path(str(directory / "server-ca.crt"))
        pki.client_ca.cert_pem.write_to_path(str(directory / "clients-ca.crt"))
        pki.client_ca.issue_cert("app.example").private_key_and_cert_chain_pem.write_to_path(
            str(directory / "client.pem")
        )
        trustme.CA().issue_cert("app.example").private_key_and_cert_chain_pem.write_to_path(
            str(directory / "rogue.pem")
        )
        # What keytool or `openssl pkcs12 -export` would make: a key store with the server's
        # key and chain, and a trust store with the client CA, each with its password.
        key = load_pem_private_key(server.private_key_pem.bytes(), None)
        chain = [x509.load_pem_x509_certificate(blob.bytes()) for blob in server.cert_chain_pems]
        (directory / "broker.p12").write_bytes(
            pkcs12.serialize_key_and_certificates(
                b"broker",
                key,
                chain[0],
                chain[1:],
                BestAvailableEncryption(b"store-secret"),  # type: ignore[arg-type]
            )
        )
        (directory / "clients.p12").write_bytes(
            pkcs12.serialize_key_and_certificates(
                None,
                None,
                None,
                [x509.load_pem_x509_certificate(pki.client_ca.cert_pem.bytes())],
                BestAvailableEncryption(b"trust-secret"),
            )
        )
        return pki

    def pem_context(self) -> str:
        d = self.directory
        return (
            f'<sslContext><sslContext certificateFile="{d}/server.crt" keyFile="{d}/server.key" '
            f'caFile="{d}/clients-ca.crt"/></sslContext>\n'
        )

    def pkcs12_context(self) -> str:
        d = self.directory
        return (
            f'<sslContext><sslContext keyStore="{d}/broker.p12" keyStorePassword="store-secret" '
            f'trustStore="{d}/clients.p12" trustStorePassword="trust-secret"/></sslContext>\n'
        )
