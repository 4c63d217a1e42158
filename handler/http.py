"""The transport-neutral request and response every event source converts to and from."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

JSON = "application/json"
NPY = "application/x-npy"
OCTET = "application/octet-stream"

_NO_BODY = object()
# One encoder for every response: json.dumps(..., separators=...) would build one per call.
ENCODER = json.JSONEncoder(separators=(",", ":"))


@dataclass
class Request:
    method: str
    path: str
    headers: Mapping[str, str] = field(default_factory=dict)  # lower-case names
    query: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    # A body that arrived already parsed (direct invocation): no encode/decode round trip.
    parsed: Any = _NO_BODY
    # When the front door received the request (API Gateway's timestamp), for queue time.
    received_epoch_ms: float | None = None
    # Direct invocations return the payload object itself rather than an HTTP response.
    raw_response: bool = False

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    def has_parsed(self) -> bool:
        return self.parsed is not _NO_BODY


@dataclass
class Response:
    status: int
    payload: Any = None  # JSON-ready object (encoded by ``body_bytes`` unless returned raw)
    body: bytes | None = None  # already-encoded body (binary codecs)
    headers: dict[str, str] = field(default_factory=dict)

    def body_bytes(self) -> bytes:
        if self.body is None:
            self.body = ENCODER.encode(self.payload).encode()
            self.headers.setdefault("content-type", JSON)
        return self.body

    @property
    def is_binary(self) -> bool:
        kind = self.headers.get("content-type", JSON)
        return not (kind.startswith(JSON) or kind.startswith("text/"))
