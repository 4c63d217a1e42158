"""Lambda's Runtime API (2018-06-01) served to one execution environment.

Each environment gets its own endpoint (``AWS_LAMBDA_RUNTIME_API=127.0.0.1:PORT``), so the
runtime client sees exactly the standard API:

- ``GET  /2018-06-01/runtime/invocation/next`` blocks until an invocation is assigned;
- ``POST /2018-06-01/runtime/invocation/{id}/response`` and ``.../{id}/error``;
- ``POST /2018-06-01/runtime/init/error``.

The server is an asyncio :class:`~asyncio.Protocol` over ``httptools`` (llhttp, the parser
uvicorn uses): one keep-alive connection from one runtime client carries two exchanges per
invocation, and a general web framework spent most of the emulator's per-invocation CPU on
them. ``TCP_NODELAY`` is set on every connection: without it each round trip waits for a
delayed ACK (~40 ms).
"""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Protocol, cast
from urllib.parse import unquote

import httptools

PREFIX = b"/2018-06-01/runtime"
NEXT = PREFIX + b"/invocation/next"
INIT_ERROR = PREFIX + b"/init/error"
INVOCATION = PREFIX + b"/invocation/"
MAX_RESPONSE_BYTES = 6_291_556  # Lambda's limit for a synchronous response
# Bodies up to this size are read so that an oversized response gets Lambda's error, not a
# connection reset.
READ_LIMIT_BYTES = 64 * 1024 * 1024
_REASONS = {200: b"OK", 202: b"Accepted", 400: b"Bad Request", 404: b"Not Found",
            405: b"Method Not Allowed", 413: b"Request Entity Too Large"}
_ACCEPTED = b'{"status": "OK"}'


class Delivery(Protocol):
    """What ``/next`` hands to the runtime."""

    request_id: str
    payload: bytes
    deadline_ms: int
    invoked_arn: str
    trace_id: str
    client_context: str | None


class RuntimeSink(Protocol):
    """The environment behind one Runtime API endpoint."""

    async def next_invocation(self) -> Delivery: ...

    def complete(self, request_id: str, body: bytes, error_type: str | None) -> str | None:
        """Record the runtime's result; returns an error message if ``request_id`` is wrong."""

    def init_failed(self, body: bytes, error_type: str | None) -> None: ...


def _response(status: int, body: bytes, headers: list[tuple[str, str]] | None = None,
              keep_alive: bool = True) -> bytes:
    lines = [b"HTTP/1.1 %d %s" % (status, _REASONS[status]),
             b"Content-Type: application/json", b"Content-Length: %d" % len(body)]
    lines += [f"{name}: {value}".encode("latin-1") for name, value in headers or ()]
    if not keep_alive:
        lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def _error(status: int, error_type: str, message: str) -> tuple[int, bytes]:
    return status, json.dumps({"errorType": error_type, "errorMessage": message}).encode()


