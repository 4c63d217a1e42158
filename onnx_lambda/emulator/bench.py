"""The emulator's own benchmark: what it adds on top of the handler.

``python -m onnx_lambda.emulator.bench`` (or :func:`measure`) prints, for a tiny generated
model served by the real handler (``handler.app.handler``):

1. warm overhead: ``POST /predict`` through the emulator's HTTP front (HTTP API event ->
   Runtime API -> awslambdaric -> handler -> back), and the same through the Invoke API,
   vs the handler called in-process with the same event, and vs the same event posted to
   the Runtime Interface Emulator (AWS's Go implementation of the same hops, from the
   aws-sam-cli package) as a reference (p50 / p99, keep-alive client);
2. throughput at concurrency 1, 2, 4 (warm, provisioned environments, one keep-alive
   connection per client thread);
3. a cold start through the emulator, broken down: process start + runtime client
   bootstrap, imports, model load, warm-up, first request (from the REPORT record and the
   handler's ``Server-Timing``).

The emulator runs in its own process (``onnx-lambda serve``), so the load generator never
shares a GIL with it; the CPU quota is off (``--cpu-limit off``) so the numbers show the
emulator's cost, not the quota's. Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import importlib.util
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil

from onnx_lambda.client.timing import parse_server_timing
from onnx_lambda.emulator import apigw
from onnx_lambda.emulator.process import start_server_process
from onnx_lambda.emulator.server import Emulator
from onnx_lambda.emulator.template import TemplateSpec, load_template

ROOT = Path(__file__).resolve().parents[2]
BODY = json.dumps({"inputs": [[1.0, 2.0, 3.0, 4.0]]}).encode()
HEADERS = {"Content-Type": "application/json"}


def tiny_model(path: Path) -> Path:
    """x: float32[n, 4] -> y = x @ W: float32[n, 2]."""
    from onnx import TensorProto, helper, save  # build-time only

    weights = helper.make_tensor("W", TensorProto.FLOAT, [4, 2], [0.5] * 8)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"])], "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 2])], [weights])
    save(helper.make_model(graph), str(path))
    return path


def write_template(folder: Path, model: Path, memory_mb: int, provisioned: int) -> Path:
    """One function (the real handler, the repository as code) behind ``POST /predict``."""
    template = {"Resources": {"Inference": {"Type": "AWS::Serverless::Function", "Properties": {
        "Handler": "handler.app.handler", "CodeUri": str(ROOT), "MemorySize": memory_mb,
        "Timeout": 30, "Environment": {"Variables": {"ONNX_LAMBDA_MODEL": str(model)}},
        "ProvisionedConcurrencyConfig": {"ProvisionedConcurrentExecutions": provisioned},
        "Events": {"Predict": {"Type": "HttpApi",
                               "Properties": {"Path": "/predict", "Method": "POST"}}}}}}}
    path = folder / "template.yaml"
    path.write_text(json.dumps(template))  # JSON is YAML
    return path


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    return {"p50": statistics.median(ordered),
            "p99": ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))],
            "n": float(len(ordered))}


def timed(call: Callable[[], object], n: int) -> list[float]:
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000.0)
    return samples


class _Context:
    """The attributes of Lambda's ``context`` the handler reads."""

    aws_request_id = "bench"
    function_name = "Inference"
    memory_limit_in_mb = "1769"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:Inference"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def http_api_event() -> dict[str, Any]:
    """The event the emulator's HTTP front builds for ``POST /predict`` with ``BODY``."""
    request = apigw.HttpRequest("POST", "/predict", "", list(HEADERS.items()), BODY)
    return apigw.http_api_event(request, route_key="POST /predict", stage="$default",
                                api_id="local", path_parameters=None, domain="localhost")


