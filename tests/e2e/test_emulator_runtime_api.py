"""The Runtime API server on its own (real sockets, a fake environment behind it): what the
runtime client relies on, at the HTTP level."""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from onnx_lambda.emulator.http11 import HttpServer
from onnx_lambda.emulator.http_stream import BodyStream
from onnx_lambda.emulator.runtime_api import (
    MAX_RESPONSE_BYTES,
    runtime_api_server,
    stream_outcome,
)
from onnx_lambda.emulator.server import new_event_loop

NEXT = "/2018-06-01/runtime/invocation/next"


@dataclass
class Delivery:
    request_id: str = "req-1"
    payload: bytes = b'{"x": 1}'
    deadline_ms: int = 1_700_000_000_000
    invoked_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:f"
    trace_id: str = "Root=1-abc;Parent=def;Sampled=0"
    client_context: str | None = '{"custom": {}}'


@dataclass
class FakeEnvironment:
    """A RuntimeSink that hands out queued deliveries and records what the runtime sent."""

    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[Delivery] = field(default_factory=asyncio.Queue)
    results: list[tuple[str, bytes, str | None]] = field(default_factory=list)
    init_errors: list[tuple[bytes, str | None]] = field(default_factory=list)
    waiting: threading.Event = field(default_factory=threading.Event)
    cancelled: threading.Event = field(default_factory=threading.Event)
    streams: list[tuple[str, BodyStream]] = field(default_factory=list)
    streaming: threading.Event = field(default_factory=threading.Event)

    async def next_invocation(self) -> Delivery:
        self.waiting.set()
        try:
            return await self.queue.get()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise

    def complete(self, request_id: str, body: bytes, error_type: str | None) -> str | None:
        if request_id != "req-1":
            return f"Invalid request ID: {request_id}"
        self.results.append((request_id, body, error_type))
        return None

    def init_failed(self, body: bytes, error_type: str | None) -> None:
        self.init_errors.append((body, error_type))

    def stream(self, request_id: str, content_type: str, body: BodyStream) -> str | None:
        if request_id != "req-1":
            return f"Invalid request ID: {request_id}"
        self.streams.append((content_type, body))
        self.streaming.set()
        return None

    def deliver(self, delivery: Delivery) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, delivery)


@dataclass
class Running:
    sink: FakeEnvironment
    server: HttpServer
    loop: asyncio.AbstractEventLoop
    connections: list[http.client.HTTPConnection] = field(default_factory=list)

    def connect(self) -> http.client.HTTPConnection:
        """A client connection, closed at the test's end (``api``) if the test leaves it open."""
        connection = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        self.connections.append(connection)
        return connection

    def raw(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.server.port), timeout=10)


