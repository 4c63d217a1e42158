"""The emulator's HTTP/1.1 server: an asyncio :class:`~asyncio.Protocol` over ``httptools``.

``httptools`` wraps llhttp (Node.js's parser, the one uvicorn uses): it parses the request
line, headers and bodies (``Content-Length`` or chunked); this module only routes the
parsed request to a handler and writes the response. It serves every socket of the
emulator (HTTP front, Invoke API, Function URLs, each environment's Runtime API): a warm
invocation crosses three of them, and a general web framework spent most of the
emulator's per-invocation CPU there.

- A handler returns a :class:`Response`, or an awaitable of one (then it runs as a task,
  cancelled if the client disconnects first, e.g. a runtime's ``/next`` long poll, unless
  the server says otherwise). ``request.answer_early(response)`` answers before the handler
  returns (a deadline) and lets the connection go on; the handler's own response is dropped.
- Keep-alive as the client asks; requests on one connection are answered in order.
- ``Expect: 100-continue`` is honoured; bodies over ``max_body`` get a 413 and the
  connection is closed.
- ``TCP_NODELAY`` on every connection: without it each small response waits for the
  peer's delayed ACK (~40 ms per round trip).
"""

from __future__ import annotations

import asyncio
import collections
import json
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from typing import Any, cast
from urllib.parse import unquote

import httptools

_STATUS_LINES = {status.value: b"HTTP/1.1 %d %s\r\n" % (status.value, status.phrase.encode())
                 for status in HTTPStatus}
# set by this server: a handler passing on headers from elsewhere must drop these
OWN_HEADERS = frozenset({"content-length", "transfer-encoding", "connection", "date"})
_TEXT = [("Content-Type", "text/plain")]


@dataclass(slots=True)
class Request:
    method: str
    path: str  # percent-decoded, without the query
    raw_query: str
    raw_headers: list[tuple[bytes, bytes]]  # as sent (names keep their case)
    body: bytes
    version: str  # "1.1"
    peer: str  # the client's IP address
    # answer now, before the handler returns (its response is then dropped): a deadline
    answer_early: Callable[[Response], None] = lambda _response: None

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
    if status != 204:  # a 204 has no body, and so no length (RFC 9110)
        head.append(b"\r\nContent-Length: %d" % len(body))
    for name, value in response.headers:
        head.append(f"\r\n{name}: {value}".encode("latin-1"))
    head.append(b"\r\n\r\n" if keep_alive else b"\r\nConnection: close\r\n\r\n")
    head.append(body)
    return b"".join(head)


class _Connection(asyncio.Protocol):
    """One client connection."""

    def __init__(self, server: HttpServer) -> None:
        self._server = server
        self._loop = asyncio.get_running_loop()  # protocols are made on the server's loop
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._peer = ""
        # parsed requests waiting for their turn (None: body over the limit, answered 413)
        self._ready: collections.deque[tuple[Request | None, bool]] = collections.deque()
        self._task: asyncio.Task[None] | None = None  # the handler being awaited
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._size = 0

    # -- asyncio.Protocol ----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self._server.connections.add(self)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer = transport.get_extra_info("peername")
        self._peer = peer[0] if peer else "127.0.0.1"

    def connection_lost(self, exc: Exception | None) -> None:
        self._server.connections.discard(self)
        self._transport = None
        self._ready.clear()
        if self._task is not None and self._server.cancel_on_disconnect:
            self._task.cancel()  # nobody is left to answer

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError:
            self._ready.clear()
            if self._task is None:
                self._write(Response(400, b"malformed HTTP request", _TEXT), keep_alive=False)
            elif self._transport is not None:
                self._transport.close()
            return
        self._answer_next()

    def close(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    # -- httptools callbacks -------------------------------------------------------------
    def on_message_begin(self) -> None:
        self._url, self._headers, self._body, self._size = b"", [], [], 0

    def on_url(self, url: bytes) -> None:
        self._url += url  # may arrive in pieces

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))
        if (len(name) == 6 and name.lower() == b"expect"  # length first: the common case
                and value.lower() == b"100-continue" and self._transport is not None):
            self._transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, body: bytes) -> None:
        self._size += len(body)
        if self._size <= self._server.max_body:
            self._body.append(body)

    def on_message_complete(self) -> None:
        keep_alive = self._parser.should_keep_alive()
        if self._size > self._server.max_body:
            self._ready.append((None, keep_alive))
            return
        raw_path, _, query = self._url.partition(b"?")
        path = raw_path.decode("latin-1")
        self._ready.append((Request(
            method=self._parser.get_method().decode("latin-1"),
            path=unquote(path) if "%" in path else path,
            raw_query=query.decode("latin-1"), raw_headers=self._headers,
            body=b"".join(self._body), version=self._parser.get_http_version(),
            peer=self._peer), keep_alive))

    # -- answering -----------------------------------------------------------------------
    def _answer_next(self) -> None:
        while self._ready and self._task is None and self._transport is not None:
            request, keep_alive = self._ready.popleft()
            if request is None:
                self._write(Response(413, b"request body too large", _TEXT), keep_alive=False)
                return
            try:
                result = self._server.handler(request)
            except Exception as exc:  # a bug in a handler: answer, keep serving
                result = self._failed(exc)
            if isinstance(result, Response):
                self._write(result, keep_alive)
            else:
                self._task = self._loop.create_task(self._await(result, keep_alive))
                request.answer_early = lambda response, task=self._task, keep=keep_alive: (
                    self._answer_early(task, response, keep))

    async def _await(self, result: Awaitable[Response], keep_alive: bool) -> None:
        try:
            response = await result
        except Exception as exc:
            response = self._failed(exc)
        if self._task is asyncio.current_task():  # else answered early: dropped
            self._task = None
            self._write(response, keep_alive)
            self._answer_next()

    def _answer_early(self, task: asyncio.Task[None], response: Response,
                      keep_alive: bool) -> None:
        if self._task is task:
            self._task = None  # the handler runs on, detached
            self._write(response, keep_alive)
            self._answer_next()

    def _failed(self, exc: BaseException) -> Response:
        self._loop.call_exception_handler(
            {"message": "unhandled exception in an HTTP handler", "exception": exc})
        return Response(500, b"internal error", _TEXT)

    def _write(self, response: Response, keep_alive: bool) -> None:
        if self._transport is None:
            return
        self._transport.write(encode_response(response, keep_alive))
        if not keep_alive:
            self._transport.close()


class HttpServer:
    """Serves ``handler`` on one TCP port."""

    def __init__(self, handler: Handler, *, max_body: int,
                 cancel_on_disconnect: bool = True) -> None:
        self.handler = handler
        self.max_body = max_body
        self.cancel_on_disconnect = cancel_on_disconnect
        self.connections: set[_Connection] = set()
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self, host: str, port: int) -> int:
        """Listen on ``host:port`` (0: any free port); returns the port."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Connection(self), host, port)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def close(self) -> None:
        """Stop listening and drop every connection (as a client disconnect would)."""
        if self._server is None:
            return
        self._server.close()
        for connection in list(self.connections):
            connection.close()
        await self._server.wait_closed()
        self._server = None
