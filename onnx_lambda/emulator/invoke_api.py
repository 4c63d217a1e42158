"""Lambda's Invoke API (``POST /2015-03-31/functions/{FunctionName}/invocations``).

Enough of the real service for a ``boto3`` Lambda client (``endpoint_url``) to work:
``FunctionName`` as a name, ``name:qualifier``, a full or partial ARN; ``Qualifier``
(``$LATEST``, the template's ``AutoPublishAlias`` or its version ``1``);
``X-Amz-Invocation-Type`` ``RequestResponse`` (200), ``Event`` (202), ``DryRun`` (204);
``X-Amz-Log-Type: Tail`` (``X-Amz-Log-Result``, base64 of the last 4 KB of log);
``X-Amz-Function-Error: Unhandled`` on function errors; ``X-Amz-Executed-Version``.
Service errors use the JSON shape and ``x-amzn-ErrorType`` header botocore parses into
``client.exceptions.<Type>``.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from onnx_lambda.emulator.environment import function_arn
from onnx_lambda.emulator.pool import FunctionPool, Throttled
from onnx_lambda.emulator.report import log_tail

PATH = "/2015-03-31/functions/{name}/invocations"
MAX_SYNC_BYTES = 6_291_456
MAX_EVENT_BYTES = 1_048_576
ALIAS_VERSION = "1"
_NAME = re.compile(
    r"(?:arn:aws[a-z-]*:lambda:[a-z0-9-]+:)?(?:\d{12}:)?(?:function:)?([A-Za-z0-9_-]+)(?::(.+))?")


@dataclass(frozen=True)
class Target:
    pool: FunctionPool
    qualifier: str | None
    version: str


class ServiceError(Exception):
    def __init__(self, status: int, error_type: str, message: str, **extra: str) -> None:
        super().__init__(message)
        self.status, self.error_type, self.message, self.extra = status, error_type, message, extra

    def response(self, request_id: str) -> web.Response:
        body = {"Type": "User", "message": self.message, **self.extra}
        return web.json_response(body, status=self.status, headers={
            "x-amzn-ErrorType": self.error_type, "x-amzn-RequestId": request_id})


def resolve_target(pools: dict[str, FunctionPool], function_name: str,
                   qualifier: str | None) -> Target:
    """Find the pool and version for ``FunctionName`` (+ ``Qualifier``), or raise 404."""
    found = _NAME.fullmatch(function_name)
    name, inline = (found.group(1), found.group(2)) if found else (function_name, None)
    qualifier = qualifier or inline
    pool = pools.get(name)
    if pool is None:
        raise ServiceError(404, "ResourceNotFoundException",
                           f"Function not found: {function_arn(name, qualifier)}")
    alias = pool.spec.alias
    if qualifier in (None, "$LATEST"):
        return Target(pool, qualifier, "$LATEST")
    if alias and qualifier in (alias, ALIAS_VERSION):
        return Target(pool, qualifier, ALIAS_VERSION)
    raise ServiceError(404, "ResourceNotFoundException",
                       f"Function not found: {function_arn(name, qualifier)}")


def invoke_handler(pools: dict[str, FunctionPool],
                   ) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handle(request: web.Request) -> web.Response:
        request_id = str(uuid.uuid4())
        try:
            return await _invoke(request, request_id)
        except ServiceError as error:
            return error.response(request_id)

    async def _invoke(request: web.Request, request_id: str) -> web.Response:
        target = resolve_target(pools, request.match_info["name"],
                                request.query.get("Qualifier"))
        kind = request.headers.get("X-Amz-Invocation-Type", "RequestResponse")
        if kind not in ("RequestResponse", "Event", "DryRun"):
            raise ServiceError(400, "InvalidParameterValueException",
                               f"Unsupported invocation type: {kind}")
        payload = await request.read() or b"{}"
        limit = MAX_EVENT_BYTES if kind == "Event" else MAX_SYNC_BYTES
        if len(payload) > limit:
            raise ServiceError(413, "RequestTooLargeException",
                               f"Request must be smaller than {limit} bytes for the "
                               "InvokeFunction operation")
        try:
            json.loads(payload)
        except ValueError as exc:
            raise ServiceError(400, "InvalidRequestContentException",
                               "Could not parse request body into json") from exc
        headers = {"x-amzn-RequestId": request_id, "X-Amz-Executed-Version": target.version}
        if kind == "DryRun":
            return web.Response(status=204, headers=headers)
        if kind == "Event":
            target.pool.invoke_event(payload, qualifier=target.qualifier,
                                     version=target.version)
            return web.Response(status=202, headers=headers)
        client_context = request.headers.get("X-Amz-Client-Context")
        try:
            result = await target.pool.invoke(payload, qualifier=target.qualifier,
                                              version=target.version,
                                              client_context=_decode_context(client_context))
        except Throttled as exc:
            raise ServiceError(429, "TooManyRequestsException", "Rate Exceeded.",
                               Reason="ReservedFunctionConcurrentInvocationLimitExceeded",
                               ) from exc
        headers["Content-Type"] = "application/json"
        if result.error_type is not None:
            headers["X-Amz-Function-Error"] = "Unhandled"
        if request.headers.get("X-Amz-Log-Type") == "Tail":
            headers["X-Amz-Log-Result"] = log_tail(result.record, result.log)
        return web.Response(status=200, body=result.payload, headers=headers)

    return handle


def _decode_context(value: str | None) -> str | None:
    """``X-Amz-Client-Context`` is base64 JSON; the runtime gets the JSON text."""
    if not value:
        return None
    try:
        return base64.b64decode(value).decode()
    except ValueError as exc:
        raise ServiceError(400, "InvalidRequestContentException",
                           "Client context must be base64-encoded JSON") from exc
