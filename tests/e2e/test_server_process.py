"""The one server launcher (``onnx_lambda.server_process``) against small real child processes:
ready on a complete ``READY`` line or an accepting port, a clear error (with the child's
output) when it exits or is never ready, and a stop that leaves no process or file behind."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import psutil
import pytest

from onnx_lambda import server_process
from onnx_lambda.ports import free_port

pytestmark = pytest.mark.e2e


def python(*lines: str) -> list[str]:
    """This interpreter running ``lines`` (a small stand-in server)."""
    return [sys.executable, "-c", "\n".join(lines)]


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_ready_on_a_complete_ready_line_with_its_url_and_output() -> None:
    # the line arrives in two writes: half a line is not ready yet
    server = server_process.start(python(
        "import sys, time", "print('booting', file=sys.stderr, flush=True)",
        "sys.stdout.write('READY http://127.0.0.1:12'); sys.stdout.flush(); time.sleep(0.3)",
        "print('34', flush=True); time.sleep(60)"), timeout_s=20)
    files = Path(server.files.name)
    try:
        assert server.url == "http://127.0.0.1:1234"
        assert server.errors() == "booting\n" and server.output().startswith("READY ")
    finally:
        assert server.stop() == -signal.SIGTERM
    assert not files.exists()


def test_ready_when_the_given_port_accepts() -> None:
    port = free_port()
    child = python("import socket, time", "time.sleep(0.3)",
                  f"s = socket.create_server(('127.0.0.1', {port}))", "time.sleep(60)")
    with server_process.start(child, port=port, timeout_s=20) as server:
        assert server.url == f"http://127.0.0.1:{port}"
        assert server.process.poll() is None
    assert server.process.returncode == -signal.SIGTERM


def test_exit_before_ready_is_an_error_with_its_stderr() -> None:
    child = python("import sys", "print('bad template', file=sys.stderr)", "sys.exit(3)")
    with pytest.raises(RuntimeError, match=r"exited with 3: .*bad template"):
        server_process.start(child, timeout_s=20)


def test_never_ready_is_an_error_and_the_child_is_stopped(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    child = python("import os, time", f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))",
                  "time.sleep(60)")
    with pytest.raises(RuntimeError, match=r"not ready within 3 s"):
        server_process.start(child, timeout_s=3)
    assert gone(int(pid_file.read_text()))


def test_stop_kills_a_child_that_ignores_sigterm_and_its_whole_group() -> None:
    # the grandchild's pid comes back in the READY line
    server = server_process.start(python(
        "import signal, subprocess, sys, time", "signal.signal(signal.SIGTERM, signal.SIG_IGN)",
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])",
        "print(f'READY http://127.0.0.1:1/{child.pid}', flush=True); time.sleep(60)"),
        timeout_s=20)
    grandchild = int(server.url.rsplit("/", 1)[1])
    assert os.getpgid(grandchild) == server.process.pid  # its own group, with what it started
    assert server.stop(timeout_s=0.5) == -signal.SIGKILL
    deadline = time.monotonic() + 10
    while not gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(grandchild)
