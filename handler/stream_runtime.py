"""The runtime loop for response-streaming mode: ``python -m handler.stream_runtime [HANDLER]``.

awslambdaric (4.x) posts one buffered ``/response`` per invocation, so a handler's chunks could
never reach the caller before it returns. This loop speaks the Runtime API itself, standard
library only, and streams each answer (AWS: "Implementing response streaming in a custom
runtime", https://docs.aws.amazon.com/lambda/latest/dg/runtimes-custom.html#runtimes-custom-response-streaming,
and the API reference, https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html):

- ``GET /2018-06-01/runtime/invocation/next``: the event, and its request id, deadline and
  function ARN as headers;
- ``POST /2018-06-01/runtime/invocation/{id}/response`` with
  ``Lambda-Runtime-Function-Response-Mode: streaming`` and ``Transfer-Encoding: chunked``, the
  content type ``application/vnd.awslambda.http-integration-response`` (the JSON prelude with
  status and headers, eight NUL bytes, then the body: :mod:`handler.streaming`), each chunk
  sent as the handler yields it;
- an error before the first byte is posted to ``.../{id}/error`` as awslambdaric posts it; one
  after it ends the stream with the declared trailers ``Lambda-Runtime-Function-Error-Type``
  and ``Lambda-Runtime-Function-Error-Body`` (base64 of the error document);
- an init error (the handler module fails to import) goes to ``/runtime/init/error``.

HANDLER (``module.function``; default ``handler.app.stream_handler``, also read from
``_HANDLER`` when no argument is given) returns a :class:`~handler.streaming.StreamedResponse`
or a buffered answer (sent as one chunk). When the response connection fails mid-stream (the
local emulator drops it when its caller goes away; Lambda itself streams on and bills the
full duration), the chunk generator is closed, so whatever holds state (a generation's KV
cache) is freed, and the loop takes the next invocation.
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import socket
import sys
import time

from handler.lifecycle import stop_cleanly_on_sigterm
from handler.streaming import CONTENT_TYPE, StreamedResponse, from_result, prelude

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing's import is a cold-start cost: the runtime needs no annotations)
    from collections.abc import Callable, Iterator, Mapping
    from typing import Any, BinaryIO

PREFIX = "/2018-06-01/runtime"
DEFAULT_HANDLER = "handler.app.stream_handler"
ERROR_TYPE = "Lambda-Runtime-Function-Error-Type"
ERROR_BODY = "Lambda-Runtime-Function-Error-Body"
# Lambda's Runtime API reads headers up to 1 MiB (awslambdaric trims X-Ray causes to that)
MAX_TRAILER_BYTES = 1024 * 1024 - 1024
MAX_LINE = 1024 * 1024 + 1024  # a header line of the Runtime API's answers


class Context:
    """What a handler reads of awslambdaric's ``LambdaContext``."""

    def __init__(self, headers: Mapping[str, str]) -> None:  # (names in lower case)
        self.aws_request_id = headers.get("lambda-runtime-aws-request-id", "")
        self.invoked_function_arn = headers.get("lambda-runtime-invoked-function-arn")
        self._deadline_ms = int(headers.get("lambda-runtime-deadline-ms") or 0)
        environ = os.environ
        self.function_name = environ.get("AWS_LAMBDA_FUNCTION_NAME")
        self.function_version = environ.get("AWS_LAMBDA_FUNCTION_VERSION")
        self.memory_limit_in_mb = environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
        self.log_group_name = environ.get("AWS_LAMBDA_LOG_GROUP_NAME")
        self.log_stream_name = environ.get("AWS_LAMBDA_LOG_STREAM_NAME")
        client_context = headers.get("lambda-runtime-client-context")
        self.client_context = json.loads(client_context) if client_context else None
        self.identity = None

    def get_remaining_time_in_millis(self) -> int:
        return max(self._deadline_ms - int(time.time() * 1000), 0)


class CallerGone(Exception):
    """The response connection failed mid-stream: nobody reads the rest."""


