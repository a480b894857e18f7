"""The one place an ``ssl.SSLContext`` is made: from ``<sslContext>`` (the settings model),
for every TLS listener (``stomp+ssl://``, ``stomp+nio+ssl://``, ``wss://``).

config/tls.py reads the key material (PKCS12 key and trust stores, or PEM files) with
``cryptography``; the standard library's ``ssl`` loads a certificate chain only from a
file, so the chain and its unencrypted key are handed over through an anonymous
in-memory file (``memfd``) that never reaches a disk.

Client certificates are checked against the configured trust store (``trustStore``,
``caFile``) and nothing else: not the system's CAs, which would let any certificate
from a public CA in.  ``needClientAuth``: a client without a valid certificate fails
the handshake; ``wantClientAuth``: one is asked for, and a client may send none (a
certificate it does send must be valid).
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from config.model import SslContext
    from config.tls import KeyMaterial


class TlsSetupError(ValueError):
    """The TLS settings cannot make a listener's context; the text says why."""


def server_context(
    settings: SslContext, *, need_client_auth: bool = False, want_client_auth: bool = False
) -> ssl.SSLContext:
    """A server-side context for one listener; raises TlsSetupError saying what is wrong."""
    # Imported here, not at the top: cryptography only where TLS is configured
    # (config/loader_security.py says why).
    from config.tls import TlsFileError, read_key_material

    try:
        material = read_key_material(settings)
    except TlsFileError as exc:
        raise TlsSetupError(str(exc)) from None
    return context_from(material, need_client_auth=need_client_auth, want_client_auth=want_client_auth)


def client_context(settings: SslContext) -> ssl.SSLContext:
    """The client side of ``<sslContext>``, for network bridges over ``stomp+ssl://``: the
    remote broker's certificate is checked against the trust store (and its host name),
    and the key store's certificate is this broker's, for a remote that asks for one."""
    from config.tls import TlsFileError, read_key_material

    try:
        material = read_key_material(settings)
    except TlsFileError as exc:
        raise TlsSetupError(str(exc)) from None
    if material.ca_pem is None:
        raise TlsSetupError(
            "a bridge over stomp+ssl:// checks the remote broker's certificate against the CA "
            "certificates of a trustStore or caFile in <sslContext>"
        )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.options |= ssl.OP_NO_COMPRESSION
    context.load_verify_locations(cadata=material.ca_pem.decode("ascii"))
    with _in_memory_file(material.certificate_chain_pem + material.private_key_pem) as path:
        try:
            context.load_cert_chain(path)
        except ssl.SSLError as exc:
            raise TlsSetupError(f"the certificate or its key cannot be used: {exc.reason or exc}") from None
    return context


def context_from(
    material: KeyMaterial, *, need_client_auth: bool = False, want_client_auth: bool = False
) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    # Python's server default (create_default_context) minus its system CAs.
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.options |= ssl.OP_NO_COMPRESSION
    with _in_memory_file(material.certificate_chain_pem + material.private_key_pem) as path:
        try:
            context.load_cert_chain(path)
        except ssl.SSLError as exc:
            raise TlsSetupError(f"the certificate or its key cannot be used: {exc.reason or exc}") from None
    if need_client_auth or want_client_auth:
        if material.ca_pem is None:
            raise TlsSetupError(
                "needClientAuth/wantClientAuth need the CA certificates that client certificates are "
                "checked against: a trustStore or caFile in <sslContext>"
            )
        context.load_verify_locations(cadata=material.ca_pem.decode("ascii"))
        context.verify_mode = ssl.CERT_REQUIRED if need_client_auth else ssl.CERT_OPTIONAL
    return context


@contextlib.contextmanager
def _in_memory_file(data: bytes) -> Iterator[str]:
    """A path that reads ``data``: an anonymous memory file, or a private temporary file
    where the system has none."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("stompd-tls", os.MFD_CLOEXEC)
        try:
            os.write(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "chain.pem")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as file:
            file.write(data)
        yield path
