"""Streaming handlers for the response-streaming tests (``python -m handler.stream_runtime``).

The event's query string (Function URL) or top-level keys (direct invoke) choose the
behaviour; ``gate`` and ``marker`` are file paths the test and the handler use to order their
steps by events instead of by the clock.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from handler.streaming import StreamedResponse

WAIT_S = 20.0  # how long a gate is waited for before the handler gives up


def _params(event: dict[str, Any]) -> dict[str, Any]:
    return dict(event.get("queryStringParameters") or {}) or event


def wait_for(path: str) -> bool:
    deadline = time.monotonic() + WAIT_S
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


def tokens(event: dict[str, Any], context: Any) -> StreamedResponse:
    """``n`` chunks ``tok0 `` ... ; before the last one, waits for the file ``gate`` (the test
    creates it once it holds the first chunk); ``fail_at`` raises instead of that chunk;
    ``forever`` yields until closed, then writes ``marker``."""
    params = _params(event)
    n = int(params.get("n", 3))

    def chunks() -> Iterator[bytes]:
        try:
            i = 0
            while params.get("forever") or i < n:
                if "fail_at" in params and i == int(params["fail_at"]):
                    raise RuntimeError(f"failed at chunk {i}")
                if params.get("gate") and i == n - 1 and not wait_for(params["gate"]):
                    yield b"gate-timeout"
                    return
                yield f"tok{i} ".encode()
                i += 1
                if params.get("forever"):
                    time.sleep(0.005)
        finally:
            if params.get("marker"):
                Path(params["marker"]).write_text(f"closed {context.aws_request_id}")

    return StreamedResponse(200, {"content-type": "text/plain", "x-stream": "yes"}, chunks())


def buffered(event: dict[str, Any], context: Any) -> Any:
    """A plain answer: sent as one chunk by the streaming runtime (``status`` may change it)."""
    if "status" in _params(event):
        return {"statusCode": int(_params(event)["status"]), "body": "dropped"}
    return {"statusCode": 201, "headers": {"content-type": "application/json"},
            "body": '{"buffered": true}', "cookies": ["a=1", "b=2"]}


def broken_before(event: dict[str, Any], context: Any) -> Any:
    raise ValueError("no stream at all")


def wrong_type(event: dict[str, Any], context: Any) -> StreamedResponse:
    """A chunk that is not bytes after the first one."""
    return StreamedResponse(200, {}, iter([b"ok ", "not bytes"]))  # type: ignore[list-item]
