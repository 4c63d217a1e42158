"""Lambda's Runtime API (2018-06-01) served to one execution environment.

Each environment gets its own endpoint (``AWS_LAMBDA_RUNTIME_API=127.0.0.1:PORT``), so the
runtime client sees exactly the standard API:

- ``GET  /2018-06-01/runtime/invocation/next`` blocks until an invocation is assigned;
- ``POST /2018-06-01/runtime/invocation/{id}/response`` and ``.../{id}/error``;
- ``POST /2018-06-01/runtime/init/error``.

aiohttp sets ``TCP_NODELAY`` on every accepted connection (``aiohttp.base_protocol``),
which matters: without it each round trip waits for a delayed ACK (~40 ms).
"""

from __future__ import annotations

import json
from typing import Protocol

from aiohttp import web

PREFIX = "/2018-06-01/runtime"
MAX_RESPONSE_BYTES = 6_291_556  # Lambda's limit for a synchronous response
# Bodies up to this size are read so that an oversized response gets Lambda's error, not a
# connection reset.
READ_LIMIT_BYTES = 64 * 1024 * 1024


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


def _error(status: int, error_type: str, message: str) -> web.Response:
    return web.json_response({"errorType": error_type, "errorMessage": message}, status=status)


def runtime_app(sink: RuntimeSink) -> web.Application:
    """The Runtime API of one environment."""

    async def next_invocation(_request: web.Request) -> web.Response:
        delivery = await sink.next_invocation()
        headers = {
            "Content-Type": "application/json",
            "Lambda-Runtime-Aws-Request-Id": delivery.request_id,
            "Lambda-Runtime-Deadline-Ms": str(delivery.deadline_ms),
            "Lambda-Runtime-Invoked-Function-Arn": delivery.invoked_arn,
            "Lambda-Runtime-Trace-Id": delivery.trace_id,
        }
        if delivery.client_context:
            headers["Lambda-Runtime-Client-Context"] = delivery.client_context
        return web.Response(body=delivery.payload, headers=headers)

    async def result(request: web.Request, error_type: str | None) -> web.Response:
        body = await request.read()
        if error_type is None and len(body) > MAX_RESPONSE_BYTES:
            message = (f"Response payload size ({len(body)} bytes) exceeded maximum allowed "
                       f"payload size ({MAX_RESPONSE_BYTES} bytes).")
            payload = json.dumps({"errorMessage": message,
                                  "errorType": "Function.ResponseSizeTooLarge"}).encode()
            sink.complete(request.match_info["id"], payload, "Function.ResponseSizeTooLarge")
            return _error(413, "RequestEntityTooLarge", message)
        problem = sink.complete(request.match_info["id"], body, error_type)
        if problem:
            return _error(400, "InvalidRequestID", problem)
        return web.json_response({"status": "OK"}, status=202)

    async def response(request: web.Request) -> web.Response:
        return await result(request, None)

    async def error(request: web.Request) -> web.Response:
        return await result(
            request, request.headers.get("Lambda-Runtime-Function-Error-Type", "Unhandled"))

    async def init_error(request: web.Request) -> web.Response:
        sink.init_failed(await request.read(),
                         request.headers.get("Lambda-Runtime-Function-Error-Type"))
        return web.json_response({"status": "OK"}, status=202)

    app = web.Application(client_max_size=READ_LIMIT_BYTES)
    app.router.add_get(f"{PREFIX}/invocation/next", next_invocation)
    app.router.add_post(f"{PREFIX}/invocation/{{id}}/response", response)
    app.router.add_post(f"{PREFIX}/invocation/{{id}}/error", error)
    app.router.add_post(f"{PREFIX}/init/error", init_error)
    return app
