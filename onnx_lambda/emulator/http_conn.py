"""One client connection of :mod:`.http11`: parsing (httptools), limits, backpressure, order.

Everything a hostile client could use to hold the server is bounded here, before it is
buffered (the numbers are the server's :class:`~.limits.ServerLimits`):

- the head (request line + headers) is counted as it arrives, slice by slice, and refused
  (431) as soon as it passes ``max_head``: httptools joins a header's pieces by ``+=``, so an
  unbounded header costs quadratic time on the event loop that serves everyone;
- a declared ``Content-Length`` over ``max_body`` is refused (413) on the headers, a chunked
  body as soon as it passes it; bodies held by all connections together are capped
  (``max_buffered``, 503);
- at most ``max_pipelined`` requests are parsed ahead of the one being answered; then
  reading pauses (the rest waits in the socket), as it does while the client does not read
  our responses (``pause_writing``);
- head, body and idle timeouts (``deadline``, checked by the server's sweep);
- a malformed request is answered 400 after the valid requests before it; ``CONNECT`` and
  upgrades that carry a body get 501; a body-less ``Upgrade`` (websocket, h2c) is served as
  a plain HTTP/1.1 request (RFC 9110 §7.8: a server may ignore ``Upgrade``).

A refusal is answered in turn, then the connection is half-closed and lingers briefly
(input discarded) so that a client still sending reads the answer instead of a reset.
"""

from __future__ import annotations

import asyncio
import collections
import socket
from collections.abc import Awaitable
from typing import TYPE_CHECKING, cast

import httptools

from onnx_lambda.emulator.http_stream import BodyStream
from onnx_lambda.emulator.http_types import Request, Response, encode_response

if TYPE_CHECKING:
    from onnx_lambda.emulator.http11 import HttpServer

FEED_SLICE = 16 * 1024  # head bytes are counted (and the pipeline checked) per slice
LINGER_S = 2.0  # after a refusal: how long input is discarded before the socket closes


class _Refused(Exception):
    """Raised in a parser callback to stop parsing (the refusal is already queued)."""


