"""Processes the benchmarks drive over HTTP: the local emulator (``onnx-lambda serve``) on a
generated one-function template, AWS's Runtime Interface Emulator (the reference for the
emulator's own overhead) and the always-on uvicorn baseline, each started (and ready) when
called, by ``onnx_lambda.server_process``; a context manager that stops it. Each runs in its own
process so the load generator (this process) never shares a GIL with the server it measures."""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from onnx_lambda import server_process
from onnx_lambda.ports import free_port
from onnx_lambda.server_process import ServerProcess
from onnx_lambda.source_tree import root

FUNCTION = "Bench"  # the generated template's only function


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


def _checkout(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """How a child starts in the source checkout (the handler modules importable)."""
    return {"cwd": root(), "env": {"PYTHONPATH": str(root()), **(env or {})}}


def emulator(handler: str, environment: Mapping[str, str], *, memory_mb: int = 1769,
             concurrency: int = 4, provisioned: int = 0,
             cpu_limit: str | None = None, managed: tuple[int, int] | None = None,
             extra_args: Sequence[str] = ()) -> ServerProcess:
    """``onnx-lambda serve`` on a generated template running ``handler`` (at most
    ``concurrency`` environments, ``provisioned`` of them started up front, function logs
    off; ``cpu_limit``: its ``--cpu-limit``, default the command's; ``managed``: see
    ``bench_template``; ``extra_args``: more ``serve`` options)."""
    files = tempfile.TemporaryDirectory(prefix="onnx-lambda-bench-")
    template = Path(files.name) / "template.yaml"
    template.write_text(bench_template(handler, environment, memory_mb=memory_mb,
                                       provisioned=provisioned, managed=managed))
    return server_process.start_server_process(
        ["--template", str(template), "--quiet", "--concurrency", str(concurrency),
         *(["--cpu-limit", cpu_limit] if cpu_limit else []), *extra_args], files=files,
        **_checkout())


def rie_binary() -> Path | None:
    """AWS's Runtime Interface Emulator as the aws-sam-cli package ships it, if installed."""
    spec = importlib.util.find_spec("samcli")
    if spec is None or spec.origin is None:
        return None
    arch = "arm64" if platform.machine() == "aarch64" else "x86_64"
    path = Path(spec.origin).parent / "local" / "rapid" / f"aws-lambda-rie-{arch}"
    return path if os.access(path, os.X_OK) else None


def rie(handler: str, environment: Mapping[str, str]) -> ServerProcess | None:
    """The RIE (Go, one environment at a time) running ``handler`` under awslambdaric; None
    without aws-sam-cli. Its Invoke API takes any function name (``function`` by convention)."""
    binary = rie_binary()
    if binary is None:
        return None
    port = free_port()
    return server_process.start([str(binary), "--runtime-interface-emulator-address",
                                 f"127.0.0.1:{port}", sys.executable, "-m", "awslambdaric",
                                 handler], port=port, **_checkout(environment))


def always_on(model_path: Path, cpu_limit: Callable[[], None] | None = None) -> ServerProcess:
    """The FastAPI + uvicorn baseline, one process; ``cpu_limit`` (a ``CpuLimiter.prepare``
    step) holds it to a CPU share, else it has the whole machine."""
    port = free_port()
    return server_process.start([sys.executable, "-m", "onnx_lambda.bench.baselines.always_on",
                                 "--port", str(port)], port=port, preexec=cpu_limit,
                                **_checkout({"MODEL_PATH": str(model_path)}))
