"""Lambda's Runtime API (2018-06-01) served to one execution environment.

Each environment gets its own endpoint (``AWS_LAMBDA_RUNTIME_API=127.0.0.1:PORT``), so the
runtime client sees exactly the standard API:

- ``GET  /2018-06-01/runtime/invocation/next`` blocks until an invocation is assigned;
- ``POST /2018-06-01/runtime/invocation/{id}/response`` and ``.../{id}/error``;
- ``POST /2018-06-01/runtime/init/error``.

Served by :mod:`.http11` (httptools, ``TCP_NODELAY``); a ``/next`` long poll is cancelled
when the runtime disconnects, so a dead runtime never takes an invocation.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable
from http import HTTPStatus
from typing import Protocol

from onnx_lambda.emulator.http11 import HttpServer, Request, Response, json_response
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
            if request_id and kind == "response":
                return result(request_id, request.body, None)
            if request_id and kind == "error":
                return result(request_id, request.body, error_type or "Unhandled")
        return _error(404, "NotFound", f"no Runtime API endpoint {method} {path}")

    return HttpServer(handle, limits=LIMITS, refusal=_refusal)


def _refusal(status: int, _path: str) -> Response:
    return _error(status, HTTPStatus(status).phrase.replace(" ", ""), HTTPStatus(status).phrase)
