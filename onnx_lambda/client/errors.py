"""What a call can fail with, from the caller's side."""

from __future__ import annotations

from typing import Any


class ClientError(Exception):
    """An answer that is not a success: ``status``, our error ``type`` and ``message`` when the
    function sent them, ``request_id`` (None when the answer is not the function's: API
    Gateway's own ``{"message": ...}``)."""

    def __init__(self, status: int, message: str, *, type: str | None = None,
                 request_id: str | None = None, attempts: int = 1, body: bytes = b"") -> None:
        super().__init__(f"HTTP {status}{f' {type}' if type else ''}: {message}")
        self.status, self.message, self.type = status, message, type
        self.request_id, self.attempts, self.body = request_id, attempts, body


class ThrottledError(ClientError):
    """Still throttled (or unavailable) after every retry the client was allowed."""


def from_answer(status: int, body: bytes, headers: Any, attempts: int) -> ClientError:
    """Our two error shapes (``{"error": {"type", "message"}, "requestId"}``; on /v2
    ``{"error": "<msg>", "type", "requestId"}``), else API Gateway's ``{"message"}``."""
    import json

    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    request_id = headers.get("x-request-id")
    message, kind = body[:200].decode("utf-8", "replace"), headers.get("x-error-type")
    if isinstance(doc, dict):
        error = doc.get("error")
        if isinstance(error, dict):
            message, kind = str(error.get("message")), str(error.get("type"))
        elif isinstance(error, str):
            message, kind = error, str(doc.get("type") or kind)
        elif "message" in doc:
            message = str(doc["message"])
        request_id = doc.get("requestId", request_id)
    cls = ThrottledError if is_throttle(status, doc, request_id) else ClientError
    return cls(status, message, type=kind, request_id=request_id, attempts=attempts, body=body)


def is_throttle(status: int, doc: Any, request_id: str | None) -> bool:
    """Safe to send again: 429, 503, or API Gateway's own 500 — what an HTTP API answers for a
    throttled function — told from a function's error by the missing error body and request id."""
    if status in (429, 503):
        return True
    return (status == 500 and request_id is None
            and not (isinstance(doc, dict) and "error" in doc))
