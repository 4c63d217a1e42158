"""The HTTP front: the template's API routes (and Function URLs) served like API Gateway.

Routes are matched as API Gateway does: the most specific path wins (literal segments over
``{param}`` over greedy ``{proxy+}``, then the catch-all ``$default`` route), and an exact
method over ``ANY``. The request becomes a payload 2.0 (HTTP API, Function URL) or 1.0
(REST API) event, the function is invoked (through its alias when it has one, as the
API's integration does), and the output is mapped back with :mod:`.apigw`'s rules.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import unquote

from onnx_lambda.emulator import apigw, response_stream
from onnx_lambda.emulator.http11 import OWN_HEADERS, Request, Response
from onnx_lambda.emulator.http_stream import BodyStream, StreamBroken
from onnx_lambda.emulator.limits import (
    HTTP_API_TIMEOUT_S,
    LAMBDA_SYNC_PAYLOAD_BYTES,
    REST_API_TIMEOUT_S,
)
from onnx_lambda.emulator.pool import InvokeResult, Throttled
from onnx_lambda.emulator.template import RouteSpec

MAX_REQUEST_BYTES = LAMBDA_SYNC_PAYLOAD_BYTES  # the event, once built, must fit Lambda's limit

Invoker = Callable[[str, bytes], Awaitable[InvokeResult]]
# invoke(function, payload, on_stream): see FunctionPool.invoke
StreamInvoker = Callable[[str, bytes, Callable[[str, BodyStream], None] | None],
                         Awaitable[InvokeResult]]


@dataclass(frozen=True)
class CompiledRoute:
    spec: RouteSpec
    pattern: re.Pattern[str]
    names: tuple[str, ...]
    rank: tuple[int, int, int, int]

    @property
    def route_key(self) -> str:
        spec = self.spec
        return "$default" if spec.path == "$default" else f"{spec.method} {spec.path}"


def compile_route(spec: RouteSpec) -> CompiledRoute:
    if spec.path == "$default":
        return CompiledRoute(spec, re.compile(r"/.*"), (), (1, 0, 0, 1))
    parts, names, literal, greedy = [], [], 0, 0
    for segment in spec.path.strip("/").split("/"):
        param = re.fullmatch(r"\{([^}]+?)(\+?)\}", segment)
        if param and param.group(2):
            parts.append("(.+)")
            greedy = 1
        elif param:
            parts.append("([^/]+)")
        else:
            parts.append(re.escape(segment))
            literal += 1
        if param:
            names.append(param.group(1))
    pattern = re.compile("/" + "/".join(parts) + "/?")
    return CompiledRoute(spec, pattern, tuple(names),
                         (0, greedy, -literal, int(spec.method == "ANY")))


def _segments(raw_path: str) -> str:
    """``raw_path`` decoded segment by segment, with ``%`` and ``/`` inside a segment
    re-escaped: an encoded slash (``%2F``) stays inside its segment when routing."""
    return "/".join(unquote(segment).replace("%", "%25").replace("/", "%2F")
                    for segment in raw_path.split("/"))


def match(routes: list[CompiledRoute], method: str, raw_path: str,
          ) -> tuple[CompiledRoute, dict[str, str]] | None:
    """The route API Gateway would pick for ``method raw_path`` (as sent, percent-encoded),
    with its path parameters (decoded)."""
    encoded = "%" in raw_path
    path = _segments(raw_path) if encoded else raw_path
    for route in routes:  # sorted by rank
        if route.spec.method not in ("ANY", method):
            continue
        found = route.pattern.fullmatch(path)
        if found:
            values = [unquote(v) for v in found.groups()] if encoded else found.groups()
            return route, dict(zip(route.names, values, strict=True))
    return None


def _read(request: Request, path: str) -> apigw.HttpRequest:
    return apigw.HttpRequest(
        method=request.method, path=path, raw_query=request.raw_query,
        headers=request.headers, body=request.body, source_ip=request.peer,
        protocol=f"HTTP/{request.version}")


def _send(response: apigw.HttpResponse, extra: tuple[str, str] | None = None) -> Response:
    """The HTTP response; ``extra`` is added unless the function set that header itself."""
    headers = [(name, value) for name, value in response.headers
               if name.lower() not in OWN_HEADERS]
    if extra is not None and all(name.lower() != extra[0].lower() for name, _ in headers):
        headers.append(extra)
    return Response(response.status, response.body, headers)


async def _call(request: Request, invoke: Invoker, function: str, event: dict[str, object],
                version: str, timeout_s: float, request_id: tuple[str, str],
                throttled: apigw.HttpResponse | None = None) -> Response:
    """Invoke ``function`` with ``event`` and map its output, as the API's integration does;
    ``throttled``: the answer when the function is at its concurrency limit (API Gateway's
    500 unless given: a Function URL's is its own, ``apigw.url_throttle``).

    At ``timeout_s`` the client gets API Gateway's timeout answer while the invocation runs
    to its end (it is also not cancelled when the client goes away: the front's server keeps
    handlers running). The invocation is awaited in this task: a separate task to outlive a
    timeout cost three more event-loop rounds per request, ~0.1 ms at p50 here."""
    payload = json.dumps(event).encode()
    if len(payload) > MAX_REQUEST_BYTES:
        return _send(apigw.gateway_error(version, 413), request_id)
    timer = asyncio.get_running_loop().call_later(timeout_s, lambda: request.answer_early(
        _send(apigw.gateway_error(version, 503 if version == "2.0" else 504), request_id)))
    try:
        result = await invoke(function, payload)
    except Throttled:
        return _send(throttled or apigw.gateway_error(version, 500), request_id)
    finally:
        timer.cancel()
    if result.error_type is not None:
        return _send(apigw.gateway_error(version), request_id)
    return _send(apigw.map_response(version, result.payload), request_id)


def api_handler(routes: list[RouteSpec], invoke: Invoker,
                ) -> Callable[[Request], Awaitable[Response]]:
    """The handler serving every route of the template's APIs."""
    compiled = sorted((compile_route(r) for r in routes), key=lambda r: r.rank)

    async def handle(request: Request) -> Response:
        found = match(compiled, request.method, request.raw_path)
        if found is None:
            return _send(apigw.gateway_error("2.0", 404))
        route, params = found
        spec = route.spec
        # HTTP APIs pass the path decoded, REST APIs as sent (live captures, see docs)
        req = _read(request, request.raw_path if spec.kind == "rest" else request.path)
        domain = request.header("Host") or "localhost"
        version = spec.payload_version
        if version == "1.0":
            event = apigw.rest_api_event(
                req, resource=spec.path, stage=spec.stage, api_id="local",
                path_parameters=params, binary_media_types=spec.binary_media_types,
                domain=domain)
            if spec.kind == "http-api":
                event["version"] = "1.0"
        else:
            event = apigw.http_api_event(req, route_key=route.route_key, stage=spec.stage,
                                         api_id="local", path_parameters=params, domain=domain)
        if spec.kind == "rest":
            return await _call(request, invoke, spec.function, event, version,
                               REST_API_TIMEOUT_S, ("x-amzn-RequestId", req.request_id))
        return await _call(request, invoke, spec.function, event, version, HTTP_API_TIMEOUT_S,
                           ("apigw-requestid", req.request_id))

    return handle


async def _call_streaming(invoke: StreamInvoker, function: str, event: dict[str, object],
                          request_id: tuple[str, str]) -> Response:
    """A Function URL in ``RESPONSE_STREAM`` mode: the prelude's status and headers as soon as
    the runtime has sent them, then the body chunk by chunk. An error after the first byte
    cuts the body off (the client never sees it complete); a client that goes away drops the
    runtime's response connection (see :mod:`.response_stream`)."""
    payload = json.dumps(event).encode()
    if len(payload) > MAX_REQUEST_BYTES:
        return _send(apigw.gateway_error("2.0", 413), request_id)
    try:
        started, done = await response_stream.invoke_streaming(
            lambda on_stream: invoke(function, payload, on_stream))
        if started is None:  # a buffered answer, or an error before any byte
            result = await done
    except Throttled:  # Lambda's own answer: a Function URL has no gateway in front
        return _send(apigw.url_throttle(), request_id)
    if started is None:
        if result.error_type is not None:
            return _send(apigw.gateway_error("2.0"), request_id)
        return _send(apigw.map_response("2.0", result.payload), request_id)
    chunks = aiter(started.body)
    status, headers, first = 200, [("Content-Type", started.content_type)], b""
    if started.content_type == response_stream.HTTP_INTEGRATION:
        try:
            document, first = await response_stream.read_prelude(chunks)
        except Exception:  # BadPrelude, or the stream broke before it
            started.body.abort()
            await done
            return _send(apigw.gateway_error("2.0"), request_id)
        status, headers = response_stream.prelude_head(document)
    if status in (204, 304):  # no body allowed (RFC 9110): whatever comes is dropped
        try:
            async for _ in response_stream.relay(first, chunks, started.body, done):
                pass
        except (response_stream.FunctionFailed, StreamBroken):
            return _send(apigw.gateway_error("2.0"), request_id)
        return _send(apigw.HttpResponse(status, headers, b""), request_id)
    response = _send(apigw.HttpResponse(status, headers, b""), request_id)
    response.stream = response_stream.relay(first, chunks, started.body, done)
    return response


def function_url_handler(function: str, invoke: StreamInvoker, streaming: bool = False,
                         ) -> Callable[[Request], Awaitable[Response]]:
    """The handler of one function's URL (every path, payload 2.0); ``streaming``: its
    InvokeMode is RESPONSE_STREAM."""
    domain = apigw.function_url_domain(function)

    async def buffered(name: str, payload: bytes) -> InvokeResult:
        return await invoke(name, payload, None)

    async def handle(request: Request) -> Response:
        req = _read(request, request.raw_path)  # Function URLs keep the encoding
        event = apigw.http_api_event(req, route_key="$default", stage="$default",
                                     api_id=domain.split(".")[0], path_parameters=None,
                                     domain=domain, account_id="anonymous")
        if streaming:
            return await _call_streaming(invoke, function, event,
                                         ("x-amzn-RequestId", req.request_id))
        return await _call(request, buffered, function, event, "2.0", 900.0,
                           ("x-amzn-RequestId", req.request_id), apigw.url_throttle())

    return handle
