"""Hostile traffic against the emulator (raw sockets on 127.0.0.1, bounded): API Gateway's
limits held and answered in its shapes, protocol corners answered, the Invoke and Runtime
APIs unbreakable by an event or a client context, and the classes that already held
(smuggling, slowloris, SIGKILL mid-request, throttled bursts) kept held."""

from __future__ import annotations

import base64
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import pytest

from onnx_lambda.emulator import Emulator
from onnx_lambda.emulator.limits import ServerLimits
from tests.e2e import emulator_support
from tests.e2e.emulator_support import TEMPLATE, call
from tests.support.raw_http import Reader, connect, exchange, request

INVOKE = "/2015-03-31/functions/{}/invocations"
TOO_LARGE = {"message": "Request Entity Too Large"}


def _port(emu: Emulator) -> int:
    return int(urlsplit(emu.url).port or 0)


emu = emulator_support.emu  # API Gateway's default limits (10,240-byte head, 10 MB body)


@pytest.fixture(scope="module")
def tight(emu: Emulator) -> Iterator[Emulator]:
    """Small caps and short timeouts, so that each one is reached in a test's time (after
    ``emu``, so that it stops first: ``emu`` checks that no environment outlives it)."""
    limits = ServerLimits(max_buffered=1_000_000, max_connections=20, idle_timeout_s=0.5,
                          head_timeout_s=0.5, body_timeout_s=0.5)
    emulator = Emulator(TEMPLATE, port=0, log=None, concurrency=2, http_limits=limits)
    with emulator.running():
        yield emulator


@pytest.fixture(scope="module")
def port(emu: Emulator) -> int:
    return _port(emu)


# -- one request can freeze everyone -----------------------------------------------------
def test_oversized_head_gets_431_and_others_are_served_meanwhile(port: int) -> None:
    big = connect(port)
    big.sendall(b"GET /v2/models/m HTTP/1.1\r\nHost: x\r\nX-Big: ")
    others: list[int] = []

    def other_client() -> None:
        others.append(call(f"http://127.0.0.1:{port}/v2/models/m")[0])

    try:
        for i in range(64):  # up to 4 MB, in pieces, with another client served midway
            big.sendall(b"a" * 65536)
            if i == 8:
                thread = threading.Thread(target=other_client)
                thread.start()
                thread.join(30)
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused and closed while we were still sending: fine
    assert others == [200], "another client must be served while a huge header arrives"
    answer = Reader(big).response()
    big.close()
    assert answer is not None
    status, headers, body = answer
    assert status == 431 and headers["content-type"] == "application/json"
    assert json.loads(body) == {"message": "HTTP header is larger than 10240 bytes."}


def test_head_just_under_the_limit_is_served(port: int) -> None:
    data = request("GET", "/v2/models/m", headers={"X-Pad": "a" * 9_800})
    assert exchange(port, data)[0] == 200


def test_declared_length_over_10_mb_is_refused_before_the_body(port: int) -> None:
    head = request("POST", "/predict", headers={"Content-Length": str(11 * 1024 * 1024)})
    head = head.replace(b"Content-Length: 0\r\n", b"")
    status, _, body = exchange(port, head)  # no body sent: the answer comes on the headers
    assert (status, body) == (413, TOO_LARGE)
    invoke = head.replace(b"POST /predict", f"POST {INVOKE.format('Echo')}".encode())
    status, headers, body = exchange(port, invoke)
    assert status == 413 and headers["x-amzn-errortype"] == "RequestTooLargeException"