def error_document(exc: BaseException) -> dict[str, Any]:
    """awslambdaric's error shape: ``errorMessage``, ``errorType``, ``stackTrace``."""
    import traceback  # only when something failed

    return {"errorMessage": str(exc), "errorType": type(exc).__name__,
            "stackTrace": traceback.format_tb(exc.__traceback__)}


class RuntimeApi:
    """HTTP/1.1 over one keep-alive socket to the Runtime API, re-opened after a failure.
    Written on the socket rather than with ``http.client``: that import (with ``ssl`` and
    ``email``) costs tens of milliseconds of every cold start, for three fixed requests."""

    def __init__(self, address: str) -> None:
        host, _, port = address.rpartition(":")
        self._address = (host, int(port))
        self._host = address.encode()
        self._sock: socket.socket | None = None
        self._reader: BinaryIO | None = None

    def _socket(self) -> socket.socket:
        if self._sock is None:
            sock = socket.create_connection(self._address)  # no timeout: /next blocks
            # each chunk leaves at once, not after the peer's delayed ACK (Nagle)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sock, self._reader = sock, sock.makefile("rb")
        return self._sock

    def drop(self) -> None:
        if self._sock is not None:
            assert self._reader is not None
            self._reader.close()
            self._sock.close()
            self._sock = self._reader = None

    def _head(self, method: str, path: str, headers: list[tuple[str, str]]) -> bytes:
        lines = [f"{method} {PREFIX}{path} HTTP/1.1", f"Host: {self._host.decode()}",
                 *(f"{name}: {value}" for name, value in headers)]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _answer(self) -> tuple[int, dict[str, str], bytes]:
        """Read one response: status, headers (lower-case names), body (sized or chunked)."""
        reader = self._reader
        assert reader is not None
        status_line = reader.readline(MAX_LINE)
        if not status_line:
            raise ConnectionError("the Runtime API closed the connection")
        status = int(status_line.split()[1])
        headers: dict[str, str] = {}
        while (line := reader.readline(MAX_LINE)).strip():
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while size := int(reader.readline(MAX_LINE).split(b";")[0], 16):
                parts.append(reader.read(size))
                reader.readline(MAX_LINE)
            while reader.readline(MAX_LINE).strip():  # trailers
                pass
            body = b"".join(parts)
        else:
            body = reader.read(int(headers.get("content-length") or 0))
        if headers.get("connection", "").lower() == "close":
            self.drop()
        return status, headers, body

    def _post(self, path: str, body: bytes, headers: list[tuple[str, str]]) -> None:
        try:
            self._socket().sendall(self._head("POST", path, [
                *headers, ("Content-Length", str(len(body)))]) + body)
            self._answer()
        except (OSError, ValueError):
            self.drop()

    def next(self) -> tuple[bytes, dict[str, str]]:
        """The next invocation: its event and headers (lower-case names)."""
        try:
            self._socket().sendall(self._head("GET", "/invocation/next", []))
            status, headers, body = self._answer()
        except (OSError, ValueError):
            self.drop()
            raise
        if status != 200:
            raise RuntimeError(f"/next answered {status}: {body[:200]!r}")
        return body, headers

    def init_error(self, exc: BaseException) -> None:
        document = error_document(exc)
        self._post("/init/error", json.dumps(document).encode(),
                   [("Content-Type", "application/json"), (ERROR_TYPE, "Runtime.InitError")])

    def invocation_error(self, request_id: str, exc: BaseException) -> None:
        self._post(f"/invocation/{request_id}/error", json.dumps(error_document(exc)).encode(),
                   [("Content-Type", "application/json"), (ERROR_TYPE, "Unhandled")])

    def stream(self, request_id: str, response: StreamedResponse, first: bytes,
               rest: Iterator[bytes]) -> None:
        """POST the streaming response: prelude + ``first``, then each chunk of ``rest`` as it
        comes; an exception from ``rest`` ends the stream with the error trailers. Raises
        :class:`CallerGone` when the connection fails (the caller went away)."""
        try:
            send = self._socket().sendall
            send(self._head("POST", f"/invocation/{request_id}/response", [
                ("Lambda-Runtime-Function-Response-Mode", "streaming"),
                ("Transfer-Encoding", "chunked"), ("Content-Type", CONTENT_TYPE),
                ("Trailer", f"{ERROR_TYPE}, {ERROR_BODY}")])
                 + _chunk(prelude(response) + first))
            trailers = b""
            while True:
                try:
                    data = _bytes(next(rest))
                except StopIteration:
                    break
                except Exception as exc:  # the handler failed mid-stream: Lambda's trailers
                    trailers = _trailers(exc)
                    _log_error(exc)
                    break
                if data:
                    send(_chunk(data))
            send(b"0\r\n" + trailers + b"\r\n")
            self._answer()
        except (OSError, ValueError) as exc:
            self.drop()
            raise CallerGone(str(exc)) from exc


