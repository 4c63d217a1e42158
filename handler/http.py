"""The transport-neutral request and response every event source converts to and from."""

from __future__ import annotations

from collections.abc import Mapping

from handler import json_codec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

JSON = "application/json"
NPY = "application/x-npy"
OCTET = "application/octet-stream"

NO_BODY = object()  # ``Request.parsed`` of a body not parsed yet (every HTTP-shaped source)
_TEXT = (JSON, "text/")  # response types sent as text (anything else: base64)


class Request:
    """One HTTP request, whatever event carried it. (Plain classes here and for ``Response``:
    a ``@dataclass`` costs about a millisecond at import, on every cold start.)"""

    __slots__ = ("body", "headers", "method", "parsed", "path", "query", "raw_response",
                 "received_epoch_ms", "streamed")

    def __init__(self, method: str, path: str, headers: Mapping[str, str] | None = None,
                 query: Mapping[str, str] | None = None, body: bytes = b"",
                 parsed: Any = NO_BODY, received_epoch_ms: float | None = None,
                 raw_response: bool = False) -> None:
        self.method = method
        self.path = path
        self.headers = {} if headers is None else headers  # lower-case names
        self.query = {} if query is None else query
        self.body = body
        # A body that arrived already parsed (direct invocation): no encode/decode round trip.
        self.parsed = parsed
        # When the front door received the request (API Gateway's timestamp), for queue time.
        self.received_epoch_ms = received_epoch_ms
        # Direct invocations return the payload object itself rather than an HTTP response.
        self.raw_response = raw_response
        # The transport sends a Response's ``chunks`` as they come (Lambda's response-streaming
        # mode, ``Service.stream``); otherwise it joins them into one body first.
        self.streamed = False

    @property
    def content_type(self) -> str:
        kind = self.headers.get("content-type", "")
        if kind == JSON:  # the usual header needs no parsing
            return kind
        return kind.split(";", 1)[0].strip().lower()


class Response:
    """One answer: a JSON-ready ``payload``, an encoded ``body``, or ``chunks`` (a streamed
    answer: an iterator of bytes that the transport joins, or sends as they come when the
    request is ``streamed``; closing it frees what its producer holds)."""

    __slots__ = ("body", "chunks", "headers", "non_finite", "payload", "status", "text")

    def __init__(self, status: int, payload: Any = None, body: bytes | None = None,
                 headers: dict[str, str] | None = None,
                 chunks: Iterator[bytes] | None = None) -> None:
        self.status = status
        self.chunks = chunks
        self.payload = payload  # JSON-ready object (encoded by ``body_bytes`` unless returned raw)
        self.body = body  # already-encoded body (binary codecs)
        self.headers = {} if headers is None else headers
        self.non_finite = 0  # NaN / ±Infinity written as null (RFC 8259 has neither)
        self.text: str | None = None  # the body as text, when encoded here from the payload

    def body_bytes(self) -> bytes:
        if self.body is None:
            text, self.payload, self.non_finite = json_codec.dumps(self.payload)
            self.body, self.text = text.encode(), text
            self.headers.setdefault("content-type", JSON)
        return self.body

    def copy(self) -> Response:
        """An encoded response with its own headers (a cached answer served again)."""
        twin = Response(self.status, body=self.body, headers=dict(self.headers))
        twin.non_finite = self.non_finite
        return twin

    @property
    def is_binary(self) -> bool:
        return not self.headers.get("content-type", JSON).startswith(_TEXT)

    @property
    def sent_in_base64(self) -> bool:
        """Whether the front door gets this body base64-encoded: no JSON text written here,
        and a binary type or a content coding (gzip) of any type."""
        return self.text is None and (self.is_binary or "content-encoding" in self.headers)
