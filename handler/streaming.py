"""Lambda's response-streaming mode: an answer as a status, headers and body chunks
(standard library only)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple


class StreamedResponse(NamedTuple):
    status: int
    headers: dict[str, str]
    chunks: Iterable[bytes]  # may be a generator; the runtime closes it when done or when the
    # caller goes away


def from_result(result: Any) -> StreamedResponse:
    """A buffered handler answer (API Gateway v2 / Function URL dict with ``statusCode``,
    ``headers``, ``body``, ``isBase64Encoded``) as a one-chunk stream."""
    body = result.get("body") or ""
    if result.get("isBase64Encoded"):
        import base64  # binary answers only

        data = base64.b64decode(body)
    else:
        data = body.encode()
    return StreamedResponse(int(result.get("statusCode", 200)),
                            dict(result.get("headers") or {}), (data,))