def in_process(model: Path, n: int) -> list[float]:
    """The handler called directly with the HTTP API event the emulator would send."""
    from handler.bootstrap import create  # the handler, in this process
    from handler.settings import Settings

    event = http_api_event()
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        service = create(Settings.from_env({"ONNX_LAMBDA_MODEL": str(model)}))
        context = _Context()
        timed(lambda: service(event, context), n // 10)
        return timed(lambda: service(event, context), n)


def interleaved(targets: dict[str, tuple[str, str, bytes]], n: int,
                rounds: int = 10) -> dict[str, list[float]]:
    """``n`` timed POSTs per target (name -> url, path, body), one keep-alive connection
    each, in alternating rounds so that load from other processes hits every target alike."""
    calls: dict[str, Callable[[], None]] = {}
    connections = []
    for name, (url, path, body) in targets.items():
        host, port = url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port))
        connections.append(connection)

        def one(connection: http.client.HTTPConnection = connection, path: str = path,
                body: bytes = body) -> None:
            connection.request("POST", path, body, HEADERS)
            response = connection.getresponse()
            response.read()
            assert response.status == 200, response.status

        calls[name] = one
    try:
        for call in calls.values():
            timed(call, max(1, n // 10))  # warm-up
        samples: dict[str, list[float]] = {name: [] for name in calls}
        for _ in range(rounds):
            for name, call in calls.items():
                samples[name] += timed(call, max(1, n // rounds))
        return samples
    finally:
        for connection in connections:
            connection.close()


def rie_binary() -> Path | None:
    """The Runtime Interface Emulator shipped in the aws-sam-cli package, if installed."""
    spec = importlib.util.find_spec("samcli")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "local" / "rapid" / f"aws-lambda-rie-{platform.machine()}"
    return path if os.access(path, os.X_OK) else None


@contextlib.contextmanager
def rie_server(model: Path) -> Iterator[str | None]:
    """The reference: the same handler behind the RIE (Go, one environment); its URL."""
    rie = rie_binary()
    if rie is None:
        yield None
        return
    port = free_port()
    process = subprocess.Popen(
        [str(rie), "--runtime-interface-emulator-address", f"127.0.0.1:{port}",
         sys.executable, "-m", "awslambdaric", "handler.app.handler"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "ONNX_LAMBDA_MODEL": str(model), "PYTHONPATH": str(ROOT)})
    try:
        for _ in range(200):  # until it listens
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.kill()
        process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def throughput(url: str, concurrency: int, seconds: float) -> dict[str, float]:
    samples: list[list[float]] = [[] for _ in range(concurrency)]
    stop = time.perf_counter() + seconds

    def client(out: list[float]) -> None:
        host, port = url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port))
        while time.perf_counter() < stop:
            start = time.perf_counter()
            connection.request("POST", "/predict", BODY, HEADERS)
            response = connection.getresponse()
            response.read()
            out.append((time.perf_counter() - start) * 1000.0)
        connection.close()

    threads = [threading.Thread(target=client, args=(out,)) for out in samples]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    merged = [s for out in samples for s in out]
    return {"concurrency": float(concurrency), "rps": len(merged) / seconds,
            **percentiles(merged)}


def cold_start(template: TemplateSpec, repeat: int) -> list[dict[str, float]]:
    """A fresh emulator (so a fresh environment) per sample; one request each."""
    samples = []
    for _ in range(repeat):
        emulator = Emulator(template, port=0, log=None, cpu_limit="off", provisioned=0)
        with emulator.running():
            request = urllib.request.Request(emulator.url + "/predict", BODY, HEADERS)
            start = time.perf_counter()
            with urllib.request.urlopen(request) as response:
                timing, _ = parse_server_timing(response.headers.get("Server-Timing"))
            total = (time.perf_counter() - start) * 1000.0
            record = emulator.records()[0]
        init = record.init_ms or 0.0
        samples.append({
            "client total": total,
            "Init Duration (spawn -> first /next)": init,
            "process start + runtime client": init - timing.get("init", 0.0),
            "imports": timing.get("imports", 0.0),
            "model load": timing.get("model-load", 0.0),
            "warm-up": timing.get("warmup", 0.0),
            "first request (Duration)": record.duration_ms,
        })
    return samples


def measure(requests: int = 2000, seconds: float = 5.0, cold_repeat: int = 3,
            memory_mb: int = 1769) -> dict[str, Any]:
    """Run every measurement; returns the numbers (also what :func:`main` prints)."""
    with tempfile.TemporaryDirectory(prefix="onnx-lambda-emu-bench-") as tmp:
        folder = Path(tmp)
        model = tiny_model(folder / "tiny.onnx")
        results: dict[str, Any] = {"in-process handler": percentiles(in_process(model, requests))}
        template = write_template(folder, model, memory_mb, provisioned=4)
        event = json.dumps(http_api_event()).encode()
        with rie_server(model) as rie_url, start_server_process(
                ["--template", str(template), "--quiet", "--cpu-limit", "off",
                 "--concurrency", "4"], cwd=ROOT) as server:
            targets = {"HTTP front": (server.url, "/predict", BODY),
                       "Invoke API, same event": (
                           server.url, "/2015-03-31/functions/Inference/invocations", event)}
            if rie_url:
                targets["RIE (reference), same event"] = (
                    rie_url, "/2015-03-31/functions/function/invocations", event)
            emulator_process = psutil.Process(server.process.pid)
            cpu_before = sum(emulator_process.cpu_times()[:2])
            samples = interleaved(targets, requests)
            # less load-dependent: CPU the emulator process itself spends per request
            results["emulator CPU per request, ms"] = (
                sum(emulator_process.cpu_times()[:2]) - cpu_before) * 1000.0 / (
                2 * (requests + requests // 10))
            results.update({name: percentiles(values) for name, values in samples.items()})
            results["throughput"] = [throughput(server.url, c, seconds) for c in (1, 2, 4)]
        spec = load_template(write_template(folder, model, memory_mb, provisioned=0))
        results["cold start"] = cold_start(spec, cold_repeat)
    return results


def report(results: dict[str, Any]) -> str:
    base = results["in-process handler"]
    lines = ["warm latency, ms              p50      p99   (overhead vs in-process at p50)"]
    for name in ("in-process handler", "RIE (reference), same event",
                 "Invoke API, same event", "HTTP front"):
        if name not in results:
            continue
        row = results[name]
        extra = "" if name == "in-process handler" else f"   +{row['p50'] - base['p50']:.3f}"
        lines.append(f"  {name:28} {row['p50']:7.3f}  {row['p99']:7.3f}{extra}")
    lines.append(f"  emulator process CPU per request (both fronts): "
                 f"{results['emulator CPU per request, ms']:.3f} ms")
    lines.append("throughput (HTTP front, warm)   req/s     p50      p99")
    for row in results["throughput"]:
        lines.append(f"  concurrency {int(row['concurrency'])}            "
                     f"{row['rps']:8.0f}  {row['p50']:7.3f}  {row['p99']:7.3f}")
    lines.append("cold start through the emulator, ms (median of "
                 f"{len(results['cold start'])})")
    for key in results["cold start"][0]:
        value = statistics.median(sample[key] for sample in results["cold start"])
        lines.append(f"  {key:40} {value:8.1f}")
    lines.append(f"(load average during the run: {os.getloadavg()[0]:.2f} on "
                 f"{os.cpu_count()} CPUs)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m onnx_lambda.emulator.bench",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=5.0, help="per throughput level")
    parser.add_argument("--cold", type=int, default=3, help="cold starts to sample")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    results = measure(args.requests, args.seconds, args.cold)
    print(json.dumps(results, indent=2) if args.json else report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
