"""Processes the benchmarks drive over HTTP: the local emulator (``onnx-lambda serve``) on a
generated one-function template, AWS's Runtime Interface Emulator (the reference for the
emulator's own overhead) and the always-on uvicorn baseline. Each runs in its own
process so the load generator (this process) never shares a GIL with the server it measures."""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType

from onnx_lambda.ports import free_port
from onnx_lambda.source_tree import root

FUNCTION = "Bench"  # the generated template's only function
STARTUP_TIMEOUT_S = 60.0


def bench_template(handler: str, environment: Mapping[str, str], *, memory_mb: int = 1769,
                   timeout_s: int = 60, provisioned: int = 0) -> str:
    """A SAM template with one zip function ``Bench`` (the repository as code, ``provisioned``
    environments started up front) and the HTTP API route ``POST /predict``. JSON is valid
    YAML, so no YAML writer is needed."""
    properties: dict[str, object] = {
        "Runtime": "python3.12", "Handler": handler, "CodeUri": str(root()),
        "MemorySize": memory_mb, "Timeout": timeout_s,
        "Environment": {"Variables": dict(environment)},
        "Events": {"Predict": {"Type": "HttpApi",
                               "Properties": {"Path": "/predict", "Method": "POST"}}}}
    if provisioned:
        properties["ProvisionedConcurrencyConfig"] = {
            "ProvisionedConcurrentExecutions": provisioned}
    template = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Transform": "AWS::Serverless-2016-10-31",
        "Resources": {FUNCTION: {"Type": "AWS::Serverless::Function",
                                 "Properties": properties}},
    }
    return json.dumps(template, indent=2)


class Server:
    """A child process serving HTTP on ``port``; a context manager that stops it (its own
    process group, by pid). Ready when it accepts a connection, or, with ``ready``, when its
    output holds that line start (``onnx-lambda serve`` prints ``READY`` once its provisioned
    environments are initialised: it listens before that)."""

    def __init__(self, argv: list[str], port: int, env: Mapping[str, str] | None = None,
                 files: tempfile.TemporaryDirectory[str] | None = None,
                 preexec: Callable[[], None] | None = None, ready: bytes | None = None) -> None:
        self.argv, self.port, self.preexec, self.ready = argv, port, preexec, ready
        self.files = files or tempfile.TemporaryDirectory(prefix="onnx-lambda-bench-")
        self.log = Path(self.files.name) / "server.log"
        self.env = {**os.environ, "PYTHONPATH": str(root()), **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = f"http://127.0.0.1:{port}"

    def __enter__(self) -> Server:
        # output to a file: a pipe nobody reads would fill up and block the server
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(self.argv, cwd=root(), env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=self.preexec)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.log.read_text(errors="replace")[-2000:]
                self.stop()
                raise RuntimeError(f"{' '.join(self.argv)} exited: {err}")
            if self.ready is not None:
                if self.ready in self.log.read_bytes():
                    return self
                time.sleep(0.05)
                continue
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{' '.join(self.argv)}: no listener on {self.port}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.files.cleanup()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def emulator(handler: str, environment: Mapping[str, str], *, memory_mb: int = 1769,
             concurrency: int = 4, provisioned: int = 0, cpu_limit: str | None = None) -> Server:
    """``onnx-lambda serve`` on a generated template running ``handler`` (at most
    ``concurrency`` environments, ``provisioned`` of them started up front, function logs
    off; ``cpu_limit``: its ``--cpu-limit``, default the command's)."""
    files = tempfile.TemporaryDirectory(prefix="onnx-lambda-bench-")
    template = Path(files.name) / "template.yaml"
    template.write_text(bench_template(handler, environment, memory_mb=memory_mb,
                                       provisioned=provisioned))
    port = free_port()
    return Server([sys.executable, "-m", "onnx_lambda.cli", "serve", "--template", str(template),
                   "--port", str(port), "--quiet", "--concurrency", str(concurrency),
                   *(["--cpu-limit", cpu_limit] if cpu_limit else [])],
                  port, files=files, ready=b"READY http")


def rie_binary() -> Path | None:
    """AWS's Runtime Interface Emulator as the aws-sam-cli package ships it, if installed."""
    spec = importlib.util.find_spec("samcli")
    if spec is None or spec.origin is None:
        return None
    arch = "arm64" if platform.machine() == "aarch64" else "x86_64"
    path = Path(spec.origin).parent / "local" / "rapid" / f"aws-lambda-rie-{arch}"
    return path if os.access(path, os.X_OK) else None


def rie(handler: str, environment: Mapping[str, str]) -> Server | None:
    """The RIE (Go, one environment at a time) running ``handler`` under awslambdaric; None
    without aws-sam-cli. Its Invoke API takes any function name (``function`` by convention)."""
    binary = rie_binary()
    if binary is None:
        return None
    port = free_port()
    return Server([str(binary), "--runtime-interface-emulator-address", f"127.0.0.1:{port}",
                   sys.executable, "-m", "awslambdaric", handler], port, env=environment)


def always_on(model_path: Path, cpu_limit: Callable[[], None] | None = None) -> Server:
    """The FastAPI + uvicorn baseline, one process; ``cpu_limit`` (a ``CpuLimiter.prepare``
    step) holds it to a CPU share, else it has the whole machine."""
    port = free_port()
    return Server([sys.executable, "-m", "onnx_lambda.bench.baselines.always_on",
                   "--port", str(port)], port, env={"MODEL_PATH": str(model_path)},
                  preexec=cpu_limit)