class _Connection(asyncio.Protocol):
    """One runtime client connection; requests are answered one at a time, in order."""

    def __init__(self, sink: RuntimeSink, connections: set[_Connection]) -> None:
        self._sink = sink
        self._connections = connections
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._url = b""
        self._error_type: str | None = None
        self._body: list[bytes] = []
        self._size = 0
        self._waiting: asyncio.Task[None] | None = None  # a /next long poll
        self._backlog = b""  # bytes that arrived during a long poll (a pipelined request)

    # -- asyncio.Protocol ----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self._connections.add(self)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc: Exception | None) -> None:
        self._connections.discard(self)
        self._transport = None
        if self._waiting is not None:  # the runtime went away: it takes no invocation
            self._waiting.cancel()

    def data_received(self, data: bytes) -> None:
        if self._waiting is not None:
            self._backlog += data
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError:
            self._send(*_error(400, "InvalidRequest", "malformed HTTP request"), close=True)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    # -- httptools callbacks -------------------------------------------------------------
    def on_message_begin(self) -> None:
        self._url, self._error_type, self._body, self._size = b"", None, [], 0

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"lambda-runtime-function-error-type":
            self._error_type = value.decode("latin-1")
        elif name == b"expect" and value.lower() == b"100-continue" and self._transport:
            self._transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, body: bytes) -> None:
        self._size += len(body)
        if self._size <= READ_LIMIT_BYTES:
            self._body.append(body)

    def on_message_complete(self) -> None:
        path = self._url.partition(b"?")[0]
        method = self._parser.get_method()
        if self._size > READ_LIMIT_BYTES:
            self._send(*_error(413, "RequestEntityTooLarge", "request body too large"),
                       close=True)
        elif path == NEXT:
            if method != b"GET":
                self._send(*_error(405, "MethodNotAllowed", "use GET"))
            else:
                self._waiting = asyncio.ensure_future(self._next())
        elif method != b"POST" and (path == INIT_ERROR or path.startswith(INVOCATION)):
            self._send(*_error(405, "MethodNotAllowed", "use POST"))
        elif path == INIT_ERROR:
            self._sink.init_failed(b"".join(self._body), self._error_type)
            self._send(202, _ACCEPTED)
        elif path.startswith(INVOCATION) and path.endswith((b"/response", b"/error")):
            request_id, _, kind = path[len(INVOCATION):].rpartition(b"/")
            error_type = None if kind == b"response" else self._error_type or "Unhandled"
            self._send(*self._result(unquote(request_id.decode("latin-1")), error_type))
        else:
            self._send(*_error(404, "NotFound", "no such Runtime API endpoint"))

    # -- endpoints -----------------------------------------------------------------------
    async def _next(self) -> None:
        try:
            delivery = await self._sink.next_invocation()
        finally:
            self._waiting = None
        headers = [
            ("Lambda-Runtime-Aws-Request-Id", delivery.request_id),
            ("Lambda-Runtime-Deadline-Ms", str(delivery.deadline_ms)),
            ("Lambda-Runtime-Invoked-Function-Arn", delivery.invoked_arn),
            ("Lambda-Runtime-Trace-Id", delivery.trace_id),
        ]
        if delivery.client_context:
            headers.append(("Lambda-Runtime-Client-Context", delivery.client_context))
        self._send(200, delivery.payload, headers)
        if self._backlog:
            backlog, self._backlog = self._backlog, b""
            self.data_received(backlog)

    def _result(self, request_id: str, error_type: str | None) -> tuple[int, bytes]:
        body = b"".join(self._body)
        if error_type is None and len(body) > MAX_RESPONSE_BYTES:
            message = (f"Response payload size ({len(body)} bytes) exceeded maximum allowed "
                       f"payload size ({MAX_RESPONSE_BYTES} bytes).")
            payload = json.dumps({"errorMessage": message,
                                  "errorType": "Function.ResponseSizeTooLarge"}).encode()
            self._sink.complete(request_id, payload, "Function.ResponseSizeTooLarge")
            return _error(413, "RequestEntityTooLarge", message)
        problem = self._sink.complete(request_id, body, error_type)
        if problem:
            return _error(400, "InvalidRequestID", problem)
        return 202, _ACCEPTED

    def _send(self, status: int, body: bytes, headers: list[tuple[str, str]] | None = None,
              close: bool = False) -> None:
        if self._transport is None:
            return
        keep_alive = not close and self._parser.should_keep_alive()
        self._transport.write(_response(status, body, headers, keep_alive))
        if not keep_alive:
            self._transport.close()


class RuntimeApiServer:
    """The Runtime API of one environment, listening on ``127.0.0.1`` (any free port)."""

    def __init__(self, sink: RuntimeSink) -> None:
        self._sink = sink
        self._connections: set[_Connection] = set()
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Connection(self._sink, self._connections), host, port)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def close(self) -> None:
        """Stop listening and drop every connection (a pending ``/next`` is cancelled)."""
        if self._server is None:
            return
        self._server.close()
        for connection in list(self._connections):
            connection.close()
        await self._server.wait_closed()
        self._server = None
