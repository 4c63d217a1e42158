"""The request and response records of :mod:`.http11`, and a response's bytes."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

if TYPE_CHECKING:
    from onnx_lambda.emulator.http_stream import BodyStream

_STATUS_LINES = {status.value: b"HTTP/1.1 %d %s\r\n" % (status.value, status.phrase.encode())
                 for status in HTTPStatus}
# set by this server: a handler passing on headers from elsewhere must drop these
OWN_HEADERS = frozenset({"content-length", "transfer-encoding", "connection", "date"})


@dataclass(slots=True)
class Request:
    method: str
    raw_path: str  # as sent (percent-encoded), without the query
    raw_query: str
    raw_headers: list[tuple[bytes, bytes]]  # as sent (names keep their case)
    body: bytes
    version: str  # "1.1"
    peer: str  # the client's IP address
    # answer now, before the handler returns (its response is then dropped): a deadline
    answer_early: Callable[[Response], None] = lambda _response: None
    # the body as it arrives (``body`` is then empty): see :mod:`.http_stream`
    stream: BodyStream | None = None

    @property
    def path(self) -> str:
        """The percent-decoded path (``%2F`` becomes ``/``: route on ``raw_path``)."""
        return unquote(self.raw_path) if "%" in self.raw_path else self.raw_path

    @property
    def headers(self) -> list[tuple[str, str]]:
        return [(name.decode("latin-1"), value.decode("latin-1"))
                for name, value in self.raw_headers]

    def header(self, name: str, default: str | None = None) -> str | None:
        """The first value of header ``name`` (case-insensitive)."""
        wanted = name.lower().encode("latin-1")
        for key, value in self.raw_headers:
            if key.lower() == wanted:
                return value.decode("latin-1")
        return default


@dataclass(slots=True)
class Response:
    status: int = 200
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    # the body as it is produced, sent chunked (``body`` is then ignored): see :mod:`.http_stream`
    stream: AsyncIterator[bytes] | None = None


def json_response(document: Any, status: int = 200,
                  headers: list[tuple[str, str]] | None = None) -> Response:
    return Response(status, json.dumps(document).encode(),
                    [("Content-Type", "application/json"), *(headers or ())])


Handler = Callable[[Request], "Response | Awaitable[Response]"]


class _Clock:
    """The ``Date`` header, formatted once per second."""

    def __init__(self) -> None:
        self._second = 0
        self._value = b""

    def date(self) -> bytes:
        now = int(time.time())
        if now != self._second:
            self._second, self._value = now, formatdate(now, usegmt=True).encode()
        return self._value


_CLOCK = _Clock()


def encode_response(response: Response, keep_alive: bool) -> bytes:
    """The response as bytes; the server sets ``Date``, ``Content-Length`` and
    ``Connection``, so a handler's headers must not carry them (see ``OWN_HEADERS``)."""
    status, body = response.status, response.body
    head = [_STATUS_LINES.get(status) or b"HTTP/1.1 %d \r\n" % status, b"Date: ", _CLOCK.date()]
    if response.stream is not None:
        head.append(b"\r\nTransfer-Encoding: chunked")
        body = b""
    elif status != 204:  # a 204 has no body, and so no length (RFC 9110)
        head.append(b"\r\nContent-Length: %d" % len(body))
    for name, value in response.headers:
        line = f"\r\n{name}: {value}"
        if line.find("\r", 2) >= 0 or line.find("\n", 2) >= 0:  # header injection
            raise ValueError(f"CR or LF in response header {name!r}")
        head.append(line.encode("latin-1"))  # UnicodeEncodeError is a ValueError
    head.append(b"\r\n\r\n" if keep_alive else b"\r\nConnection: close\r\n\r\n")
    head.append(body)
    return b"".join(head)