def _bytes(data: object) -> bytes:
    """A chunk as the handler yielded it: bytes (or a bytes-like view), nothing else."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"a streamed chunk must be bytes, not {type(data).__name__}")


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _trailers(exc: BaseException) -> bytes:
    document = json.dumps(error_document(exc)).encode()
    body = base64.b64encode(document)
    if len(body) > MAX_TRAILER_BYTES:  # the trace goes first, the type and message stay
        body = base64.b64encode(json.dumps({**error_document(exc), "stackTrace": []},
                                           ).encode())[:MAX_TRAILER_BYTES]
    name = type(exc).__name__.encode("ascii", "replace")
    return b"%s: %s\r\n%s: %s\r\n" % (ERROR_TYPE.encode(), name, ERROR_BODY.encode(), body)


def _log_error(exc: BaseException) -> None:
    document = error_document(exc)
    sys.stdout.write(f"[ERROR] {document['errorType']}: {document['errorMessage']}\n")
    sys.stdout.flush()


def _log_shutdown(level: str, message: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"level": level.upper(), "message": message, **fields}) + "\n")


def load_handler(name: str) -> Callable[[Any, Any], Any]:
    module, _, function = name.rpartition(".")
    if not module:
        raise ValueError(f"bad handler {name!r}: expected module.function")
    found: Callable[[Any, Any], Any] = getattr(importlib.import_module(module), function)
    return found


def serve(api: RuntimeApi, handle: Callable[[Any, Any], Any]) -> None:
    """Answer invocations, one after the other, for as long as the process lives."""
    while True:
        payload, headers = api.next()
        context = Context(headers)
        request_id = context.aws_request_id
        os.environ["_X_AMZN_TRACE_ID"] = headers.get("lambda-runtime-trace-id", "")
        chunks: Iterator[bytes] | None = None
        try:
            result = handle(json.loads(payload), context)
            response = result if isinstance(result, StreamedResponse) else from_result(result)
            chunks = iter(response.chunks)
            first = _bytes(next(chunks, b""))  # a failure before any byte is a plain error
        except Exception as exc:
            _close(chunks)
            _log_error(exc)
            api.invocation_error(request_id, exc)
            continue
        try:
            api.stream(request_id, response, first, chunks)
        except CallerGone:
            pass
        finally:
            _close(chunks)


def _close(chunks: Iterator[bytes] | None) -> None:
    """Close the handler's generator (its ``finally`` frees what it holds); a failure there
    is logged, never the runtime's end."""
    close = getattr(chunks, "close", None)
    if close is not None:
        try:
            close()
        except Exception as exc:
            _log_error(exc)


def main(argv: list[str]) -> int:
    api = RuntimeApi(os.environ["AWS_LAMBDA_RUNTIME_API"])
    name = argv[1] if len(argv) > 1 else os.environ.get("_HANDLER") or DEFAULT_HANDLER
    # before the import: handler.app installs its own (with the service's logger) over it
    stop_cleanly_on_sigterm(_log_shutdown)
    try:
        handle = load_handler(name)
    except Exception as exc:
        _log_error(exc)
        api.init_error(exc)
        return 1
    serve(api, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
