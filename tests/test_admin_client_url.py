"""stompd-admin's reading of ``--url`` (adminctl/client.py), without a server."""

from __future__ import annotations

import pytest

from adminctl.client import AdminClient


@pytest.mark.parametrize(
    ("given", "url"),
    [
        # A host alone is the admin server on its port, not a web server on 80.
        ("127.0.0.1", "http://127.0.0.1:8161"),
        ("http://broker.example", "http://broker.example:8161"),
        ("http://admin:pw@broker.example/console/", "http://admin:pw@broker.example:8161"),
        ("[::1]", "http://[::1]:8161"),
        # A port given is kept; so is https's own default.
        ("127.0.0.1:9000", "http://127.0.0.1:9000"),
        ("http://[::1]:9000/api/v1", "http://[::1]:9000"),
        ("https://broker.example", "https://broker.example"),
    ],
)
def test_a_url_without_a_port_means_the_admin_servers(given: str, url: str) -> None:
    assert AdminClient(given).url == url
