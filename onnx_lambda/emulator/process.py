"""Run ``onnx-lambda serve`` as a child process and wait until it is ready.

The server prints ``READY http://HOST:PORT`` on stdout once every provisioned environment
is initialised; :func:`start_server_process` waits for that line. ``stop()`` sends SIGTERM
(the server then stops every environment it started) and waits.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass
class ServerProcess:
    process: subprocess.Popen[bytes]
    url: str

    def stop(self, timeout_s: float = 15.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        return self.process.returncode

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def start_server_process(args: Sequence[str] = (), *, cwd: str | Path | None = None,
                         timeout_s: float = 60.0, stderr: int | None = None,
                         env: dict[str, str] | None = None) -> ServerProcess:
    """Start ``onnx-lambda serve --port 0 ARGS...``; return once it is ready."""
    command = [sys.executable, "-m", "onnx_lambda.cli", "serve", "--port", "0", *args]
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=stderr,
                               env={**os.environ, **(env or {})})
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout_s
    buffer = b""
    while time.monotonic() < deadline:
        if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
            break
        chunk = os.read(process.stdout.fileno(), 4096)
        if not chunk:
            break
        buffer += chunk
        for line in buffer.split(b"\n")[:-1]:
            if line.startswith(b"READY "):
                selector.close()
                return ServerProcess(process, line[6:].decode().strip())
    selector.close()
    ServerProcess(process, "").stop()
    raise RuntimeError(f"onnx-lambda serve did not become ready: {buffer.decode()[-2000:]}")
