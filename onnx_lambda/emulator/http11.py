"""The emulator's HTTP/1.1 server: an asyncio :class:`~asyncio.Protocol` over ``httptools``.

``httptools`` wraps llhttp (Node.js's parser, the one uvicorn uses): it parses the request
line, headers and bodies (``Content-Length`` or chunked); :mod:`.http_conn` bounds what a
connection may hold and routes each parsed request to a handler. It serves every socket of
the emulator (HTTP front, Invoke API, Function URLs, each environment's Runtime API): a warm
invocation crosses three of them, and a general web framework spent most of the emulator's
per-invocation CPU there.

- A handler returns a :class:`Response`, or an awaitable of one (then it runs as a task,
  cancelled if the client disconnects first, e.g. a runtime's ``/next`` long poll, unless
  the server says otherwise). ``request.answer_early(response)`` answers before the handler
  returns (a deadline) and lets the connection go on; the handler's own response is dropped.
- Keep-alive as the client asks; requests on one connection are answered in order.
- Limits (:class:`~.limits.ServerLimits`): head and body sizes, bytes buffered by all
  connections, open connections (the longest-idle one is closed to admit a new client),
  pipelining depth, head / body / idle timeouts. Refusals are answered by ``refusal``
  (status, path) -> :class:`Response`: each server says whose shape (API Gateway's,
  the Invoke API's, the Runtime API's).
- ``TCP_NODELAY`` on every connection: without it each small response waits for the
  peer's delayed ACK (~40 ms per round trip).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Callable

from onnx_lambda.emulator.http_conn import Connection
from onnx_lambda.emulator.http_types import (
    OWN_HEADERS,
    Handler,
    Request,
    Response,
    encode_response,
    json_response,
)
from onnx_lambda.emulator.limits import ServerLimits

__all__ = ["OWN_HEADERS", "Handler", "HttpServer", "Request", "Response", "encode_response",
           "json_response"]


class HttpServer:
    """Serves ``handler`` on one TCP port."""

    def __init__(self, handler: Handler, *, refusal: Callable[[int, str], Response],
                 limits: ServerLimits | None = None,
                 cancel_on_disconnect: bool = True,
                 streams_body: Callable[[str, list[tuple[bytes, bytes]]], bool] | None = None,
                 ) -> None:
        self.handler = handler
        # (path, raw headers) -> hand the request over with its head, its body as a stream
        self.streams_body = streams_body
        self.limits = limits or ServerLimits()
        self.refusal = refusal
        self.cancel_on_disconnect = cancel_on_disconnect
        self.connections: set[Connection] = set()
        self.buffered = 0  # request body bytes held by all connections
        self._server: asyncio.Server | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self.port = 0

    async def start(self, host: str, port: int, tls: ssl.SSLContext | None = None) -> int:
        """Listen on ``host:port`` (0: any free port), over TLS with ``tls``; returns the port."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: Connection(self), host, port, ssl=tls)
        self.port = int(self._server.sockets[0].getsockname()[1])
        self._sweeper = loop.create_task(self._sweep())
        return self.port

    async def close(self) -> None:
        """Stop listening and drop every connection (as a client disconnect would)."""
        server, self._server = self._server, None  # (two closes may overlap: one does it)
        if server is None:
            return
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        server.close()
        for connection in list(self.connections):
            connection.close()
        await server.wait_closed()

    # -- called by connections -----------------------------------------------------------
    def admit(self, connection: Connection) -> bool:
        """Count a new connection; at the limit the longest-idle one makes room (False:
        every connection is busy, refuse this one)."""
        if len(self.connections) >= self.limits.max_connections:
            idle = [c for c in self.connections if not c.busy]
            if not idle:
                return False
            victim = min(idle, key=lambda c: c.last_active)
            self.connections.discard(victim)
            victim.close()
        self.connections.add(connection)
        return True

    def hold(self, size: int) -> bool:
        """Reserve ``size`` body bytes; False when the server already holds its maximum."""
        if self.buffered + size > self.limits.max_buffered:
            return False
        self.buffered += size
        return True

    async def _sweep(self) -> None:
        """Expire connections past their deadline (one timer for all of them)."""
        limits = self.limits
        timeouts = [t for t in (limits.idle_timeout_s, limits.head_timeout_s,
                                limits.body_timeout_s) if t]
        tick = max(0.05, min([1.0, *(t / 4 for t in timeouts)]))
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(tick)
            now = loop.time()
            for connection in [c for c in self.connections if 0 < c.deadline < now]:
                connection.expire()
