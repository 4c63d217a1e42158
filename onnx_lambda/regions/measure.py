"""One sample = a new TCP connection, a TLS handshake, one ``GET /`` and the response's head,
each phase timed with ``time.perf_counter`` (standard library only: nothing here can find or
send AWS credentials; the request carries none and needs none, so the endpoint's answer, a
403 or 404, is as good as a 200 for timing).

Regions are sampled in rounds (every region once, then again), a few at a time, so that a
burst of load on this machine or its link hits every region alike. A region that fails twice in
a row is not sampled again; a failure never stops the others.
"""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

from onnx_lambda.regions.endpoints import Resolver, Target
from onnx_lambda.stats import median

PHASES = ("dns", "connect", "tls", "request")
HEAD_LIMIT = 64 * 1024  # an answer's head bigger than this is not a Lambda endpoint's


class Sample(NamedTuple):
    """Milliseconds; ``request``: the request written → the answer's head read (one round
    trip plus the endpoint's own time), ``status``: the answer's HTTP status."""

    dns: float
    connect: float
    tls: float
    request: float
    status: int


def sample(target: Target, context: ssl.SSLContext | None, timeout_s: float) -> Sample:
    """One fresh connection to ``target`` (``context`` None: plain HTTP, for http:// URLs)."""
    start = time.perf_counter()
    family, kind, proto, _, address = socket.getaddrinfo(
        target.host, target.port, type=socket.SOCK_STREAM)[0]
    resolved = time.perf_counter()
    sock = socket.socket(family, kind, proto)
    try:
        sock.settimeout(timeout_s)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.connect(address)
        connected = time.perf_counter()
        stream: socket.socket = sock
        if context is not None:
            stream = context.wrap_socket(sock, server_hostname=target.server_name)
        shaken = time.perf_counter()
        stream.sendall(f"GET / HTTP/1.1\r\nHost: {target.server_name}\r\nUser-Agent: "
                       "onnx-lambda-regions\r\nAccept: */*\r\nConnection: close\r\n\r\n"
                       .encode("ascii"))
        sent = time.perf_counter()
        status = _read_status(stream)
        answered = time.perf_counter()
        if stream is not sock:
            stream.close()
    finally:
        sock.close()
    return Sample(dns=(resolved - start) * 1e3, connect=(connected - resolved) * 1e3,
                  tls=(shaken - connected) * 1e3, request=(answered - sent) * 1e3,
                  status=status)


def read_head(stream: socket.socket) -> bytes:
    """An HTTP message's head (up to the blank line, or what came before the peer closed)."""
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = stream.recv(4096)
        if not chunk:
            break
        head += chunk
        if len(head) > HEAD_LIMIT:
            raise OSError("the answer's head is over 64 KiB: not an HTTP endpoint")
    return head


def _read_status(stream: socket.socket) -> int:
    head = read_head(stream)
    line = head.split(b"\r\n", 1)[0].split()
    if len(line) < 2 or not line[0].startswith(b"HTTP/") or not line[1].isdigit():
        raise OSError(f"not an HTTP answer: {head[:40]!r}")
    return int(line[1])


def describe(error: BaseException) -> str:
    """A failure in a few words (the table's 'unreachable' column)."""
    if isinstance(error, TimeoutError):
        return "timed out"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, socket.gaierror):
        return f"name not resolved ({error.strerror})"
    if isinstance(error, ssl.SSLError):
        return f"TLS failed ({error.reason or error})"
    return f"{type(error).__name__}: {error}"


def spread(values: Sequence[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"median": median(values), "min": min(values), "max": max(values)}


def run(regions: Sequence[str], resolve: Resolver, *, samples: int = 5, timeout_s: float = 3.0,
        context: ssl.SSLContext | None = None, concurrency: int = 4,
        progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Every region's samples and errors, in the order given (see ``report.rank``)."""
    context = context or ssl.create_default_context()
    done: dict[str, list[Sample]] = {r: [] for r in regions}
    errors: dict[str, list[str]] = {r: [] for r in regions}
    failing: dict[str, int] = dict.fromkeys(regions, 0)
    targets: dict[str, Target | None] = {}
    for region in regions:
        try:
            targets[region] = resolve(region)
        except (ValueError, KeyError) as error:
            targets[region], failing[region] = None, 2
            errors[region].append(f"no endpoint: {error}")

    def one(region: str) -> None:
        target = targets[region]
        assert target is not None
        try:
            done[region].append(sample(target, context, timeout_s))
            failing[region] = 0
        except (OSError, ValueError) as error:  # never stops the run: the table says why
            errors[region].append(describe(error))
            failing[region] += 1

    with ThreadPoolExecutor(max(1, concurrency)) as pool:
        for round_ in range(samples):
            live = [r for r in regions if failing[r] < 2]
            list(pool.map(one, live))
            if progress:
                progress(f"round {round_ + 1}/{samples}: {len(live)} regions")
    return [_result(region, targets[region], done[region], errors[region], samples)
            for region in regions]


def _result(region: str, target: Target | None, samples: list[Sample], errors: list[str],
            asked: int) -> dict[str, Any]:
    phases = {name: spread([getattr(s, name) for s in samples]) for name in PHASES}
    fresh = spread([s.connect + s.tls + s.request for s in samples])
    return {"region": region, "host": target.host if target else None,
            "port": target.port if target else None, "reachable": bool(samples),
            "samples": len(samples), "asked": asked, "errors": list(dict.fromkeys(errors))[:3],
            "status": sorted({s.status for s in samples}),
            # the figure a request on an open (kept-alive) connection pays on the network
            "network_ms": phases["request"]["median"] if phases["request"] else None,
            "new_connection_ms": fresh["median"] if fresh else None,
            "phases": phases}
