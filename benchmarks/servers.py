"""The lab's other servers, each in its own process (started and ready when called, a context
manager that stops it): AWS's Runtime Interface Emulator (the reference for the emulator's own
overhead) and the always-on uvicorn baseline. The local emulator itself is
``onnx_lambda.plan.emulated.emulator``."""

from __future__ import annotations

import importlib.util
import os
import platform
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from onnx_lambda import server_process
from onnx_lambda.plan.emulated import checkout
from onnx_lambda.ports import free_port
from onnx_lambda.server_process import ServerProcess


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
                                 handler], port=port, **checkout(environment))


def always_on(model_path: Path, cpu_limit: Callable[[], None] | None = None) -> ServerProcess:
    """The FastAPI + uvicorn baseline, one process; ``cpu_limit`` (a ``CpuLimiter.prepare``
    step) holds it to a CPU share, else it has the whole machine."""
    port = free_port()
    return server_process.start([sys.executable, "-m", "benchmarks.baselines.always_on",
                                 "--port", str(port)], port=port, preexec=cpu_limit,
                                **checkout({"MODEL_PATH": str(model_path)}))
