"""Start a server as a child process, wait until it is ready, stop it cleanly: the one launcher
for ``onnx-lambda serve`` (tests, benchmarks, a script driving the emulator from outside) and
for the benchmark lab's baselines (``benchmarks/servers.py``: the RIE, the always-on uvicorn
server).

Ready means the child printed ``READY URL`` on stdout (``onnx-lambda serve`` does once its
provisioned environments are initialised; it listens before that), or, for a child told its
``port``, that the port accepts a connection. Its stdout and stderr go to files (a pipe nobody
reads would fill up and block it), readable while it runs. It runs in its own process group;
``stop()`` sends the group SIGTERM (serve then stops every environment it started; the RIE's
runtime gets it too) and SIGKILL after a grace period, so nothing is left behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

READY = "READY "
STARTUP_TIMEOUT_S = 60.0
_POLL_S = 0.05


class ServerProcess:
    """A started child process serving at ``url``; a context manager that stops it."""

    def __init__(self, process: subprocess.Popen[bytes], url: str,
                 files: tempfile.TemporaryDirectory[str]) -> None:
        self.process, self.url, self.files = process, url, files

    def output(self) -> str:
        """What it wrote to stdout so far (until ``stop``, which removes ``files``)."""
        return _read(Path(self.files.name) / "stdout.log")

    def errors(self) -> str:
        """What it wrote to stderr so far (until ``stop``)."""
        return _read(Path(self.files.name) / "stderr.log")

    def stop(self, timeout_s: float = 15.0) -> int:
        """SIGTERM to its process group, SIGKILL after ``timeout_s``; its exit status."""
        if self.process.poll() is None:
            _signal_group(self.process, signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                _signal_group(self.process, signal.SIGKILL)
                self.process.wait()
        self.files.cleanup()
        return self.process.returncode

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def start(argv: Sequence[str], *, port: int | None = None, cwd: str | Path | None = None,
          env: Mapping[str, str] | None = None, timeout_s: float = STARTUP_TIMEOUT_S,
          preexec: Callable[[], None] | None = None,
          files: tempfile.TemporaryDirectory[str] | None = None) -> ServerProcess:
    """Run ``argv`` (this process's environment plus ``env``) and return once it is ready: with
    ``port``, when ``127.0.0.1:port`` accepts a connection, else when it prints ``READY URL``.
    ``files``: a directory that belongs to the server (say, its template), removed by ``stop``;
    the logs are written there. Raises RuntimeError, with the tail of its output, if it exits or
    is not ready within ``timeout_s`` (the child is stopped first)."""
    files = files or tempfile.TemporaryDirectory(prefix="onnx-lambda-server-")
    folder = Path(files.name)
    with open(folder / "stdout.log", "wb") as out, open(folder / "stderr.log", "wb") as err:
        process = subprocess.Popen(list(argv), cwd=cwd, env={**os.environ, **(env or {})},
                                   stdout=out, stderr=err, start_new_session=True,
                                   preexec_fn=preexec)
    server = ServerProcess(process, f"http://127.0.0.1:{port}" if port else "", files)
    deadline = time.monotonic() + timeout_s
    while process.poll() is None and time.monotonic() < deadline:
        if _ready(server, port):
            return server
        time.sleep(_POLL_S)
    why = f"exited with {process.returncode}" if process.poll() is not None else \
        f"not ready within {timeout_s:g} s"
    tail = f"{server.output()[-1000:]}{server.errors()[-2000:]}"
    server.stop()
    raise RuntimeError(f"{' '.join(argv)}: {why}: {tail}")


def start_server_process(args: Sequence[str] = (), *, cwd: str | Path | None = None,
                         env: Mapping[str, str] | None = None,
                         timeout_s: float = STARTUP_TIMEOUT_S,
                         files: tempfile.TemporaryDirectory[str] | None = None) -> ServerProcess:
    """``onnx-lambda serve --port 0 ARGS...`` (this interpreter), returned once it is ready;
    its URL is the one the ``READY`` line names."""
    return start([sys.executable, "-m", "onnx_lambda.cli", "serve", "--port", "0", *args],
                 cwd=cwd, env=env, timeout_s=timeout_s, files=files)


def _ready(server: ServerProcess, port: int | None) -> bool:
    if port is not None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            return False
    complete = server.output().split("\n")[:-1]  # a line still being written does not count
    server.url = next((line[len(READY):].strip() for line in complete
                       if line.startswith(READY)), "")
    return bool(server.url)


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # it exited meanwhile
        os.killpg(process.pid, sig)
