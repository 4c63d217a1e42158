"""One call's timing from the caller's side: the HTTP exchange split by httpcore's trace
events, the server's ``Server-Timing`` stages, and the network leg that is neither.

``network = total - server total - queue``: what the caller waited for that the function did
not spend (wire, TLS records, API Gateway, Lambda's own hand-offs, and the client library's
own bookkeeping, reported alone as ``overhead``). Behind the local emulator it is loopback plus
the emulator's API Gateway and runtime hand-offs. Clamped at 0: API Gateway's request time
has millisecond resolution, so the server's queue figure can overshoot by up to 1 ms.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, NamedTuple

COLD_FLAG = "cold-start"  # the Server-Timing entry handler/telemetry.py adds on a cold request


class Timing(NamedTuple):
    """Milliseconds. ``connect`` (DNS + TCP + TLS) is 0 on a reused connection."""

    total: float
    connect: float
    write: float
    wait: float
    read: float
    server: dict[str, float]  # every Server-Timing stage with a duration
    network: float | None  # None when the answer carried no Server-Timing (not the function's)
    overhead: float  # the client library's own time around the exchange (inside network)
    cold: bool
    new_connection: bool
    protocol: str
    attempts: int
    sent_bytes: int
    received_bytes: int


def parse_server_timing(header: str | None) -> tuple[dict[str, float], bool]:
    """``name;dur=1.2;desc="..."`` entries → ({name: ms}, cold)."""
    stages: dict[str, float] = {}
    cold = False
    for entry in (header or "").split(","):
        name, *params = (part.strip() for part in entry.split(";"))
        if not name:
            continue
        cold |= name == COLD_FLAG
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "dur":
                with contextlib.suppress(ValueError):
                    stages[name] = stages.get(name, 0.0) + float(value.strip().strip('"'))
    return stages, cold


class Trace:
    """httpcore's ``trace`` extension callback: remembers when each phase started and ended."""

    __slots__ = ("marks",)

    def __init__(self) -> None:
        self.marks: dict[str, float] = {}

    def __call__(self, event: str, _info: dict[str, Any]) -> None:
        # "http11.send_request_body.complete" → "send_request_body.complete"
        self.marks[event.split(".", 1)[1]] = time.perf_counter()

    def span(self, first: str, last: str) -> float:
        start, end = self.marks.get(first), self.marks.get(last)
        return (end - start) * 1e3 if start is not None and end is not None else 0.0

    def phases(self) -> tuple[float, float, float, float, bool]:
        """connect, write, wait (request sent → response headers in), read, new connection."""
        connect = (self.span("connect_tcp.started", "connect_tcp.complete")
                   + self.span("start_tls.started", "start_tls.complete"))
        write = self.span("send_request_headers.started", "send_request_body.complete")
        wait = self.span("send_request_body.complete", "receive_response_headers.complete")
        read = self.span("receive_response_body.started", "receive_response_body.complete")
        return connect, write, wait, read, "connect_tcp.started" in self.marks


def timing(trace: Trace, total_ms: float, headers: Any, *, protocol: str, attempts: int,
           sent: int, received: int) -> Timing:
    server, cold = parse_server_timing(headers.get("server-timing"))
    connect, write, wait, read, new = trace.phases()
    network = None
    if "total" in server:
        network = max(0.0, total_ms - server["total"] - server.get("queue", 0.0))
    overhead = max(0.0, total_ms - connect - write - wait - read)
    return Timing(total=total_ms, connect=connect, write=write, wait=wait, read=read,
                  server=server, network=network, overhead=overhead, cold=cold,
                  new_connection=new,
                  protocol=protocol, attempts=attempts, sent_bytes=sent, received_bytes=received)
