"""Response streaming end to end: ``handler.stream_runtime`` in real environments of the
emulator, read through a RESPONSE_STREAM Function URL (http.client), boto3's
``invoke_with_response_stream`` and the plain Invoke API; and the same runtime loop under the
real Runtime Interface Emulator.

Order is checked by events, not by the clock: the handler holds its last chunk until the test
creates a gate file, which the test does only once it holds the first chunk; a stream that was
buffered anywhere would never deliver that first chunk and the handler would give up
(``gate-timeout``).
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.servers import rie_binary
from onnx_lambda import server_process
from onnx_lambda.emulator import Emulator
from onnx_lambda.ports import free_port
from tests.e2e.emulator_support import HANDLERS, children, lambda_client

pytestmark = pytest.mark.e2e
PRELUDE = (b'{"statusCode":200,"headers":{"content-type":"text/plain","x-stream":"yes"},'
           b'"cookies":[]}' + b"\0" * 8)
STREAMING_URL = {"AuthType": "NONE", "InvokeMode": "RESPONSE_STREAM"}


def _function(handler: str, url: dict[str, str] | None, timeout: int = 30) -> dict[str, Any]:
    properties: dict[str, Any] = {"CodeUri": str(HANDLERS), "Handler": handler,
                                  "Timeout": timeout}
    if url:
        properties["FunctionUrlConfig"] = url
    return {"Type": "AWS::Serverless::Function", "Properties": properties}


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """One environment per function at most (concurrency 1): a stream that did not free its
    environment would throttle the next request."""
    template = tmp_path_factory.mktemp("streaming") / "template.yaml"
    template.write_text(json.dumps({"Resources": {
        "Stream": _function("streams.tokens", STREAMING_URL),
        "Plain": _function("streams.buffered", STREAMING_URL),
        "Broken": _function("streams.broken_before", STREAMING_URL),
        "WrongType": _function("streams.wrong_type", STREAMING_URL),
        "Unloadable": _function("broken.handler", STREAMING_URL),
        "Short": _function("streams.tokens", STREAMING_URL, timeout=1),
        "Echo": _function("fns.echo", {"AuthType": "NONE", "InvokeMode": "BUFFERED"}),
    }}))
    emulator = Emulator(template, port=0, log=None, concurrency=1)
    with emulator.running():
        yield emulator
    assert not children(), "environments left running after stop()"


def _open(emu: Emulator, function: str, query: str) -> tuple[http.client.HTTPConnection,
                                                               http.client.HTTPResponse]:
    host = emu.function_urls[function].split("//", 1)[1]
    conn = http.client.HTTPConnection(host, timeout=30)
    conn.request("GET", "/?" + query)
    return conn, conn.getresponse()


def _gate(tmp_path: Path) -> Path:
    return tmp_path / "gate"


def test_function_url_streams_each_chunk_before_the_next_is_made(
        emu: Emulator, tmp_path: Path) -> None:
    gate = _gate(tmp_path)
    conn, response = _open(emu, "Stream", f"n=3&gate={gate}")
    with contextlib.closing(conn):
        assert response.status == 200
        assert response.getheader("Transfer-Encoding") == "chunked"
        assert response.getheader("content-type") == "text/plain"
        assert response.getheader("x-stream") == "yes"
        first = response.read1(64)
        assert first == b"tok0 "  # the prelude became the head; the body starts at once
        gate.touch()  # only now may the handler produce its last chunk
        assert first + response.read() == b"tok0 tok1 tok2 "


def test_invoke_with_response_stream_reads_the_chunks_then_invoke_complete(
        emu: Emulator, tmp_path: Path) -> None:
    gate = _gate(tmp_path)
    client = lambda_client(emu.url)
    answer = client.invoke_with_response_stream(
        FunctionName="Stream", Payload=json.dumps({"n": 3, "gate": str(gate)}), LogType="Tail")
    assert answer["StatusCode"] == 200 and answer["ExecutedVersion"] == "$LATEST"
    assert answer["ResponseStreamContentType"] == (
        "application/vnd.awslambda.http-integration-response")
    events = []
    for event in answer["EventStream"]:
        events.append(event)
        gate.touch()  # after the first event has arrived
    chunks = [e["PayloadChunk"]["Payload"] for e in events[:-1]]
    assert b"".join(chunks) == PRELUDE + b"tok0 tok1 tok2 "
    assert len(chunks) == 3  # as the runtime wrote them: prelude + tok0, tok1, tok2
    complete = events[-1]["InvokeComplete"]
    assert "ErrorCode" not in complete
    assert "REPORT RequestId" in base64.b64decode(complete["LogResult"]).decode()


def test_an_error_after_the_first_byte_reaches_the_caller(emu: Emulator) -> None:
    conn, response = _open(emu, "Stream", "n=3&fail_at=1")
    with contextlib.closing(conn):
        assert response.status == 200
        with pytest.raises(http.client.IncompleteRead) as cut:
            response.read()
        assert cut.value.partial == b"tok0 "  # never a body that looks complete
    events = list(lambda_client(emu.url).invoke_with_response_stream(
        FunctionName="Stream", Payload=json.dumps({"n": 3, "fail_at": 1}))["EventStream"])
    assert b"".join(e["PayloadChunk"]["Payload"] for e in events[:-1]) == PRELUDE + b"tok0 "
    complete = events[-1]["InvokeComplete"]
    assert complete["ErrorCode"] == "RuntimeError"
    assert json.loads(complete["ErrorDetails"])["errorMessage"] == "failed at chunk 1"
    assert emu.records("Stream")[-1].error_type == "RuntimeError"


def test_an_error_before_the_first_byte_is_a_plain_function_error(emu: Emulator) -> None:
    conn, response = _open(emu, "Broken", "")
    with contextlib.closing(conn):
        # as a buffered Function URL answers a function error (the emulator's gateway error)
        assert response.status == 500
        assert json.loads(response.read()) == {"message": "Internal Server Error"}
    events = list(lambda_client(emu.url).invoke_with_response_stream(
        FunctionName="Broken", Payload=b"{}")["EventStream"])
    assert len(events) == 1
    complete = events[0]["InvokeComplete"]
    assert complete["ErrorCode"] == "ValueError"
    assert json.loads(complete["ErrorDetails"])["errorMessage"] == "no stream at all"


def test_a_chunk_that_is_not_bytes_fails_the_stream_not_the_runtime(emu: Emulator) -> None:
    events = list(lambda_client(emu.url).invoke_with_response_stream(
        FunctionName="WrongType", Payload=b"{}")["EventStream"])
    assert events[-1]["InvokeComplete"]["ErrorCode"] == "TypeError"
    conn, response = _open(emu, "WrongType", "")  # the same environment serves again
    with contextlib.closing(conn), pytest.raises(http.client.IncompleteRead):
        response.read()
    assert len({r.environment_id for r in emu.records("WrongType")}) == 1


def test_an_init_error_in_streaming_mode_is_reported_as_awslambdaric_reports_it(
        emu: Emulator) -> None:
    answer = lambda_client(emu.url).invoke(FunctionName="Unloadable")
    assert answer["FunctionError"] == "Unhandled"
    document = json.loads(answer["Payload"].read())
    assert document["errorType"] == "RuntimeError"
    assert document["errorMessage"] == "cannot initialise: model missing"


def test_the_function_timeout_ends_a_stream_with_sandbox_timedout(emu: Emulator) -> None:
    events = list(lambda_client(emu.url).invoke_with_response_stream(
        FunctionName="Short", Payload=b'{"forever": 1}')["EventStream"])
    assert events[0]["PayloadChunk"]["Payload"].startswith(PRELUDE + b"tok0 ")
    complete = events[-1]["InvokeComplete"]
    assert complete["ErrorCode"] == "Sandbox.Timedout"
    assert "Task timed out after 1.00 seconds" in complete["ErrorDetails"]


def test_a_client_that_goes_away_frees_the_environment(emu: Emulator, tmp_path: Path) -> None:
    marker = tmp_path / "closed"
    conn, response = _open(emu, "Stream", f"forever=1&marker={marker}")
    assert response.read1(64) == b"tok0 "
    conn.close()  # mid-stream
    deadline = time.monotonic() + 20
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    abandoned = emu.records("Stream")[-1]
    # the handler's generator was closed (its finally ran) in the invocation the client left
    assert marker.read_text() == f"closed {abandoned.request_id}"
    assert abandoned.error_type == "Runtime.TruncatedResponse"
    conn, response = _open(emu, "Stream", "n=2")  # concurrency 1: the same environment
    with contextlib.closing(conn):
        assert response.status == 200 and response.read() == b"tok0 tok1 "
    served = emu.records("Stream")[-1]
    assert served.environment_id == abandoned.environment_id and served.error_type is None


def test_a_buffered_answer_in_streaming_mode_is_one_chunk(emu: Emulator) -> None:
    conn, response = _open(emu, "Plain", "")
    with contextlib.closing(conn):
        assert response.status == 201 and response.read() == b'{"buffered": true}'
        assert response.getheader("content-type") == "application/json"
        assert response.headers.get_all("Set-Cookie") == ["a=1", "b=2"]


def test_a_streamed_204_has_no_body(emu: Emulator) -> None:
    conn, response = _open(emu, "Plain", "status=204")
    with contextlib.closing(conn):
        assert response.status == 204 and response.read() == b""
        assert response.getheader("Transfer-Encoding") is None
    conn, response = _open(emu, "Plain", "")  # the connection and the environment go on
    with contextlib.closing(conn):
        assert response.status == 201


def test_plain_invoke_gets_a_stream_whole(emu: Emulator) -> None:
    """Lambda buffers a streaming runtime's answer for a buffered Invoke."""
    answer = lambda_client(emu.url).invoke(FunctionName="Stream", Payload=b'{"n": 2}')
    assert "FunctionError" not in answer
    assert answer["Payload"].read() == PRELUDE + b"tok0 tok1 "


