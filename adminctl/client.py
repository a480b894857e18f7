"""A small client for stompd's admin API (``/api/v1``), standard library only.

Errors come out as ``AdminClientError`` with a one-line message: the broker's own JSON
error when it sent one, else what went wrong on the way (refused, timed out ...).
"""

from __future__ import annotations

import base64
import http.client
import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

API = "/api/v1"
#: The admin server's port when a URL names none (stompd's default, and ActiveMQ's console's).
ADMIN_PORT = 8161
#: What a STOMP listener answers first (an ERROR frame, to an HTTP request).
STOMP_COMMANDS = frozenset({"ERROR", "CONNECTED", "MESSAGE", "RECEIPT"})


class AdminClientError(Exception):
    """``status`` is the HTTP status (0: no answer); ``body`` the broker's JSON error, if any."""

    def __init__(self, message: str, status: int = 0, body: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


def destination_segment(name: str) -> str:
    """A destination as one path segment: ``/queue/a b`` -> ``%2Fqueue%2Fa%20b``."""
    return quote(name, safe="")


class AdminClient:
    def __init__(
        self, url: str, user: str | None = None, password: str | None = None, timeout: float = 30.0
    ) -> None:
        self.given = url
        url = url.strip()
        if url and "://" not in url:
            url = "http://" + url  # host:port, as curl takes it
        url = url.rstrip("/")
        # The API's or the console's address given for the server's: the server's it is.
        for suffix in (API, "/console"):
            url = url.removesuffix(suffix)
        parts = urlsplit(url)
        if parts.scheme == "http" and parts.hostname and not _has_port(parts.netloc):
            # A host alone is the admin server on its port (as ActiveMQ's console on
            # 8161), not a web server on 80.
            url = parts._replace(netloc=f"{parts.netloc}:{ADMIN_PORT}").geturl()
        self.url = url
        self.timeout = timeout
        self._headers = {"Accept": "application/json", "User-Agent": "stompd-admin"}
        if user is not None:
            token = base64.b64encode(f"{user}:{password or ''}".encode()).decode("ascii")
            self._headers["Authorization"] = f"Basic {token}"

    def health(self) -> tuple[int, dict[str, Any]]:
        """``/health`` (outside the API): its status (200 up, 503 failing) and its JSON."""
        try:
            return 200, self.request("GET", "/health", root=True)
        except AdminClientError as exc:
            if exc.status == 503 and exc.body is not None:
                return 503, exc.body
            raise

    def get(self, path: str, **query: Any) -> Any:
        return self.request("GET", path, query=query)

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return self.request("POST", path, body=body)

    def delete(self, path: str, **query: Any) -> Any:
        return self.request("DELETE", path, query=query)

    def request(
        self,
        method: str,
        path: str,
        *,
        body: dict[str, Any] | None = None,
        query: dict[str, Any] | None = None,
        root: bool = False,
    ) -> Any:
        if urlsplit(self.url).scheme not in ("http", "https") or not urlsplit(self.url).netloc:
            raise AdminClientError(
                f"{self.given!r} is not the admin server's URL: give http://HOST:PORT (such as "
                "http://127.0.0.1:8161)"
            )
        url = self.url + ("" if root else API) + path
        params = {k: v for k, v in (query or {}).items() if v is not None}
        if params:
            url += "?" + urlencode(params)
        data = None
        headers = dict(self._headers)
        if body is not None:
            data = _encode(body)
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return _json(response.read(), url)
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                payload = json.loads(raw)
                if root and exc.code == 503 and isinstance(payload, dict) and "status" in payload:
                    # /health failing: its answer, not an error's.
                    raise AdminClientError(str(payload["status"]), exc.code, payload)
                error = payload["error"]
                message = str(error["message"])
            except (ValueError, KeyError, TypeError):
                raise AdminClientError(f"{method} {url}: HTTP {exc.code} {exc.reason}", exc.code) from None
            raise AdminClientError(message, exc.code, payload) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, ConnectionRefusedError):
                why = "connection refused (is stompd running, with its admin server on?)"
            else:
                why = str(getattr(reason, "strerror", None) or reason)
            raise AdminClientError(f"cannot reach the broker at {self.url}: {why}") from None
        except TimeoutError:
            raise AdminClientError(f"no answer from {self.url} within {self.timeout:g} s") from None
        except http.client.HTTPException as exc:
            raise AdminClientError(_not_http(self.url, exc)) from None
        except (ConnectionError, OSError) as exc:
            raise AdminClientError(f"cannot talk to the broker at {self.url}: {exc}") from None


def _encode(body: dict[str, Any]) -> bytes:
    """``body`` as JSON in UTF-8: text as it is, not ``\\uXXXX`` (six bytes for one
    character), so that a message body's JSON is as small as it can be.  Text that is not
    Unicode (a lone surrogate, from an argument that was not UTF-8) goes escaped, for the
    broker to refuse by name."""
    try:
        return json.dumps(body, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return json.dumps(body).encode()


def _json(raw: bytes, url: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise AdminClientError(f"{url} did not answer with JSON (is it stompd's admin server?)") from None


def _not_http(url: str, exc: http.client.HTTPException) -> str:
    """What to say when ``url`` answered, but not in HTTP."""
    line = exc.args[0] if isinstance(exc, http.client.BadStatusLine) and exc.args else ""
    if str(line).strip() in STOMP_COMMANDS:
        return (
            f"{url} is a STOMP port, not stompd's admin server "
            "(that one listens on port 8161 unless --http-port says otherwise)"
        )
    if isinstance(exc, http.client.RemoteDisconnected):
        return f"{url} closed the connection without an answer (is it stompd's admin server?)"
    return f"{url} did not answer in HTTP (is it stompd's admin server?): {exc!r}"


def _has_port(netloc: str) -> bool:
    host = netloc.rpartition("@")[2]
    return ":" in host.rpartition("]")[2]
