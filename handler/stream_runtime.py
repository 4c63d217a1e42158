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
or a buffered answer (sent as one chunk). When the caller goes away mid-stream the response
connection fails: the chunk generator is closed, so whatever holds state (a generation's KV
cache) is freed, and the loop takes the next invocation.
"""

from __future__ import annotations

import base64
import http.client
import importlib
import json
import os
import socket
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from handler.lifecycle import stop_cleanly_on_sigterm
from handler.streaming import CONTENT_TYPE, StreamedResponse, from_result, prelude

PREFIX = "/2018-06-01/runtime"
DEFAULT_HANDLER = "handler.app.stream_handler"
ERROR_TYPE = "Lambda-Runtime-Function-Error-Type"
ERROR_BODY = "Lambda-Runtime-Function-Error-Body"
# Lambda's Runtime API reads headers up to 1 MiB (awslambdaric trims X-Ray causes to that)
MAX_TRAILER_BYTES = 1024 * 1024 - 1024


class Context:
    """What a handler reads of awslambdaric's ``LambdaContext``."""

    def __init__(self, headers: http.client.HTTPMessage) -> None:
        self.aws_request_id = headers.get("Lambda-Runtime-Aws-Request-Id", "")
        self.invoked_function_arn = headers.get("Lambda-Runtime-Invoked-Function-Arn")
        self._deadline_ms = int(headers.get("Lambda-Runtime-Deadline-Ms") or 0)
        environ = os.environ
        self.function_name = environ.get("AWS_LAMBDA_FUNCTION_NAME")
        self.function_version = environ.get("AWS_LAMBDA_FUNCTION_VERSION")
        self.memory_limit_in_mb = environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
        self.log_group_name = environ.get("AWS_LAMBDA_LOG_GROUP_NAME")
        self.log_stream_name = environ.get("AWS_LAMBDA_LOG_STREAM_NAME")
        client_context = headers.get("Lambda-Runtime-Client-Context")
        self.client_context = json.loads(client_context) if client_context else None
        self.identity = None

    def get_remaining_time_in_millis(self) -> int:
        return max(self._deadline_ms - int(time.time() * 1000), 0)


class CallerGone(Exception):
    """The response connection failed mid-stream: nobody reads the rest."""


def error_document(exc: BaseException) -> dict[str, Any]:
    """awslambdaric's error shape: ``errorMessage``, ``errorType``, ``stackTrace``."""
    return {"errorMessage": str(exc), "errorType": type(exc).__name__,
            "stackTrace": traceback.format_tb(exc.__traceback__)}


class RuntimeApi:
    """One keep-alive connection to the Runtime API, re-opened after a failure."""

    def __init__(self, address: str) -> None:
        self._address = address
        self._conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            conn = http.client.HTTPConnection(self._address)  # no timeout: /next blocks
            conn.connect()
            assert conn.sock is not None
            # each chunk leaves at once, not after the peer's delayed ACK (Nagle)
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._conn = conn
        return self._conn

    def drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _post(self, path: str, body: bytes, headers: dict[str, str]) -> None:
        conn = self._connection()
        try:
            conn.request("POST", PREFIX + path, body, headers)
            conn.getresponse().read()
        except (OSError, http.client.HTTPException):
            self.drop()

    def next(self) -> tuple[bytes, http.client.HTTPMessage]:
        conn = self._connection()
        try:
            conn.request("GET", PREFIX + "/invocation/next")
            response = conn.getresponse()
            return response.read(), response.headers
        except (OSError, http.client.HTTPException):
            self.drop()
            raise

    def init_error(self, exc: BaseException) -> None:
        document = error_document(exc)
        self._post("/init/error", json.dumps(document).encode(),
                   {"Content-Type": "application/json", ERROR_TYPE: "Runtime.InitError"})

    def invocation_error(self, request_id: str, exc: BaseException) -> None:
        self._post(f"/invocation/{request_id}/error", json.dumps(error_document(exc)).encode(),
                   {"Content-Type": "application/json", ERROR_TYPE: "Unhandled"})

    def stream(self, request_id: str, response: StreamedResponse, first: bytes,
               rest: Iterator[bytes]) -> None:
        """POST the streaming response: prelude + ``first``, then each chunk of ``rest`` as it
        comes; an exception from ``rest`` ends the stream with the error trailers. Raises
        :class:`CallerGone` when the connection fails (the caller went away)."""
        conn = self._connection()
        try:
            conn.putrequest("POST", f"{PREFIX}/invocation/{request_id}/response",
                            skip_accept_encoding=True)
            for name, value in (("Lambda-Runtime-Function-Response-Mode", "streaming"),
                                ("Transfer-Encoding", "chunked"),
                                ("Content-Type", CONTENT_TYPE),
                                ("Trailer", f"{ERROR_TYPE}, {ERROR_BODY}")):
                conn.putheader(name, value)
            conn.endheaders()
            send = conn.send
            send(_chunk(prelude(response) + first))
            trailers = b""
            while True:
                try:
                    data = next(rest)
                except StopIteration:
                    break
                except Exception as exc:  # the handler failed mid-stream: Lambda's trailers
                    trailers = _trailers(exc)
                    _log_error(exc)
                    break
                if data:
                    send(_chunk(data))
            send(b"0\r\n" + trailers + b"\r\n")
            conn.getresponse().read()
        except (OSError, http.client.HTTPException) as exc:
            self.drop()
            raise CallerGone(str(exc)) from exc


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
    sys.stdout.write(json.dumps({"level": level, "message": message, **fields}) + "\n")


def load_handler(name: str) -> Callable[[Any, Any], Any]:
    module, _, function = name.rpartition(".")
    if not module:
        raise ValueError(f"bad handler {name!r}: expected module.function")
    found: Callable[[Any, Any], Any] = getattr(importlib.import_module(module), function)
    return found


def serve(api: RuntimeApi, handle: Callable[[Any, Any], Any],
          invocations: int | None = None) -> None:
    """Answer invocations until ``invocations`` have been served (None: forever)."""
    served = 0
    while invocations is None or served < invocations:
        payload, headers = api.next()
        served += 1
        context = Context(headers)
        request_id = context.aws_request_id
        os.environ["_X_AMZN_TRACE_ID"] = headers.get("Lambda-Runtime-Trace-Id", "")
        chunks: Iterator[bytes] | None = None
        try:
            result = handle(json.loads(payload), context)
            response = result if isinstance(result, StreamedResponse) else from_result(result)
            chunks = iter(response.chunks)
            first = next(chunks, b"")  # a failure before any byte is a plain error
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
    close = getattr(chunks, "close", None)
    if close is not None:
        close()


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
