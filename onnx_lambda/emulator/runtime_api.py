"""Lambda's Runtime API (2018-06-01) served to one execution environment.

Each environment gets its own endpoint (``AWS_LAMBDA_RUNTIME_API=127.0.0.1:PORT``), so the
runtime client sees exactly the standard API:

- ``GET  /2018-06-01/runtime/invocation/next`` blocks until an invocation is assigned;
- ``POST /2018-06-01/runtime/invocation/{id}/response`` and ``.../{id}/error``;
- ``POST /2018-06-01/runtime/init/error``.

A ``/response`` with ``Lambda-Runtime-Function-Response-Mode: streaming`` (a chunked body,
errors after the first byte as the trailers ``Lambda-Runtime-Function-Error-Type`` and
``Lambda-Runtime-Function-Error-Body``, base64; AWS: "Implementing response streaming in a
custom runtime") is handed to the environment with its head (:meth:`RuntimeSink.stream`) and
read as it arrives; the environment ends the invocation when the body ends.

Served by :mod:`.http11` (httptools, ``TCP_NODELAY``); a ``/next`` long poll is cancelled
when the runtime disconnects, so a dead runtime never takes an invocation.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
from collections.abc import Awaitable
from http import HTTPStatus
from typing import Protocol

from onnx_lambda.emulator.http11 import HttpServer, Request, Response, json_response
from onnx_lambda.emulator.http_stream import BodyStream, StreamBroken
from onnx_lambda.emulator.limits import LAMBDA_SYNC_RESPONSE_BYTES, ServerLimits

PREFIX = "/2018-06-01/runtime"
NEXT = f"{PREFIX}/invocation/next"
INIT_ERROR = f"{PREFIX}/init/error"
INVOCATION = f"{PREFIX}/invocation/"
MAX_RESPONSE_BYTES = LAMBDA_SYNC_RESPONSE_BYTES
# Bodies up to this size are read so that an oversized response gets Lambda's error, not a
# connection reset. The runtime is trusted more than an API client: no idle timeout (an
# environment may sit between invocations), headers up to 1 MiB (error causes).
READ_LIMIT_BYTES = 64 * 1024 * 1024
LIMITS = ServerLimits(max_head=1024 * 1024, max_body=READ_LIMIT_BYTES,
                      max_buffered=2 * READ_LIMIT_BYTES, idle_timeout_s=None)
_ACCEPTED = json_response({"status": "OK"}, 202)
RESPONSE_MODE = "Lambda-Runtime-Function-Response-Mode"
ERROR_TYPE = "Lambda-Runtime-Function-Error-Type"
ERROR_BODY = "Lambda-Runtime-Function-Error-Body"
# a stream cut off before its end (AWS's error type for it: Runtime.TruncatedResponse)
TRUNCATED = "Runtime.TruncatedResponse"


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

    def stream(self, request_id: str, content_type: str, body: BodyStream) -> str | None:
        """A streaming response began; returns an error message if ``request_id`` is wrong.
        The environment reads ``body`` and calls :meth:`complete` when ``body.ended``."""


def is_streaming(path: str, headers: list[tuple[bytes, bytes]]) -> bool:
    """A ``/response`` in streaming mode: its body is read as it arrives."""
    return path.endswith("/response") and any(
        name.lower() == b"lambda-runtime-function-response-mode"
        and value.lower() == b"streaming" for name, value in headers)


def stream_outcome(body: BodyStream) -> tuple[bytes, str | None]:
    """How a streamed response ended: ``(b"", None)`` complete, else the error document and
    its type (the runtime's trailers, or a cut-off stream)."""
    if not body.ended.result():
        return (json.dumps({"errorType": TRUNCATED, "errorMessage":
                            "the runtime's streamed response was cut off"}).encode(), TRUNCATED)
    error_type = body.trailers.get(ERROR_TYPE.lower())
    if not error_type:
        return b"", None
    try:
        document = base64.b64decode(body.trailers.get(ERROR_BODY.lower(), ""))
    except (binascii.Error, ValueError):
        document = b""
    return document or json.dumps({"errorType": error_type, "errorMessage": ""}).encode(), \
        error_type


async def stream_ended(body: BodyStream) -> tuple[bytes, str | None]:
    """How a streamed response relayed to its caller ended (:func:`stream_outcome`)."""
    await body.ended
    return stream_outcome(body)


async def read_whole(body: BodyStream) -> tuple[bytes, str | None]:
    """A streamed response read whole, for a buffered invocation: ``(payload, error_type)``
    (Lambda buffers a stream up to its synchronous response limit)."""
    chunks, size = [], 0
    with contextlib.suppress(StreamBroken):
        async for data in body:
            size += len(data)
            if size > MAX_RESPONSE_BYTES:
                body.abort()
                message = (f"Response payload size exceeded maximum allowed payload size "
                           f"({MAX_RESPONSE_BYTES} bytes).")
                return (json.dumps({"errorType": "Function.ResponseSizeTooLarge",
                                    "errorMessage": message}).encode(),
                        "Function.ResponseSizeTooLarge")
            chunks.append(data)
    payload, error_type = stream_outcome(body)
    return (payload if error_type else b"".join(chunks)), error_type


def _error(status: int, error_type: str, message: str) -> Response:
    return json_response({"errorType": error_type, "errorMessage": message}, status)


def runtime_api_server(sink: RuntimeSink) -> HttpServer:
    """The Runtime API of one environment (``await server.start(host, port)``)."""

    async def next_invocation() -> Response:
        delivery = await sink.next_invocation()
        headers = [
            ("Content-Type", "application/json"),
            ("Lambda-Runtime-Aws-Request-Id", delivery.request_id),
            ("Lambda-Runtime-Deadline-Ms", str(delivery.deadline_ms)),
            ("Lambda-Runtime-Invoked-Function-Arn", delivery.invoked_arn),
            ("Lambda-Runtime-Trace-Id", delivery.trace_id),
        ]
        if delivery.client_context:
            headers.append(("Lambda-Runtime-Client-Context", delivery.client_context))
        return Response(200, delivery.payload, headers)

    def result(request_id: str, body: bytes, error_type: str | None) -> Response:
        if error_type is None and len(body) > MAX_RESPONSE_BYTES:
            message = (f"Response payload size ({len(body)} bytes) exceeded maximum allowed "
                       f"payload size ({MAX_RESPONSE_BYTES} bytes).")
            payload = json.dumps({"errorMessage": message,
                                  "errorType": "Function.ResponseSizeTooLarge"}).encode()
            sink.complete(request_id, payload, "Function.ResponseSizeTooLarge")
            return _error(413, "RequestEntityTooLarge", message)
        problem = sink.complete(request_id, body, error_type)
        if problem:
            return _error(400, "InvalidRequestID", problem)
        return _ACCEPTED

    async def streamed(request_id: str, request: Request, body: BodyStream) -> Response:
        problem = sink.stream(request_id, request.header("Content-Type") or
                              "application/octet-stream", body)
        if problem:
            async for _ in body:  # read to its end, so that the runtime reads the answer
                pass
            return _error(400, "InvalidRequestID", problem)
        await asyncio.shield(body.ended)  # the runtime learns its stream was taken at the end
        return _ACCEPTED

    def handle(request: Request) -> Response | Awaitable[Response]:
        path, method = request.path, request.method
        if path == NEXT:
            return next_invocation() if method == "GET" else _error(
                405, "MethodNotAllowed", "use GET")
        if path == INIT_ERROR or path.startswith(INVOCATION):
            if method != "POST":
                return _error(405, "MethodNotAllowed", "use POST")
            error_type = request.header("Lambda-Runtime-Function-Error-Type")
            if path == INIT_ERROR:
                sink.init_failed(request.body, error_type)
                return _ACCEPTED
            request_id, _, kind = path[len(INVOCATION):].rpartition("/")
            if request_id and kind == "response" and request.stream is not None:
                return streamed(request_id, request, request.stream)
            if request_id and kind == "response":
                return result(request_id, request.body, None)
            if request_id and kind == "error":
                return result(request_id, request.body, error_type or "Unhandled")
        return _error(404, "NotFound", f"no Runtime API endpoint {method} {path}")

    return HttpServer(handle, limits=LIMITS, refusal=_refusal, streams_body=is_streaming)


def _refusal(status: int, _path: str) -> Response:
    return _error(status, HTTPStatus(status).phrase.replace(" ", ""), HTTPStatus(status).phrase)