@pytest.fixture
def api() -> Iterator[Running]:
    loop = new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def start() -> tuple[FakeEnvironment, HttpServer]:
        sink = FakeEnvironment(loop)
        server = runtime_api_server(sink)
        await server.start("127.0.0.1", 0)
        return sink, server

    sink, server = asyncio.run_coroutine_threadsafe(start(), loop).result()
    running = Running(sink, server, loop)
    try:
        yield running
    finally:
        for connection in running.connections:
            connection.close()
        asyncio.run_coroutine_threadsafe(server.close(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def test_next_then_response_on_one_keep_alive_connection(api: Running) -> None:
    connection = api.connect()
    connection.request("GET", NEXT)
    api.sink.deliver(Delivery())
    response = connection.getresponse()
    assert response.status == 200 and response.read() == b'{"x": 1}'
    assert response.getheader("Content-Type") == "application/json"
    assert response.getheader("Lambda-Runtime-Aws-Request-Id") == "req-1"
    assert response.getheader("Lambda-Runtime-Deadline-Ms") == "1700000000000"
    assert response.getheader("Lambda-Runtime-Invoked-Function-Arn").endswith(":function:f")
    assert response.getheader("Lambda-Runtime-Trace-Id").startswith("Root=1-")
    assert response.getheader("Lambda-Runtime-Client-Context") == '{"custom": {}}'
    sock = next(iter(api.server.connections))._transport.get_extra_info("socket")
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)  # no delayed-ACK stalls

    connection.request("POST", "/2018-06-01/runtime/invocation/req-1/response", b'{"ok": 1}')
    accepted = connection.getresponse()
    assert accepted.status == 202 and json.loads(accepted.read()) == {"status": "OK"}
    assert api.sink.results == [("req-1", b'{"ok": 1}', None)]
    connection.close()


def test_unknown_request_id_is_invalid_request_id(api: Running) -> None:
    connection = api.connect()
    connection.request("POST", "/2018-06-01/runtime/invocation/other/response", b"{}")
    response = connection.getresponse()
    assert response.status == 400
    assert json.loads(response.read()) == {"errorType": "InvalidRequestID",
                                           "errorMessage": "Invalid request ID: other"}


def test_oversized_response_gets_lambdas_413(api: Running) -> None:
    connection = api.connect()
    body = b"x" * (MAX_RESPONSE_BYTES + 1)
    connection.request("POST", "/2018-06-01/runtime/invocation/req-1/response", body)
    response = connection.getresponse()
    assert response.status == 413
    assert json.loads(response.read())["errorType"] == "RequestEntityTooLarge"
    [(_, payload, error_type)] = api.sink.results
    assert error_type == "Function.ResponseSizeTooLarge"
    assert json.loads(payload)["errorType"] == "Function.ResponseSizeTooLarge"


def test_chunked_error_body_and_expect_continue(api: Running) -> None:
    with api.raw() as sock:
        sock.sendall(b"POST /2018-06-01/runtime/invocation/req-1/error HTTP/1.1\r\n"
                     b"Host: x\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n"
                     b"Lambda-Runtime-Function-Error-Type: Runtime.Custom\r\n\r\n")
        assert sock.recv(1024).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(b'7\r\n{"error\r\n5\r\nType"\r\n4\r\n: 1}\r\n0\r\n\r\n')
        assert sock.recv(4096).startswith(b"HTTP/1.1 202 ")
    assert api.sink.results == [("req-1", b'{"errorType": 1}', "Runtime.Custom")]


def test_init_error_and_unknown_routes(api: Running) -> None:
    connection = api.connect()
    connection.request("POST", "/2018-06-01/runtime/init/error", b'{"errorType": "E"}',
                       {"Lambda-Runtime-Function-Error-Type": "Runtime.ImportModuleError"})
    response = connection.getresponse()
    assert response.status == 202 and response.read()
    assert api.sink.init_errors == [(b'{"errorType": "E"}', "Runtime.ImportModuleError")]
    connection.request("GET", "/2018-06-01/runtime/invocation/req-1/response")
    response = connection.getresponse()
    assert response.status == 405 and response.read()
    connection.request("GET", "/2018-06-01/nope")
    response = connection.getresponse()
    assert response.status == 404 and response.read()
    with api.raw() as sock:
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        assert sock.recv(1024).startswith(b"HTTP/1.1 400 ")


def test_a_runtime_that_disconnects_takes_no_invocation(api: Running) -> None:
    with api.raw() as sock:
        sock.sendall(f"GET {NEXT} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert api.sink.waiting.wait(5)
    assert api.sink.cancelled.wait(5), "the /next long poll outlived its connection"


def test_close_ends_a_pending_long_poll(api: Running) -> None:
    connection = api.connect()
    connection.request("GET", NEXT)
    assert api.sink.waiting.wait(5)
    asyncio.run_coroutine_threadsafe(api.server.close(), api.loop).result(5)
    assert api.sink.cancelled.wait(5)
    with pytest.raises((http.client.HTTPException, OSError)):
        connection.getresponse()


STREAM_HEAD = (b"POST /2018-06-01/runtime/invocation/%s/response HTTP/1.1\r\n"
               b"Host: x\r\nLambda-Runtime-Function-Response-Mode: streaming\r\n"
               b"Transfer-Encoding: chunked\r\nContent-Type: "
               b"application/vnd.awslambda.http-integration-response\r\n"
               b"Trailer: Lambda-Runtime-Function-Error-Type, "
               b"Lambda-Runtime-Function-Error-Body\r\n\r\n")


def test_a_streaming_response_is_handed_over_with_its_head_and_read_as_it_arrives(
        api: Running) -> None:
    with api.raw() as sock:
        sock.sendall(STREAM_HEAD % b"req-1" + b"5\r\nfirst\r\n")
        assert api.sink.streaming.wait(10)  # before the body has ended
        ((content_type, body),) = api.sink.streams
        assert content_type == "application/vnd.awslambda.http-integration-response"
        reader = aiter(body)
        first = asyncio.run_coroutine_threadsafe(anext(reader), api.loop).result(10)
        assert first == b"first" and not body.ended.done()
        document = base64.b64encode(b'{"errorType": "Boom", "errorMessage": "late"}')
        sock.sendall(b"4\r\nmore\r\n0\r\nLambda-Runtime-Function-Error-Type: Boom\r\n"
                     b"Lambda-Runtime-Function-Error-Body: " + document + b"\r\n\r\n")
        answer = sock.recv(4096)
        assert answer.startswith(b"HTTP/1.1 202 ")  # once the body has ended
    rest = asyncio.run_coroutine_threadsafe(anext(reader), api.loop).result(10)
    assert rest == b"more" and body.ended.result() is True
    payload, error_type = stream_outcome(body)
    assert error_type == "Boom" and json.loads(payload)["errorMessage"] == "late"


def test_a_stream_for_an_unknown_request_is_refused_once_read(api: Running) -> None:
    with api.raw() as sock:
        sock.sendall(STREAM_HEAD % b"other" + b"2\r\nhi\r\n0\r\n\r\n")
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 400 ") and b"InvalidRequestID" in answer
    assert not api.sink.streams


def test_a_stream_cut_off_is_a_truncated_response(api: Running) -> None:
    with api.raw() as sock:
        sock.sendall(STREAM_HEAD % b"req-1" + b"2\r\nhi\r\n")
        assert api.sink.streaming.wait(10)
    ((_, body),) = api.sink.streams
    assert asyncio.run_coroutine_threadsafe(asyncio.wait_for(asyncio.shield(body.ended), 10),
                                            api.loop).result(15) is False
    payload, error_type = stream_outcome(body)
    assert error_type == "Runtime.TruncatedResponse" and json.loads(payload)["errorType"] == (
        "Runtime.TruncatedResponse")
