"""Attacks on ``onnx-lambda serve`` that measure what hostile traffic costs everyone else.

``python -m tests.support.attacks [--json]`` starts the emulator on the e2e test template
(its own process, loopback, a free port) and prints:

- body hold: 40 connections each send 9.5 MB of a declared ~10 MB body, then stall; the
  server's peak RSS over its idle RSS, and how many were refused;
- pipelining: one connection pipelines 500,000 small requests (21 MB) without reading the
  answers, for at most 3 s; bytes the server took, and its peak RSS increase;
- a maximal header: one client sends a 32 MB header in 64 kB pieces while another makes
  requests one after another; that client's worst and median latency, beside the same
  with no attack.

Everything is bounded (sizes and deadlines above); RSS is the emulator process's own
(its environments are separate processes). Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from onnx_lambda.emulator.limits import PeakRss
from onnx_lambda.server_process import start_server_process
from tests.support.raw_http import Reader, connect, request

TEMPLATE = Path(__file__).resolve().parents[1] / "e2e" / "handlers" / "template.yaml"
PROBE = request("GET", "/nowhere")  # the front's 404: no function, only the server's work


class Peak:
    """A process's peak RSS increase from now, in MB: its high-water mark (``VmHWM``, read by
    the emulator's own :class:`~onnx_lambda.emulator.limits.PeakRss`) reset to the current
    RSS first (``/proc/PID/clear_refs`` ``5``), so the kernel keeps the peak: no sampling."""

    def __init__(self, pid: int) -> None:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        self._rss = PeakRss(pid)
        self.base = self._rss.mb()

    def mb(self) -> float:
        peak = self._rss.mb() - self.base
        self._rss.track([])  # closes its /proc file
        return peak


def body_hold(port: int, pid: int, connections: int = 40) -> dict[str, Any]:
    peak = Peak(pid)
    socks, refused = [], 0
    head = request("POST", "/predict").replace(b"Content-Length: 0", b"Content-Length: 10000000")
    chunk = b"x" * (1 << 20)
    for _ in range(connections):
        sock = connect(port)
        socks.append(sock)
        try:
            sock.sendall(head)
            for _ in range(9):
                sock.sendall(chunk)
            sock.sendall(chunk[: 1 << 19])
        except OSError:
            refused += 1
    time.sleep(0.5)
    for sock in socks:
        sock.settimeout(0.05)
        with contextlib.suppress(OSError):
            refused += sock.recv(64).startswith(b"HTTP/1.1 503")
        sock.close()
    return {"peak_rss_mb": round(peak.mb(), 1), "refused": refused, "connections": connections}


def pipelining(port: int, pid: int, count: int = 500_000) -> dict[str, Any]:
    peak = Peak(pid)
    data, sent = PROBE * count, 0
    with connect(port) as sock:
        sock.setblocking(False)
        deadline = time.monotonic() + 3.0
        while sent < len(data) and time.monotonic() < deadline:
            try:
                sent += sock.send(data[sent:sent + (1 << 20)])
            except BlockingIOError:
                time.sleep(0.01)
        time.sleep(0.3)
    return {"requests": count, "bytes_offered": len(data), "bytes_taken": sent,
            "peak_rss_mb": round(peak.mb(), 1)}


def _latencies(port: int, stop: Callable[[], bool], limit: int = 2000) -> list[float]:
    times = []
    with connect(port) as sock:
        reader = Reader(sock)
        while not stop() and len(times) < limit:
            start = time.perf_counter()
            sock.sendall(PROBE)
            assert reader.response() is not None
            times.append((time.perf_counter() - start) * 1000)
    return times


def header_stall(port: int, size: int = 32 << 20) -> dict[str, Any]:
    quiet_until = time.monotonic() + 1.0
    quiet = _latencies(port, lambda: time.monotonic() > quiet_until)
    done = threading.Event()
    during: list[float] = []
    other = threading.Thread(target=lambda: during.extend(_latencies(port, done.is_set)))

    sent = 0
    with connect(port) as sock:
        sock.sendall(b"GET /nowhere HTTP/1.1\r\nHost: x\r\nX-Big: ")
        other.start()
        piece = b"a" * 65536
        with contextlib.suppress(OSError):
            while sent < size:
                sock.sendall(piece)
                sent += len(piece)
            sock.sendall(b"\r\n\r\n")
            sock.settimeout(30)
            sock.recv(64)
    done.set()
    other.join()
    return {"header_bytes_sent": sent,
            "other_client_ms": {"p50": _ms(statistics.median(during)), "max": _ms(max(during)),
                                "requests": len(during)},
            "no_attack_ms": {"p50": _ms(statistics.median(quiet)), "max": _ms(max(quiet))}}


def _ms(value: float) -> float:
    return round(value, 3)


@contextlib.contextmanager
def _server() -> Iterator[tuple[int, int]]:
    with start_server_process(["--template", str(TEMPLATE), "--quiet", "--cpu-limit", "off",
                               "--provisioned", "0"]) as server:
        yield int(urlsplit(server.url).port or 0), server.process.pid


def measure() -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, attack in (("body hold", body_hold), ("pipelining", pipelining),
                         ("maximal header", None)):
        with _server() as (port, pid):  # a fresh server each: one attack's leftovers
            results[name] = attack(port, pid) if attack else header_stall(port)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = measure()
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for name, values in results.items():
            print(f"{name}: {json.dumps(values)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