class Connection(asyncio.Protocol):
    def __init__(self, server: HttpServer) -> None:
        self._server = server
        self._limits = server.limits
        self._loop = asyncio.get_running_loop()  # protocols are made on the server's loop
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._peer = ""
        # answers in order: a parsed request, or a refusal (answered, then the connection ends)
        self._ready: collections.deque[tuple[Request | Response, bool]] = collections.deque()
        self._task: asyncio.Task[None] | None = None  # the handler being awaited
        self._url = b""
        self._path, self._query = "", b""  # of _url, split and decoded once its head is in
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._size = 0  # body bytes of the request being read
        self._held = 0  # body bytes this connection counts in server.buffered
        self._in_message = False  # between message begin and complete
        self._head_open = False
        self._head_bytes = 0
        self._began = False  # a message began in the slice being fed
        self._refused = False
        self._held_input: memoryview | None = None  # unparsed input while reading is paused
        self._reading_paused = False
        self._writing_paused = False
        self._writable: asyncio.Future[None] | None = None  # resolved by resume_writing
        self._streaming: BodyStream | None = None  # the request body being streamed
        self._trailers: list[tuple[bytes, bytes]] = []
        self._sending_stream = False  # the task answering is writing a streamed response
        self.deadline = 0.0  # loop time at which the connection expires (0: never)
        self.last_active = self._loop.time()

    # -- asyncio.Protocol ----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer = transport.get_extra_info("peername")
        self._peer = peer[0] if peer else "127.0.0.1"
        if not self._server.admit(self):  # every connection busy: not even lingering
            self._refused = True
            self._transport.write(encode_response(self._server.refusal(503, ""), False))
            self._transport.close()
            return
        self._set_deadline(self._limits.idle_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self._server.connections.discard(self)
        self._transport = None
        self._ready.clear()
        self._release(self._held)
        if self._streaming is not None:
            self._streaming.fail()
            self._streaming = None
        if self._task is not None and (self._server.cancel_on_disconnect
                                       or self._sending_stream):
            self._task.cancel()  # nobody is left to answer (or to read the stream)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # lingering after a refusal: input is discarded
        self.last_active = self._loop.time()
        self._feed(memoryview(data))

    def pause_writing(self) -> None:
        self._writing_paused = True  # the client does not read: stop answering and reading
        self._pause_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._answer_next()

    def close(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    @property
    def busy(self) -> bool:
        """A request is being answered (the connection is not idle)."""
        return self._task is not None or bool(self._ready)

    def expire(self) -> None:
        """The deadline passed: mid-request 408, else a plain close."""
        self.deadline = 0.0
        if self._refused or not self._in_message:
            self.close()
        else:
            self._refuse(408)
            self._answer_next()

    # -- parsing -------------------------------------------------------------------------
    def _feed(self, data: memoryview) -> None:
        limits, pos, end = self._limits, 0, len(data)
        while pos < end and not self._refused:
            if len(self._ready) >= limits.max_pipelined:
                self._held_input = data[pos:]
                self._pause_reading()
                break
            piece = data[pos:pos + FEED_SLICE]
            self._began = False
            try:
                self._parser.feed_data(piece)
                pos += len(piece)
            except httptools.HttpParserUpgrade as upgrade:
                pos += upgrade.args[0]
                self._upgraded()
                continue
            except httptools.HttpParserError:
                if not self._refused:
                    self._refuse(400)
                break
            if self._head_open and not self._began:
                self._head_bytes += len(piece)  # counted from the slice after the one it began in
                if self._head_bytes > limits.max_head:
                    self._refuse(431)
        self._answer_next()

    def _upgraded(self) -> None:
        """The message just parsed asked for another protocol."""
        request = self._ready[-1][0] if self._ready else None
        if isinstance(request, Request) and (request.method == "CONNECT" or any(
                name.lower() == b"transfer-encoding"
                or (name.lower() == b"content-length" and value.strip() != b"0")
                for name, value in request.raw_headers)):
            self._ready.pop()  # its body (or tunnel) cannot be read as HTTP/1.1
            self._refuse(501)

    def _refuse(self, status: int, path: str = "") -> None:
        self._refused = True
        self._ready.append((self._server.refusal(status, path), False))

    # -- httptools callbacks -------------------------------------------------------------
    def on_message_begin(self) -> None:
        self._url, self._headers, self._body, self._size = b"", [], [], 0
        self._in_message = self._head_open = self._began = True
        self._head_bytes = 0
        self._set_deadline(self._limits.head_timeout_s)

    def on_url(self, url: bytes) -> None:
        self._url += url  # may arrive in pieces (bounded by the head count)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._streaming is not None:  # after the head of a streamed body: a trailer
            self._trailers.append((name, value))
        else:
            self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._head_open = False
        limits = self._limits
        size, declared, expect = len(self._url), 0, False
        for name, value in self._headers:
            size += len(name) + len(value)
            if len(name) == 14 and name.lower() == b"content-length":
                declared = int(value) if value.isdigit() else 0  # llhttp checked the syntax
            elif len(name) == 6 and name.lower() == b"expect":
                expect = value.lower() == b"100-continue"
        raw_path, _, self._query = self._url.partition(b"?")
        self._path = raw_path.decode("latin-1")
        if size > limits.max_head:
            self._refuse(431, self._path)
            raise _Refused
        if declared > limits.max_body:
            self._refuse(413, self._path)
            raise _Refused
        if expect and self._transport is not None:
            self._transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self._set_deadline(limits.body_timeout_s)
        streams = self._server.streams_body
        if streams is not None and streams(self._path, self._headers):
            self._streaming = BodyStream(self.close, self._pause_reading, self._resume_soon)
            self._trailers = []
            self._ready.append((self._request(b"", self._streaming),
                                self._parser.should_keep_alive()))
            self.deadline = 0.0  # a stream may pause for as long as its producer thinks

    def on_body(self, body: bytes) -> None:
        if self._streaming is not None:
            self._streaming.feed(body)
            return
        self._size += len(body)
        if self._size > self._limits.max_body:
            self._refuse(413, self._path)
            raise _Refused
        if not self._server.hold(len(body)):
            self._refuse(503)
            raise _Refused
        self._held += len(body)
        self._body.append(body)
        self._set_deadline(self._limits.body_timeout_s)  # the body must keep coming

    def on_message_complete(self) -> None:
        self.deadline, self._in_message = 0.0, False
        if self._streaming is not None:  # its request was handed over with the head
            self._streaming.finish({name.decode("latin-1").lower(): value.decode("latin-1")
                                    for name, value in self._trailers})
            self._streaming = None
            return
        body = self._body[0] if len(self._body) == 1 else b"".join(self._body)
        self._ready.append((self._request(body, None), self._parser.should_keep_alive()))
        self._size = 0

    def _request(self, body: bytes, stream: BodyStream | None) -> Request:
        return Request(
            method=self._parser.get_method().decode("latin-1"), raw_path=self._path,
            raw_query=self._query.decode("latin-1"), raw_headers=self._headers, body=body,
            version=self._parser.get_http_version(), peer=self._peer, stream=stream)

    # -- answering -----------------------------------------------------------------------
    def _answer_next(self) -> None:
        while (self._ready and self._task is None and not self._writing_paused
               and self._transport is not None and not self._transport.is_closing()):
            request, keep_alive = self._ready.popleft()
            if isinstance(request, Response):  # a refusal: the last answer
                self._write(request, keep_alive=False)
                return
            self._release(len(request.body))
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
        if self._task is None and not self._ready and self._transport is not None:
            if not self._refused and not self._in_message:
                self._set_deadline(self._limits.idle_timeout_s)
            if self._reading_paused and not self._writing_paused:
                self._loop.call_soon(self._resume_reading)  # not recursively: a long pipeline

    def _resume_soon(self) -> None:
        self._loop.call_soon(self._resume_reading)

    def _resume_reading(self) -> None:
        if self._transport is None or not self._reading_paused or self._writing_paused:
            return
        self._reading_paused = False
        held, self._held_input = self._held_input, None
        self._transport.resume_reading()
        if held is not None:
            self._feed(held)

    def _pause_reading(self) -> None:
        if not self._reading_paused and self._transport is not None:
            self._reading_paused = True
            self._transport.pause_reading()

    async def _await(self, result: Awaitable[Response], keep_alive: bool) -> None:
        try:
            response = await result
        except Exception as exc:
            response = self._failed(exc)
        if self._task is asyncio.current_task():  # else answered early: dropped
            if response.stream is not None:
                await self._send_stream(response, keep_alive)
            self._task = None
            if response.stream is None:
                self._write(response, keep_alive)
            self._answer_next()

    async def _send_stream(self, response: Response, keep_alive: bool) -> None:
        """Send a streamed response: the head, then each piece as one chunk as it comes.
        Cancelled when the client goes away; the iterator is closed either way."""
        stream, transport = response.stream, self._transport
        assert stream is not None
        complete = False
        self._sending_stream = True
        try:
            if transport is not None:
                transport.write(encode_response(response, keep_alive))
                async for data in stream:
                    if data:
                        transport.write(b"%x\r\n%b\r\n" % (len(data), data))
                    if self._writing_paused:  # the client reads slower than the producer
                        self._writable = self._loop.create_future()
                        await self._writable
                complete = True
        except asyncio.CancelledError:
            pass  # the client went away (connection_lost)
        except Exception:  # the producer failed: a cut-off body, never a complete one
            pass
        finally:
            self._sending_stream = False
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()
        if self._transport is None or transport is None:
            return
        if not complete:
            transport.abort()
            return
        transport.write(b"0\r\n\r\n")
        if not keep_alive:
            self._end_output(transport)

    def _answer_early(self, task: asyncio.Task[None], response: Response,
                      keep_alive: bool) -> None:
        if self._task is task:
            self._task = None  # the handler runs on, detached
            self._write(response, keep_alive)
            self._answer_next()

    def _failed(self, exc: BaseException) -> Response:
        self._loop.call_exception_handler(
            {"message": "unhandled exception in an HTTP handler", "exception": exc})
        return self._server.refusal(500, "")

    def _write(self, response: Response, keep_alive: bool) -> None:
        transport = self._transport
        if transport is None:
            return
        try:
            data = encode_response(response, keep_alive)
        except ValueError as exc:  # e.g. a header value that cannot be sent
            data = encode_response(self._failed(exc), keep_alive)
        transport.write(data)
        if not keep_alive:
            self._end_output(transport)

    def _end_output(self, transport: asyncio.Transport) -> None:
        self._refused = True  # nothing more is read from this connection
        self._ready.clear()
        if transport.can_write_eof():
            transport.write_eof()  # the client reads the answer, then sees EOF
            self.deadline = self._loop.time() + LINGER_S
        else:
            transport.close()

    # -- bookkeeping ---------------------------------------------------------------------
    def _set_deadline(self, timeout_s: float | None) -> None:
        self.deadline = self._loop.time() + timeout_s if timeout_s else 0.0

    def _release(self, size: int) -> None:
        if size:
            size = min(size, self._held)
            self._held -= size
            self._server.buffered -= size
