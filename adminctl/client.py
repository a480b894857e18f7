"""A small client for stompd's admin API (``/api/v1``), standard library only.

Errors come out as ``AdminClientError`` with a one-line message: the broker's own JSON
error when it sent one, else what went wrong on the way (refused, timed out ...).
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote, urlencode

API = "/api/v1"


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
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._headers = {"Accept": "application/json", "User-Agent": "stompd-admin"}
        if user is not None:
            token = base64.b64encode(f"{user}:{password or ''}".encode()).decode("ascii")
            self._headers["Authorization"] = f"Basic {token}"

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
    ) -> Any:
        url = self.url + API + path
        params = {k: v for k, v in (query or {}).items() if v is not None}
        if params:
            url += "?" + urlencode(params)
        data = None
        headers = dict(self._headers)
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return _json(response.read(), url)
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                payload = json.loads(raw)
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
        except (ConnectionError, OSError) as exc:
            raise AdminClientError(f"cannot talk to the broker at {self.url}: {exc}") from None


def _json(raw: bytes, url: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise AdminClientError(f"{url} did not answer with JSON (is it stompd's admin server?)") from None
