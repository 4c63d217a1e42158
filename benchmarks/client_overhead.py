"""The HTTP client library's own cost per call, side by side and interleaved: httpx (what
:class:`~onnx_lambda.client.Client` uses) vs the standard library's ``http.client``, one
keep-alive connection each, the same V2 binary request.

    python -m benchmarks.client_overhead URL [--input FILE.npz] [-n 200]
"""

from __future__ import annotations

import argparse
import http.client
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx

from onnx_lambda.client import Client, wire
from onnx_lambda.client.probe import example_inputs, load_inputs
from onnx_lambda.stats import median


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--input", default=None)
    parser.add_argument("-n", type=int, default=200)
    args = parser.parse_args(argv)
    with Client(args.url) as client:
        model, metadata = client.model, client.metadata()
    feeds = load_inputs(args.input) if args.input else example_inputs(metadata, 1)
    body, headers = wire.v2_request(feeds, binary=True)
    path, parts = f"/v2/models/{model}/infer", urlsplit(args.url)
    if parts.scheme != "http":
        parser.error("plain http:// only (the comparison leaves TLS out)")
    pooled = httpx.Client()
    plain = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80)

    def via_httpx() -> None:
        pooled.post(args.url.rstrip("/") + path, content=body, headers=headers).read()

    def via_http_client() -> None:
        plain.request("POST", path, body=body, headers=headers)
        plain.getresponse().read()

    calls: dict[str, Callable[[], None]] = {"httpx": via_httpx, "http.client": via_http_client}
    samples: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in calls}
    for call in calls.values():  # connections opened outside the samples
        call()
    for _ in range(args.n):
        for name, call in calls.items():
            cpu, wall = time.process_time(), time.perf_counter()
            call()
            samples[name][0].append((time.process_time() - cpu) * 1e3)
            samples[name][1].append((time.perf_counter() - wall) * 1e3)
    for name, (cpu_ms, wall_ms) in samples.items():
        print(f"{name:<12} client CPU per call p50 {median(cpu_ms):.3f} ms, "
              f"wall p50 {median(wall_ms):.2f} ms")
    pooled.close()
    plain.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
