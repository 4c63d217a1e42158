"""The function in fresh environments of the local emulator (``onnx-lambda serve`` on a
generated one-function template, each run in its own process so the caller never shares a GIL
with the server it measures): ``emulated`` is one cold invocation and a few warm ones through
the Invoke API with ``LogType=Tail`` (real awslambdaric), read from the REPORT line — what
``tune`` measures per memory size and the lab per target."""

from __future__ import annotations

import base64
import http.client
import json
import re
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from onnx_lambda import server_process
from onnx_lambda.client.timing import parse_server_timing
from onnx_lambda.plan.bytecode import compile_shipped
from onnx_lambda.plan.subject import Subject
from onnx_lambda.server_process import ServerProcess
from onnx_lambda.source_tree import root

FUNCTION = "Bench"  # the generated template's only function
INVOKE_PATH = f"/2015-03-31/functions/{FUNCTION}/invocations"
_REPORT = re.compile(r"(Init Duration|Billed Duration|Duration|Max Memory Used): ([\d.]+)")
_CPU = re.compile(r"CPU: ([^\t\n]+)")


def bench_template(handler: str, environment: Mapping[str, str], *, memory_mb: int = 1769,
                   timeout_s: int = 60, provisioned: int = 0,
                   managed: tuple[int, int] | None = None) -> str:
    """A SAM template with one zip function ``Bench`` (the repository as code, ``provisioned``
    environments started up front) and the HTTP API route ``POST /predict``; ``managed``
    (processes, GiB per vCPU) makes it a Lambda Managed Instances function. JSON is valid
    YAML, so no YAML writer is needed."""
    properties: dict[str, object] = {
        "Runtime": "python3.13" if managed else "python3.12", "Handler": handler,
        "CodeUri": str(root()),
        "MemorySize": memory_mb, "Timeout": timeout_s,
        "Environment": {"Variables": dict(environment)},
        "Events": {"Predict": {"Type": "HttpApi",
                               "Properties": {"Path": "/predict", "Method": "POST"}}}}
    if provisioned:
        properties["ProvisionedConcurrencyConfig"] = {
            "ProvisionedConcurrentExecutions": provisioned}
    if managed:
        properties["CapacityProviderConfig"] = {
            "PerExecutionEnvironmentMaxConcurrency": managed[0],
            "ExecutionEnvironmentMemoryGiBPerVCpu": managed[1]}
    template = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Transform": "AWS::Serverless-2016-10-31",
        "Resources": {FUNCTION: {"Type": "AWS::Serverless::Function",
                                 "Properties": properties}},
    }
    return json.dumps(template, indent=2)


def checkout(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """How a child starts in the source checkout (the handler modules importable)."""
    return {"cwd": root(), "env": {"PYTHONPATH": str(root()), **(env or {})}}


def emulator(handler: str, environment: Mapping[str, str], *, memory_mb: int = 1769,
             concurrency: int = 4, provisioned: int = 0,
             cpu_limit: str | None = None, managed: tuple[int, int] | None = None,
             extra_args: Sequence[str] = ()) -> ServerProcess:
    """``onnx-lambda serve`` on a generated template running ``handler`` (at most
    ``concurrency`` environments, ``provisioned`` of them started up front, function logs
    off; ``cpu_limit``: its ``--cpu-limit``, default the command's; ``managed``: see
    ``bench_template``; ``extra_args``: more ``serve`` options). The template's folder goes
    when the server stops."""
    files = tempfile.TemporaryDirectory(prefix="onnx-lambda-bench-")
    template = Path(files.name) / "template.yaml"
    template.write_text(bench_template(handler, environment, memory_mb=memory_mb,
                                       provisioned=provisioned, managed=managed))
    return server_process.start_server_process(
        ["--template", str(template), "--quiet", "--concurrency", str(concurrency),
         *(["--cpu-limit", cpu_limit] if cpu_limit else []), *extra_args], files=files,
        **checkout())


def report_fields(log_tail: str) -> dict[str, float]:
    """The numbers of the last REPORT line in an Invoke API log tail (empty without one)."""
    line = log_tail[log_tail.rfind("REPORT"):] if "REPORT" in log_tail else ""
    return {key: float(value) for key, value in _REPORT.findall(line)}


class InvokeClient:
    """The Lambda Invoke API over one persistent HTTP connection (as boto3 would use it).
    ``throttled_ok``: a 429 (no free environment) answers ``None`` instead of raising."""

    def __init__(self, url: str, *, throttled_ok: bool = False) -> None:
        parts = urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port,
                                               timeout=120)
        self.throttled_ok = throttled_ok

    def invoke(self, payload: bytes) -> tuple[float, dict[str, float], bytes, str] | None:
        """(client-observed ms, REPORT fields, response payload, the REPORT's CPU limit)."""
        started = time.perf_counter()
        self.conn.request("POST", INVOKE_PATH, body=payload,
                          headers={"X-Amz-Log-Type": "Tail", "content-type": "application/json"})
        response = self.conn.getresponse()
        body = response.read()
        wall = (time.perf_counter() - started) * 1e3
        if response.status == 429 and self.throttled_ok:
            return None
        if response.status != 200 or response.getheader("X-Amz-Function-Error"):
            raise RuntimeError(f"invoke: HTTP {response.status}: {body[:500]!r}")
        tail = base64.b64decode(response.getheader("X-Amz-Log-Result") or "").decode(
            errors="replace")
        report = report_fields(tail)
        cpu = _CPU.search(tail[tail.rfind("REPORT"):])
        return wall, report, body, cpu.group(1).strip() if cpu else "unknown"

    def close(self) -> None:
        self.conn.close()


def emulated(subject: Subject, module: str, memory_mb: int, warm: int = 5,
             cpu_limit: str | None = None) -> dict[str, Any]:
    """A fresh emulator (so a fresh environment) running ``module``'s ``handler``: one cold
    invocation, then ``warm`` more; ``server_timing``: the first response's ``Server-Timing``
    stages (ours reports its init)."""
    compile_shipped(module)
    payload = subject.event_file.read_bytes()
    with emulator(f"{module}.handler", subject.environment(memory_mb),
                  memory_mb=memory_mb, cpu_limit=cpu_limit) as server:
        client = InvokeClient(server.url)
        try:
            first = client.invoke(payload)
            assert first is not None  # (only a throttled_ok client answers None)
            wall, report, body, cpu = first
            answer = json.loads(body)
            status = answer.get("statusCode")
            if status != 200:
                raise RuntimeError(f"{module}: first response {status}: {body[:300]!r}")
            warm_runs = [run for _ in range(warm) if (run := client.invoke(payload))]
        finally:
            client.close()
    if "Init Duration" not in report:
        raise RuntimeError(f"{module}: the first invocation reported no Init Duration "
                           "(not a fresh environment?)")
    durations = [r[1]["Duration"] for r in warm_runs if "Duration" in r[1]]
    return {"wall": wall, "init_ms": report["Init Duration"],
            "first_duration_ms": report.get("Duration"), "warm_durations_ms": durations,
            "warm_client_ms": [r[0] for r in warm_runs], "cpu": cpu,
            "server_timing": parse_server_timing(
                (answer.get("headers") or {}).get("server-timing"))[0],
            "max_memory_mb": (warm_runs[-1][1] if warm_runs else report).get("Max Memory Used")}