def test_chunked_body_over_10_mb_is_refused_as_it_arrives(port: int) -> None:
    with connect(port) as sock:
        sock.sendall(b"POST /predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (1 << 20, b"x" * (1 << 20))
        try:
            for _ in range(12):
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = Reader(sock).response()
    assert answer is not None and answer[0] == 413 and json.loads(answer[2]) == TOO_LARGE


def test_bytes_buffered_by_all_connections_are_capped(tight: Emulator) -> None:
    socks = [connect(_port(tight)) for _ in range(3)]
    try:
        for sock in socks:  # three unfinished 600 kB bodies; the server holds at most 1 MB
            sock.sendall(request("POST", "/predict").replace(b"Content-Length: 0",
                                                             b"Content-Length: 900000"))
            sock.sendall(b"x" * 600_000)
        answers = [Reader(sock).response() for sock in socks[1:]]
    finally:
        for sock in socks:
            sock.close()
    assert any(a is not None and a[0] == 503 for a in answers)


def test_connections_over_the_cap_make_room_by_closing_the_idle(tight: Emulator) -> None:
    idle = [connect(_port(tight)) for _ in range(20)]
    try:
        status, _, _ = exchange(_port(tight), request("GET", "/v2/models/m"))
        assert status == 200  # a new client is served at the cap ...
        for sock in idle:
            sock.settimeout(5)
        assert any(Reader(sock).closed() for sock in idle)  # ... an idle one made room
    finally:
        for sock in idle:
            sock.close()


def test_idle_and_slow_connections_time_out(tight: Emulator) -> None:
    with connect(_port(tight)) as idle, connect(_port(tight)) as slow:
        slow.sendall(b"GET /v2/models/m HTTP/1.1\r\nHost: x\r\n")  # the head never ends
        assert Reader(idle).closed()  # closed after the idle timeout, no answer
        answer = Reader(slow).response()
    assert answer is not None and answer[0] == 408


def test_pipelined_requests_are_read_with_backpressure(port: int) -> None:
    """Requests pipelined behind a slow one are not read without bound."""
    one = request("POST", INVOKE.format("Sleep"), b'{"seconds": 5}', {"X-Pad": "p" * 900})
    total = 32 * 1024 * 1024
    with connect(port) as sock:
        sock.setblocking(False)
        sent, deadline = 0, time.monotonic() + 3.0
        while sent < total and time.monotonic() < deadline:
            try:
                sent += sock.send(one * 64)
            except BlockingIOError:
                time.sleep(0.01)
    assert sent < total, "the server read 32 MB of pipelined requests it had not answered"


def test_pipelined_valid_requests_before_garbage_are_answered(port: int) -> None:
    with connect(port) as sock:
        sock.sendall(request("GET", "/v2/models/a") * 5 + b"\x00GARBAGE\r\n\r\n")
        reader = Reader(sock)
        answers = [reader.response() for _ in range(6)]
        assert reader.closed()
    assert [a[0] for a in answers if a] == [200] * 5 + [400]
    assert json.loads(answers[5][2]) == {"message": "Bad Request"}  # type: ignore[index]


# -- protocol corners ----------------------------------------------------------------------
@pytest.mark.parametrize("upgrade", [
    {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
     "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="},
    {"Connection": "Upgrade, HTTP2-Settings", "Upgrade": "h2c", "HTTP2-Settings": "AAMAAABk"},
])
def test_upgrade_is_ignored_and_served_as_http11(port: int, upgrade: dict[str, str]) -> None:
    with connect(port) as sock:
        sock.sendall(request("GET", "/v2/models/m", headers=upgrade)
                     + request("GET", "/v2/models/n"))
        reader = Reader(sock)
        first, second = reader.response(), reader.response()
    assert first is not None and first[0] == 200  # no 101: API Gateway does not upgrade
    assert second is not None and second[0] == 200  # and the connection goes on


def test_connect_and_upgrade_with_a_body_get_501(port: int) -> None:
    status, _, body = exchange(port, b"CONNECT example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (status, body) == (501, {"message": "Not Implemented"})
    data = request("POST", "/predict", b"{}", {"Connection": "Upgrade", "Upgrade": "h2c"})
    assert exchange(port, data)[0] == 501


def test_encoded_slash_stays_in_its_segment(port: int) -> None:
    status, _, event = exchange(port, request("GET", "/v2/models/a%2Fb"))
    assert status == 200  # GET /v2/models/{name}, not a 404 for /v2/models/a/b
    assert event["pathParameters"] == {"name": "a/b"} and event["rawPath"] == "/v2/models/a/b"
    status, _, event = exchange(port, request("GET", "/rest/x%2Fy"))  # REST: kept encoded
    assert status == 200 and event["path"] == "/rest/x%2Fy"
    assert event["pathParameters"] == {"item": "x/y"}


def test_response_header_with_crlf_is_not_sent(port: int) -> None:
    value = {"value": {"statusCode": 200, "headers": {"x-a": "1\r\nInjected: yes"}}}
    status, headers, _ = exchange(port, request("POST", "/shape", json.dumps(value).encode(),
                                                {"Content-Type": "application/json"}))
    assert status == 500 and "injected" not in headers


# -- Invoke API and Runtime API --------------------------------------------------------------
def _invoke(port: int, function: str, payload: bytes, headers: dict[str, str] | None = None,
            ) -> tuple[int, dict[str, str], Any]:
    return exchange(port, request("POST", INVOKE.format(function), payload, headers))


@pytest.mark.parametrize("payload", [b"[" * 100_000 + b"]" * 100_000, b'{"a": NaN}',
                                     b"[Infinity]", b"-Infinity", b"\xff\xfe"])
def test_unparsable_events_get_lambdas_400(port: int, payload: bytes) -> None:
    status, headers, body = _invoke(port, "Echo", payload)
    assert status == 400 and headers["x-amzn-errortype"] == "InvalidRequestContentException"
    assert body["Type"] == "User" and body["message"].startswith(
        "Could not parse request body into json")


@pytest.mark.parametrize("custom", [{"name": "€✓ 日本"}, {"a": "x\r\nInjected: yes"}])
def test_client_context_reaches_the_function_intact(port: int, custom: dict[str, str]) -> None:
    text = json.dumps({"custom": custom}, ensure_ascii=False)  # raw UTF-8, escaped CR LF
    context = base64.b64encode(text.encode()).decode()
    status, headers, body = _invoke(port, "Echo", b"{}", {"X-Amz-Client-Context": context})
    assert status == 200 and "x-amz-function-error" not in headers
    assert body["clientCustom"] == custom


@pytest.mark.parametrize("context", [
    "not base64!", base64.b64encode(b"[1]").decode(), "e30=" * 1000,
    base64.b64encode(b'{"custom": {}}\r\nInjected: yes').decode(),  # raw CR LF: not JSON
])
def test_bad_client_context_gets_400(port: int, context: str) -> None:
    status, headers, _ = _invoke(port, "Echo", b"{}", {"X-Amz-Client-Context": context})
    assert status == 400 and headers["x-amzn-errortype"] == "InvalidRequestContentException"


# -- the classes that held: keep them held --------------------------------------------------
@pytest.mark.parametrize("smuggle", [
    b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked"
    b"\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 40"
    b"\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 30\r\n\r\n"
    b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n"
    b"0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
])
def test_request_smuggling_gets_one_400(port: int, smuggle: bytes) -> None:
    with connect(port) as sock:
        sock.sendall(smuggle)
        reader = Reader(sock)
        answer = reader.response()
        assert reader.closed()  # nothing smuggled behind it is answered
    assert answer is not None and answer[0] == 400


def test_slowloris_does_not_lock_others_out(port: int) -> None:
    socks = [connect(port) for _ in range(200)]
    try:
        for sock in socks:
            sock.sendall(b"GET /v2/models/m HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        assert exchange(port, request("GET", "/v2/models/m"))[0] == 200
    finally:
        for sock in socks:
            sock.close()


def _wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_sigkill_mid_request_then_served_again(emu: Emulator, port: int) -> None:
    def busy() -> list[Any]:
        return [e for e in emu.pools["Sleep"].environments if e.state == "busy"]

    _wait_for(lambda: not busy())  # an earlier test's invocation may still be running
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(_invoke, port, "Sleep", b'{"seconds": 0.8}')
        _wait_for(lambda: bool(busy()))
        busy = next(e for e in emu.pools["Sleep"].environments if e.state == "busy")
        assert busy.pid is not None
        os.kill(busy.pid, signal.SIGKILL)
        status, headers, body = pending.result(30)
    assert status == 200 and headers.get("x-amz-function-error") == "Unhandled", (headers, body)
    assert body["errorType"] == "Runtime.ExitError"
    assert _invoke(port, "Sleep", b'{"seconds": 0}')[0] == 200


def test_burst_is_throttled_and_nothing_is_lost(port: int) -> None:
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda _: _invoke(port, "Sleep", b'{"seconds": 0.3}'),
                                range(16)))
    statuses = sorted(status for status, _, _ in answers)
    assert len(statuses) == 16 and set(statuses) <= {200, 429} and 200 in statuses
    assert all(b["Reason"] == "ReservedFunctionConcurrentInvocationLimitExceeded"
               for s, _, b in answers if s == 429)


def test_queued_event_invocations_do_not_poll(port: int) -> None:
    """1,000 queued ``Event`` invocations wait on a signal: the emulator stays idle. Measured
    against the same process's CPU over an idle second before them (its other threads, pytest's
    and xdist's, use some: 0.17 s was once seen here with no polling at all)."""
    idle = time.process_time()  # this process runs the emulator's loop (a thread)
    time.sleep(1.0)
    idle = time.process_time() - idle
    event = request("POST", INVOKE.format("Sleep"), b'{"seconds": 30}',
                    {"X-Amz-Invocation-Type": "Event"})
    with connect(port) as sock:
        for _ in range(20):
            sock.sendall(event * 50)
            reader = Reader(sock)
            assert all((a := reader.response()) and a[0] == 202 for _ in range(50))
    # until the queue is taken in (under load, more than a moment): a quarter second as quiet
    # as the idle one, or 5 s; an emulator that polls is never that quiet, and is measured next
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        start = time.process_time()
        time.sleep(0.25)
        if time.process_time() - start <= idle / 4 + 0.02:
            break
    before = time.process_time()
    time.sleep(1.0)
    used = time.process_time() - before
    assert used < idle + 0.15, (f"{used:.2f} s of CPU in 1 s with 1,000 queued events against "
                                f"{idle:.2f} s idle: polling")


def test_a_closed_socket_mid_body_frees_its_bytes(tight: Emulator) -> None:
    port = _port(tight)
    for _ in range(5):  # 5 x 600 kB > the 1 MB cap: freed each time, so never refused
        with connect(port) as sock:
            sock.sendall(request("POST", "/predict").replace(b"Content-Length: 0",
                                                             b"Content-Length: 900000"))
            sock.sendall(b"x" * 600_000)
        time.sleep(0.1)
    data = request("POST", "/shape", json.dumps({"value": 1}).encode() + b" " * 500_000)
    assert exchange(port, data)[0] == 200

