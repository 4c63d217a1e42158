"""Streaming overhead: how long after a streaming handler yields a chunk the client holds it,
through the emulator's Function URL (``InvokeMode: RESPONSE_STREAM``):

    python -m benchmarks.stream_first_byte [--requests 300] [--chunks 8] [--json]

The handler (:func:`stamped`, run by ``handler.stream_runtime`` in a real environment) yields
chunks that carry the ``time.perf_counter()`` at which each was yielded; the client (one
keep-alive ``http.client`` connection, reading chunk by chunk) takes the same clock when a chunk
arrives. On Linux ``perf_counter`` is ``CLOCK_MONOTONIC``, one clock for every process, so the
difference is the whole path: the runtime loop's write (for the first chunk also the
``/response`` head and the HTTP-integration prelude), the emulator's Runtime API, the Function
URL's relay and the client's read. ``first`` is each response's first chunk (the time to first
byte that streaming is for), ``later`` the chunks after it (a pause between chunks keeps them
apart). The emulator runs in its own process (``onnx-lambda serve``, CPU quota off). Timings
are printed, never asserted; the goal (issue 27) is the first chunk within 2 ms at p50.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from onnx_lambda import server_process
from onnx_lambda.plan.emulated import FUNCTION, bench_template, checkout
from onnx_lambda.stats import DEFINITION, summary

PAUSE_S = 0.002  # between chunks: each reaches the client on its own
GOAL_MS = 2.0
HANDLER = "benchmarks.stream_first_byte.stamped"  # (not __name__: "__main__" under -m)
_URL = re.compile(r"function URL: (http://[^\s/]+)")


def stamped(event: dict[str, Any], context: Any) -> Any:
    """The streaming handler: ``n`` chunks, each the clock reading at its yield."""
    from handler.streaming import StreamedResponse

    n = int((event.get("queryStringParameters") or {}).get("n", "8"))

    def chunks() -> Iterator[bytes]:
        for i in range(n):
            if i:
                time.sleep(PAUSE_S)
            yield b"%.9f\n" % time.perf_counter()

    return StreamedResponse(200, {"content-type": "text/plain"}, chunks())


def template() -> str:
    document = json.loads(bench_template(HANDLER, {}, provisioned=1))
    properties = document["Resources"][FUNCTION]["Properties"]
    del properties["Events"]
    properties["FunctionUrlConfig"] = {"AuthType": "NONE", "InvokeMode": "RESPONSE_STREAM"}
    return json.dumps(document, indent=2)


def measure(requests: int = 300, chunks: int = 8) -> dict[str, Any]:
    """``first`` and ``later`` chunk latencies (ms) over ``requests`` streamed responses."""
    first: list[float] = []
    later: list[float] = []
    files = tempfile.TemporaryDirectory(prefix="onnx-lambda-bench-")
    path = Path(files.name) / "template.yaml"
    path.write_text(template())
    with server_process.start_server_process(
            ["--template", str(path), "--quiet", "--cpu-limit", "off", "--concurrency", "1"],
            files=files, **checkout()) as server:
        found = _URL.search(server.errors())
        if found is None:
            raise RuntimeError(f"no function URL in the banner: {server.errors()[-2000:]}")
        conn = http.client.HTTPConnection(found.group(1).split("//", 1)[1], timeout=30)
        try:
            for index in range(requests + 1):  # the first warms the connection up
                conn.request("GET", f"/?n={chunks}")
                response = conn.getresponse()
                seen: list[float] = []
                while data := response.read1(65536):
                    arrived = time.perf_counter()
                    seen += [(arrived - float(line)) * 1000.0 for line in data.split()]
                if len(seen) != chunks:
                    raise RuntimeError(f"expected {chunks} chunks, got {len(seen)}")
                if index:
                    first.append(seen[0])
                    later += seen[1:]
        finally:
            conn.close()
    return {"first": summary(first), "later": summary(later), "requests": requests,
            "chunks": chunks}


def report(results: dict[str, Any]) -> str:
    lines = [f"Streaming overhead through the emulator's Function URL "
             f"({results['requests']} responses of {results['chunks']} chunks; handler yield "
             "-> client read, ms)", f"  {DEFINITION}"]
    for key, label in (("first", "first chunk (TTFB)"), ("later", "later chunks")):
        row = results[key]
        lines.append(f"  {label:20} p50 {row['p50']:.3f}  p99 {row['p99']:.3f}  "
                     f"max {row['max']:.3f}  (n {row['n']:.0f})")
    lines.append(f"  goal: first chunk <= {GOAL_MS} ms at p50: "
                 f"{'met' if results['first']['p50'] <= GOAL_MS else 'NOT met'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.stream_first_byte",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--chunks", type=int, default=8)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    results = measure(args.requests, args.chunks)
    print(json.dumps(results, indent=2) if args.json else report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
