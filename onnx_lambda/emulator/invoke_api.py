"""Lambda's Invoke API (``POST /2015-03-31/functions/{FunctionName}/invocations``).

Enough of the real service for a ``boto3`` Lambda client (``endpoint_url``) to work:
``FunctionName`` as a name, ``name:qualifier``, a full or partial ARN; ``Qualifier``
(``$LATEST``, the template's ``AutoPublishAlias`` or its version ``1``);
``X-Amz-Invocation-Type`` ``RequestResponse`` (200), ``Event`` (202), ``DryRun`` (204);
``X-Amz-Log-Type: Tail`` (``X-Amz-Log-Result``, base64 of the last 4 KB of log);
``X-Amz-Function-Error: Unhandled`` on function errors; ``X-Amz-Executed-Version``.
Service errors use the JSON shape and ``x-amzn-ErrorType`` header botocore parses into
``client.exceptions.<Type>``.

``InvokeWithResponseStream`` (``POST /2021-11-15/functions/{FunctionName}/
response-streaming-invocations``, ``RequestResponse`` or ``DryRun``): 200 and an
``application/vnd.amazon.eventstream`` body of ``PayloadChunk`` events, each sent as the runtime
writes it, then ``InvokeComplete`` (``ErrorCode`` and ``ErrorDetails`` when the function failed,
``LogResult`` with ``X-Amz-Log-Type: Tail``). A function that does not stream answers in one
chunk; the stream's own content type is the response's ``Content-Type``
(botocore's ``ResponseStreamContentType``).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from onnx_lambda.emulator import apigw, ids, response_stream
from onnx_lambda.emulator.http11 import Request, Response, json_response
from onnx_lambda.emulator.http_stream import StreamBroken
from onnx_lambda.emulator.limits import (
    LAMBDA_ASYNC_PAYLOAD_BYTES,
    LAMBDA_CLIENT_CONTEXT_BYTES,
    LAMBDA_SYNC_PAYLOAD_BYTES,
)
from onnx_lambda.emulator.pool import FunctionPool, Throttled
from onnx_lambda.emulator.report import log_tail
from onnx_lambda.emulator.runtime_launch import function_arn

PATH = "/2015-03-31/functions/{name}/invocations"
STREAM_PATH = "/2021-11-15/functions/{name}/response-streaming-invocations"
_PATH = re.compile(re.escape(PATH).replace(re.escape("{name}"), "([^/]+)"))
_STREAM_PATH = re.compile(re.escape(STREAM_PATH).replace(re.escape("{name}"), "([^/]+)"))
MAX_SYNC_BYTES = LAMBDA_SYNC_PAYLOAD_BYTES
MAX_EVENT_BYTES = LAMBDA_ASYNC_PAYLOAD_BYTES
_UNPARSABLE = "Could not parse request body into json: Could not parse payload into json: "
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

    def response(self, request_id: str) -> Response:
        body = {"Type": "User", "message": self.message, **self.extra}
        return json_response(body, self.status, [
            ("x-amzn-ErrorType", self.error_type), ("x-amzn-RequestId", request_id)])


def invoked_function(request: Request) -> str | None:
    """The ``FunctionName`` of an Invoke API request (``Invoke`` or
    ``InvokeWithResponseStream``), or None for any other request."""
    if request.method != "POST":
        return None
    found = _PATH.fullmatch(request.path) or _STREAM_PATH.fullmatch(request.path)
    return found.group(1) if found else None


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
                   ) -> Callable[[Request, str], Awaitable[Response]]:
    """The handler of ``POST PATH`` (the function name comes from :func:`invoked_function`)."""

    async def handle(request: Request, function_name: str) -> Response:
        request_id = ids.request_id()
        try:
            return await _invoke(request, function_name, request_id)
        except ServiceError as error:
            return error.response(request_id)

    async def _invoke(request: Request, function_name: str, request_id: str) -> Response:
        qualifier = parse_qs(request.raw_query).get("Qualifier") if request.raw_query else None
        target = resolve_target(pools, function_name, qualifier[0] if qualifier else None)
        kind = request.header("X-Amz-Invocation-Type", "RequestResponse")
        streamed = _STREAM_PATH.fullmatch(request.path) is not None
        if kind not in ("RequestResponse", "DryRun") if streamed else kind not in (
                "RequestResponse", "Event", "DryRun"):
            raise ServiceError(400, "InvalidParameterValueException",
                               f"Unsupported invocation type: {kind}")
        payload = request.body or b"{}"
        limit = MAX_EVENT_BYTES if kind == "Event" else MAX_SYNC_BYTES
        if len(payload) > limit:
            raise ServiceError(413, "RequestTooLargeException",
                               f"Request must be smaller than {limit} bytes for the "
                               "InvokeFunction operation")
        check_json(payload)
        headers = [("x-amzn-RequestId", request_id), ("X-Amz-Executed-Version", target.version)]
        if kind == "DryRun":
            return Response(204, b"", headers)
        if kind == "Event":
            target.pool.invoke_event(payload, qualifier=target.qualifier,
                                     version=target.version)
            return Response(202, b"", headers)
        client_context = decode_client_context(request.header("X-Amz-Client-Context"))
        tail = request.header("X-Amz-Log-Type") == "Tail"
        try:
            if streamed:
                return await _invoke_streaming(target, payload, client_context, headers, tail)
            result = await target.pool.invoke(payload, qualifier=target.qualifier,
                                              version=target.version,
                                              client_context=client_context)
        except Throttled as exc:
            raise ServiceError(429, "TooManyRequestsException", "Rate Exceeded.",
                               Reason="ReservedFunctionConcurrentInvocationLimitExceeded",
                               ) from exc
        headers.append(("Content-Type", "application/json"))
        if result.error_type is not None:
            headers.append(("X-Amz-Function-Error", "Unhandled"))
        if tail:
            headers.append(("X-Amz-Log-Result", log_tail(result.record, result.log)))
        return Response(200, result.payload, headers)

    return handle


async def _invoke_streaming(target: Target, payload: bytes, client_context: str | None,
                            headers: list[tuple[str, str]], tail: bool) -> Response:
    started, done = await response_stream.invoke_streaming(
        lambda on_stream: target.pool.invoke(
            payload, qualifier=target.qualifier, version=target.version,
            client_context=client_context, on_stream=on_stream))
    if started is None:
        result = await done  # Throttled, raised here, is the caller's 429
        content_type = "application/json"
        first = b"" if result.error_type is not None else result.payload
        chunks: AsyncIterator[bytes] | None = None
    else:
        content_type, first, chunks = started.content_type, b"", aiter(started.body)

    async def events() -> AsyncIterator[bytes]:
        too_large: response_stream.StreamTooLarge | None = None
        try:
            if first:
                yield response_stream.payload_chunk(first)
            if chunks is not None and started is not None:
                try:
                    async for data in response_stream.capped(chunks, started.body):
                        yield response_stream.payload_chunk(data)
                except StreamBroken:  # the runtime's own error: InvokeComplete says which
                    pass
                except response_stream.StreamTooLarge as exc:
                    too_large = exc
            result = await done
            error, details = result.error_type, result.payload.decode(errors="replace")
            if too_large is not None:
                error, details = too_large.error_type, str(too_large)
            yield response_stream.invoke_complete(
                error, details if error else None,
                log_tail(result.record, result.log) if tail else None)
        finally:
            if started is not None:
                started.body.abort()  # the caller went away: a no-op once the stream ended

    return Response(200, b"", [*headers, ("Content-Type", content_type)], stream=events())


def _reject_constant(name: str) -> None:
    raise ValueError(f"Non-standard token '{name}'")


# Built once: json.loads(..., parse_constant=...) would build a decoder on every request.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _strict_loads(data: bytes) -> Any:
    """``json.loads(data)`` without NaN/Infinity (the same encoding detection)."""
    return _DECODER.decode(data.decode(json.detect_encoding(data), "surrogatepass"))


def check_json(payload: bytes) -> Any:
    """``payload`` parsed as Lambda parses an event (RFC 8259 only: no ``NaN`` or
    ``Infinity``; nesting bounded by the interpreter's recursion limit, ~1,000 levels like
    Jackson's default); else a 400 ``InvalidRequestContentException``."""
    try:
        return _strict_loads(payload)
    except RecursionError as exc:
        raise ServiceError(400, "InvalidRequestContentException",
                           _UNPARSABLE + "Document nesting depth exceeds the maximum allowed"
                           ) from exc
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, a non-standard token
        raise ServiceError(400, "InvalidRequestContentException",
                           _UNPARSABLE + str(exc).split(":")[0]) from exc


def decode_client_context(value: str | None) -> str | None:
    """``X-Amz-Client-Context`` is base64 of a JSON object; the runtime gets the JSON text,
    re-encoded as ASCII (``\\u`` escapes), so whatever it holds is a safe header value."""
    if not value:
        return None
    if len(value) > LAMBDA_CLIENT_CONTEXT_BYTES:
        raise ServiceError(400, "InvalidRequestContentException",
                           f"Client context must be at most {LAMBDA_CLIENT_CONTEXT_BYTES} "
                           "bytes of base64-encoded data")
    try:
        document = _strict_loads(base64.b64decode(value, validate=True))
    except (ValueError, RecursionError) as exc:
        document = exc
    if not isinstance(document, dict):
        raise ServiceError(400, "InvalidRequestContentException",
                           "Client context must be a valid Base64-encoded JSON object")
    return json.dumps(document, separators=(",", ":"))


def refusal(status: int, path: str) -> Response:
    """The front server's refusals: Lambda's error shape on the Invoke API's path, API
    Gateway's elsewhere."""
    if status == 413 and (_PATH.fullmatch(path) or _STREAM_PATH.fullmatch(path)):
        return ServiceError(413, "RequestTooLargeException",
                            f"Request must be smaller than {MAX_SYNC_BYTES} bytes for the "
                            "InvokeFunction operation").response(ids.request_id())
    return apigw.gateway_refusal(status)