def test_buffered_functions_are_unchanged(emu: Emulator) -> None:
    """awslambdaric behind a BUFFERED URL answers as before; through
    InvokeWithResponseStream its answer is one chunk."""
    with urllib.request.urlopen(emu.function_urls["Echo"] + "/x", timeout=30) as response:
        assert response.status == 200 and response.getheader("Content-Length")
        assert json.loads(response.read())["event"]["rawPath"] == "/x"
    events = list(lambda_client(emu.url).invoke_with_response_stream(
        FunctionName="Echo", Payload=b'{"a": 1}')["EventStream"])
    assert len(events) == 2 and "ErrorCode" not in events[1]["InvokeComplete"]
    assert json.loads(events[0]["PayloadChunk"]["Payload"])["event"] == {"a": 1}


def test_the_real_rie_accepts_the_streaming_runtime() -> None:
    """The same loop under AWS's Runtime Interface Emulator: it takes the streaming response
    (headers, chunked body) and, in its standalone mode, answers it whole."""
    rie = rie_binary()
    assert rie is not None, "no runnable RIE (it ships in aws-sam-cli)"
    port = free_port()
    root = Path(__file__).resolve().parents[2]
    with server_process.start(
            [str(rie), "--runtime-interface-emulator-address", f"127.0.0.1:{port}",
             sys.executable, "-m", "handler.stream_runtime", "streams.tokens"], port=port,
            cwd=HANDLERS, env={"PYTHONPATH": f"{HANDLERS}:{root}"}, timeout_s=20) as server:
        url = f"{server.url}/2015-03-31/functions/function/invocations"
        with urllib.request.urlopen(url, data=b'{"n": 3}', timeout=30) as response:
            assert response.status == 200
            assert response.read() == PRELUDE + b"tok0 tok1 tok2 "


