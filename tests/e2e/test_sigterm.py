"""SIGTERM (how Lambda Managed Instances stop their processes) ends an initialised handler
process cleanly: one JSON shutdown line and exit status 0, not death by signal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from onnx_lambda.source_tree import root
from tests.support import models

pytestmark = pytest.mark.e2e
ROOT = root()
# Initialise, say so, then wait as a runtime process waits for its next event.
CHILD = "import sys, time, handler.app; print('ready', flush=True); time.sleep(60)"


def test_sigterm_logs_a_shutdown_line_and_exits_zero(tmp_path: Path) -> None:
    model = models.linear(tmp_path / "linear.onnx")
    env = {**os.environ, "ONNX_LAMBDA_MODEL": str(model), "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", CHILD], cwd=ROOT, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None
    lines = []
    for line in child.stdout:  # bounded: the child prints a few lines, then "ready"
        if line.strip() == "ready":
            break
        lines.append(line)
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    records = [json.loads(line) for line in [*lines, *out.splitlines()] if line.strip()]
    (shutdown,) = [r for r in records if r["message"] == "shutdown"]
    assert shutdown["level"] == "INFO" and shutdown["signal"] == "SIGTERM"
    assert shutdown["pid"] == child.pid


def test_the_streaming_runtime_stops_cleanly_while_it_waits_for_an_event() -> None:
    """``python -m handler.stream_runtime`` blocked in ``/next`` (a Runtime API that never
    answers): SIGTERM ends it with the shutdown line and status 0."""
    import socket

    handlers = ROOT / "tests" / "e2e" / "handlers"
    with socket.create_server(("127.0.0.1", 0)) as api:
        port = api.getsockname()[1]
        env = {**os.environ, "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{port}",
               "PYTHONPATH": f"{handlers}{os.pathsep}{ROOT}"}
        child = subprocess.Popen([sys.executable, "-m", "handler.stream_runtime",
                                  "streams.tokens"], cwd=handlers, env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        api.settimeout(30)
        connection, _ = api.accept()
        with connection:
            assert connection.recv(4096).startswith(b"GET /2018-06-01/runtime/invocation/next ")
            child.send_signal(signal.SIGTERM)
            out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    (shutdown,) = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert shutdown == {"level": "INFO", "message": "shutdown", "signal": "SIGTERM",
                        "pid": child.pid}
