"""``handler.app.stream_handler`` (the real handler, the real ``generate`` pipeline) with a gate
after the first chunk that carries text, for the tests that must know the stream is live.

A request with the header ``x-gate: PATH`` gets its first token's event, then nothing more is
pulled from the handler's chunks (so no further token is generated) until the file PATH exists;
a gate that never opens fails the stream. ``x-marker: PATH`` has the chunks' closing write
``closed REQUEST_ID`` there. Without the headers the answer passes through untouched.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from streams import wait_for

from handler import app
from handler.streaming import StreamedResponse

TEXT = b'"content":"'  # a chat chunk's delta with text (the role's chunk has "content":"")


def stream_handler(event: dict[str, Any], context: Any) -> StreamedResponse:
    answer = app.stream_handler(event, context)
    headers = event.get("headers") or {}
    gate, marker = headers.get("x-gate"), headers.get("x-marker")
    if not gate and not marker:
        return answer
    return answer._replace(chunks=_gated(answer.chunks, gate, marker, context.aws_request_id))


def _gated(chunks: Iterable[bytes], gate: str | None, marker: str | None,
           request_id: str) -> Iterator[bytes]:
    iterator = iter(chunks)
    try:
        for chunk in iterator:
            yield chunk
            if gate and TEXT in chunk and b'"content":""' not in chunk:
                if not wait_for(gate):
                    raise RuntimeError("the gate never opened: the first token never arrived")
                gate = None
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()  # the handler's generator: the generation ends, its KV cache freed
        if marker:
            Path(marker).write_text(f"closed {request_id}")
