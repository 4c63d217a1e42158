"""Streamed invocations seen from the caller's side: a Function URL in ``RESPONSE_STREAM`` mode
and the Invoke API's ``InvokeWithResponseStream``.

:func:`invoke_streaming` starts an invocation and returns as soon as the runtime starts a
streaming response (or when the invocation ends without one: a buffered answer, an error
before the first byte). The caller then relays the body as it comes:

- a Function URL reads the HTTP integration prelude (JSON ``statusCode``, ``headers``,
  ``cookies``, then eight NUL bytes; AWS: "Writing response streaming-enabled Lambda
  functions") into the HTTP response's status and headers, and sends the rest chunk by chunk;
- ``InvokeWithResponseStream`` frames each piece as a ``PayloadChunk`` event and ends with
  ``InvokeComplete`` (``ErrorCode``, ``ErrorDetails``, ``LogResult``), in the
  ``application/vnd.amazon.eventstream`` encoding botocore's ``EventStream`` reads.

Both relay through :func:`capped`: Lambda's 200 MB per streamed response, and its bandwidth
cap past the first 6 MB (2 MB/s). A caller that goes away closes the relay: the runtime's
response connection is dropped at its next write (which fails, so the handler's generator is
closed; a stream that ends instead is complete) and the environment serves the next request
(AWS does not interrupt a stream whose caller left: see docs/explanation/emulator.md,
"Response streaming").
"""

from __future__ import annotations

import asyncio
import binascii
import json
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NamedTuple

from onnx_lambda.emulator.http_stream import BodyStream
from onnx_lambda.emulator.limits import (
    LAMBDA_STREAM_BURST_BYTES,
    LAMBDA_STREAM_BYTES_PER_S,
    LAMBDA_STREAM_RESPONSE_BYTES,
)
from onnx_lambda.emulator.pool import InvokeResult

HTTP_INTEGRATION = "application/vnd.awslambda.http-integration-response"
DELIMITER = b"\0" * 8
# Function URLs and API Gateway look for the prelude in the stream's first 16 KB
MAX_PRELUDE_BYTES = 16 * 1024
_RUNNING: set[asyncio.Future[InvokeResult]] = set()  # invocations whose caller has moved on


class Started(NamedTuple):
    content_type: str
    body: BodyStream


class BadPrelude(Exception):
    """The stream's HTTP integration prelude is missing or malformed."""


class StreamTooLarge(Exception):
    """Past Lambda's streamed response limit: the stream was cut there."""

    error_type = "Function.ResponseSizeTooLarge"


async def capped(chunks: AsyncIterator[bytes], body: BodyStream, sent: int = 0,
                 ) -> AsyncIterator[bytes]:
    """``chunks`` at the pace Lambda streams them (uncapped for the first 6 MB, then 2 MB/s)
    and up to its 200 MB; ``sent``: bytes already relayed (the prelude)."""
    loop = asyncio.get_running_loop()
    capped_from: float | None = None
    async for data in chunks:
        sent += len(data)
        if sent > LAMBDA_STREAM_RESPONSE_BYTES:
            body.abort()
            raise StreamTooLarge(f"the streamed response passed {LAMBDA_STREAM_RESPONSE_BYTES} "
                                 "bytes")
        if sent > LAMBDA_STREAM_BURST_BYTES:
            capped_from = loop.time() if capped_from is None else capped_from
            due = capped_from + (sent - LAMBDA_STREAM_BURST_BYTES) / LAMBDA_STREAM_BYTES_PER_S
            if due > loop.time():
                await asyncio.sleep(due - loop.time())
        yield data