def test_the_real_handler_streams_from_the_templates_streaming_url(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """template.yaml with StreamingUrl enabled: StreamingFunction runs handler.app's
    stream_handler under handler.stream_runtime; /predict answers as the HTTP API does."""
    from tests.support import cfn, models

    folder = tmp_path_factory.mktemp("template")
    model = models.linear(tmp_path_factory.mktemp("model") / "linear.onnx")
    emulator = Emulator(cfn.edited(folder, {"StreamingUrl": "enabled"}), port=0, log=None,
                        provisioned=0,
                        env_vars={"Parameters": {"ONNX_LAMBDA_MODEL": str(model)}})
    body = json.dumps({"inputs": [[1.0, 2.0, 3.0, 4.0]]}).encode()
    headers = {"Content-Type": "application/json"}
    with emulator.running():
        assert emulator.pools["StreamingFunction"].spec.streaming
        request = urllib.request.Request(emulator.function_urls["StreamingFunction"] +
                                         "/predict", data=body, headers=headers)
        with urllib.request.urlopen(request, timeout=60) as streamed:
            assert streamed.status == 200
            assert streamed.getheader("Transfer-Encoding") == "chunked"
            assert streamed.getheader("Content-Type") == "application/json"
            assert "Server-Timing" in streamed.headers
            answer = json.loads(streamed.read())
        request = urllib.request.Request(emulator.url + "/predict", data=body, headers=headers)
        with urllib.request.urlopen(request, timeout=60) as buffered:
            assert json.loads(buffered.read()) == answer
        assert emulator.records("StreamingFunction")[-1].error_type is None