async def invoke_streaming(invoke: Callable[[Callable[[str, BodyStream], None]],
                                            Awaitable[InvokeResult]],
                           ) -> tuple[Started | None, asyncio.Future[InvokeResult]]:
    """Run ``invoke(on_stream)``; returns when the runtime starts streaming (``Started``) or
    when the invocation has ended without a stream (None), and the invocation's outcome:
    shielded, so that a caller cancelled while it waits (a client that leaves closes the
    relay, e.g. OpenAI's SDK at ``[DONE]``) does not cancel the invocation with it."""
    loop = asyncio.get_running_loop()
    started: asyncio.Future[Started] = loop.create_future()

    def on_stream(content_type: str, body: BodyStream) -> None:
        if not started.done():
            started.set_result(Started(content_type, body))

    task = asyncio.ensure_future(invoke(on_stream))
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)
    await asyncio.wait((task, started), return_when=asyncio.FIRST_COMPLETED)
    outcome = asyncio.shield(task)
    if started.done():
        return started.result(), outcome
    started.cancel()
    return None, outcome


async def read_prelude(chunks: AsyncIterator[bytes]) -> tuple[dict[str, Any], bytes]:
    """The prelude document and the body bytes read past it."""
    buffered = b""
    async for data in chunks:
        buffered += data
        head, found, rest = buffered.partition(DELIMITER)
        if found:
            try:
                document = json.loads(head)
            except ValueError as exc:
                raise BadPrelude(f"the prelude is not JSON: {exc}") from exc
            if not isinstance(document, dict):
                raise BadPrelude("the prelude is not a JSON object")
            return document, rest
        if len(buffered) > MAX_PRELUDE_BYTES:
            raise BadPrelude(f"no prelude in the first {MAX_PRELUDE_BYTES} bytes")
    raise BadPrelude("the stream ended before its prelude")


def prelude_head(document: dict[str, Any]) -> tuple[int, list[tuple[str, str]]]:
    """Status and headers of a Function URL response from the prelude (cookies become
    ``Set-Cookie`` headers)."""
    status = document.get("statusCode", 200)
    headers = [(str(k), str(v)) for k, v in (document.get("headers") or {}).items()]
    headers += [("Set-Cookie", str(c)) for c in document.get("cookies") or ()]
    return int(status) if isinstance(status, int) else 200, headers


async def relay(first: bytes, chunks: AsyncIterator[bytes], body: BodyStream,
                done: asyncio.Future[InvokeResult]) -> AsyncIterator[bytes]:
    """The body for the caller; raises after the last byte when the function failed
    mid-stream; closed early (the caller went away), it drops the runtime's connection."""
    try:
        if first:
            yield first
        async for data in capped(chunks, body, len(first)):
            yield data
        result = await done
        if result.error_type is not None:
            raise FunctionFailed(result)
    finally:
        body.abandon()  # a no-op once the stream has ended


class FunctionFailed(Exception):
    def __init__(self, result: InvokeResult) -> None:
        super().__init__(result.error_type)
        self.result = result


# -- application/vnd.amazon.eventstream ------------------------------------------------------
def event_frame(event_type: str, payload: bytes, content_type: str) -> bytes:
    """One event message: prelude (total and header lengths, their CRC32), string headers,
    payload, CRC32 of all before it (big-endian; the AWS event stream encoding)."""
    headers = b"".join(_header(name, value) for name, value in (
        (":event-type", event_type), (":content-type", content_type),
        (":message-type", "event")))
    total = 12 + len(headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    message = prelude + headers + payload
    return message + struct.pack(">I", binascii.crc32(message))


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return (struct.pack(">B", len(raw_name)) + raw_name + b"\x07"  # 7: string
            + struct.pack(">H", len(raw_value)) + raw_value)


def payload_chunk(data: bytes) -> bytes:
    return event_frame("PayloadChunk", data, "application/octet-stream")


def invoke_complete(error_code: str | None, error_details: str | None,
                    log_result: str | None) -> bytes:
    document = {key: value for key, value in (
        ("ErrorCode", error_code), ("ErrorDetails", error_details),
        ("LogResult", log_result)) if value is not None}
    return event_frame("InvokeComplete", json.dumps(document).encode(), "application/json")
